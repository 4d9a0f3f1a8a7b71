"""What every homework problem kind shares: the claims its generator makes, reading its JSON, and
displaying itself.

A problem kind is a frozen dataclass with ``topic``, ``fields`` (the answer fields, each worth
points), ``written`` (parts answered in words, collected for grading by hand), ``to_json`` /
``from_json``, ``draw(rng)`` (a random instance), ``claims()`` (every property the exercise
relies on, each decided exactly; the property tests check them over thousands of instances) and
``solve()``.  Rationals are :class:`fractions.Fraction`; irrational values are SymPy numbers
written as text such as ``"2*sqrt(3)"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

from ..certificates.writers import format_fraction
from ..kernel import InputError, require

__all__ = [
    "Claim",
    "ProblemKind",
    "STATUSES",
    "fr_text",
    "matrix_text",
    "read_ints",
    "rank",
    "MAX_KEYS",
]

#: the statuses a student may claim for a key
STATUSES = ("selectable", "tie-only", "unselectable")
#: problems are meant to be worked by hand: widths, key counts and entries stay small
MAX_WIDTH, MAX_KEYS, MAX_ENTRY = 8, 30, 10**6


@dataclass(frozen=True)
class Claim:
    """One property of a generated exercise, decided exactly: ``holds`` must be True."""

    text: str
    holds: bool


def fr_text(values) -> list[str]:
    return [format_fraction(Fraction(v)) for v in values]


def matrix_text(rows) -> list[list[str]]:
    return [fr_text(row) for row in rows]


def read_ints(values, what: str, low: int = 1) -> tuple[int, ...]:
    """A list of ``low`` to MAX_WIDTH small integers from problem JSON, else InputError naming it."""
    require(
        isinstance(values, (list, tuple)) and low <= len(values) <= MAX_WIDTH,
        InputError,
        f"{what} must be a list of {low} to {MAX_WIDTH} integers, not {values!r}"[:300],
    )
    out = []
    for v in values:
        require(
            isinstance(v, int) and not isinstance(v, bool) and abs(v) <= MAX_ENTRY,
            InputError,
            f"{what} must hold integers of size at most {MAX_ENTRY}; {v!r} is not one"[:300],
        )
        out.append(int(v))
    return tuple(out)


def rank(rows) -> int:
    """The exact rank of a list of rational rows (Gaussian elimination over Fractions)."""
    a = [[Fraction(v) for v in row] for row in rows]
    r = 0
    for c in range(len(a[0]) if a else 0):
        p = next((i for i in range(r, len(a)) if a[i][c] != 0), None)
        if p is None:
            continue
        a[r], a[p] = a[p], a[r]
        for i in range(len(a)):
            if i != r and a[i][c] != 0:
                f = a[i][c] / a[r][c]
                a[i] = [x - f * y for x, y in zip(a[i], a[r])]
        r += 1
    return r


def read_plane_keys(data, what: str, low: int, high: int) -> tuple[tuple[int, int], ...]:
    """The distinct keys in the plane of a problem's JSON (``data["keys"]``), else InputError naming them."""
    rows = data.get("keys")
    require(
        isinstance(rows, list) and low <= len(rows) <= min(high, MAX_KEYS),
        InputError,
        f"{what} problem 'keys' must be a list of {low} to {high} integer vectors",
    )
    keys = tuple(read_ints(r, f"{what} problem key", low=2) for r in rows)
    require(
        all(len(k) == 2 for k in keys) and len(set(keys)) == len(keys),
        InputError,
        f"{what}: distinct keys in the plane",
    )
    return keys


class ProblemKind:
    """The base of every problem kind (see the module docstring)."""

    topic: ClassVar[str]
    fields: ClassVar[tuple[str, ...]]
    written: ClassVar[tuple[tuple[str, str], ...]] = ()

    @property
    def id(self) -> str:
        return self.topic

    def points(self) -> int:
        """The points the problem is worth: one per answer field unless a kind counts finer."""
        return len(self.fields)

    def _repr_markdown_(self) -> str:
        from .sheet import problem_markdown

        return problem_markdown(self, number=None)

    def _repr_latex_(self) -> str:
        from .sheet import problem_latex_display

        return problem_latex_display(self)
