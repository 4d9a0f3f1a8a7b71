"""Exact matrices of the uniform-attention equations, built with python-flint.

Uniform attention asks for a non-zero query giving every key the same score.  With the
keys written as integers times one power of two (``K * 2**e``), the key differences
``D = K[1:] - K[0]`` are an integer matrix; for norm-realisable queries
``q = A u + q0`` (``A = R W_q diag(g)``, ``q0 = R (W_q beta + b_q)``, ``R`` the rotation or ``I``)
the equations are

    M u = b,   M = [D A ; 1^T],   b = [-D q0 ; 0]        (N rows, n columns),

without the last row ``1 . u = 0`` when the set is not centred (RMSNorm).  Every product is
one python-flint matrix product, so the cost does not grow with Python loops over entries.
"""

from __future__ import annotations

import numpy as np
from flint import fmpq, fmpq_mat, fmpz_mat

from .dyadic import fmpq_of, integer_matrix
from .querysets.norm import ExactQueryMap

__all__ = ["difference_matrix", "LayerNormEquations", "fmpq_column"]


def difference_matrix(keys):
    """``(D, K)``: the integer key differences ``K[1:] - K[0]`` and the integer keys (fmpz_mat),
    both in units of the keys' common power of two."""
    K, _ = integer_matrix(np.atleast_2d(np.asarray(keys, dtype=np.float64)))
    N, d = K.nrows(), K.ncols()
    e = K.entries()
    return fmpz_mat(max(N - 1, 0), d, [e[r * d + c] - e[c] for r in range(1, N) for c in range(d)]), K


def fmpq_column(values):
    """A column fmpq_mat of exact rationals (Fractions or ints)."""
    return fmpq_mat(len(values), 1, [fmpq_of(v) for v in values])


class LayerNormEquations:
    """The equations ``M u = b`` of one key set and one norm query set (LayerNorm, RMSNorm,
    rotary), kept factored: ``M`` is never formed.  ``A = R WG * scale`` with the integer matrix
    ``WG`` (fmpz_mat; ``query`` gives ``A u + q0``), ``q0`` (fmpq_mat), ``H = A P A^T = Hn * c``
    with the integer ``Hn``, the integer key differences ``D``.  Every question about the
    solution set reduces to ``d``-dimensional linear algebra, because ``q = A u + q0``
    only depends on the part of ``u`` in the range of ``P A^T``.  Vectors ``u`` are kept
    as ``(U, den)``: an integer column and one positive denominator."""

    def __init__(self, keys, query_set, query_map=None, differences=None):
        qm = ExactQueryMap(query_set) if query_map is None else query_map
        self.query_set, self.centred, self.R = query_set, query_set.centred, qm.R
        self.n, self.d = query_set.width, query_set.dim
        self.Hn, self.c, self.q0 = qm.gram()
        self.WGT, self.scale, self.query = qm.WGT, qm.scale, qm.query  # query(U, den) = A u + q0, u = U / den
        self.D, self.K = difference_matrix(keys) if differences is None else differences
        self.N = self.D.nrows() + int(self.centred)  # equations: the differences (and 1.u = 0)

    def AT_times(self, v):
        """``(U, den)`` with ``A^T v = U / den`` for a rational column ``v`` (fmpq_mat)."""
        vi, dv = (v if self.R is None else self.R.transpose() * v).numer_denom()
        f = self.scale / dv
        return self.WGT * vi * int(f.p), int(f.q)

    # ---- M^T y and M u without forming M ----
    def combine(self, y):
        """``(U, den)`` with ``M^T y = U / den``, and ``y . b``, for N rational weights ``y`` (fmpq)."""
        m = self.D.nrows()
        v = (fmpq_mat(1, m, list(y[:m])) * fmpq_mat(self.D)).transpose() if m else fmpq_mat(self.d, 1)
        U, den = self.AT_times(v)
        yb = -(v.transpose() * self.q0)[0, 0]
        if not self.centred:
            return (U, den), yb
        last = fmpq(y[-1]) * den
        U = U * int(last.q) + fmpz_mat(self.n, 1, [1] * self.n) * int(last.p)
        return (U, den * int(last.q)), yb

    def residual_free(self, U, den) -> bool:
        """True when ``M u = b`` for ``u = U / den``: ``D (A u + q0) = 0`` and ``1.u = 0``."""
        if self.centred and sum(U.entries()) != 0:
            return False
        q = self.query(U.entries(), den)
        return self.D.nrows() == 0 or all(x == 0 for x in (fmpq_mat(self.D) * q).entries())

    def directions_keep_query(self) -> bool:
        """True when every direction of the solution set leaves ``q`` unchanged: range(H) meets
        {q : D q = 0} only in 0, that is ``D`` is one-to-one on range(H): ``rank(D Hn) = rank(Hn)``."""
        return int((self.D * self.Hn).rank()) == int(self.Hn.rank())
