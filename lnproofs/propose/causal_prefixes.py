"""Prefix tests of the causal search (:mod:`lnproofs.propose.causal`): does key j win over keys 0..t?

One class per kind of query set, each answering ``("win", witness, covered)``, ``("stop",
evidence)`` or ``("fail", reason)`` for a prefix 0..t: :class:`FreeSearch` (free queries: one
linear program whose cost favours early keys, or its infeasibility ray; Clarkson-style LPs when
that fails), :class:`SetSearch` (any query set: its own proposer on the prefix, for key j only) and
:class:`NormSearch` (LayerNorm or RMSNorm sets without rotation: the set's cone program, its query
made exact and scored against every key).  A witness is scored exactly against every later key
(:func:`covered`); float weights are made exact only for the stop that is kept (:class:`Weights`).
Nothing here is a claim: the whole record goes through :func:`lnproofs.kernel.check_causal`.
"""

from __future__ import annotations

import numpy as np

from .. import kernel
from ..certificates.writers import combination_to_json, result_to_json
from ..kernel import ExactKeys, integer_vector_of_fractions

__all__ = ["FreeSearch", "NormSearch", "SetSearch", "Weights", "covered"]

_ROUNDS = 60  # LP rounds of one free prefix test
_K0 = 2  # initial rivals of a free prefix test: _K0 * (d + 1) keys of the prefix


def covered(ek: ExactKeys, j: int, Q: list[int]) -> int:
    """The last prefix end t such that the query ``Q`` (integers) makes k_j beat every other key
    of 0..t strictly, exactly; j - 1 when it does not even beat the keys before j."""
    scores = [int(s) for s in ek.int_scores(Q)]
    mine = scores[j]
    for i, s in enumerate(scores):
        if i != j and s >= mine:
            return i - 1 if i > j else j - 1
    return ek.n - 1


class Weights:
    """Float convex weights proposed for key j over keys 0..t; made exact only when kept."""

    def __init__(self, j: int, t: int, support: list[int], weights: np.ndarray):
        self.j, self.t, self.support, self.weights = j, t, support, weights

    def exact(self, ek: ExactKeys) -> dict | str:
        from .repair import exact_weights

        comb = exact_weights(ek, self.j, self.support, self.weights, strict=False)
        if comb is None:
            return f"the weights over keys 0..{self.t} could not be made exact"
        return {"combination": combination_to_json(comb)}


