"""A small exact linear-programming fallback for the keys the float solver cannot settle.

Two-phase revised simplex with Bland's rule over exact rationals (python-flint ``fmpq_mat``:
each step solves with the basis matrix exactly) for problems in standard form
``A x = b, x >= 0`` (``b >= 0``).  Each phase starts from the basis a floating-point solver
(HiGHS) finds on the same problem with every column and row scaled by a power of two (an exact
scaling that keeps every basis and its feasibility; it makes keys whose rows differ by 10^16 in
size a well-scaled float problem).  That basis is only a starting point: it is kept when it is
exactly feasible, and Bland's rule then pivots exactly to the exact optimum, so the float solver
saves pivots but decides nothing.  Its answers are proposals like any other: the checker
verifies the certificates built from them.
"""

from __future__ import annotations

from fractions import Fraction

from flint import fmpq, fmpq_mat

__all__ = ["simplex", "classify_key"]


def _fraction(v: fmpq) -> Fraction:
    return Fraction(int(v.p), int(v.q))


class _Exact:
    """The columns of ``[A | I]`` (artificials last) and ``b``, as exact rationals."""

    def __init__(self, A: list[list], b: list):
        self.m, self.n = len(A), len(A[0])
        m = self.m
        self.cols = [[fmpq(*_pq(A[r][j])) for r in range(m)] for j in range(self.n)]
        self.cols += [[fmpq(int(r == k)) for r in range(m)] for k in range(m)]
        self.AT = fmpq_mat(len(self.cols), m, [v for col in self.cols for v in col])
        self.b = fmpq_mat(m, 1, [fmpq(*_pq(v)) for v in b])

    def basis_matrix(self, basis: list[int]) -> fmpq_mat:
        m = self.m
        return fmpq_mat(m, m, [self.cols[j][r] for r in range(m) for j in basis])

    def values(self, B: fmpq_mat) -> list[fmpq]:
        x = B.solve(self.b)
        return [x[r, 0] for r in range(self.m)]

    def duals(self, B: fmpq_mat, basis: list[int], cost: list) -> list[fmpq]:
        y = B.transpose().solve(fmpq_mat(self.m, 1, [cost[j] for j in basis]))
        return [y[r, 0] for r in range(self.m)]

    def scores(self, y: list[fmpq]) -> list[fmpq]:
        """``y . a_j`` for every column ``j`` of ``[A | I]``."""
        s = self.AT * fmpq_mat(self.m, 1, y)
        return [s[j, 0] for j in range(len(self.cols))]

    def nonsingular(self, basis: list[int]) -> fmpq_mat | None:
        if len(set(basis)) != self.m:
            return None
        B = self.basis_matrix(basis)
        return B if B.rank() == self.m else None

    def run(self, basis: list[int], cost: list, allowed) -> tuple[str, list[int]]:
        """Maximise ``cost . x`` from the feasible ``basis``: Dantzig's rule (the largest gain)
        while the objective improves, Bland's rule (smallest entering index, ties of the ratio
        test by the smallest basic index) after a run of degenerate pivots, which cannot cycle."""
        basis, last, stalled = list(basis), None, 0
        while True:
            B = self.basis_matrix(basis)
            scores = self.scores(self.duals(B, basis, cost))
            inside = set(basis)
            gains = {j: cost[j] - scores[j] for j in allowed if j not in inside}
            gains = {j: g for j, g in gains.items() if g > 0}
            if not gains:
                return "optimal", basis
            x = self.values(B)
            level = sum((cost[j] * v for j, v in zip(basis, x)), fmpq(0))
            stalled = stalled + 1 if last is not None and level == last else 0
            last = level
            enter = min(gains) if stalled > 2 * self.m else max(gains, key=lambda j: (gains[j], -j))
            d = B.solve(fmpq_mat(self.m, 1, self.cols[enter]))
            best = None
            for r in range(self.m):
                if d[r, 0] > 0:
                    ratio = x[r] / d[r, 0]
                    if best is None or ratio < best[0] or (ratio == best[0] and basis[r] < basis[best[1]]):
                        best = (ratio, r)
            if best is None:
                return "unbounded", basis
            basis[best[1]] = enter

    def drive_out_artificials(self, basis: list[int]) -> list[int]:
        """Pivot each artificial at level zero out of ``basis`` where its row allows (a degenerate
        pivot keeps every value); the ones left stand on redundant rows and stay at zero."""
        basis = list(basis)
        for r in range(self.m):
            if basis[r] < self.n:
                continue
            row = self.scores(self.duals(self.basis_matrix(basis), basis, _unit_cost(basis, r, len(self.cols))))
            col = next((j for j in range(self.n) if j not in basis and row[j] != 0), None)
            if col is not None:
                basis[r] = col
        return basis

    def farkas(self, y: list[fmpq]) -> bool:
        """Whether ``y . a_j <= 0`` for every column of ``A`` and ``y . b > 0``: no ``x >= 0`` has ``A x = b``."""
        scores = self.scores(y)
        return (
            all(scores[j] <= 0 for j in range(self.n))
            and sum((a * v for a, v in zip(y, self.b.entries())), fmpq(0)) > 0
        )


