"""Simplex sweeps: one exact solve settles every pending key inside a certified simplex.

Simplices of verified hull vertices, extreme along rotated regular-simplex directions,
cover much of the deep interior of the hull; the keys inside one (a float test in the
engine's proposal coordinates) get exact barycentric weights from one integer solve with
python-flint, and each combination is checked by :mod:`lnproofs.kernel.checker`.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..kernel import Combination, KeyResult, check_combinations
from .exact_checks import scaled_columns

__all__ = ["SimplexSweep"]


class SimplexSweep:
    """Reuse a certified simplex: every pending key inside it gets exact weights at once."""

    def __init__(self, engine):
        self.engine = engine
        self.misses = 0
        self.regular = None

    @property
    def active(self) -> bool:
        return self.misses <= 50

    def fat_supports(self, count: int, pool=None):
        """Simplices of hull vertices (or of the keys ``pool``) extreme along rotated regular-simplex
        directions: together they cover much of the deep interior (made one at a time, as used)."""
        e = self.engine
        verts = np.array(sorted(e.vertices) if pool is None else pool, dtype=np.int64)
        if verts.size < e.d + 1:
            return
        if self.regular is None:
            base = np.eye(e.d + 1) - 1.0 / (e.d + 1)
            basis = np.linalg.qr(base[:, : e.d])[0]  # orthonormal basis of the sum-zero plane
            self.regular = base @ basis  # d+1 directions of a regular simplex
        regular = self.regular
        for _ in range(count):
            R = np.linalg.qr(e.rng.standard_normal((e.d, e.d)))[0]
            picks = verts[np.argmax(e.X[verts] @ (regular @ R).T, axis=0)]
            if len(set(picks.tolist())) == e.d + 1:
                yield [int(p) for p in picks]

    def first_inside(self, candidates, count: int, pool=None) -> list[KeyResult]:
        """The first result of :meth:`sweep` over up to ``count`` fat simplices (none: []); any keys
        serve as corners (``pool``): the kernel checks the weights, not that corners are vertices."""
        if not len(candidates):
            return []
        for support in self.fat_supports(count, pool):
            got = self.sweep(support, candidates, first_only=True)
            if got:
                return got
        return []

    def sweep(self, support, candidates, *, first_only: bool = False) -> list[KeyResult]:
        """Results for the ``candidates`` inside the simplex of ``support`` that pass the checker
        (``first_only``: the first such result alone)."""
        from flint import fmpz_mat

        e = self.engine
        support = list(support)
        if len(support) != e.d + 1 or not len(candidates):
            return []
        M = np.vstack([e.X[support].T, np.ones(e.d + 1)])
        cand = np.asarray(candidates, dtype=np.int64)
        try:
            coords = np.linalg.solve(M, np.vstack([e.X[cand].T, np.ones(len(cand))]))
        except np.linalg.LinAlgError:
            return []
        low = coords.min(axis=0)
        inside = cand[low > 1e-9]
        if inside.size == 0:
            self.misses += 1
            return []
        self.misses = 0
        if first_only:  # the deepest keys first, a few of them
            inside = inside[np.argsort(-low[low > 1e-9], kind="stable")[:4]]
        ek = e.ek
        cols = scaled_columns(ek, support + inside.tolist())
        A = fmpz_mat([row[: len(support)] for row in cols])
        B = fmpz_mat([row[len(support) :] for row in cols])
        try:
            X = A.solve(B)
        except ZeroDivisionError:
            return []
        items = []
        for c, i in enumerate(inside.tolist()):
            weights = [Fraction(int(X[r, c].p), int(X[r, c].q)) for r in range(e.d + 1)]
            if min(weights) > 0:
                items.append((i, Combination(tuple(support), tuple(weights))))
        out = []
        for (i, comb), message in zip(items, check_combinations(ek, items[:1] if first_only else items, strict=True)):
            if message is None:  # all checked at once by the kernel
                out.append(KeyResult(i, "unselectable", None, comb, "exact"))
        return out
