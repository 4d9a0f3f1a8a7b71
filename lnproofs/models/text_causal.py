"""Causal answers of one head on one text: for each key, the query positions at which it can
still win when the query at position ``t`` sees keys ``0..t`` only.

- Free queries (rotated or not: ``R_t q`` ranges over all of R^d as ``q`` does) and
  realisable queries that do not change with the position (LayerNorm without rotary
  positions): later positions only add competitors, so a key stopped once stays stopped.
  Each key's first stopping position comes from one pass over the text, with exact
  evidence of both sides (:func:`lnproofs.propose.causal.causal_evidence`: convex weights
  on keys ``0..t`` and a witness that wins over keys ``0..t-1``), one record per head whose
  size is proportional to the keys.  Free answers are computed once per key head.
- Realisable queries that cover every direction: the free answers (the text file records
  the coverage).
- Rotary realisable queries that do not cover every direction: the set changes with ``t``,
  so every position ``t`` is answered with its own query set ``R_t S``, but only for the
  keys that can still win freely at ``t`` (every other key lies in the hull of keys
  ``0..t``, proved by the free record); the columns give how many positions each key can
  win at, and the first and last.
"""

from __future__ import annotations

from ..kernel import LayerNormQuerySet

__all__ = ["CAUSAL_COLUMNS", "SAME_AS_FREE", "causal_section", "first_stops", "free_record", "with_free_wins"]

#: the tidy table's causal columns (null for encoders and when causal answers are skipped)
CAUSAL_COLUMNS = (
    "first_stop_free",
    "first_stop_realisable",
    "realisable_wins",
    "realisable_first_win",
    "realisable_last_win",
)


def first_stops(record) -> tuple[list, set]:
    """``(stops, undecided)`` of a causal record: per key its first stopping position (None:
    it can win at every position up to the end) and the keys whose answer is undecided."""
    from ..propose.causal import stops

    found = stops(record)
    undecided = {j for j, s in enumerate(found) if s == "undecided"}
    return [None if j in undecided else s for j, s in enumerate(found)], undecided


#: the ``win`` of a key that wins at every position with its witness in the head's free
#: certificate: written instead of a second copy of that witness
SAME_AS_FREE = {"same_as": "free"}


def _without_index(result: dict) -> dict:
    return {k: v for k, v in result.items() if k != "index"}


def free_record(keys, free: dict) -> dict:
    """The free causal record of a key head's ``keys`` from its free certificate ``free`` (JSON):
    each key the certificate has selectable wins at every position with that certificate's
    witness, written as :data:`SAME_AS_FREE` (:func:`with_free_wins` puts it back)."""
    from ..propose.causal import causal_evidence

    return causal_evidence(keys, results=free["results"], selectable_win=SAME_AS_FREE)


def with_free_wins(record: dict, free: dict) -> dict:
    """The free causal record with each :data:`SAME_AS_FREE` win put back from the head's free
    certificate ``free`` (JSON), as :func:`lnproofs.kernel.check_causal` reads it."""
    results = free["results"]
    keys = [
        dict(e, win=_without_index(results[e["index"]])) if e.get("win") == SAME_AS_FREE else e for e in record["keys"]
    ]
    return dict(record, keys=keys)


def _evidence(keys, query_set, query_map=None, ref=None, free=None) -> dict:
    from ..propose.causal import causal_evidence

    return causal_evidence(keys, query_set, query_map=query_map, query_set_ref=ref, free_record=free)


def _from_stops(stops, undecided, T) -> dict:
    cols = {name: [None] * T for name in CAUSAL_COLUMNS[1:]}
    for j in range(T):
        if j in undecided:
            continue
        end = T if stops[j] is None else stops[j]
        cols["first_stop_realisable"][j] = stops[j]
        cols["realisable_wins"][j] = max(0, end - j)
        if end > j:
            cols["realisable_first_win"][j], cols["realisable_last_win"][j] = j, end - 1
    return cols


def causal_section(cap, head, keys, kind, qs, qmap, sets, shared, cover, realisable) -> tuple[dict, dict]:
    """The head's ``causal`` JSON and its columns (name -> one value per position)."""
    T = len(keys)
    if shared["causal"] is None:
        shared["causal"] = free_record(keys, shared["free"])
    free = shared["causal"]
    stops, undecided = first_stops(free)
    section = {"free": free if shared["head"] == head else {"same_as_head": shared["head"]}}
    if cover is not None:
        section["realisable"] = {"same_as": "free", "because": "the realisable queries cover every direction"}
        cols = _from_stops(stops, undecided, T)
    elif kind is LayerNormQuerySet or not cap.rotary:
        record = _evidence(
            keys, qs, qmap if kind is LayerNormQuerySet else None, {"layer": cap.layer, "head": head}, free
        )
        section["realisable"] = record
        cols = _from_stops(*first_stops(record), T)
    else:
        positions, wins, unknown = {}, [[] for _ in range(T)], set()
        for t in range(T):
            candidates = [j for j in range(t + 1) if j in undecided or stops[j] is None or stops[j] > t]
            if t == T - 1:
                results = [realisable["results"][j] for j in candidates]
            elif candidates:
                from .head_sets import realisable_results

                at, at_map = sets.at_map(cap, head, t)
                results = realisable_results(keys[: t + 1], at, indices=candidates, query_map=at_map)
            else:
                results = []
            positions[str(t)] = results
            for r in results:
                if r["status"] == "selectable":
                    wins[r["index"]].append(t)
                elif r["status"] == "undecided":
                    unknown.add(r["index"])
        section["realisable"] = {
            "positions": positions,
            "note": "per query position t, the keys 0..t that can "
            "still win there under free queries; every other key is stopped by the free record",
        }
        cols = {
            "first_stop_realisable": [None] * T,
            "realisable_wins": [None if j in unknown else len(w) for j, w in enumerate(wins)],
            "realisable_first_win": [None if j in unknown or not w else w[0] for j, w in enumerate(wins)],
            "realisable_last_win": [None if j in unknown or not w else w[-1] for j, w in enumerate(wins)],
        }
    cols["first_stop_free"] = [None if j in undecided else stops[j] for j in range(T)]
    return section, cols
