"""Numbers read from files become float64 only when the conversion is exact.

The kernel computes with the exact value of every float64, so a reader must hand it floats
equal to the numbers stored.  Most stored dtypes widen exactly: booleans, integers of at most
32 bits, float16, bfloat16 (the upper half of a float32), float32 and float64 are all subsets
of float64.  Two do not: 64-bit integers past 2^53 in size (``2^53 + 3`` has no float64; it
would become ``2^53 + 4``, making a key that cannot win tie with one that can), and long
doubles.  For those :func:`exact_float64` compares every value with its float64 and refuses
the first that differs, naming it.  Text decimals are :mod:`lnproofs.io.csv_numbers`'s.
"""

from __future__ import annotations

import numpy as np

from ..kernel import FileFormatError

__all__ = ["exact_float64", "exact_json_array"]


def exact_float64(value, name: str):
    """``value`` unchanged when it is not a numeric array in need of a check, else its float64
    copy, equal to it entry by entry, or a FileFormatError naming the first entry no float64 equals."""
    try:
        arr = np.asarray(value)
    except Exception:  # ragged lists and the like: as_real_array names them
        return value
    if not (arr.dtype.kind in "iu" and arr.dtype.itemsize > 4 or arr.dtype.kind == "f" and arr.dtype.itemsize > 8):
        return value
    with np.errstate(invalid="ignore", over="ignore"):
        wide = arr.astype(np.float64)
        if arr.dtype.kind == "f":
            inexact = np.isfinite(arr) & (wide.astype(arr.dtype) != arr)
        else:  # a float64 at or past the dtype's top came from a value it cannot hold
            top = 2.0 ** (8 * arr.dtype.itemsize - (arr.dtype.kind == "i"))
            inexact = (wide >= top) | (wide.astype(arr.dtype) != arr)
    if np.any(inexact):
        bad = tuple(int(i) for i in np.argwhere(inexact)[0])
        shown = np.format_float_scientific(arr[bad], trim="-") if arr.dtype.kind == "f" else str(int(arr[bad]))
        raise FileFormatError(
            f"{name} holds {shown} at index {bad}, which no float64 equals; numbers are read "
            "exactly: give integers a float64 holds (every one up to 2^53 in size), or floats"
        )
    return wide


def exact_json_array(value, name: str) -> np.ndarray:
    """A float64 array of parsed JSON numbers (nested lists): JSON integers that no float64 holds are
    refused naming them (numpy would round them, alone or beside floats); floats are JSON's doubles."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif (
            isinstance(item, int)
            and not isinstance(item, bool)
            and abs(item) > 2**53
            and (abs(item) >= 2**1024 or int(float(item)) != item)
        ):
            shown = str(item) if item.bit_length() < 200 else f"of {item.bit_length()} bits"
            raise FileFormatError(
                f"{name} holds the integer {shown}, which no float64 equals; numbers are read "
                "exactly: give integers a float64 holds (every one up to 2^53 in size), or floats"
            )
    return np.asarray(value, dtype=np.float64)