def _unit_cost(basis: list[int], r: int, size: int) -> list[fmpq]:
    """A cost that is 1 on the basic variable of row ``r`` and 0 elsewhere: its duals are row ``r`` of ``B^-1``."""
    cost = [fmpq(0)] * size
    cost[basis[r]] = fmpq(1)
    return cost


def _pq(v) -> tuple[int, int]:
    if isinstance(v, int):
        return v, 1
    v = Fraction(v)
    return v.numerator, v.denominator


def _scaled(A: list[list], b: list):
    """``(F, rhs, rows)``: the problem in floats with every column, then every row, and last the
    right-hand side, scaled by a power of two to entries of size at most 1 (``rows``: the exponent
    of each row's scale).  None of these scalings changes a basis or its feasibility."""
    import numpy as np

    m, n = len(A), len(A[0])
    F = np.zeros((m, n))
    for j in range(n):
        column = [A[r][j] if isinstance(A[r][j], int) else Fraction(A[r][j]) for r in range(m)]
        shift = max(_exponent(v) for v in column)
        F[:, j] = [_ldexp(v, -shift) for v in column]
    rhs = np.array([_ldexp(Fraction(v), 0) for v in b])
    rows = np.zeros(m, dtype=np.int64)
    for r in range(m):
        top = float(np.max(np.abs(F[r])))
        if top > 0:
            rows[r] = int(np.frexp(top)[1])
            F[r], rhs[r] = np.ldexp(F[r], -rows[r]), np.ldexp(rhs[r], -rows[r])
    top = float(np.max(np.abs(rhs), initial=0.0))  # x times a power of two: every basis stays
    rhs = np.ldexp(rhs, -int(np.frexp(top)[1])) if top > 0 else rhs
    return F, rhs, rows


def _exponent(v) -> int:
    """An exponent e with |v| < 2^e (0 for v = 0), for an int or a Fraction."""
    if v == 0:
        return 0
    return abs(v.numerator).bit_length() - v.denominator.bit_length() + 1


def _ldexp(v, e: int) -> float:
    """``v * 2^e`` rounded to the nearest float (an int or a Fraction ``v``)."""
    if isinstance(v, int):
        return v * 2**e / 1 if e >= 0 else v / (1 << -e)
    return float(v * 2**e) if e >= 0 else float(v / 2**-e)


def _float_start(A: list[list], b: list, cost: list):
    """HiGHS on the scaled problem: ``("basis", columns of [A | I])``, ``("farkas", y)`` (a
    proposed infeasibility certificate of the original problem), or ``(None, None)``."""
    import numpy as np

    from .lp_rounds import LP

    m, n = len(A), len(A[0])
    F, rhs, rows = _scaled(A, b)
    lp = LP()
    c = np.array([float(Fraction(v)) for v in cost])
    got = lp.solve(-c, F, rhs, rhs, np.zeros(n), np.full(n, np.inf))
    if got is not None:
        kind = lp.hs.HighsBasisStatus.kBasic
        info = lp.solver.getBasis()
        basic = [j for j, s in enumerate(info.col_status) if s == kind]
        basic += [n + r for r, s in enumerate(info.row_status) if s == kind]
        return ("basis", basic) if len(basic) == m else (None, None)
    # no solution: a Farkas vector with room, max t s.t. y.F_j + t <= 0, y.rhs >= t, |y| <= 1 (rows
    # scaled back by their powers of two), so that the rounding of the floats rarely spoils it
    G = np.vstack([np.hstack([F.T, np.ones((n, 1))]), np.r_[-rhs, 1.0][None, :]])
    got = lp.solve(
        np.r_[np.zeros(m), -1.0], G, np.full(n + 1, -np.inf), np.zeros(n + 1), np.r_[-np.ones(m), 0.0], np.ones(m + 1)
    )
    if got is None or not got[0][-1] > 0:
        return None, None
    return "farkas", [Fraction(float(v)) * Fraction(2) ** -int(e) for v, e in zip(got[0][:m], rows)]


