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

__all__ = ["tensor_names", "read_tensor", "tensor_shape", "read_rows"]


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


def read_rows(path: Path, name: str, start: int, stop: int) -> np.ndarray:
    """Rows ``start..stop`` of the tensor ``name`` of the file ``path``, widened exactly to float64.

    Widening is exact from every floating dtype a model is saved in: bfloat16 goes through float32
    (its upper half), float16 and float32 straight into the float64 array, which is the only
    allocation of the chunk's size besides the rows as read."""
    import torch

    if _safetensors(path):
        from safetensors import safe_open

        with safe_open(str(path), framework="pt") as handle:
            value = handle.get_slice(name)[start:stop]
    else:
        value = torch_state_dict(path)[name][start:stop]
    if value.dtype == torch.bfloat16:
        value = value.to(torch.float32)
    out = np.empty(tuple(value.shape), dtype=np.float64)
    out[...] = value.detach().numpy()
    return out
