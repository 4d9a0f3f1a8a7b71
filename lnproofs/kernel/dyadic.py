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


def mantissas(values) -> tuple[np.ndarray, np.ndarray]:
    """int64 arrays ``m`` and ``a`` with ``values == m * 2**a`` entry by entry, ``|m| < 2**53`` (flattened)."""
    mant, expo = np.frexp(np.asarray(values, dtype=np.float64).reshape(-1))  # 0.5 <= |mant| < 1
    return (mant * 2.0**53).astype(np.int64), expo.astype(np.int64) - 53  # exact: 53-bit mantissas


def dyadic_integers(values) -> tuple[list[int], int]:
    """Integers ``m`` and one exponent ``e`` with ``values == m * 2**e`` exactly (flattened)."""
    ints, expo = mantissas(values)
    nonzero = ints != 0
    if not nonzero.any():
        return [0] * len(ints), 0
    base = int(expo[nonzero].min())
    shifts = (expo - base).tolist()
    return [int(m) << s if m else 0 for m, s in zip(ints.tolist(), shifts)], base


def integer_matrix(values):
    """``(M, e)`` with the 2-D float array ``values == M * 2**e`` exactly; ``M`` an fmpz_mat
    (the same ``M`` and ``e`` as :func:`dyadic_integers`).

    Fast path: each double is ``odd * 2**k`` (its 53-bit mantissa without its trailing zero
    bits: a float32 value has at most 24 bits); when every ``odd * 2**(k - min k)`` fits in
    int64 the shifts are done in numpy, and the matrix is scaled by ``2**(min k - e)`` once."""
    arr = np.asarray(values, dtype=np.float64)
    ints, expo = mantissas(arr)
    nz = ints != 0
    low = expo + np.frexp(np.where(nz, ints & -ints, 1).astype(np.float64))[1] - 1  # each lowest set bit
    if nz.any() and int((expo[nz] + 53).max() - low[nz].min()) <= 62:
        base, least = int(expo[nz].min()), int(low[nz].min())  # base <= least
        odd = np.where(nz, (ints >> (low - expo)) << np.where(nz, low - least, 0), 0)  # each |entry| < 2**62
        return fmpz_mat(*arr.shape, odd.tolist()) * (1 << (least - base)), base
    ints, base = dyadic_integers(arr)
    return fmpz_mat(*arr.shape, ints), base


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
