"""A loaded model: the bare transformer module, its config and family, and where it came from."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .families import Family

__all__ = ["LoadedModel"]


@dataclass(frozen=True)
class LoadedModel:
    """A bare transformer (no task head) ready to run, with where it came from."""

    module: Any  # a torch module: transformers' BertModel or GPT2Model
    config: Any
    family: Family
    path: Path
    dtype: str
    device: str
    weights_dtype: str

    @property
    def n_layers(self) -> int:
        return self.family.n_layers(self.config)

    @property
    def n_heads(self) -> int:
        return self.family.n_heads(self.config)

    @property
    def n_kv_heads(self) -> int:
        return self.family.n_kv_heads(self.config)

    @property
    def head_dim(self) -> int:
        return self.family.head_dim(self.config)

    @property
    def width(self) -> int:
        return self.family.width(self.config)

    @property
    def max_positions(self) -> int:
        return self.family.max_positions(self.config)

    def describe(self) -> dict:
        return {
            "path": str(self.path),
            "family": self.family.name,
            "placement": self.family.placement,
            "norm": self.family.norm,
            "positions": self.family.positions,
            "causal": self.family.causal,
            "n_layers": self.n_layers,
            "n_heads": self.n_heads,
            "n_kv_heads": self.n_kv_heads,
            "head_dim": self.head_dim,
            "width": self.width,
            "weights_dtype": self.weights_dtype,
            "compute_dtype": self.dtype,
        }
