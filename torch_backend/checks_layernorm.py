"""Numeric checks of the decomposition, the sphere theorems, the output-side ellipsoid
theorems and RMSNorm, on real layers (``ctx.layer_norm``, ``ctx.layer_norm_std``, ``ctx.rms_norm``).

Errors are normalised by the magnitudes whose rounding produces them.  ``kappa`` is
the sensitivity of centring: sqrt(n) max|x| / (the layer's normaliser), the factor by
which rounding in x - mean(x) is amplified (large for near-constant rows).
"""

from __future__ import annotations

import math

import torch

from .geometry import center, divide, normaliser_std, normaliser_torch, safe_norm
from .sweep import sweep

__all__ = ["CHECKS", "EPS_VALUES", "resolvable"]

EPS_VALUES = (0.0, 1e-12, 1e-5, 1e-2, 1.0)
POSITIVE_EPS = (1e-12, 1e-5, 1e-2, 1.0, 100.0)
NONZERO_GAINS = ("mixed", "positive", "clustered")


def _count(mask: torch.Tensor, message: str) -> dict:
    k = int(mask.sum())
    return {message: k} if k else {}


def _pieces(x, eps, convention):
    n = x.shape[-1]
    y = center(x)
    r = safe_norm(y)
    den = normaliser_torch(r, n, eps) if convention == "torch" else normaliser_std(r, n, eps)
    kappa = math.sqrt(n) * x.abs().amax(dim=-1, keepdim=True) / torch.where(den > 0, den, torch.ones_like(den))
    kappa = torch.where(den > 0, kappa, torch.full_like(kappa, math.inf))
    return n, y, r, den, kappa


def resolvable(x, kappa, eps):
    """Rows whose image the dtype can resolve: with eps = 0 the centred part must stand clear of the
    rounding of x - mean(x) (kappa n u < 1e-2); with eps > 0 every row is resolvable."""
    if eps > 0:
        return torch.ones(x.shape[0], dtype=torch.bool, device=x.device)
    u = torch.finfo(x.dtype).eps / 2
    return torch.isfinite(kappa[:, 0]) & (kappa[:, 0] * (x.shape[-1] * u) < 1e-2)


def _decomposition(convention):
    def check(ctx):
        layer = ctx.layer_norm if convention == "torch" else ctx.layer_norm_std

        def measure(x, a, b, eps):
            n, y, r, den, kappa = _pieces(x, eps, convention)
            keep = (den > 0)[:, 0] & resolvable(x, kappa, eps)
            s = math.sqrt(n) * y / torch.where(den > 0, den, torch.ones_like(den))
            decomposed = a * s + b
            z = layer(x, (n,), a, b, eps)
            scale = a.abs() * (s.abs() + kappa) + b.abs()
            err = divide((z - decomposed).abs(), scale).amax(dim=-1)
            return err[keep], _count(~torch.isfinite(z[keep]).all(dim=-1), "the layer returned a non-finite value")

        settings = [(kind, eps) for kind in ("mixed", "with-zeros", "clustered") for eps in EPS_VALUES]
        return sweep(ctx, settings, measure)

    return check


def sphere_radius(ctx):
    def measure(x, a, b, eps):
        n, y, r, den, kappa = _pieces(x, 0.0, "torch")
        keep = (r > 0)[:, 0] & resolvable(x, kappa, 0.0)
        z = ctx.layer_norm(x, (n,), None, None, 0.0)[keep]
        kappa = 1.0 + kappa[keep]
        radius = safe_norm(z)
        e1 = divide((radius - math.sqrt(n)).abs(), math.sqrt(n) * kappa)
        e2 = divide(z.sum(-1, keepdim=True).abs(), z.abs().sum(-1, keepdim=True) + math.sqrt(n) * kappa)
        return torch.maximum(e1, e2)[:, 0], {}

    return sweep(ctx, [(None, 0.0)], measure)


