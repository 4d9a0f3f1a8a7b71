"""Causal prefixes in one pass: each key's first stopping position, with evidence for both sides.

The query at position t sees keys 0..t.  For free queries, and for a realisable query set that
does not change with the position, a key that cannot win over keys 0..t cannot win over any
longer prefix; so key j has one first stopping position ``stop`` in j..T-1, or None (it wins at
every position).  :func:`causal_evidence` finds it without certifying every prefix:

1. one certification of the whole sequence (the existing engine).  A key selectable there
   never stops, and its witness wins over every prefix that contains it.  For any other key
   the evidence there (convex weights, or a query set's dual weights) names keys up to some
   index ``u``; the same evidence holds over keys 0..max(j, u), so ``stop <= max(j, u)``;
2. for those keys, a search over the prefix end ``t`` between ``lo`` (every position before
   it is covered by a witness) and ``hi`` (a stop with evidence): the prefix ``t = lo`` first,
   then (free queries) just below ``hi`` or (other sets) bisection.  A witness found for prefix
   0..t is scored exactly against every later key; it wins up to just before the first key
   that ties or beats it, which moves ``lo`` past ``t`` at once.  Free queries: one linear
   program (HiGHS) over the prefix's keys, whose cost grows steeply with the key's index, gives
   convex weights that favour early keys (so ``hi`` drops to their last key) or, when there are
   none, an infeasibility ray, which is a separating query; small Clarkson-style LPs only when
   that fails.  Weights are made exact on their support (at most d + 1 keys) once, for the
   stop that is kept.  Norm query sets: the set's cone program on the prefix (its query made
   exact and scored against every key, its dual weights checked exactly); any other set, or
   where that fails: the set's own proposer on the prefix, for key j only.  The prefix tests
   are :mod:`lnproofs.propose.causal_prefixes`.

The record (schema ``lnproofs.causal/1``, :mod:`lnproofs.kernel.causal`) has one entry per
decided key: ``stop``, ``win`` (a selectable result over keys 0..stop-1, or 0..T-1 when
``stop`` is None) and ``cannot_win`` (convex weights over keys 0..stop for free queries, a
non-winning result of the query set otherwise), and ``undecided`` entries with their reason.
Before it is returned, the whole record goes through :func:`lnproofs.kernel.check_causal`;
a key whose evidence does not pass is moved to ``undecided`` with the kernel's message.
Its size grows linearly with the number of keys: one witness and at most one set of weights
per key (at most d + 1 weights for free queries, by Caratheodory).
"""

from __future__ import annotations

import numpy as np

from .. import kernel
from ..certificates.writers import query_set_to_json, result_to_json
from ..kernel import CAUSAL_SCHEMA as SCHEMA
from ..kernel import ExactKeys, OptionError, as_real_array, check_causal
from .causal_prefixes import FreeSearch, NormSearch, SetSearch, Weights

__all__ = ["SCHEMA", "causal_evidence", "stops"]


def stops(record: dict) -> list:
    """Per key: its ``stop`` (an int, or None: it wins at every position), or ``"undecided"``."""
    out: list = ["undecided"] * int(record["n_keys"])
    for entry in record["keys"]:
        out[entry["index"]] = entry["stop"]
    return out


