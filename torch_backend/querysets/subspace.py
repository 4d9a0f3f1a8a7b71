"""Queries in a subspace, ``q = W^T z``, as the numeric re-check sees them."""

from __future__ import annotations

import torch

from ..geometry import safe_norm
from ..sampling import unit_vectors
from .base import NumericSet, floats

__all__ = ["SubspaceSet"]


class SubspaceSet(NumericSet):
    """``q = W^T z`` (optionally ``||q|| <= R``); a result's ``z`` makes its query."""

    def __init__(self, query_set, keys, t: dict):
        super().__init__(query_set, keys, t)
        self.W = torch.as_tensor(query_set.matrix, **t)  # m x d

    def project(self, K: torch.Tensor) -> torch.Tensor:
        return K @ self.W.T

    def witness(self, result: dict) -> torch.Tensor | None:
        z = result.get("z")
        if z is None:
            return super().witness(result)
        return torch.as_tensor(floats(z, self.W.shape[0], f"key {result['index']} z"), **self.t) @ self.W

    def stated(self, result: dict, q: torch.Tensor, scale: float, tol: float) -> str | None:
        return None if result.get("z") is None else self._differs(result, q, scale, tol, "W^T z")

    def sample(self, count: int, gen, aims: torch.Tensor, spread: float = 1.0) -> torch.Tensor:
        opts = {"gen": gen, **self.t}
        z = unit_vectors(count, self.W.shape[0], **opts)
        if aims.numel():
            za = aims @ self.W.T
            z = torch.cat([z, za, za + 0.1 * safe_norm(za) * unit_vectors(za.shape[0], za.shape[1], **opts)])
        q = z @ self.W
        return q if self.radius is None else q * (self.radius / safe_norm(q).clamp_min(1e-300))
