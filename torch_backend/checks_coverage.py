"""Numeric checks of the coverage theorems: query sets of full row rank with the centre inside
realise every direction (through a real LayerNorm or RMSNorm layer), and the argmax depends only
on the direction of the query, also after an invertible rotation.

``A = U diag(sigma) B^T`` is built with a known pseudo-inverse ``B diag(1/sigma) U^T`` (``B``
orthonormal, inside ``1^perp`` for LayerNorm) and ``W_q = A diag(1/g)``; for a direction ``v``
the theorem's ``s`` and ``u = s A^+ v + u*`` give a normalised input whose query must be ``s v``.
Errors are normalised by the magnitudes whose rounding produces them, times the condition
number of ``A`` (the pseudo-inverse's own error scale).
"""

from __future__ import annotations

import math

import torch

from .geometry import divide
from .outcome import Outcome
from .sampling import orthonormal_hyperplane_basis, unit_vectors

__all__ = ["CHECKS", "ray_scale"]

MATRICES = 4  # random matrices A per family and width


def ray_scale(p: torch.Tensor, V: torch.Tensor, delta: torch.Tensor) -> torch.Tensor:
    """The theorem's ``s > 0`` with ``V s^2 + 2 p s = delta``, in the cancellation-free form of each case."""
    root = torch.sqrt(p * p + V * delta)
    return torch.where(p <= 0, (root - p) / V, delta / (p + root))


def _basis(n, d, centred, opts):
    if centred:
        return orthonormal_hyperplane_basis(n, d, **opts).T  # n x d
    q, _ = torch.linalg.qr(torch.randn((n, d), generator=opts["gen"], dtype=opts["dtype"], device=opts["device"]))
    return q


