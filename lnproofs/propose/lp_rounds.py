"""Float linear-programming rounds of the search (HiGHS): proposals only, never decisions.

:class:`LPRounds` is mixed into :class:`lnproofs.propose.engine._Engine`; it reads the
engine's proposal coordinates ``X`` (one row per distinct key), its verified ``vertices``
and its exact keys ``ek``.  For one key it grows a candidate set Clarkson style until a
small LP gives a separating query (a witness proposal) or convex weights inside the
candidates; weights are then repaired exactly (:mod:`lnproofs.propose.repair`) and put
through :mod:`lnproofs.kernel.checker` before anything is reported.
"""

from __future__ import annotations

import numpy as np

from ..execution.threads import highs_threads
from ..kernel import Combination, check_witnesses
from .exact_checks import check_combination, key_row

__all__ = ["LP", "LPRounds", "LP_ROUNDS"]

LP_ROUNDS = 40
_K0 = 4  # initial candidates per key: _K0 * (d + 1) hull vertices


def _quiet(make):
    """``make()`` with the process's C-level standard output sent to the null device meanwhile:
    HiGHS prints its banner when the first solver of a process is created, before any option
    can be set, and a solver's banner is never shown (stdout belongs to --json output)."""
    import ctypes
    import os
    import sys

    sys.stdout.flush()
    try:
        libc = ctypes.CDLL(None)
        null = os.open(os.devnull, os.O_WRONLY)
    except OSError:  # no C library handle or null device here: the banner may show
        return make()
    saved = os.dup(1)
    try:
        os.dup2(null, 1)
        return make()
    finally:
        libc.fflush(None)
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)


class LP:
    """Dense linear programs with HiGHS (highspy), one solver object reused."""

    def __init__(self):
        import highspy

        self.hs = highspy
        self.inf = highspy.kHighsInf
        self.solver = _quiet(highspy.Highs)
        self.solver.setOptionValue("output_flag", False)
        self.solver.setOptionValue("threads", highs_threads())  # the workers' budget: lnproofs.execution.threads

    def solve(self, cost, A, row_lower, row_upper, col_lower, col_upper):
        """minimise cost.x s.t. row_lower <= A x <= row_upper, col bounds; (x, row duals) or None."""
        hs = self.hs
        m, n = A.shape
        lp = hs.HighsLp()
        lp.num_col_, lp.num_row_ = n, m
        fix = lambda v: np.asarray(v, dtype=np.float64)  # kHighsInf is IEEE infinity
        lp.col_cost_ = fix(cost)
        lp.col_lower_, lp.col_upper_ = fix(col_lower), fix(col_upper)
        lp.row_lower_, lp.row_upper_ = fix(row_lower), fix(row_upper)
        lp.a_matrix_.format_ = hs.MatrixFormat.kRowwise
        lp.a_matrix_.start_ = np.arange(0, m * n + 1, n, dtype=np.int32)
        lp.a_matrix_.index_ = np.tile(np.arange(n, dtype=np.int32), m)
        lp.a_matrix_.value_ = np.ascontiguousarray(A, dtype=np.float64).ravel()
        self.solver.clearModel()
        self.solver.passModel(lp)
        self.solver.run()
        if self.solver.getModelStatus() != hs.HighsModelStatus.kOptimal:
            return None
        sol = self.solver.getSolution()
        return np.array(sol.col_value), np.array(sol.row_dual)


