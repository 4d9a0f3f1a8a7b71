"""Integer forms of float key arrays built in numpy limbs, for the uniform-attention searches.

The kernel writes a float array as integers times one power of two
(:func:`lnproofs.kernel.integer_matrix`); for keys computed in float64 (53-bit
mantissas over more than 9 binary orders of magnitude, as most heads' keys are) that takes a
Python shift per entry, and the key differences
(:func:`lnproofs.kernel.difference_matrix`) a Python subtraction per entry: a
fifth of a MiniLM corpus run, where every head of every text asks for them.  Here the same
integers are cut into 62-bit limbs in numpy (``|m| * 2**s`` = the sum of ``limb_k * 2**(62 k)``),
each limb one python-flint matrix of machine integers.  The differences, which the searches
read, are cut into 52-bit float limbs instead and subtracted limb by limb in numpy (no
integer product, and the keys themselves only when asked for): about 0.3 ms for a head of
29 keys of width 32, where the kernel's function takes about 0.7 ms.  The results equal the kernel's, entry for entry
(tests/test_integer_keys.py compares them); nothing here is trusted: it only builds the
matrices the searches work on.
"""

from __future__ import annotations

import numpy as np

__all__ = ["FLOAT_LIMB", "integer_keys", "key_differences"]

#: bits per limb: a limb times a sign fits a signed 64-bit integer
LIMB = 62


def integer_keys(values):
    """``(K, e)``: the fmpz_mat ``K`` and exponent ``e`` with ``values == K * 2**e`` exactly, the same
    pair as :func:`lnproofs.kernel.integer_matrix` gives (``e``: the least exponent of the
    53-bit mantissas of the non-zero entries; 0 when every entry is zero)."""
    from flint import fmpz_mat

    arr = np.asarray(values, dtype=np.float64)
    rows, cols = arr.shape
    mant, expo = np.frexp(arr.reshape(-1))
    ints = (mant * 2.0**53).astype(np.int64)  # exact: 53-bit mantissas
    expo = expo.astype(np.int64) - 53
    nz = ints != 0
    if not nz.any():
        return fmpz_mat(rows, cols), 0
    base = int(expo[nz].min())
    shift = np.where(nz, expo - base, 0)
    sign, mag = np.sign(ints), np.abs(ints).astype(np.uint64)  # |m| < 2**53
    total = fmpz_mat(rows, cols)
    for k in range(-(-int((shift + 53).max()) // LIMB)):  # limbs of the largest |m| * 2**s
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


def key_differences(keys, with_keys: bool = True):
    """``(D, K)`` as :func:`lnproofs.kernel.difference_matrix` gives them: the integer
    keys ``K`` (:func:`integer_keys`) and their differences ``K[1:] - K[0]``.  ``with_keys=False``
    gives ``(D, None)``: a search that reads only the differences skips building ``K``.

    The differences come from float limbs (:func:`_float_limbs`) when the keys' integers fit
    below ``2**1000``: each limb's differences are machine integers, one python-flint matrix
    each, and no integer product is needed; wider spreads take ``E K`` (``E`` the difference
    pattern) on the integer keys."""
    from flint import fmpz_mat

    arr = np.atleast_2d(np.asarray(keys, dtype=np.float64))
    N, d = arr.shape
    limbs = _float_limbs(arr)
    if limbs is None:
        K, _ = integer_keys(arr)
        E = fmpz_mat(max(N - 1, 0), N)  # row r: key r + 1 minus key 0
        for r in range(N - 1):
            E[r, 0], E[r, r + 1] = -1, 1
        return E * K, (K if with_keys else None)
    D = fmpz_mat(max(N - 1, 0), d)
    for k, part in enumerate(limbs):
        diff = part[1:] - part[0]  # exact: |entries| < 2**53
        if diff.any():
            D += fmpz_mat(N - 1, d, diff.astype(np.int64).ravel().tolist()) * (1 << (FLOAT_LIMB * k))
    return D, (integer_keys(arr)[0] if with_keys else None)


#: bits per float limb: a limb is an integer below 2**52, exact in float64, and so is the
#: difference of two limbs (below 2**53)
FLOAT_LIMB = 52


def _float_limbs(arr):
    """Float arrays ``L_k`` of integers below ``2**52`` in absolute value with
    ``arr == 2**e * sum_k L_k 2**(52 k)`` exactly (``e`` as in :func:`integer_keys`), or None
    when ``|arr| / 2**e`` reaches ``2**1000`` (the scaled values would leave the float range).

    Every step is exact: scaling by a power of two (no overflow below ``2**1000``, and the
    scaled values are integers: ``e`` is the lowest bit of every mantissa); ``floor`` of
    ``|v| 2**-52`` (a power-of-two scaling, then an integer part); ``|v| - hi 2**52`` is an
    integer below ``2**52`` made of bits of ``|v|``, so it is a float and the subtraction
    returns it exactly; the signs multiply integers below ``2**52``."""
    if not np.isfinite(arr).all():  # not integers at all: the integer road says what it does
        return None
    mant, expo = np.frexp(arr)
    nz = mant != 0
    if not nz.any():
        return []
    base = int(expo[nz].min()) - 53
    if int(expo[nz].max()) - base >= 1000:
        return None
    v = np.ldexp(arr, -base)
    sign, v = np.sign(v), np.abs(v)
    limbs = []
    while True:
        hi = np.floor(np.ldexp(v, -FLOAT_LIMB))
        limbs.append((v - np.ldexp(hi, FLOAT_LIMB)) * sign)
        if not hi.any():
            return limbs
        v = hi
