"""Reading and validating the numeric arrays users give us.

Accepted files: ``.npy``; ``.npz`` (the named array); ``.csv`` (comma separated, decimals or
``p/q``, an optional header line of names); ``.pt`` (a tensor, or a dict holding the named tensor;
needs torch); ``.safetensors`` (the named tensor, or the only one).  Every file is opened as a
regular file (:mod:`lnproofs.io.files`) and read within the limits of
:class:`~lnproofs.io.bounded.ReadLimits`, checked from its headers before its data is read
(:mod:`lnproofs.io.bounded`), and every array is returned as finite float64 numpy data equal to
the stored numbers, or an :class:`~lnproofs.kernel.InputError` is raised with one line naming the
file and what is accepted (binary numbers no float64 equals: :mod:`lnproofs.io.exact`).

Decimal text is read as the rationals it denotes (:mod:`lnproofs.io.csv_numbers`):
:func:`read_numbers` gives ``(array, scale)``, the numbers times a positive integer scale (1 when
every number is a float64), for the inputs whose answers do not change when they are scaled;
:func:`load_array` is for every other input and refuses a file that would need a scale, in one
line.  With ``as_float64`` decimals are read as their nearest float64 instead.
"""

from __future__ import annotations

import dataclasses
import math
import os
from fractions import Fraction
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..kernel import FileFormatError, InputError, as_real_array
from .bounded import DEFAULT_READ_LIMITS, ReadLimits, open_array_file, read_npy, read_npz, read_safetensors
from .csv_numbers import read_csv
from .exact import exact_float64

__all__ = [
    "load_array",
    "read_numbers",
    "Numbers",
    "rescale",
    "common_scale",
    "load_token_ids",
    "as_real_array",
    "ACCEPTED_SUFFIXES",
    "ReadLimits",
    "DEFAULT_READ_LIMITS",
]

ACCEPTED_SUFFIXES = (".npy", ".npz", ".csv", ".pt", ".safetensors")


def _pick(mapping: dict, name: str, path: Path):
    if name in mapping:
        return mapping[name]
    if len(mapping) == 1:
        return next(iter(mapping.values()))
    names = ", ".join(sorted(map(str, mapping))) or "none"
    raise FileFormatError(f"{path} has no array named {name!r} (it holds: {names}); store it under {name!r}")


def _read(path: Path, name: str, ndim: int | None, limits: ReadLimits, as_float64: bool = False):
    """``(the stored array name of path in its stored dtype, scale, rounded)``, read within ``limits``."""
    suffix = path.suffix.lower()
    if suffix not in ACCEPTED_SUFFIXES:
        if not path.exists() and not path.is_symlink():
            raise FileFormatError(f"{path} does not exist; give a path to a {', '.join(ACCEPTED_SUFFIXES)} file")
        raise FileFormatError(f"{path} has suffix {suffix or '(none)'!r}; accepted: {', '.join(ACCEPTED_SUFFIXES)}")
    try:
        if suffix == ".npy":
            return read_npy(path, limits), 1, False
        if suffix == ".npz":
            return read_npz(path, limits=limits, pick=name)[name], 1, False
        if suffix == ".csv":
            data, scale, rounded = read_csv(path, limits, as_float64=as_float64)
            if ndim == 1 and data.ndim == 2 and 1 in data.shape:
                data = data.reshape(-1)  # one row or one column is a vector
            return data, scale, rounded
        if suffix == ".safetensors":
            return read_safetensors(path, name, limits), 1, False
        try:
            from torch_backend.files import load_pt_array
        except ImportError:
            raise FileFormatError(
                f"{path} is a PyTorch file and torch is not installed; install torch==2.13.0 or save the array as .npy"
            ) from None
        with open_array_file(path, limits):  # a regular file within the limit, before torch opens it
            pass
        return load_pt_array(path, lambda mapping: _pick(mapping, name, path), limits.max_array_bytes), 1, False
    except InputError:  # one line of ours already
        raise
    except Exception as exc:  # corrupt or truncated files
        reason = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
        raise FileFormatError(f"{path} could not be read as {suffix} ({reason}); is the file complete?") from None


def _limits(limits: ReadLimits | None, max_dim: int | None) -> ReadLimits:
    limits = DEFAULT_READ_LIMITS if limits is None else limits
    return limits if max_dim is None else dataclasses.replace(limits, max_dim=max_dim)


class Numbers(NamedTuple):
    """An array read from a file: ``values`` equal to the numbers written times ``scale`` (a positive
    integer); ``rounded``: some decimal was read as its nearest float64 (``as_float64``)."""

    values: np.ndarray
    scale: int = 1
    rounded: bool = False


