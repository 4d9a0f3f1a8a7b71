"""Reading and validating the numeric arrays users give us.

Accepted files: ``.npy``; ``.npz`` (the named array); ``.csv`` (comma separated,
optional header line); ``.pt`` (a tensor, or a dict holding the named tensor; needs
torch); ``.safetensors`` (the named tensor, or the only one).  Every file is read within the
limits of :class:`~lnproofs.io.bounded.ReadLimits`, checked from its headers before its data
is read (:mod:`lnproofs.io.bounded`), and every array is returned as finite float64 numpy data
equal to the stored numbers, or an :class:`~lnproofs.kernel.InputError` is raised with
one line naming the file and what is accepted (numbers no float64 equals among them:
:mod:`lnproofs.io.exact`, :mod:`lnproofs.io.csv_numbers`).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np

from ..kernel import FileFormatError, LimitError, ShapeError, as_real_array
from .bounded import DEFAULT_READ_LIMITS, ReadLimits, read_npy, read_npz, read_safetensors
from .csv_numbers import read_csv
from .exact import exact_float64

__all__ = ["load_array", "load_token_ids", "as_real_array", "ACCEPTED_SUFFIXES", "ReadLimits", "DEFAULT_READ_LIMITS"]

ACCEPTED_SUFFIXES = (".npy", ".npz", ".csv", ".pt", ".safetensors")


def _pick(mapping: dict, name: str, path: Path):
    if name in mapping:
        return mapping[name]
    if len(mapping) == 1:
        return next(iter(mapping.values()))
    names = ", ".join(sorted(map(str, mapping))) or "none"
    raise FileFormatError(f"{path} has no array named {name!r} (it holds: {names}); store it under {name!r}")


def _read(path: Path, name: str, ndim: int | None, limits: ReadLimits):
    """The stored array ``name`` of ``path``, in its stored dtype, read within ``limits``."""
    if not path.exists():
        raise FileFormatError(f"{path} does not exist; give a path to a {', '.join(ACCEPTED_SUFFIXES)} file")
    if path.is_dir():
        raise FileFormatError(f"{path} is a folder; give a {', '.join(ACCEPTED_SUFFIXES)} file")
    suffix = path.suffix.lower()
    if suffix not in ACCEPTED_SUFFIXES:
        raise FileFormatError(f"{path} has suffix {suffix or '(none)'!r}; accepted: {', '.join(ACCEPTED_SUFFIXES)}")
    try:
        if suffix == ".npy":
            return read_npy(path, limits)
        if suffix == ".npz":
            return read_npz(path, limits=limits, pick=name)[name]
        if suffix == ".csv":
            data = read_csv(path, limits)
            if ndim == 1 and data.ndim == 2 and 1 in data.shape:
                data = data.reshape(-1)  # one row or one column is a vector
            return data
        if suffix == ".safetensors":
            return read_safetensors(path, name, limits)
        try:
            from torch_backend.files import load_pt_array
        except ImportError:
            raise FileFormatError(
                f"{path} is a PyTorch file and torch is not installed; install torch==2.13.0 or save the array as .npy"
            ) from None
        return load_pt_array(path, lambda mapping: _pick(mapping, name, path), limits.max_array_bytes)
    except (FileFormatError, ShapeError, LimitError):
        raise
    except Exception as exc:  # corrupt or truncated files
        reason = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
        raise FileFormatError(f"{path} could not be read as {suffix} ({reason}); is the file complete?") from None


def _limits(limits: ReadLimits | None, max_dim: int | None) -> ReadLimits:
    limits = DEFAULT_READ_LIMITS if limits is None else limits
    return limits if max_dim is None else dataclasses.replace(limits, max_dim=max_dim)


def load_array(
    path: str | os.PathLike,
    *,
    name: str = "keys",
    ndim: int | None = 2,
    max_dim: int | None = None,
    limits: ReadLimits | None = None,
) -> np.ndarray:
    """Load the array ``name`` from ``path`` and validate it (see module docstring), within
    ``limits`` (the documented defaults when None; ``max_dim`` replaces their column limit)."""
    path = Path(path)
    data = _read(path, name, ndim, _limits(limits, max_dim))
    return as_real_array(exact_float64(data, f"{path}"), name=f"{path}", ndim=ndim)


def load_token_ids(path: str | os.PathLike, *, limits: ReadLimits | None = None) -> np.ndarray:
    """Token ids from ``path`` (array ``tokens`` of an archive) as int64, equal to the stored values:
    integers, or floats that are integers; anything else is refused naming the first such value."""
    path = Path(path)
    data = np.asarray(_read(path, "tokens", None, _limits(limits, None)))
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
