"""Reading arrays saved by PyTorch (``.pt``) for lnproofs' array loader, within a byte limit.

The file is a zip archive; its members' sizes are read from the zip directory and their sum
bounded before ``torch.load`` (``weights_only=True``: nothing is unpickled but tensors and
plain containers; ``mmap=True``: storages stay on disk).  A tensor is then refused when its view
reaches past its storage or holds more elements than its storage (a stride-0 expanded tensor of
a few bytes on disk may stand for gigabytes), or when its float64 copy would pass the limit.
Values keep their exact value: every real dtype torch stores widens to float64 exactly except
64-bit integers past 2^53, which are refused by :func:`lnproofs.kernel.as_real_array`.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import torch

from lnproofs.kernel import FileFormatError, LimitError

__all__ = ["load_pt_array"]


def _check_archive(path: Path, max_bytes: int) -> None:
    if not zipfile.is_zipfile(path):
        raise FileFormatError(
            f"{path} is not a PyTorch zip archive (the format torch.save writes since 1.6); "
            "save the tensor again with torch.save, or as .npy"
        )
    with zipfile.ZipFile(path) as archive:
        total = sum(info.file_size for info in archive.infolist())
    if total > 2 * max_bytes + (1 << 20):
        raise LimitError(
            f"{path} holds {total} bytes once unpacked, past the limit of {2 * max_bytes} bytes "
            "for a tensor file (twice --max-array-bytes; raise that)"
        )


def _check_view(tensor, path: Path, max_bytes: int) -> None:
    size, stride, offset = tuple(tensor.shape), tuple(tensor.stride()), tensor.storage_offset()
    stored = tensor.untyped_storage().nbytes() // max(tensor.element_size(), 1)
    count = tensor.numel()
    if count and (
        offset < 0 or any(s < 0 for s in stride) or offset + sum((n - 1) * s for n, s in zip(size, stride)) >= stored
    ):
        raise FileFormatError(
            f"{path} holds a tensor of shape {list(size)} whose view (strides {list(stride)}, "
            f"offset {offset}) reaches past its storage of {stored} elements"
        )
    if count > stored:
        raise LimitError(
            f"{path} holds a tensor of shape {list(size)} ({count} elements) made from a storage "
            f"of {stored} elements (strides {list(stride)}); save the values themselves "
            "(tensor.contiguous()) to use them"
        )
    if count * 8 > max_bytes:
        raise LimitError(
            f"{path} holds a tensor of shape {list(size)}, {count * 8} bytes as float64, past the "
            f"limit of {max_bytes} bytes (raise it with --max-array-bytes)"
        )


def load_pt_array(path: Path, pick, max_bytes: int = 1 << 30) -> np.ndarray:
    """The float64 numpy data of the tensor in ``path`` (``pick(mapping)`` chooses one from a dict)."""
    path = Path(path)
    _check_archive(path, max_bytes)
    obj = torch.load(str(path), map_location="cpu", weights_only=True, mmap=True)
    if isinstance(obj, dict):
        obj = pick(obj)
    if not isinstance(obj, torch.Tensor):
        raise FileFormatError(f"{path} holds a {type(obj).__name__}, not a tensor; save a tensor")
    obj = obj.detach()
    if obj.is_complex():
        raise FileFormatError(f"{path} holds complex numbers; only real numbers are accepted")
    _check_view(obj, path, max_bytes)
    if obj.dtype in (
        torch.int64,
        torch.uint64,
        torch.uint32,
        torch.int32,
        torch.int16,
        torch.int8,
        torch.uint8,
        torch.uint16,
        torch.bool,
    ):
        return obj.numpy().copy()  # integers keep their dtype: the exact check is as_real_array's
    if not obj.is_floating_point():
        raise FileFormatError(
            f"{path} holds a tensor of dtype {str(obj.dtype).replace('torch.', '')}; "
            "give real numbers (a float or integer dtype)"
        )
    return obj.to(torch.float64).numpy()
