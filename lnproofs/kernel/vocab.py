"""Vocabulary certificates: tokens whose witness is their own key, decided for all at once.

A token ``i`` in ``selves`` claims ``selectable`` with the witness ``q = t_i k_i`` (``t_i = scale[i] > 0``;
theorem ``vocab.self_witness``), lifted to ``(t_i k_i, 1)`` when the query set has a bias; every
other token has a :class:`~lnproofs.kernel.certificates.KeyResult`, checked by its query set's
module.  Every token must be named exactly once.  Under free queries, every self witness is decided
by one blocked Gram computation ``K K^T`` in doubles: ``t k_i`` has the strict winner of ``k_i``,
and ``fl(k_i . k_i) - max_j fl(k_i . k_j)`` above the float filter's bound ``4 E'_i`` of
:mod:`lnproofs.kernel.checker` (one bound per query, valid for any order of evaluation, so each
block's transpose serves the other rows; rounding is monotone, so the maximum may be taken
before the subtraction) proves ``k_i . k_i > k_i . k_j`` for every ``j``.  What the filter does
not settle, and every self witness of a box (its bound, its bias), goes to the query set's checks.
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
    """Rows ``i`` for which the float filter proves ``k_i . k_i > k_i . k_j`` for every ``j != i``."""
    ek = ExactKeys.of(keys)
    K, n, d = ek.array, ek.n, ek.dim
    c = ek.abs @ ek.abs.max(axis=0)                             # c'_i of the query k_i
    top = np.full(n, -np.inf)
    for a in range(0, n, block):
        for b in range(a, n, block):
            S = K[a:a + block] @ K[b:b + block].T
            if a == b:
                np.fill_diagonal(S, -np.inf)
            np.maximum(top[a:a + block], S.max(axis=1), out=top[a:a + block])
            np.maximum(top[b:b + block], S.max(axis=0), out=top[b:b + block])
    ok = (np.einsum("ij,ij->i", K, K) - top > 4.0 * (c * (d * 2.0 ** -50) + d * 2.0 ** -1020)) & (c <= 2.0 ** 1000)
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
    proven = self_witnesses(ek) if query_set.kind == "free" and len(selves) else np.zeros(ek.n, bool)
    rows = selves[~proven[selves]]
    Q = ek.array[rows] * t[rows, None]                         # t k_i, kept as floats where the product is exact
    exact = (np.frexp(t[rows])[0] == 0.5) & np.all(np.isfinite(Q) & ((Q == 0) == (ek.array[rows] == 0))
                                                    & ((np.abs(Q) >= 2.0 ** -1022) | (Q == 0)), axis=1)
    todo = [KeyResult(int(i), "selectable", tuple(Q[k].tolist()) if exact[k] else
                      tuple(Fraction(float(t[i])) * Fraction(x) for x in ek.array[i].tolist())) for k, i in enumerate(rows)]
    messages = {int(i): None for i in selves}
    for v in module_for(query_set.kind).check_all(ek, query_set, list(results) + todo):
        messages[v.index] = v.message or None
    status = {int(r.index): r.status for r in results}
    return [Verdict(i, status.get(i, "selectable"), messages[i] is None, messages[i] or "") for i in range(ek.n)]