def _interior(convention):
    def check(ctx):
        layer = ctx.layer_norm if convention == "torch" else ctx.layer_norm_std
        tol = ctx.tol()

        def measure(x, a, b, eps):
            n, y, r, den, kappa = _pieces(x, eps, convention)
            keep = (r > 0)[:, 0]
            z = layer(x, (n,), None, None, eps)[keep]
            r, den = r[keep], den[keep]
            root_n = math.sqrt(n)
            predicted = root_n * r / den
            if convention == "torch":
                deficit = n * eps / (den * (den + r))  # 1 - r / sqrt(r^2 + n eps), without cancellation
            else:
                deficit = eps * root_n / den
            radius = safe_norm(z)
            scale = predicted + root_n * math.sqrt(n) * x[keep].abs().amax(-1, keepdim=True) / den
            err = divide((radius - predicted).abs(), scale)
            fails = {}
            fails.update(_count(radius > root_n + tol * scale, "an output lies outside the sphere of radius sqrt(n)"))
            fails.update(
                _count(
                    (root_n * deficit > 4 * tol * scale) & (radius >= root_n),
                    "an output is not strictly inside although eps > 0 moves it measurably",
                )
            )
            return err[:, 0], fails

        return sweep(ctx, [(None, eps) for eps in POSITIVE_EPS], measure)

    return check


def hyperplane(ctx):
    def measure(x, a, b, eps):
        n, y, r, den, kappa = _pieces(x, eps, "torch")
        keep = (den > 0)[:, 0] & resolvable(x, kappa, eps)
        z = ctx.layer_norm(x, (n,), a, b, eps)[keep]
        t = (z - b) / a
        scale = ((z.abs() + b.abs()) / a.abs()).sum(-1) + n * kappa[keep][:, 0]
        return divide(t.sum(-1).abs(), scale), {}

    return sweep(ctx, [(kind, eps) for kind in NONZERO_GAINS for eps in (0.0, 1e-5, 1.0)], measure)


def equation(ctx):
    tol = ctx.tol()

    def measure(x, a, b, eps):
        n, y, r, den, kappa = _pieces(x, eps, "torch")
        keep = ((r > 0) & (den > 0))[:, 0] & resolvable(x, kappa, eps)
        z = ctx.layer_norm(x, (n,), a, b, eps)[keep]
        r, den, kappa = r[keep][:, 0], den[keep][:, 0], kappa[keep]
        t = (z - b) / a
        w = (z.abs() + b.abs()) / a.abs()  # |t| plus the rounding scale of z - b
        length = safe_norm(t)[:, 0]
        target = math.sqrt(n) * r / den
        scale = safe_norm(w)[:, 0] + math.sqrt(n) * kappa[:, 0]
        root_n = math.sqrt(n)
        fails = _count(length > root_n + tol * scale, "an output lies outside the ellipsoid (quadratic form above n)")
        if eps > 0:
            deficit = root_n * n * eps / (den * (den + r))
            fails.update(
                _count(
                    (deficit > 4 * tol * scale) & (length >= root_n), "an output is not strictly inside the ellipsoid"
                )
            )
        return divide((length - target).abs(), scale), fails

    return sweep(ctx, [(kind, eps) for kind in NONZERO_GAINS for eps in (0.0, 1e-5, 1e-2, 1.0)], measure)


def equal_gains(ctx):
    def measure(x, a, b, eps):
        n, y, r, den, kappa = _pieces(x, 0.0, "torch")
        keep = (r > 0)[:, 0] & resolvable(x, kappa, 0.0)
        z = ctx.layer_norm(x, (n,), a, b, 0.0)[keep]
        c = float(a[0].abs())
        d = z - b
        kappa = 1.0 + kappa[keep][:, 0]
        bound = c * math.sqrt(n)
        e1 = divide((safe_norm(d)[:, 0] - bound).abs(), bound * kappa + safe_norm(z.abs() + b.abs())[:, 0])
        e2 = divide(d.sum(-1).abs(), (z.abs() + b.abs()).sum(-1) + bound * kappa)
        return torch.maximum(e1, e2), {}

    return sweep(ctx, [("equal", 0.0)] * 3, measure)


