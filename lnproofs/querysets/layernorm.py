"""Queries a LayerNorm layer can produce: ``q = W_q (gamma * u + beta) + b_q``.

``u`` ranges over the closure of the LayerNorm image: ``1 . u = 0`` and
``||u|| <= sqrt(n)``.  With ``eps = 0`` that is exactly the closure of what LayerNorm
outputs; with ``eps > 0`` LayerNorm's outputs lie strictly inside (radius
``sqrt(n) r / sqrt(r^2 + n eps)`` for an input of centred norm ``r``), so the set used
here is an outer bound and a "selectable" answer may need an input of very large norm.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..arrays import as_real_array
from ..errors import FileFormatError, OptionError, ShapeError, require

__all__ = ["KIND", "LayerNormQuerySet", "load_layernorm"]

KIND = "layernorm"
ARRAYS = ("gamma", "beta", "W_q", "b_q")


def _vector(values, name):
    return tuple(float(x) for x in as_real_array(values, name=name, ndim=1))


@dataclass(frozen=True)
class LayerNormQuerySet:
    """The closure of the queries of one layer (optionally also ``||q|| <= radius``)."""

    gamma: tuple
    beta: tuple
    W_q: tuple
    b_q: tuple
    eps: float = 0.0
    radius: float | None = None

    kind = KIND

    def __post_init__(self):
        gamma = _vector(self.gamma, "layernorm gamma")
        beta = _vector(self.beta, "layernorm beta")
        W_q = as_real_array(self.W_q, name="layernorm W_q", ndim=2)
        b_q = _vector(self.b_q, "layernorm b_q")
        n = len(gamma)
        require(n >= 2, ShapeError, f"layernorm gamma has length {n}; LayerNorm needs width n >= 2")
        require(len(beta) == n, ShapeError, f"layernorm beta has length {len(beta)} but gamma has length {n}; they must agree")
        require(W_q.shape[1] == n, ShapeError,
                f"layernorm W_q has shape {W_q.shape} but gamma has length {n}; W_q must be d x {n}")
        require(len(b_q) == W_q.shape[0], ShapeError,
                f"layernorm b_q has length {len(b_q)} but W_q has {W_q.shape[0]} rows; they must agree")
        try:
            eps = float(self.eps)
        except (TypeError, ValueError):
            raise OptionError(f"layernorm eps {self.eps!r} is not a number; give eps >= 0") from None
        require(eps == eps and 0 <= eps < float("inf"), OptionError, f"layernorm eps = {self.eps!r}; give a finite eps >= 0")
        object.__setattr__(self, "gamma", gamma)
        object.__setattr__(self, "beta", beta)
        object.__setattr__(self, "W_q", tuple(tuple(float(x) for x in row) for row in W_q))
        object.__setattr__(self, "b_q", b_q)
        object.__setattr__(self, "eps", eps)
        if self.radius is not None:
            from .ball import _check_radius
            object.__setattr__(self, "radius", _check_radius(self.radius))

    @property
    def width(self) -> int:
        """``n``, the LayerNorm width."""
        return len(self.gamma)

    @property
    def dim(self) -> int:
        """``d``, the query dimension."""
        return len(self.b_q)

    def arrays(self) -> dict[str, np.ndarray]:
        return {"gamma": np.array(self.gamma), "beta": np.array(self.beta),
                "W_q": np.array(self.W_q, dtype=np.float64).reshape(self.dim, self.width), "b_q": np.array(self.b_q)}

    def validate(self, dim: int) -> None:
        require(self.dim == dim, ShapeError,
                f"layernorm W_q produces queries of dimension {self.dim} but the keys have dimension {dim}; "
                f"W_q must be {dim} x n")

    def to_json(self) -> dict:
        data = {"kind": KIND, "gamma": list(self.gamma), "beta": list(self.beta),
                "W_q": [list(row) for row in self.W_q], "b_q": list(self.b_q), "eps": self.eps}
        if self.radius is not None:
            data["radius"] = self.radius
        return data

    @classmethod
    def from_json(cls, data: dict) -> "LayerNormQuerySet":
        require(isinstance(data, dict) and data.get("kind") == KIND, OptionError,
                "query set is not a layernorm query set")
        for name in ARRAYS:
            require(name in data, OptionError, f"layernorm query set has no {name!r}; it needs {', '.join(ARRAYS)}")
        return cls(data["gamma"], data["beta"], data["W_q"], data["b_q"], data.get("eps", 0.0), data.get("radius"))


def load_layernorm(path, *, radius: float | None = None) -> LayerNormQuerySet:
    """Read arrays ``gamma``, ``beta``, ``W_q``, ``b_q`` (and optional ``eps``) from a .npz file."""
    path = Path(path)
    require(path.exists() and path.is_file(), FileFormatError,
            f"{path} does not exist; give a .npz file with arrays {', '.join(ARRAYS)} (and optional eps)")
    require(path.suffix.lower() == ".npz", FileFormatError,
            f"{path} has suffix {path.suffix or '(none)'!r}; layer parameters must be a .npz file with arrays {', '.join(ARRAYS)}")
    try:
        with np.load(path, allow_pickle=False) as archive:
            found = {k: archive[k] for k in archive.files}
    except Exception as exc:
        reason = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
        raise FileFormatError(f"{path} could not be read as .npz ({reason}); is the file complete?") from None
    missing = [name for name in ARRAYS if name not in found]
    if missing:
        raise FileFormatError(f"{path} has no array {missing[0]!r} (it holds: {', '.join(sorted(found)) or 'none'}); "
                              f"it needs {', '.join(ARRAYS)} and optionally eps")
    eps = 0.0
    if "eps" in found:
        eps_arr = as_real_array(found["eps"], name=f"{path} eps")
        require(eps_arr.size == 1, ShapeError, f"{path} eps has shape {eps_arr.shape}; give one number")
        eps = float(eps_arr.reshape(-1)[0])
    return LayerNormQuerySet(as_real_array(found["gamma"], name=f"{path} gamma", ndim=1),
                             as_real_array(found["beta"], name=f"{path} beta", ndim=1),
                             as_real_array(found["W_q"], name=f"{path} W_q", ndim=2),
                             as_real_array(found["b_q"], name=f"{path} b_q", ndim=1), eps, radius)
