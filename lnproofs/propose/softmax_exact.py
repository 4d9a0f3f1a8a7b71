"""The exact pieces of :mod:`lnproofs.propose.softmax`: a query set's exact operations (a
proposal put into the set in rational arithmetic, its support functions as intervals), the
weights of exact scores, and a query's weight and norm enclosed by interval arithmetic."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..kernel import LayerNormQuerySet, SubspaceQuerySet
from .pivots import pivot_columns

__all__ = ["ExactSet", "evaluate", "gibbs", "sqrt_below", "text"]


class ExactSet:
    """Exact operations for one query set: snap a proposal into it, support functions."""

    def __init__(self, keys: np.ndarray, query_set):
        from ..kernel import to_fraction

        self.keys = keys
        self.N, self.d = keys.shape
        self.query_set = query_set
        self.subspace = isinstance(query_set, SubspaceQuerySet)
        self.layernorm = isinstance(query_set, LayerNormQuerySet)
        self.radius = None if getattr(query_set, "radius", None) is None else Fraction(query_set.radius)
        self.K = [tuple(map(to_fraction, row)) for row in keys]
        if self.subspace:
            self._setup_subspace()
        if self.layernorm:
            from ..kernel import ExactLayer

            self.layer = ExactLayer(keys, query_set)

    def _setup_subspace(self):
        from flint import fmpq_mat

        from ..kernel import fmpq_matrix

        W = fmpq_matrix(self.query_set.matrix)  # m x d
        rref, rank = W.transpose().rref()  # pivots pick independent rows of W
        pivots = pivot_columns(rref, rank, W.nrows())
        Wb = fmpq_mat([[W[r, c] for c in range(self.d)] for r in pivots])
        self.W = W
        self.Wb = Wb
        self.G_inv = (Wb * Wb.transpose()).inv()

    # -- support functions (exact squares) ----------------------------------------
    def span_norm_sq(self, c) -> Fraction:
        """``sigma(c)^2``: squared largest ``c.q`` over unit queries in the set's linear span."""
        from flint import fmpq_mat

        from ..kernel import fmpq_of, fraction_of_fmpq

        if self.subspace:
            v = self.Wb * fmpq_mat(self.d, 1, [fmpq_of(x) for x in c])
            return fraction_of_fmpq((v.transpose() * self.G_inv * v)[0, 0])
        return sum((x * x for x in c), Fraction(0))

    def support(self, c, ctx):
        """An interval containing ``h(c) = max c.q`` over the set (``None`` if unbounded)."""
        from ..kernel import fraction_of_fmpq
        from .intervals import interval, sqrt_of

        if self.layernorm:
            from ..kernel import integer_vector_of_fractions

            C, Dc = integer_vector_of_fractions(c)
            n_pg2, offset = self.layer.direction_terms(C, Dc)
            return sqrt_of(fraction_of_fmpq(n_pg2), ctx) + interval(fraction_of_fmpq(offset), ctx)
        if self.radius is None:
            return None
        return interval(self.radius, ctx) * sqrt_of(self.span_norm_sq(c), ctx)

    # -- putting a proposal into the set exactly ---------------------------------------
    def snap(self, variable) -> list[Fraction] | None:
        """An exact query in the set from the solver's variable, or None."""
        from ..kernel import fraction_of_fmpq

        if self.layernorm:
            from .querysets.layernorm_perkey import snap_into_set as _snap_into_set

            U, D = _snap_into_set(variable, self.layer.n)
            q = self.layer.query(U, D)
            query = [fraction_of_fmpq(q[a, 0]) for a in range(self.d)]
        elif self.subspace:
            from ..kernel import to_fraction

            z = [to_fraction(x) for x in variable]
            query = [
                sum((z[r] * fraction_of_fmpq(self.W[r, a]) for r in range(len(z))), Fraction(0)) for a in range(self.d)
            ]
        else:
            from ..kernel import to_fraction

            query = [to_fraction(x) for x in variable]
        if self.radius is not None:
            norm_sq = sum((x * x for x in query), Fraction(0))
            if norm_sq > self.radius**2:
                if self.layernorm:
                    return None
                factor = sqrt_below(self.radius**2 / norm_sq)
                query = [factor * x for x in query]
        return query

    def scores(self, query) -> list[Fraction]:
        return [sum((a * b for a, b in zip(row, query)), Fraction(0)) for row in self.K]


def sqrt_below(x: Fraction, bits: int = 64) -> Fraction:
    """A dyadic rational ``r <= sqrt(x)``, within ``2**-bits`` relative (0 for x <= 0).

    x is scaled by 4**k so that its integer part has about 2 * bits bits, whatever the
    size of x; then isqrt(floor(x 4**k)) / 2**k <= sqrt(x)."""
    from math import isqrt

    x = Fraction(x)
    if x <= 0:
        return Fraction(0)
    k = max(0, bits - (x.numerator.bit_length() - x.denominator.bit_length()) // 2 + 1)
    scaled = x * (1 << (2 * k))
    return Fraction(isqrt(scaled.numerator // scaled.denominator), 1 << k)


def gibbs(scores: list[Fraction], factor: float) -> list[Fraction]:
    """Softmax weights of the scores in floats, rationalised and normalised exactly."""
    y = np.array([float(s) for s in scores]) * factor
    y = np.exp(y - y.max())
    p = [Fraction(float(v)) for v in y / y.sum()]
    total = sum(p)
    return [v / total for v in p]


def evaluate(es: ExactSet, target: int, query, scale_iv, ctx):
    from .intervals import bounds, softmax_weight, sqrt_of

    scores = es.scores(query)
    weight = softmax_weight([s - scores[target] for s in scores], scale_iv, ctx)
    norm = sqrt_of(sum((x * x for x in query), Fraction(0)), ctx)
    return scores, bounds(weight), bounds(norm)


def text(x: Fraction) -> str:
    from ..certificates.writers import format_fraction

    return format_fraction(x)
