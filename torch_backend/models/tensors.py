"""Named tensors of a model's weights files as float64 numpy arrays (for the output layer of
:mod:`lnproofs.models.vocab`), without building the model.

A safetensors file is read a tensor, or a range of rows of one, at a time: :func:`read_rows`
opens the file for those rows alone (``safe_open(...).get_slice(name)[a:b]`` reads only their
bytes) and closes it, so the pages of the file it touched are not left mapped in this process.  A
PyTorch pickle (``.bin``, ``.pt``) is read whole, then sliced.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .loading import torch_state_dict

__all__ = ["tensor_names", "read_tensor", "tensor_shape", "read_rows", "empty_float64"]


def _safetensors(path: Path) -> bool:
    return path.suffix.lower() == ".safetensors"


def tensor_names(files: list[Path]) -> dict[str, Path]:
    """name -> the file holding it, for every tensor of the weights files."""
    out = {}
    for f in files:
        if _safetensors(f):
            from safetensors import safe_open

            with safe_open(str(f), framework="pt") as handle:
                out.update({name: f for name in handle.keys()})
        else:
            out.update({name: f for name in torch_state_dict(f)})
    return out


def read_tensor(path: Path, name: str) -> np.ndarray:
    """The tensor ``name`` of the file ``path``, widened exactly to float64."""
    import torch

    if _safetensors(path):
        from safetensors import safe_open

        with safe_open(str(path), framework="pt") as handle:
            value = handle.get_tensor(name)
    else:
        value = torch_state_dict(path)[name]
    return value.detach().to(torch.float64).numpy()


def tensor_shape(path: Path, name: str) -> tuple[int, ...]:
    """The shape of the tensor ``name`` of the file ``path`` (a safetensors file: from its header alone)."""
    if _safetensors(path):
        from safetensors import safe_open

        with safe_open(str(path), framework="pt") as handle:
            return tuple(int(s) for s in handle.get_slice(name).get_shape())
    return tuple(torch_state_dict(path)[name].shape)


def empty_float64(shape: tuple[int, ...]) -> np.ndarray:
    """An uninitialised float64 array of ``shape`` for the rows :func:`read_rows` widens, allocated by
    torch, whose allocator asks the kernel for transparent huge pages: on this project's 2-core
    machine the first touch of a GiB of it took 1.5 s, against 5 to 7.5 s for a numpy array's."""
    import torch

    return torch.empty(tuple(int(s) for s in shape), dtype=torch.float64).numpy()


def read_rows(path: Path, name: str, start: int, stop: int, out: np.ndarray | None = None) -> np.ndarray:
    """Rows ``start..stop`` of the tensor ``name`` of the file ``path``, widened exactly to float64
    (from every floating dtype a model is saved in) into ``out`` (a float64 array of that shape,
    such as a view of the whole unembedding) or a new array; returns it.  Besides ``out`` only the
    rows as read are held: torch widens them in place of the copy, with no intermediate array."""
    import torch

    if _safetensors(path):
        from safetensors import safe_open

        with safe_open(str(path), framework="pt") as handle:
            value = handle.get_slice(name)[start:stop]
    else:
        value = torch_state_dict(path)[name][start:stop]
    if out is None:
        out = np.empty(tuple(value.shape), dtype=np.float64)
    torch.from_numpy(out).copy_(value)
    return out
