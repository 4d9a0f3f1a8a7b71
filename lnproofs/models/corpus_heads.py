"""The certificates made from one key set of a corpus run (free queries, the LayerNorm
witnesses tried as free queries, the full-width norm outputs) and their JSON, with the cache
that holds per-run exact data (:class:`TravellingCache`, the base of
:class:`~lnproofs.models.head_sets.HeadSets`).  :mod:`.text_heads` certifies one text with
them and :mod:`.corpus_pool` the keys of all texts together.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..certificates.writers import combination_to_json, result_to_json
from ..propose.twins import row_classes

__all__ = [
    "TravellingCache",
    "layernorm_witness_queries",
    "free_certificate",
    "certificate_from_candidates",
    "SIMPLEX_REASON",
    "simplex_certificate",
    "OWN_ROW",
    "outputs_certificate",
    "interpolating_queries",
    "with_own_rows",
    "result_json",
    "json_bytes",
]


class TravellingCache:
    """A per-run cache of exact per-head data that travels empty between processes (exact
    matrices do not pickle): a worker that receives it rebuilds the heads it needs."""

    def __init__(self):
        self.items = {}

    def __getstate__(self):
        return {}

    def __setstate__(self, state):
        self.items = {}


def layernorm_witness_queries(ln_results, H, q0) -> list:
    """``(index, q)`` for every key proved selectable under LayerNorm queries with compact
    evidence ``y``: the float rounding of its query ``q = H y + q0`` (a free-query candidate)."""
    chosen = [r for r in ln_results if r["status"] == "selectable" and "y" in r]
    if not chosen:
        return []
    Q = np.asarray([r["y"] for r in chosen], dtype=np.float64) @ H.T + q0
    return [(r["index"], tuple(q)) for r, q in zip(chosen, Q.tolist())]


def free_certificate(keys, ln_results, H, q0) -> dict:
    """The free-query certificate of ``keys`` (JSON form).  Every query proved to make a key
    win under LayerNorm queries also does so as a free query: its float rounding is tried
    first (:func:`layernorm_witness_queries`, checked exactly by the trusted witness check);
    the engine certifies the other keys."""
    return certificate_from_candidates(keys, lambda: layernorm_witness_queries(ln_results, H, q0))


#: the reason a key proved by :func:`simplex_certificate` carries, in place of a witness
SIMPLEX_REASON = "affinely independent keys (theorem attention.simplex_vertices)"


def simplex_certificate(keys) -> dict | None:
    """The free certificate of affinely independent keys (at most one more than their
    dimension), or None: each is a vertex of their simplex, so selectable, and needs no witness
    (theorem ``attention.simplex_vertices``); the kernel's exact affine rank decides, as it does
    again when the certificate is checked (here only its rank modulo a prime, which proves full
    rank when it is full: keys that fall short take the witness road, with no exact rank)."""
    from ..kernel import affine_rank

    N, d = keys.shape
    if not 0 < N <= d + 1 or affine_rank(keys, exact=False) != N - 1:
        return None
    return _certificate(
        N,
        d,
        {"kind": "free"},
        [
            {
                "index": i,
                "status": "selectable",
                "witness": None,
                "combination": None,
                "verified": "exact",
                "margin": None,
                "reason": SIMPLEX_REASON,
            }
            for i in range(N)
        ],
    )


def certificate_from_candidates(keys, items, own_rows=None) -> dict:
    """Free-query certificate (JSON form): :func:`simplex_certificate` when the keys are
    affinely independent (not for ``own_rows``); otherwise candidate witnesses ``(index, q)``
    (``q`` a tuple of floats or a float64 array; ``items`` may be a function giving them) are
    checked exactly by the trusted witness check, and the engine certifies the keys left over.
    With ``own_rows`` (norm outputs), a key of ``own_rows`` is written with the witness
    :data:`OWN_ROW` instead of its floats (see :func:`with_own_rows`), and the candidates'
    margins are not measured (``null``: the table has no column for them, and measuring them
    at full width costs more than checking them)."""
    from ..certificates.findings import witness_margins
    from ..kernel import ExactKeys, KeyResult, check_witnesses
    from ..propose.certification import certify_results

    simplex = None if own_rows is not None else simplex_certificate(keys)
    if simplex is not None:
        return simplex
    items = items() if callable(items) else items
    ek = ExactKeys(keys) if items else None  # one for the check and the margins
    verdicts = check_witnesses(ek, items) if items else []
    good = [(i, q) for (i, q), v in zip(items, verdicts) if v is None]
    # margins as everywhere else: the score gap for a unit-norm query (lnproofs check recomputes them)
    measured = witness_margins(ek, good) if good and own_rows is None else [None] * len(good)
    proved = {i: (q, m) for (i, q), m in zip(good, measured)}
    own_rows = set(own_rows or ())
    out = {
        i: {
            "index": i,
            "status": "selectable",
            "witness": OWN_ROW if i in own_rows else _plain_floats(q),
            "combination": None,
            "verified": "exact",
            "margin": m,
            "reason": None,
        }
        for i, (q, m) in proved.items()
    }
    if len(proved) < len(keys):
        known = [KeyResult(i, "selectable", tuple(_plain_floats(q)), None, "exact", m) for i, (q, m) in proved.items()]
        for r in certify_results(keys, known=known):
            if r.index not in out:
                out[r.index] = result_json(r)
    return _certificate(len(keys), keys.shape[1], {"kind": "free"}, [out[i] for i in range(len(keys))])


def _plain_floats(q) -> list:
    return q.tolist() if hasattr(q, "tolist") else list(q)


#: the witness of a norm output that is its own query, ``q_i = y_i``, written instead of its floats
OWN_ROW = "own row"


def outputs_certificate(Y) -> dict:
    """Free-query certificate of the full-width norm outputs ``Y`` (N x n).  Each row is first
    proposed as its own query (``q_i = y_i``: on a sphere every point beats every other one
    with it), written as :data:`OWN_ROW` rather than ``n`` floats; for the rows where that fails
    in floats and the rows are fewer than the width, ``Q = Y^T (Y Y^T)^-1`` proposes ``q_i`` with
    ``Y q_i = e_i`` (key i scores 1, the others 0); the rest as in
    :func:`certificate_from_candidates`."""
    Y = np.ascontiguousarray(Y, dtype=np.float64)
    N, n = Y.shape
    S = Y @ Y.T
    mine = np.arange(0)
    if np.isfinite(S).all():
        own = np.diag(S).copy()
        np.fill_diagonal(S, -np.inf)
        mine = np.flatnonzero(own > S.max(axis=1, initial=-np.inf))
    items = [(int(i), Y[i]) for i in mine]
    # a row with a byte-equal twin has no strict witness (its twin scores the same): the engine
    # settles those; the others' interpolating queries come from the distinct rows
    first, _, counts = row_classes(Y)
    distinct = np.sort(first)
    lonely = np.isin(distinct, first[counts == 1]) & ~np.isin(distinct, mine)
    items += [(int(distinct[c]), q) for c, q in interpolating_queries(Y[distinct], np.flatnonzero(lonely))]
    return certificate_from_candidates(Y, items, own_rows=mine.tolist())


def interpolating_queries(K, rows) -> list:
    """``(i, q_i)`` for the keys ``rows``: least-squares interpolation, a proposal for the witness
    check.  When the keys are no more than their dimension, ``Q = K^T (K K^T)^-1`` gives
    ``K q_i = e_i`` (key i scores 1, every other key 0); when they are more, ``Q`` is the
    pseudo-inverse of the centred keys ``K - mean``, whose scores ``(K - mean) Q`` are the
    orthogonal projection onto the keys' column space: key i keeps the projection's diagonal
    entry, usually the largest of its column (every key of all 300 MiniLM heads of 33 to 36
    keys tried).  None when the Gram matrix is singular or the result not finite."""
    N, n = K.shape
    rows = np.asarray(rows, dtype=np.int64)
    if N < 2 or not rows.size:
        return []
    try:
        if N <= n:
            picks = np.zeros((N, rows.size))
            picks[rows, np.arange(rows.size)] = 1.0
            Q = K.T @ np.linalg.solve(K @ K.T, picks)  # n x len(rows)
        else:
            Q = np.linalg.pinv(K - K.mean(axis=0))[:, rows]
    except np.linalg.LinAlgError:
        return []
    return [(int(i), Q[:, c].copy()) for c, i in enumerate(rows)] if np.isfinite(Q).all() else []


def with_own_rows(certificate: dict, Y) -> dict:
    """The outputs certificate with every :data:`OWN_ROW` witness replaced by its row of ``Y``."""
    results = [
        dict(r, witness=np.asarray(Y[r["index"]], dtype=np.float64).tolist()) if r.get("witness") == OWN_ROW else r
        for r in certificate["results"]
    ]
    return dict(certificate, results=results)


def result_json(r) -> dict:
    """``KeyResult.to_json`` without per-number conversions for float witnesses."""
    if r.witness is not None and not r.extras and set(map(type, r.witness)) <= {float}:
        return {
            "index": int(r.index),
            "status": r.status,
            "witness": list(r.witness),
            "combination": None if r.combination is None else combination_to_json(r.combination),
            "verified": r.verified,
            "margin": None if r.margin is None else float(r.margin),
            "reason": r.reason,
        }
    return result_to_json(r)


def json_bytes(data) -> bytes:
    """``data`` as one line of JSON (UTF-8) and a newline, by orjson: every float as the shortest
    text that reads back to the same float, as ``json.dumps`` writes it (only the spelling of
    exponents differs, ``0.00001`` for ``1e-05``), about 13 times faster on the witnesses' floats
    that fill a run's files.  What orjson does not take (integers beyond 64 bits, keys that are
    not strings) goes through ``json.dumps``, as before.  orjson writes a non-finite float as
    ``null``, where ``json.dumps`` wrote ``NaN``, which is not JSON."""
    import orjson

    try:
        return orjson.dumps(data, option=orjson.OPT_APPEND_NEWLINE)
    except TypeError:
        return (json.dumps(data) + "\n").encode("utf-8")


def _write_json(path: Path, data: dict) -> None:
    from ..certificates.writes import write_bytes

    write_bytes(path, json_bytes(data))


def _certificate(n_keys, dim, query_set, results) -> dict:
    summary = {"selectable": 0, "tie-only": 0, "unselectable": 0, "undecided": 0}
    from ..kernel import SELECTABILITY_SCHEMA as SCHEMA
    from ..kernel import FreeQueries, kind_of

    if kind_of(query_set.get("kind", "free")) is not FreeQueries:
        summary["not-realisable"] = 0
    for r in results:
        summary[r["status"]] = summary.get(r["status"], 0) + 1

    return {
        "schema": SCHEMA,
        "n_keys": n_keys,
        "dim": dim,
        "query_set": query_set,
        "summary": summary,
        "results": results,
    }
