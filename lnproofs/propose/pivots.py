"""Pivot columns of a matrix in reduced row echelon form (used by the searches to pick
independent rows or columns; nothing here decides a status)."""

from __future__ import annotations

__all__ = ["pivot_columns"]


def pivot_columns(rref, rank: int, ncols: int) -> list[int]:
    """The pivot columns of a matrix in reduced row echelon form (any matrix indexed as
    ``rref[row, col]``, e.g. python-flint's) whose first ``rank`` rows are non-zero."""
    pivots, row = [], 0
    for col in range(ncols):
        if row < rank and rref[row, col] != 0:
            pivots.append(col)
            row += 1
    return pivots