def _rank(s: torch.Tensor, d: int, floor: float):
    """(error: first singular value that should vanish, relative; failure or None).  Rank d needs a clear
    gap: singular value d at least 100 times above both singular value d+1 and the rounding floor."""
    top = float(s[0])
    err = float(s[d]) / top if d < s.numel() else 0.0
    if d > 0 and float(s[d - 1]) / top < 100 * max(err, floor):
        return err, f"rank below {d}: singular value {d} is only {float(s[d - 1]) / top:.3e} of the largest"
    return err, None


def zero_gains(ctx):
    from collections import Counter

    from .outcome import Outcome
    from .sampling import random_gains

    def measure(x, a, b, eps):
        n = x.shape[-1]
        x = x[resolvable(x, _pieces(x, eps, "torch")[4], eps)]
        z = ctx.layer_norm(x, (n,), a, b, eps)
        zero = a == 0
        err = divide((z[:, zero] - b[zero]).abs(), b[zero].abs()).amax(dim=-1)
        return err, {}

    outcomes = sweep(ctx, [("with-zeros", eps) for eps in (0.0, 1e-5, 1.0)], measure)
    # dimension of the image: affine hull min(k, n-1), surface (eps = 0) min(k, n-2), k = #non-zero gains
    for width in sorted({3, 4, 5, 6, min(ctx.width, 24)}):
        worst, count, fails = 0.0, 0, Counter()
        for zeros in sorted({0, 1, 2, width - 2}):
            k = width - zeros
            if k < 2:
                continue
            a = random_gains(width, "positive", **ctx.opts()) ** 0.3  # magnitudes within about 0.5..2
            a[torch.randperm(width, generator=ctx.gen, device=ctx.device)[:zeros]] = 0.0
            b = torch.randn((width,), generator=ctx.gen, dtype=ctx.dtype, device=ctx.device)
            x = torch.randn((4 * width + 8, width), generator=ctx.gen, dtype=ctx.dtype, device=ctx.device)
            z = ctx.layer_norm(x, (width,), a, b, 0.0)
            s = torch.linalg.svdvals(z - z.mean(dim=0, keepdim=True))
            e, f = _rank(s, min(k, width - 1), ctx.u * width)
            worst, count = max(worst, e), count + x.shape[0]
            if f:
                fails[f"affine hull with {zeros} zero gains: {f}"] += 1
            for point in x[:2]:
                jac = torch.autograd.functional.jacobian(
                    lambda v: ctx.layer_norm(v[None], (width,), a, b, 0.0)[0], point
                )
                e, f = _rank(torch.linalg.svdvals(jac), min(k, width - 2), ctx.u * width)
                worst, count = max(worst, e), count + 1
                if f:
                    fails[f"surface (Jacobian) with {zeros} zero gains: {f}"] += 1
        outcomes.append(Outcome("dimension", width, count, worst, tuple(f"{m} ({c} cases)" for m, c in fails.items())))
    return outcomes


def rms_sphere(ctx):
    def measure(x, a, b, eps):
        n = x.shape[-1]
        keep = x.abs().amax(-1) > 0
        z = ctx.rms_norm(x[keep], (n,), None, 0.0)
        return ((safe_norm(z)[:, 0] - math.sqrt(n)).abs() / math.sqrt(n)), {}

    return sweep(ctx, [(None, 0.0)], measure)


def rms_ellipsoid(ctx):
    def measure(x, a, b, eps):
        n = x.shape[-1]
        keep = x.abs().amax(-1) > 0
        z = ctx.rms_norm(x[keep], (n,), a, 0.0)
        t = z / a
        return ((t * t).sum(-1) - n).abs() / n, {}

    return sweep(ctx, [(kind, 0.0) for kind in NONZERO_GAINS], measure)


CHECKS = {
    "decomposition.torch": _decomposition("torch"),
    "decomposition.std": _decomposition("std"),
    "sphere.radius": sphere_radius,
    "sphere.interior_torch": _interior("torch"),
    "sphere.interior_std": _interior("std"),
    "ellipsoid.hyperplane": hyperplane,
    "ellipsoid.equation": equation,
    "ellipsoid.equal_gains": equal_gains,
    "ellipsoid.zero_gains": zero_gains,
    "rmsnorm.sphere": rms_sphere,
    "rmsnorm.ellipsoid": rms_ellipsoid,
}
