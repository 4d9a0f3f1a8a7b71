"""Reading array files within limits known before their data is read.

Every reader here learns how much it would read from the file's own headers (the ``.npy``
header, the zip directory of an ``.npz`` with the ``.npy`` header of the wanted member, the
``.safetensors`` header, the size of the file on disk) and refuses past the limits of
:class:`ReadLimits` with one line naming the limit and its flag, before allocating or
inflating anything.  An ``.npz`` archive gives only the members asked for; the others are
never inflated.  Nothing here converts numbers: the arrays come back in their stored dtype
(bfloat16, which numpy lacks, widened to float32, exactly).
"""

from __future__ import annotations

import json
import os
import struct
import zipfile
from dataclasses import dataclass

import numpy as np

from ..kernel import FileFormatError, LimitError

__all__ = ["ReadLimits", "DEFAULT_READ_LIMITS", "file_size", "read_npy", "read_npz", "npz_names", "read_safetensors"]

_MAX_HEADER = 100 << 20  # the safetensors format's own bound on its JSON header


@dataclass(frozen=True)
class ReadLimits:
    """``max_array_bytes``: one array once read, as float64 (8 bytes an entry) and as stored;
    a file on disk may hold at most ``file_factor`` times that; ``max_dim``: columns."""

    max_array_bytes: int = 1 << 30
    max_dim: int = 65_536
    file_factor: int = 8

    @property
    def max_file_bytes(self) -> int:
        return self.file_factor * self.max_array_bytes

    def check_array(self, shape, itemsize: int, where: str) -> None:
        """Refuse an array of ``shape`` (``itemsize`` bytes an entry as stored) past the limits."""
        if len(shape) >= 2 and shape[-1] > self.max_dim:
            raise LimitError(
                f"{where} has {shape[-1]} columns, past the limit of {self.max_dim} (raise it with --max-dim)"
            )
        entries = 1
        for n in shape:
            entries *= int(n)
        nbytes = entries * max(int(itemsize), 8)
        if nbytes > self.max_array_bytes:
            raise LimitError(
                f"{where} holds an array of shape {tuple(int(n) for n in shape)}, {nbytes} bytes as "
                f"float64, past the limit of {self.max_array_bytes} bytes (raise it with "
                "--max-array-bytes)"
            )

    def check_file(self, path, what: str = "") -> int:
        """The size of the file at ``path``, refused past ``max_file_bytes``."""
        size = file_size(path)
        if size > self.max_file_bytes:
            raise LimitError(
                f"{what or path} has {size} bytes, past the limit of {self.max_file_bytes} bytes for a "
                f"file ({self.file_factor} times --max-array-bytes; raise that)"
            )
        return size


DEFAULT_READ_LIMITS = ReadLimits()


def file_size(path) -> int:
    try:
        return os.stat(path).st_size
    except OSError as exc:
        raise FileFormatError(f"{path} could not be read ({exc.strerror})") from None


def _npy_header(handle, where: str):
    """``(shape, fortran_order, dtype, header_bytes)`` of the ``.npy`` data opened at ``handle``."""
    start = handle.tell()
    version = np.lib.format.read_magic(handle)
    read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, fortran, dtype = read(handle)
    if dtype.hasobject:
        raise FileFormatError(
            f"{where} holds Python objects (dtype {dtype}), which are never unpickled; save the array as numbers"
        )
    return shape, fortran, dtype, handle.tell() - start


def _entries(shape) -> int:
    count = 1
    for n in shape:
        count *= int(n)
    return count


def read_npy(path, limits: ReadLimits = DEFAULT_READ_LIMITS) -> np.ndarray:
    """The array of a ``.npy`` file, refused from its header past the limits, or when the file
    is shorter or longer than the header says."""
    size = limits.check_file(path)
    with open(path, "rb") as handle:
        shape, _, dtype, header = _npy_header(handle, str(path))
        limits.check_array(shape, dtype.itemsize, str(path))
        data = _entries(shape) * dtype.itemsize
        if header + data != size:
            raise FileFormatError(
                f"{path} has {size} bytes but its header promises {header + data} "
                f"(shape {tuple(shape)}, dtype {dtype}); is the file complete?"
            )
        handle.seek(0)
        return np.lib.format.read_array(handle, allow_pickle=False)


def _archive(path, limits: ReadLimits) -> zipfile.ZipFile:
    limits.check_file(path)
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise FileFormatError(
            f"{path} could not be read as .npz ({str(exc)[:80] or type(exc).__name__}); is the file complete?"
        ) from None


def npz_names(path, limits: ReadLimits = DEFAULT_READ_LIMITS) -> list[str]:
    """The array names of an ``.npz`` file, from its zip directory (nothing is inflated)."""
    with _archive(path, limits) as archive:
        return [name[:-4] for name in archive.namelist() if name.endswith(".npy")]


