"""Reading a student's values exactly: numbers, vectors, matrices and safe expressions.

Numbers are JSON integers, ``"p/q"`` strings or decimals (read as the exact decimal);
symbolic fields take expressions such as ``"2*sqrt(3)"``, read by :mod:`.expressions`
(a tokenizer and a parser of our own: numbers, ``+ - * / ^ **``, parentheses and ``sqrt``;
nothing is evaluated as Python) within limits, and compared by :mod:`.compare` within a time
budget.  A value that cannot be accepted raises :class:`_Wrong` with a message for the
student; one past the limits is "too complex to check"; :func:`_part` turns one answer field
into a :class:`PartResult`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..certificates.writers import format_fraction
from .expressions import MAX_BITS, Refused, TooComplex, read_expression

__all__ = [
    "ANSWERS_SCHEMA",
    "PartResult",
    "parse_expression",
    "read_integer",
    "read_number_set",
    "read_status",
    "json_text",
    "unmatched",
    "mark_members",
    "expected",
    "redact",
]


_Wrong = Refused  # the name the marking modules use


#: the schema of an answers file (docs/homework.md)
ANSWERS_SCHEMA = "lnproofs.homework-answers/1"

#: the marks around what a message reveals of the expected answer (see :func:`expected`)
_OPEN, _CLOSE = "\x02", "\x03"


def expected(text) -> str:
    """``text`` marked as revealing the expected answer: a feedback level that hides answers drops it."""
    return f"{_OPEN}{text}{_CLOSE}"


def redact(message: str, placeholder: str = "[hidden]") -> str:
    """The message with every marked span replaced by ``placeholder``."""
    import re

    return re.sub(f"{_OPEN}[^{_CLOSE}]*{_CLOSE}", placeholder, message)


@dataclass(frozen=True)
class PartResult:
    """The verdict on one answer field (``part``) of one problem.

    ``message`` is the whole message; ``hidden`` the same with every part that reveals the expected
    answer replaced by ``[hidden]`` (what a feedback level that hides answers shows)."""

    problem: str
    part: str
    ok: bool
    message: str
    too_complex: bool = False  # past the limits of .expressions: 0 points, and listed for the teacher
    hidden: str = ""

    def __post_init__(self):
        marked = self.message
        object.__setattr__(self, "message", marked.replace(_OPEN, "").replace(_CLOSE, ""))
        object.__setattr__(self, "hidden", self.hidden or redact(marked))

    def to_json(self) -> dict:
        data = {"problem": self.problem, "part": self.part, "ok": self.ok, "message": self.message}
        if self.too_complex:
            data["too_complex"] = True
        return data


# ------------------------------------------------------------------ reading values
def parse_expression(text):
    """A SymPy number from a safe expression such as ``"1 + sqrt(2)"`` or ``"-3/4"``.

    Decimals are read exactly (``"2.5"`` is 5/2).  Raises ValueError with a message for
    a person when the text is not an accepted expression or not a finite real number.
    """
    try:
        return read_expression(text)
    except Refused as err:
        raise ValueError(str(err)) from None


_expression = read_expression


def _rational(value) -> Fraction:
    if isinstance(value, bool) or value is None:
        raise _Wrong(f"{value!r} is not a number")
    if isinstance(value, int):
        if value.bit_length() > MAX_BITS:  # as for a number written in an expression
            raise _Wrong(f"an integer of {value.bit_length()} bits has more than {MAX_BITS}")
        return Fraction(value)
    expr = _expression(value)
    if not expr.is_Rational:
        raise _Wrong(f"{value!r} is not a rational number; give an integer or 'p/q'")
    return Fraction(int(expr.p), int(expr.q))


def read_integer(value, what: str) -> int:
    """An integer written as a JSON integer, a float with an integer value (``3.0``) or a string
    (``"3"``, ``" 3 "``); anything else is refused naming the value and what to write."""
    if isinstance(value, bool) or value is None or isinstance(value, (list, dict)):
        raise _Wrong(f"{json_text(value)} is not {what}; write a whole number such as 3")
    try:
        number = _rational(value)
    except _Wrong:
        raise _Wrong(f"{json_text(value)} is not {what}; write a whole number such as 3") from None
    if number.denominator != 1:
        raise _Wrong(f"{json_text(value)} is not {what}; write a whole number such as 3")
    return int(number)


def read_number_set(value, count: int, what: str, field: str) -> set[int]:
    """The numbers 1..count of a set answer: a list of integers (written as integers, integral floats or
    strings; one named twice counts once), or one number alone; else :class:`_Wrong` saying why not."""
    if isinstance(value, (int, str)) and not isinstance(value, bool):
        value = [value]  # one number written without the brackets
    if not isinstance(value, list):
        raise _Wrong(
            f"'{field}' must be a list of {what} numbers such as [2, 5] (an empty list [] if there is none), "
            f"not {json_text(value)}"
        )
    seen = set()
    for v in value:
        number = read_integer(v, f"a {what} number")
        if not 1 <= number <= count:
            raise _Wrong(f"{json_text(v)} is not a {what} number; {what}s are numbered 1 to {count}")
        seen.add(number)
    return seen


def mark_members(problem, answer, field: str, count: int, truth: set, why) -> list:
    """One part per key of a set answer (``field``: key numbers 1..count): right when the answer holds
    the key exactly if ``truth`` does; ``why(j, in_truth)`` explains a wrong key.  An answer that cannot
    be read loses every key's point, each with the reason."""
    try:
        if field not in answer:
            raise _Wrong(f"no answer given for '{field}'")
        given = read_number_set(answer[field], count, "key", field)
    except _Wrong as err:
        return [PartResult(problem.id, f"key {j}", False, str(err)) for j in range(1, count + 1)]
    parts = []
    for j in range(1, count + 1):
        ok = (j in given) == (j in truth)
        parts.append(PartResult(problem.id, f"key {j}", ok, "correct" if ok else why(j, j in truth)))
    return parts


