"""Queries of bounded norm: ``||q|| <= R``.

The argmax of ``q . k`` does not change when ``q`` is scaled by a positive number, so
every status is the free-query status; the checks are the free-query checks plus
``||q||^2 <= R^2`` for every witness, exactly.  The radius matters for softmax questions (see :mod:`lnproofs.propose.softmax`).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..arrays import as_radius as _check_radius
from ..errors import CertificateFormatError, InputError, require

__all__ = ["KIND", "QUERY_SET", "BallQuerySet", "check", "check_all"]


KIND = "ball"


@dataclass(frozen=True)
class BallQuerySet:
    """Every query with Euclidean norm at most ``radius``."""

    radius: float

    kind = KIND

    def __post_init__(self):
        object.__setattr__(self, "radius", _check_radius(self.radius))

    def to_json(self) -> dict:
        return {"kind": KIND, "radius": self.radius}

    @classmethod
    def from_json(cls, data: dict) -> "BallQuerySet":
        require(isinstance(data, dict) and data.get("kind") == KIND, CertificateFormatError,
                "certificate field query_set is not a ball query set")
        require("radius" in data, CertificateFormatError,
                "certificate field query_set has no 'radius'; give {\"kind\": \"ball\", \"radius\": R}")
        try:
            return cls(data["radius"])
        except InputError as err:
            raise CertificateFormatError(f"certificate field query_set: {err}") from None

    def validate(self, dim: int) -> None:
        """Every dimension is accepted."""
        return None


QUERY_SET = BallQuerySet


def _norm_sq(witness) -> Fraction:
    from ..exact import to_fraction

    return sum((to_fraction(x) ** 2 for x in witness), Fraction(0))


def check_all(keys, query_set: BallQuerySet, results) -> list:
    """The free-query checks, plus ``||q||^2 <= R^2`` exactly for every witness."""
    from ..checker import Verdict
    from .free import check_all as free_check_all

    verdicts = free_check_all(keys, None, results)
    R2 = Fraction(query_set.radius) ** 2
    out = []
    for v, r in zip(verdicts, results):
        if v.ok and r.status in ("selectable", "tie-only") and r.witness is not None:
            norm2 = _norm_sq(r.witness)
            if norm2 > R2:
                v = Verdict(r.index, r.status, False,
                            f"key {r.index}: witness has ||q||^2 = {float(norm2):.17g} > R^2 = {float(R2):.17g}")
        out.append(v)
    return out


def check(keys, query_set: BallQuerySet, result):
    return check_all(keys, query_set, [result])[0]
