"""A small exact linear-programming fallback for the keys the float solver cannot settle.

Two-phase simplex with Bland's rule over Python integers/``Fraction`` for problems in
standard form ``A x = b, x >= 0`` (``b >= 0``).  It is slow (dense tableau, exact
numbers) and meant for near-degenerate keys of modest key sets, where floating-point
solvers answer within their tolerances but not exactly.  Its answers are proposals
like any other: the checker verifies the certificates built from them.
"""

from __future__ import annotations

from fractions import Fraction

__all__ = ["simplex", "classify_key"]


def _pivot(T: list[list[Fraction]], basis: list[int], row: int, col: int) -> None:
    piv = T[row][col]
    T[row] = [v / piv for v in T[row]]
    for r in range(len(T)):
        if r != row and T[r][col] != 0:
            f = T[r][col]
            T[r] = [a - f * b for a, b in zip(T[r], T[row])]
    basis[row] = col


def _run(T, basis, cost, allowed) -> str:
    """Maximise cost.x over the tableau (last column = right-hand side); Bland's rule."""
    m = len(T)
    while True:
        y = [sum((cost[basis[r]] * T[r][c] for r in range(m)), Fraction(0)) for c in range(len(cost))]
        enter = next((c for c in allowed if cost[c] - y[c] > 0), None)
        if enter is None:
            return "optimal"
        best = None
        for r in range(m):
            if T[r][enter] > 0:
                ratio = T[r][-1] / T[r][enter]
                if best is None or ratio < best[0] or (ratio == best[0] and basis[r] < basis[best[1]]):
                    best = (ratio, r)
        if best is None:
            return "unbounded"
        _pivot(T, basis, best[1], enter)


def simplex(A: list[list], b: list, c: list):
    """max c.x s.t. A x = b, x >= 0 (b >= 0).  Returns (status, x, y) where y are the
    duals (for "infeasible": a Farkas vector with y.A <= 0 and y.b > 0)."""
    m, n = len(A), len(A[0])
    T = [[Fraction(v) for v in A[r]] + [Fraction(int(r == k)) for k in range(m)] + [Fraction(b[r])] for r in range(m)]
    basis = [n + r for r in range(m)]
    phase1 = [Fraction(0)] * n + [Fraction(-1)] * m
    _run(T, basis, phase1, list(range(n)))

    def duals(cost):
        return [sum((cost[basis[r]] * T[r][n + k] for r in range(m)), Fraction(0)) for k in range(m)]

    if sum((T[r][-1] for r in range(m) if basis[r] >= n), Fraction(0)) > 0:
        y = [-v for v in duals(phase1)]
        return "infeasible", None, y
    for r in range(m):  # drive zero-level artificials out of the basis
        if basis[r] >= n:
            col = next((j for j in range(n) if T[r][j] != 0), None)
            if col is not None:  # else the row is redundant and stays at zero
                _pivot(T, basis, r, col)
    cost = [Fraction(v) for v in c] + [Fraction(0)] * m
    status = _run(T, basis, cost, list(range(n)))
    x = [Fraction(0)] * n
    for r, j in enumerate(basis):
        if j < n:
            x[j] = T[r][-1]
    return status, x, duals(cost)


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
