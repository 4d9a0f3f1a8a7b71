"""Numbers written as text, read as the rationals they denote, and ``.csv`` arrays read within limits.

A decimal is the exact rational it denotes: ``0.1`` is 1/10, ``1.25e3`` is 1250, and ``p/q`` (``1/3``)
is accepted too.  lnproofs computes with float64 arrays, so a table of such numbers is handed on
as integers times one positive common scale: when some number is not a float64 (``0.1``), every
number is multiplied by ``D``, the least common multiple of their denominators, and the integers
``D x`` go on with ``scale = D`` (refused in one line when one of them has no float64).  Free
queries, and every query set that does not scale with the keys, give every key the same status
for keys times a positive number (the witness is the same query, the weights the same weights), so
the certificates answer about the numbers written; :mod:`lnproofs.io.arrays` says where a scale is
accepted and records it.  When every number is a float64 the scale is 1 and the floats are the
numbers.  With ``as_float64`` each decimal is read as its nearest float64 instead (numpy's and
Python's reading), which the certificates then state.

A ``.csv`` file is read line by line (UTF-8, a byte-order mark skipped, ``#`` comments and blank
lines skipped): its first line is a header only when every cell is a name that is not a number;
any other cell that is not a number is refused naming its line and column.  A line longer than
``LINE_BYTES_PER_COLUMN`` times the column limit, more columns than the limit, or more numbers than
the array limit allows are refused before the rest is read.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np

from ..kernel import FileFormatError, InputError, LimitError, NonFiniteError, ShapeError
from .bounded import DEFAULT_READ_LIMITS, ReadLimits, open_array_file

__all__ = ["parse_number", "option_float", "read_csv", "scaled_numbers", "LINE_BYTES_PER_COLUMN", "MAX_EXPONENT"]

#: room for one number on a line: the exact decimal of any float64 has at most 767 significant digits
LINE_BYTES_PER_COLUMN = 1024
#: the largest decimal exponent read (``1e-400`` is a rational; ``1e999999999`` would be a billion digits)
MAX_EXPONENT = 1000

_DECIMAL = re.compile(r"([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?", re.ASCII)
_RATIO = re.compile(r"([+-]?\d+)/(\d+)", re.ASCII)
_NON_FINITE = re.compile(r"[+-]?(nan|inf|infinity)", re.ASCII | re.IGNORECASE)


def parse_number(text: str, where: str) -> Fraction:
    """The rational that the decimal or ``p/q`` ``text`` denotes; ValueError when it is not a
    number (a name), one line for NaN, an infinity, a zero denominator or an exponent past
    :data:`MAX_EXPONENT`."""
    text = text.strip()
    if _NON_FINITE.fullmatch(text):
        raise NonFiniteError(f"{where} holds {text}, which is not finite; only finite numbers are accepted")
    ratio = _RATIO.fullmatch(text)
    if ratio is not None:
        if int(ratio.group(2)) == 0:
            raise FileFormatError(f"{where} holds {text[:40]}, a ratio with denominator 0")
        return Fraction(int(ratio.group(1)), int(ratio.group(2)))
    match = _DECIMAL.fullmatch(text)
    if match is None or not (match.group(2) or match.group(3)):
        raise ValueError(text)
    sign, whole, frac, exponent = match.groups()
    exponent = int(exponent or 0)
    if abs(exponent) > MAX_EXPONENT:
        raise LimitError(f"{where} holds {text[:40]}, whose exponent is past {MAX_EXPONENT} in size")
    frac = frac or ""
    value = Fraction(int((whole or "0") + frac)) * Fraction(10) ** (exponent - len(frac))
    return -value if sign == "-" else value


def option_float(text, flag: str, as_float64: bool = False) -> float:
    """The float64 an option's value denotes (``--box 0.5``): the number as written when a float64
    equals it, its nearest float64 with ``as_float64``, else one line (the option takes floats, and
    rounding it in silence would answer about another number).  None stays None."""
    if text is None or isinstance(text, float):
        return text
    from ..kernel import OptionError

    try:
        value = parse_number(str(text), f"{flag} {text}")
    except ValueError as exc:
        if isinstance(exc, InputError):
            raise OptionError(str(exc)) from None
        raise OptionError(f"{flag} {str(text)[:40]!r} is not a number; give a decimal such as 2 or 0.5") from None
    exact = _float(value)
    if exact is not None:
        return exact
    if as_float64 and abs(value) < 2**1024:
        return float(value)
    raise OptionError(
        f"{flag} {str(text)[:40]} is read exactly, as {_short(value)}, which no float64 equals, and {flag} takes "
        f"a float: give a float's decimal (such as 0.5 or 0.125)"
        + (", or --as-float64 to take its nearest float64" if as_float64 is not None else "")
    )


def _float(value: Fraction) -> float | None:
    """The float64 equal to ``value``, or None when there is none."""
    try:
        near = float(value)  # correctly rounded
    except OverflowError:
        return None
    return near if math.isfinite(near) and Fraction(near) == value else None


def scaled_numbers(values, where: str, as_float64: bool = False) -> tuple[np.ndarray, int]:
    """``(floats, scale)`` for a flat list of rationals: the floats equal to them (scale 1) when
    there are such floats, else the integers ``D x`` for ``D`` the least common multiple of the
    denominators (one line when one has no float64); with ``as_float64``, the nearest floats."""
    exact = [_float(v) for v in values]
    if all(v is not None for v in exact):
        return np.array(exact, dtype=np.float64), 1
    if as_float64:
        try:
            near = np.array([float(v) for v in values], dtype=np.float64)
        except OverflowError:
            near = np.array([np.inf])
        if not np.all(np.isfinite(near)):
            raise FileFormatError(f"{where} holds a number past the float64 range (about 1.8e308)")
        return near, 1
    scale = math.lcm(*(v.denominator for v in values))
    out, _ = _scaled_row(list(values), scale, where)
    return np.array(out, dtype=np.float64), scale


def _short(value) -> str:
    text = str(value)
    return text if len(text) <= 40 else f"a number of {len(text)} digits"


def _lines(path, limits: ReadLimits):
    """``(line number, cells)`` of every line with numbers (the header and comments left out)."""
    import io

    line_limit = LINE_BYTES_PER_COLUMN * limits.max_dim
    max_entries = limits.max_array_bytes // 8
    entries, number, first = 0, 0, True
    with open_array_file(path, limits) as (raw, _):
        handle = io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
        while True:
            try:
                line = handle.readline(line_limit + 1)
            except UnicodeDecodeError:
                raise FileFormatError(f"{path} line {number + 1} is not UTF-8 text") from None
            if not line:
                return
            number += 1
            if len(line) > line_limit:
                raise LimitError(
                    f"{path} line {number} is longer than {line_limit} characters "
                    f"({LINE_BYTES_PER_COLUMN} per column of --max-dim {limits.max_dim}; raise --max-dim)"
                )
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.count(",") >= limits.max_dim:
                raise LimitError(
                    f"{path} line {number} has {line.count(',') + 1} columns, past the limit of "
                    f"{limits.max_dim} (raise it with --max-dim)"
                )
            cells = line.split(",")
            if first and all(_is_name(c) for c in cells):
                first = False
                continue  # a header: every cell a name
            first = False
            entries += len(cells)
            if entries > max_entries:
                raise LimitError(
                    f"{path} holds more than {max_entries} numbers, past the limit of "
                    f"{limits.max_array_bytes} bytes as float64 (raise it with --max-array-bytes)"
                )
            yield number, cells


def _is_name(cell: str) -> bool:
    cell = cell.strip()
    if not cell or _NON_FINITE.fullmatch(cell) or _RATIO.fullmatch(cell):
        return False
    match = _DECIMAL.fullmatch(cell)
    return match is None or not (match.group(2) or match.group(3))


def _row(number: int, cells: list[str], path) -> list[Fraction]:
    out = []
    for column, cell in enumerate(cells):
        try:
            out.append(parse_number(cell, f"{path} line {number} column {column + 1}"))
        except ValueError as exc:
            if isinstance(exc, InputError):
                raise
            raise FileFormatError(
                f"{path} line {number} column {column + 1} holds {cell.strip()[:40]!r}, a non-number; give "
                "comma-separated numbers (decimals or p/q), with at most one header line of names"
            ) from None
    return out


def read_csv(
    path, limits: ReadLimits = DEFAULT_READ_LIMITS, *, as_float64: bool = False
) -> tuple[np.ndarray, int, bool]:
    """``(array, scale, rounded)``: the rows of a comma-separated file as float64, equal to the numbers
    written times ``scale`` (see the module docstring); ``rounded``: with ``as_float64``, some
    decimal was read as its nearest float64.  Rows are kept as floats; only a file with
    a number that no float64 equals is read a second time, to multiply every number by the scale."""
    rows, width, scale, inexact = [], None, 1, False
    for number, cells in _lines(path, limits):
        row = _row(number, cells, path)
        if width is not None and len(row) != width:
            raise ShapeError(
                f"{path} is ragged: line {number} has {len(row)} values where the rows before have {width}; "
                "every row needs the same count"
            )
        width = len(row)
        floats = [_float(v) for v in row]
        if any(v is None for v in floats):
            inexact = True
            if as_float64:
                floats, _ = scaled_numbers(row, f"{path} line {number}", as_float64=True)
        scale = math.lcm(scale, *(v.denominator for v in row))
        rows.append(np.array([np.nan if v is None else v for v in floats], dtype=np.float64))
    if not rows:
        return np.zeros((0, 0)), 1, False
    if not inexact or as_float64:
        return np.stack(rows), 1, inexact
    out = np.empty((len(rows), width))
    for k, (number, cells) in enumerate(_lines(path, limits)):
        out[k], _ = _scaled_row(_row(number, cells, path), scale, f"{path} line {number}")
    return out, scale, False


def _scaled_row(row: list[Fraction], scale: int, where: str):
    out = []
    for column, v in enumerate(row):
        whole = _float(v * scale)
        if whole is None:
            raise FileFormatError(
                f"{where} column {column + 1}: the numbers' common denominator is {_short(scale)}, and this "
                f"number times it, {_short(v * scale)}, has no float64; write fewer digits, or give "
                "--as-float64 to read every decimal as its nearest float64"
            )
        out.append(whole)
    return out, scale
