"""A student's expression read without running any code, within limits set before any work.

The text is split into tokens (numbers of at most 15 digits, ``+ - * / ^ **``, parentheses,
commas and ``sqrt``) and parsed by the recursive-descent parser below: nothing is handed
to ``eval``, ``sympify`` or ``parse_expr``.  The tree is then built bottom-up into a SymPy
number, checking as it goes:

=============================  ===========  ==========================================
limit                          value        why
=============================  ===========  ==========================================
characters                     200          every answer of the problem sets fits in 40
nesting of parentheses         24           a readable expression needs a handful
exponents                      p/q with     larger powers are not needed by any problem
                               abs(p), q
                               at most 64
bits of any rational           4,096        about 1,200 digits
terms once multiplied out      10,000       a bound computed on the tree (sums add,
                                            products and powers multiply), so that
                                            ``(2^(1/64) + 3^(1/63) + 5^(1/61) +
                                            7^(1/59))^64`` (4^64 terms) is refused at
                                            once instead of stalling a comparison
=============================  ===========  ==========================================

Past the first three the answer is refused as not an accepted expression; past the last two
it is :class:`TooComplex`, which the grader reports as "too complex to check" (the student's
feedback and the teacher's list both say so) instead of guessing.
"""

from __future__ import annotations

import re
from fractions import Fraction

__all__ = [
    "Refused",
    "TooComplex",
    "read_expression",
    "exact_decimal",
    "normalise",
    "term_bound",
    "MAX_CHARACTERS",
    "MAX_DEPTH",
    "MAX_EXPONENT",
    "MAX_BITS",
    "MAX_TERMS",
]

MAX_CHARACTERS = 200
MAX_DEPTH = 24
MAX_EXPONENT = 64
MAX_BITS = 4096
MAX_TERMS = 10_000


class Refused(Exception):
    """An answer that cannot be accepted; the message is for the student."""


class TooComplex(Refused):
    """An answer past the limits on the work it may cause: graded "too complex to check"."""

    def __init__(self, why: str):
        super().__init__(f"too complex to check: {why}")


_TOKEN = re.compile(r"\s*(?:(\d{1,15}(?:\.\d{0,15})?|\.\d{1,15})|(sqrt|√)|(\*\*|[-+*/^(),]))")

#: what a student may type or paste that means the same: minus signs and dashes, multiplication
#: signs, superscript squares and cubes, and spaces of every width
_SAME = {
    "\u2212": "-",  # minus sign
    "\u2013": "-",  # en dash
    "\u2014": "-",  # em dash
    "\u2010": "-",  # hyphen
    "\u00d7": "*",  # multiplication sign
    "\u00b7": "*",  # middle dot
    "\u22c5": "*",  # dot operator
    "\u00b2": "^2",
    "\u00b3": "^3",
    "\u221a": "√",
    "\u00a0": " ",
    "\u2009": " ",
    "\u202f": " ",
}


def normalise(text: str) -> str:
    """The text with the Unicode forms of ``-``, ``*``, squares and spaces replaced, ``sqrt`` in any case."""
    text = "".join(_SAME.get(c, c) for c in text)
    return re.sub(r"(?i)sqrt", "sqrt", text)


