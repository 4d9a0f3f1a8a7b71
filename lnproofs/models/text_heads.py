"""One text through every chosen layer and head, for every family: the per-head code that
``--text``, ``--tokens`` and ``--corpus`` share.

Per layer: the full-width norm outputs with free queries.  Per key head (grouped queries:
once for all the query heads that read it): its keys (rotated by their positions with
rotary embeddings), their free-query certificate (affinely independent keys, as a text no
longer than the head's width plus one usually gives, are all selectable without a witness:
:func:`.corpus_heads.simplex_certificate`), and uniform attention with free queries.  Per
query head: the realisable certificate (the queries the layer's norm and ``W_q`` can
produce, :mod:`.head_sets`; with rotary positions at the text's last query position, which
sees every key), and for decoders the causal answers (:mod:`.text_causal`).

A realisable set that covers every direction (:mod:`lnproofs.propose.querysets.coverage`,
proposed once per head and run) needs no search of its own: its answers are the free ones,
at every query position, and the file names the run's coverage file of the head
(:func:`coverage_name`, written once per run), which ``lnproofs check`` verifies; so is its
answer on uniform attention (:func:`covered_uniform`).  Other
LayerNorm heads without rotary positions take the fast search
(:mod:`lnproofs.propose.querysets.layernorm_fast`), whose witnesses are tried first as free
queries; other rotary or RMSNorm heads go through their proposer.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from ..kernel import LayerNormQuerySet
from ..propose.twins import row_classes
from .corpus_heads import (
    _certificate,
    certificate_from_candidates,
    free_certificate,
    interpolating_queries,
    outputs_certificate,
)
from .head_sets import realisable_results

__all__ = [
    "TEXT_SCHEMA",
    "TEXT_SCHEMAS",
    "COVERAGE_SCHEMA",
    "COVERED_STATUS",
    "coverage_name",
    "covered_uniform",
    "head_certificates",
    "certify_text",
    "key_head_answers",
]

TEXT_SCHEMA = "lnproofs.model-text/4"
#: the text schemas ``lnproofs check`` reads: /3 held a witness for every selectable free key
#: (/4: none when the keys are affinely independent), /2 held each head's coverage evidence itself
TEXT_SCHEMAS = (TEXT_SCHEMA, "lnproofs.model-text/3", "lnproofs.model-text/2")
#: a head's coverage evidence, written once per run (``coverage/layer{L}_head{H}.json``); the
#: text files name that file instead of repeating the evidence (about 46 KB a head of width 384)
COVERAGE_SCHEMA = "lnproofs.model-coverage/1"
#: a free status -> the realisable status it implies when the query set covers every direction
COVERED_STATUS = {
    "selectable": "selectable",
    "tie-only": "not-realisable",
    "unselectable": "not-realisable",
    "undecided": "undecided",
}
#: the free uniform-attention statuses a covering head's realisable answer carries over
#: (:func:`covered_uniform`; an undecided one is asked of the set itself)
COVERED_UNIFORM = ("feasible", "infeasible")


def coverage_name(layer: int, head: int) -> str:
    """The run's coverage file of one head, relative to the run's folder (the name text files hold)."""
    return f"coverage/layer{int(layer)}_head{int(head)}.json"


def _free_results(keys) -> dict:
    """The free certificate of a key head: each key's least-squares interpolating query first
    (one solve for all), checked exactly; the engine for the keys that leaves."""
    return certificate_from_candidates(keys, lambda: interpolating_queries(keys, np.arange(len(keys))))


def _free_uniform(keys, uniform: str, diffs) -> dict:
    from ..propose.uniform import uniform_attention

    if uniform == "none":
        return {"status": "skipped"}
    return uniform_attention(keys, compact=True, differences=diffs).to_json()


def key_head_answers(cap, heads, *, uniform="both", causal=True) -> dict:
    """``{key head: answers}``: what :func:`certify_text` finds from a key head's keys alone, for
    every key head that ``heads`` read (its keys from the first head reading it): the free
    certificate (:func:`_free_results`), free uniform attention and, for decoders, the free
    causal record (:func:`.text_causal.free_record`); as ``made_free`` takes them."""
    from .text_causal import free_record

    made = {}
    for head in heads:
        if cap.key_head(head) not in made:
            keys = cap.rotated_keys(head)
            free = _free_results(keys)
            made[cap.key_head(head)] = {
                "free": free,
                "uniform": _free_uniform(keys, uniform, _lazy_differences(keys)),
                "causal": free_record(keys, free) if causal and cap.causal else None,
            }
    return made


def _lazy_differences(keys):
    """A function giving ``key_differences(keys, with_keys=False)``, computed at its first call only."""
    from functools import cache, partial

    from ..propose.integer_keys import key_differences

    return cache(partial(key_differences, keys, with_keys=False))


def _covered(free: dict, ref: dict, coverage: dict, shared: dict | None = None) -> dict:
    """The realisable certificate of a covering head: the free results' statuses carried over
    (one list of results for every covering head that reads the key head ``shared``)."""
    results = (shared or {}).get("covered")
    if results is None:
        results = [
            {"index": r["index"], "status": COVERED_STATUS[r["status"]], "from": "free"} for r in free["results"]
        ]
        if shared is not None:
            shared["covered"] = results
    cert = _certificate(free["n_keys"], free["dim"], ref, results)
    cert["coverage"] = coverage
    return cert


def covered_uniform(free_uniform: dict, ref: dict) -> dict:
    """The realisable uniform-attention answer of a covering head: the free one, restated for
    the set ``ref``.  Scaling a query by ``s > 0`` scales every score gap by ``s``
    (``coverage.argmax_direction``), so equal scores stay equal, and a set that realises every
    direction holds a positive multiple of every non-zero query: it has a non-zero query with
    equal scores exactly when free queries do.  A query the free answer holds is not one of
    the set's (only a multiple of it is), so none is kept."""
    return dict(
        free_uniform,
        query_set=ref,
        query=None,
        query_float=None,
        query_stored=False,
        decided_by="coverage: the free answer",
        **{"from": "free"},
    )


