"""Reading a student's values exactly: numbers, vectors, matrices and safe expressions.

Numbers are JSON integers, ``"p/q"`` strings or decimals (read as the exact decimal);
symbolic fields take expressions such as ``"2*sqrt(3)"``, parsed by a small tokenizer
that accepts only numbers, ``+ - * / ^ **``, parentheses, commas and ``sqrt`` (nothing is
evaluated as Python).  A value that cannot be accepted raises :class:`_Wrong` with a
message for the student; :func:`_part` turns one answer field into a :class:`PartResult`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from ..certificates.writers import format_fraction

__all__ = ["PartResult", "parse_expression"]


_MAX_EXPRESSION = 200


class _Wrong(Exception):
    """An answer that cannot be accepted; the message is for the student."""


@dataclass(frozen=True)
class PartResult:
    """The verdict on one answer field (``part``) of one problem."""

    problem: str
    part: str
    ok: bool
    message: str

    def to_json(self) -> dict:
        return {"problem": self.problem, "part": self.part, "ok": self.ok, "message": self.message}


# ------------------------------------------------------------------ reading values
_TOKEN = re.compile(r"\s*(?:(\d{1,15}(?:\.\d{0,15})?|\.\d{1,15})|(sqrt)|(\*\*|[-+*/^(),]))")


def _tokens(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            bad = text[pos:].strip()[:12]
            raise _Wrong(f"{text!r} is not an accepted expression (stuck at {bad!r}); use numbers, "
                         "+ - * / ^, parentheses and sqrt(...), e.g. '2*sqrt(3)'")
        number, name, op = m.groups()
        out.append(("num", number) if number else ("name", name) if name else ("op", op))
        pos = m.end()
    return out


def parse_expression(text):
    """A SymPy number from a safe expression such as ``"1 + sqrt(2)"`` or ``"-3/4"``.

    Decimals are read exactly (``"2.5"`` is 5/2).  Raises ValueError with a message for
    a person when the text is not an accepted expression or not a finite real number.
    """
    try:
        return _expression(text)
    except _Wrong as err:
        raise ValueError(str(err)) from None


def _expression(value):
    import sympy as sp
    from sympy.parsing.sympy_parser import auto_number, convert_xor, parse_expr

    if isinstance(value, bool) or value is None:
        raise _Wrong(f"{value!r} is not a number")
    if isinstance(value, int):
        return sp.Integer(value)
    if isinstance(value, float):
        f = Fraction(_finite(value))
        return sp.Rational(f.numerator, f.denominator)
    if not isinstance(value, str):
        raise _Wrong(f"{value!r} is not a number or an expression string")
    if len(value) > _MAX_EXPRESSION:
        raise _Wrong(f"the expression is longer than {_MAX_EXPRESSION} characters")
    if not value.strip():
        raise _Wrong("the expression is empty")
    pieces = []
    for kind, tok in _tokens(value):
        if kind == "num" and "." in tok:
            frac = Fraction(tok)
            pieces.append(f"({frac.numerator}/{frac.denominator})")
        else:
            pieces.append(tok)
    code = " ".join(pieces)
    namespace = {"Integer": sp.Integer, "Rational": sp.Rational, "Float": sp.Float, "Add": sp.Add, "Mul": sp.Mul,
                 "Pow": sp.Pow, "__builtins__": {}}
    try:
        raw = parse_expr(code, local_dict={"sqrt": sp.sqrt}, global_dict=namespace,
                         transformations=(auto_number, convert_xor), evaluate=False)
    except Exception:  # the tokens were safe; only the grammar can be wrong here
        raise _Wrong(f"{value!r} is not a well-formed expression; write e.g. '2*sqrt(3)' or '1 + sqrt(2)'") from None
    if isinstance(raw, tuple):
        raise _Wrong(f"{value!r} holds several values; give one number per entry")
    try:
        expr = _evaluate(raw)
    except _Wrong as err:
        raise _Wrong(f"{value!r}: {err}") from None
    if not expr.is_number or expr.has(sp.zoo, sp.oo, sp.nan):
        raise _Wrong(f"{value!r} is not a finite number")
    if expr.is_real is False:
        raise _Wrong(f"{value!r} is not a real number")
    return expr


def _evaluate(node):
    """Evaluate an unevaluated SymPy tree bottom-up, refusing large exponents and huge numbers."""
    import sympy as sp

    if not node.args:
        return node
    args = [_evaluate(a) for a in node.args]
    if isinstance(node, sp.Pow):
        exponent = args[1]
        if not (exponent.is_Rational and abs(exponent.p) <= 64 and abs(exponent.q) <= 64):
            raise _Wrong("exponents must be small rational numbers (at most 64 in size)")
    result = node.func(*args)
    if result.is_Rational and max(abs(result.p), result.q).bit_length() > 4096:
        raise _Wrong("the number is too large")
    return result


def _finite(value: float) -> float:
    """A JSON float (Python's reader accepts NaN and Infinity) if it is finite, else an answer refused."""
    import math

    if not math.isfinite(value):
        raise _Wrong(f"{value!r} is not a finite number")
    return value


def _rational(value) -> Fraction:
    if isinstance(value, bool) or value is None:
        raise _Wrong(f"{value!r} is not a number")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(_finite(value))
    expr = _expression(value)
    if not expr.is_Rational:
        raise _Wrong(f"{value!r} is not a rational number; give an integer or 'p/q'")
    return Fraction(int(expr.p), int(expr.q))


def _vector(value, length: int, read, what: str) -> list:
    if not isinstance(value, list):
        raise _Wrong(f"{what} must be a list of {length} numbers, not {type(value).__name__}")
    if len(value) != length:
        raise _Wrong(f"{what} must have {length} entries; {len(value)} given")
    out = []
    for n, v in enumerate(value, 1):
        try:
            out.append(read(v))
        except _Wrong as err:
            raise _Wrong(f"entry {n} of {what}: {err}") from None
    return out


def _matrix(value, n: int, what: str) -> list[list[Fraction]]:
    if not isinstance(value, list) or len(value) != n:
        raise _Wrong(f"{what} must be a list of {n} rows of {n} numbers")
    return [_vector(row, n, _rational, f"row {i} of {what}") for i, row in enumerate(value, 1)]


def _same(a, b) -> bool:
    import sympy as sp

    difference = sp.simplify(a - b)
    if difference == 0:
        return True
    return bool(difference.equals(0))


def _show(expr) -> str:
    import sympy as sp

    text = sp.sstr(expr)
    if expr.is_Rational:
        return text
    return f"{text} (≈ {float(expr):.6g})"


def _vec_text(values) -> str:
    return "(" + ", ".join(format_fraction(v) if isinstance(v, Fraction) else str(v) for v in values) + ")"


def _scores(keys, q):
    return [sum((Fraction(a) * Fraction(b) for a, b in zip(q, k)), Fraction(0)) for k in keys]


# ------------------------------------------------------------------ per-problem checks
def _part(problem, part, answer, check) -> PartResult:
    if part not in answer:
        return PartResult(problem.id, part, False, f"no answer given for '{part}'")
    try:
        message = check(answer[part])
    except _Wrong as err:
        return PartResult(problem.id, part, False, str(err))
    return PartResult(problem.id, part, message is None, message or "correct")
