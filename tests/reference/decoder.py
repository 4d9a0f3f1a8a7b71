"""Reference (slow, beside the tests): decoders as earlier versions certified them: realisable query sets per head (LayerNorm or RMSNorm, with RoPE), causal masks
and grouped queries.

**Realisable queries.**  A LayerNorm layer gives the ``layernorm`` query set, an RMSNorm
layer the ``rmsnorm`` one (``q = R_t (W_q (gain * u) + b_q)``, ``||u|| <= sqrt(n)``), where
``R_t`` is the rotary matrix of the query position ``t`` (entries: the floats of the
model's own cos/sin table, applied exactly on the query side; the keys are the model's
rotated keys as floats).  A LayerNorm layer with RoPE (GPT-NeoX) gets the
``layernorm_rotary`` set: the LayerNorm set seen through the same ``R_t``.

**Causal masks.**  The query at position ``t`` of an input sees keys ``0..t`` of that
input.  Every prefix ``0..t`` is certified; for key ``j`` we report the positions ``t >= j``
at which it can still win.

- Free queries (with or without RoPE: ``R_t q`` ranges over all of R^d as ``q`` does,
  and the rotated keys do not depend on ``t``) and realisable queries without RoPE: the
  query set is the same at every position and later positions only add competitors, so
  once ``k_j`` cannot win at ``t`` it cannot win at any later position.  We report the
  first position at which it stops being selectable (``null``: never, up to the input's
  end) and keep the exact certificate of that prefix.
- Realisable queries with RoPE: the query set changes with ``t``; every position is
  reported, with its certificate.

Positions are per input; with several (pooled) inputs each is treated on its own.
Encoders (``causal`` false) keep the pooled answer only.  Certifying every prefix of a
sequence of length ``T`` costs ``T`` certifications per head.

**Grouped queries.**  Query heads sharing a key head share its free answers (computed
once per key head, see ``free_cache``); the realisable answers are per query head.
"""

from __future__ import annotations

import numpy as np

from lnproofs.kernel import OptionError

__all__ = [
    "CAUSAL_NOTE",
    "realisable_query_set",
    "query_position",
    "causal_report",
    "causal_certificates",
    "rms_gaps",
    "refuse_folded",
]

CAUSAL_NOTE = (
    "query position t sees keys 0..t of its input; first_unselectable[j] is the first t >= j at which "
    "key j cannot win (null: it can win at every t up to the end), each with the exact certificate of "
    "prefix 0..t"
)


def query_position(capture) -> int:
    """The query position used for the pooled realisable answer with RoPE: the last one."""
    return int(capture.sources[:, 1].max())


def _rotation(capture, position: int):
    from lnproofs.kernel import Rotation

    row = int(np.flatnonzero(capture.sources[:, 1] == position)[0])
    return Rotation(capture.rotary_cos[row], capture.rotary_sin[row], capture.rotary_style, position)


def realisable_query_set(capture, head: int, position: int | None = None):
    """``(query_set, reason)``: the set of queries head ``head`` of the layer can produce at
    query ``position`` (RoPE; default :func:`query_position`), or ``(None, reason)``."""
    W_q, b_q, _, _ = capture.head_weights(head)
    norm = capture.layernorm
    if capture.norm_kind == "rmsnorm":
        from lnproofs.kernel import RMSNormQuerySet

        rotation = None
        if capture.rotary:
            rotation = _rotation(capture, query_position(capture) if position is None else position)
        return RMSNormQuerySet(norm.gain, W_q, b_q, norm.eps, rotation), None
    if capture.rotary:
        from lnproofs.kernel import RotaryLayerNormQuerySet

        rotation = _rotation(capture, query_position(capture) if position is None else position)
        return RotaryLayerNormQuerySet(norm.gain, W_q, b_q, norm.eps, rotation, norm.bias), None
    from lnproofs.kernel import LayerNormQuerySet

    return LayerNormQuerySet(norm.gain, norm.bias, W_q, b_q, norm.eps), None


def _certificate(keys, query_set) -> dict:
    from lnproofs.propose.certification import certify

    return certify(keys, query_set=query_set).to_json()


_WINS = ("selectable",)


def _monotone(keys: np.ndarray, query_set) -> dict:
    """First position at which each key stops being selectable (one query set for all t)."""
    T = len(keys)
    first: list = [None] * T
    undecided: dict[str, list[int]] = {}
    certificates: dict[str, dict] = {}
    for t in range(T):
        cert = _certificate(keys[: t + 1], query_set)
        stops = False
        for r in cert["results"]:
            j = r["index"]
            if r["status"] == "undecided":
                undecided.setdefault(str(t), []).append(j)
            elif r["status"] not in _WINS and first[j] is None:
                first[j] = t
                stops = True
        if stops or str(t) in undecided:
            certificates[str(t)] = cert
    return {"first_unselectable": first, "undecided_at": undecided, "certificates": certificates}


