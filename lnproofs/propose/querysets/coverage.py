"""Proposes a :class:`~lnproofs.certificates.coverage.Coverage` claim for a norm query set
(untrusted: :func:`~lnproofs.kernel.check_coverage` decides).

The columns come from an LU factorisation with pivoting of ``A^T`` in floats, kept when the exact minor
on them is non-zero modulo a prime; failing that, from the reduced row echelon form of the integer
form of ``A`` modulo a prime (its pivot columns carry a non-zero minor).  ``u*`` is first the float least-norm solution
of ``A u = -b`` rounded to doubles and corrected exactly on the pivot columns (short: only about
``d`` entries are long rationals); if that one is not strictly inside the ball, the exact
least-norm solution ``u* = A^T (A A^T)^{-1} (-b)`` (python-flint), which lies in the row space of
``A``, inside ``1^perp`` when centred: no preimage of ``-b`` is shorter, so when
``||u*||^2 >= n`` the centre is not strictly inside and nothing is proposed.
"""

from __future__ import annotations

import warnings
from math import lcm

import numpy as np
from flint import fmpq, fmpq_mat, fmpz_mat, nmod_mat

from ...certificates.coverage import Coverage
from ...kernel import ExactQueryMap, LayerNormQuerySet, RMSNormQuerySet, integer_columns, pow2

__all__ = ["PRIMES", "propose_coverage"]

#: primes tried in order (a minor that vanishes modulo the first but not over the rationals is rare)
PRIMES = (2**31 - 1, 2**61 - 1, 1_000_003)


def _pivots(M, d: int, prime: int):
    """``d`` pivot columns of ``M`` modulo ``prime``, or None when its rank there is below ``d``."""
    reduced, rank = nmod_mat(M, prime).rref()
    if rank < d:
        return None
    cols, n = [], M.ncols()
    for r in range(d):
        cols.append(next(c for c in range(cols[-1] + 1 if cols else 0, n) if int(reduced[r, c]) != 0))
    return cols


def propose_coverage(query_set, query_map: ExactQueryMap | None = None, *, tested: bool = True) -> Coverage | None:
    """A coverage claim for ``query_set`` (``layernorm``, ``rmsnorm`` or ``layernorm_rotary``),
    or None when ``A`` is not of full row rank or the centre ``-b`` has no preimage of norm
    below ``sqrt(n)`` (or the set is of another kind).  ``query_map``: the set's exact forms,
    when the caller has them already (a head's query map is built once per run).
    ``tested=False``: the float pivots' minor is not tested modulo a prime here (for a caller
    that puts the claim through the kernel's check next, and asks again when it fails)."""
    if not isinstance(query_set, (LayerNormQuerySet, RMSNormQuerySet)):
        return None
    qm = ExactQueryMap(query_set) if query_map is None else query_map
    n, d = qm.n, qm.d
    if d > n:
        return None
    A = _float_map(query_set)
    found = _float_columns(qm, A, tested)
    if found is None:  # the exact search over every column
        M = integer_columns(qm, range(n))  # d x n, M = c A with c > 0
        found = next(((p, cols) for p in PRIMES if (cols := _pivots(M, d, p)) is not None), None)
    if found is None:
        return None
    prime, cols = found
    if all(qm.q0[a, 0] == 0 for a in range(d)):
        return Coverage("full-rank-centred", prime, tuple(cols), None)
    u = _compact_preimage(qm, A, cols)
    if u is None:
        u = _least_norm(qm, integer_columns(qm, range(n)))
        if sum((x * x for x in u), fmpq(0)) >= n:
            return None
    # str of an fmpq is its "p/q" (or "p"), as format_fraction writes the same value
    return Coverage("full-rank-interior", prime, tuple(cols), tuple(str(fmpq(x)) for x in u))


def _scale(qm):
    """``c > 0`` with ``M = c A`` (``M`` from :func:`integer_columns`)."""
    return pow2(-(qm.ew + qm.eg)) * (qm.n if qm.centred else 1)


