"""Informational findings about a certificate's keys, and their re-checks.

* :func:`rank_finding`: the keys' exact affine dimension next to their numerical one
  (keys on an affine subspace up to rounding have a smaller numerical dimension).
* :func:`witness_margins`: the margin of a witness, min_{j != i} q.(k_i - k_j) / ||q||_2,
  the score gap for the unit query along q.

Both are floats stated as floats: they never change a status, and the kernel never reads
them.  :func:`recheck` measures them again when a certificate is checked (the exact
dimension exactly, the rest in floats within a stated slack) and turns a disagreement into
a failed verdict, so a certificate whose stated findings are wrong does not pass.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..kernel import (
    ExactKeys,
    ExactLayerNormKeys,
    FreeQueries,
    LayerNormKeys,
    Verdict,
    integer_matrix,
    integer_vector_of_fractions,
    kind_of,
    thaw,
)

__all__ = ["RANK_FACTOR", "rank_finding", "check_rank_finding", "witness_margins", "check_margins", "recheck"]


#: singular values of the centred keys at most RANK_FACTOR * 2**-52 times the largest are
#: counted as rounding by :func:`rank_finding`
RANK_FACTOR = 2**20


def rank_finding(keys) -> dict:
    """The keys' exact affine dimension next to their numerical one (informational).

    Numerical: the number of singular values of the keys minus their float mean that
    exceed ``threshold`` = RANK_FACTOR * 2**-52 * (largest singular value), computed in
    float64 by LAPACK on the keys scaled by a power of two (so that no float overflows; singular
    values beyond the float range are stated as null).  A numerical dimension below the exact one means the keys lie on
    an affine subspace up to rounding: keys that win only through the rounding win by
    margins of the size of the rounding."""
    ek = ExactKeys.of(keys)
    arr = ek.array
    top = float(np.abs(arr).max(initial=0.0))
    power = 0 if 2.0**-500 < top < 2.0**500 or top == 0 else math.frexp(top)[1]  # far out: scaled exactly, no overflow
    scaled = np.ldexp(arr, -power)
    sv = np.linalg.svd(scaled - scaled.mean(axis=0), compute_uv=False) if ek.n > 1 else np.zeros(0)
    threshold = RANK_FACTOR * 2.0**-52 * sv[0] if sv.size else 0.0
    return {
        "exact_affine_dimension": ek.affine_rank(),
        "numerical_affine_dimension": int(np.sum(sv > threshold)),
        "singular_values": [_in_float_range(Fraction(float(v)) * 2**power) for v in sv],
        "threshold": _in_float_range(Fraction(float(threshold)) * 2**power),
        "rule": "singular values of the centred keys above 2**20 * 2**-52 times the largest",
    }


def check_rank_finding(keys, finding) -> str | None:
    """None if the rank finding's dimensions are those of the keys (the exact one exactly,
    the numerical one recomputed by the same float rule), else a message."""
    if not isinstance(finding, dict):
        return "the rank finding must be an object"
    again = rank_finding(keys)
    for name in ("exact_affine_dimension", "numerical_affine_dimension"):
        if finding.get(name) != again[name]:
            return f"rank finding: {name} is {finding.get(name)!r} but the keys give {again[name]}"
    return None


def witness_margins(keys, items) -> list[float]:
    """For each (i, q): min_{j != i} q.(k_i - k_j) / ||q||_2, as a float.

    Float witnesses are scored in float64 (each by its own matrix-vector product, so a
    margin does not depend on the other witnesses); where the float gap is not clearly
    above the rounding bound of the scores (the checker's filter bound; a rational witness is
    scored through its rounded floats, the bound widened as in the checker), the gap is computed
    exactly with integers and rounded once (for a float witness, over the keys whose float score
    is within twice that bound of the top one)."""
    ek = ExactKeys.of(keys)
    if ek.n < 2 or not items:
        return [None] * len(items)
    colmax, step = ek.colmax, max(1, (1 << 21) // ek.n)  # at most 2**21 scores (16 MB) at once, as the kernel
    return [m for s in range(0, len(items), step) for m in _margins(ek, items[s : s + step], colmax)]


def _margins(ek: ExactKeys, items, colmax) -> list[float]:
    d = ek.dim
    floats = [getattr(q, "dtype", None) == np.float64 or set(map(type, q)) <= {float} for _, q in items]
    qs = [q if f else _rescaled(q) for (_, q), f in zip(items, floats)]
    F = np.array([[float(x) for x in q] if not f else q for q, f in zip(qs, floats)], dtype=np.float64).reshape(-1, d)
    S = np.matmul(ek.array[None], F[:, :, None])[:, :, 0]  # one product per witness
    # a rational witness is scored through its rounded floats (the bound widened by one term, as the
    # kernel's filter does) unless an entry rounds to zero; the exact gap is for the close cases only
    lost = np.array([not f and any(x == 0 and v != 0 for x, v in zip(row, q)) for row, q, f in zip(F, qs, floats)])
    absF = np.abs(F)
    top = absF.max(axis=1, initial=0.0)
    # row by row (a batch of 1 x d by d x 1 products, each numpy's dot of two vectors), as
    # np.linalg.norm(f / m) computes it: the square root of the row's dot with itself
    V = np.divide(F, top[:, None], out=np.zeros_like(F), where=top[:, None] > 0)
    with np.errstate(over="ignore", invalid="ignore"):
        norms = top * np.sqrt(np.matmul(V[:, None, :], V[:, :, None])[:, 0, 0])
        rows_of, at = np.arange(len(items)), np.array([i for i, _ in items], dtype=np.int64)
        own, finite = S[rows_of, at], np.isfinite(S).all(axis=1)
        S[rows_of, at] = -np.inf
        best = S.max(axis=1)
        gaps = own - best
        terms = d + ~np.array(floats)
        bounds = 8.0 * (np.matmul(absF[:, None, :], colmax[:, None])[:, 0, 0] * terms * 2.0**-50 + d * 2.0**-1020)
        exact = (lost | ~(gaps > bounds)) & (norms > 0)
        margins = gaps / np.where(norms > 0, norms, 1.0)
    out = [m if math.isfinite(m) else None for m in margins.tolist()]
    for t in np.flatnonzero(~(norms > 0)).tolist():
        out[t] = 0.0
    for t in np.flatnonzero(exact).tolist():
        i, rows = items[t][0], None
        if not lost[t] and floats[t] and np.isfinite(bounds[t]) and finite[t]:  # the keys that may hold the top score
            rows = [j for j in np.flatnonzero(S[t] >= best[t] - 2 * bounds[t]).tolist() if j != i]
        gap = _in_float_range(_exact_gap(ek, i, qs[t], rows))
        margin = None if gap is None else gap / norms[t]
        out[t] = margin if margin is not None and math.isfinite(margin) else None
    return out


def _in_float_range(value) -> float | None:
    """``float(value)``, or None beyond the float range (an informational float is then not stated)."""
    try:
        out = float(value)
    except OverflowError:
        return None
    return out if math.isfinite(out) else None


def _exact_gap(ek: ExactKeys, i: int, q, rows) -> Fraction:
    """``q.k_i - max_{j != i} q.k_j`` exactly, the maximum over ``rows`` (all keys when None)."""
    if rows is None:
        Q, den = integer_vector_of_fractions(q)
        scores = ek.int_scores(Q)
        return int(scores[i] - max(scores[:i] + scores[i + 1 :])) * Fraction(2) ** ek.exponent / den
    Qm, e = integer_matrix(np.asarray(q, dtype=np.float64).reshape(-1, 1))
    K, ek_rows = integer_matrix(ek.array[[i] + rows])
    scores = (K * Qm).entries()
    return int(scores[0] - max(scores[1:])) * Fraction(2) ** (e + ek_rows)


def _rescaled(q):
    """``q`` itself when every entry is a float, else ``q`` times the power of two that brings its
    largest entry near 1 (margins do not change under positive scaling, and no float overflows)."""
    if all(type(x) is float for x in q):
        return q
    fr = [Fraction(x) for x in q]
    shift = max((x.numerator.bit_length() - x.denominator.bit_length() for x in fr if x), default=0)
    return [x / 2**shift if shift > 0 else x * 2**-shift for x in fr]


def check_margins(keys, results) -> list[str | None]:
    """For each result: None unless it is selectable with a ``margin`` that disagrees with
    :func:`witness_margins` of its witness by more than 2**-20 relatively plus the float
    rounding bound (margins are informational floats; this catches wrong ones)."""
    ek = ExactKeys.of(keys)
    picked = [r for r in results if r.status == "selectable" and r.margin is not None and r.witness is not None]
    again = dict(zip((r.index for r in picked), witness_margins(ek, [(r.index, r.witness) for r in picked])))
    out = []
    for r in results:
        m = again.get(r.index) if r.status == "selectable" and r.margin is not None else None
        slack = 2.0**-20 * abs(m) + 2.0**-40 * float(ek.colmax.max(initial=0.0)) if m is not None else 0.0
        out.append(
            None
            if m is None or abs(r.margin - m) <= slack
            else f"key {r.index}: margin {r.margin!r} but its witness gives {m!r}"
        )
    return out


def _layernorm_margins(inputs, spec: LayerNormKeys, results) -> list[str | None]:
    """:func:`check_margins` for keys that are the LayerNorm outputs of ``inputs``: each stated
    margin against the float scores of the correctly rounded outputs."""
    if len(inputs) < 2 or not any(r.status == "selectable" and r.margin is not None for r in results):
        return [None] * len(results)
    keys = ExactLayerNormKeys(inputs, spec)
    gain = np.array([float(g) for g in keys.gain])
    out = []
    for r in results:
        if r.status != "selectable" or r.margin is None or r.witness is None:
            out.append(None)
            continue
        witness = _rescaled(r.witness)
        q = np.array([float(v) for v in witness]) * gain
        s = keys.z @ q
        own, s[r.index] = s[r.index], -np.inf
        w = np.array([float(v) for v in witness])
        top = float(np.abs(w).max(initial=0.0))
        norm = top * float(np.linalg.norm(w / top)) if top > 0 else 1.0  # no underflow for tiny witnesses
        with np.errstate(over="ignore", invalid="ignore"):
            m, slack = (own - s.max()) / norm, 2.0**-40 * float(np.abs(q) @ keys.colmax) / norm
        if not (np.isfinite(m) and np.isfinite(slack)):  # beyond the float range: not measured here
            out.append(None)
            continue
        out.append(
            None
            if abs(r.margin - m) <= 2.0**-20 * abs(m) + slack
            else f"key {r.index}: margin {r.margin!r} but its witness gives {float(m)!r}"
        )
    return out


def recheck(cert, keys, verdicts) -> list[Verdict]:
    """The kernel's ``verdicts`` on ``cert``, with every stated finding measured again: a key whose
    claim holds but whose margin disagrees fails with that message, and a wrong rank finding adds a
    failed verdict (index -1)."""
    ek = ExactKeys.of(keys)
    verdicts = list(verdicts)
    held = [n for n, v in enumerate(verdicts[: len(cert.results)]) if v.ok]
    results = [cert.results[n] for n in held]
    if cert.keys_from is not None:
        messages = _layernorm_margins(ek.array, LayerNormKeys.from_json(thaw(cert.keys_from)), results)
    else:
        free = kind_of(cert.query_set.get("kind", "free")) is FreeQueries  # margins of free witnesses only
        messages = check_margins(ek, results) if free else []
    for n, message in zip(held, messages):
        if message:
            verdicts[n] = Verdict(verdicts[n].index, verdicts[n].status, False, message)
    if getattr(cert, "rank", None) is not None:  # the kernel's own reading has no findings
        message = check_rank_finding(ek, thaw(cert.rank))
        if message:
            verdicts.append(Verdict(-1, "rank finding", False, message))
    return verdicts
