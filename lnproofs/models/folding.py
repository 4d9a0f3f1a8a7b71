"""Folding a LayerNorm into the linear map that reads it (as TransformerLens does).

A LayerNorm followed by a linear map,

    W (gain * xhat + bias) + b,    xhat = (x - mean(x)) / sqrt(var(x) + eps),

equals ``W' xhat + b'`` with

    W' = W diag(gain),            (gain folded into the weights)
    b' = W bias + b,              (bias folded into the bias)

and, because ``xhat`` is orthogonal to the all-ones vector, ``W'`` may be replaced by
``W' (I - 1 1^T / n)`` (every row minus its mean: *centring*) without changing any
output.  What is left in front is the parameter-free normalisation ``xhat`` ("LNPre" in
TransformerLens).  Folding changes no query, key or score, so certification must give
the same statuses before and after; :func:`fold_capture_head` returns everything needed
to check that, including the LayerNorm-realisable query set of the folded layer (unit
gain, zero bias).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kernel import ShapeError, as_real_array, require

__all__ = ["FoldedLinear", "FoldedHead", "fold_layernorm", "normalise", "fold_capture", "fold_capture_head"]


@dataclass(frozen=True)
class FoldedLinear:
    """``W' xhat + b'``: a linear map reading the parameter-free normalisation ``xhat``."""

    W: np.ndarray
    b: np.ndarray
    centred: bool

    def __call__(self, xhat: np.ndarray) -> np.ndarray:
        return np.asarray(xhat, dtype=np.float64) @ self.W.T + self.b


def fold_layernorm(gain, bias, W, b, *, center: bool = True) -> FoldedLinear:
    """Fold LayerNorm ``gain``/``bias`` (length n) into ``W`` (m x n) and ``b`` (length m)."""
    gain = as_real_array(gain, name="gain", ndim=1)
    bias = as_real_array(bias, name="bias", ndim=1)
    W = as_real_array(W, name="W", ndim=2)
    b = as_real_array(b, name="b", ndim=1)
    n = gain.shape[0]
    require(
        bias.shape[0] == n and W.shape[1] == n,
        ShapeError,
        f"gain has length {n}, bias {bias.shape[0]}, W shape {W.shape}; W must be m x {n} and bias length {n}",
    )
    require(
        b.shape[0] == W.shape[0], ShapeError, f"b has length {b.shape[0]} but W has {W.shape[0]} rows; they must agree"
    )
    W_folded = W * gain[None, :]
    b_folded = W @ bias + b
    if center:
        W_folded = W_folded - W_folded.mean(axis=1, keepdims=True)
    return FoldedLinear(W_folded, b_folded, center)


def normalise(x, eps: float) -> np.ndarray:
    """``(x - mean) / sqrt(var + eps)`` row by row (LayerNorm without gain and bias)."""
    x = np.asarray(x, dtype=np.float64)
    centred = x - x.mean(axis=-1, keepdims=True)
    return centred / np.sqrt((centred * centred).mean(axis=-1, keepdims=True) + eps)


@dataclass(frozen=True)
class FoldedHead:
    """One head after folding: normalised inputs, folded maps, folded queries and keys."""

    xhat: np.ndarray
    query: FoldedLinear
    key: FoldedLinear
    eps: float

    @property
    def queries(self) -> np.ndarray:
        return self.query(self.xhat)

    @property
    def keys(self) -> np.ndarray:
        return self.key(self.xhat)

    def layernorm_query_set(self):
        """The folded layer's realisable queries ``W'_q u + b'_q`` (unit gain, zero bias)."""
        from ..kernel import LayerNormQuerySet

        n = self.xhat.shape[1]
        return LayerNormQuerySet(np.ones(n), np.zeros(n), self.query.W, self.query.b, self.eps)


def fold_capture(capture, *, center: bool = True):
    """The whole layer of ``capture`` in folded form: the norm's outputs become the normalised
    inputs (unit gain, zero bias), and every head's query and key maps take the gain and
    bias (and the centring).  Its keys, query sets and certificates are the folded ones."""
    from dataclasses import replace

    from .extract import LayerNormParams

    ln = capture.layernorm
    query = fold_layernorm(ln.gain, ln.bias, capture.W_q, capture.b_q, center=center)
    key = fold_layernorm(ln.gain, ln.bias, capture.W_k, capture.b_k, center=center)
    n = ln.gain.shape[0]
    return replace(
        capture,
        layernorm=LayerNormParams(np.ones(n), np.zeros(n), ln.eps),
        ln_out=normalise(capture.hidden_in, ln.eps),
        W_q=query.W,
        b_q=query.b,
        W_k=key.W,
        b_k=key.b,
    )


def fold_capture_head(capture, head: int, *, center: bool = True) -> FoldedHead:
    """Fold the LayerNorm of ``capture`` (a :class:`~lnproofs.models.extract.LayerCapture`)
    into head ``head``'s query and key maps."""
    W_q, b_q, W_k, b_k = capture.head_weights(head)
    ln = capture.layernorm
    return FoldedHead(
        normalise(capture.hidden_in, ln.eps),
        fold_layernorm(ln.gain, ln.bias, W_q, b_q, center=center),
        fold_layernorm(ln.gain, ln.bias, W_k, b_k, center=center),
        ln.eps,
    )