class LPRounds:
    """The LP strategies of the engine (see the module docstring)."""

    @property
    def lp(self) -> LP:
        if self._lp is None:
            self._lp = LP()
        return self._lp

    # -- separating queries and hull membership, Clarkson style ---------------------------------------------------------------------
    def _separation_lp(self, i: int, C: list[int]):
        """max t s.t. q.(x_c - x_i) + t <= 0 (c in C), |q_l| <= box_l, t <= 1."""
        A = np.hstack([self.X[C] - self.X[i], np.ones((len(C), 1))])
        cost = np.zeros(self.d + 1)
        cost[-1] = -1.0
        lower = np.append(-self.box, -np.inf)
        upper = np.append(self.box, 1.0)
        got = self.lp.solve(cost, A, np.full(len(C), -np.inf), np.zeros(len(C)), lower, upper)
        if got is None:
            return None, None, None
        x, dual = got
        return float(x[-1]), x[:-1], -dual

    def _witness(self, i: int, C: list, q):
        if self.last_candidates is not None:
            self.last_candidates[i] = C
        return ("witness", q)

    def clarkson(self, i: int, initial=()):
        """('witness', q) or ('inside', support, weights) or ('failed', reason); ``initial``:
        keys to start the candidates with (the final candidates of an earlier search)."""
        xi = self.X[i]
        if self._pool is None or len(self._pool) != len(self.vertices):
            self._pool = np.array(sorted(self.vertices), dtype=np.int64)
        pool = self._pool[self._pool != i]
        if pool.size == 0:
            pool = np.array([j for j in range(self.m) if j != i], dtype=np.int64)
        k0 = min(len(pool), _K0 * (self.d + 1))
        C = list(pool[np.argsort(-(self.X[pool] @ xi))[:k0]])
        for w in self.candidate_directions:  # engines on stretched coordinates: both sides too
            extra = pool[np.argsort(-(self.X[pool] @ (xi * w[0] + w[1])))[: self.d + 1]]
            C += [int(j) for j in extra if j not in set(C)]
        C += [int(j) for j in initial if j != i and j not in set(C)]
        for _ in range(LP_ROUNDS):
            t, q, lam = self._separation_lp(i, C)
            if t is None:
                return ("failed", "the linear program solver did not finish")
            if t <= 1e-12:
                keep = lam > 0
                return ("inside", [int(C[c]) for c in np.flatnonzero(keep)], lam[keep] / lam[keep].sum())
            s = self.X @ q
            s_i = s[i]
            s[i] = -np.inf
            beat = np.flatnonzero(s >= s_i - 1e-12 * t)
            if beat.size == 0:
                return self._witness(i, C, q)
            inC = set(C)
            want = self.d + 1
            if beat.size > want + len(C):
                top = np.argpartition(-s[beat], want + len(C) - 1)[: want + len(C)]
                beat = beat[top]
            fresh = [int(j) for j in beat[np.argsort(-s[beat])] if int(j) not in inC]
            if not fresh:
                return self._witness(i, C, q)  # only ties within tolerance: let the checker decide
            C.extend(fresh[: self.d + 1])
        return ("failed", f"no decision after {LP_ROUNDS} rounds of linear programs")

    # -- stage 3 ---------------------------------------------------------------------
    def spanning_set(self) -> list[int]:
        """Affinely independent keys spanning the affine hull (chosen numerically)."""
        if self._spanning is None:
            from .repair import independent_columns

            base = sorted(self.vertices) or list(range(self.m))
            M = np.vstack([self.X[base].T, np.ones(len(base))])
            cols = independent_columns(M)
            if len(cols) < self.d + 1 and len(base) < self.m:
                base = list(range(self.m))
                M = np.vstack([self.X[base].T, np.ones(len(base))])
                cols = independent_columns(M)
            self._spanning = [base[c] for c in cols]
        return self._spanning

    def exact_spanning_set(self) -> list[int] | None:
        """Keys whose exact affine hull is that of all keys, affinely independent (or None).

        The numerical choice is kept when it is exactly right; otherwise keys are added
        greedily whenever they raise the exact affine rank (thin key sets need this)."""
        from ..kernel import affine_rank

        if self._exact_span is not False:
            return self._exact_span
        rows = lambda j: key_row(self.ek, j)  # noqa: E731
        target = self.ek.affine_rank()
        span = self.spanning_set()
        if affine_rank([rows(j) for j in span]) == target == len(span) - 1:
            self._exact_span = span
            return span
        chosen = [span[0]] if span else [0]
        for j in list(span[1:]) + [j for j in range(self.m) if j not in set(span)]:
            if len(chosen) == target + 1:
                break
            if affine_rank([rows(k) for k in chosen] + [rows(j)]) == len(chosen):
                chosen.append(j)
        self._exact_span = chosen if len(chosen) == target + 1 else None
        return self._exact_span

    def _relint_lp(self, i: int, cols: list[int], pinned: list[int]):
        """max t s.t. sum lam_j x_j = x_i, sum lam = 1, lam >= 0, lam_j >= t on ``pinned``."""
        n = len(cols)
        eq = np.hstack([np.vstack([self.X[cols].T, np.ones(n)]), np.zeros((self.d + 1, 1))])
        b = np.append(self.X[i], 1.0)
        pin = [cols.index(j) for j in pinned]
        ub = np.zeros((len(pin), n + 1))
        ub[np.arange(len(pin)), pin] = -1.0
        ub[:, -1] = 1.0
        cost = np.zeros(n + 1)
        cost[-1] = -1.0
        A = np.vstack([eq, ub])
        lo = np.concatenate([b, np.full(len(pin), -np.inf)])
        hi = np.concatenate([b, np.zeros(len(pin))])
        got = self.lp.solve(cost, A, lo, hi, np.append(np.zeros(n), -np.inf), np.append(np.full(n, np.inf), 1.0))
        if got is None:
            return None, None
        x, _ = got
        return float(x[-1]), x[:-1]

    def unselectable(self, i: int, support, weights, *, everything: bool = False) -> Combination | None:
        """Strictly positive exact weights over a spanning support: from the proposal and a
        small relative-interior LP, or (``everything``) from that LP over all keys."""
        from .repair import exact_weights

        if not everything:  # the proposal itself first: no spanning set is needed when it passes
            comb = exact_weights(self.ek, i, support, weights, strict=True, coords=self.X)
            if comb is not None and check_combination(self.ek, i, comb, strict=True) is None:
                return comb
        span = [j for j in self.spanning_set() if j != i]
        choices = [[j for j in range(self.m) if j != i]] if everything else [sorted(set(support) | set(span))]
        for cols in choices:
            t, lam = self._relint_lp(i, cols, span)
            if t is None or t <= 0:
                continue
            keep = [c for c in range(len(cols)) if lam[c] > 1e-13 or cols[c] in span]
            comb = exact_weights(
                self.ek, i, [cols[c] for c in keep], np.maximum(lam[keep], 1e-13), strict=True, coords=self.X
            )
            if comb is not None and check_combination(self.ek, i, comb, strict=True) is None:
                return comb
        return None

    def tie_only(self, i: int, support, weights):
        """(combination, witness) for a key on the relative boundary, or None."""
        from .repair import exact_tie_query, exact_weights

        comb = exact_weights(self.ek, i, support, weights, strict=False, coords=self.X)
        if comb is None or check_combination(self.ek, i, comb, strict=False) is not None:
            return None
        others = [j for j in range(self.m) if j != i]
        direction = self.X[i] - self.X.mean(axis=0)
        A = np.vstack([self.X[others] - self.X[i], direction])
        lo = np.append(np.full(len(others), -np.inf), 1.0)
        hi = np.append(np.zeros(len(others)), 1.0)
        got = self.lp.solve(np.zeros(self.d), A, lo, hi, np.full(self.d, -np.inf), np.full(self.d, np.inf))
        if got is None:
            return None
        q = got[0]
        gaps = (self.X[others] - self.X[i]) @ q
        scale = np.max(np.abs(gaps)) or 1.0
        for tol in (1e-9, 1e-7, 1e-11):
            face = [others[c] for c in np.flatnonzero(gaps >= -tol * scale)]
            w = exact_tie_query(self.ek, i, self.float_query(q), face)
            if w is not None and check_witnesses(self.ek, [(i, w)], mode="tie")[0] is None:
                return comb, w
        return None
