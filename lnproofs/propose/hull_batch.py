"""A fast proposer for many keys in low dimension (e.g. 1,024 keys in R^8), free queries.

Stages, all in floating point, all only proposals:

1. witnesses for many keys at once: the strict winners of the queries ``k_i`` minus the
   centroid, the Mahalanobis directions ``Cov^+ (k_i - centroid)`` and random directions
   (plain and whitened) are hull vertices;
2. for every other key, non-negative least squares (``scipy.optimize.nnls``) in the lifted
   space ``(k, 1)`` against a small candidate set, the nearest vertices found so far (in
   whitened coordinates): either ``k_i`` is (numerically) a convex combination of them, or
   the residual is a direction that separates ``k_i`` from them; the key that wins along
   it (and a few more keys beyond ``k_i`` along it) join the candidates, Clarkson style,
   until one of the two holds; a larger candidate set when no progress is made;
3. the combination's weights are recomputed exactly on its support (python-flint, with
   the keys as integers divided by their common power of two).

:func:`propose_batch` returns candidate :class:`KeyResult` objects; nothing here is
trusted: :func:`certify_fast` has every claim checked by the kernel's checker and sends
the keys left open (and key sets with duplicate keys) to the general engine of
:func:`lnproofs.propose.certification.certify`.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..kernel import Combination, ExactKeys, KeyResult
from .twins import row_classes

__all__ = ["propose_batch", "certify_fast"]

_ROUNDS = 60
_MORE = 4  # keys beyond k_i along a residual direction added per round
_NEAR = 32  # the second candidate set: this many (d + 1) nearest vertices


class _Winners:
    """The best key for a query and whether it wins by a clear margin (floats only)."""

    def __init__(self, K: np.ndarray, rel: float = 1e-9):
        self.K, self.rel = K, rel
        self.colmax = np.abs(K).max(axis=0)

    def many(self, Q: np.ndarray, chunk: int = 512) -> tuple[np.ndarray, np.ndarray]:
        best = np.empty(len(Q), dtype=np.int64)
        clear = np.empty(len(Q), dtype=bool)
        for start in range(0, len(Q), chunk):
            part = Q[start : start + chunk]
            S = part @ self.K.T  # m x n, one query per row
            rows = np.arange(len(part))
            b = S.argmax(axis=1)
            top = S[rows, b]
            S[rows, b] = -np.inf
            best[start : start + chunk] = b
            clear[start : start + chunk] = top - S.max(axis=1) > self.rel * (np.abs(part) @ self.colmax + 1e-300)
        return best, clear

    def one(self, q: np.ndarray) -> tuple[int, bool]:
        s = self.K @ q
        two = np.argpartition(s, -2)[-2:]
        j, other = (int(two[1]), int(two[0])) if s[two[1]] >= s[two[0]] else (int(two[0]), int(two[1]))
        return j, bool(s[j] - s[other] > self.rel * (float(np.abs(q) @ self.colmax) + 1e-300)), s


def _whitening(C: np.ndarray) -> np.ndarray:
    """W with C @ W of identity covariance on the span of C (directions C does not span dropped)."""
    w, V = np.linalg.eigh(C.T @ C / max(len(C), 1))
    keep = w > max(float(w.max()), 1e-300) * 1e-12
    inv = np.zeros_like(w)
    inv[keep] = 1.0 / np.sqrt(w[keep])
    return V * inv


def _neighbours(C: np.ndarray, white: np.ndarray, count: int = 384) -> np.ndarray:
    """For every key, the other keys by increasing distance in whitened coordinates (the
    nearest ``count``)."""
    Z = C @ white
    sq = np.einsum("ij,ij->i", Z, Z)
    D = sq[:, None] + sq[None, :] - 2.0 * (Z @ Z.T)
    np.fill_diagonal(D, np.inf)
    count = min(count, len(C) - 1)
    part = np.argpartition(D, count - 1, axis=1)[:, :count] if count < len(C) - 1 else np.argsort(D, axis=1)[:, :count]
    rows = np.arange(len(C))[:, None]
    return part[rows, np.argsort(D[rows, part], axis=1)]


class _ExactLift:
    """Exact convex weights from a square subsystem of ``[k_j; 1] w = [k_i; 1]``, in
    integers as small as the keys allow (one common power of two divided out)."""

    def __init__(self, K: np.ndarray):
        from ..kernel import dyadic_integers

        ints, _ = dyadic_integers(K)
        low = min(((v & -v).bit_length() - 1 for v in ints if v), default=0)
        n, d = K.shape
        self.rows = [[v >> low for v in ints[r * d : (r + 1) * d]] for r in range(n)]
        self.d = d

    def weights(self, target: int, support: list[int], A: np.ndarray) -> list[Fraction] | None:
        from flint import fmpz_mat

        s, m = len(support), self.d + 1
        if s == 0 or s > m:
            return None
        cols = [self.rows[j] for j in support]
        rhs = self.rows[target]
        tries = [list(range(m))] if s == m else [list(range(s - 1)) + [m - 1]]
        tries.append(None)
        for rows in tries:
            if rows is None:  # pick independent rows numerically
                from scipy.linalg import qr

                _, R, piv = qr(A.T, mode="economic", pivoting=True)
                diag = np.abs(np.diag(R))
                if diag.size < s or diag[s - 1] <= 1e-10 * diag[0]:
                    return None
                rows = sorted(int(p) for p in piv[:s])
            flat = [1] * (s * s)
            b = [1] * s
            for a, r in enumerate(rows):
                if r < self.d:
                    flat[a * s : (a + 1) * s] = [c[r] for c in cols]
                    b[a] = rhs[r]
            try:
                x = fmpz_mat(s, s, flat).solve(fmpz_mat(s, 1, b))
            except ZeroDivisionError:
                continue
            return [Fraction(int(e.p), int(e.q)) for e in x.entries()]
        return None


def propose_batch(keys, *, seed: int = 0, directions: int = 1) -> dict[int, KeyResult]:
    """Candidate results (selectable with a witness, unselectable with exact weights) for
    distinct keys; keys it could not settle are left out."""
    from scipy.optimize import nnls

    K = np.asarray(keys, dtype=np.float64)
    n, d = K.shape
    out: dict[int, KeyResult] = {}
    if n < 2:
        return out
    win = _Winners(K)
    vertex = np.zeros(n, dtype=bool)
    witness: dict[int, np.ndarray] = {}
    centre = K.mean(axis=0)
    rng = np.random.default_rng(seed)
    white = _whitening(K - centre)
    for Q in (
        K - centre,
        (K - centre) @ white @ white.T,
        rng.standard_normal((directions * n, d)),
        rng.standard_normal((directions * n, d)) @ white.T,
    ):
        best, clear = win.many(Q)
        for t in np.flatnonzero(clear):
            i = int(best[t])
            if not vertex[i]:
                vertex[i], witness[i] = True, Q[t]
    spread = float(np.abs(K - centre).max()) or 1.0
    lift = np.vstack([((K - centre) / spread).T, np.ones((1, n))])  # (d+1) x n, well scaled
    order = _neighbours(K - centre, white)
    exact = _ExactLift(K)
    small = 4 * (d + 1)
    for i in np.flatnonzero(~vertex):
        i = int(i)
        near = order[i][vertex[order[i]]]
        tries = [near[:small], near[: _NEAR * (d + 1)], np.flatnonzero(vertex)]
        extra: list[int] = []
        for _ in range(_ROUNDS):
            cols = np.concatenate([tries[0], np.asarray(extra, dtype=np.int64)]) if extra else tries[0]
            if not len(cols):
                break  # no vertex known: leave it to the engine
            A = lift[:, cols]
            lam, res = nnls(A, lift[:, i], maxiter=50 * (d + 1))
            if res <= 1e-11:
                support = cols[lam > 0].tolist()
                weights = exact.weights(i, support, lift[:, support])
                if weights is not None and all(w > 0 for w in weights):
                    out[i] = KeyResult(i, "unselectable", None, Combination(tuple(support), tuple(weights)), "exact")
                break
            q = (lift[:, i] - A @ lam)[:d]
            j, clear, score = win.one(q)
            if j == i and clear:
                vertex[i], witness[i] = True, q
                break
            if not clear or j == i or bool(np.any(cols == j)):
                if len(tries) == 1:
                    break  # no progress: leave it to the engine
                tries.pop(0)  # a larger candidate set
                continue
            if not vertex[j]:
                vertex[j], witness[j] = True, q
            extra.append(j)
            if _MORE:  # the next keys beyond k_i along q, too
                above = np.flatnonzero(score > score[i])
                if len(above) > _MORE:
                    above = above[np.argpartition(score[above], -_MORE)[-_MORE:]]
                extra.extend(int(a) for a in above if a != j and not np.any(cols == a))
    for i in np.flatnonzero(vertex):
        out[int(i)] = KeyResult(int(i), "selectable", tuple(float(x) for x in witness[int(i)]), None, "exact")
    return out


def certify_fast(keys, *, seed: int = 0):
    """A :class:`~lnproofs.certificates.Certificate` for free queries, as
    :func:`~lnproofs.propose.certification.certify` gives, faster on many keys in low
    dimension: the batch proposals that pass the exact checker are kept, the general
    engine does the rest."""
    from ..certificates.certificate import Certificate
    from ..kernel import FreeQueries, as_real_array
    from .certification import certify, certify_results

    K = as_real_array(keys, name="keys", ndim=2)
    n, d = K.shape
    if len(row_classes(K)[0]) < n:
        return certify(K, None, progress=False, seed=seed)
    proposals = list(propose_batch(K, seed=seed).values())
    verdicts = FreeQueries().check(ExactKeys(K), proposals)
    known = [r for r, v in zip(proposals, verdicts) if v.ok and r.status != "undecided"]
    results = certify_results(K, seed=seed, known=known) if len(known) < n else sorted(known, key=lambda r: r.index)
    return Certificate(n, d, {"kind": "free"}, tuple(results))
