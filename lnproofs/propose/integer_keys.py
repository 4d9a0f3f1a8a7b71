"""Integer forms of float key arrays built in numpy limbs, for the uniform-attention searches.

The kernel writes a float array as integers times one power of two
(:func:`lnproofs.kernel.dyadic.integer_matrix`); for keys computed in float64 (53-bit
mantissas over more than 9 binary orders of magnitude, as most heads' keys are) that takes a
Python shift per entry, and the key differences
(:func:`lnproofs.kernel.uniform_exact.difference_matrix`) a Python subtraction per entry: a
fifth of a MiniLM corpus run, where every head of every text asks for them.  Here the same
integers are cut into 62-bit limbs in numpy (``|m| * 2**s`` = the sum of ``limb_k * 2**(62 k)``),
each limb is one python-flint matrix of machine integers, and the differences are one integer
product: about a third less time.  The results equal the kernel's, entry for entry
(tests/test_integer_keys.py compares them); nothing here is trusted: it only builds the
matrices the searches work on.
"""

from __future__ import annotations

import numpy as np

__all__ = ["integer_keys", "key_differences"]

#: bits per limb: a limb times a sign fits a signed 64-bit integer
LIMB = 62


def integer_keys(values):
    """``(K, e)``: the fmpz_mat ``K`` and exponent ``e`` with ``values == K * 2**e`` exactly, the same
    pair as :func:`lnproofs.kernel.dyadic.integer_matrix` gives (``e``: the least exponent of the
    53-bit mantissas of the non-zero entries; 0 when every entry is zero)."""
    from flint import fmpz_mat

    arr = np.asarray(values, dtype=np.float64)
    rows, cols = arr.shape
    mant, expo = np.frexp(arr.reshape(-1))
    ints = (mant * 2.0 ** 53).astype(np.int64)                       # exact: 53-bit mantissas
    expo = expo.astype(np.int64) - 53
    nz = ints != 0
    if not nz.any():
        return fmpz_mat(rows, cols), 0
    base = int(expo[nz].min())
    shift = np.where(nz, expo - base, 0)
    sign, mag = np.sign(ints), np.abs(ints).astype(np.uint64)       # |m| < 2**53
    total = fmpz_mat(rows, cols)
    for k in range(-(-int((shift + 53).max()) // LIMB)):             # limbs of the largest |m| * 2**s
        # limb k of |m| * 2**s (bits 62k .. 62k + 61): |m| shifted by s - 62k, left or right;
        # numpy's unsigned shift keeps the low 64 bits, all the mask reads; by 64 or more: none
        low = shift - LIMB * k
        left = np.clip(low, 0, 63).astype(np.uint64)
        right = np.clip(-low, 0, 63).astype(np.uint64)
        part = np.where(low >= 64, np.uint64(0), np.where(low >= 0, mag << left, mag >> right))
        part = (part & np.uint64((1 << LIMB) - 1)).astype(np.int64) * sign
        if part.any():
            total += fmpz_mat(rows, cols, part.tolist()) * (1 << (LIMB * k))
    return total, base


def key_differences(keys):
    """``(D, K)`` as :func:`lnproofs.kernel.uniform_exact.difference_matrix` gives them: the integer
    keys ``K`` (:func:`integer_keys`) and their differences ``K[1:] - K[0]``, one integer product."""
    from flint import fmpz_mat

    K, _ = integer_keys(np.atleast_2d(np.asarray(keys, dtype=np.float64)))
    N = K.nrows()
    E = fmpz_mat(max(N - 1, 0), N)                                   # row r: key r + 1 minus key 0
    for r in range(N - 1):
        E[r, 0], E[r, r + 1] = -1, 1
    return E * K, K