def _per_position(keys: np.ndarray, query_sets) -> dict:
    """Every query position ``t`` with its own query set: which keys ``0..t`` can win there."""
    T = len(keys)
    wins: list[list[int]] = [[] for _ in range(T)]
    undecided: dict[str, list[int]] = {}
    certificates: dict[str, dict] = {}
    for t in range(T):
        cert = _certificate(keys[: t + 1], query_sets(t))
        certificates[str(t)] = cert
        for r in cert["results"]:
            if r["status"] in _WINS:
                wins[r["index"]].append(t)
            elif r["status"] == "undecided":
                undecided.setdefault(str(t), []).append(r["index"])
    return {"selectable_at": wins, "undecided_at": undecided, "certificates": certificates}


def causal_report(capture, head: int, keys: np.ndarray, *, free_cache: dict | None = None) -> dict:
    """The causal section of a head record (see the module docstring); ``keys`` are the
    head's (rotated) keys over all rows of ``capture``."""
    inputs = []
    for number in sorted(set(capture.sources[:, 0].tolist())):
        rows = np.flatnonzero(capture.sources[:, 0] == number)
        seq = keys[rows]
        cache_key = (capture.key_head(head), number)
        if free_cache is not None and cache_key in free_cache:
            free = free_cache[cache_key]
        else:
            free = _monotone(seq, None)
            if free_cache is not None:
                free_cache[cache_key] = free
        entry = {"input": int(number), "rows": rows.tolist(), "free": free}
        query_set, reason = realisable_query_set(capture, head)
        if query_set is None:
            entry["realisable"] = {"status": "skipped", "reason": reason}
        elif capture.rotary:
            positions = capture.sources[rows, 1]
            entry["realisable"] = _per_position(
                seq, lambda t: realisable_query_set(capture, head, int(positions[t]))[0]
            )
        else:
            entry["realisable"] = _monotone(seq, query_set)
        inputs.append(entry)
    return {"note": CAUSAL_NOTE, "rotary": bool(capture.rotary), "inputs": inputs}


def causal_certificates(data: dict, keys: np.ndarray) -> list:
    """``(name, Certificate, prefix keys)`` for every certificate of a head record's causal section
    (the package still reads such records: :mod:`lnproofs.models.certify_model`)."""
    from lnproofs.models.certify_model import _prefix_certificates

    return _prefix_certificates(data, keys)


def rms_gaps(out, hidden_in, gain, eps) -> dict:
    """How far RMSNorm outputs lie inside the ellipsoid ``{gain * u : ||u|| = sqrt(n)}``.

    Per row: ``value`` = ``(1/n) sum (y / gain)^2`` (1 on the surface, < 1 inside when
    eps > 0), ``gap`` = ``1 - sqrt(value)`` and ``predicted_gap`` = ``1 - sqrt(m / (m + eps))``
    with ``m = mean(x^2)`` of the inputs (theorem ``rmsnorm.interior``).  Zero gains are
    left out of the sums.
    """
    y = np.asarray(out, dtype=np.float64)
    x = np.asarray(hidden_in, dtype=np.float64)
    gain = np.asarray(gain, dtype=np.float64)
    live = gain != 0
    u = y[:, live] / gain[live]
    value = (u * u).sum(axis=1) / y.shape[1]
    m = (x * x).mean(axis=1)
    predicted = 1.0 - np.sqrt(m / (m + eps))
    gap = 1.0 - np.sqrt(value)
    axes = np.sqrt(y.shape[1]) * np.abs(gain)
    return {
        "value": value.tolist(),
        "gap": gap.tolist(),
        "predicted_gap": predicted.tolist(),
        "zero_gain_coordinates": int((~live).sum()),
        "max_gap": float(gap.max()),
        "min_gap": float(gap.min()),
        "max_gap_vs_prediction": float(np.abs(gap - predicted).max()),
        "dimension": int(live.sum()) - 1,
        "largest_semi_axis": float(axes.max()),
        "smallest_semi_axis": float(axes.min()),
    }


def refuse_folded(capture) -> None:
    if capture.norm_kind != "layernorm":
        raise OptionError("--fold folds a LayerNorm; this model normalises with RMSNorm, certify it without --fold")
