"""Exact integer forms of float arrays, for fast exact linear algebra with python-flint.

Every finite double is ``m * 2**e`` with an integer ``m``.  A whole array is written as
integers times one common power of two, so exact products of float matrices are
integer matrix products (python-flint ``fmpz_mat``), scaled by a known power of two.
"""

from __future__ import annotations

from fractions import Fraction
from math import lcm

import numpy as np
from flint import fmpq, fmpq_mat, fmpz_mat

from .exact import to_fraction

__all__ = ["dyadic_integers", "integer_matrix", "pow2",
           "integer_vector_of_fractions", "fmpq_matrix", "fmpq_of", "fraction_of_fmpq"]


def dyadic_integers(values) -> tuple[list[int], int]:
    """Integers ``m`` and one exponent ``e`` with ``values == m * 2**e`` exactly (flattened).

    Each double is ``odd * 2**k`` (its 53-bit mantissa with the trailing zero bits removed, so
    a float32 value has at most 24 bits); ``e`` is the smallest ``k``.  When every ``m`` fits
    in 63 bits the shifts are done in int64, else one by one with Python integers."""
    arr = np.asarray(values, dtype=np.float64).reshape(-1)
    mant, expo = np.frexp(arr)  # arr = mant * 2**expo, 0.5 <= |mant| < 1
    ints = (mant * 2.0 ** 53).astype(np.int64)  # exact: 53-bit mantissas
    nonzero = ints != 0
    if not nonzero.any():
        return [0] * arr.size, 0
    zeros = np.frexp(np.where(nonzero, ints & -ints, 1).astype(np.float64))[1].astype(np.int64) - 1  # trailing 0 bits
    odd, expo = ints >> zeros, expo.astype(np.int64) - 53 + zeros  # exact: the shifted-out bits are 0
    base = int(expo[nonzero].min())
    shifts = np.where(nonzero, expo - base, 0)
    if int((shifts + 53 - zeros).max()) <= 62:  # |odd| < 2**(53 - zeros): every m fits in int64
        return (odd << shifts).tolist(), base
    return [int(m) << s for m, s in zip(odd.tolist(), shifts.tolist())], base


def integer_matrix(values):
    """``(M, e)`` with the 2-D float array ``values == M * 2**e`` exactly; ``M`` an fmpz_mat."""
    arr = np.asarray(values, dtype=np.float64)
    rows, cols = arr.shape
    ints, base = dyadic_integers(arr)
    return fmpz_mat(rows, cols, ints), base


def pow2(e: int):
    """``2**e`` as a python-flint rational."""
    return fmpq(1 << e) if e >= 0 else fmpq(1, 1 << -e)


def integer_vector_of_fractions(values) -> tuple[list[int], int]:
    """Integers ``m`` and a positive denominator ``D`` with ``values == m / D`` exactly."""
    fr = [v if type(v) is Fraction else Fraction(v) for v in values]
    den = lcm(*(v.denominator for v in fr)) if fr else 1
    return [v.numerator * (den // v.denominator) for v in fr], den


def fmpq_matrix(values):
    """The exact rational matrix (python-flint ``fmpq_mat``) of a float array (1-D: one row)."""
    M, e = integer_matrix(np.atleast_2d(np.asarray(values, dtype=np.float64)))
    return fmpq_mat(M) * pow2(e)


def fmpq_of(value):
    """A python-flint rational equal to a float, int, Fraction or ``"p/q"`` string."""
    f = to_fraction(value)
    return fmpq(f.numerator, f.denominator)


def fraction_of_fmpq(value) -> Fraction:
    return Fraction(int(value.p), int(value.q))