def unmatched(given, expected) -> tuple[list, list]:
    """(the given numbers that match no expected one, the expected ones left), matching each once."""
    remaining, missing = list(expected), []
    for g in given:
        hit = next((k for k, e in enumerate(remaining) if _same(g, e)), None)
        if hit is None:
            missing.append(g)
        else:
            remaining.pop(hit)
    return missing, remaining


def read_status(value, statuses) -> str:
    """A status in any case, with spaces, underscores or dashes between its words (``"Tie only"``)."""
    if isinstance(value, str):
        import re

        from .expressions import normalise

        folded = re.sub(r"[\s_-]+", "-", normalise(value).strip().lower())
        for status in statuses:
            if folded in (status, status.replace("-", "")):
                return status
            if folded.replace("-", "") == status.replace("-", ""):
                return status
    raise _Wrong(f"{json_text(value)} is not a status; write one of {', '.join(repr(s) for s in statuses)}")


def json_text(value) -> str:
    """A value as the student wrote it in JSON (shortened), for messages."""
    import json

    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


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
    from .compare import same

    return same(a, b)


def _mismatch(given, gain):
    """None when the numbers ``given`` are a multiple of 1/a (every ``given_i * a_i`` the same, exactly),
    else the first index whose product differs from the first's."""
    products = [g * a for g, a in zip(given, gain)]
    return next((i for i in range(1, len(products)) if not _same(products[i], products[0])), None)


def _is_zero(values) -> bool:
    return all(_same(v, 0 * v) for v in values)


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
    except TooComplex as err:
        return PartResult(problem.id, part, False, str(err), too_complex=True)
    except _Wrong as err:
        return PartResult(problem.id, part, False, str(err))
    return PartResult(problem.id, part, message is None, message or "correct")
