"""Proposals for the RMSNorm query set ``q = R (W_q (gain * u) + b_q)``, ``||u|| <= sqrt(n)``.

The schema and the exact checks live in :mod:`lnproofs.kernel.querysets.norm`; here a
cone program proposes, for each key, either a query ``u`` (made exact and pulled into the
ball, then checked) or dual weights (checked exactly).  Keys that are not vertices of the
keys' hull get the free engine's exact convex weights as a dual certificate.
"""

from __future__ import annotations

import numpy as np

from ...kernel import ExactLayer, RMSNormQuerySet, Rotation, check_dual
from ..cone import solve_margin_cone
from ..exact_checks import check_primal, exact_margins

__all__ = ["KIND", "QUERY_SET", "RMSNormQuerySet", "Rotation", "certify", "certify_results", "propose"]

KIND, QUERY_SET = "rmsnorm", RMSNormQuerySet


def _map(query_set: RMSNormQuerySet) -> tuple[np.ndarray, np.ndarray]:
    """``(A, q0)`` in floats with ``q = A u + q0``."""
    arrays = query_set.arrays()
    R = (
        np.eye(query_set.dim)
        if query_set.rotation is None
        else np.array([[float(x) for x in row] for row in query_set.rotation.matrix(query_set.dim).tolist()])
    )
    return R @ (arrays["W_q"] * arrays["gain"][None, :]), R @ (arrays["W_q"] @ arrays["beta"] + arrays["b_q"])


class _Proposer:
    """max_y min_j (s_i - s_j) over ||y|| <= sqrt(n), with u = Q y in the row space of A."""

    def __init__(self, keys, query_set: RMSNormQuerySet):
        A, q0 = _map(query_set)
        self.keys = np.asarray(keys, dtype=np.float64)
        self.n = query_set.width
        if query_set.centred:  # u on 1-perp: only A P matters
            A = A - A.mean(axis=1, keepdims=True)
        _, s, vt = np.linalg.svd(A, full_matrices=False)
        keep = s > (s.max(initial=0.0) * 1e-12 * max(A.shape))
        self.Q = vt[keep].T  # n x r orthonormal columns
        self.Y = self.keys @ (A @ self.Q)  # s_j = Y[j] . y + c[j]
        self.c = self.keys @ q0

    def solve(self, index: int):
        return solve_margin_cone(self.Y, self.c, index, float(np.sqrt(self.n)), self.Q)


def propose(keys, query_set: RMSNormQuerySet, index: int):
    """Solve max_u min_j (s_i - s_j) over the set; ``(t, u, lambdas)`` (floats) or None."""
    return _Proposer(keys, query_set).solve(index)


def _snap_into_ball(u_float, n: int, centred: bool = False):
    """Rationalise ``u`` (projected exactly onto ``1 . u = 0`` when ``centred``) and shrink it
    into ``||u||^2 <= n``: integers ``U``, denominator ``D``."""
    from math import isqrt

    from ...kernel import dyadic_integers

    U, e = dyadic_integers(np.asarray(u_float, dtype=np.float64))
    D = 1
    if centred:  # n u - (1.u) 1, over n
        total = sum(U)
        U, D = [n * x - total for x in U], n
    if e >= 0:
        U = [x << e for x in U]
    else:
        D = D << -e
    norm2 = sum(x * x for x in U)
    if norm2 > n * D * D:
        bits = 64
        S = isqrt((n * D * D << (2 * bits)) // norm2)
        U, D = [x * S for x in U], D << bits
    return U, D


def _dual_candidates(index: int, lam: np.ndarray):
    from fractions import Fraction

    if not lam.sum() > 0:
        return
    for cut in (1e-7, 1e-12, 0.0):
        keep = [j for j in np.flatnonzero(lam > cut * lam.max()) if j != index]
        fr = [Fraction(float(lam[j])) for j in keep]
        if keep and sum(fr) > 0:
            yield [int(j) for j in keep], [w / sum(fr) for w in fr]


def certify_results(keys, query_set: RMSNormQuerySet, *, indices=None, progress=None, query_map=None) -> list[dict]:
    """Result dictionaries (certificate JSON form) for the keys, each checked exactly; ``query_map``:
    the set's :class:`~lnproofs.kernel.ExactQueryMap`, when the caller holds it."""
    from fractions import Fraction

    from ...certificates.writers import format_fraction
    from ...kernel import fraction_of_fmpq
    from ..certification import certify_results as free_results

    keys = np.asarray(keys, dtype=np.float64)
    query_set.validate(keys.shape[1])
    layer = ExactLayer(keys, query_set, query_map)
    N = len(keys)
    todo = list(range(N)) if indices is None else sorted({int(j) for j in indices})
    free = {r.index: r for r in free_results(keys, indices=todo)} if N > 1 else {}
    proposer = _Proposer(keys, query_set) if N > 1 else None
    results = []
    for count, i in enumerate(todo):
        entry = {
            "index": i,
            "status": "undecided",
            "witness": None,
            "combination": None,
            "verified": "none",
            "margin": None,
            "reason": None,
        }
        results.append(entry)
        hull = free.get(i)
        if hull is not None and hull.status in ("unselectable", "tie-only") and hull.combination is not None:
            comb = hull.combination
            if check_dual(layer, i, list(comb.indices), list(comb.weights))[0]:
                entry.update(
                    status="not-realisable",
                    verified="exact",
                    dual={"indices": list(comb.indices), "weights": [format_fraction(w) for w in comb.weights]},
                )
                continue
        proposal = (1.0, np.zeros(query_set.width), np.zeros(1)) if N == 1 else proposer.solve(i)
        if proposal is None:
            entry["reason"] = "the cone solver gave no usable answer"
            continue
        t, u_float, lam = proposal
        U, D = _snap_into_ball(u_float, layer.n, query_set.centred)
        ok, msg, q = check_primal(layer, i, U, D)
        margin = exact_margins(layer, [(i, q)])[0] if ok else None
        if ok:
            q = layer.query(U, D)
            entry.update(
                status="selectable",
                verified="exact",
                witness=[format_fraction(fraction_of_fmpq(q[a, 0])) for a in range(layer.d)],
                margin=None if margin is None else float(fraction_of_fmpq(margin)),
                u=[format_fraction(Fraction(x, D)) for x in U],
            )
            continue
        reason = msg
        for idx, weights in _dual_candidates(i, lam):
            ok_dual, msg_dual = check_dual(layer, i, idx, weights)
            if ok_dual:
                entry.update(
                    status="not-realisable",
                    verified="exact",
                    margin=t,
                    dual={"indices": idx, "weights": [format_fraction(w) for w in weights]},
                )
                break
            reason = f"{msg}; {msg_dual}"
        else:
            entry["reason"] = (
                f"solver optimum {t:.3g}; neither the query nor the dual bound could be verified exactly ({reason})"
            )
        if progress is not None:
            progress(count + 1, len(todo))
    return results


def certify(keys, query_set: RMSNormQuerySet, *, indices=None, progress=None, **_options) -> list:
    """One :class:`~lnproofs.kernel.KeyResult` per key (selectable, not-realisable, undecided)."""
    from ...kernel import KeyResult

    callback = progress if progress and callable(progress) else None
    arr = np.asarray(getattr(keys, "array", keys), dtype=np.float64)
    return [KeyResult.from_json(entry) for entry in certify_results(arr, query_set, indices=indices, progress=callback)]
