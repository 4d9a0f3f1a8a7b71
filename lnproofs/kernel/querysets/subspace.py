"""Queries in a subspace: ``q = W^T z`` for an ``m x d`` matrix ``W``.

Scores are ``q . k_j = z . (W k_j)``, so key ``i`` wins for some ``z`` exactly when
``W k_i`` is a vertex of the convex hull of the points ``W k_j``.  Proposals come from
the free-query engine run on those points; every claim is re-checked against the
exact rational products ``W k_j`` (never the rounded float product).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..arrays import as_radius, as_real_array
from ..errors import CertificateFormatError, InputError, ShapeError, require

__all__ = ["KIND", "QUERY_SET", "SubspaceQuerySet", "ExactPoints", "check", "check_all"]


KIND = "subspace"


@dataclass(frozen=True)
class SubspaceQuerySet:
    """Queries ``q = W^T z`` (``W`` is ``m x d``), optionally with ``||q|| <= radius``."""

    W: tuple
    radius: float | None = None

    kind = KIND

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
        require(d == dim, ShapeError,
                f"query subspace W has shape ({m}, {d}) but the keys have dimension {dim}; "
                f"W must be m x {dim} (queries are q = W^T z)")

    def to_json(self) -> dict:
        data = {"kind": KIND, "W": [list(row) for row in self.W]}
        if self.radius is not None:
            data["radius"] = self.radius
        return data

    @classmethod
    def from_json(cls, data: dict) -> "SubspaceQuerySet":
        require(isinstance(data, dict) and data.get("kind") == KIND, CertificateFormatError,
                "certificate field query_set is not a subspace query set")
        require("W" in data, CertificateFormatError,
                "certificate field query_set has no 'W'; give {\"kind\": \"subspace\", \"W\": [[...]]}")
        try:
            return cls(data["W"], data.get("radius"))
        except CertificateFormatError:
            raise
        except InputError as err:
            raise CertificateFormatError(f"certificate field query_set: {err}") from None


QUERY_SET = SubspaceQuerySet


class ExactPoints:
    """The points ``p_j = W k_j`` as integers ``P_j`` times ``2**exponent`` (exact)."""

    def __init__(self, keys, query_set: SubspaceQuerySet):
        from ..dyadic import exact_row_products

        arr = np.asarray(getattr(keys, "array", keys), dtype=np.float64)
        query_set.validate(arr.shape[1])
        self.keys = arr
        self.W = query_set.matrix
        self.P, self.exponent = exact_row_products(arr, self.W)     # fmpz_mat, N x m
        self.n, self.m = self.P.nrows(), self.P.ncols()
        self._rank = None
        self._Wt = None

    def floats(self, relative_to: int | None = None) -> np.ndarray:
        """The points (minus point ``relative_to``, exactly) rounded to doubles; proposals only."""
        from ..dyadic import fraction_of_fmpz

        base = [0] * self.m if relative_to is None else self.row(relative_to)
        return np.array([[float(fraction_of_fmpz(int(self.P[j, a]) - base[a], self.exponent)) for a in range(self.m)]
                         for j in range(self.n)], dtype=np.float64).reshape(self.n, self.m)

    def row(self, j: int) -> list[int]:
        return [int(self.P[j, a]) for a in range(self.m)]

    def affine_rank(self) -> int:
        if self._rank is None:
            from ..checker import affine_rank
            self._rank = affine_rank([self.row(j) for j in range(self.n)])
        return self._rank

    def int_scores(self, z) -> list[int]:
        """``Z . P_j`` for every j, where ``z = Z / D`` (same signs as ``z . (W k_j)``)."""
        from flint import fmpz_mat

        from ..dyadic import integer_vector_of_fractions

        Z, _ = integer_vector_of_fractions(z)
        return [int(x) for x in (self.P * fmpz_mat(self.m, 1, Z)).entries()]

    def query_of(self, z) -> list[Fraction]:
        """``q = W^T z`` exactly."""
        from flint import fmpq_mat

        from ..dyadic import fmpq_matrix, fmpq_of, fraction_of_fmpq

        if self._Wt is None:
            self._Wt = fmpq_matrix(self.W).transpose()                  # d x m
        q = self._Wt * fmpq_mat(self.m, 1, [fmpq_of(x) for x in z])
        return [fraction_of_fmpq(q[a, 0]) for a in range(q.nrows())]


def _check_witness(points: ExactPoints, i: int, z, mode: str) -> str | None:
    if z is None or len(z) != points.m:
        return f"key {i}: a witness z with {points.m} entries is needed (q = W^T z)"
    scores = points.int_scores(z)
    below = False
    for j, s in enumerate(scores):
        if j == i:
            continue
        gap = scores[i] - s
        if gap > 0:
            below = True
        elif gap < 0 or mode == "strict":
            need = "> 0" if mode == "strict" else ">= 0"
            return f"key {i}: witness gives q.k_{i} - q.k_{j} with sign of {gap} (exact), but the claim needs {need}"
    if mode == "tie" and not below and points.n > 1:
        return f"key {i}: witness ties every key with k_{i}; tie-only needs some key strictly below"
    return None


def _check_combination(points: ExactPoints, i: int, combination, strict: bool) -> str | None:
    from ..dyadic import integer_vector_of_fractions

    if combination is None or not combination.indices:
        return f"key {i}: no combination given"
    idx, w = list(combination.indices), [Fraction(x) for x in combination.weights]
    if len(set(idx)) != len(idx) or any(not 0 <= j < points.n or j == i for j in idx):
        return f"key {i}: combination indices must be distinct other keys in 0..{points.n - 1}"
    low = min(w)
    if low < 0 or (strict and low == 0):
        return f"key {i}: weight {low} of k_{idx[w.index(low)]} is not {'> 0' if strict else '>= 0'}"
    if sum(w) != 1:
        return f"key {i}: the weights sum to {sum(w)}, not 1"
    Wt, den = integer_vector_of_fractions(w)
    target = points.row(i)
    rows = [points.row(j) for j in idx]
    for a in range(points.m):
        acc = sum(c * r[a] for c, r in zip(Wt, rows))
        if acc != den * target[a]:
            return (f"key {i}: the combination misses W k_{i} in coordinate {a} "
                    f"(exact products W k_j are used); it must reproduce W k_{i} exactly")
    if strict:
        from ..checker import affine_rank
        r = affine_rank(rows)
        if r != points.affine_rank():
            return (f"key {i}: the support spans an affine space of dimension {r} but the points W k_j span "
                    f"dimension {points.affine_rank()}")
    return None


def _check_one(points: ExactPoints, query_set: SubspaceQuerySet, r) -> str | None:
    status = r.status
    i = r.index
    if not isinstance(i, int) or not 0 <= i < points.n:
        return f"key {i}: index out of range 0..{points.n - 1}"
    if status == "undecided":
        return None
    if status == "not-realisable":
        return f"key {i}: 'not-realisable' is not a status for subspace query sets"
    z = r.extras.get("z")
    if status in ("selectable", "tie-only"):
        if z is None:
            return f"key {i}: a {status} claim needs 'z' (the query is q = W^T z)"
        try:
            from ..exact import fractions_of
            z = list(fractions_of(z))
        except InputError as err:
            return f"key {i}: 'z' is not a list of numbers ({err})"
        if r.witness is not None:
            q = points.query_of(z)
            if len(r.witness) != len(q) or any(Fraction(a) != b for a, b in zip(r.witness, q)):
                return f"key {i}: the witness is not W^T z exactly"
        if query_set.radius is not None:
            q = points.query_of(z)
            if sum(x * x for x in q) > Fraction(query_set.radius) ** 2:
                return f"key {i}: ||W^T z|| exceeds the radius {query_set.radius!r}"
        if status == "tie-only":
            bad = _check_combination(points, i, r.combination, strict=False)
            if bad:
                return bad
        return _check_witness(points, i, z, "strict" if status == "selectable" else "tie")
    return _check_combination(points, i, r.combination, strict=True)


def check_all(keys, query_set: SubspaceQuerySet, results) -> list:
    """Exact verdicts, against the exact rational points ``W k_j``."""
    from ..checker import Verdict

    points = ExactPoints(keys, query_set)
    out = []
    for r in results:
        message = _check_one(points, query_set, r)
        out.append(Verdict(r.index, r.status, message is None, message or ""))
    return out


def check(keys, query_set: SubspaceQuerySet, result):
    return check_all(keys, query_set, [result])[0]
