"""CSV text as spreadsheets and course systems read it: one line per row, and a cell that a
spreadsheet would read as a formula (starting with ``= + - @``, a tab or a carriage return)
written with a leading apostrophe."""

from __future__ import annotations

import csv
import io

__all__ = ["csv_text"]


def _cell(value) -> str:
    text = str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def csv_text(rows) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for row in rows:
        writer.writerow([_cell(v) for v in row])
    return buffer.getvalue()