def _least_norm(qm, M) -> list:
    """The exact least-norm ``u`` with ``A u = -b``: ``u = M^T y``, ``M M^T y = -c b``."""
    Mq = fmpq_mat(M)
    u = Mq.transpose() * (Mq * Mq.transpose()).solve(-qm.q0 * _scale(qm))
    return [u[j, 0] for j in range(qm.n)]


def _float_map(query_set) -> np.ndarray:
    """``A`` in floats (``W_q diag(g)``, centred when the set is)."""
    arrays = query_set.arrays()
    A = arrays["W_q"] * arrays[query_set.G_NAME]
    return A - A.mean(axis=1, keepdims=True) if query_set.centred else A


def _float_columns(qm, A, tested=True):
    """``(prime, columns)`` from an LU factorisation with partial pivoting of ``A^T`` in floats
    (LAPACK; its first ``d`` pivot rows are ``d`` columns of ``A``), kept only when the exact
    minor on those columns is non-zero modulo one of :data:`PRIMES`; else None."""
    from scipy.linalg import lu_factor

    if not np.all(np.isfinite(A)):
        return None
    with warnings.catch_warnings():  # a singular A: its small pivot says so below
        warnings.simplefilter("ignore")
        lu, swaps = lu_factor(A.T, check_finite=False)
    diag = np.abs(np.diag(lu))
    if not diag.min() > 1e-12 * diag.max():
        return None
    order = np.arange(A.shape[1])
    for i, j in enumerate(swaps):
        order[[i, j]] = order[[j, i]]
    cols = sorted(int(c) for c in order[: qm.d])
    return next(((p, cols) for p in PRIMES if not tested or nmod_mat(integer_columns(qm, cols), p).det() != 0), None)


def _compact_preimage(qm, A, cols) -> list | None:
    """A short exact preimage: the float least-norm solution rounded to doubles, corrected exactly
    on the ``d`` pivot columns (and one more column that keeps ``1 . u = 0`` when centred), so that
    only those entries carry long rationals.  None when it is not strictly inside the ball."""
    n, d = qm.n, qm.d
    b = np.array([float(qm.q0[a, 0]) for a in range(d)])
    u_float = np.linalg.lstsq(A, -b, rcond=None)[0]
    if not np.all(np.isfinite(u_float)):
        return None
    u = [fmpq(*float(x).as_integer_ratio()) for x in u_float]
    others = [j for j in range(n) if j not in set(cols)]
    ref = others[0] if qm.centred and others else None
    if qm.centred:
        if ref is None:
            return None
        u[ref] -= sum(u, fmpq(0))  # exactly on 1 . u = 0
    # M delta = -c b - M u with delta = sum_k t_k (e_{c_k} - e_ref) (centred) or sum_k t_k e_{c_k}
    N = fmpq_mat(integer_columns(qm, cols))
    if ref is not None:
        N = N - fmpq_mat(integer_columns(qm, [ref])) * fmpq_mat(1, d, [1] * d)
    # M u = (n if centred else 1) W_q-integers (G * u), as 1 . u = 0 when centred
    # (in integers over one common denominator of the entries of G * u: the same rational column)
    gu = [g * x for g, x in zip(qm.G, u)]
    den = lcm(*(int(x.q) for x in gu))
    Mu = fmpq_mat(qm.Wq * fmpz_mat(n, 1, [int(x.p) * (den // int(x.q)) for x in gu])) * fmpq(
        n if qm.centred else 1, den
    )
    rhs = -qm.q0 * _scale(qm) - Mu
    try:
        t = N.solve(rhs)
    except ZeroDivisionError:
        return None
    for k, c in enumerate(cols):
        u[c] += t[k, 0]
        if ref is not None:
            u[ref] -= t[k, 0]
    return u if sum((x * x for x in u), fmpq(0)) < n else None
