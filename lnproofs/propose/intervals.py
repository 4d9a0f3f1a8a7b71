"""Rigorous interval evaluation of the few transcendental quantities we report.

Exact rationals go in; mpmath interval arithmetic (outward rounding, 100 bits) gives an
enclosure; ``bounds`` turns it into a float pair rounded outward, so the true value
lies in ``[lo, hi]`` for certain.  Used for softmax weights, entropies and square roots.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fractions import Fraction

__all__ = ["PRECISION", "interval", "bounds", "softmax_weight", "entropy", "sqrt_of", "score_scale"]

PRECISION = 100


def _ctx():
    from mpmath import iv

    ctx = iv.__class__()  # a private context, so no global precision is changed
    ctx.prec = PRECISION
    return ctx


def interval(value, ctx=None):
    """An interval enclosing an exact rational (Fraction, int, float or ``"p/q"``)."""
    from ..kernel import to_fraction

    ctx = ctx or _ctx()
    f = to_fraction(value)
    return ctx.mpf(f.numerator) / ctx.mpf(f.denominator)


def bounds(x) -> tuple[float, float]:
    """Floats ``(lo, hi)`` with ``lo <= x <= hi`` for every point of the interval ``x``."""
    from mpmath.libmp import to_float

    a, b = x._mpi_
    return to_float(a, rnd="d"), to_float(b, rnd="u")


def score_scale(*, temperature=None, dim: int | None = None, scaled: bool = False, ctx=None):
    """The factor multiplying scores: ``1/T``, or ``1/sqrt(d)`` when ``scaled``; an interval."""
    ctx = ctx or _ctx()
    if scaled:
        return 1 / ctx.sqrt(ctx.mpf(int(dim)))
    if temperature is None:
        return ctx.mpf(1)
    return 1 / interval(temperature, ctx)


def softmax_weight(differences: Iterable[Fraction], scale, ctx=None):
    """Weight of a key whose score minus each key's score is ``-differences[j]``.

    ``differences[j] = s_j - s_i`` exactly (``0`` for the key itself); the weight is
    ``1 / sum_j exp(scale * differences[j])``.
    """
    ctx = ctx or _ctx()
    total = ctx.mpf(0)
    for diff in differences:
        total += ctx.exp(scale * interval(diff, ctx))
    return 1 / total


def entropy(weights: Sequence[Fraction], ctx=None):
    """``-sum_j p_j log p_j`` (terms with ``p_j = 0`` are 0)."""
    ctx = ctx or _ctx()
    total = ctx.mpf(0)
    for w in weights:
        if w:
            p = interval(w, ctx)
            total -= p * ctx.log(p)
    return total


def sqrt_of(value, ctx=None):
    """``sqrt(value)`` for an exact non-negative rational."""
    ctx = ctx or _ctx()
    return ctx.sqrt(interval(value, ctx))