def head_certificates(
    keys, head_set, ref: dict, cover, last, shared: dict | None = None, last_map=None, made=None
) -> tuple[dict, dict]:
    """``(free, realisable)`` certificates (JSON) of ``keys`` under one query head: ``head_set``
    the head's :meth:`HeadSets.get <lnproofs.models.head_sets.HeadSets.get>` entry, ``ref``
    the realisable set's reference, ``cover`` its coverage evidence (or None), ``last`` the set
    the realisable answers are about (with rotary positions, at the query position) and
    ``last_map`` its exact map when held (:meth:`HeadSets.at_map`);
    ``shared``: what an earlier head reading the same key head left (its free certificate);
    ``made``: the key head's :func:`_free_results`, made elsewhere from the same keys (or None)."""
    from ..propose.querysets.layernorm_fast import certify_results_fast

    kind, qs, qmap, basis, H = head_set
    T, d = keys.shape
    if kind is LayerNormQuerySet and cover is None:
        results = certify_results_fast(keys, qs, query_map=qmap, basis=basis, compact=True)
        free = shared["free"] if shared else free_certificate(keys, results, H, basis[2])
        return free, _certificate(T, d, ref, results)
    free = shared["free"] if shared else made if made is not None else _free_results(keys)
    if cover is not None:
        return free, _covered(free, ref, cover, shared)
    return free, _certificate(T, d, ref, realisable_results(keys, last, query_map=last_map))


