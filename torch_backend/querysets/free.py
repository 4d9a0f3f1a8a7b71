"""Free queries, a ball and a box (with a bias per key), as the numeric re-check sees them."""

from __future__ import annotations

import numpy as np
import torch

from lnproofs.kernel import CertificateFormatError

from ..geometry import safe_norm
from .base import NumericSet

__all__ = ["FreeSet", "BallSet", "BoxSet"]


class FreeSet(NumericSet):
    """Every query in R^d."""

    every_direction = True


class BallSet(NumericSet):
    """``||q|| <= R``: the free answers, witnesses inside the ball."""

    every_direction = True


class BoxSet(NumericSet):
    """Scores ``q . k_j + b_j`` over ``|q_l| <= B`` (or all of R^d when the bound is null)."""

    def __init__(self, query_set, keys, t: dict):
        super().__init__(query_set, keys, t)
        self.bound = query_set.bound
        bias = query_set.bias
        self.offsets = None if bias is None else torch.as_tensor(np.asarray(bias, dtype=np.float64), **t)
        if self.offsets is not None and self.offsets.shape != (self.n_keys,):
            raise CertificateFormatError(f"the bias has shape {tuple(self.offsets.shape)}; expected ({self.n_keys},)")

    def membership(self, W: torch.Tensor, tol: float) -> list:
        out = [None] * W.shape[0]
        if self.bound is not None:
            top = W.abs().amax(1)
            for r in torch.nonzero(top > self.bound * (1 + tol)).flatten().tolist():
                out[r] = f"its witness leaves the box |q_l| <= {self.bound!r} (largest entry {float(top[r]):.17g})"
        return out

    def sample(self, count: int, gen, aims: torch.Tensor, spread: float = 1.0) -> torch.Tensor:
        """In the box: uniform points and the corners ``B sign(v)`` (flipped here and there); without a
        bound, directions at scales from ``spread / 1000`` to ``1000 spread`` against the bias."""
        if self.bound is not None:
            q = (2 * torch.rand((count, self.d), generator=gen, **self.t) - 1) * self.bound
            if aims.numel():
                corner = self.bound * torch.sign(aims)
                flip = torch.where(torch.rand(aims.shape, generator=gen, **self.t) < 0.1, -1.0, 1.0).to(aims.dtype)
                q = torch.cat([q, corner, corner * flip])
            return q
        q = super().sample(count, gen, aims)
        if self.offsets is None:
            return q
        radius = spread * 10.0 ** (6 * torch.rand((q.shape[0], 1), generator=gen, **self.t) - 3)
        return q * radius / safe_norm(q)

    def support(self, v: torch.Tensor, vs: torch.Tensor, c: float, cs: float, tol: float) -> tuple[float, float]:
        if self.bound is None:
            return super().support(v, vs, c, cs, tol)
        return self.bound * float(v.abs().sum()) + c, self.bound * float(vs.sum()) + cs
