"""Re-check a real LayerNorm layer on a batch of inputs.

``layer_report(gain, bias, eps, inputs)`` streams the inputs through the layer chunk by
chunk (or takes the outputs the layer already produced) and reports, per batch:
how far the outputs lie from the surface of the ellipsoid (the eps = 0 image), how
many lie strictly inside, whether each output satisfies the hyperplane and ellipsoid
equations of its own input (normalised residuals against the tolerance table), and
the smallest input spread for which the eps effect (the relative pull inside) stays
below a given tolerance.

``surface_recheck`` is the fused per-chunk kernel (one pass over x for mean and
variance, one over the outputs for the centred residuals); the benchmark times it.
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch

from lnproofs.kernel import InputError, OptionError, ShapeError

from .device import device_label, resolve_device, resolve_dtype
from .tolerances import tolerance

__all__ = ["layer_report", "surface_recheck", "fused_recheck", "min_spread"]


def min_spread(eps: float, tau: float, convention: str = "torch") -> float:
    """Smallest input standard deviation sigma for which 1 - ||g(Px)|| / sqrt(n) <= tau.

    torch: 1 - sigma / sqrt(sigma^2 + eps) <= tau  <=>  sigma >= (1 - tau) sqrt(eps / (1 - (1 - tau)^2));
    std:   1 - sigma / (sigma + eps) <= tau        <=>  sigma >= eps (1 - tau) / tau.
    """
    if convention == "torch":
        return (1.0 - tau) * math.sqrt(eps / (1.0 - (1.0 - tau) ** 2))
    return eps * (1.0 - tau) / tau


def surface_recheck(
    x: torch.Tensor, z: torch.Tensor, bias: torch.Tensor, inv_gain: torch.Tensor, eps: float, convention: str = "torch"
) -> dict:
    """Per-row geometry of one chunk: inputs ``x`` and the layer's outputs ``z``.  ``inv_gain`` is
    1/a (0 on zero-gain coordinates, whose outputs must then equal the bias; check them separately).

    Memory-bound work is kept to the minimum: the row sums come from one matrix product per
    tensor (BLAS), the squared lengths from ``vector_norm``, and the only temporary is z / a.
    The variance is sum(x^2) - n mean^2 except on rows where that cancels (more than 4 bits
    lost), which are recomputed two-pass.  Returns per-row tensors: ``deficit``
    (1 - ||g(Px)|| / sqrt(n), from the input), ``radius`` (||g(Px)||), ``offset`` (||z - b||),
    ``length_error`` and ``plane_error`` (normalised residuals of ||(z - b)/a|| = ||g(Px)|| and
    sum (z - b)/a = 0), ``kappa`` (centring sensitivity) and ``constant`` (rows with zero spread)."""
    n = x.shape[-1]
    ones = torch.full((n,), 1.0 / n, dtype=x.dtype, device=x.device)
    mean = x @ ones
    sq = torch.linalg.vector_norm(x, dim=-1) ** 2
    r2 = sq - n * mean * mean
    poor = r2 * 16.0 <= sq
    if bool(poor.any()):
        y = x[poor] - mean[poor, None]
        r2[poor] = torch.linalg.vector_norm(y, dim=-1) ** 2
    var = r2.clamp_min(0) / n
    sigma = var.sqrt()
    if convention == "torch":
        den = (var + eps).sqrt()
        deficit = eps / (den * (den + sigma))
    else:
        den = sigma + eps
        deficit = eps / den
    radius = math.sqrt(n) * sigma / den
    bi = bias * inv_gain
    sums = z @ torch.stack([inv_gain, bi * inv_gain, bias], dim=1)
    zi = torch.linalg.vector_norm(z * inv_gain, dim=-1)
    zn = torch.linalg.vector_norm(z, dim=-1)
    bi_norm = float(torch.linalg.vector_norm(bi))
    length2 = zi * zi - 2 * sums[:, 1] + bi_norm**2
    offset = (zn * zn - 2 * sums[:, 2] + float(bias @ bias)).clamp_min(0).sqrt()
    plane = sums[:, 0] - float(bi.sum())
    kappa = math.sqrt(n) * (mean.abs() + sigma) / den
    big = zi + bi_norm
    length_error = (length2 - radius * radius).abs() / (big * big + 2 * n * (1 + kappa))
    plane_error = plane.abs() / (math.sqrt(n) * big + n * (1 + kappa))
    return {
        "deficit": deficit,
        "radius": radius,
        "offset": offset,
        "length_error": length_error,
        "plane_error": plane_error,
        "kappa": kappa,
        "constant": sigma == 0,
    }


def fused_recheck(
    x: torch.Tensor,
    z: torch.Tensor | None,
    gain: torch.Tensor,
    bias: torch.Tensor,
    eps: float,
    *,
    chunk_rows: int = 2048,
    convention: str = "torch",
) -> dict:
    """The streaming geometry re-check of a whole batch (all gains non-zero): one pass over each
    chunk of x (mean and variance) and of z (z - b, its length, its scaled sum and length), in
    cache-sized chunks, with only running maxima and counts kept.  ``z=None`` computes the layer's
    outputs chunk by chunk with ``torch.nn.functional.layer_norm``.

    Returns {"rows", "inside", "max_distance", "max_plane", "max_ellipse", "tolerance"}."""
    import torch.nn.functional as F

    n = x.shape[-1]
    inv = 1.0 / gain
    tol = tolerance("layer.surface", x.dtype, n)
    inside = torch.zeros((), dtype=torch.int64, device=x.device)
    worst = torch.zeros(3, dtype=x.dtype, device=x.device)
    root_n = math.sqrt(n)
    for lo in range(0, x.shape[0], chunk_rows):
        xc = x[lo : lo + chunk_rows]
        zc = F.layer_norm(xc, (n,), gain, bias, eps) if z is None else z[lo : lo + chunk_rows]
        s = surface_recheck(xc, zc, bias, inv, eps, convention)
        dist = s["offset"] * (root_n / s["radius"] - 1.0)
        worst = torch.maximum(worst, torch.stack([dist.max(), s["length_error"].max(), s["plane_error"].max()]))
        inside += (s["deficit"] > tol * (1 + s["kappa"])).sum()
    w = worst.tolist()
    return {
        "rows": int(x.shape[0]),
        "inside": int(inside),
        "max_distance": w[0],
        "max_ellipse": w[1],
        "max_plane": w[2],
        "tolerance": tol,
    }


def _as_tensor(value, name, ndim, t):
    from lnproofs.kernel import as_real_array

    if isinstance(value, torch.Tensor):
        if value.ndim != ndim:
            raise ShapeError(f"{name} has shape {tuple(value.shape)}; expected {ndim} dimension(s)")
        if not bool(torch.isfinite(value).all()):
            raise InputError(f"{name} holds NaN or infinite values; only finite numbers are accepted")
        return value.to(**t)
    return torch.as_tensor(as_real_array(value, name=name, ndim=ndim), **t)


def layer_report(
    gain,
    bias,
    eps: float,
    inputs,
    *,
    outputs=None,
    device="auto",
    dtype="float32",
    convention: str = "torch",
    spread_tolerance: float = 1e-3,
    chunk_rows: int | None = None,
    per_input: bool = False,
) -> dict:
    """Geometry report of a LayerNorm layer (``gain``, ``bias``, ``eps``) on ``inputs`` (rows).

    ``outputs``: the layer's own outputs for these inputs; when omitted they are computed
    with ``torch.nn.functional.layer_norm`` (convention "torch") or the textbook formula
    (convention "std").  With ``per_input`` the per-row distances are returned as numpy arrays.
    """
    import torch.nn.functional as F

    from .geometry import layer_norm_std

    start = time.perf_counter()
    dev, dt = resolve_device(device), resolve_dtype(dtype)
    t = {"dtype": dt, "device": dev}
    if convention not in ("torch", "std"):
        raise OptionError(f"convention {convention!r} is not accepted; use torch or std")
    if not isinstance(eps, (int, float)) or not math.isfinite(eps) or eps < 0:
        raise OptionError(f"eps {eps!r} is not accepted; give a finite number >= 0")
    if not 0 < spread_tolerance < 1:
        raise OptionError(f"spread tolerance {spread_tolerance!r} is not accepted; give a number in (0, 1)")
    a = _as_tensor(gain, "gain", 1, t)
    b = _as_tensor(bias, "bias", 1, t)
    n = a.numel()
    if b.numel() != n:
        raise ShapeError(f"bias has {b.numel()} entries but gain has {n}; they must match")
    if n < 2:
        raise ShapeError(f"the layer width is {n}; LayerNorm geometry needs width >= 2")
    X = (
        inputs
        if isinstance(inputs, torch.Tensor) and inputs.dtype == dt
        else _as_tensor(
            inputs, "inputs", 2, {"dtype": dt, "device": "cpu"} if not isinstance(inputs, torch.Tensor) else t
        )
    )
    if X.shape[1] != n:
        raise ShapeError(f"inputs have width {X.shape[1]} but the layer has width {n}")
    Z = None
    if outputs is not None:
        Z = (
            outputs
            if isinstance(outputs, torch.Tensor) and outputs.dtype == dt
            else _as_tensor(outputs, "outputs", 2, {"dtype": dt, "device": "cpu"})
        )
        if tuple(Z.shape) != tuple(X.shape):
            raise ShapeError(f"outputs have shape {tuple(Z.shape)} but inputs have shape {tuple(X.shape)}")
    nonzero = a != 0
    all_nonzero = bool(nonzero.all())
    inv = torch.where(nonzero, 1.0 / torch.where(nonzero, a, torch.ones_like(a)), torch.zeros_like(a))
    tol = tolerance("layer.surface", dt, n)
    rows = chunk_rows or max(1, (1 << 23) // n)
    layer = F.layer_norm if convention == "torch" else layer_norm_std
    agg = {
        "count": 0,
        "constant": 0,
        "inside": 0,
        "dist_max": 0.0,
        "dist_sum": 0.0,
        "def_max": 0.0,
        "def_sum": 0.0,
        "plane": 0.0,
        "ellipse": 0.0,
        "zero_dev": 0.0,
        "below": 0,
    }
    sigma_min = min_spread(eps, spread_tolerance, convention)
    distances, deficits = [], []
    for lo in range(0, X.shape[0], rows):
        xc = X[lo : lo + rows].to(**t)
        zc = layer(xc, (n,), a, b, eps) if Z is None else Z[lo : lo + rows].to(**t)
        s = surface_recheck(xc, zc, b, inv, eps, convention)
        keep = ~s["constant"] if eps == 0 else torch.ones_like(s["constant"])
        agg["constant"] += int(s["constant"].sum())
        radius = s["radius"][keep]
        dist = s["offset"][keep] * (math.sqrt(n) / radius - 1.0)
        deficit = s["deficit"][keep]
        agg["count"] += int(keep.sum())
        if dist.numel():
            agg["dist_max"] = max(agg["dist_max"], float(dist.max()))
            agg["dist_sum"] += float(dist.sum())
            agg["def_max"] = max(agg["def_max"], float(deficit.max()))
            agg["def_sum"] += float(deficit.sum())
        agg["inside"] += int((deficit > tol * (1 + s["kappa"][keep])).sum())
        agg["below"] += int((xc.var(dim=-1, correction=0) < sigma_min**2).sum())
        if all_nonzero and radius.numel():
            agg["ellipse"] = max(agg["ellipse"], float(s["length_error"][keep].max()))
            agg["plane"] = max(agg["plane"], float(s["plane_error"][keep].max()))
        if not all_nonzero:
            dev_z = (zc[:, ~nonzero] - b[~nonzero]).abs()
            agg["zero_dev"] = max(agg["zero_dev"], float(dev_z.max()) if dev_z.numel() else 0.0)
        if per_input:
            distances.append(dist.cpu().numpy())
            deficits.append(deficit.cpu().numpy())
    # the eps effect measured on an input whose spread is exactly the minimal one
    probe = torch.zeros((1, n), **t)
    probe[0, 0], probe[0, 1] = 1.0, -1.0
    probe = probe * (sigma_min * math.sqrt(n / 2.0))
    g = layer(probe, (n,), None, None, eps)
    measured = 1.0 - float(torch.linalg.vector_norm(g)) / math.sqrt(n)
    count = max(agg["count"], 1)
    report = {
        "n_inputs": int(X.shape[0]),
        "width": n,
        "eps": float(eps),
        "convention": convention,
        "device": device_label(dev),
        "dtype": str(dt).replace("torch.", ""),
        "distance_from_surface": {"max": agg["dist_max"], "mean": agg["dist_sum"] / count},
        "relative_deficit": {"max": agg["def_max"], "mean": agg["def_sum"] / count},
        "strictly_inside": agg["inside"],
        "constant_inputs": agg["constant"],
        "hyperplane_residual": agg["plane"] if all_nonzero else None,
        "ellipsoid_residual": agg["ellipse"] if all_nonzero else None,
        "zero_gains": int((~nonzero).sum()),
        "zero_gain_deviation": None if all_nonzero else agg["zero_dev"],
        "tolerance": tol,
        "min_spread": {
            "tolerance": spread_tolerance,
            "std": sigma_min,
            "centred_norm": sigma_min * math.sqrt(n),
            "inputs_below": agg["below"],
            "measured_deficit": measured,
        },
        "seconds": time.perf_counter() - start,
    }
    residuals = [v for v in (report["hyperplane_residual"], report["ellipsoid_residual"]) if v is not None]
    report["passed"] = all(v <= tol for v in residuals) and (all_nonzero or agg["zero_dev"] == 0.0)
    if per_input:
        report["distances"] = np.concatenate(distances) if distances else np.zeros(0)
        report["deficits"] = np.concatenate(deficits) if deficits else np.zeros(0)
    return report
