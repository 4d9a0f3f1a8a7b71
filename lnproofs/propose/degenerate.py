"""Keys on an affine subspace up to rounding: coordinates that see it, and witness margins.

Float LayerNorm outputs (and any keys centred in floating point) lie on a hyperplane
only up to rounding: their exact affine hull is full-dimensional, but its extent across
the hyperplane is of the size of the rounding.  A float search on such keys is badly
conditioned.  :func:`stretched_coordinates` gives the engine an invertible linear image
of the keys, computed exactly and rounded once, in which the rounding directions are
scaled up to the size of the others; statuses are the same there (a hull's image under
an invertible linear map is the hull of the images) and queries map back exactly.

:func:`witness_margins` (from :mod:`lnproofs.certificates.findings`, which also re-checks them) measures
how robust a witness is: the margin of key i under query q is min_{j != i} q.(k_i - k_j) / ||q||_2,
the score gap for the unit query along q (a float, informational).
"""

from __future__ import annotations

import math

import numpy as np

from ..certificates.findings import RANK_FACTOR, witness_margins
from ..kernel import ExactKeys

__all__ = ["stretched_coordinates", "witness_margins"]  # witness_margins: from lnproofs.certificates


def _float_of(value: int, exponent: int) -> float:
    """value * 2**exponent rounded to a float (huge integers are shifted first)."""
    shift = max(0, abs(value).bit_length() - 64)
    head = value >> shift if value >= 0 else -((-value) >> shift)
    return math.ldexp(float(head), exponent + shift)


def stretched_coordinates(ek: ExactKeys) -> tuple[np.ndarray, np.ndarray, int]:
    """(Y, A, r): Y_j = A (k_j - k_0) for every key, exact then rounded, with A a dyadic
    d x d matrix whose first r rows are an orthonormal basis (up to rounding) of the
    numerical affine hull and whose other rows span the rounding directions, scaled so
    that the largest entry of the first r columns of Y, and of each other column, lies
    in [1/2, 1)."""
    from ..kernel import integer_matrix

    arr = ek.array
    X = arr - arr.mean(axis=0)
    R = np.linalg.qr(X, mode="r")
    if R.shape[0] < ek.dim:
        R = np.vstack([R, np.zeros((ek.dim - R.shape[0], ek.dim))])
    _, sv, Vt = np.linalg.svd(R)
    threshold = RANK_FACTOR * 2.0**-52 * sv[0]
    r = int(np.sum(sv > threshold))
    A = Vt.copy()
    for k in range(r, ek.dim):
        A[k] *= 2.0 ** round(math.log2(sv[0] / max(sv[k], sv[0] * 2.0**-70)))
    M, e = integer_matrix(arr)
    Am, ea = integer_matrix(A.T)
    P = M * Am
    base = [int(P[0, c]) for c in range(ek.dim)]
    Y = np.array([[_float_of(int(P[j, c]) - base[c], e + ea) for c in range(ek.dim)] for j in range(ek.n)])
    top = np.max(np.abs(Y), axis=0)
    top[:r] = np.max(top[:r]) if r else 0.0  # one scale within the subspace: keeps its geometry
    scale = np.array([2.0 ** -math.frexp(t)[1] if t > 0 else 1.0 for t in top])
    return Y * scale, A * scale[:, None], r
