"""Queries in a subspace: ``q = W^T z`` for an ``m x d`` matrix ``W``.

Scores are ``q . k_j = z . (W k_j)``, so key ``i`` wins for some ``z`` exactly when
``W k_i`` is a vertex of the convex hull of the points ``W k_j``.  Proposals come from
the free-query engine run on those points; every claim is re-checked against the
exact rational products ``W k_j`` (never the rounded float product).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..arrays import as_real_array, load_array
from ..errors import CertificateFormatError, InputError, OptionError, ShapeError, require

__all__ = ["KIND", "QUERY_SET", "SubspaceQuerySet", "load_subspace"]

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
            from .ball import _check_radius
            object.__setattr__(self, "radius", _check_radius(self.radius))

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


def load_subspace(path, *, radius: float | None = None) -> SubspaceQuerySet:
    """Read ``W`` (``m x d``) from a .npy/.npz(array ``W``)/.csv/.pt/.safetensors file."""
    return SubspaceQuerySet(load_array(path, name="W", ndim=2), radius)