def read_numbers(
    path: str | os.PathLike,
    *,
    name: str = "keys",
    ndim: int | None = 2,
    max_dim: int | None = None,
    limits: ReadLimits | None = None,
    as_float64: bool = False,
) -> Numbers:
    """The array ``name`` of ``path`` (see the module docstring), validated, equal to the numbers
    written times a positive integer scale (1 unless the file holds a decimal that no float64
    equals; with ``as_float64`` always 1, such decimals rounded to nearest)."""
    path = Path(path)
    data, scale, rounded = _read(path, name, ndim, _limits(limits, max_dim), as_float64)
    return Numbers(as_real_array(exact_float64(data, f"{path}"), name=f"{path}", ndim=ndim), scale, rounded)


def load_array(path: str | os.PathLike, *, name: str = "keys", **options) -> np.ndarray:
    """Load the array ``name`` from ``path`` and validate it (see module docstring); ``options`` are
    those of :func:`read_numbers` (``ndim``, ``max_dim``, ``limits``: the documented defaults when
    None, ``as_float64``).  A decimal that no float64 equals is refused in one line (with
    ``as_float64``: read as its nearest float)."""
    data, scale, _ = read_numbers(path, name=name, **options)
    if scale != 1:
        raise FileFormatError(
            f"{path} holds decimals that no float64 equals (read exactly they need the scale {_short(scale)}), "
            f"and the {name} are read as floats here, exactly: write each number's exact float decimal "
            "(such as 0.5), save the floats as .npy, or give --as-float64 where the command has it"
        )
    return data


def rescale(values: np.ndarray, scale: int, target: int, where: str) -> np.ndarray:
    """``values`` (numbers times ``scale``) as the same numbers times ``target``, a multiple of
    ``scale``: every product exact, or one line."""
    if target % scale:
        raise FileFormatError(
            f"{where} is read with the scale {_short(scale)}, which does not divide the scale "
            f"{_short(target)} its certificate states; is it the file the certificate was made for?"
        )
    factor = target // scale
    if factor == 1:
        return values
    out = values * float(factor) if factor < 2**53 else np.full(values.shape, np.inf)
    exact = np.isfinite(out) & (np.abs(out) < 2.0**53) & (values == np.round(values)) & (abs(factor) < 2**53)
    for index in zip(*np.nonzero(~exact)):  # the rare entries a product may have rounded: in integers
        whole = Fraction(float(values[index])) * factor
        near = float(whole) if abs(whole) < 2**1024 else np.inf
        if not np.isfinite(near) or Fraction(near) != whole:
            raise FileFormatError(
                f"{where} holds {values[index]!r} at index {tuple(map(int, index))}, which times the common "
                f"scale {_short(factor)} has no float64; write the numbers with fewer digits, or give "
                "--as-float64 to read every decimal as its nearest float64"
            )
        out[index] = near
    return out


def common_scale(parts) -> tuple[list[np.ndarray], int]:
    """``([arrays], scale)``: each ``(values, scale, where)`` of ``parts`` as its numbers times one
    common scale (the least common multiple), every product exact or one line."""
    target = math.lcm(*(scale for _, scale, _ in parts))
    return [rescale(values, scale, target, where) for values, scale, where in parts], target


def _short(value: int) -> str:
    text = str(value)
    return text if len(text) <= 30 else f"of {len(text)} digits"


def load_token_ids(path: str | os.PathLike, *, limits: ReadLimits | None = None) -> np.ndarray:
    """Token ids from ``path`` (array ``tokens`` of an archive) as int64, equal to the stored values:
    integers, or floats that are integers; anything else is refused naming the first such value."""
    path = Path(path)
    data, scale, _ = _read(path, "tokens", None, _limits(limits, None))
    data = np.asarray(data)
    if scale != 1:
        raise FileFormatError(
            f"token ids in {path} hold decimals that are not integers (such as 0.1); token ids are integers"
        )
    if data.dtype.kind == "f":
        data = as_real_array(data, name=f"token ids in {path}", allow_empty=True)
        fractional = np.flatnonzero(data != np.floor(data))
        if fractional.size:
            where = np.unravel_index(fractional[0], data.shape)
            raise FileFormatError(
                f"token ids in {path} hold {float(data[where])} at index {tuple(map(int, where))}; "
                "token ids are integers"
            )
    elif data.dtype.kind not in "biu":
        raise FileFormatError(f"token ids in {path} have dtype {data.dtype}; give integers")
    if data.dtype.kind == "u":
        outside = np.flatnonzero(data > np.uint64(np.iinfo(np.int64).max))
    elif data.dtype.kind == "f":
        outside = np.flatnonzero((data < 0) | (data >= 2.0**63))
    else:
        outside = np.flatnonzero(data < 0)
    if outside.size:
        where = np.unravel_index(outside[0], data.shape)
        raise FileFormatError(
            f"token ids in {path} hold {data[where]} at index {tuple(map(int, where))}; "
            "token ids are integers from 0 to the vocabulary size"
        )
    return data.astype(np.int64)
