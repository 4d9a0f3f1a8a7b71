"""Queries in a subspace: ``q = W^T z`` for an ``m x d`` matrix ``W``.

Scores are ``q . k_j = z . (W k_j)``, so key ``i`` wins for some ``z`` exactly when
``W k_i`` is a vertex of the convex hull of the points ``W k_j``.  Proposals come from
the free-query engine run on those points; every claim is re-checked against the
exact rational products ``W k_j`` (never the rounded float product).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ...io.arrays import read_numbers
from ...kernel import ExactPoints, SubspaceQuerySet, check_witnesses, to_fraction
from ..exact_checks import check_combination, key_row

__all__ = ["KIND", "QUERY_SET", "SubspaceQuerySet", "load_subspace", "certify"]

KIND, QUERY_SET = "subspace", SubspaceQuerySet


def _check_witness(points: ExactPoints, i: int, z, mode: str) -> str | None:
    """The kernel's exact witness check on the points ``W k_j``, ``z`` as rationals."""
    return check_witnesses(points, [(i, [to_fraction(x) for x in z])], mode=mode)[0]


def _floats(points: ExactPoints, relative_to: int | None = None) -> np.ndarray:
    """The points ``W k_j`` (minus point ``relative_to``, exactly) rounded to doubles, for the engine."""
    base = [0] * points.m if relative_to is None else key_row(points, relative_to)
    return np.array(
        [
            [float(Fraction(int(points.P[j, a]) - base[a]) * Fraction(2) ** points.exponent) for a in range(points.m)]
            for j in range(points.n)
        ],
        dtype=np.float64,
    ).reshape(points.n, points.m)


def load_subspace(path, *, radius: float | None = None) -> SubspaceQuerySet:
    """Read ``W`` (``m x d``) from a .npy/.npz(array ``W``)/.csv/.pt/.safetensors file; decimals as
    written, times their common denominator (``W`` times a positive number spans the same queries)."""
    return SubspaceQuerySet(read_numbers(path, name="W", ndim=2).values, radius)


# ---------------------------------------------------------------------------
# Certification: the free-query engine proposes on the points, exact arithmetic decides.


def _exact_weights(points: ExactPoints, i: int, support: list[int]) -> list[Fraction] | None:
    """Weights on ``support`` with sum 1 reproducing ``P_i`` exactly (a basic solution), or None."""
    from flint import fmpq_mat

    if not support:
        return None
    k = len(support)
    rows = [[points.P[j, a] for j in support] + [points.P[i, a]] for a in range(points.m)]
    rows.append([1] * k + [1])
    rref, rank = fmpq_mat([[x for x in row] for row in rows]).rref()
    weights = [Fraction(0)] * k
    pivot_cols = []
    for r in range(rank):
        col = next(c for c in range(k + 1) if rref[r, c] != 0)
        if col == k:
            return None  # inconsistent
        pivot_cols.append(col)
        v = rref[r, k]
        weights[col] = Fraction(int(v.p), int(v.q))
    return weights


def _repair(points: ExactPoints, i: int, combination, strict: bool):
    from ...kernel import Combination

    support = [j for j in combination.indices]
    weights = _exact_weights(points, i, support)
    if weights is None:
        return None
    pairs = [(j, w) for j, w in zip(support, weights) if w != 0]
    if not pairs or any(w < 0 for _, w in pairs):
        return None
    fixed = Combination(tuple(j for j, _ in pairs), tuple(w for _, w in pairs))
    return fixed if check_combination(points, i, fixed, strict=strict) is None else None


def certify(keys, query_set: SubspaceQuerySet, floats=None, **options) -> list:
    """Per-key results for queries ``q = W^T z`` (every claim checked against exact ``W k_j``).
    ``floats``: the points ``W k_j`` each rounded once to a double, when the caller has them cheaply."""
    from ..certification import certify_results

    points = ExactPoints(keys, query_set)
    proposals = certify_results(_floats(points) if floats is None else floats, **options)
    results = [_confirm(points, query_set, r) for r in proposals]
    retry = [r.index for r in results if r.status == "undecided" and r.reason != "not requested"]
    for i in retry[:_RETRIES]:
        # Rounding the products can merge or reorder nearby points; seen from W k_i
        # itself (exact differences, then rounded) they are resolved again.
        shifted = _floats(points, relative_to=i)
        again = _confirm(points, query_set, certify_results(shifted, indices=[i], seed=options.get("seed", 0))[i])
        if again.status != "undecided":
            results[i] = again
    return results


_RETRIES = 64


def _confirm(points: ExactPoints, query_set: SubspaceQuerySet, r):
    """The engine's proposal for one key, kept only if it holds for the exact points."""
    from ...kernel import KeyResult

    i, status, reason = r.index, r.status, r.reason
    extras: dict = {}
    witness = combination = margin = None
    if status in ("selectable", "tie-only"):
        z = _into_ball(points, query_set, r.witness)
        if status == "tie-only" and _check_witness(points, i, z, "strict") is None:
            status = "selectable"  # the exact points separate what rounding merged
        combination = None
        if status == "tie-only":
            combination = _repair(points, i, r.combination, strict=False) if r.combination else None
        bad = _check_witness(points, i, z, "strict" if status == "selectable" else "tie")
        if bad is None and (status == "selectable" or combination is not None):
            extras["z"] = [x if isinstance(x, Fraction) else float(x) for x in z]
            witness = tuple(points.query_of(z))
            margin = r.margin if r.status == status else None
        else:
            status, reason = "undecided", f"the proposal failed the exact check on W k_j ({bad or 'weights'})"
            combination = None
    elif status == "unselectable":
        combination = _repair(points, i, r.combination, strict=True) if r.combination else None
        if combination is None:
            status, reason = "undecided", "the proposed convex weights could not be made exact on W k_j"
    verified = "none" if status == "undecided" else "exact"
    return KeyResult(i, status, witness, combination, verified, margin, reason, extras)


def _into_ball(points: ExactPoints, query_set: SubspaceQuerySet, witness) -> list:
    z = [x if isinstance(x, Fraction) else float(x) for x in witness]
    if query_set.radius is not None:
        norm2 = sum(x * x for x in points.query_of(z))
        R2 = Fraction(query_set.radius) ** 2
        while norm2 > R2:  # halve z (exact) until W^T z is in the ball
            z = [x / 2 for x in z]
            norm2 /= 4
    return z
