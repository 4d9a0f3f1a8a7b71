"""Simplex sweeps: one exact solve settles every pending key inside a certified simplex.

Simplices of verified hull vertices, extreme along rotated regular-simplex directions,
cover much of the deep interior of the hull; the keys inside one (a float test in the
engine's proposal coordinates) get exact barycentric weights from one integer solve with
python-flint, and each combination is checked by :mod:`lnproofs.kernel.checker`.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..kernel import Combination, KeyResult
from .exact_checks import check_combination, key_row

__all__ = ["SimplexSweep"]


class SimplexSweep:
    """Reuse a certified simplex: every pending key inside it gets exact weights at once."""

    def __init__(self, engine):
        self.engine = engine
        self.misses = 0

    @property
    def active(self) -> bool:
        return self.misses <= 50

    def fat_supports(self, count: int):
        """Simplices of hull vertices extreme along rotated regular-simplex directions:
        together they cover much of the deep interior (made one at a time, as they are used)."""
        e = self.engine
        verts = np.array(sorted(e.vertices), dtype=np.int64)
        if verts.size < e.d + 1:
            return
        base = np.eye(e.d + 1) - 1.0 / (e.d + 1)
        basis = np.linalg.qr(base[:, : e.d])[0]  # orthonormal basis of the sum-zero plane
        regular = base @ basis  # d+1 directions of a regular simplex
        for _ in range(count):
            R = np.linalg.qr(e.rng.standard_normal((e.d, e.d)))[0]
            picks = verts[np.argmax(e.X[verts] @ (regular @ R).T, axis=0)]
            if len(set(picks.tolist())) == e.d + 1:
                yield [int(p) for p in picks]

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
        inside = cand[np.all(coords > 1e-9, axis=0)]
        if inside.size == 0:
            self.misses += 1
            return []
        self.misses = 0
        ek = e.ek
        A = fmpz_mat([[key_row(ek, j)[r] for j in support] for r in range(e.d)] + [[1] * len(support)])
        B = fmpz_mat([[key_row(ek, int(i))[r] for i in inside] for r in range(e.d)] + [[1] * len(inside)])
        try:
            X = A.solve(B)
        except ZeroDivisionError:
            return []
        out = []
        for c, i in enumerate(inside.tolist()):
            weights = [Fraction(int(X[r, c].p), int(X[r, c].q)) for r in range(e.d + 1)]
            if min(weights) <= 0:
                continue
            comb = Combination(tuple(support), tuple(weights))
            if check_combination(ek, i, comb, strict=True) is None:
                out.append(KeyResult(i, "unselectable", None, comb, "exact"))
                if first_only:
                    break
        return out
