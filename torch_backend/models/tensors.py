"""Named tensors of a model's weights files as float64 numpy arrays (for the output layer of
:mod:`lnproofs.models.vocab`), without building the model."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .loading import torch_state_dict

__all__ = ["tensor_names", "read_tensor"]


def tensor_names(files: list[Path]) -> dict[str, Path]:
    """name -> the file holding it, for every tensor of the weights files."""
    out = {}
    for f in files:
        if f.suffix.lower() == ".safetensors":
            from safetensors import safe_open

            with safe_open(str(f), framework="pt") as handle:
                out.update({name: f for name in handle.keys()})
        else:
            out.update({name: f for name in torch_state_dict(f)})
    return out


def read_tensor(path: Path, name: str) -> np.ndarray:
    """The tensor ``name`` of the file ``path``, widened exactly to float64."""
    import torch

    if path.suffix.lower() == ".safetensors":
        from safetensors import safe_open

        with safe_open(str(path), framework="pt") as handle:
            value = handle.get_tensor(name)
    else:
        value = torch_state_dict(path)[name]
    return value.detach().to(torch.float64).numpy()
