"""Queries of bounded norm: ``||q|| <= R``.

The argmax of ``q . k`` does not change when ``q`` is scaled by a positive number, so
every status is the free-query status; a witness is scaled (by an exact power of two)
into the ball.  The radius matters for softmax questions (see :mod:`lnproofs.propose.softmax`).
"""

from __future__ import annotations

from fractions import Fraction

from ...kernel import BallQuerySet

__all__ = ["KIND", "QUERY_SET", "BallQuerySet", "certify"]

KIND, QUERY_SET = "ball", BallQuerySet


def _into_ball(witness, radius: float):
    """The witness halved (exactly) until its norm is at most the radius."""
    R2 = Fraction(radius) ** 2
    w = list(witness)
    norm2 = sum((Fraction(x) ** 2 for x in w), Fraction(0))
    while norm2 > R2:
        w = [x / 2 for x in w]
        norm2 /= 4
    return tuple(w)


def certify(keys, query_set: BallQuerySet, **options) -> list:
    """Free-query results with every witness scaled into the ball (statuses do not change)."""
    from dataclasses import replace

    from ..certification import certify_results

    out = []
    for r in certify_results(keys, **options):
        if r.witness is not None:
            r = replace(r, witness=_into_ball(r.witness, query_set.radius))
        out.append(r)
    return out
