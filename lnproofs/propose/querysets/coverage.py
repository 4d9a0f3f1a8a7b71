"""Proposes a :class:`~lnproofs.kernel.querysets.coverage.Coverage` claim for a norm query set
(untrusted: :func:`~lnproofs.kernel.querysets.coverage.check_coverage` decides).

The columns come from the reduced row echelon form of the integer form of ``A`` modulo a
prime (its pivot columns carry a non-zero minor); ``u*`` is the least-norm solution of
``A u = -b``, ``u* = A^T (A A^T)^{-1} (-b)``, solved exactly with python-flint.  It lies in the
row space of ``A``, inside ``1^perp`` when centred, and no preimage of ``-b`` is shorter, so when
``||u*||^2 >= n`` the centre is not strictly inside and nothing is proposed.
"""

from __future__ import annotations

from flint import fmpq, fmpq_mat, nmod_mat

from ...kernel.dyadic import fraction_of_fmpq, pow2
from ...kernel.exact import format_fraction
from ...kernel.querysets.coverage import SETS, Coverage, integer_columns
from ...kernel.querysets.norm import ExactQueryMap

__all__ = ["PRIMES", "propose_coverage"]

#: primes tried in order (a minor that vanishes modulo the first but not over the rationals is rare)
PRIMES = (2**61 - 1, 2**31 - 1, 1_000_003)


def _pivots(M, d: int, prime: int):
    """``d`` pivot columns of ``M`` modulo ``prime``, or None when its rank there is below ``d``."""
    reduced, rank = nmod_mat(M, prime).rref()
    if rank < d:
        return None
    cols, n = [], M.ncols()
    for r in range(d):
        cols.append(next(c for c in range(cols[-1] + 1 if cols else 0, n) if int(reduced[r, c]) != 0))
    return cols


def propose_coverage(query_set) -> Coverage | None:
    """A coverage claim for ``query_set`` (``layernorm``, ``rmsnorm`` or ``layernorm_rotary``),
    or None when ``A`` is not of full row rank or the centre ``-b`` has no preimage of norm
    below ``sqrt(n)`` (or the set is of another kind)."""
    if getattr(query_set, "kind", None) not in SETS:
        return None
    qm = ExactQueryMap(query_set)
    n, d = qm.n, qm.d
    if d > n:
        return None
    M = integer_columns(qm, range(n))                         # d x n, M = c A with c > 0
    found = next(((p, cols) for p in PRIMES if (cols := _pivots(M, d, p)) is not None), None)
    if found is None:
        return None
    prime, cols = found
    if all(qm.q0[a, 0] == 0 for a in range(d)):
        return Coverage("full-rank-centred", prime, tuple(cols), None)
    # A u = -b with u = M^T y and A = M / c:  M M^T y = -c b,  c = 2^-(ew+eg) (times n when centred)
    c = pow2(-(qm.ew + qm.eg)) * (n if qm.centred else 1)
    Mq = fmpq_mat(M)
    y = (Mq * Mq.transpose()).solve(-qm.q0 * c)
    u = Mq.transpose() * y
    if sum((u[j, 0] * u[j, 0] for j in range(n)), fmpq(0)) >= n:
        return None
    return Coverage("full-rank-interior", prime, tuple(cols),
                    tuple(format_fraction(fraction_of_fmpq(u[j, 0])) for j in range(n)))