def _search(search, j: int, lo: int, hi: int, T: int, win, stop_evidence, rivals: set):
    """Narrow ``lo <= stop <= hi`` (``hi == T``: no stop known) to one position; returns
    ``(stop or None, win, cannot_win, None)`` or ``(None, None, None, reason)``."""
    tests = 0
    while lo < hi:  # the prefix j first; then just below the known stop, or bisection
        t = lo if tests == 0 else (hi - 1 if search.descend and tests < 4 else (lo + hi) // 2)
        tests += 1
        got = search.test(j, t, rivals)
        if got[0] == "fail":
            return None, None, None, f"{got[1]} (stop known to lie in {lo}..{'end' if hi == T else hi})"
        if got[0] == "stop":  # the evidence holds from its last key on (or from j)
            upper = None if isinstance(got[1], Weights) else _upper(got[1], j)
            named = got[1].support if isinstance(got[1], Weights) else [t if upper is None else upper]
            hi, stop_evidence = max([j, *named]), got[1]
            continue
        _, evidence, covered = got
        if covered < t:
            return None, None, None, f"a witness over keys 0..{t} did not hold exactly (it wins only to {covered})"
        lo, win = covered + 1, evidence
        if lo > hi:  # the witness outruns the known stop: impossible for exact evidence
            return None, None, None, f"a witness wins through key {covered} but key {j} stops at {hi}"
    if (
        isinstance(search, FreeSearch)
        and isinstance(stop_evidence, dict)
        and len(stop_evidence["combination"]["indices"]) > search.d + 1
    ):  # at most d + 1 keys (Caratheodory)
        support = np.array(sorted(stop_evidence["combination"]["indices"]), dtype=np.int64)
        fewer = search._earliest(j, support)
        if fewer is not None:
            stop_evidence = Weights(j, hi, *fewer)
    if isinstance(stop_evidence, Weights):
        stop_evidence = stop_evidence.exact(search.ek)
        if isinstance(stop_evidence, str):
            return None, None, None, stop_evidence
    return (None if hi == T else hi), win, stop_evidence, None


def _full_results(K, query_set, module, *, seed, query_map):
    """One certification of the whole sequence: KeyResult JSON dicts in index order."""
    if query_set is None:
        from .certification import certify_results

        return [result_to_json(r) for r in certify_results(K, seed=seed)]
    if isinstance(query_set, kernel.LayerNormQuerySet):
        from .querysets.layernorm_fast import certify_results_fast

        return certify_results_fast(K, query_set, query_map=query_map, compact=True)
    return [result_to_json(r) for r in module.certify(K, query_set, seed=seed)]


def _upper(result: dict, j: int) -> int | None:
    """The prefix end from which the whole-sequence evidence that k_j cannot win holds."""
    evidence = result.get("combination") or result.get("dual")
    if not evidence or not evidence.get("indices"):
        return None
    return max(j, *(int(i) for i in evidence["indices"]))


def _query_set(query_set):
    if query_set is None:
        return None
    from .querysets import query_set_from_json

    qs = query_set_from_json(query_set) if isinstance(query_set, dict) else query_set
    if type(qs) is kernel.FreeQueries:
        return None
    if getattr(qs, "rotation", None) is not None:
        raise OptionError(
            f"causal prefixes in one pass need a query set that does not change with the position; "
            f"this {qs.kind} query set is rotated for position {qs.rotation.position} "
            "(certify each position on its own)"
        )
    return qs


def _free_bounds(free_record, T: int, d: int) -> dict:
    """key -> (stop, evidence) from a free-query record of the same keys: under a norm query set a
    key stops no later than under free queries, and its convex weights are dual weights there
    (``v = 0``); the kernel checks them again as the set's evidence."""
    if free_record is None:
        return {}
    if (
        not isinstance(free_record, dict)
        or (free_record.get("n_keys"), free_record.get("dim")) != (T, d)
        or free_record.get("query_set") is not None
    ):
        raise OptionError(f"free_record must be the free-query causal record of these {T} keys in R^{d}")
    return {
        e["index"]: (
            e["stop"],
            {"status": "not-realisable", "verified": "exact", "dual": e["cannot_win"]["combination"]},
        )
        for e in free_record["keys"]
        if e["stop"] is not None
    }


def causal_evidence(
    keys,
    query_set=None,
    *,
    query_map=None,
    query_set_ref: dict | None = None,
    seed: int = 0,
    free_record: dict | None = None,
    results: list | None = None,
    selectable_win=None,
    **_options,
) -> dict:
    """The causal record (schema ``lnproofs.causal/1``, see the module docstring) of a sequence of
    keys (rows in position order) under free queries (``query_set`` None) or a realisable query
    set that does not change with the position (refused with a rotation).

    ``query_map``: the set's :class:`~lnproofs.kernel.ExactQueryMap`, shared
    between texts of one head (LayerNorm sets); ``query_set_ref``: an object (without ``kind``)
    stored in the record instead of the query set's JSON, for callers that store the set
    elsewhere (``lnproofs.kernel.check_causal`` then needs the set as an argument);
    ``free_record``: the free-query record of the same keys, whose stops bound those of a norm
    query set (a head's free and realisable answers are then computed together, free first);
    ``results``: the free-query certificate of the whole sequence (result dicts in index order),
    when the caller has made it already: step 1 is then not done again; ``selectable_win``: with
    ``results``, the ``win`` of each key they have selectable (its witness beats every other key,
    so every prefix that holds the key), instead of that result without its index: a marker for
    callers that keep the certificate beside the record (one copy fewer per key)."""
    K = as_real_array(keys, name="keys", ndim=2)
    T, d = K.shape
    qs = _query_set(query_set)
    if qs is not None:
        qs.validate(d)
    if query_set_ref is not None and (not isinstance(query_set_ref, dict) or "kind" in query_set_ref):
        raise OptionError(f"query_set_ref {query_set_ref!r} is not allowed; give an object without a 'kind' field")
    module = None
    if qs is not None:
        from .querysets import proposer_for

        module = proposer_for(qs)
    ek = ExactKeys(K)
    if qs is None:
        search = FreeSearch(K, ek)
    elif isinstance(qs, kernel.NormQuerySet) and getattr(qs, "radius", None) is None:
        search = NormSearch(K, ek, qs, SetSearch(K, ek, qs, module, seed), query_map)
    else:
        search = SetSearch(K, ek, qs, module, seed)
    bounds = _free_bounds(free_record, T, d) if isinstance(search, NormSearch) else {}
    entries, undecided, checked = [], [], set()
    if results is not None and (qs is not None or len(results) != T):
        raise OptionError(f"results must be the {T} free-query results of these keys, for free queries only")
    if results is None:
        results = _full_results(K, qs, module, seed=seed, query_map=query_map)
    for j, r in enumerate(results):
        if r["status"] == "selectable":
            entries.append(
                {
                    "index": j,
                    "stop": None,
                    "win": _strip(r) if selectable_win is None else selectable_win,
                    "cannot_win": None,
                }
            )
            checked.add(j)
            continue
        hi = _upper(r, j) if r["status"] != "undecided" else None
        cannot = None
        if hi is not None:
            cannot = {"combination": r["combination"]} if qs is None else _strip(r)
        if j in bounds and (hi is None or bounds[j][0] < hi):
            hi, cannot = bounds[j]
        if qs is None and hi is not None and hi > j:  # weights over early keys first: an earlier stop
            early = search._earliest(j, np.array([i for i in range(hi + 1) if i != j], dtype=np.int64))
            if early is not None and max(j, *early[0]) < hi:
                hi, cannot = max(j, *early[0]), Weights(j, hi, *early)
        stop, win, cannot, reason = _search(search, j, j, T if hi is None else hi, T, None, cannot, set())
        if reason is not None:
            undecided.append({"index": j, "reason": reason})
            continue
        entries.append(
            {
                "index": j,
                "stop": stop,
                "win": None if win is None else _strip(win),
                "cannot_win": None if stop is None else _strip(cannot),
            }
        )
    record = {
        "schema": SCHEMA,
        "n_keys": T,
        "dim": d,
        "query_set": None if qs is None else (query_set_ref or query_set_to_json(qs)),
        "keys": entries,
        "undecided": undecided,
    }
    return _proved(ek, record, qs, checked)


def _strip(result: dict) -> dict:
    """A result without the fields the record states elsewhere (the index); a copy (C's, not a
    comprehension's: one per key of every head)."""
    stripped = dict(result)
    stripped.pop("index", None)
    return stripped


def _proved(ek: ExactKeys, record: dict, qs, checked: set) -> dict:
    """The record with every key whose evidence the kernel refutes moved to ``undecided``.
    The keys of ``checked`` keep the whole-sequence certificate's witness, which passed the same
    check on the same keys when it was made: they are left out of this check (as undecided), and
    when every key is one of them there is nothing to check."""
    rest, bad = [e for e in record["keys"] if e["index"] not in checked], {}
    if rest:
        trial = {
            **record,
            "keys": rest,
            "undecided": record["undecided"] + [{"index": j, "reason": "checked"} for j in checked],
        }
        bad = {v.index: v.message for v in check_causal(ek, trial, qs) if not v.ok}
    if bad:
        record["keys"] = [e for e in record["keys"] if e["index"] not in bad]
        record["undecided"] += [
            {"index": j, "reason": f"the evidence failed the exact check: {m}"} for j, m in sorted(bad.items())
        ]
    record["undecided"].sort(key=lambda u: u["index"])
    return record
