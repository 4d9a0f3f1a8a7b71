"""Exact rational numbers from floats, and back to text.

Every IEEE double is a dyadic rational; ``to_fraction`` returns it exactly.  Rationals
travel in JSON as strings ``"p/q"`` (or ``"p"`` when the denominator is 1) so that no
digit is lost.  This module imports no numpy: reading a number exactly stays light.
"""

from __future__ import annotations

from fractions import Fraction
from numbers import Rational

from flint import fmpz

from .errors import InputError


def to_fraction(value) -> Fraction:
    """The exact rational value of a float, int, numpy scalar, Fraction or "p/q" string."""
    if isinstance(value, Fraction):
        return value
    if isinstance(value, str):
        return parse_fraction(value)
    if isinstance(value, Rational):
        return Fraction(int(value.numerator), int(value.denominator))
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(f"cannot read {value!r} as a real number; give a float, an int or a 'p/q' string") from None
    if number != number or number in (float("inf"), float("-inf")):
        raise InputError(f"{value!r} is not finite; only finite real numbers have an exact rational value")
    return Fraction(*number.as_integer_ratio())


def parse_fraction(text: str) -> Fraction:
    """Read ``"p/q"``, ``"p"`` or a decimal string exactly (integers of any length)."""
    text = str(text).strip()
    head, _, tail = text.partition("/")
    digits = head[1:] if head[:1] in "+-" else head
    try:
        if digits.isdigit() and (not tail or tail.isdigit()):
            p = int(fmpz(digits))
            return Fraction(-p if head[:1] == "-" else p, int(fmpz(tail)) if tail else 1)
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        raise InputError(f"{text!r} is not a rational number; write it as 'p/q', 'p' or a decimal") from None
