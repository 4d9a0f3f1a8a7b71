"""Measurements of model runs that only the tests use: how far LayerNorm outputs lie inside their
ellipsoid, and the float margins of a certificate's witnesses."""

from __future__ import annotations

import numpy as np

__all__ = ["ellipsoid_gaps", "witness_margins"]


def ellipsoid_gaps(ln_out, hidden_in, gain, bias, eps) -> dict:
    """How far LayerNorm outputs lie inside the ellipsoid ``{gain*u + bias: 1.u = 0, |u| = sqrt(n)}``.

    Per row: ``value`` = ``(1/n) sum ((y - bias)/gain)^2`` (1 on the surface, < 1 inside),
    ``gap`` = ``1 - sqrt(value)``, ``distance`` = ``|y - bias| (1/sqrt(value) - 1)`` (to the
    surface along the ray from the centre), ``predicted_gap`` = ``1 - sqrt(var/(var + eps))``
    from the inputs, and ``plane`` = ``sum (y - bias)/gain`` (0 on the hyperplane).
    Coordinates with zero gain are left out of the sums.
    """
    y = np.asarray(ln_out, dtype=np.float64)
    x = np.asarray(hidden_in, dtype=np.float64)
    gain = np.asarray(gain, dtype=np.float64)
    bias = np.asarray(bias, dtype=np.float64)
    n = y.shape[1]
    live = gain != 0
    u = (y[:, live] - bias[live]) / gain[live]
    value = (u * u).sum(axis=1) / n
    root = np.sqrt(value)
    offset = np.linalg.norm(y - bias, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        distance = np.where(root > 0, offset * (1.0 / root - 1.0), np.nan)
    centred = x - x.mean(axis=1, keepdims=True)
    var = (centred * centred).mean(axis=1)
    predicted = 1.0 - np.sqrt(var / (var + eps))
    gap = 1.0 - root
    return {
        "value": value.tolist(),
        "gap": gap.tolist(),
        "distance": distance.tolist(),
        "predicted_gap": predicted.tolist(),
        "plane": u.sum(axis=1).tolist(),
        "zero_gain_coordinates": int((~live).sum()),
        "max_gap": float(gap.max()),
        "min_gap": float(gap.min()),
        "max_distance": float(np.nanmax(distance)) if np.isfinite(distance).any() else None,
        "max_gap_vs_prediction": float(np.abs(gap - predicted).max()),
    }


def witness_margins(certificate_json: dict, keys) -> dict[int, float]:
    """index -> ``(q.k_i - max_{j != i} q.k_j) / |q|`` for every selectable key's witness ``q``
    (floating point, for information; the status itself was proved exactly)."""
    from fractions import Fraction

    K = np.asarray(keys, dtype=np.float64)
    out = {}
    for r in certificate_json["results"]:
        if r["status"] != "selectable" or not r.get("witness") or len(r["witness"]) != K.shape[1]:
            continue
        q = np.array([float(Fraction(w)) if isinstance(w, str) else float(w) for w in r["witness"]])
        norm = np.linalg.norm(q)
        if norm == 0 or K.shape[0] < 2:
            continue
        scores = K @ q
        i = r["index"]
        out[i] = float((scores[i] - np.delete(scores, i).max()) / norm)
    return out
