"""Numeric checks of the RMSNorm ball theorems and of the rotary relative-position identity,
on a real RMSNorm layer (``ctx.rms_norm``) and on rotations built in the checked dtype.

Errors are normalised by the magnitudes whose rounding produces them (see
:mod:`torch_backend.tolerances`).
"""

from __future__ import annotations

import math

import torch

from .geometry import safe_norm
from .sampling import unit_vectors
from .sweep import sweep

__all__ = ["CHECKS"]

POSITIVE_EPS = (1e-12, 1e-6, 1e-2, 1.0, 100.0)


def interior(ctx):
    tol = ctx.tol()

    def measure(x, a, b, eps):
        n = x.shape[-1]
        keep = x.abs().amax(-1) > 0
        x = x[keep]
        z = ctx.rms_norm(x, (n,), None, eps)
        S = (x * x).sum(-1)
        predicted = n * S / (S + n * eps)
        radius2 = (z * z).sum(-1)
        err = (radius2 - predicted).abs() / n
        outside = radius2 > n * (1 + tol)
        return err, ({"an output lies outside the ball of radius sqrt(n)": int(outside.sum())} if outside.any() else {})

    return sweep(ctx, [(None, eps) for eps in POSITIVE_EPS], measure)


def ball_image(ctx):
    from .outcome import Outcome

    outcomes = []
    for width in ctx.widths():
        rows = ctx.rows(width)
        worst = 0.0
        for eps in POSITIVE_EPS:
            u = unit_vectors(rows, width, **ctx.opts())
            depth = torch.rand((rows, 1), generator=ctx.gen, dtype=ctx.dtype, device=ctx.device) * 0.99
            u = u * math.sqrt(width) * depth  # |u| < sqrt(n)
            s = torch.sqrt(width * eps / (width - (u * u).sum(-1, keepdim=True)))
            z = ctx.rms_norm(s * u, (width,), None, eps)
            worst = max(worst, float(((z - u).abs().amax(-1) / math.sqrt(width)).max()))
        outcomes.append(Outcome("open ball", width, rows * len(POSITIVE_EPS), worst))
    return outcomes


def support(ctx):
    from .outcome import Outcome

    tol = ctx.tol()
    outcomes = []
    for width in ctx.widths():
        rows = ctx.rows(width)
        v = torch.randn((rows, width), generator=ctx.gen, dtype=ctx.dtype, device=ctx.device)
        norm = safe_norm(v)[:, 0]
        best = math.sqrt(width) * v / norm[:, None]
        attained = (v * best).sum(-1)
        err = (attained - math.sqrt(width) * norm).abs() / (math.sqrt(width) * norm)
        u = unit_vectors(rows, width, **ctx.opts()) * math.sqrt(width)
        u = u * torch.rand((rows, 1), generator=ctx.gen, dtype=ctx.dtype, device=ctx.device)
        above = (v * u).sum(-1) > math.sqrt(width) * norm * (1 + tol)
        fails = (f"a point of the ball exceeds sqrt(n)|v| ({int(above.sum())} samples)",) if above.any() else ()
        outcomes.append(Outcome("support", width, 2 * rows, float(err.max()), fails))
    return outcomes


def _rotation(angles: torch.Tensor) -> torch.Tensor:
    """Block-diagonal rotations (batch x 2m x 2m) from angles (batch x m)."""
    c, s = torch.cos(angles), torch.sin(angles)
    batch, m = angles.shape
    R = torch.zeros((batch, 2 * m, 2 * m), dtype=angles.dtype, device=angles.device)
    idx = torch.arange(m, device=angles.device)
    R[:, 2 * idx, 2 * idx] = c
    R[:, 2 * idx, 2 * idx + 1] = -s
    R[:, 2 * idx + 1, 2 * idx] = s
    R[:, 2 * idx + 1, 2 * idx + 1] = c
    return R


def rotary_relative(ctx):
    from .outcome import Outcome

    outcomes = []
    for width in ctx.widths():
        m = max(1, width // 2)
        rows = max(16, ctx.rows(width) // 8)
        theta = 10000.0 ** (-torch.arange(m, dtype=ctx.dtype, device=ctx.device) / m)
        i = torch.randint(0, 512, (rows, 1), generator=ctx.gen, device=ctx.device).to(ctx.dtype)
        j = torch.randint(0, 512, (rows, 1), generator=ctx.gen, device=ctx.device).to(ctx.dtype)
        Ri, Rj, Rd = _rotation(i * theta), _rotation(j * theta), _rotation((j - i) * theta)
        # angles up to 512 rad: the rounding of p * theta and of cos/sin scales with the angle
        scale = 1.0 + 512.0
        err = (Ri.transpose(1, 2) @ Rj - Rd).abs().amax(dim=(1, 2)) / scale
        outcomes.append(Outcome("block rotations", width, rows, float(err.max())))
    return outcomes


CHECKS = {
    "rmsnorm.interior": interior,
    "rmsnorm.ball_image": ball_image,
    "rmsnorm.support": support,
    "rotary.relative": rotary_relative,
}