def certify_text(
    captures, ids, number, text, layers, heads, sets, *, uniform="both", causal=True, outputs=None, made_free=None
):
    """``(record, rows, arrays)`` for one text: the JSON record (schema :data:`TEXT_SCHEMA`),
    the table rows, one per (layer, head, position), as columns (name -> list of values, the
    table's columns but ``token``), and the arrays the certificates are about.  ``outputs``:
    ``{layer: certificate}``, norm outputs certificates made already (by
    :func:`~.corpus_heads.outputs_certificate` from the same outputs, on the forward side);
    ``made_free``: ``{layer: {key head: answers}}``, what :func:`key_head_answers` made from the
    same keys (its free causal record is used with its own free certificate only)."""
    from ..propose.uniform import uniform_attention
    from .text_causal import CAUSAL_COLUMNS, causal_section

    tokens = [int(i) for i in ids]
    record = {
        "schema": TEXT_SCHEMA,
        "text_index": number,
        "text": text,
        "tokens": tokens,
        "arrays": f"text{number:05d}.npz",
        "layers": [],
        "heads": [],
    }
    rows, arrays = {}, {}
    for layer in layers:
        cap = captures[layer]
        made = (outputs or {}).get(layer) or outputs_certificate(cap.ln_out)
        arrays[f"ln_outputs_l{layer}"] = cap.ln_out
        if cap.rotary and "rotary_cos" not in arrays:
            arrays["rotary_cos"], arrays["rotary_sin"] = cap.rotary_cos, cap.rotary_sin
        record["layers"].append({"layer": layer, "norm": cap.norm_kind, "outputs": made})
        out_status = [r["status"] for r in made["results"]]
        by_key_head: dict[int, dict] = {}
        for head in heads:
            kind, qs, qmap, basis, H = sets.get(cap, head)
            g = cap.key_head(head)
            shared = by_key_head.get(g)
            keys = cap.rotated_keys(head) if shared is None else shared["keys"]  # the same for every reader
            T = len(keys)
            ref = {"kind": kind.kind, "layer": layer, "head": head}
            positioned = cap.rotary and kind is not LayerNormQuerySet
            if positioned:
                ref["position"] = int(cap.sources[T - 1, 1])
            cover = sets.coverage(cap, head)
            # with rotary positions, the set at the last query position (which sees every key)
            last, last_map = sets.at_map(cap, head, T - 1) if positioned and cover is None else (qs, qmap)
            lent = None if shared else (made_free or {}).get(layer, {}).get(g)
            free, realisable = head_certificates(
                keys, (kind, qs, qmap, basis, H), ref, cover, last, shared, last_map, lent and lent["free"]
            )
            if shared is None:
                # the integer key differences, once per key head and only if a uniform question reads them
                diffs = _lazy_differences(keys)
                # a key with a twin of the same token id: equal rows (a zero of either sign as 0.0)
                pairs = list(zip(row_classes(keys)[1].tolist(), tokens))
                same = Counter(pairs)
                shared = by_key_head[g] = {
                    "head": head,
                    "free": free,
                    "diffs": diffs,
                    "keys": keys,
                    "uniform": lent["uniform"] if lent else _free_uniform(keys, uniform, diffs),
                    "causal": lent["causal"] if lent and free is lent["free"] else None,
                    "ties": [same[p] > 1 for p in pairs],
                }
                arrays[f"keys_l{layer}_kv{g}"] = keys
            uni_real = {"status": "skipped"}
            if uniform == "both" and cover is not None and shared["uniform"]["status"] in COVERED_UNIFORM:
                uni_real = covered_uniform(shared["uniform"], ref)
            elif uniform == "both":
                if positioned and cover is not None:
                    last, last_map = sets.at_map(cap, head, T - 1)
                uni_real = uniform_attention(
                    keys, last, query_map=last_map, compact=True, differences=shared["diffs"], query_set_ref=ref
                ).to_json()
            entry = {
                "layer": layer,
                "head": head,
                "key_head": g,
                "kind": kind.kind,
                "free": free if shared["head"] == head else {"same_as_head": shared["head"]},
                "realisable": realisable,
                "uniform": {
                    "free": shared["uniform"]
                    if shared["head"] == head
                    else {"same_as_head": shared["head"], "status": shared["uniform"]["status"]},
                    "realisable": uni_real,
                },
            }
            columns = None
            if causal and cap.causal:
                entry["causal"], columns = causal_section(
                    cap, head, keys, kind, qs, qmap, sets, shared, cover, realisable
                )
            record["heads"].append(entry)
            # the head's T table rows, column by column
            for name, values in (
                ("text", [number] * T),
                ("layer", [layer] * T),
                ("head", [head] * T),
                ("position", list(range(T))),
                ("token_id", tokens[:T]),
                ("status_free", [r["status"] for r in free["results"]]),
                ("status_realisable", [r["status"] for r in realisable["results"]]),
                ("status_outputs", out_status[:T]),
                ("margin_free", [r.get("margin") for r in free["results"]]),
                ("margin_realisable", [r.get("margin") for r in realisable["results"]]),
                ("ties_identical_token", shared["ties"]),
                ("uniform_free", [shared["uniform"]["status"]] * T),
                ("uniform_realisable", [uni_real["status"]] * T),
                *((name, columns[name]) for name in CAUSAL_COLUMNS if columns is not None),
            ):
                rows.setdefault(name, []).extend(values)
        for shared in by_key_head.values():
            for name in ("diffs", "keys", "covered", "ties"):
                shared.pop(name, None)
    return record, rows, arrays
