"""Queries a LayerNorm layer can produce: ``q = W_q (gamma * u + beta) + b_q``.

``u`` ranges over the closure of the LayerNorm image: ``1 . u = 0`` and
``||u|| <= sqrt(n)``.  With ``eps = 0`` that is exactly the closure of what LayerNorm
outputs; with ``eps > 0`` LayerNorm's outputs lie strictly inside (radius
``sqrt(n) r / sqrt(r^2 + n eps)`` for an input of centred norm ``r``), so the set used
here is an outer bound and a "selectable" answer may need an input of very large norm.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...io.bounded import npz_names, read_npz
from ...io.exact import exact_float64
from ...kernel import FileFormatError, InputError, LayerNormQuerySet, ShapeError, as_real_array, require
from .layernorm_fast import certify_results_fast
from .layernorm_perkey import propose

__all__ = ["KIND", "QUERY_SET", "LayerNormQuerySet", "load_layernorm", "certify", "certify_results", "propose"]

KIND, QUERY_SET, ARRAYS = "layernorm", LayerNormQuerySet, LayerNormQuerySet.ARRAYS


def load_layernorm(path, *, radius: float | None = None) -> LayerNormQuerySet:
    """Read arrays ``gamma``, ``beta``, ``W_q``, ``b_q`` (and optional ``eps``) from a .npz file."""
    path = Path(path)
    require(
        path.exists() and path.is_file(),
        FileFormatError,
        f"{path} does not exist; give a .npz file with arrays {', '.join(ARRAYS)} (and optional eps)",
    )
    require(
        path.suffix.lower() == ".npz",
        FileFormatError,
        f"{path} has suffix {path.suffix or '(none)'!r}; layer parameters must be a .npz file with arrays {', '.join(ARRAYS)}",
    )
    try:  # only the arrays named, each checked from its headers before it is inflated, and exact
        found = {k: exact_float64(v, f"{path} {k}") for k, v in read_npz(path, (*ARRAYS, "eps")).items()}
        present = npz_names(path)
    except InputError:
        raise
    except Exception as exc:
        reason = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
        raise FileFormatError(f"{path} could not be read as .npz ({reason}); is the file complete?") from None
    missing = [name for name in ARRAYS if name not in found]
    if missing:
        raise FileFormatError(
            f"{path} has no array {missing[0]!r} (it holds: {', '.join(sorted(present)) or 'none'}); "
            f"it needs {', '.join(ARRAYS)} and optionally eps"
        )
    eps = 0.0
    if "eps" in found:
        eps_arr = as_real_array(found["eps"], name=f"{path} eps")
        require(eps_arr.size == 1, ShapeError, f"{path} eps has shape {eps_arr.shape}; give one number")
        eps = float(eps_arr.reshape(-1)[0])
    return LayerNormQuerySet(
        as_real_array(found["gamma"], name=f"{path} gamma", ndim=1),
        as_real_array(found["beta"], name=f"{path} beta", ndim=1),
        as_real_array(found["W_q"], name=f"{path} W_q", ndim=2),
        as_real_array(found["b_q"], name=f"{path} b_q", ndim=1),
        eps,
        radius,
    )


# ---------------------------------------------------------------------------
# Exact arithmetic (python-flint rationals; no solver is imported below this line
# until ``propose``).


# ---------------------------------------------------------------------------
# Proposals (the cone program): solvers only propose.


# ---------------------------------------------------------------------------
# The query-set protocol of :mod:`lnproofs.propose.querysets`.


def certify_results(keys, query_set: LayerNormQuerySet, *, progress=None, indices=None) -> list[dict]:
    """Result dictionaries (certificate JSON form) for every key, each checked exactly: proposed
    for all keys at once and proved in one exact check (:mod:`.layernorm_fast`; the keys left
    over go through one cone program each, :mod:`.layernorm_perkey`)."""
    return certify_results_fast(keys, query_set, indices=indices)


def certify(keys, query_set: LayerNormQuerySet, *, indices=None, progress=None, **_options) -> list:
    """One :class:`~lnproofs.kernel.KeyResult` per key (statuses selectable, not-realisable, undecided)."""
    from ...kernel import KeyResult

    callback = None
    if progress and callable(progress):
        callback = progress
    arr = np.asarray(getattr(keys, "array", keys), dtype=np.float64)
    return [KeyResult.from_json(entry) for entry in certify_results(arr, query_set, progress=callback, indices=indices)]
