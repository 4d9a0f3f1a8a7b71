"""Reading array files within limits known before their data is read.

Every reader here opens its file through :func:`lnproofs.io.files.open_input` (a regular file,
never a link, a FIFO or a device; its size compared with the limit before a byte is read), learns
how much it would read from the file's own headers (the ``.npy`` header, the zip directory of an
``.npz`` with the ``.npy`` header of the wanted member, the ``.safetensors`` header) and refuses
past the limits of :class:`ReadLimits` with one line naming the limit and its flag, before
allocating or inflating anything.  ``np.load`` is never called: a ``.npy`` array is read by
``numpy.lib.format.read_array`` only after its header has been checked.  An ``.npz`` archive gives only the members asked for; the others are
never inflated.  Nothing here converts numbers: the arrays come back in their stored dtype
(bfloat16, which numpy lacks, widened to float32, exactly).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import struct
import zipfile
from dataclasses import dataclass

import numpy as np

from ..kernel import FileFormatError, LimitError
from .files import open_input

__all__ = [
    "ReadLimits",
    "DEFAULT_READ_LIMITS",
    "open_array_file",
    "as_read_limits",
    "read_npy",
    "read_npz",
    "npz_names",
    "read_safetensors",
    "safetensors_entries",
]

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

    @property
    def file_note(self) -> str:
        return f"{self.file_factor} times --max-array-bytes; raise that"


DEFAULT_READ_LIMITS = ReadLimits()


def as_read_limits(limits) -> ReadLimits:
    """``limits`` as :class:`ReadLimits`: the defaults for None, the array limits of any object with
    ``max_array_bytes`` and ``max_dim`` (such as :class:`lnproofs.certificates.limits.Limits`)."""
    if limits is None or isinstance(limits, ReadLimits):
        return limits or DEFAULT_READ_LIMITS
    return ReadLimits(limits.max_array_bytes, limits.max_dim)


def open_array_file(path, limits: ReadLimits = DEFAULT_READ_LIMITS, what: str = ""):
    """:func:`lnproofs.io.files.open_input` with the limit of a file on disk: ``(handle, size)``."""
    return open_input(path, what, limits.max_file_bytes, limits.file_note)


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


def read_npy(
    path, limits: ReadLimits = DEFAULT_READ_LIMITS, *, sha256: str | None = None, what: str = "", mapped: bool = False
) -> np.ndarray:
    """The array of a ``.npy`` file, refused from its header past the limits, or when the file
    is shorter or longer than the header says.  With ``sha256``, the file's bytes (hashed from
    the same open file, before it is parsed) must have that SHA-256.  ``mapped``: the array is the
    file's pages, mapped read-only from the same open file (every process that maps it shares them)."""
    where = what or str(path)
    with open_array_file(path, limits, what) as (handle, size):
        if sha256 is not None:
            digest, left = hashlib.sha256(), size
            while left > 0 and (block := handle.read(min(left, 1 << 20))):
                digest.update(block)
                left -= len(block)
            if digest.hexdigest() != sha256:
                raise FileFormatError(f"{where} does not match the SHA-256 named for it (another or an edited file)")
            handle.seek(0)
        try:
            shape, fortran, dtype, header = _npy_header(handle, where)
        except FileFormatError:
            raise
        except ValueError as exc:
            raise FileFormatError(f"{where} could not be read as .npy ({str(exc)[:80]}); is it a .npy file?") from None
        limits.check_array(shape, dtype.itemsize, where)
        data = _entries(shape) * dtype.itemsize
        if header + data != size:
            raise FileFormatError(
                f"{where} has {size} bytes but its header promises {header + data} "
                f"(shape {tuple(shape)}, dtype {dtype}); is the file complete?"
            )
        handle.seek(0)
        if mapped and data:
            order = "F" if fortran else "C"
            return np.memmap(handle, dtype=dtype, mode="r", offset=header, shape=tuple(shape), order=order)
        return np.lib.format.read_array(handle, allow_pickle=False)


@contextlib.contextmanager
def _archive(path, limits: ReadLimits):
    with open_array_file(path, limits) as (handle, _):
        try:
            archive = zipfile.ZipFile(handle)
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            raise FileFormatError(
                f"{path} could not be read as .npz ({str(exc)[:80] or type(exc).__name__}); is the file complete?"
            ) from None
        with archive:
            yield archive


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


def _safetensors_header(path, handle, size: int) -> tuple[dict, int]:
    raw = handle.read(8)
    if len(raw) < 8:
        raise FileFormatError(f"{path} is too short for a .safetensors file; is the file complete?")
    length = struct.unpack("<Q", raw)[0]
    if length > min(_MAX_HEADER, size - 8):
        raise FileFormatError(f"{path} announces a header of {length} bytes in a file of {size}; is the file complete?")
    try:
        header = json.loads(handle.read(length))
    except (ValueError, RecursionError):
        raise FileFormatError(f"{path} has a header that is not JSON; is it a .safetensors file?") from None
    if not isinstance(header, dict):
        raise FileFormatError(f"{path} has a header that is not a JSON object; is it a .safetensors file?")
    return {k: v for k, v in header.items() if k != "__metadata__"}, 8 + length


def safetensors_entries(path) -> dict:
    """The header entries of a ``.safetensors`` file (``{name: {"dtype", "shape", "data_offsets"}}``,
    ``__metadata__`` left out), read alone: the tensors' data is not read, whatever the file's size."""
    with open_input(path) as (handle, size):
        return _safetensors_header(path, handle, size)[0]


def read_safetensors(path, name: str, limits: ReadLimits = DEFAULT_READ_LIMITS) -> np.ndarray:
    """The tensor ``name`` (or the only one) of a ``.safetensors`` file, checked from the header:
    a known dtype, offsets inside the file that match the shape.  Only its bytes are read."""
    with open_array_file(path, limits) as (handle, size):
        return _safetensors_tensor(path, handle, size, name, limits)


def _safetensors_tensor(path, handle, size: int, name: str, limits: ReadLimits) -> np.ndarray:
    tensors, start = _safetensors_header(path, handle, size)
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
    handle.seek(start + begin)
    raw = handle.read(end - begin)
    if len(raw) != end - begin:
        raise FileFormatError(f"{where} ends before its data; is the file complete?")
    data = np.frombuffer(raw, dtype=stored).reshape(shape)
    if dtype == "BF16":  # the upper half of a float32: widened exactly
        data = (data.astype(np.uint32) << 16).view(np.float32)
    return data
