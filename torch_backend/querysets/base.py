"""What every numeric query set shares: queries as their own witnesses, scores, and a ball."""

from __future__ import annotations

import math

import numpy as np
import torch

from lnproofs.kernel import CertificateFormatError

from ..geometry import safe_norm
from ..sampling import unit_vectors

__all__ = ["NumericSet", "floats", "weights_of"]


def floats(values, length, where) -> np.ndarray:
    """``values`` (numbers or ``"p/q"`` strings) as ``length`` finite floats, else one clear error."""
    from fractions import Fraction

    try:
        arr = np.array([float(Fraction(v)) if isinstance(v, str) else float(v) for v in values])
    except (TypeError, ValueError, ZeroDivisionError):
        raise CertificateFormatError(f"{where} is not a list of numbers") from None
    if arr.shape != (length,) or not np.all(np.isfinite(arr)):
        raise CertificateFormatError(f"{where} must be {length} finite numbers")
    return arr


def weights_of(evidence, i: int, N: int, t: dict, others: bool = False) -> tuple[list, torch.Tensor]:
    """``(indices, weights)`` of convex weights over keys (``others``: never key ``i`` itself), else one
    clear error naming the key."""
    idx, weights = evidence.get("indices"), evidence.get("weights")
    if (
        not isinstance(idx, list)
        or not isinstance(weights, list)
        or len(idx) != len(weights)
        or not idx
        or not all(type(j) is int and 0 <= j < N and not (others and j == i) for j in idx)
    ):
        what = "other keys, " if others else ""
        raise CertificateFormatError(
            f"key {i}: its weights need equal-length 'indices' ({what}0..{N - 1}) and 'weights'"
        )
    return idx, torch.as_tensor(floats(weights, len(idx), f"key {i} weights"), **t)


class NumericSet:
    """A query set whose witnesses are its queries ``q`` (free queries by default): ``width`` the
    witness length, ``offsets`` a bias per key (or None), ``radius`` a ball (or None), ``norm``
    whether witnesses are a norm's inputs ``u``, ``every_direction`` whether its answers are those
    of free queries (a key proved a vertex without a witness is re-checked with the theorem's query)."""

    norm = False
    every_direction = False

    def __init__(self, query_set, keys, t: dict):
        self.qs, self.t = query_set, t
        self.n_keys, self.d = keys.shape
        self.width, self.offsets = self.d, None
        self.radius = getattr(query_set, "radius", None)

    def queries(self, W: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(Q, A)``: the queries of the witness rows ``W``, and the magnitudes of the terms that made them."""
        return W, W.abs()

    def scores(self, Q: torch.Tensor, K: torch.Tensor) -> torch.Tensor:
        """``q . k_j`` (plus the key's offset) for every query row and key."""
        S = Q @ K.T
        return S if self.offsets is None else S + self.offsets

    def project(self, K: torch.Tensor) -> torch.Tensor:
        """The keys as the set sees them, for convex-combination residuals."""
        return K

    def witness(self, result: dict) -> torch.Tensor | None:
        """A selectable or tie-only result's witness row (in the set's space), or None."""
        w = result.get("witness")
        return None if w is None else torch.as_tensor(floats(w, self.d, f"key {result['index']} witness"), **self.t)

    def stated(self, result: dict, q: torch.Tensor, scale: float, tol: float) -> str | None:
        """Why a stated ``witness`` is not the query ``q`` that the result's own evidence (``z``, ``u``)
        makes (``scale``: the magnitude of the terms that made ``q``), or None; a query states itself."""
        return None

    def _differs(self, result: dict, q: torch.Tensor, scale: float, tol: float, made: str) -> str | None:
        if result.get("witness") is None:
            return None
        w = torch.as_tensor(floats(result["witness"], self.d, f"key {result['index']} witness"), **self.t)
        res = float((w - q).abs().max()) / max(scale, 1e-300)
        return None if res <= tol else f"witness differs from {made} by {res:.3e} (relative)"

    def membership(self, W: torch.Tensor, tol: float) -> list:
        """For each witness row, None when it is in the set as far as floats tell, else why not."""
        out = [None] * W.shape[0]
        if self.radius is not None:
            Q, _ = self.queries(W)
            qn = safe_norm(Q)[:, 0]
            for r in torch.nonzero(qn > self.radius * (1 + tol)).flatten().tolist():
                out[r] = f"its query has norm {float(qn[r]):.17g} > the radius {self.radius!r}"
        return out

    def sample(self, count: int, gen, aims: torch.Tensor, spread: float = 1.0) -> torch.Tensor:
        """Witness rows: ``count`` random ones and, for each row ``v`` of ``aims`` (key-space
        directions), one along ``v`` and a perturbed one."""
        opts = {"gen": gen, **self.t}
        q = unit_vectors(count, self.d, **opts)
        if aims.numel():
            a = aims / safe_norm(aims)
            q = torch.cat([q, a, a + 0.1 * unit_vectors(a.shape[0], self.d, **opts)])
        return q if self.radius is None else q * (self.radius / safe_norm(q))

    def in_radius(self, Q: torch.Tensor) -> torch.Tensor:
        """Rows of ``Q`` inside the set's ball (all when it has none)."""
        if self.radius is None:
            return torch.ones(Q.shape[0], dtype=torch.bool, device=Q.device)
        return safe_norm(Q)[:, 0] <= self.radius

    def support(self, v: torch.Tensor, vs: torch.Tensor, c: float, cs: float, tol: float) -> tuple[float, float]:
        """``(h, scale)``: the largest ``q . v + c`` over the set (a dual bound, which must not be
        positive) and the magnitude its rounding is measured against (``vs``, ``cs``: those of
        the terms that made ``v`` and ``c``)."""
        if self.radius is None:  # unbounded: bounded only where v = 0
            return (math.inf if bool((v.abs() > tol * vs).any()) else c), float(vs.sum()) + cs
        return self.radius * float(safe_norm(v[None])) + c, self.radius * float(safe_norm(vs[None])) + cs

    def dual(self, K: torch.Tensor, i: int, evidence: dict, tol: float) -> str | None:
        """Why the convex weights ``lambda`` of ``evidence`` (indices and weights over other keys) fail
        to bound every score gap ``q . (k_i - sum lambda_j k_j)`` (plus the offsets') over the set, or None."""
        idx, lam = weights_of(evidence, i, K.shape[0], self.t, others=True)
        if bool((lam < 0).any()) or abs(float(lam.sum()) - 1.0) > tol * len(idx):
            return "its weights are not a convex combination (non-negative, sum 1)"
        sel = K[torch.as_tensor(idx, device=K.device)]
        v, vs = K[i] - lam @ sel, K[i].abs() + lam @ sel.abs()
        c, cs = 0.0, 0.0
        if self.offsets is not None:
            b = self.offsets[torch.as_tensor(idx, device=K.device)]
            c, cs = float(self.offsets[i] - lam @ b), float(self.offsets[i].abs() + lam @ b.abs())
        h, scale = self.support(v, vs, c, cs, tol)
        if h > tol * scale:
            return (
                f"the largest score gap over the set, {h:.3e}, is positive (rounding scale {tol * scale:.3e}): "
                "its weights do not rule out every query"
            )
        return None
