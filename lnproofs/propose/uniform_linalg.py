"""Exact linear algebra shared by the uniform-attention searches (python-flint).

Ranks are computed modulo a large prime first: a rank modulo a prime never exceeds the
rank over the rationals, so a full rank modulo the prime proves full rank, and rows whose
minor is non-zero modulo the prime are independent over the rationals.  Anything short of
full rank is confirmed by exact (fraction-free) integer elimination.
"""

from __future__ import annotations

from fractions import Fraction
from math import isqrt

from .pivots import pivot_columns

__all__ = [
    "PRIME",
    "pivot_rows",
    "full_column_rank",
    "kernel_vector",
    "rows_of",
    "kept",
    "normalise",
    "scale_into",
    "root_below",
]

#: the prime of the modular ranks (a Mersenne prime below 2^64: nmod_mat's word size)
PRIME = (1 << 61) - 1


def pivot_rows(matrix) -> list[int]:
    """Indices of a maximal independent set of rows of an fmpz_mat or fmpq_mat (exact).

    When the rank modulo :data:`PRIME` is already the largest possible, the modular pivots
    are taken (independent modulo the prime, hence over the rationals, and maximal); exact
    row reduction otherwise."""
    if matrix.nrows() == 0 or matrix.ncols() == 0:
        return []
    T = matrix.transpose()
    if hasattr(T, "nullspace"):  # fmpz_mat
        from flint import nmod_mat

        R, rank = nmod_mat(T, PRIME).rref()
        if int(rank) == min(T.nrows(), T.ncols()):
            return pivot_columns(R, int(rank), T.ncols())
    rref = T.rref()
    R, rank = rref[0], int(rref[-1])
    return pivot_columns(R, rank, T.ncols())


def full_column_rank(matrix) -> bool:
    """True when the integer matrix has rank equal to its column count (a full rank modulo
    :data:`PRIME` proves it; the exact rank decides otherwise)."""
    from flint import nmod_mat

    d = matrix.ncols()
    if matrix.nrows() < d:
        return False
    return int(nmod_mat(matrix, PRIME).rank()) == d or int(matrix.rank()) == d


def kernel_vector(matrix):
    """A non-zero rational vector ``x`` (a list of Fractions) with ``matrix x = 0``, or None
    when the integer matrix has full column rank.

    One vector, not a basis: on independent rows ``Dr`` (:func:`pivot_rows`, exact) take
    pivot columns ``c`` (modular pivots when the modular rank is full, exact ones otherwise),
    a free column ``j``, and solve the square system ``Dr[:, c] x_c = -Dr[:, j]``; then
    ``x_j = 1``.  A wide matrix (a few dozen rows of a few hundred columns) costs one small
    solve instead of a null space of hundreds of vectors."""
    from flint import nmod_mat

    d = matrix.ncols()
    rows = pivot_rows(matrix) if matrix.nrows() else []
    if len(rows) == d:
        return None
    x = [Fraction(0)] * d
    if not rows:
        x[0] = Fraction(1)
        return x
    Dr, r = rows_of(matrix, rows), len(rows)
    R, rank = nmod_mat(Dr, PRIME).rref()
    if int(rank) != r:
        rref = Dr.rref()
        R = rref[0]
    cols = pivot_columns(R, r, d)
    j = next(c for c in range(d) if c not in set(cols))
    square = Dr.transpose()  # columns of Dr as rows, to pick them
    P = rows_of(square, cols).transpose()
    rhs = rows_of(square, [j]).transpose()
    solution = P.solve(-rhs)
    x[j] = Fraction(1)
    for k, c in enumerate(cols):
        value = solution[k, 0]
        x[c] = Fraction(int(value.p), int(value.q))
    return x


def rows_of(matrix, rows):
    """The fmpz_mat of the chosen rows, in order."""
    from flint import fmpz_mat

    cols, entries = matrix.ncols(), matrix.entries()
    return fmpz_mat(len(rows), cols, [entries[r * cols + c] for r in rows for c in range(cols)])


def kept(holder, name: str, make):
    """``make()``, kept on ``holder`` (a head's query map, shared by the texts of a run) when
    there is one; a cache of this search, never read as a claim."""
    if holder is None:
        return make()
    if name not in vars(holder):
        setattr(holder, name, make())
    return getattr(holder, name)


def normalise(q):
    """``q`` divided by its largest absolute entry (exact; the zero vector stays)."""
    top = max(abs(x) for x in q)
    return [x / top for x in q] if top else q


def scale_into(q, query_set):
    """``q`` halved until ``||q|| <= radius`` when the set has a radius (exact)."""
    radius = getattr(query_set, "radius", None)
    if radius is None:
        return q
    R2 = Fraction(radius) ** 2
    norm2 = sum(x * x for x in q)
    while norm2 > R2:
        q = [x / 2 for x in q]
        norm2 /= 4
    return q


def root_below(x: Fraction) -> Fraction:
    """A positive rational ``t`` with ``t^2 <= x`` (``x > 0``), within about 2^-32 relative."""
    k = max(0, (x.denominator.bit_length() - x.numerator.bit_length()) // 2 + 34)
    return Fraction(isqrt((x.numerator << (2 * k)) // x.denominator), 1 << k)
