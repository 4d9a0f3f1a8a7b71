"""Exact matrices of the uniform-attention equations, built with python-flint.

Uniform attention asks for a non-zero query giving every key the same score.  With the
keys written as integers times one power of two (``K * 2**e``), the key differences
``D = K[1:] - K[0]`` are an integer matrix; for LayerNorm-realisable queries
``q = A u + q0`` (``A = W_q diag(gamma)``, ``q0 = W_q beta + b_q``) the equations are

    M u = b,   M = [D A ; 1^T],   b = [-D q0 ; 0]        (N rows, n columns).

These are the same rational matrices as the reference construction of
:func:`lnproofs.propose.uniform_reference._layernorm_equations`; here every product is one
python-flint matrix product, so the cost does not grow with Python loops over entries.
"""

from __future__ import annotations

import numpy as np
from flint import fmpq, fmpq_mat, fmpz_mat

from .dyadic import fmpq_of, integer_matrix
from .querysets.layernorm import ExactQueryMap

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
    """The equations ``M u = b`` of one key set and one LayerNorm query set, kept factored:
    ``M = [D A ; 1^T]`` is never formed.  ``A = WG * scale`` with the integer matrix ``WG``
    (fmpz_mat), ``q0`` (fmpq_mat), ``H = A P A^T = Hn * scale^2 / n`` with the integer ``Hn``
    (``P = I - 11^T/n``), the integer key differences ``D``.  Every question about the
    solution set reduces to ``d``-dimensional linear algebra, because ``q = A u + q0``
    only depends on the part of ``u`` in the range of ``P A^T``.  Vectors ``u`` are kept
    as ``(U, den)``: an integer column and one positive denominator."""

    def __init__(self, keys, query_set, query_map=None, differences=None):
        qm = ExactQueryMap(query_set) if query_map is None else query_map
        self.query_set = query_set
        self.n, self.d = query_set.width, query_set.dim
        self.Hn, _ = qm.factored()
        self.WG, self.WGT, self.scale, self.q0 = qm.WG, qm.WGT, qm.scale, qm.q0
        self.D, self.K = difference_matrix(keys) if differences is None else differences
        self.N = self.D.nrows() + 1                                   # equations: N - 1 differences and 1.u = 0

    def A_times(self, U, den):
        """``A u + q0`` (fmpq_mat) for ``u = U / den``."""
        return fmpq_mat(self.WG * U) * (self.scale / fmpq(den)) + self.q0

    def AT_times(self, v):
        """``(U, den)`` with ``A^T v = U / den`` for a rational column ``v`` (fmpq_mat)."""
        vi, dv = v.numer_denom()
        f = self.scale / dv
        return self.WGT * vi * int(f.p), int(f.q)

    # ---- M^T y and M u without forming M ----
    def combine(self, y):
        """``(U, den)`` with ``M^T y = U / den``, and ``y . b``, for N rational weights ``y`` (fmpq)."""
        if self.N > 1:
            v = (fmpq_mat(1, self.N - 1, list(y[:-1])) * fmpq_mat(self.D)).transpose()
        else:
            v = fmpq_mat(self.d, 1)
        U, den = self.AT_times(v)
        last = fmpq(y[-1]) * den
        ones = fmpz_mat(self.n, 1, [1] * self.n)
        U = U * int(last.q) + ones * int(last.p)
        yb = -(v.transpose() * self.q0)[0, 0]
        return (U, den * int(last.q)), yb

    def combine_rows(self, rows, weights):
        """``M_rows^T y`` as ``(U, den)`` (row index N - 1 is the equation ``1.u = 0``)."""
        y = [fmpq(0)] * self.N
        for r, w in zip(rows, weights):
            y[r] += w
        return self.combine(y)[0]

    def residual_free(self, U, den) -> bool:
        """True when ``M u = b`` for ``u = U / den``: ``D (A u + q0) = 0`` and ``1.u = 0``."""
        if sum(U.entries()) != 0:
            return False
        q = self.A_times(U, den)
        return self.N == 1 or all(x == 0 for x in (fmpq_mat(self.D) * q).entries())

    def directions_keep_query(self, Z=None) -> bool:
        """True when every direction of the solution set leaves ``q`` unchanged: range(H) meets
        {q : D q = 0} only in 0 (``rank [Hn Z] = rank Hn + s`` for the s columns of a basis ``Z``
        of that null space, by default the one python-flint computes)."""
        d = self.d
        if Z is not None:
            s = Z.ncols()
        elif self.N == 1:
            Z, s = fmpz_mat([[int(r == c) for c in range(d)] for r in range(d)]), d
        else:
            Z, s = self.D.nullspace()
        s = int(s)
        if s == 0:
            return True
        h = self.Hn.entries()
        stacked = fmpz_mat(d, d + s, [x for r in range(d) for x in h[r * d:(r + 1) * d] + [Z[r, c] for c in range(s)]])
        return int(stacked.rank()) == int(self.Hn.rank()) + s
