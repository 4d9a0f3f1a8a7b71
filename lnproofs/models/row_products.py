"""``X @ W.T + b`` whose every row depends on that row of ``X`` alone.

A BLAS product sums each entry in an order chosen by its blocking, and the blocking follows
the shape: the same row of ``X`` multiplied inside 9 rows or inside 30 can come out with
other last bits, and with a different number of threads too.  The keys and queries of a
text are such products of its captured norm outputs, so the same token at the same
position could get two keys that differ by rounding, and the exact engine would certify
the rounding ("selectable" by 1e-15).

:func:`row_products` removes the order from the arithmetic instead of fixing the order.
Each row of ``X`` (and of ``W``) is scaled by a power of two to below 1 and cut into
``SLICES`` integer slices of ``B`` bits, with ``2 B + ceil(log2 n) <= 53``: every dot
product of two slices is then a sum of integers below ``2^53`` whose partial sums are
integers below ``2^53`` too, so any BLAS computes it exactly, in any order, blocking,
thread count or fused multiply-add.  The slice products are combined entry by entry in a
fixed order (elementwise float64 operations), scaled back by the two powers of two and the
bias added.  The result is a fixed function of (the row, ``W``, ``b``): identical rows give
identical bytes in any batch, on any worker.  It is not the exactly rounded product: the
pieces of ``x`` and ``w`` below ``2^-3B`` of their row's largest entry and the slice pairs
past the fourth level are dropped, at most about ``n 2^-3B max|x| max|w|`` (``2^-57`` of it
at MiniLM's width), and the combination rounds a few times; measured on random rows it is
closer to the exact value than the BLAS product (``docs/scaling.md``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["SLICES", "slice_bits", "row_products", "weight_slices"]

SLICES = 3
_LEVELS = 4  # keep slice pairs (a, b) with a + b <= 4 (counting from 1): six products


def slice_bits(n: int) -> int:
    """Bits per slice for rows of length ``n``: the largest ``B`` with ``2 B + ceil(log2 n) <= 53``."""
    guard = max(1, int(n) - 1).bit_length()  # ceil(log2 n), at least 1
    return (53 - guard) // 2


def _slices(A: np.ndarray, bits: int) -> tuple[list[np.ndarray], np.ndarray]:
    """``A = 2^e_row * sum_s S_s 2^(-s B)`` (up to what is dropped); integer-valued slices."""
    top = np.max(np.abs(A), axis=1) if A.shape[1] else np.zeros(A.shape[0])
    _, exponent = np.frexp(top)  # top < 2^e, 0 for a zero row
    rest = np.ldexp(A, -exponent[:, None])  # |rest| < 1 in every row
    pieces = []
    for _ in range(SLICES):
        rest = np.ldexp(rest, bits)
        piece = np.trunc(rest)
        pieces.append(piece)
        rest = rest - piece  # exact: the fractional part
    return pieces, exponent


def _rowwise_fallback(X: np.ndarray, W: np.ndarray) -> np.ndarray:
    """Rows with a non-finite entry: numpy's pairwise sum of each row's products."""
    return np.stack([(row[None, :] * W).sum(axis=1) for row in X]) if len(X) else np.zeros((0, len(W)))


def weight_slices(W):
    """The slices of ``W`` that :func:`row_products` makes, for a caller that multiplies many
    ``X`` by the same ``W`` (a layer's keys, group after group: 6 ms of 18 at MiniLM's width)."""
    W = np.ascontiguousarray(W, dtype=np.float64)
    return _slices(W, slice_bits(W.shape[1]))


def row_products(X, W, b=None, *, slices=None) -> np.ndarray:
    """``X @ W.T + b`` (float64), row ``i`` a function of ``X[i]``, ``W`` and ``b`` only;
    ``slices``: :func:`weight_slices` of this ``W``, made earlier."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    W = np.ascontiguousarray(W, dtype=np.float64)
    squeeze = X.ndim == 1
    X = X.reshape(1, -1) if squeeze else X
    out = np.zeros((X.shape[0], W.shape[0]))
    finite = np.isfinite(X).all(axis=1)
    if np.isfinite(W).all() and X.shape[1] == W.shape[1]:
        if finite.any():
            out[finite] = _sliced(X[finite], W, slices)
        if not finite.all():
            out[~finite] = _rowwise_fallback(X[~finite], W)
    else:
        out = _rowwise_fallback(X, W)
    if b is not None:
        out = out + np.asarray(b, dtype=np.float64)
    return out[0] if squeeze else out


def _sliced(X: np.ndarray, W: np.ndarray, slices=None) -> np.ndarray:
    bits = slice_bits(X.shape[1])
    xs, ex = _slices(X, bits)
    ws, ew = _slices(W, bits) if slices is None else slices
    total = np.zeros((X.shape[0], W.shape[0]))
    for level in range(_LEVELS, 1, -1):  # least significant first
        part = np.zeros_like(total)
        for a in range(1, level):
            if a <= SLICES and level - a <= SLICES:
                part += xs[a - 1] @ ws[level - a - 1].T  # exact: integers below 2^53
        total += np.ldexp(part, -level * bits)
    return np.ldexp(total, ex[:, None] + ew[None, :])