def _case(ctx, n, d, centred, sigma_range, depth, rows, rotate):
    """One matrix: the largest normalised error and the failures over ``rows`` directions."""
    opts = ctx.opts()
    dt, dev, gen = ctx.dtype, ctx.device, ctx.gen
    U, _ = torch.linalg.qr(torch.randn((d, d), generator=gen, dtype=dt, device=dev))
    lo, hi = sigma_range
    sigma = lo * (hi / lo) ** torch.rand(d, generator=gen, dtype=dt, device=dev)
    B = _basis(n, d, centred, opts)
    A = U @ torch.diag(sigma) @ B.T  # d x n, rows in 1^perp if centred
    pinv = B @ torch.diag(1 / sigma) @ U.T  # n x d
    g = 0.5 + torch.rand(n, generator=gen, dtype=dt, device=dev)
    W = A / g
    beta = 0.1 * torch.randn(n, generator=gen, dtype=dt, device=dev)
    u0 = (B @ unit_vectors(1, d, **opts)[0]) * math.sqrt(n) * depth  # the centre's preimage, inside
    b = -(A @ u0)
    b_q = b - W @ beta
    v = unit_vectors(rows, d, **opts)
    if rows >= 2 and depth > 0:  # adversarial: along and against b
        bn = b / torch.linalg.vector_norm(b)
        v[0], v[1] = bn, -bn
    u_star = -(b @ pinv.T)
    a = v @ pinv.T  # rows x n
    V, p = (a * a).sum(-1), a @ u_star
    delta = n - (u_star * u_star).sum()
    s = ray_scale(p, V, delta)
    u = s[:, None] * a + u_star
    if centred:
        z = ctx.layer_norm(u, (n,), g, beta, 0.0)
    else:
        z = ctx.rms_norm(u, (n,), g, 0.0) + beta
    q = z @ W.T + b_q
    target = s[:, None] * v
    scale = (z.abs() @ W.abs().T + b_q.abs() + target.abs()).amax(-1)
    if rotate:
        angles = 10000.0 ** (-torch.arange(d // 2, dtype=dt, device=dev) / max(d // 2, 1)) * 37.0
        c, sn = torch.cos(angles), torch.sin(angles)
        half = d // 2

        def rot(x):
            out = x.clone()
            out[:, :half] = c * x[:, :half] - sn * x[:, half : 2 * half]
            out[:, half : 2 * half] = sn * x[:, :half] + c * x[:, half : 2 * half]
            return out

        q, target = rot(q), rot(target)
    cond = float(sigma.max() / sigma.min())
    err = divide((q - target).abs().amax(-1), cond * scale)
    norm_err = divide(((u * u).sum(-1) - n).abs(), s * s * V + 2 * s * p.abs() + n - delta + n)
    failures = []
    if not bool(torch.isfinite(s).all()) or bool((s <= 0).any()):
        failures.append(f"the ray scale s is not positive and finite for {int((~(s > 0)).sum())} directions")
    cos = (q * target).sum(-1) / (torch.linalg.vector_norm(q, dim=-1) * torch.linalg.vector_norm(target, dim=-1))
    if bool((cos < 0.5).any()):
        failures.append(f"a realised query points away from its direction ({int((cos < 0.5).sum())} directions)")
    return max(float(err.max()), float(norm_err.max())), failures


def every_direction(ctx):
    outcomes = []
    families = (
        ("layernorm", True, (0.5, 2.0), 0.6, False),
        ("rmsnorm", False, (0.5, 2.0), 0.6, False),
        ("rotary layernorm", True, (0.5, 2.0), 0.6, True),
        ("centre near the boundary", True, (0.5, 2.0), 1 - 1e4 * ctx.u, False),
        ("ill-conditioned", False, (1e-3, 1.0), 0.9, False),
        ("centred", False, (0.5, 2.0), 0.0, False),
    )
    for family, centred, sig, depth, rotate in families:
        for width in ctx.widths():
            d = max(1, min(width - 1, width // 2))
            if rotate and d < 2:
                continue
            rows = max(8, ctx.rows(width) // MATRICES)
            worst, fails = 0.0, []
            for _ in range(MATRICES):
                e, f = _case(ctx, width, d, centred, sig, depth, rows, rotate)
                worst, fails = max(worst, e), fails + f
            outcomes.append(Outcome(family, width, rows * MATRICES, worst, tuple(dict.fromkeys(fails))))
    return outcomes


def argmax_direction(ctx):
    outcomes = []
    tol = ctx.tol()
    opts = ctx.opts()
    for width in ctx.widths():
        rows = ctx.rows(width)
        keys = torch.randn((16, width), generator=ctx.gen, dtype=ctx.dtype, device=ctx.device)
        q = torch.randn((rows, width), generator=ctx.gen, dtype=ctx.dtype, device=ctx.device)
        s = torch.exp(torch.empty((rows, 1), dtype=ctx.dtype, device=ctx.device).uniform_(-20, 20, generator=ctx.gen))
        S, Ss = q @ keys.T, (s * q) @ keys.T
        scale = q.abs() @ keys.abs().T
        err = divide((Ss - s * S).abs(), s * scale).amax(-1)
        top = torch.topk(S, 2, dim=-1)
        resolvable = (top.values[:, 0] - top.values[:, 1]) > 8 * tol * scale.amax(-1)
        moved = resolvable & (Ss.argmax(-1) != S.argmax(-1))
        fails = (f"the winner changed with the scale for {int(moved.sum())} queries",) if bool(moved.any()) else ()
        outcomes.append(Outcome("scale", width, rows, float(err.max()), fails))
        # a float cos/sin table (not exactly orthogonal): R (s R^{-1} v) = s v, blocks a with a + width // 2
        half = width // 2
        ca, sa, sb, cb = (
            torch.empty(half, dtype=ctx.dtype, device=ctx.device).uniform_(-1, 1, generator=ctx.gen) for _ in range(4)
        )
        det = ca * cb + sa * sb
        keep = det.abs() > 0.1
        ca, sa, sb, cb, det = (
            torch.where(keep, x, y)
            for x, y in (
                (ca, torch.ones_like(ca)),
                (sa, torch.zeros_like(sa)),
                (sb, torch.zeros_like(sb)),
                (cb, torch.ones_like(cb)),
                (det, torch.ones_like(det)),
            )
        )
        v = unit_vectors(rows, width, **opts)
        x, y = v[:, :half], v[:, half : 2 * half]
        ix, iy = (cb * x + sa * y) / det, (-sb * x + ca * y) / det  # R^{-1} v on the blocks
        sx, sy = s * ix, s * iy
        back = torch.cat([ca * sx - sa * sy, sb * sx + cb * sy, s * v[:, 2 * half :]], dim=-1)
        mx, my = (
            (cb.abs() * x.abs() + sa.abs() * y.abs()) / det.abs(),
            (sb.abs() * x.abs() + ca.abs() * y.abs()) / det.abs(),
        )
        bscale = s * torch.cat(
            [ca.abs() * mx + sa.abs() * my, sb.abs() * mx + cb.abs() * my, v[:, 2 * half :].abs()], dim=-1
        )
        rerr = divide((back - s * v).abs(), bscale + s * v.abs()).amax(-1)
        outcomes.append(Outcome("invertible rotation", width, rows, float(rerr.max())))
    return outcomes


CHECKS = {
    "coverage.argmax_direction": argmax_direction,
    "coverage.every_direction": every_direction,
}