class FreeSearch:
    """Prefix tests for free queries: is k_j in the hull of the other keys of 0..t?"""

    descend = True  # weights found favour early keys: test just below their last key next

    def __init__(self, K: np.ndarray, ek: ExactKeys):
        top = float(np.max(np.abs(K))) if K.size else 0.0
        X = np.ldexp(K, -int(np.frexp(top)[1]) if top else 0)
        X = X - X.mean(axis=0)
        self.X = X / (float(np.max(np.abs(X))) or 1.0)
        self.ek, self.T, self.d = ek, len(K), K.shape[1]
        self._lp = None

    @property
    def lp(self):
        if self._lp is None:
            from .lp_rounds import LP

            self._lp = LP()
            self._lp.solver.setOptionValue("presolve", "off")  # small dense LPs: about twice as fast
        return self._lp

    def _separate(self, j: int, C: list[int]):
        """max s s.t. q.(x_c - x_j) + s <= 0 (c in C), |q| <= 1, s <= 1; (s, q, duals)."""
        A = np.hstack([self.X[C] - self.X[j], np.ones((len(C), 1))])
        cost = np.zeros(self.d + 1)
        cost[-1] = -1.0
        got = self.lp.solve(
            cost,
            A,
            np.full(len(C), -np.inf),
            np.zeros(len(C)),
            np.append(-np.ones(self.d), -np.inf),
            np.append(np.ones(self.d), 1.0),
        )
        if got is None:
            return None, None, None
        x, dual = got
        return float(x[-1]), x[:-1], -dual

    def _earliest(self, j: int, universe: np.ndarray, ray: bool = False):
        """Convex weights for x_j over ``universe`` that favour early keys (cost steeply
        increasing with the index), so that their last key, hence the stop they prove, is early.
        ``ray``: when there are none, the LP's infeasibility ray (a query for which x_j beats
        every key of ``universe``, checked here in floats) as ``("ray", q)``."""
        rank = (universe - universe[0]) / max(1, universe[-1] - universe[0])
        cost = 10.0 ** (8 * rank)
        A = np.vstack([(self.X[universe] - self.X[j]).T, np.ones(universe.size)])
        rhs = np.append(np.zeros(self.d), 1.0)
        got = self.lp.solve(cost, A, rhs, rhs, np.zeros(universe.size), np.full(universe.size, np.inf))
        if got is None:
            if ray and str(self.lp.solver.getModelStatus()).endswith("kInfeasible"):
                _, has_ray, values = self.lp.solver.getDualRay()
                for sign in (1.0, -1.0):
                    q = sign * np.asarray(values[: self.d], dtype=np.float64)
                    if has_ray and np.all((self.X[universe] - self.X[j]) @ q < 0):
                        return ("ray", q)
            return None
        lam = got[0]
        keep = np.flatnonzero(lam > 1e-12 * lam.max())
        return [int(universe[c]) for c in keep], lam[keep] / lam[keep].sum()

    def test(self, j: int, t: int, rivals: set):
        """``("win", witness, covered)``, ``("stop", Combination)`` or ``("fail", reason)`` for prefix 0..t."""
        universe = np.array([i for i in range(t + 1) if i != j], dtype=np.int64)
        if universe.size == 0:
            return self._win(j, self.X[j] if np.any(self.X[j]) else np.ones(self.d))
        direct = self._earliest(j, universe, ray=True)  # one LP: early weights, or a separating ray
        if direct is not None and direct[0] == "ray":
            got = self._win(j, direct[1])
            if got[2] >= t:
                return got
        elif direct is not None:
            rivals.update(direct[0])
            return ("stop", Weights(j, t, *direct))
        xj = self.X[j]
        k0 = min(universe.size, _K0 * (self.d + 1))
        C = [int(i) for i in universe[np.argsort(-(self.X[universe] @ xj))[:k0]]]
        C += [i for i in sorted(rivals) if i <= t and i != j and i not in set(C)]
        for _ in range(_ROUNDS):
            s, q, lam = self._separate(j, C)
            if s is None:
                return ("fail", "the linear program solver did not finish")
            if s <= 1e-12:
                keep = np.flatnonzero(lam > 0)
                support, weights = [C[c] for c in keep], lam[keep] / lam[keep].sum()
                early = self._earliest(j, universe) if t > j else None  # at t = j any weights stop at j
                if early is not None and max(early[0]) < max(support):
                    support, weights = early
                rivals.update(support)
                return ("stop", Weights(j, t, support, weights))
            scores = self.X[universe] @ q
            beat = universe[scores >= xj @ q - 1e-12 * s]
            fresh = [int(i) for i in beat[np.argsort(-(self.X[beat] @ q))] if int(i) not in set(C)]
            if not fresh:
                rivals.update(C)
                return self._win(j, q)
            C += fresh[: self.d + 1]
        return ("fail", f"no decision for keys 0..{t} after {_ROUNDS} linear programs")

    def _win(self, j: int, q: np.ndarray):
        top = float(np.max(np.abs(q)))
        witness = np.ldexp(np.round(q / top * 2.0**30), -30)  # short dyadic floats
        Q, _ = integer_vector_of_fractions(witness.tolist())
        return (
            "win",
            {"status": "selectable", "witness": witness.tolist(), "verified": "exact"},
            covered(self.ek, j, Q),
        )


