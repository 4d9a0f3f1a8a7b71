"""Free queries: every q in R^d is allowed (the query set of the plain argmax question),
and queries of bounded norm ``||q|| <= R`` (the ``ball`` kind, :class:`BallQuerySet`).

The argmax of ``q . k`` does not change when ``q`` is scaled by a positive number, so every
ball status is the free-query status; the ball checks are the free-query checks plus
``||q||^2 <= R^2`` for every witness, exactly.  The radius matters for softmax questions
(see :mod:`lnproofs.propose.softmax`).  Certificates are made by
:mod:`lnproofs.propose.certification`; they are checked here with the exact primitives of
:mod:`lnproofs.kernel.checker`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..arrays import as_radius
from ..checker import ExactKeys, Verdict, check_combinations, check_witnesses
from ..errors import CertificateFormatError
from ..exact import to_fraction
from ..querysets import QuerySetSchema

__all__ = ["KIND", "FreeQueries", "QUERY_SET", "BallQuerySet", "check_all"]


KIND = "free"


@dataclass(frozen=True)
class FreeQueries(QuerySetSchema):
    """All of R^d."""

    kind = KIND

    @classmethod
    def from_json(cls, data) -> "FreeQueries":
        extra = sorted(set(data) - {"kind"}) if isinstance(data, dict) else []
        if extra:
            raise CertificateFormatError(f"query_set field {extra[0]!r} is not used by free queries; remove it")
        return super().from_json(data)


QUERY_SET = FreeQueries


@dataclass(frozen=True)
class BallQuerySet(QuerySetSchema):
    """Every query with Euclidean norm at most ``radius``."""

    radius: float

    kind = "ball"
    FIELDS = REQUIRED = ("radius",)

    def __post_init__(self):
        object.__setattr__(self, "radius", as_radius(self.radius))


def check_all(keys, query_set, results) -> list[Verdict]:
    """Exact verdicts for many results at once (witness inequalities in bulk); for a ball
    query set also ``||q||^2 <= R^2`` exactly for every witness."""
    ek = ExactKeys.of(keys)
    messages: dict[int, str | None] = {}
    strict_pos, ties, interiors = [], [], []
    for pos, r in enumerate(results):
        status = r.status
        if status == "undecided":
            messages[pos] = None
        elif status == "not-realisable":
            messages[pos] = f"key {r.index}: 'not-realisable' is not a status for free queries"
        elif status == "selectable" or status == "tie-only":
            if r.witness is None or len(r.witness) != ek.dim:
                got = "none" if r.witness is None else f"{len(r.witness)} entries"
                messages[pos] = f"key {r.index}: a {status} claim needs a witness query with {ek.dim} entries (got {got})"
                continue
            (ties if status == "tie-only" else strict_pos).append(pos)
        else:  # unselectable
            interiors.append(pos)
    for group, strict in ((ties, False), (interiors, True)):     # exact combinations, all at once
        got = check_combinations(ek, [(results[p].index, results[p].combination) for p in group], strict=strict)
        messages.update(zip(group, got))
    tie_pos = [p for p in ties if messages[p] is None]
    for group, mode in ((strict_pos, "strict"), (tie_pos, "tie")):
        got = check_witnesses(ek, [(results[p].index, results[p].witness) for p in group], mode=mode)
        messages.update(zip(group, got))
    R2 = Fraction(query_set.radius) ** 2 if isinstance(query_set, BallQuerySet) else None
    for pos, r in enumerate(results):
        if R2 is not None and messages[pos] is None and r.status in ("selectable", "tie-only") \
                and sum((to_fraction(x) ** 2 for x in r.witness), Fraction(0)) > R2:
            messages[pos] = f"key {r.index}: witness has ||q|| > R = {query_set.radius!r}"
    return [Verdict(r.index, r.status, messages[pos] is None, messages[pos] or "") for pos, r in enumerate(results)]