def simplex(A: list[list], b: list, c: list):
    """max c.x s.t. A x = b, x >= 0 (b >= 0).  Returns (status, x, y) where y are the
    duals (for "infeasible": a Farkas vector with y.A <= 0 and y.b > 0)."""
    m, n = len(A), len(A[0])
    lp = _Exact(A, b)
    cost = [fmpq(*_pq(v)) for v in c] + [fmpq(0)] * m
    kind, found = _float_start(A, b, c)
    if kind == "farkas":
        y = [fmpq(*_pq(v)) for v in found]
        if lp.farkas(y):
            return "infeasible", None, [_fraction(v) for v in y]
    start = None
    if kind == "basis" and (B := lp.nonsingular(found)) is not None:
        x = lp.values(B)
        if all(v >= 0 for v in x) and all(x[r] == 0 for r, j in enumerate(found) if j >= n):
            start = found  # exactly feasible, artificials at zero: phase 2 starts here
    if start is None:
        phase1 = [fmpq(0)] * n + [fmpq(-1)] * m
        _, basis = lp.run(list(range(n, n + m)), phase1, range(n))
        B = lp.basis_matrix(basis)
        x = lp.values(B)
        if sum((x[r] for r, j in enumerate(basis) if j >= n), fmpq(0)) > 0:
            return "infeasible", None, [-_fraction(v) for v in lp.duals(B, basis, phase1)]
        start = basis
    basis = lp.drive_out_artificials(start)
    status, basis = lp.run(basis, cost, range(n))
    B = lp.basis_matrix(basis)
    values = lp.values(B)
    x = [Fraction(0)] * n
    for r, j in enumerate(basis):
        if j < n:
            x[j] = _fraction(values[r])
    return status, x, [_fraction(v) for v in lp.duals(B, basis, cost)]


def classify_key(rows: list[list[int]], i: int, columns: list[int], spanning: list[int]):
    """Exact status proposal for key i against the keys ``columns`` (integer rows k_j):
    ("witness", q) | ("unselectable", {j: w}) | ("tie-only", {j: w}, q) | ("failed", why)."""
    ki = rows[i]
    d = len(ki)
    cols = [j for j in columns if j != i]
    A = [[rows[j][r] - ki[r] for j in cols] for r in range(d)] + [[1] * len(cols)]
    b = [0] * d + [1]
    status, lam, y = simplex(A, b, [0] * len(cols))
    if status == "infeasible":
        return ("witness", y[:d])  # y.a_j <= 0 < y.b: q = y[:d] has q.(k_i - k_j) >= y.b > 0
    span = [j for j in spanning if j != i]
    # max t: sum_{j not in S} lam_j a_j + sum_{j in S} (mu_j + t) a_j = b
    rest = [j for j in cols if j not in set(span)]
    order = rest + span
    A2 = [[rows[j][r] - ki[r] for j in order] + [sum(rows[j][r] - ki[r] for j in span)] for r in range(d)]
    A2.append([1] * len(order) + [len(span)])
    status, x, y = simplex(A2, b, [0] * len(order) + [1])
    if status != "optimal":
        return ("failed", f"exact simplex ended {status}")
    t = x[-1]
    weights = {j: x[k] + (t if j in set(span) else 0) for k, j in enumerate(order)}
    weights = {j: w for j, w in weights.items() if w != 0}
    if t > 0:
        return ("unselectable", weights)
    return ("tie-only", weights, [-v for v in y[:d]])