class SetSearch:
    """Prefix tests for a realisable query set: its own proposer on keys 0..t, for key j only."""

    descend = False  # bisection

    def __init__(self, K: np.ndarray, ek: ExactKeys, query_set, module, seed: int):
        self.K, self.ek, self.qs, self.module, self.seed = K, ek, query_set, module, seed

    def test(self, j: int, t: int, rivals: set):
        from ..kernel import to_fraction

        options = {"reference": True} if isinstance(self.qs, kernel.LayerNormQuerySet) else {}
        result = next(
            r
            for r in self.module.certify(self.K[: t + 1], self.qs, indices=[j], seed=self.seed, **options)
            if r.index == j
        )
        data = result_to_json(result)
        if result.status == "selectable" and result.witness is not None:
            Q, _ = integer_vector_of_fractions([to_fraction(w) for w in result.witness])
            return ("win", data, covered(self.ek, j, Q))
        if result.status in ("not-realisable", "tie-only", "unselectable"):
            return ("stop", data)
        return ("fail", result.reason or f"key {j} is undecided over keys 0..{t}")


class NormSearch:
    """Prefix tests for a norm query set (LayerNorm or RMSNorm, no rotation): the set's cone
    program on keys 0..t for key j; the query made exactly from its ``u`` is scored exactly
    against every key (one exact layer for the whole sequence), and its dual weights are checked
    with :func:`~lnproofs.kernel.check_dual`, which only reads the keys it names."""

    descend = False  # bisection

    def __init__(self, K: np.ndarray, ek: ExactKeys, query_set, fallback, query_map=None):
        from ..kernel import ExactLayer

        self.K, self.ek, self.qs, self.fallback = K, ek, query_set, fallback
        self.layer = ExactLayer(K, query_set, query_map)
        self._basis = None

    def _proposer(self, t: int):
        if isinstance(self.qs, kernel.LayerNormQuerySet):
            from .querysets.layernorm_perkey import _Proposer, _span_basis

            if self._basis is None:
                self._basis = _span_basis(self.qs)
            return _Proposer(self.K[: t + 1], self.qs, self._basis)
        from .querysets.rmsnorm import _Proposer

        return _Proposer(self.K[: t + 1], self.qs)

    def test(self, j: int, t: int, rivals: set):
        from fractions import Fraction

        from flint import fmpq_mat

        from ..certificates.writers import format_fraction
        from ..kernel import check_dual, fraction_of_fmpq
        from .querysets.rmsnorm import _dual_candidates, _snap_into_ball

        layer = self.layer
        got = (1.0, np.zeros(layer.n), np.zeros(1)) if t == 0 else self._proposer(t).solve(j)
        if got is None:
            return self.fallback.test(j, t, rivals)
        value, u, lam = got
        U, D = _snap_into_ball(u, layer.n, layer.centred)
        q = layer.query(U, D)
        scores = fmpq_mat(layer.keys.integer_matrix()) * q  # the scores over the keys' common power of two: same order
        mine = scores[j, 0]
        beaten = next((i for i in range(layer.N) if i != j and scores[i, 0] >= mine), layer.N)
        covered = beaten - 1 if beaten > j else j - 1
        if covered >= t:
            return (
                "win",
                {
                    "status": "selectable",
                    "verified": "exact",
                    "witness": [format_fraction(fraction_of_fmpq(q[a, 0])) for a in range(layer.d)],
                    "u": [format_fraction(Fraction(x, D)) for x in U],
                },
                covered,
            )
        for indices, weights in _dual_candidates(j, lam):
            if check_dual(layer, j, indices, weights)[0]:
                return (
                    "stop",
                    {
                        "status": "not-realisable",
                        "verified": "exact",
                        "margin": value,
                        "dual": {"indices": indices, "weights": [format_fraction(w) for w in weights]},
                    },
                )
        return self.fallback.test(j, t, rivals)  # the set's own search: free hull weights first
