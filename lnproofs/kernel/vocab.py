"""Vocabulary certificates: tokens whose witness is their own key, decided for all at once.

A token ``i`` in ``selves`` claims ``selectable`` with the witness ``q = t_i k_i`` (``t_i = scale[i] > 0``;
theorem ``vocab.self_witness``), lifted to ``(t_i k_i, 1)`` when the query set has a bias; every
other token has a :class:`~lnproofs.kernel.certificates.KeyResult`, checked by its query set's
module.  Every token must be named exactly once.  Without a bias, every self witness is decided
by one blocked Gram computation ``K K^T`` in doubles: ``t k_i`` has the strict winner of ``k_i``,
and ``fl(k_i . k_i) - max_j fl(k_i . k_j)`` above the float filter's bound ``4 E'_i`` of
:mod:`lnproofs.kernel.checker` (one bound per query, valid for any order of evaluation, so each
block's transpose serves the other rows; rounding is monotone, so the maximum may be taken
before the subtraction) proves ``k_i . k_i > k_i . k_j`` for every ``j``.

Keys that are all normal float32 numbers (or zero) are multiplied in single precision.  The
checker's bound holds with ``u = 2**-24`` and ``lambda = 2**-126``: for ``d u <= 1/4``,
``|fl(p) - p| <= (4/3) d u sum |x_l y_l| + 2 d lambda``, below ``E'_i = d 2**-23 c'_i + d 2**-124``
with ``c'_i`` computed in doubles (relative error far below ``1/6``); ``c'_i <= 2**100`` keeps
every partial sum below the float32 range.  The computed scores are float32 numbers, their
difference is taken in doubles (relative error ``2**-53``), and a difference above ``4 E'_i``
leaves an exact gap above ``4 E'_i / (1 + 2**-53) - 2 E'_i > 0``.  An accumulation in higher
precision only tightens the bound.  What the filter does
not settle, and every self witness with a bias, goes to the query set's exact checks (a box
without a bias also compares ``t_i max_l |k_il|`` with its bound, exactly).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .certificates import KeyResult
from .checker import ExactKeys, Verdict
from .errors import CertificateFormatError, require
from .querysets import module_for

__all__ = ["self_witnesses", "check_vocab"]


def self_witnesses(keys, block: int = 2048) -> np.ndarray:
    """Rows ``i`` for which the float filter proves ``k_i . k_i > k_i . k_j`` for every ``j != i``
    (the products in single precision when every key is a normal float32, as a model's weights are)."""
    ek = ExactKeys.of(keys)
    K, n, d = ek.array, ek.n, ek.dim
    single = bool(np.all(K.astype(np.float32) == K)) and not np.any((ek.abs < 2.0 ** -126) & (K != 0))
    W = K.astype(np.float32) if single else K
    unit, tiny, cap = (2.0 ** -23, 2.0 ** -124, 2.0 ** 100) if single else (2.0 ** -50, 2.0 ** -1020, 2.0 ** 1000)
    c = ek.abs @ ek.abs.max(axis=0)                             # c'_i of the query k_i
    top = np.full(n, -np.inf)
    for a in range(0, n, block):
        for b in range(a, n, block):
            S = W[a:a + block] @ W[b:b + block].T
            if a == b:
                np.fill_diagonal(S, -np.inf)
            np.maximum(top[a:a + block], S.max(axis=1), out=top[a:a + block])
            np.maximum(top[b:b + block], S.max(axis=0), out=top[b:b + block])
    ok = (np.einsum("ij,ij->i", W, W).astype(np.float64) - top > 4.0 * (c * (d * unit) + d * tiny)) & (c <= cap)
    return ok & ~ek.subnormal_rows.any() if n > 1 else np.ones(n, bool)


def check_vocab(keys, query_set, selves, scale, results) -> list[Verdict]:
    """One verdict per token, in index order (see the module docstring)."""
    ek = ExactKeys.of(keys)
    selves, t = np.asarray(selves, dtype=np.int64), np.asarray(scale, dtype=np.float64)
    named = sorted(selves.tolist() + [int(r.index) for r in results])
    require(named == list(range(ek.n)), CertificateFormatError, f"every key 0..{ek.n - 1} must be named once")
    require(not len(selves) or query_set.kind in ("free", "box"), CertificateFormatError,
            f"self witnesses are for free and box query sets, not {query_set.kind!r}")
    require(t.shape == (ek.n,) and bool(np.all(t[selves] > 0)) and bool(np.isfinite(t).all()),
            CertificateFormatError, "scale must give one finite t_i > 0 per key")
    bias, bound = getattr(query_set, "bias", None), getattr(query_set, "bound", None)
    proven = self_witnesses(ek) if bias is None and len(selves) else np.zeros(ek.n, bool)
    rows = selves[~proven[selves]]
    Q = ek.array[rows] * t[rows, None]                         # t k_i, kept as floats where the product is exact
    exact = (np.frexp(t[rows])[0] == 0.5) & np.all(np.isfinite(Q) & ((Q == 0) == (ek.array[rows] == 0))
                                                    & ((np.abs(Q) >= 2.0 ** -1022) | (Q == 0)), axis=1)
    todo = [KeyResult(int(i), "selectable", tuple(Q[k].tolist()) if exact[k] else
                      tuple(Fraction(float(t[i])) * Fraction(x) for x in ek.array[i].tolist())) for k, i in enumerate(rows)]
    messages = {int(i): None for i in selves}
    for i in selves[proven[selves]] if bound is not None else ():      # and t_i max_l |k_il| <= B, exactly
        if Fraction(float(t[i])) * Fraction(float(ek.abs[i].max())) > Fraction(bound):
            messages[int(i)] = f"key {i}: the witness t k_i leaves the box |q_l| <= {bound}"
    for v in module_for(query_set.kind).check_all(ek, query_set, list(results) + todo):
        messages[v.index] = v.message or None
    status = {int(r.index): r.status for r in results}
    return [Verdict(i, status.get(i, "selectable"), messages[i] is None, messages[i] or "") for i in range(ek.n)]
