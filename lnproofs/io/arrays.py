"""Reading and validating the numeric arrays users give us.

Accepted files: ``.npy``; ``.npz`` (the named array); ``.csv`` (comma separated,
optional header line); ``.pt`` (a tensor, or a dict holding the named tensor; needs
torch); ``.safetensors`` (the named tensor, or the only one).  Every array is returned
as finite float64 numpy data or an :class:`~lnproofs.kernel.errors.InputError` is raised
with one line naming the file and what is accepted.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..kernel.arrays import as_real_array
from ..kernel.errors import FileFormatError, LimitError, ShapeError

__all__ = ["load_array", "as_real_array", "ACCEPTED_SUFFIXES"]

ACCEPTED_SUFFIXES = (".npy", ".npz", ".csv", ".pt", ".safetensors")


def _pick(mapping: dict, name: str, path: Path):
    if name in mapping:
        return mapping[name]
    if len(mapping) == 1:
        return next(iter(mapping.values()))
    names = ", ".join(sorted(map(str, mapping))) or "none"
    raise FileFormatError(f"{path} has no array named {name!r} (it holds: {names}); store it under {name!r}")


def _read_csv(path: Path, max_dim: int | None = None) -> np.ndarray:
    rows = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if max_dim is not None and line.count(",") >= max_dim:
                raise LimitError(f"{path} line {number} has {line.count(',') + 1} columns, past the limit of "
                                 f"{max_dim} (raise it with --max-dim)")
            cells = [c.strip() for c in line.split(",")]
            try:
                rows.append([float(c) for c in cells])
            except ValueError:
                if not rows and number == 1:
                    continue  # a header line
                raise FileFormatError(f"{path} line {number} holds a non-number ({line[:40]!r}); "
                                      "give comma-separated real numbers") from None
    lengths = {len(r) for r in rows}
    if len(lengths) > 1:
        raise ShapeError(f"{path} is ragged: rows have {sorted(lengths)} values; every row needs the same count")
    return np.array(rows, dtype=np.float64).reshape(len(rows), lengths.pop() if lengths else 0)


def _npy_header(path: Path, max_dim: int | None) -> None:
    """Refuse a ``.npy`` file of Python objects, or past ``max_dim`` columns, from its header alone."""
    with open(path, "rb") as handle:
        version = np.lib.format.read_magic(handle)
        read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, _, dtype = read(handle)
    if dtype.hasobject:
        raise FileFormatError(f"{path} holds Python objects (dtype {dtype}), which are never unpickled; "
                              "save the keys as a float array")
    if max_dim is not None and len(shape) >= 2 and shape[-1] > max_dim:
        raise LimitError(f"{path} has {shape[-1]} columns, past the limit of {max_dim} (raise it with --max-dim)")


def load_array(path: str | os.PathLike, *, name: str = "keys", ndim: int | None = 2,
               max_dim: int | None = None) -> np.ndarray:
    """Load the array ``name`` from ``path`` and validate it (see module docstring); with ``max_dim``,
    a file with more columns is refused (a ``.npy`` or ``.csv`` file before its data is read)."""
    path = Path(path)
    if not path.exists():
        raise FileFormatError(f"{path} does not exist; give a path to a {', '.join(ACCEPTED_SUFFIXES)} file")
    if path.is_dir():
        raise FileFormatError(f"{path} is a folder; give a {', '.join(ACCEPTED_SUFFIXES)} file")
    suffix = path.suffix.lower()
    if suffix not in ACCEPTED_SUFFIXES:
        raise FileFormatError(f"{path} has suffix {suffix or '(none)'!r}; accepted: {', '.join(ACCEPTED_SUFFIXES)}")
    try:
        if suffix == ".npy":
            _npy_header(path, max_dim)
            data = np.load(path, allow_pickle=False)
        elif suffix == ".npz":
            with np.load(path, allow_pickle=False) as archive:
                data = _pick({k: archive[k] for k in archive.files}, name, path)
        elif suffix == ".csv":
            data = _read_csv(path, max_dim)
            if ndim == 1 and data.ndim == 2 and 1 in data.shape:
                data = data.reshape(-1)  # one row or one column is a vector
        elif suffix == ".safetensors":
            from safetensors.numpy import load_file
            data = _pick(load_file(str(path)), name, path)
        else:  # .pt
            try:
                from torch_backend.files import load_pt_array
            except ImportError:
                raise FileFormatError(f"{path} is a PyTorch file and torch is not installed; "
                                      "install torch==2.13.0 or save the array as .npy") from None
            data = load_pt_array(path, lambda mapping: _pick(mapping, name, path))
    except (FileFormatError, ShapeError, LimitError):
        raise
    except Exception as exc:  # corrupt or truncated files
        reason = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
        raise FileFormatError(f"{path} could not be read as {suffix} ({reason}); is the file complete?") from None
    return as_real_array(data, name=f"{path}", ndim=ndim)
