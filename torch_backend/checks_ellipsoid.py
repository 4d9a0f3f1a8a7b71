"""Numeric checks of the eigen-structure theorems: principal axes, Riechers' form, the
secular equation and interlacing.  M = diag(a) P diag(a) is built here from its
definition; eigen-decompositions run in the requested dtype."""

from __future__ import annotations

import math

import torch

from .geometry import center, projection_matrix, safe_norm
from .outcome import Outcome
from .sampling import random_gains

__all__ = ["CHECKS"]

KINDS = ("mixed", "positive", "clustered", "equal")


def _cases(ctx, kinds=KINDS):
    """(kind, width, gains) for widths 2, 3, and the requested width (at most 256), several gains each."""
    for width in sorted({2, 3, min(ctx.width, 256)}):
        for kind in kinds:
            for _ in range(2):
                yield kind, width, random_gains(width, kind, **ctx.opts())


def _m(a):
    n = a.numel()
    return a[:, None] * projection_matrix(n, dtype=a.dtype, device=a.device) * a[None, :]


def principal_axes(ctx):
    acc = {}
    for kind, n, a in _cases(ctx):
        M = _m(a)
        lam, V = torch.linalg.eigh(M)
        lam, V = lam[1:], V[:, 1:]  # drop the zero eigenvalue (eigenvector along 1/a)
        norm_m = float(lam.abs().max())
        b = torch.randn((n,), generator=ctx.gen, dtype=ctx.dtype, device=ctx.device)
        x = torch.randn((max(64, ctx.samples // 16), n), generator=ctx.gen, dtype=ctx.dtype, device=ctx.device)
        z = ctx.layer_norm(x, (n,), a, b, 0.0)
        c = (z - b) @ V
        form = (c * c / (n * lam)).sum(-1)
        y = center(x)
        kappa = math.sqrt(n) * x.abs().amax(-1) / safe_norm(y)[:, 0]
        spread = safe_norm(z.abs() + b.abs())[:, 0] / safe_norm(z - b)[:, 0]
        err = float(((form - 1).abs() / ((1 + norm_m / float(lam.min())) * (1 + kappa + spread))).max())
        # extents: the point a * s_k with s_k = sqrt(n) P(a v_k) / ||P(a v_k)|| reaches v_k . (z - b) = sqrt(n lambda_k)
        p = center((a[:, None] * V).T)
        s = math.sqrt(n) * p / safe_norm(p)
        reach = ((a * s) * V.T).sum(-1)
        semi = torch.sqrt(n * lam)
        err = max(err, float(((reach.abs() - semi).abs() / math.sqrt(n * norm_m)).max()))
        fails = ()
        slack = ctx.tol(n) * math.sqrt(n * norm_m) * (1 + kappa + spread)[:, None]
        over = (c.abs() > semi + slack).any(dim=0)
        if bool(over.any()):
            fails = (f"a sampled output reaches beyond the semi-axis along axis {int(over.nonzero()[0])}",)
        key = (kind, n)
        cnt, worst, fl = acc.get(key, (0, 0.0, ()))
        acc[key] = (cnt + x.shape[0] + n - 1, max(worst, err), fl + fails)
    return [Outcome(k, n, c, w, f) for (k, n), (c, w, f) in acc.items()]


def riechers_form(ctx):
    acc = {}
    for kind, n, a in _cases(ctx):
        M = _m(a)
        lam, V = torch.linalg.eigh(M)
        lam, V = lam[1:], V[:, 1:]
        w = 1.0 / a
        P2 = torch.eye(n, dtype=ctx.dtype, device=ctx.device) - torch.outer(w, w) / (w @ w)
        R = P2 @ torch.diag(1.0 / (a * a)) @ P2
        mu = torch.linalg.eigvalsh(R)[1:]  # drop the zero eigenvalue (direction 1/a); ascending
        norm_m, norm_r = float(lam.max()), float(mu.max())
        lam_sorted = lam  # ascending lambda pairs with descending mu
        mu_pair = mu.flip(0)
        err = float(((lam_sorted * mu_pair - 1).abs() / (1 + norm_m / lam_sorted + norm_r / mu_pair)).max())
        # the axes: R is the pseudo-inverse of M on the hyperplane normal to 1/a, so R M = P2
        err = max(err, float((R @ M - P2).abs().max()) / (norm_r * norm_m))
        # semi-axes sqrt(n / mu) agree with sqrt(n lambda)
        err = max(
            err,
            float(
                (
                    (torch.sqrt(n / mu_pair) - torch.sqrt(n * lam_sorted)).abs()
                    / torch.sqrt(n * lam_sorted)
                    / (1 + norm_m / lam_sorted + norm_r / mu_pair)
                ).max()
            ),
        )
        key = (kind, n)
        cnt, worst = acc.get(key, (0, 0.0))
        acc[key] = (cnt + n - 1, max(worst, err))
    return [Outcome(k, n, c, w) for (k, n), (c, w) in acc.items()]


def secular_equation(ctx):
    acc = {}
    for kind, n, a in _cases(ctx, ("mixed", "positive", "clustered")):
        # the matrix identity diag(a) P diag(a) = diag(a)^2 - a a^T / n, with P applied as an operator
        D = torch.diag(a)
        lhs = a[:, None] * (D - D.mean(dim=0, keepdim=True))
        rhs = torch.diag(a * a) - torch.outer(a, a) / n
        err = float((lhs - rhs).abs().max()) / float((a * a).max())
        lam = torch.linalg.eigvalsh(rhs)[1:]
        a2 = (a * a)[None, :]
        terms = a2 / (a2 - lam[:, None])
        f = 1 - terms.sum(-1) / n
        slope = (terms / (a2 - lam[:, None])).abs().sum(-1) / n
        scale = 1 + terms.abs().sum(-1) / n + slope * float(lam.abs().max())
        err = max(err, float((f.abs() / scale).max()))
        key = (kind, n)
        cnt, worst = acc.get(key, (0, 0.0))
        acc[key] = (cnt + n * n + n - 1, max(worst, err))
    return [Outcome(k, n, c, w) for (k, n), (c, w) in acc.items()]


def interlacing(ctx):
    acc = {}
    for kind, n, a in _cases(ctx):
        lam = torch.linalg.eigvalsh(_m(a))[1:]
        a2 = torch.sort(a * a).values
        low = (a2[:-1] - lam).clamp_min(0)
        high = (lam - a2[1:]).clamp_min(0)
        err = float(torch.maximum(low, high).max()) / float(a2[-1])
        key = (kind, n)
        cnt, worst = acc.get(key, (0, 0.0))
        acc[key] = (cnt + n - 1, max(worst, err))
    return [Outcome(k, n, c, w) for (k, n), (c, w) in acc.items()]


CHECKS = {
    "ellipsoid.principal_axes": principal_axes,
    "ellipsoid.riechers_form": riechers_form,
    "ellipsoid.secular_equation": secular_equation,
    "ellipsoid.interlacing": interlacing,
}
