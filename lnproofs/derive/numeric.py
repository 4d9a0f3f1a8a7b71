"""Floating-point LayerNorm, RMSNorm and the ellipsoid of a LayerNorm's image (numpy only).

These functions compute; they do not prove.  The theorems they follow are in
:mod:`lnproofs.derive.theorems.projection`, :mod:`lnproofs.derive.theorems.decomposition`, :mod:`lnproofs.derive.theorems.sphere`,
:mod:`lnproofs.derive.theorems.ellipsoid` and :mod:`lnproofs.derive.theorems.rmsnorm`.

Conventions (named explicitly everywhere):

* ``"torch"`` (PyTorch, Hugging Face, TransformerLens): ``(x - mean) / sqrt(var + eps)``
  with the biased variance;
* ``"std"``: ``(x - mean) / (std + eps)`` with the biased standard deviation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from ..kernel import InputError, OptionError, ShapeError, as_real_array

__all__ = [
    "CONVENTIONS",
    "check_convention",
    "layernorm",
    "rmsnorm",
    "center",
    "EllipsoidInfo",
    "ellipsoid",
]

CONVENTIONS = ("torch", "std")


def check_convention(convention: str) -> str:
    """Return ``convention`` if it is ``"torch"`` or ``"std"``, else raise OptionError."""
    if convention not in CONVENTIONS:
        raise OptionError(
            f"convention {convention!r} is not known; use 'torch' "
            "((x-mean)/sqrt(var+eps)) or 'std' ((x-mean)/(std+eps))"
        )
    return convention


def _check_eps(eps) -> float:
    try:
        value = float(eps)
    except (TypeError, ValueError):
        raise OptionError(f"eps {eps!r} is not a number; give a finite eps >= 0") from None
    if not np.isfinite(value) or value < 0:
        raise OptionError(f"eps = {eps!r} is not allowed; give a finite eps >= 0")
    return value


def _vector(value, n: int, name: str, default: float, what: str = "the width of x") -> np.ndarray:
    if value is None:
        return np.full(n, default)
    arr = as_real_array(value, name=name, ndim=1)
    if arr.shape[0] != n:
        raise ShapeError(f"{name} has length {arr.shape[0]}; expected {n} ({what})")
    return arr


def _inputs(x):
    arr = as_real_array(x, name="x")
    if arr.ndim not in (1, 2):
        raise ShapeError(f"x has shape {arr.shape}; give a vector or a 2-D array whose rows are vectors")
    return arr


def center(x) -> np.ndarray:
    """``P x = x - mean(x) 1`` along the last axis."""
    arr = _inputs(x)
    return arr - arr.mean(axis=-1, keepdims=True)


def layernorm(x, gain=None, bias=None, eps: float = 0.0, convention: str = "torch") -> np.ndarray:
    """LayerNorm of a vector, or of each row of a 2-D array, in the named convention."""
    check_convention(convention)
    eps = _check_eps(eps)
    arr = _inputs(x)
    n = arr.shape[-1]
    a = _vector(gain, n, "gain", 1.0)
    b = _vector(bias, n, "bias", 0.0)
    d = arr - arr.mean(axis=-1, keepdims=True)
    var = (d * d).mean(axis=-1, keepdims=True)
    denom = np.sqrt(var + eps) if convention == "torch" else np.sqrt(var) + eps
    if np.any(denom == 0):
        raise InputError("x has a constant row and eps = 0: LayerNorm is 0/0 there; use eps > 0")
    return a * (d / denom) + b


def rmsnorm(x, gain=None, eps: float = 0.0, convention: str = "torch") -> np.ndarray:
    """RMSNorm: ``x / sqrt(mean(x^2) + eps)`` (torch) or ``x / (rms(x) + eps)`` (std), times gain."""
    check_convention(convention)
    eps = _check_eps(eps)
    arr = _inputs(x)
    n = arr.shape[-1]
    a = _vector(gain, n, "gain", 1.0)
    ms = (arr * arr).mean(axis=-1, keepdims=True)
    denom = np.sqrt(ms + eps) if convention == "torch" else np.sqrt(ms) + eps
    if np.any(denom == 0):
        raise InputError("x has a zero row and eps = 0: RMSNorm is 0/0 there; use eps > 0")
    return a * arr / denom


@dataclass(frozen=True, eq=False)
class EllipsoidInfo:
    """The image of LayerNorm (eps = 0) with gain ``a`` and bias ``b``.

    ``center`` is ``b``; ``normal`` is the unit vector along ``(1/a_1, ..., 1/a_n)`` when
    every gain is non-zero (the image lies in the hyperplane through ``b`` with that
    normal) and ``None`` otherwise; ``semi_axes`` are ``sqrt(n * lambda)`` for the
    non-zero eigenvalues ``lambda`` of ``diag(a) P diag(a)``, sorted descending, and
    ``axes`` the matching unit eigenvectors as rows; ``dimension`` is the number of
    semi-axes (the dimension of the affine hull of the image); ``constant_coordinates``
    are the indices with ``a_i = 0`` (there ``z_i = b_i`` always); ``is_sphere`` is true
    when all ``|a_i|`` are equal and non-zero.
    """

    center: np.ndarray
    normal: np.ndarray | None
    semi_axes: np.ndarray
    axes: np.ndarray
    dimension: int
    constant_coordinates: tuple
    is_sphere: bool
    n: int

    def to_json(self) -> dict:
        return {
            "center": self.center.tolist(),
            "normal": None if self.normal is None else self.normal.tolist(),
            "semi_axes": self.semi_axes.tolist(),
            "axes": self.axes.tolist(),
            "dimension": int(self.dimension),
            "constant_coordinates": list(self.constant_coordinates),
            "is_sphere": bool(self.is_sphere),
            "n": int(self.n),
        }

    @classmethod
    def from_json(cls, data) -> EllipsoidInfo:
        if isinstance(data, str):
            data = json.loads(data)
        n = int(data["n"]) if "n" in data else len(data["center"])
        axes = np.asarray(data["axes"], dtype=float).reshape(-1, n)
        normal = data.get("normal")
        return cls(
            np.asarray(data["center"], dtype=float),
            None if normal is None else np.asarray(normal, float),
            np.asarray(data["semi_axes"], dtype=float),
            axes,
            int(data["dimension"]),
            tuple(int(i) for i in data.get("constant_coordinates", ())),
            bool(data.get("is_sphere", False)),
            n,
        )


def _orient(vectors: np.ndarray) -> np.ndarray:
    """Flip each row so that its largest-magnitude entry is positive (a deterministic sign)."""
    if vectors.size == 0:
        return vectors
    idx = np.argmax(np.abs(vectors), axis=1)
    signs = np.sign(vectors[np.arange(len(vectors)), idx])
    signs[signs == 0] = 1.0
    return vectors * signs[:, None]


def ellipsoid(gain, bias=None) -> EllipsoidInfo:
    """Centre, normal, principal axes and semi-axes of the image of LayerNorm (eps = 0).

    The number of semi-axes is known exactly from the gains (theorem
    ``ellipsoid.zero_gains``): ``n - 1`` when every gain is non-zero, otherwise the number
    ``k`` of non-zero gains; so no eigenvalue is ever dropped by a tolerance.
    """
    a = as_real_array(gain, name="gain", ndim=1)
    n = a.shape[0]
    if n < 2:
        raise ShapeError(f"gain has length {n}; LayerNorm needs a width n >= 2")
    b = _vector(bias, n, "bias", 0.0, "the length of the gain")
    nonzero = a != 0
    k = int(nonzero.sum())
    constant = tuple(int(i) for i in np.flatnonzero(~nonzero))
    rank = n - 1 if k == n else k
    normal = None
    if k == n:
        w = 1.0 / a
        normal = w / np.linalg.norm(w)
    is_sphere = k == n and bool(np.all(np.abs(a) == np.abs(a[0])))
    if rank == 0:
        return EllipsoidInfo(b.copy(), normal, np.zeros(0), np.zeros((0, n)), 0, constant, False, n)
    # diag(a) P diag(a) = diag(a)^2 - a a^T / n (theorem ellipsoid.secular_equation); its rows and
    # columns at zero gains vanish, so the eigenvectors of the non-zero eigenvalues live on the
    # block of non-zero gains (theorem ellipsoid.zero_gains)
    idx = np.flatnonzero(nonzero)
    ak = a[idx]
    m = np.diag(ak * ak) - np.outer(ak, ak) / n
    values, vectors = np.linalg.eigh(m)
    order = np.argsort(values)[::-1][:rank]
    values = np.clip(values[order], 0.0, None)
    axes = np.zeros((rank, n))
    axes[:, idx] = vectors[:, order].T
    axes = _orient(axes)
    if is_sphere:
        semi = np.full(rank, abs(a[0]) * np.sqrt(n))
    else:
        semi = np.sqrt(n * values)
    return EllipsoidInfo(b.copy(), normal, semi, axes, rank, constant, is_sphere, n)