def _member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, path, limits: ReadLimits) -> np.ndarray:
    where = f"{path} array {info.filename[:-4]!r}"
    if info.file_size > limits.max_array_bytes + 65_536:
        raise LimitError(
            f"{where} inflates to {info.file_size} bytes, past the limit of {limits.max_array_bytes} "
            "bytes (raise it with --max-array-bytes)"
        )
    with archive.open(info) as handle:
        shape, _, dtype, header = _npy_header(handle, where)
        limits.check_array(shape, dtype.itemsize, where)
        if header + _entries(shape) * dtype.itemsize != info.file_size:
            raise FileFormatError(
                f"{where} holds {info.file_size} bytes but its header promises "
                f"{header + _entries(shape) * dtype.itemsize}; is the file complete?"
            )
    with archive.open(info) as handle:  # read_array needs the header again
        return np.lib.format.read_array(handle, allow_pickle=False)


def read_npz(path, names=None, limits: ReadLimits = DEFAULT_READ_LIMITS, *, pick: str | None = None) -> dict:
    """``{name: array}`` for the members ``names`` of an ``.npz`` file (all when None; missing ones
    are left out), each checked against the limits from its headers before it is inflated.  With
    ``pick``, just that member, or the only one: ``{pick: array}``; another content is one line."""
    with _archive(path, limits) as archive:
        members = {info.filename[:-4]: info for info in archive.infolist() if info.filename.endswith(".npy")}
        if pick is not None:
            if pick not in members and len(members) == 1:
                return {pick: _member(archive, next(iter(members.values())), path, limits)}
            if pick not in members:
                held = ", ".join(sorted(members)[:20]) or "none"
                raise FileFormatError(f"{path} has no array named {pick!r} (it holds: {held}); store it under {pick!r}")
            names = [pick]
        wanted = members if names is None else [n for n in names if n in members]
        return {name: _member(archive, members[name], path, limits) for name in wanted}


_SAFETENSORS_DTYPES = {
    "F64": "<f8",
    "F32": "<f4",
    "F16": "<f2",
    "BF16": "<u2",
    "I64": "<i8",
    "I32": "<i4",
    "I16": "<i2",
    "I8": "i1",
    "U64": "<u8",
    "U32": "<u4",
    "U16": "<u2",
    "U8": "u1",
    "BOOL": "?",
}


def _safetensors_header(path, size: int) -> tuple[dict, int]:
    with open(path, "rb") as handle:
        raw = handle.read(8)
        if len(raw) < 8:
            raise FileFormatError(f"{path} is too short for a .safetensors file; is the file complete?")
        length = struct.unpack("<Q", raw)[0]
        if length > min(_MAX_HEADER, size - 8):
            raise FileFormatError(
                f"{path} announces a header of {length} bytes in a file of {size}; is the file complete?"
            )
        try:
            header = json.loads(handle.read(length))
        except (ValueError, RecursionError):
            raise FileFormatError(f"{path} has a header that is not JSON; is it a .safetensors file?") from None
    if not isinstance(header, dict):
        raise FileFormatError(f"{path} has a header that is not a JSON object; is it a .safetensors file?")
    return {k: v for k, v in header.items() if k != "__metadata__"}, 8 + length


def read_safetensors(path, name: str, limits: ReadLimits = DEFAULT_READ_LIMITS) -> np.ndarray:
    """The tensor ``name`` (or the only one) of a ``.safetensors`` file, checked from the header:
    a known dtype, offsets inside the file that match the shape.  Only its bytes are read."""
    size = limits.check_file(path)
    tensors, start = _safetensors_header(path, size)
    if name not in tensors and len(tensors) == 1:
        name = next(iter(tensors))
    if name not in tensors:
        held = ", ".join(sorted(map(str, tensors))[:20]) or "none"
        raise FileFormatError(f"{path} has no array named {name!r} (it holds: {held}); store it under {name!r}")
    entry = tensors[name]
    where = f"{path} tensor {name!r}"
    try:
        dtype, shape, (begin, end) = entry["dtype"], [int(n) for n in entry["shape"]], entry["data_offsets"]
        begin, end = int(begin), int(end)
    except (TypeError, KeyError, ValueError):
        raise FileFormatError(f"{where} has a malformed header entry; is it a .safetensors file?") from None
    if dtype not in _SAFETENSORS_DTYPES:
        raise FileFormatError(f"{where} has dtype {dtype}; accepted: {', '.join(_SAFETENSORS_DTYPES)}")
    stored = np.dtype(_SAFETENSORS_DTYPES[dtype])
    if any(n < 0 for n in shape):
        raise FileFormatError(f"{where} has shape {shape}; is it a .safetensors file?")
    limits.check_array(shape, stored.itemsize, where)
    count = _entries(shape)
    if not 0 <= begin <= end or end - begin != count * stored.itemsize or start + end > size:
        raise FileFormatError(
            f"{where} has data offsets {[begin, end]} that do not match its shape {shape} "
            f"and dtype {dtype} inside a file of {size} bytes; is the file complete?"
        )
    with open(path, "rb") as handle:
        handle.seek(start + begin)
        data = np.frombuffer(handle.read(end - begin), dtype=stored).reshape(shape)
    if dtype == "BF16":  # the upper half of a float32: widened exactly
        data = (data.astype(np.uint32) << 16).view(np.float32)
    return data
