"""The pieces an experiment's write-up is made of, shared by ``summary.md`` and the report.

Each experiment builds its text once, from the result files of its run, as a tuple of
blocks (:class:`Heading`, :class:`Para`, :class:`Items`, :class:`Table`, :class:`Figure`).
:func:`to_markdown` writes them as Markdown (the ``summary.md`` files); the report's LaTeX
writer renders the same blocks.  Text is prose with inline mathematics between single
dollar signs, ``**bold**``, and references written ``[[fig:label]]``, ``[[tab:label]]`` or
``[[cite:key]]``, which each writer turns into "Figure 3" or ``Figure~\\ref{fig:label}`` (a
citation into its authors or ``\\citet{key}``).

The number helpers (:func:`fmt`, :func:`mean_ci`) format values for reading: thousands
separators, no exponent notation, a mean with its 95% confidence interval.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

__all__ = [
    "Heading",
    "Para",
    "Items",
    "Table",
    "Figure",
    "REF",
    "to_markdown",
    "numbering",
    "fmt",
    "fmt_int",
    "mean_ci",
    "fmt_ci",
]

#: a reference inside text: [[fig:label]] or [[tab:label]]
REF = re.compile(r"\[\[((fig|tab|sec|thm|cite):[A-Za-z0-9_.:-]+)\]\]")


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 1  # 1: an experiment's section, 2: a subsection
    label: str = ""


@dataclass(frozen=True)
class Para:
    text: str


@dataclass(frozen=True)
class Items:
    items: tuple


@dataclass(frozen=True)
class Table:
    label: str
    caption: str
    header: tuple
    rows: tuple  # tuples of cell texts


@dataclass(frozen=True)
class Figure:
    label: str
    path: str  # relative to the folder the blocks are written for
    caption: str


def numbering(blocks, start: dict | None = None) -> dict:
    """label -> number for every table and figure, in order (continuing ``start``'s counters)."""
    counters = dict(start or {"fig": 0, "tab": 0})
    numbers = {}
    for block in blocks:
        if isinstance(block, (Table, Figure)):
            kind = "tab" if isinstance(block, Table) else "fig"
            counters[kind] = counters.get(kind, 0) + 1
            numbers[block.label] = counters[kind]
    numbers["_counters"] = counters
    return numbers


def _refs_markdown(text: str, numbers: dict) -> str:
    def name(m):
        label, kind = m.group(1), m.group(2)
        if kind == "cite":
            from .paper import CITE

            return CITE.get(label[5:], label[5:])
        word = {"fig": "Figure", "tab": "Table", "sec": "Section", "thm": "Theorem"}[kind]
        return f"{word} {numbers.get(label, '?')}"

    return REF.sub(name, text)


def to_markdown(blocks, numbers: dict | None = None, level: int = 2, prefix: str = "") -> list[str]:
    """Markdown lines; ``level`` is the Markdown heading level of a level-1 heading and
    ``prefix`` is put before figure paths (the folder of the blocks, seen from the document)."""
    numbers = numbers if numbers is not None else numbering(blocks)
    lines = []
    for block in blocks:
        if isinstance(block, Heading):
            lines += ["#" * (level + block.level - 1) + " " + block.text, ""]
        elif isinstance(block, Para):
            lines += [_refs_markdown(block.text, numbers), ""]
        elif isinstance(block, Items):
            lines += [f"- {_refs_markdown(item, numbers)}" for item in block.items] + [""]
        elif isinstance(block, Table):
            lines += [
                f"*Table {numbers.get(block.label, '?')}.* {_refs_markdown(block.caption, numbers)}",
                "",
                "| " + " | ".join(block.header) + " |",
                "|" + "---|" * len(block.header),
            ]
            lines += ["| " + " | ".join(_refs_markdown(c, numbers) for c in row) + " |" for row in block.rows]
            lines.append("")
        elif isinstance(block, Figure):
            number = numbers.get(block.label, "?")
            lines += [
                f"![Figure {number}]({prefix}{block.path})",
                "",
                f"*Figure {number}.* {_refs_markdown(block.caption, numbers)}",
                "",
            ]
    return lines


# --------------------------------------------------------------------------- numbers
def fmt_int(value) -> str:
    """A count with thousands separators (1,292)."""
    return f"{int(round(value)):,}"


def fmt(value, digits: int = 3) -> str:
    """A number with ``digits`` significant digits, thousands separators and no exponent."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "none"
    value = float(value)
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(digits - 1 - magnitude, 0)
    text = f"{value:,.{decimals}f}"
    return text


def mean_ci(values, level: float = 0.95) -> tuple:
    """(mean, half-width of the ``level`` confidence interval of the mean by Student's t, n);
    the half-width is None for fewer than two values."""
    vals = [float(v) for v in values if v is not None]
    n = len(vals)
    if n == 0:
        return None, None, 0
    mean = sum(vals) / n
    if n < 2:
        return mean, None, n
    from scipy import stats

    sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / (n - 1))
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n)
    return mean, half, n


def fmt_ci(values, digits: int = 3, unit: str = "") -> str:
    """ "15.1 ± 6.6" (mean ± half-width of its 95% interval) or the single value."""
    mean, half, n = mean_ci(values)
    if n == 0:
        return "not reached"
    if half is None:
        return f"{fmt(mean, digits)}{unit}"
    decimals = _decimals(mean, digits)
    return f"{mean:,.{decimals}f}{unit} ± {half:,.{decimals}f}{unit}"


def _decimals(value: float, digits: int) -> int:
    if value == 0:
        return digits - 1
    return max(digits - 1 - math.floor(math.log10(abs(value))), 0)
