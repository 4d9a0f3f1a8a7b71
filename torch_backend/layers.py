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

from lnproofs.errors import InputError, OptionError, ShapeError

from .device import device_label, resolve_device, resolve_dtype
from .tolerances import tolerance

__all__ = ["layer_report", "surface_recheck", "min_spread"]


def min_spread(eps: float, tau: float, convention: str = "torch") -> float:
    """Smallest input standard deviation sigma for which 1 - ||g(Px)|| / sqrt(n) <= tau.

    torch: 1 - sigma / sqrt(sigma^2 + eps) <= tau  <=>  sigma >= (1 - tau) sqrt(eps / (1 - (1 - tau)^2));
    std:   1 - sigma / (sigma + eps) <= tau        <=>  sigma >= eps (1 - tau) / tau.
    """
    if convention == "torch":
        return (1.0 - tau) * math.sqrt(eps / (1.0 - (1.0 - tau) ** 2))
    return eps * (1.0 - tau) / tau


def surface_recheck(x: torch.Tensor, z: torch.Tensor, bias: torch.Tensor, inv_gain: torch.Tensor, eps: float,
                    convention: str = "torch") -> dict:
    """Per-row geometry of one chunk: inputs ``x`` and the layer's outputs ``z`` (all gains non-zero
    unless ``inv_gain`` is 0 on the zero-gain coordinates).  Returns per-row tensors: ``deficit``
    (1 - ||g(Px)|| / sqrt(n), from the input), ``radius`` (||g(Px)||), ``length`` (||(z - b) / a||),
    ``offset`` (||z - b||), ``plane`` (sum of (z - b) / a), ``kappa`` (centring sensitivity)."""
    n = x.shape[-1]
    var, mean = torch.var_mean(x, dim=-1, correction=0)
    sigma = var.sqrt()
    if convention == "torch":
        den = (var + eps).sqrt()
        deficit = eps / (den * (den + sigma))
    else:
        den = sigma + eps
        deficit = eps / den
    d = z - bias
    offset = torch.linalg.vector_norm(d, dim=-1)
    d.mul_(inv_gain)
    plane = d.sum(-1)
    length = torch.linalg.vector_norm(d, dim=-1)
    radius = math.sqrt(n) * sigma / den
    kappa = math.sqrt(n) * (mean.abs() + sigma) / den
    return {"deficit": deficit, "radius": radius, "length": length, "offset": offset, "plane": plane,
            "kappa": kappa, "constant": sigma == 0}


def _as_tensor(value, name, ndim, t):
    from lnproofs.arrays import as_real_array

    if isinstance(value, torch.Tensor):
        if value.ndim != ndim:
            raise ShapeError(f"{name} has shape {tuple(value.shape)}; expected {ndim} dimension(s)")
        if not bool(torch.isfinite(value).all()):
            raise InputError(f"{name} holds NaN or infinite values; only finite numbers are accepted")
        return value.to(**t)
    return torch.as_tensor(as_real_array(value, name=name, ndim=ndim), **t)


def layer_report(gain, bias, eps: float, inputs, *, outputs=None, device="auto", dtype="float32",
                 convention: str = "torch", spread_tolerance: float = 1e-3, chunk_rows: int | None = None,
                 per_input: bool = False) -> dict:
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
    X = inputs if isinstance(inputs, torch.Tensor) and inputs.dtype == dt else _as_tensor(inputs, "inputs", 2, {"dtype": dt, "device": "cpu"} if not isinstance(inputs, torch.Tensor) else t)
    if X.shape[1] != n:
        raise ShapeError(f"inputs have width {X.shape[1]} but the layer has width {n}")
    Z = None
    if outputs is not None:
        Z = outputs if isinstance(outputs, torch.Tensor) and outputs.dtype == dt else _as_tensor(outputs, "outputs", 2, {"dtype": dt, "device": "cpu"})
        if tuple(Z.shape) != tuple(X.shape):
            raise ShapeError(f"outputs have shape {tuple(Z.shape)} but inputs have shape {tuple(X.shape)}")
    nonzero = a != 0
    all_nonzero = bool(nonzero.all())
    inv = torch.where(nonzero, 1.0 / torch.where(nonzero, a, torch.ones_like(a)), torch.zeros_like(a))
    tol = tolerance("layer.surface", dt, n)
    rows = chunk_rows or max(1, (1 << 18) // n)
    layer = F.layer_norm if convention == "torch" else layer_norm_std
    agg = {"count": 0, "constant": 0, "inside": 0, "dist_max": 0.0, "dist_sum": 0.0, "def_max": 0.0,
           "def_sum": 0.0, "plane": 0.0, "ellipse": 0.0, "zero_dev": 0.0, "below": 0}
    sigma_min = min_spread(eps, spread_tolerance, convention)
    distances, deficits = [], []
    for lo in range(0, X.shape[0], rows):
        xc = X[lo:lo + rows].to(**t)
        zc = layer(xc, (n,), a, b, eps) if Z is None else Z[lo:lo + rows].to(**t)
        s = surface_recheck(xc, zc.clone() if Z is not None else zc, b, inv, eps, convention)
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
        agg["below"] += int((xc.var(dim=-1, correction=0) < sigma_min ** 2).sum())
        if all_nonzero and radius.numel():
            scale = math.sqrt(n) * (1 + s["kappa"][keep])
            agg["ellipse"] = max(agg["ellipse"], float(((s["length"][keep] - radius).abs() / scale).max()))
            agg["plane"] = max(agg["plane"], float((s["plane"][keep].abs() / (math.sqrt(n) * scale)).max()))
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
        "n_inputs": int(X.shape[0]), "width": n, "eps": float(eps), "convention": convention,
        "device": device_label(dev), "dtype": str(dt).replace("torch.", ""),
        "distance_from_surface": {"max": agg["dist_max"], "mean": agg["dist_sum"] / count},
        "relative_deficit": {"max": agg["def_max"], "mean": agg["def_sum"] / count},
        "strictly_inside": agg["inside"], "constant_inputs": agg["constant"],
        "hyperplane_residual": agg["plane"] if all_nonzero else None,
        "ellipsoid_residual": agg["ellipse"] if all_nonzero else None,
        "zero_gains": int((~nonzero).sum()), "zero_gain_deviation": None if all_nonzero else agg["zero_dev"],
        "tolerance": tol,
        "min_spread": {"tolerance": spread_tolerance, "std": sigma_min, "centred_norm": sigma_min * math.sqrt(n),
                       "inputs_below": agg["below"], "measured_deficit": measured},
        "seconds": time.perf_counter() - start,
    }
    residuals = [v for v in (report["hyperplane_residual"], report["ellipsoid_residual"]) if v is not None]
    report["passed"] = all(v <= tol for v in residuals) and (all_nonzero or agg["zero_dev"] == 0.0)
    if per_input:
        report["distances"] = np.concatenate(distances) if distances else np.zeros(0)
        report["deficits"] = np.concatenate(deficits) if deficits else np.zeros(0)
    return report
