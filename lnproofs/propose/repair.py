"""Exact repair of solver proposals: round onto the proposed support and solve exactly.

A linear-programming solver returns floats that satisfy the constraints only up to
its tolerances.  Here the *combinatorial* part of its answer (which keys carry weight,
which keys tie) is kept and the numbers are recomputed in exact rational arithmetic
with python-flint, so that the checker can verify them.  Nothing here decides a status:
a repaired proposal is only a candidate for :mod:`lnproofs.kernel.checker`.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..kernel import Combination, ExactKeys
from .exact_checks import key_row, scaled_columns

__all__ = ["independent_columns", "exact_weights", "exact_tie_query", "exact_vertex_query", "compact_vector"]


def independent_columns(M: np.ndarray, tol: float = 1e-10) -> list[int]:
    """Indices of numerically independent columns of ``M`` (pivoted QR, best first)."""
    from scipy.linalg import qr

    if M.size == 0:
        return []
    _, R, piv = qr(M, mode="economic", pivoting=True)
    diag = np.abs(np.diag(R))
    if diag.size == 0 or diag[0] == 0:
        return []
    rank = int(np.sum(diag > tol * diag[0]))
    return [int(p) for p in piv[:rank]]


def _fmpq_solve(rows: list[list[int]], rhs: list[Fraction]) -> list[Fraction] | None:
    from flint import fmpq, fmpq_mat

    size = len(rows)
    A = fmpq_mat(size, size, [x for r in rows for x in r])
    b = fmpq_mat(size, 1, [fmpq(v.numerator, v.denominator) for v in rhs])
    try:
        x = A.solve(b)
    except ZeroDivisionError:
        return None
    return [Fraction(int(e.p), int(e.q)) for e in x.entries()]


def _dyadic(x: float, bits: int = 40) -> Fraction:
    return Fraction(round(x * 2**bits), 2**bits)


def _square_weights(ek: ExactKeys, target: int, support: list[int]) -> list[Fraction] | None:
    """The unique weights over d+1 keys (None if they are affinely dependent)."""
    from flint import fmpz_mat

    cols = scaled_columns(ek, list(support) + [target])
    A = fmpz_mat([row[:-1] for row in cols])
    b = fmpz_mat([row[-1:] for row in cols])
    try:
        x = A.solve(b)
    except ZeroDivisionError:
        return None
    return [Fraction(int(e.p), int(e.q)) for e in x.entries()]


def exact_weights(keys, target: int, support, approx, *, strict: bool, coords=None) -> Combination | None:
    """Exact weights w over ``support`` with sum w_j k_j = k_target and sum w = 1, close to
    ``approx``: an affinely independent part of the support is solved exactly, the rest
    keep their (dyadically rounded) approximate weights.  ``None`` when the repaired
    weights are negative (or zero with ``strict``) or the system is singular.  ``coords``
    (float rows, one per key, any invertible affine image of the keys) choose the
    independent part numerically when the keys themselves are badly conditioned."""
    ek = ExactKeys.of(keys)
    support = [int(j) for j in support]
    approx = np.asarray(approx, dtype=np.float64)
    if not support:
        return None
    if len(support) == ek.dim + 1:  # the generic case: one square system
        quick = _square_weights(ek, target, support)
        if quick is not None and all(w > 0 or (not strict and w == 0) for w in quick):
            keep = [c for c, w in enumerate(quick) if w != 0]
            return Combination(tuple(support[c] for c in keep), tuple(quick[c] for c in keep))
    base = ek.array if coords is None else np.asarray(coords, dtype=np.float64)
    X = base[support] - base[target]
    scale = np.max(np.abs(X)) or 1.0
    M = np.vstack([(X / scale).T, np.ones(len(support))])  # (d+1) x |S|
    order = np.argsort(-approx, kind="stable")  # prefer heavy columns
    cols = independent_columns(M[:, order])
    basis = [int(order[c]) for c in cols]
    others = [c for c in range(len(support)) if c not in set(basis)]
    fixed = {c: Fraction(float(approx[c])) for c in others}
    if any(w < 0 or (strict and w == 0) for w in fixed.values()):
        return None
    rows = independent_columns(M[:, basis].T)  # equations to keep
    if len(rows) != len(basis):
        return None
    d = ek.dim
    target_row = key_row(ek, target)

    def entry(j: int, r: int) -> int:
        return 1 if r == d else key_row(ek, support[j])[r]

    A = [[entry(j, r) for j in basis] for r in rows]
    rhs = []
    for r in rows:
        value = Fraction(1 if r == d else target_row[r])
        for c, w in fixed.items():
            value -= w * entry(c, r)
        rhs.append(value)
    solved = _fmpq_solve(A, rhs)
    if solved is None:
        return None
    weights = dict(fixed)
    weights.update(zip(basis, solved))
    if any(w < 0 or (strict and w == 0) for w in weights.values()):
        return None
    keep = [c for c in range(len(support)) if weights[c] != 0]
    return Combination(tuple(support[c] for c in keep), tuple(weights[c] for c in keep))


def compact_vector(values) -> tuple:
    """Floats where a float is exact, else exact Fractions (for witnesses)."""
    out = []
    for v in values:
        v = Fraction(v)
        f = float(v)
        out.append(f if Fraction(f) == v else v)
    return tuple(out)


def _null_space(rows: list[list[int]], dim: int) -> list[list[int]]:
    """An integer basis of {q : rows . q = 0}."""
    from flint import fmpz_mat

    if not rows:
        return [[int(i == j) for i in range(dim)] for j in range(dim)]
    N, nullity = fmpz_mat(rows).nullspace()
    return [[int(N[r, c]) for r in range(dim)] for c in range(nullity)]


def _combine(basis: list[list[int]], q: np.ndarray) -> list[Fraction] | None:
    """A short rational vector in the span of ``basis`` close to the direction of ``q``."""
    if not basis:
        return None
    norms = [max(abs(x) for x in b) or 1 for b in basis]
    B = np.array([[x / n for x in b] for b, n in zip(basis, norms)], dtype=np.float64).T
    coef, *_ = np.linalg.lstsq(B, q / (np.max(np.abs(q)) or 1.0), rcond=None)
    top = np.max(np.abs(coef)) or 1.0
    coef = [_dyadic(c / top, 30) for c in coef]
    vec = [sum((c * Fraction(b[k], n) for c, b, n in zip(coef, basis, norms)), Fraction(0)) for k in range(len(q))]
    return vec if any(vec) else None


def exact_tie_query(keys, target: int, q: np.ndarray, face) -> tuple | None:
    """A rational query tying k_target exactly with the keys of ``face`` (it lies in the
    null space of the differences k_j - k_target), close to the float proposal ``q``."""
    ek = ExactKeys.of(keys)
    t = key_row(ek, target)
    rows = [[a - b for a, b in zip(key_row(ek, int(j)), t)] for j in face if int(j) != target]
    vec = _combine(_null_space(rows, ek.dim), np.asarray(q, dtype=np.float64))
    return None if vec is None else compact_vector(vec)


def exact_vertex_query(keys, target: int, q: np.ndarray, active) -> tuple | None:
    """A rational query near the float proposal ``q`` with q.(k_target - k_j) equal to
    one positive number for the ``active`` keys (those closest to winning), exactly."""
    ek = ExactKeys.of(keys)
    t = key_row(ek, target)
    active = [int(j) for j in active if int(j) != target]
    if not active:
        return None
    D = np.array([ek.array[target] - ek.array[j] for j in active])
    rows = independent_columns((D / (np.max(np.abs(D)) or 1.0)).T)
    if not rows:
        return None
    diffs = [[a - b for a, b in zip(t, key_row(ek, active[r]))] for r in rows]
    # q' = q + diffs^T y with q'.(K_t - K_j) = m for the kept active keys: the nearest
    # exact correction of the proposal (m: the proposal's typical margin, kept positive).
    base = [Fraction(float(x)) for x in np.asarray(q, dtype=np.float64) / (np.max(np.abs(q)) or 1.0)]
    current = [sum((a * b for a, b in zip(base, u)), Fraction(0)) for u in diffs]
    m = max(sorted(current)[len(current) // 2], max(current) / 2)
    if m <= 0:
        return None
    gram = [[sum(a * b for a, b in zip(u, v)) for v in diffs] for u in diffs]
    y = _fmpq_solve(gram, [m - c for c in current])
    if y is None:
        return None
    vec = [base[k] + sum((yy * u[k] for yy, u in zip(y, diffs)), Fraction(0)) for k in range(ek.dim)]
    top = max(abs(v) for v in vec)
    if top == 0:
        return None
    return compact_vector([v / top for v in vec])
