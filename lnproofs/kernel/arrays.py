"""Validation of numeric input: finite, real, rectangular float64 arrays.

Every array the kernel reads (keys, layer parameters, query sets) passes through
:func:`as_real_array`; anything else is an :class:`~lnproofs.kernel.errors.InputError`
with one line naming the array and what is accepted.
"""

from __future__ import annotations

import numpy as np

from .errors import FileFormatError, NonFiniteError, OptionError, ShapeError, require


def as_real_array(value, *, name: str = "array", ndim: int | None = None, allow_empty: bool = False) -> np.ndarray:
    """Validate ``value`` as a finite real float64 array with ``ndim`` dimensions."""
    try:
        arr = np.asarray(value)
    except Exception:  # ragged nested lists and the like
        raise ShapeError(f"{name} is not a rectangular numeric array") from None
    if arr.dtype == object:
        raise ShapeError(f"{name} is ragged or holds non-numbers; give a rectangular array of real numbers")
    if np.iscomplexobj(arr):
        raise FileFormatError(f"{name} holds complex numbers (dtype {arr.dtype}); only real numbers are accepted")
    if arr.dtype.kind not in "biuf":
        raise FileFormatError(f"{name} has dtype {arr.dtype}, not numbers; give real (integer or float) values")
    arr = arr.astype(np.float64)
    if ndim is not None and arr.ndim != ndim:
        want = {1: "a 1-D vector", 2: "a 2-D array (rows are vectors)"}.get(ndim, f"{ndim} dimensions")
        raise ShapeError(f"{name} has shape {arr.shape}; expected {want}")
    if not allow_empty and arr.size == 0:
        raise ShapeError(f"{name} is empty (shape {arr.shape}); give at least one value")
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        where = ", ".join(str(int(i)) for i in bad)
        raise NonFiniteError(f"{name} holds {arr[tuple(bad)]} at index ({where}); only finite numbers are accepted")
    return arr


def as_radius(radius, name: str = "query-ball radius", positive: bool = True) -> float:
    """Validate a positive bound (a query-ball radius, a box bound): a finite real number > 0
    (``positive=False``: >= 0, as an eps)."""
    try:
        value = float(radius) if not isinstance(radius, (bool, str)) else float("nan")
    except (TypeError, ValueError, OverflowError):
        value = float("nan")
    require(
        value == value and abs(value) != float("inf"),
        OptionError,
        f"{name} {radius!r} is not a number, or not finite; give a {'positive real number' if positive else 'number >= 0'}",
    )
    require(
        value > 0 or (value == 0 and not positive),
        OptionError,
        f"{name} = {radius!r} must be {'>' if positive else '>='} 0",
    )
    return value
