"""LayerNorm geometry written directly from the mathematics, in torch.

These are the reference formulas the numeric checks compare real layers against:
the projection P = I - J/n, the radial maps g of both eps conventions (with norms
computed after scaling by the largest entry, so 1e-30 and 1e30 inputs do not
underflow or overflow), and the textbook "std" LayerNorm.
"""

from __future__ import annotations

import math

import torch

__all__ = [
    "projection_matrix",
    "center",
    "safe_norm",
    "layer_norm_std",
    "normaliser_torch",
    "normaliser_std",
    "divide",
]


def projection_matrix(n: int, *, dtype, device) -> torch.Tensor:
    """P = I - J/n with J the all-ones matrix."""
    return torch.eye(n, dtype=dtype, device=device) - torch.full((n, n), 1.0 / n, dtype=dtype, device=device)


def center(x: torch.Tensor) -> torch.Tensor:
    """x - mean(x) 1, row by row."""
    return x - x.mean(dim=-1, keepdim=True)


def safe_norm(y: torch.Tensor) -> torch.Tensor:
    """Euclidean norm of each row (keepdim), computed as m * ||y / m|| with m the largest |entry|."""
    m = y.abs().amax(dim=-1, keepdim=True)
    safe = torch.where(m > 0, m, torch.ones_like(m))
    return m * torch.linalg.vector_norm(y / safe, dim=-1, keepdim=True)


def normaliser_torch(r: torch.Tensor, n: int, eps: float) -> torch.Tensor:
    """sqrt(r^2 + n eps), without forming r^2."""
    return torch.hypot(r, torch.full_like(r, math.sqrt(n * eps)))


def normaliser_std(r: torch.Tensor, n: int, eps: float) -> torch.Tensor:
    """r + eps sqrt(n)."""
    return r + eps * math.sqrt(n)


def layer_norm_std(x: torch.Tensor, normalized_shape, weight=None, bias=None, eps: float = 1e-5) -> torch.Tensor:
    """Textbook LayerNorm of the "std" convention: a (x - mean) / (std + eps) + b, biased std."""
    y = x - x.mean(dim=-1, keepdim=True)
    std = torch.sqrt((y * y).mean(dim=-1, keepdim=True))
    z = y / (std + eps)
    if weight is not None:
        z = z * weight
    if bias is not None:
        z = z + bias
    return z


def divide(num: torch.Tensor, den: torch.Tensor) -> torch.Tensor:
    """num / den, with 0/0 read as 0 (an exact zero residual) and x/0 as inf."""
    out = num / torch.where(den > 0, den, torch.ones_like(den))
    return torch.where(den > 0, out, torch.where(num == 0, torch.zeros_like(num), torch.full_like(num, math.inf)))