def _tokens(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    text = normalise(text).rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            bad = text[pos:].strip()[:12]
            raise Refused(
                f"{text!r} is not an accepted expression (stuck at {bad!r}); use numbers, "
                "+ - * / ^, parentheses and sqrt(...) or √, e.g. '2*sqrt(3)' or '2√3'"
            )
        number, name, op = m.groups()
        kind = "num" if number else "root" if name == "√" else "name" if name else "op"
        out.append((kind, number or name or ("^" if op == "**" else op)))
        pos = m.end()
    return out


class _Parser:
    """expr := term (('+'|'-') term)* ; term := unary (('*'|'/') unary | power)* ;
    unary := ('+'|'-') unary | power ; power := atom ('^' unary)? ;
    atom := number | sqrt(expr) | √atom | (expr).
    Like Python, ``-2^2`` is ``-(2^2)`` and ``2^-1`` is allowed; ``^`` groups to the right.  A factor
    that starts with ``sqrt``, ``√`` or ``(`` may follow another without ``*`` (``2√3``, ``2 sqrt(3)``)."""

    def __init__(self, tokens):
        self.tokens, self.at, self.depth = tokens, 0, 0

    def peek(self):
        return self.tokens[self.at] if self.at < len(self.tokens) else (None, None)

    def take(self, value=None):
        kind, tok = self.peek()
        if kind is None or (value is not None and tok != value):
            raise SyntaxError
        self.at += 1
        return kind, tok

    def expr(self):
        node = self.term()
        while self.peek()[1] in ("+", "-"):
            node = (self.take()[1], node, self.term())
        return node

    def term(self):
        node = self.unary()
        while True:
            kind, tok = self.peek()
            if tok in ("*", "/"):
                node = (self.take()[1], node, self.unary())
            elif kind in ("name", "root") or tok == "(":  # 2√3, 2 sqrt(3), 2(1 + √2): a product
                node = ("*", node, self.power())
            else:
                return node

    def unary(self):
        if self.peek()[1] in ("+", "-"):
            sign = self.take()[1]
            self.nest()
            inner = self.unary()
            self.depth -= 1
            return inner if sign == "+" else ("neg", inner)
        return self.power()

    def power(self):
        base = self.atom()
        if self.peek()[1] == "^":
            self.take()
            self.nest()
            exponent = self.unary()
            self.depth -= 1
            return ("^", base, exponent)
        return base

    def atom(self):
        kind, tok = self.take()
        if kind == "num":
            return ("num", exact_decimal(tok))
        if kind == "root":  # √ takes the atom after it: √2, √(1 + 2), √√2
            self.nest()
            inner = self.atom()
            self.depth -= 1
            return ("sqrt", inner)
        if kind == "name":
            self.take("(")
        elif tok != "(":
            raise SyntaxError
        self.nest()
        inner = self.expr()
        if self.peek()[1] == ",":
            raise ValueError("several values")
        self.take(")")
        self.depth -= 1
        return ("sqrt", inner) if kind == "name" else inner

    def nest(self):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise RecursionError


def _parse(text: str):
    parser = _Parser(_tokens(text))
    try:
        tree = parser.expr()
        if parser.peek()[1] == ",":
            raise ValueError("several values")
        if parser.peek()[0] is not None:
            raise SyntaxError
    except ValueError:
        raise Refused(f"{text!r} holds several values; give one number per entry") from None
    except RecursionError:
        raise Refused(f"{text!r} nests more than {MAX_DEPTH} levels of parentheses or signs") from None
    except SyntaxError:
        raise Refused(f"{text!r} is not a well-formed expression; write e.g. '2*sqrt(3)' or '1 + sqrt(2)'") from None
    return tree


#: a decimal with more digits after the point than this, and no small denominator, was rounded
ROUNDED_DIGITS = 6


def exact_decimal(text: str) -> Fraction:
    """The exact value of a decimal as written; a decimal that was evidently rounded (more than
    :data:`ROUNDED_DIGITS` digits after the point and no denominator of at most 10,000) is refused
    with the fraction or square root to write instead."""
    value = Fraction(text)
    digits = len(text.partition(".")[2])
    if digits <= ROUNDED_DIGITS or value.denominator <= 10_000:
        return value
    near = value.limit_denominator(1000)
    if abs(near - value) < Fraction(1, 10 ** (digits - 1)):
        fraction = f"{near.numerator}/{near.denominator}" if near.denominator != 1 else str(near.numerator)
        raise Refused(f'{text} is a rounded decimal, not an exact value; write the fraction "{fraction}" instead')
    raise Refused(
        f"{text} is a rounded decimal, not an exact value; write the exact number with sqrt(...), "
        'such as "1 + sqrt(2)" or "2*sqrt(3)"'
    )


def _capped(value: int) -> int:
    return min(value, MAX_TERMS + 1)


def term_bound(expr) -> int:
    """An upper bound on the number of terms of ``expr`` multiplied out (capped at MAX_TERMS + 1)."""
    if not expr.args:
        return 1
    if expr.is_Add:
        return _capped(sum(term_bound(a) for a in expr.args))
    if expr.is_Mul:
        out = 1
        for a in expr.args:
            out = _capped(out * term_bound(a))
        return out
    if expr.is_Pow:
        base, exponent = expr.args
        if base.is_Rational:
            return 1
        power = abs(int(exponent.p)) if exponent.is_Rational else MAX_TERMS
        return _capped(term_bound(base) ** min(power, 64)) if term_bound(base) > 1 else 1
    return MAX_TERMS + 1


def _build(node):
    """The SymPy number of a parsed tree, checked node by node against the limits."""
    import sympy as sp

    kind = node[0]
    if kind == "num":
        return sp.Rational(node[1].numerator, node[1].denominator)
    if kind == "neg":
        result = -_build(node[1])
    elif kind == "sqrt":
        result = sp.sqrt(_build(node[1]))
    else:
        left, right = _build(node[1]), _build(node[2])
        if kind == "^":
            if not (right.is_Rational and abs(right.p) <= MAX_EXPONENT and abs(right.q) <= MAX_EXPONENT):
                raise Refused(f"exponents must be small rational numbers (at most {MAX_EXPONENT} in size)")
            result = sp.Pow(left, right)
        elif kind == "/":
            result = left / right
        else:
            result = {"+": sp.Add, "-": lambda a, b: a - b, "*": sp.Mul}[kind](left, right)
    if result.is_Rational and max(abs(result.p), result.q).bit_length() > MAX_BITS:
        raise TooComplex(f"a number in it has more than {MAX_BITS} bits")
    if term_bound(result) > MAX_TERMS:
        raise TooComplex(f"multiplied out it would have more than {MAX_TERMS:,} terms")
    return result


def read_expression(value):
    """A finite real SymPy number from a JSON value: an integer, a float (exactly), or an expression string."""
    import math

    import sympy as sp

    if isinstance(value, bool) or value is None:
        raise Refused(f"{value!r} is not a number")
    if isinstance(value, int):  # a JSON integer: the same size limit as a written number
        if value.bit_length() > MAX_BITS:
            raise TooComplex(f"a number in it has more than {MAX_BITS} bits")
        return sp.Integer(value)
    if isinstance(value, float):  # read as written: 0.1 is 1/10
        if not math.isfinite(value):
            raise Refused(f"{value!r} is not a finite number")
        f = exact_decimal(repr(value)) if "e" not in repr(value) else Fraction(value)
        return sp.Rational(f.numerator, f.denominator)
    if not isinstance(value, str):
        raise Refused(f"{value!r} is not a number or an expression string")
    if len(value) > MAX_CHARACTERS:
        raise Refused(f"the expression is longer than {MAX_CHARACTERS} characters")
    if not value.strip():
        raise Refused("the expression is empty")
    try:
        expr = _build(_parse(value))
    except TooComplex:
        raise
    except Refused as err:
        text = str(err)
        raise Refused(text if text.startswith(repr(value)) else f"{value!r}: {text}") from None
    if not expr.is_number or expr.has(sp.zoo, sp.oo, sp.nan):
        raise Refused(f"{value!r} is not a finite number")
    if expr.is_real is False:
        raise Refused(f"{value!r} is not a real number")
    return expr
