"""The one table of numeric tolerances.

Every tolerance is ``coefficient * u * width ** power`` where ``u`` is the unit
roundoff of the dtype (half the machine epsilon: 2**-53 for float64, 2**-24 for
float32) and ``width`` the vector length.  Each check measures a *normalised* error:
the residual of the identity divided by the sum of the magnitudes whose rounding
produced it (the classical forward-error scale for sums and products), so the
tolerance depends only on the dtype and the width, never on the data.  ``power`` is
1/2 for quantities built from length-n reductions (pairwise summation keeps the
error growth well below the worst-case ``n u``) and 1 for eigen-decompositions.
"""

from __future__ import annotations

import torch

__all__ = ["TABLE", "unit_roundoff", "tolerance"]

#: name -> (coefficient, power of the width)
TABLE: dict[str, tuple[float, float]] = {
    "projection.mean_subtraction": (8.0, 0.5),
    "projection.symmetric": (8.0, 0.5),
    "projection.idempotent": (8.0, 0.5),
    "projection.trace": (8.0, 1.0),
    "projection.kernel": (8.0, 0.5),
    "projection.eigenvalues": (16.0, 1.0),
    "decomposition.torch": (16.0, 0.5),
    "decomposition.std": (16.0, 0.5),
    "sphere.radius": (16.0, 0.5),
    "sphere.interior_torch": (16.0, 0.5),
    "sphere.interior_std": (16.0, 0.5),
    "ellipsoid.hyperplane": (16.0, 0.5),
    "ellipsoid.equation": (16.0, 0.5),
    "ellipsoid.principal_axes": (32.0, 1.0),
    "ellipsoid.riechers_form": (32.0, 1.0),
    "ellipsoid.secular_equation": (32.0, 1.0),
    "ellipsoid.interlacing": (32.0, 1.0),
    "ellipsoid.zero_gains": (32.0, 1.0),
    "ellipsoid.equal_gains": (16.0, 0.5),
    "rmsnorm.sphere": (16.0, 0.5),
    "rmsnorm.ellipsoid": (16.0, 0.5),
    "rmsnorm.interior": (16.0, 0.5),
    "rmsnorm.ball_image": (16.0, 0.5),
    "rmsnorm.support": (16.0, 0.5),
    "rotary.relative": (16.0, 0.5),
    "attention.uniform_query": (16.0, 0.5),
    "attention.sphere_witness": (16.0, 0.5),
    "attention.ellipsoid_witness": (16.0, 0.5),
    "attention.selectable_iff_not_in_hull": (16.0, 0.5),
    "attention.eps_caveat": (16.0, 0.5),
    "attention.rank_deficient_caveat": (16.0, 0.5),
    "attention.duplicate_caveat": (16.0, 0.5),
    "attention.demo_threshold": (16.0, 0.5),
    "attention.simplex_vertices": (16.0, 1.0),
    "coverage.argmax_direction": (16.0, 0.5),
    "coverage.every_direction": (16.0, 0.5),
    "vocab.self_witness": (16.0, 0.5),
    "vocab.duplicate_rows": (16.0, 0.5),
    "vocab.bias_lift": (16.0, 0.5),
    "vocab.final_norm": (16.0, 0.5),
    "vocab.no_offset": (16.0, 0.5),
    "vocab.soft_cap": (16.0, 0.5),
    # certificate and layer re-checks
    "certificate.margin": (16.0, 0.5),
    "certificate.combination": (16.0, 0.5),
    "layer.surface": (16.0, 0.5),
}


def unit_roundoff(dtype: torch.dtype) -> float:
    """Half the machine epsilon of ``dtype``."""
    return torch.finfo(dtype).eps / 2.0


def tolerance(name: str, dtype: torch.dtype, width: int) -> float:
    """The tolerance of check ``name`` in ``dtype`` at vector length ``width``."""
    coefficient, power = TABLE[name]
    return coefficient * unit_roundoff(dtype) * max(int(width), 1) ** power
