"""The key sets of the language-model experiment, made exact, and their certification.

LayerNorm's inputs arrive as floats; centring them in floating point leaves them off the
hyperplane ``sum(x) = 0`` by rounding, and then the answer depends on rounding noise.  So
the keys certified here are built exactly:

- ``before``: the inputs of ``ln_1`` as the model computed them (float32, exact as given);
- ``centred``: ``d * x - sum(x)`` for every input row ``x``, computed in integers and
  exactly representable in float64 (a positive multiple of the exact centring, so the
  same keys are selectable);
- ``after``: the exact LayerNorm outputs (gain 1, bias 0, the model's eps) of those inputs,
  certified from the inputs themselves (:func:`lnproofs.certify_layernorm_outputs`: exact
  centring, exact square-root comparisons), so the certificates are about the real
  outputs, not about a rounded copy.

:func:`certify_text_keys` is the one place where a key set is certified; it returns the
certificate and the array that ``lnproofs check CERT KEYS`` takes with it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["KEY_KINDS", "KEY_DESCRIPTIONS", "exact_centred", "layernorm_keys", "keys_for", "certify_text_keys"]

KEY_KINDS = ("before", "centred", "after")
KEY_DESCRIPTIONS = {
    "before": "the inputs of ln_1, as the model computed them (float32)",
    "centred": "the inputs of ln_1 centred exactly (d·x − Σx, in integers), i.e. LayerNorm without scaling",
    "after": "the exact LayerNorm outputs (eps included) of the ln_1 inputs, certified from the inputs "
    "(exact centring, exact square-root comparisons; no rounding of the outputs)",
}


def _integers(X: np.ndarray) -> tuple[np.ndarray, int]:
    """``(XI, S)``: Python-integer array with ``X = XI * 2**-S`` exactly."""
    nz = np.abs(X[X != 0])
    if nz.size == 0:
        return np.zeros(X.shape, dtype=object), 0
    _, exps = np.frexp(nz)
    shift = int(53 - exps.min())
    scaled = np.ldexp(X, shift)
    XI = np.array([int(v) for v in scaled.ravel().tolist()], dtype=object).reshape(X.shape)
    return XI, shift


def _to_float_exact(C: np.ndarray, shift: int) -> np.ndarray | None:
    """``C * 2**-shift`` as float64, or None when some entry is not exactly representable."""
    flat = C.ravel().tolist()
    F = np.array([float(c) for c in flat], dtype=np.float64)
    if any(int(f) != c for f, c in zip(F.tolist(), flat)):
        return None
    return np.ldexp(F, -shift).reshape(C.shape)


def exact_centred(X) -> np.ndarray | None:
    """``d * x - sum(x)`` for every row, exactly (float64), or None if not representable."""
    X = np.asarray(X, dtype=np.float64)
    XI, shift = _integers(X)
    C = X.shape[1] * XI - XI.sum(axis=1)[:, None]
    return _to_float_exact(C, shift)


def layernorm_keys(X, eps: float) -> np.ndarray | None:
    """LayerNorm outputs (no gain, no bias) computed in float64 from the exactly centred
    rows, snapped to the grid ``2**-G`` with the last coordinate set to minus the sum of
    the others: exactly on the hyperplane, within ``d * 2**-G`` of the float64 outputs."""
    X = np.asarray(X, dtype=np.float64)
    d = X.shape[1]
    C = exact_centred(X)
    if C is None:
        return None
    c = C / d
    y = c / np.sqrt((c * c).mean(axis=1, keepdims=True) + eps)
    top = float(np.abs(y).max()) * d
    grid = 52 - int(np.ceil(np.log2(top))) if top > 0 else 0
    Y = np.round(np.ldexp(y, grid)).astype(np.int64)
    Y[:, -1] = -Y[:, :-1].sum(axis=1)
    return np.ldexp(Y.astype(np.float64), -grid)


def keys_for(kind: str, inputs, eps: float) -> np.ndarray | None:
    """The array certified for ``kind`` (for ``after``: the float64 LayerNorm inputs)."""
    if kind in ("before", "after"):
        return np.asarray(inputs, dtype=np.float64)
    if kind == "centred":
        return exact_centred(inputs)
    raise ValueError(f"key kind {kind!r}; accepted: {', '.join(KEY_KINDS)}")


def certify_text_keys(kind: str, keys: np.ndarray, *, eps: float, seed: int = 0):
    """Certify one text's key set (all positions, no causal mask) under free queries in R^d;
    every status other than ``undecided`` has passed the exact checker.  ``keys`` is what
    :func:`keys_for` gave.  For ``after`` the keys are the exact LayerNorm outputs of
    ``keys`` (the inputs); otherwise the batch proposer of :mod:`lnproofs.propose.hull_batch`
    does most keys and the general engine the rest."""
    if kind == "after":
        from ..propose.layernorm_inputs import certify_layernorm_outputs

        return certify_layernorm_outputs(keys, eps=eps, seed=seed)
    from ..propose.hull_batch import certify_fast

    return certify_fast(keys, seed=seed)
