"""Queries in a subspace: ``q = W^T z`` for an ``m x d`` matrix ``W``.

Scores are ``q . k_j = z . (W k_j)``, so key ``i`` wins for some ``z`` exactly when
``W k_i`` is a vertex of the convex hull of the points ``W k_j``.  Proposals come from
the free-query engine run on those points; every claim is re-checked against the
exact rational products ``W k_j`` (never the rounded float product).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np
from flint import fmpq_mat

from ..arrays import as_radius, as_real_array
from ..checker import ExactKeys, Verdict
from ..dyadic import fmpq_matrix, fmpq_of, fraction_of_fmpq, integer_matrix
from ..errors import InputError, ShapeError, require
from ..exact import to_fraction
from ..querysets import QuerySetSchema, free


@dataclass(frozen=True)
class SubspaceQuerySet(QuerySetSchema):
    """Queries ``q = W^T z`` (``W`` is ``m x d``), optionally with ``||q|| <= radius``."""

    W: tuple
    radius: float | None = None

    kind = "subspace"
    FIELDS, REQUIRED = ("W", "radius"), ("W",)

    def __post_init__(self):
        W = as_real_array(self.W, name="query subspace W", ndim=2)
        object.__setattr__(self, "W", tuple(tuple(float(x) for x in row) for row in W))
        if self.radius is not None:
            object.__setattr__(self, "radius", as_radius(self.radius))

    @property
    def matrix(self) -> np.ndarray:
        return np.array(self.W, dtype=np.float64)

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.W), len(self.W[0])

    def validate(self, dim: int) -> None:
        m, d = self.shape
        require(
            d == dim,
            ShapeError,
            f"query subspace W has shape ({m}, {d}) but the keys have dimension {dim}; "
            f"W must be m x {dim} (queries are q = W^T z)",
        )


QUERY_SETS = {"subspace": SubspaceQuerySet}


class ExactPoints(ExactKeys):
    """The points ``p_j = W k_j`` as integers ``P_j`` times ``2**exponent`` (exact), checked with
    the exact primitives of :mod:`lnproofs.kernel.checker`.  The points have no float array, so
    the float filter (which needs exact float points) never runs."""

    def __init__(self, keys, query_set: SubspaceQuerySet):
        arr = np.asarray(getattr(keys, "array", keys), dtype=np.float64)
        query_set.validate(arr.shape[1])
        self.keys, self.W = arr, query_set.matrix
        (K, ek), (Wt, ew) = integer_matrix(arr), integer_matrix(self.W.T)
        self.P, self.exponent = K * Wt, ek + ew  # fmpz_mat, N x m
        self.n, self.m = self.P.nrows(), self.P.ncols()
        self.dim, self._matrix, self._rank, self._Wt = self.m, self.P, None, fmpq_matrix(self.W).transpose()  # d x m
        self.colmax = np.zeros(self.m)

    def some_rows(self, rows):
        return np.array([int(x) for x in self.P.entries()], dtype=object).reshape(self.n, self.m)[rows]

    def query_of(self, z) -> list[Fraction]:
        """``q = W^T z`` exactly."""
        q = self._Wt * fmpq_mat(self.m, 1, [fmpq_of(x) for x in z])
        return [fraction_of_fmpq(q[a, 0]) for a in range(q.nrows())]


def _witness_z(points: ExactPoints, query_set: SubspaceQuerySet, r):
    """The exact ``z`` of a selectable or tie-only result whose witness is ``W^T z`` (inside the
    radius), else a message."""
    z, i = r.extras.get("z"), r.index
    if z is None:
        return f"key {i}: a {r.status} claim needs 'z' (the query is q = W^T z)"
    try:
        z = [to_fraction(x) for x in z]
    except InputError as err:
        return f"key {i}: 'z' is not a list of numbers ({err})"
    if len(z) != points.m:
        return f"key {i}: a witness z with {points.m} entries is needed (q = W^T z)"
    q = points.query_of(z)
    if r.witness is not None and (len(r.witness) != len(q) or any(Fraction(a) != b for a, b in zip(r.witness, q))):
        return f"key {i}: the witness is not W^T z exactly"
    if query_set.radius is not None and sum(x * x for x in q) > Fraction(query_set.radius) ** 2:
        return f"key {i}: ||W^T z|| exceeds the radius {query_set.radius!r}"
    return z


def check_all(keys, query_set: SubspaceQuerySet, results) -> list:
    """Exact verdicts: the free-query checks on the exact rational points ``W k_j``, with ``z`` as the witness."""
    points = ExactPoints(keys, query_set)
    messages, passed = {}, []
    for pos, r in enumerate(results):
        z = None
        if not isinstance(r.index, int) or not 0 <= r.index < points.n:
            messages[pos] = f"key {r.index}: index out of range 0..{points.n - 1}"
        elif r.status == "not-realisable":
            messages[pos] = f"key {r.index}: 'not-realisable' is not a status for subspace query sets"
        elif r.status in ("selectable", "tie-only") and isinstance(z := _witness_z(points, query_set, r), str):
            messages[pos] = z
        else:
            passed.append((pos, r if z is None else replace(r, witness=z)))
    for (pos, _), verdict in zip(passed, free.check_all(points, None, [r for _, r in passed])):
        messages[pos] = verdict.message or None
    return [Verdict(r.index, r.status, messages[pos] is None, messages[pos] or "") for pos, r in enumerate(results)]
