"""Queries of bounded norm: ``||q|| <= R``.

The argmax of ``q . k`` does not change when ``q`` is scaled by a positive number, so
every status is the free-query status; a witness is scaled (by an exact power of two)
into the ball.  The radius matters for softmax questions (see :mod:`lnproofs.softmax`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import CertificateFormatError, InputError, OptionError, require

__all__ = ["KIND", "QUERY_SET", "BallQuerySet"]

KIND = "ball"


def _check_radius(radius) -> float:
    try:
        value = float(radius)
    except (TypeError, ValueError):
        raise OptionError(f"query-ball radius {radius!r} is not a number; give a positive real R") from None
    require(value == value and value not in (float("inf"), float("-inf")), OptionError,
            f"query-ball radius {radius!r} is not finite; give a positive real R")
    require(value > 0, OptionError, f"query-ball radius R = {radius!r} must be > 0")
    return value


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


QUERY_SET = BallQuerySet
