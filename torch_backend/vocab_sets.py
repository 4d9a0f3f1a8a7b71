"""The query sets of a vocabulary certificate, as the numeric re-check of ``lnproofs.vocab/1`` sees them.

A token's witness lives in the set's own space: a query ``q`` for ``free`` and ``box`` queries, a
norm input ``u`` for the norm sets (``layernorm``, ``rmsnorm``, ``layernorm_rotary``), whose query is
``q = R (W_q (g * u + beta) + b_q)`` (``R`` the rotation or ``I``; see
:mod:`lnproofs.kernel.querysets.norm`).  Every score is ``q . k_j`` plus, for a box with a bias,
``b_j``.  :class:`VocabSet` maps witnesses to queries (with the magnitudes their rounding is
measured against), tests membership as far as floats tell, samples queries (random ones and ones
aimed at given keys), and evaluates the largest value of ``q . v + c`` over the set for the dual
bounds of ``not-realisable`` claims.  :func:`own_directions` rebuilds the integer rows ``J_i`` of a
norm set's own-key witnesses ``u_i = t_i J_i`` from their definition, in torch.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from lnproofs.kernel import CertificateFormatError, query_set_from_json

from .geometry import safe_norm
from .sampling import unit_vectors

__all__ = ["VocabSet", "NORM_KINDS", "own_directions"]

#: the norm query sets, whose witnesses are the norm's inputs u
NORM_KINDS = ("layernorm", "rmsnorm", "layernorm_rotary")


def _rotation(qs, d: int) -> np.ndarray | None:
    """The rotation's matrix in floats (its exact entries are the table's floats)."""
    if getattr(qs, "rotation", None) is None:
        return None
    R = qs.rotation.matrix(d)
    return np.array([[int(R[a, b].p) / int(R[a, b].q) for b in range(d)] for a in range(d)])


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


class VocabSet:
    """A vocabulary certificate's query set: ``kind``, witness ``width``, ``offsets`` (bias or None)."""

    def __init__(self, spec: dict, bias, keys: np.ndarray, t: dict):
        if not isinstance(spec, dict) or "kind" not in spec:
            raise CertificateFormatError("the vocabulary certificate's query_set must be an object with a 'kind'")
        self.kind, self.t = spec["kind"], t
        N, d = keys.shape
        self.d, self.bound, self.radius, self.R = d, None, None, None
        self.offsets = None if bias is None else torch.as_tensor(np.asarray(bias, dtype=np.float64), **t)
        if self.offsets is not None and self.offsets.shape != (N,):
            raise CertificateFormatError(f"the bias array has shape {tuple(self.offsets.shape)}; expected ({N},)")
        if self.kind in ("free", "box"):
            bound = spec.get("bound") if self.kind == "box" else None
            if bound is not None and not (isinstance(bound, (int, float)) and math.isfinite(bound) and bound > 0):
                raise CertificateFormatError(f"query_set.bound {bound!r} must be a positive number or null")
            self.bound, self.width, self.norm = None if bound is None else float(bound), d, False
            return
        if self.kind not in NORM_KINDS:
            raise CertificateFormatError(
                f"query set kind {self.kind!r} is not re-checked numerically for a vocabulary "
                f"certificate; accepted: free, box, {', '.join(NORM_KINDS)}"
            )
        qs = query_set_from_json(dict(spec))  # the set's definition, read by the kernel's schema
        qs.validate(d)
        arrays = qs.arrays()
        self.norm, self.centred, self.n = True, bool(qs.centred), qs.width
        self.width = self.n
        self.W_np, self.g_np = arrays["W_q"], arrays[qs.G_NAME]
        self.g, self.beta = (torch.as_tensor(arrays[k], **t) for k in (qs.G_NAME, "beta"))
        self.Wq, self.bq = torch.as_tensor(arrays["W_q"], **t), torch.as_tensor(arrays["b_q"], **t)
        R = _rotation(qs, d)
        self.R = None if R is None else torch.as_tensor(R, **t)
        self.radius = getattr(qs, "radius", None)

    def selection(self) -> np.ndarray | None:
        """The column each u coordinate reads when ``W_q`` is a 0/1 selection (one 1 per column), else None."""
        W = self.W_np
        if self.R is not None or not (np.isin(W, (0.0, 1.0)).all() and (W.sum(axis=0) == 1).all()):
            return None
        return W.argmax(axis=0)

    def queries(self, W: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(Q, A)``: the queries of the witness rows ``W``, and the magnitudes of the terms that made them."""
        if not self.norm:
            return W, W.abs()
        Q = (self.g * W + self.beta) @ self.Wq.T + self.bq
        A = (self.g.abs() * W.abs() + self.beta.abs()) @ self.Wq.abs().T + self.bq.abs()
        if self.R is not None:
            Q, A = Q @ self.R.T, A @ self.R.abs().T
        return Q, A

    def membership(self, W: torch.Tensor, tol: float) -> list:
        """For each witness row, None when it is in the set as far as floats tell, else why not."""
        out = [None] * W.shape[0]
        bad = torch.zeros(W.shape[0], dtype=torch.bool, device=W.device)
        if not self.norm:
            if self.bound is not None:
                top = W.abs().amax(1)
                for r in torch.nonzero(top > self.bound * (1 + tol)).flatten().tolist():
                    out[r] = f"its witness leaves the box |q_l| <= {self.bound!r} (largest entry {float(top[r]):.17g})"
            return out
        norms = safe_norm(W)[:, 0]
        limit = math.sqrt(self.n)
        for r in torch.nonzero(norms > limit * (1 + tol)).flatten().tolist():
            out[r] = f"its u has norm {float(norms[r]):.17g} > sqrt(n) = {limit:.17g}"
        if self.centred:
            s, a = W.sum(1), W.abs().sum(1)
            bad = s.abs() > tol * a + tol
            for r in torch.nonzero(bad).flatten().tolist():
                out[r] = out[r] or f"its u is not orthogonal to the ones vector (sum {float(s[r]):.3e})"
        if self.radius is not None:
            Q, _ = self.queries(W)
            qn = safe_norm(Q)[:, 0]
            for r in torch.nonzero(qn > self.radius * (1 + tol)).flatten().tolist():
                out[r] = out[r] or f"its query has norm {float(qn[r]):.17g} > the radius {self.radius!r}"
        return out

    def directions(self, V: torch.Tensor) -> torch.Tensor:
        """The norm input ``u`` that best aims along each key-space row of ``V``: ``P (g * W_q^T R^T v)``."""
        if self.R is not None:
            V = V @ self.R
        w = self.g * (V @ self.Wq)
        return w - w.mean(-1, keepdim=True) if self.centred else w

    def sample(self, count: int, gen, aims: torch.Tensor, spread: float) -> torch.Tensor:
        """Witness rows: ``count`` random points of the set, and for each row ``v`` of ``aims``
        (key-space directions) the point that maximises ``q . v`` and a perturbed one.  ``spread``:
        the scale of free queries against the bias (unbounded sets only)."""
        opts = {"gen": gen, **self.t}
        if self.norm:
            n = self.n
            u = unit_vectors(count, n, **opts)
            if aims.numel():
                ua = self.directions(aims)
                u = torch.cat([u, ua, ua + 0.1 * safe_norm(ua) * unit_vectors(ua.shape[0], n, **opts)])
            if self.centred:
                u = u - u.mean(-1, keepdim=True)
            rho = torch.rand((u.shape[0], 1), generator=gen, **self.t) ** (1.0 / max(n - 1, 1))
            rho[count:] = 1.0  # the aimed points on the sphere, where the maximum is
            return math.sqrt(n) * rho * u / safe_norm(u)
        d = self.d
        if self.bound is not None:
            q = (2 * torch.rand((count, d), generator=gen, **self.t) - 1) * self.bound
            if aims.numel():
                corner = self.bound * torch.sign(aims)
                flip = torch.where(torch.rand(aims.shape, generator=gen, **self.t) < 0.1, -1.0, 1.0).to(aims.dtype)
                q = torch.cat([q, corner, corner * flip])
            return q
        q = unit_vectors(count, d, **opts)
        if aims.numel():
            a = aims / safe_norm(aims)
            q = torch.cat([q, a, a + 0.1 * unit_vectors(a.shape[0], d, **opts)])
        if self.offsets is None:
            return q
        radius = spread * 10.0 ** (6 * torch.rand((q.shape[0], 1), generator=gen, **self.t) - 3)
        return q * radius / safe_norm(q)

    def in_radius(self, Q: torch.Tensor) -> torch.Tensor:
        """Rows of ``Q`` inside the set's ball ``||q|| <= radius`` (all when it has none)."""
        if self.radius is None:
            return torch.ones(Q.shape[0], dtype=torch.bool, device=Q.device)
        return safe_norm(Q)[:, 0] <= self.radius

    def support(self, v: torch.Tensor, vs: torch.Tensor, c: float, cs: float, tol: float) -> tuple[float, float]:
        """``(h, scale)``: the largest ``q . v + c`` over the set (the dual bound of a ``not-realisable``
        claim, which must not be positive) and the magnitude its rounding is measured against
        (``vs``, ``cs``: the magnitudes of the terms that made ``v`` and ``c``)."""
        if not self.norm:
            if self.bound is None:  # unbounded: bounded only where v = 0
                return (math.inf if bool((v.abs() > tol * vs).any()) else c), float(vs.sum()) + cs
            return self.bound * float(v.abs().sum()) + c, self.bound * float(vs.sum()) + cs
        pw = self.directions(v[None])[0]
        q0 = self.beta @ self.Wq.T + self.bq
        vr = vs if self.R is None else vs @ self.R.abs()
        if self.R is not None:
            q0 = q0 @ self.R.T
        scale = math.sqrt(self.n) * float(safe_norm((self.g.abs() * (vr @ self.Wq.abs()))[None])) + float(q0.abs() @ vs)
        return math.sqrt(self.n) * float(safe_norm(pw[None])) + float(q0 @ v) + c, scale + cs
