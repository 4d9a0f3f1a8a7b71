"""Numbers written as text, read exactly or refused, and ``.csv`` arrays read within limits.

lnproofs computes with the exact values of float64 numbers, so a decimal is accepted only when
some float64 equals it: ``0.5``, ``-3``, ``1.25e3``, or a float's exact expansion such as
``0.1000000000000000055511151231257827021181583404541015625``.  ``0.1`` is refused, naming the
float nearest to it: reading it as that float would certify keys the user did not write
(``0``, ``0.1``, ``0.2``, ``0.3`` are collinear; their nearest floats are not).  Each decimal is
compared with its float as an exact :class:`decimal.Decimal`.

A ``.csv`` file is read line by line: a line longer than ``LINE_BYTES_PER_COLUMN`` times the
column limit, more columns than the limit, or more numbers than the array limit allows are
refused before the rest is read.
"""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation

import numpy as np

from ..kernel import FileFormatError, LimitError, ShapeError
from .bounded import DEFAULT_READ_LIMITS, ReadLimits

__all__ = ["exact_number", "read_csv", "LINE_BYTES_PER_COLUMN"]

#: room for one number on a line: the exact decimal of any float64 has at most 767 significant digits
LINE_BYTES_PER_COLUMN = 1024


def exact_number(text: str, where: str) -> float:
    """The float64 equal to the decimal ``text`` (NaN and infinities pass through, for the caller to
    refuse by name); ValueError when ``text`` is not a number, FileFormatError when no float equals it."""
    value = float(text)
    if math.isfinite(value):
        try:
            same = Decimal(text) == Decimal(value)
        except InvalidOperation:
            raise ValueError(text) from None
        if not same:
            shown = text.strip() if len(text.strip()) <= 40 else text.strip()[:37] + "..."
            raise FileFormatError(
                f"{where} holds {shown}, which no float64 equals (the nearest is "
                f"{Decimal(value)}); numbers are read exactly: write a float's exact decimal "
                "(such as 0.5 or 1.25e3), or save the floats in a .npy file"
            )
    return value


def read_csv(path, limits: ReadLimits = DEFAULT_READ_LIMITS) -> np.ndarray:
    """The rows of a comma-separated file as float64 (an optional header line, ``#`` comments)."""
    limits.check_file(path)
    line_limit = LINE_BYTES_PER_COLUMN * limits.max_dim
    max_entries = limits.max_array_bytes // 8
    rows, entries, number = [], 0, 0
    with open(path, encoding="utf-8") as handle:
        while True:
            line = handle.readline(line_limit + 1)
            if not line:
                break
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
            entries += len(cells)
            if entries > max_entries:
                raise LimitError(
                    f"{path} holds more than {max_entries} numbers, past the limit of "
                    f"{limits.max_array_bytes} bytes as float64 (raise it with --max-array-bytes)"
                )
            try:
                row = [exact_number(c, f"{path} line {number} column {i + 1}") for i, c in enumerate(cells)]
            except FileFormatError:
                raise
            except ValueError:
                if not rows and number == 1:
                    entries = 0
                    continue  # a header line
                raise FileFormatError(
                    f"{path} line {number} holds a non-number ({line[:40]!r}); give comma-separated real numbers"
                ) from None
            rows.append(np.array(row, dtype=np.float64))
    lengths = {len(r) for r in rows}
    if len(lengths) > 1:
        raise ShapeError(f"{path} is ragged: rows have {sorted(lengths)} values; every row needs the same count")
    if not rows:
        return np.zeros((0, 0))
    return np.stack(rows)
