"""LayerNorm-realisable queries: the per-key search for the keys the batch search of
:mod:`.layernorm_fast` leaves (non-vertices, duplicates, candidates that failed).

For each key, the cone program max_y min_j (s_i - s_j) over ``||y|| <= sqrt(n)`` (Clarabel)
proposes a query or dual weights; the free engine's hull certificates serve as duals for
keys inside the hull.  Every proposal is checked exactly by
:mod:`lnproofs.kernel.querysets.norm`.
"""

from __future__ import annotations

import numpy as np

from ...kernel import ExactLayer, LayerNormQuerySet
from ...kernel import check_dual as _check_dual
from ...kernel import fraction_of_fmpq as _fraction
from ..cone import solve_margin_cone
from ..exact_checks import check_primal as _check_primal
from ..exact_checks import exact_margins

__all__ = ["propose", "per_key_results", "snap_into_set", "u_text"]


def snap_into_set(u_float, n: int):
    """Rationalise ``u``, project it exactly onto ``1 . u = 0`` and shrink it into ``||u||^2 <= n``.

    Returns integers ``U`` and a denominator ``D`` with ``u = U / D``.
    """
    from math import isqrt

    from ...kernel import dyadic_integers

    ints, e = dyadic_integers(np.asarray(u_float, dtype=np.float64))
    total = sum(ints)
    U = [n * x - total for x in ints]  # u - mean(u), times n / 2^e
    if e >= 0:
        U, D = [x << e for x in U], n
    else:
        D = n << -e
    norm2_num = sum(x * x for x in U)  # ||u||^2 = norm2_num / D^2
    if norm2_num > n * D * D:
        bits = 64
        # S / 2^bits <= sqrt(n D^2 / norm2_num)
        S = isqrt((n * D * D << (2 * bits)) // norm2_num)
        U, D = [x * S for x in U], D << bits
    return U, D


def u_text(U, D) -> list[str]:
    from fractions import Fraction

    from ...certificates.writers import format_fraction

    return [format_fraction(Fraction(x, D)) for x in U]


def _span_basis(query_set: LayerNormQuerySet) -> np.ndarray:
    """Orthonormal basis of the part of 1-perp that can change any score (at most d columns)."""
    arrays = query_set.arrays()
    M = arrays["gamma"][:, None] * arrays["W_q"].T  # n x d
    M = M - M.mean(axis=0, keepdims=True)
    values, vectors = np.linalg.eigh(M.T @ M)  # d x d: cheap for wide layers
    keep = values > max(values.max(initial=0.0), 0.0) * 1e-12 * max(M.shape)
    return (M @ vectors[:, keep]) / np.sqrt(values[keep])  # M V / sqrt(lambda): orthonormal columns


class _Proposer:
    """The cone program max_y min_j (s_i - s_j) over ||y|| <= sqrt(n), set up once for all keys."""

    def __init__(self, keys, query_set: LayerNormQuerySet, basis=None):
        arrays = query_set.arrays()
        self.keys = np.asarray(keys, dtype=np.float64)
        self.n = query_set.width
        self.Q = _span_basis(query_set) if basis is None else basis
        AQ = arrays["W_q"] @ (arrays["gamma"][:, None] * self.Q)  # d x r: q = AQ y + q0
        self.Y = self.keys @ AQ  # scores s_j = Y[j] . y + c[j]
        self.q0 = arrays["W_q"] @ arrays["beta"] + arrays["b_q"]
        self.c = self.keys @ self.q0
        self.AQ = AQ
        self.radius = query_set.radius

    def solve(self, index: int):
        ball = None if self.radius is None else (self.AQ, self.q0, self.radius)
        return solve_margin_cone(self.Y, self.c, index, float(np.sqrt(self.n)), self.Q, ball=ball)


def propose(keys, query_set: LayerNormQuerySet, index: int, basis=None):
    """Solve max_u min_j (s_i - s_j) over the set; returns ``(t, u, lambdas)`` (floats) or None."""
    return _Proposer(keys, query_set, basis).solve(index)


def _dual_candidates(index: int, lam: np.ndarray):
    from fractions import Fraction

    total = lam.sum()
    if not total > 0:
        return
    for cut in (1e-7, 1e-12, 0.0):
        keep = [j for j in np.flatnonzero(lam > cut * lam.max()) if j != index]
        if not keep:
            continue
        fr = [Fraction(float(lam[j])) for j in keep]
        s = sum(fr)
        if s > 0:
            yield [int(j) for j in keep], [w / s for w in fr]


def per_key_results(keys, query_set: LayerNormQuerySet, *, progress=None, indices=None) -> list[dict]:
    """Result dictionaries (certificate JSON form) for the keys ``indices`` (default all), each
    checked exactly: one cone program per key, after the free engine's hull certificates."""
    from ...certificates.writers import format_fraction

    keys = np.asarray(keys, dtype=np.float64)
    query_set.validate(keys.shape[1])
    layer = ExactLayer(keys, query_set)
    proposer = _Proposer(keys, query_set)
    N = len(keys)
    todo = list(range(N)) if indices is None else sorted({int(j) for j in indices})
    # Keys that are not vertices of the hull can never win strictly: the free engine's
    # exact convex weights are a dual certificate (g = 0 and zero offset).
    from ..certification import certify_results as free_results

    free = {r.index: r for r in free_results(keys, indices=todo)} if N > 1 else {}
    results = []
    for i in todo:
        entry = {
            "index": i,
            "status": "undecided",
            "witness": None,
            "combination": None,
            "verified": "none",
            "margin": None,
            "reason": None,
        }
        hull = free.get(i)
        if hull is not None and hull.status in ("unselectable", "tie-only") and hull.combination is not None:
            comb = hull.combination
            ok_dual, _ = _check_dual(layer, i, list(comb.indices), list(comb.weights))
            if ok_dual:
                entry.update(
                    status="not-realisable",
                    verified="exact",
                    dual={"indices": list(comb.indices), "weights": [format_fraction(w) for w in comb.weights]},
                )
                results.append(entry)
                continue
        if N == 1:
            proposal = (1.0, np.zeros(query_set.width), np.zeros(1))
        else:
            proposal = proposer.solve(i)
        if proposal is None:
            entry["reason"] = "the cone solver gave no usable answer"
            results.append(entry)
            continue
        t, u_float, lam = proposal
        U, D = snap_into_set(u_float, layer.n)
        ok, msg, q = _check_primal(layer, i, U, D)
        margin = exact_margins(layer, [(i, q)])[0] if ok else None
        if ok:
            q = layer.query(U, D)
            entry.update(
                status="selectable",
                verified="exact",
                witness=[format_fraction(_fraction(q[a, 0])) for a in range(layer.d)],
                margin=None if margin is None else float(_fraction(margin)),
                u=u_text(U, D),
            )
            results.append(entry)
            continue
        reason = msg
        for indices, weights in _dual_candidates(i, lam):
            ok_dual, msg_dual = _check_dual(layer, i, indices, weights)
            if ok_dual:
                entry.update(
                    status="not-realisable",
                    verified="exact",
                    reason=None,
                    dual={"indices": indices, "weights": [format_fraction(w) for w in weights]},
                    margin=t,
                )
                break
            reason = f"{msg}; {msg_dual}"
        else:
            entry["reason"] = (
                f"solver optimum {t:.3g}; neither the query nor the dual bound could be verified exactly ({reason})"
            )
        results.append(entry)
        if progress is not None:
            progress(i + 1, N)
    return results
