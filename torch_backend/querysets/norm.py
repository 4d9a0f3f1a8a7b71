"""The norm query sets (LayerNorm, RMSNorm, rotary), as the numeric re-check sees them.

A witness is the norm's input ``u``, whose query is ``q = R (W_q (g * u + beta) + b_q)`` (``R`` the
rotation or ``I``; see :mod:`lnproofs.kernel`'s norm sets), ``||u|| <= sqrt(n)`` and ``1 . u = 0``
when centred; a result may give ``y``, the compact form ``u = P (g * (W_q^T R^T y))``.
:func:`own_directions` rebuilds the integer rows ``J_i`` of a vocabulary's own-key witnesses
``u_i = t_i J_i`` from their definition, in torch.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..geometry import safe_norm
from ..sampling import unit_vectors
from .base import NumericSet, floats

__all__ = ["NormSet", "own_directions"]


def own_directions(
    keys: np.ndarray, cols: np.ndarray, g: np.ndarray, tokens, centred: bool, bits: int = 12, block: int = 4096
) -> np.ndarray:
    """``J_i`` for ``tokens``: ``z_i = g * k_i[cols]`` rounded to integers of at most ``bits`` bits for
    its largest entry and, when ``centred``, moved onto ``1 . J = 0`` (minus the floor of the mean,
    then minus 1 on the first ``1 . J`` entries).  Computed in float64 on the CPU whatever the
    re-check's dtype: one rounded product per entry, then exact steps, as the definition reads."""
    tokens = np.asarray(tokens, dtype=np.int64)
    K, g = torch.from_numpy(np.asarray(keys, dtype=np.float64)), torch.from_numpy(np.asarray(g, dtype=np.float64))
    idx = torch.from_numpy(np.asarray(cols, dtype=np.int64))
    out = np.empty((len(tokens), len(g)))
    for a in range(0, len(tokens), block):
        Z = K[torch.from_numpy(tokens[a : a + block])][:, idx] * g
        top = Z.abs().amax(1)
        e = torch.where(top > 0, torch.frexp(top).exponent - bits, torch.zeros_like(top, dtype=torch.int32))
        J = torch.round(Z * torch.pow(2.0, -e.to(torch.float64))[:, None]).to(torch.int64)
        if centred:
            J -= torch.div(J.sum(1), J.shape[1], rounding_mode="floor")[:, None]
            J -= (torch.arange(J.shape[1])[None, :] < J.sum(1)[:, None]).to(torch.int64)
        out[a : a + block] = J.to(torch.float64).numpy()
    return out


class NormSet(NumericSet):
    """``q = R (W_q (g * u + beta) + b_q)`` over ``||u|| <= sqrt(n)`` (``1 . u = 0`` when centred)."""

    norm = True

    def __init__(self, query_set, keys, t: dict):
        super().__init__(query_set, keys, t)
        arrays = query_set.arrays()
        self.centred, self.n = bool(query_set.centred), query_set.width
        self.width = self.n
        self.W_np, self.g_np = arrays["W_q"], arrays[query_set.G_NAME]
        self.g, self.beta = (torch.as_tensor(arrays[k], **t) for k in (query_set.G_NAME, "beta"))
        self.Wq, self.bq = torch.as_tensor(arrays["W_q"], **t), torch.as_tensor(arrays["b_q"], **t)
        rotation = getattr(query_set, "rotation", None)
        R = None if rotation is None else rotation.matrix(self.d)
        R = None if R is None else [[int(R[a, b].p) / int(R[a, b].q) for b in range(self.d)] for a in range(self.d)]
        self.R = None if R is None else torch.as_tensor(np.array(R), **t)

    def selection(self) -> np.ndarray | None:
        """The column each u coordinate reads when ``W_q`` is a 0/1 selection (one 1 per column), else None."""
        W = self.W_np
        if self.R is not None or not (np.isin(W, (0.0, 1.0)).all() and (W.sum(axis=0) == 1).all()):
            return None
        return W.argmax(axis=0)

    def queries(self, W: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        Q = (self.g * W + self.beta) @ self.Wq.T + self.bq
        A = (self.g.abs() * W.abs() + self.beta.abs()) @ self.Wq.abs().T + self.bq.abs()
        if self.R is not None:
            Q, A = Q @ self.R.T, A @ self.R.abs().T
        return Q, A

    def witness(self, result: dict) -> torch.Tensor | None:
        i = result["index"]
        if result.get("u") is not None:
            return torch.as_tensor(floats(result["u"], self.n, f"key {i} u"), **self.t)
        if result.get("y") is not None:  # the compact form u = P (g * W_q^T R^T y)
            return self.directions(torch.as_tensor(floats(result["y"], self.d, f"key {i} y"), **self.t)[None])[0]
        return None

    def stated(self, result: dict, q: torch.Tensor, scale: float, tol: float) -> str | None:
        return self._differs(result, q, scale, tol, "R(W_q(g * u + beta) + b_q)")

    def membership(self, W: torch.Tensor, tol: float) -> list:
        out = [None] * W.shape[0]
        norms, limit = safe_norm(W)[:, 0], math.sqrt(self.n)
        for r in torch.nonzero(norms > limit * (1 + tol)).flatten().tolist():
            out[r] = f"its u has norm {float(norms[r]):.17g} > sqrt(n) = {limit:.17g}"
        if self.centred:
            s, a = W.sum(1), W.abs().sum(1)
            for r in torch.nonzero(s.abs() > tol * a + tol).flatten().tolist():
                out[r] = out[r] or f"its u is not orthogonal to the ones vector (sum {float(s[r]):.3e})"
        radius = super().membership(W, tol)
        return [o or b for o, b in zip(out, radius)]

    def directions(self, V: torch.Tensor) -> torch.Tensor:
        """The norm input ``u`` that best aims along each key-space row of ``V``: ``P (g * W_q^T R^T v)``."""
        if self.R is not None:
            V = V @ self.R
        w = self.g * (V @ self.Wq)
        return w - w.mean(-1, keepdim=True) if self.centred else w

    def sample(self, count: int, gen, aims: torch.Tensor, spread: float = 1.0) -> torch.Tensor:
        n, opts = self.n, {"gen": gen, **self.t}
        u = unit_vectors(count, n, **opts)
        if aims.numel():
            ua = self.directions(aims)
            u = torch.cat([u, ua, ua + 0.1 * safe_norm(ua) * unit_vectors(ua.shape[0], n, **opts)])
        if self.centred:
            u = u - u.mean(-1, keepdim=True)
        rho = torch.rand((u.shape[0], 1), generator=gen, **self.t) ** (1.0 / max(n - 1, 1))
        rho[count:] = 1.0  # the aimed points on the sphere, where the maximum is
        return math.sqrt(n) * rho * u / safe_norm(u)

    def support(self, v: torch.Tensor, vs: torch.Tensor, c: float, cs: float, tol: float) -> tuple[float, float]:
        pw = self.directions(v[None])[0]
        q0 = self.beta @ self.Wq.T + self.bq
        vr = vs if self.R is None else vs @ self.R.abs()
        if self.R is not None:
            q0 = q0 @ self.R.T
        scale = math.sqrt(self.n) * float(safe_norm((self.g.abs() * (vr @ self.Wq.abs()))[None])) + float(q0.abs() @ vs)
        return math.sqrt(self.n) * float(safe_norm(pw[None])) + float(q0 @ v) + c, scale + cs
