"""Uniform attention, the reference search (element-by-element exact rationals).

Kept as the reference that :mod:`lnproofs.propose.uniform` (the fast search, python-flint
matrices throughout) is tested against; it is slow for wide layers.

The question, the statuses and the proofs are those of :mod:`lnproofs.propose.uniform`.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from lnproofs.certificates.uniform import UniformResult
from lnproofs.certificates.writers import query_set_to_json
from lnproofs.kernel import InputError
from lnproofs.propose.pivots import pivot_columns
from lnproofs.propose.uniform_linalg import scale_into

__all__ = ["reference_uniform_attention"]


# ---------------------------------------------------------------------------- exact helpers


def _int_rows(values) -> list[list[int]]:
    """A float array as integer rows with one common power-of-two scale (signs and ranks kept)."""
    from lnproofs.kernel import dyadic_integers

    arr = np.atleast_2d(np.asarray(values, dtype=np.float64))
    ints, _ = dyadic_integers(arr)
    cols = arr.shape[1]
    return [ints[r * cols : (r + 1) * cols] for r in range(arr.shape[0])]


def _fraction_rows(rows) -> list[list[int]]:
    """Rational rows scaled row by row to integers (kernels and ranks do not change)."""
    from math import lcm

    out = []
    for row in rows:
        row = [Fraction(x) for x in row]
        den = lcm(*(x.denominator for x in row)) if row else 1
        out.append([int(x * den) for x in row])
    return out


def _rank(rows) -> int:
    from flint import fmpz_mat

    rows = [list(r) for r in rows]
    if not rows or not rows[0]:
        return 0
    return int(fmpz_mat(_fraction_rows(rows)).rank())


def _matvec(M, v):
    return [sum((a * b for a, b in zip(row, v)), Fraction(0)) for row in M]


def _fr_matrix(values):
    from lnproofs.kernel import to_fraction

    return [[to_fraction(x) for x in row] for row in np.atleast_2d(np.asarray(values, dtype=np.float64))]


def _layernorm_equations(query_set, diffs):
    """The exact linear system of uniform attention under norm-realisable queries
    q = A u + q0 (A = R W_q diag(g), q0 = R (W_q beta + b_q), R the rotation or I): one row per
    key difference, (k_j - k_0) A u = -(k_j - k_0).q0, and the row 1.u = 0 when the set is
    centred (LayerNorm).  Returns (M, b, A, q0)."""
    arrays = query_set.arrays()
    gamma = [Fraction(x) for x in arrays[query_set.G_NAME]]
    Wq = _fr_matrix(arrays["W_q"])
    A = [[w * g for w, g in zip(row, gamma)] for row in Wq]  # d x n
    q0 = [
        a + b
        for a, b in zip(
            _product(Wq, [[Fraction(x)] for x in arrays["beta"]], column=True), [Fraction(x) for x in arrays["b_q"]]
        )
    ]
    rotation = getattr(query_set, "rotation", None)
    if rotation is not None:
        Rm = rotation.matrix(len(q0))
        R = [[Fraction(int(Rm[i, j].p), int(Rm[i, j].q)) for j in range(len(q0))] for i in range(len(q0))]
        A = _product(R, A)
        q0 = _product(R, [[x] for x in q0], column=True)
    Dfr = _fraction_rows(diffs)
    M = _product(Dfr, A) if Dfr else []
    b = [-x for x in _product(Dfr, [[x] for x in q0], column=True)] if Dfr else []
    if query_set.centred:
        M.append([Fraction(1)] * query_set.width)
        b.append(Fraction(0))
    return M, b, A, q0


def _product(left, right, *, column: bool = False, transpose_left: bool = False):
    """The exact product of two rational matrices (lists of rows of Fractions) with
    python-flint: a list of rows, or the single column as a list when ``column``."""
    from flint import fmpq, fmpq_mat

    def mat(rows):
        rows = [list(r) for r in rows]
        cols = len(rows[0]) if rows else 0
        return fmpq_mat(len(rows), cols, [fmpq(x.numerator, x.denominator) for r in rows for x in r])

    L = mat(left)
    if transpose_left:
        L = L.transpose()
    P = L * mat(right)
    rows = [[Fraction(int(P[i, j].p), int(P[i, j].q)) for j in range(P.ncols())] for i in range(P.nrows())]
    return [r[0] for r in rows] if column else rows


def _kernel_vector(rows, cols: int):
    """A non-zero rational vector x with rows . x = 0, or None."""
    from flint import fmpz_mat

    if not rows:
        return [Fraction(1)] + [Fraction(0)] * (cols - 1) if cols else None
    X, nullity = fmpz_mat(_fraction_rows(rows)).nullspace()
    if int(nullity) == 0:
        return None
    return [Fraction(int(X[r, 0])) for r in range(cols)]


def _independent_rows(rows) -> list[int]:
    """Indices of a maximal linearly independent set of rows (exact)."""
    from flint import fmpz_mat

    if not rows:
        return []
    M = fmpz_mat(_fraction_rows(rows)).transpose()
    rref, _den, rank = M.rref()
    return pivot_columns(rref, rank, M.ncols())


def _normalise(q):
    top = max(abs(x) for x in q)
    return [x / top for x in q] if top else q


# ---------------------------------------------------------------------------- solving


def reference_uniform_attention(keys, query_set=None) -> UniformResult:
    """Decide whether a non-zero query in the set gives every key the same score."""
    from lnproofs.kernel import as_real_array

    keys = as_real_array(keys, name="keys", ndim=2)
    N, d = keys.shape
    if query_set is not None:
        query_set.validate(d)
    kind = "free" if query_set is None else query_set.kind
    qs_json = {"kind": "free"} if query_set is None else query_set_to_json(query_set)
    base = dict(query_set=qs_json, n_keys=N, dim=d)
    ints = _int_rows(keys)
    diffs = [[a - b for a, b in zip(ints[j], ints[0])] for j in range(1, N)]
    if kind in ("free", "ball"):
        q = _kernel_vector(diffs, d)
        if q is not None:
            return UniformResult("feasible", query=tuple(scale_into(_normalise(q), query_set)), **base)
        rows = _independent_rows(diffs)
        return UniformResult(
            "infeasible", proof={"kind": "independent differences", "pairs": [[j + 1, 0] for j in rows]}, **base
        )
    if kind == "subspace":
        W = _fr_matrix(query_set.matrix)
        basis = [W[r] for r in _independent_rows(W)]
        DW = [[sum((a * b for a, b in zip(row, wr)), Fraction(0)) for wr in basis] for row in diffs]
        y = _kernel_vector(DW, len(basis))
        if y is not None:
            q = [sum((y[r] * basis[r][a] for r in range(len(basis))), Fraction(0)) for a in range(d)]
            return UniformResult("feasible", query=tuple(scale_into(_normalise(q), query_set)), **base)
        rows = _independent_rows(DW)
        return UniformResult(
            "infeasible", proof={"kind": "rank through W", "pairs": [[j + 1, 0] for j in rows]}, **base
        )
    return _uniform_layernorm(keys, query_set, diffs, base)


def _uniform_layernorm(keys, query_set, diffs, base) -> UniformResult:
    from lnproofs.certificates.writers import format_fraction

    n = query_set.width
    M, b, A, q0 = _layernorm_equations(query_set, diffs)
    pick = _independent_rows(M)
    Ms, bs = [M[r] for r in pick], [b[r] for r in pick]
    # the least-norm solution u = Ms^T y with (Ms Ms^T) y = bs, if the system is consistent
    consistent = _rank([row + [bv] for row, bv in zip(M, b)]) == len(pick)
    if not consistent:
        y = _left_kernel_witness(M, b)
        return UniformResult(
            "infeasible",
            proof={"kind": "inconsistent equations", "combination": [format_fraction(x) for x in y]},
            **base,
        )
    if not pick:  # no independent equation (RMSNorm, equal keys): u = 0
        y, u = [], [Fraction(0)] * n
    else:
        y = _solve_gram(Ms, bs)
        u = _product([[y[r]] for r in range(len(Ms))], Ms, transpose_left=True, column=False)[0]
    norm2 = sum(x * x for x in u)
    extras = {"least_norm_squared": float(norm2), "eps_note": _eps_note(query_set)}
    if norm2 > n:
        return UniformResult(
            "infeasible",
            proof={"kind": "least-norm solution outside the ball", "rows": pick, "y": [format_fraction(x) for x in y]},
            extras=extras,
            **base,
        )
    q = [x + c for x, c in zip(_product(A, [[x] for x in u], column=True), q0)]
    if not any(q):
        v = _kernel_vector(M, n)
        direction = None
        if v is not None:
            from flint import fmpz_mat

            X, nullity = fmpz_mat(_fraction_rows(M)).nullspace()
            for k in range(int(nullity)):
                cand = [Fraction(int(X[r, k])) for r in range(n)]
                if any(_matvec(A, cand)):
                    direction = cand
                    break
        room = n - norm2
        if direction is None or room <= 0:
            return UniformResult(
                "infeasible",
                proof={
                    "kind": "every solution in the ball gives q = 0",
                    "rows": pick,
                    "y": [format_fraction(x) for x in y],
                },
                extras=extras,
                **base,
            )
        from lnproofs.propose.softmax_exact import sqrt_below as _sqrt_below

        t = _sqrt_below(room / sum(x * x for x in direction))
        u = [a + t * c for a, c in zip(u, direction)]
        q = [x + c for x, c in zip(_product(A, [[x] for x in u], column=True), q0)]
    radius = getattr(query_set, "radius", None)
    if radius is not None and sum(x * x for x in q) > Fraction(radius) ** 2:
        return UniformResult("undecided", reason="the least-norm query exceeds the ball radius", extras=extras, **base)
    extras["u"] = [format_fraction(x) for x in u]
    return UniformResult("feasible", query=tuple(q), extras=extras, **base)


def _eps_note(query_set) -> str | None:
    if query_set.eps == 0:
        return None
    return (
        "eps > 0: LayerNorm outputs lie strictly inside ||u|| < sqrt(n); the closure ||u|| <= sqrt(n) "
        "is used (an outer bound)"
    )


def _solve_gram(Ms, bs):
    from flint import fmpq, fmpq_mat

    k = len(Ms)
    G = fmpq_mat(k, k, [fmpq(0)] * (k * k))
    rows = [[fmpq(x.numerator, x.denominator) for x in r] for r in Ms]
    for i in range(k):
        for j in range(i, k):
            s = sum((a * b for a, b in zip(rows[i], rows[j])), fmpq(0))
            G[i, j] = s
            G[j, i] = s
    rhs = fmpq_mat(k, 1, [fmpq(x.numerator, x.denominator) for x in bs])
    y = G.solve(rhs)
    return [Fraction(int(y[r, 0].p), int(y[r, 0].q)) for r in range(k)]


def _left_kernel_witness(M, b):
    """y with y^T M = 0 and y.b != 0 (exists when M u = b is inconsistent)."""
    from flint import fmpz_mat

    rows = _fraction_rows([[M[r][c] for r in range(len(M))] for c in range(len(M[0]))])  # M^T
    X, nullity = fmpz_mat(rows).nullspace()
    for k in range(int(nullity)):
        y = [Fraction(int(X[r, k])) for r in range(len(M))]
        if sum(a * c for a, c in zip(y, b)) != 0:
            return y
    raise InputError("internal: no inconsistency witness found")  # pragma: no cover


# ---------------------------------------------------------------------------- checking
