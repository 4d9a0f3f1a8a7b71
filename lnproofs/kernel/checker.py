"""The trusted checker: re-verify a selectability certificate exactly.

Small on purpose; it imports neither cvxpy, scipy nor torch.  Every claim is decided in
exact integer/rational arithmetic, or by a float computation whose error is bounded by
a theorem (below) and that falls back to exact arithmetic whenever the bound cannot
decide.  No tolerance chosen by a user ever decides anything.

Exact numbers.  Every float is a dyadic rational.  ``ExactKeys`` writes all keys with one
common power of two, k_j = K_j * 2**E with integer vectors K_j, so q.k_i - q.k_j for a
witness q = Q * s (integers Q, rational s > 0) has the sign of the integer Q.(K_i - K_j).

The float filter (for the N inequalities of a witness).  Let x, y be double vectors of
length d with no subnormal entries, p = sum x_l y_l, and let fl(.) be any evaluation of
this sum of products in IEEE double arithmetic with rounding to nearest, in any order,
with or without fused multiply-add, with gradual underflow or with results flushed to
zero (as BLAS dgemm does; no Strassen-like algorithm).  With u = 2**-53,
gamma_d = d u / (1 - d u) and lambda = 2**-1022 (Higham, *Accuracy and Stability of
Numerical Algorithms*, section 3.1, plus at most lambda for each of the d products and
d additions whose result underflows):

    |fl(p) - p| <= gamma_d * sum |x_l y_l| + 2 d lambda,              (1)
    c := fl(sum |x_l| |y_l|) >= (1 - gamma_d) sum |x_l y_l| - 2 d lambda.

Hence, for d u <= 1/4, |fl(p) - p| <= 2 d u c + 3 d lambda.  We use the larger
E := fl(d 2**-50 * c) + d 2**-1020, i.e. about 4 d u c + 4 d lambda (the roundings in
computing E cost factors (1 + u), absorbed by the slack).  Since
max_j |k_jl| >= |k_jl|, the same bound holds for every key j with the single
c' := fl(sum_l max_j |k_jl| |q_l|) in place of c, giving one bound E' per query.  If
c (or c') <= 2**1000, no partial sum overflows.

For keys i, j with computed scores s_i, s_j we accept q.k_i > q.k_j when
fl(s_i - s_j) > 2 fl(E_i + E_j).  Subtraction and addition carry a relative error <= u,
and a result flushed to zero never passes (the right side is positive), so
s_i - s_j > 2 (E_i + E_j)(1 - u)/(1 + u) >= E_i + E_j and the exact difference is at
least (s_i - s_j) - E_i - E_j > 0.  With E' for both keys the test is
fl(s_i - s_j) > 4 E' (and 4 E' >= fl(2 fl(E_i + E_j)) by monotone rounding).  The
checker applies that test (one matrix product for many queries); every pair it does not
accept is decided exactly with integers (one integer product per query gives all its
scores), and keys or queries with subnormal entries always are.

The queries of a block that share their last entries (a lifted witness's fixed part) have that part
of each score summed once, then added: one order of the sums, which the bound allows.

Every key's own witness (:func:`self_filter`, q = k_i for the keys i asked about).  The score of
k_j at q = k_i is fl(k_i . k_j), a sum of the same d products whichever of the two is the query, so
one Gram computation gives the scores of both witnesses (each pair of blocks once when every key
is asked about: half the products), and since rounding is monotone, fl(s_i - s_j) >= fl(s_i - m)
for m = max_{j != i} s_j: the best rival decides the N - 1 tests at once.  The test is the one
above; its mirror fl(s_i - m) < -4 E' proves that the rival beats k_i.  Single precision: when
every key is a normal float32 number (or zero), d <= 2**22 and c' <= 2**100 for every key used
as a query, the products are taken in float32 (sgemm, any order, with or without fused
multiply-add): (1) holds with u = 2**-24 and lambda = 2**-126, so the argument above gives
|fl(p) - p| <= 2 d u c + 3 d lambda <= d 2**-23 c + d 2**-124, and the filter uses
E' = d 2**-21 c' + d 2**-120 with c' computed in doubles (its rounding is far inside the slack);
no partial sum reaches the float32 range (near 2**128).  Float32 scores are exact doubles; their
differences and the test are taken in doubles exactly as above.  For a model's float32 weights
this halves the cost of the products and keeps every bound.

The products' engine.  ``ExactKeys.matmul`` computes A @ B (numpy's by default).  Nothing above
depends on the order of the sums: any evaluation of a sum of d products by additions of two
partial sums at a time (left to right, pairwise, blocked, split over threads or GPU blocks and
combined, atomically or not) is a binary tree with d leaves, so each product reaches the result
through at most d - 1 additions, d roundings with its own; that is all (1) uses.  Another engine
may therefore compute the products (a GPU: ``torch_backend.matmul``), provided it evaluates sums
of the d products in IEEE arithmetic with rounding to nearest in the precision the bound assumes,
or in a higher one: float32 numbers are exact doubles, and (1) with u = 2**-53 and lambda =
2**-1022 is far inside the float32 bound, so float32 keys multiplied in doubles keep it (their
scores, then doubles, are subtracted as in the double case).  Not allowed: TF32 or other
reduced-precision products, Strassen-like algorithms, an emulated double product that is not such
a sum.  Whatever the engine, every pair the filter does not accept is decided in integers.

A witness entry that is not a float (a rational of any length, an integer past 2**53) is
rounded to nearest first (Python's float() of a Fraction or an int is correctly rounded):
q_l = fl(q_l)(1 + e_l) with |e_l| <= 2u, so the exact scores of q and of fl(q) differ by at
most 2u c (c as above, for fl(q)); the test then takes d + 1 in place of d in E', which adds
at least 8u c'(1 - u)^2 >= 2u c' (1 + gamma_d) to each bound.  A witness with an entry that
rounds to zero or past the float range is decided with integers.  So the long digits of a
witness are read once per witness, never once per key.

Free queries (query_set kind "free"):
* selectable: q.k_i > q.k_j for all j != i; or, without q, the keys are affinely independent
  (their affine rank, :func:`affine_rank`, is one less than their number), so each is a vertex
  of their simplex (theorem attention.simplex_vertices; also for ball queries, not for a box);
* tie-only: weights w >= 0 over other keys, sum 1, sum w_j k_j = k_i exactly (so k_i can
  never win strictly), and q.k_i >= q.k_j for all j with at least one strict;
* unselectable: as tie-only but with w > 0 and without q, and the affine rank of the
  support equals that of all keys (exact integer rank), so k_i is in the relative
  interior of the hull;
* undecided: no claim, nothing to check.
Other query sets are checked by their module in :mod:`lnproofs.kernel.querysets`.
"""

from __future__ import annotations

from fractions import Fraction
from typing import NamedTuple

import numpy as np
from flint import fmpz_mat, nmod_mat

from .dyadic import integer_matrix, integer_vector_of_fractions, mantissas
from .errors import ShapeError

_TINY = 2.0**-1022  # smallest normal double
_C_MAX = 2.0**1000  # above this the filter declines (no overflow inside)
_P = (1 << 31) - 1  # a prime


class ExactKeys:
    """Keys as floats (for the filter, with each column's largest magnitude ``colmax``; ``single``:
    whether every key is a normal float32 number or zero, tested a block of rows at a time, so
    nothing as large as the keys is made besides boolean masks) and, on demand, as exact integers
    k_j = K_j 2**E.  ``matmul(A, B)``: the filter's float products A @ B (numpy's by default; any
    callable whose result obeys the module docstring's bound, e.g. one that runs on a GPU)."""

    def __init__(self, keys, matmul=None):
        arr = np.ascontiguousarray(np.asarray(keys, dtype=np.float64))
        if arr.ndim != 2:
            raise ShapeError(f"keys have shape {arr.shape}; expected a 2-D array (rows are keys)")
        self.array = arr
        self.n, self.dim = arr.shape
        blocks = np.array_split(arr, arr.size // 2**21 + 1)  # views of about 2^21 entries: one at a time below
        smallest = min([np.min(np.abs(r), where=r != 0, initial=np.inf) for r in blocks])
        self.exponent = int(np.frexp(smallest)[1]) - 53 if np.isfinite(smallest) else 0  # grows with |x|
        self.colmax = np.maximum(arr.max(axis=0, initial=0.0), -arr.min(axis=0, initial=0.0))  # max_j |k_jl|
        self.subnormal_rows = np.concatenate([np.any((np.abs(r) < _TINY) & (r != 0), axis=1) for r in blocks])
        normal = not any(np.any((np.abs(r) < 2.0**-126) & (r != 0)) for r in blocks)  # no float32 subnormal
        self.single = normal and all(np.array_equal(r.astype(np.float32), r) for r in blocks)  # normal float32s
        self._rank = self._matrix = None
        self.matmul = matmul or np.matmul

    @classmethod
    def of(cls, keys, matmul=None) -> ExactKeys:
        """``keys`` if they are ExactKeys with this ``matmul`` (None: any), else ExactKeys of their floats."""
        same = isinstance(keys, cls) and (matmul is None or matmul is keys.matmul)
        return keys if same else cls(getattr(keys, "array", keys), matmul)

    def int_scores(self, Q: list[int]) -> list:
        """Q.K_j for every key j, exactly (one python-flint product; python-flint integers)."""
        return (self.integer_matrix() * fmpz_mat(self.dim, 1, [int(v) for v in Q])).entries()

    def integer_matrix(self):
        """Every K_j as the rows of one python-flint integer matrix (built once)."""
        if self._matrix is None:  # its power of two is self.exponent: both are the least one
            self._matrix = integer_matrix(self.array)[0]
        return self._matrix

    def some_rows(self, rows) -> np.ndarray:
        """K_j for the keys ``rows`` only, as an object array of Python integers."""
        M, e = integer_matrix(self.array[rows])  # e >= exponent unless M = 0
        return np.array([int(x) for x in M.entries()], dtype=object).reshape(len(rows), self.dim) << max(
            e - self.exponent, 0
        )

    def affine_rank(self) -> int:
        """Exact dimension of the affine hull of all keys (computed once).  The rank of a
        spread-out subset of keys is a lower bound; when it is already full it is the answer,
        otherwise the rank of all keys is computed."""
        if self._rank is None:
            rows = self.array if hasattr(self, "array") else self.some_rows(np.arange(self.n))
            some = np.unique(np.linspace(0, self.n - 1, min(self.n, 4 * self.dim + 8)).astype(np.int64))
            self._rank = affine_rank(rows[some])
            if self._rank < min(self.n - 1, self.dim):
                self._rank = affine_rank(rows)
        return self._rank


def affine_rank(rows, exact: bool = True) -> int:
    """Exact dimension of the affine hull of points: float rows, or Python-integer rows (the keys'
    K_j; rational points are integers after one common scaling, which keeps the affine rank).  It
    is the rank of the points with a 1 appended, less one (subtracting one row from the others
    leaves the differences: theorem ``attention.simplex_vertices``).  Float rows: each entry is
    m 2**a (:func:`.dyadic.mantissas`), and one common power of two and a scaled column keep a
    rank, so it is the rank of the integers m 2**(a - least a) (integer rows: a = 0).  It is
    taken modulo the prime _P first, where 2**k is 2**(k mod 31) and each product of residues
    stays under 2**62, and of a square minor, as many columns as the full rank (those with the
    fewest zero residues): a minor's rank modulo a prime never exceeds the rank over Q, so full
    rank there is a proof (for N keys in d > N dimensions, of N x N entries instead of N x d);
    otherwise the exact integer rank (with ``exact=False``, that lower bound itself: for a
    caller that needs only a proof of full rank, since an integer rank of wide rank-deficient
    rows can take seconds)."""
    if len(rows) <= 1:
        return 0
    A = np.asarray(rows)
    H, full = np.hstack([A, np.ones((len(A), 1), dtype=A.dtype)]), min(A.shape[0], A.shape[1] + 1)
    m, a = mantissas(H) if H.dtype == np.float64 else (H.ravel(), np.zeros(H.size, dtype=np.int64))  # integers: m 2**0
    R = ((m % _P) * np.left_shift(1, (a - a[m != 0].min()) % 31) % _P).reshape(H.shape)
    low = int(nmod_mat(fmpz_mat(R[:, np.argsort((R == 0).sum(axis=0), kind="stable")[:full]].tolist()), _P).rank())
    if low == full or not exact:
        return low - 1
    return int((integer_matrix(H)[0] if H.dtype == np.float64 else fmpz_mat(H.tolist())).rank()) - 1


class Verdict(NamedTuple):
    """Whether the claim about one key holds; ``message`` says why not (a named tuple: a
    check makes one per key, and a frozen dataclass took five times as long to make)."""

    index: int
    status: str
    ok: bool
    message: str = ""


def check_witnesses(keys, items, *, mode: str = "strict", chunk: int = 1 << 21) -> list[str | None]:
    """For each (i, q): None if q.k_i > q.k_j for all j != i ("strict"), or if q.k_i >= q.k_j for all j with
    some strict ("tie"); else a message naming the key and the failing inequality (against the best rival when
    decided exactly).  Decided by the float filter of the module docstring (one bound per query; for "tie", a key
    equal to k_i float for float ties it, no arithmetic needed), exactly otherwise
    (one integer product per query); ``chunk`` scores (16 MB: under glibc's mmap threshold) or 128 queries at a time."""
    ek = ExactKeys.of(keys)
    n, d = ek.n, ek.dim
    out: list[str | None] = [None] * len(items)
    below = [False] * len(items)
    floaty, floats, rounded, pending = [], [], [], set()
    for t, (_, q) in enumerate(items):
        kinds = {float} if getattr(q, "dtype", None) == np.float64 else set(map(type, q))
        exact = kinds <= {float, np.float64}  # else rounded: float(int), float(Fraction) round to nearest
        try:
            f = q if exact else [float(v) for v in q] if kinds <= {int, Fraction, float, np.float64} else None
        except OverflowError:
            f = None
        if f is None or not hasattr(ek, "array") or (not exact and any(x == 0 and v != 0 for x, v in zip(f, q))):
            pending.add(t)
        else:
            floaty.append(t), floats.append(f), rounded.append(not exact)
    step = max(128, chunk // max(n, 1))  # wide products: 13 queries per pass over 150,000 keys was memory-bound
    # for a tie: a key equal to k_i float for float (0.0 for -0.0) scores exactly what k_i scores
    twin = np.unique(ek.array + 0.0, axis=0, return_inverse=True)[1].reshape(-1) if mode == "tie" and floaty else None
    for start in range(0, len(floaty), step):
        cols = floaty[start : start + step]
        Q = np.array(floats[start : start + step], dtype=np.float64).reshape(len(cols), d)
        idx = np.array([items[t][0] for t in cols], dtype=np.int64)
        ar = np.arange(len(cols))
        # one bound per query: c' = fl(sum_l max_j |k_jl| |q_l|) obeys (1) for every key
        c_col = np.abs(Q) @ ek.colmax
        thr = 4.0 * (c_col * ((d + np.array(rounded[start : start + step])) * 2.0**-50) + d * 2.0**-1020)
        col_ok = (c_col <= _C_MAX) & ~np.any((Q > -_TINY) & (Q < _TINY) & (Q != 0), axis=1) & ~ek.subnormal_rows.any()
        tail = d - int(np.cumprod(np.all(Q == Q[:1], axis=0)[::-1]).sum())  # the entries every query shares
        S = ek.matmul(ek.array[:, :tail], Q[:, :tail].T) + ek.matmul(ek.array[:, tail:], Q[:1, tail:].T)
        s_i, low = S[idx, ar], S.min(axis=0)  # k_i itself fails the test
        rivals_out = (twin[:, None] == twin[idx][None, :]) if twin is not None else (idx, ar)  # k_i, its equals
        S[rivals_out] = -np.inf
        done = col_ok & (s_i - S.max(axis=0) > thr)  # fl(s_i - s_j) >= fl(s_i - max s_j): rounding is monotone
        pending.update(cols[c] for c in np.flatnonzero(~done))  # what the bound does not settle: exactly, below
        for c in np.flatnonzero(done):
            below[cols[c]] = bool(s_i[c] - low[c] > thr[c])  # some key strictly below k_i
    for t in pending:  # every score exactly: one integer product per query
        i, q = items[t]
        scores = ek.int_scores(integer_vector_of_fractions(q)[0])
        own, rest = scores[i], scores[:i] + scores[i + 1 :]
        top, below[t] = max(rest, default=None), bool(rest) and min(rest) < own
        if top is not None and (top > own or (top == own and mode == "strict")):
            j = next(j for j, s in enumerate(scores) if j != i and s == top)  # the gap is that of the integers
            out[t] = (
                f"key {i}: witness gives q.k_{i} - q.k_{j} {'<' if top > own else '='} 0 but the claim "
                f"needs {'>' if mode == 'strict' else '>='} 0"
            )
    for t, (i, _) in enumerate(items):
        if out[t] is None and mode == "tie" and not below[t] and n > 1:
            out[t] = f"key {i}: witness ties every key with k_{i}; tie-only needs some key strictly below"
    return out


def self_filter(keys, tokens, block: int = 2048) -> np.ndarray:
    """The float filter on the witness ``q = k_i`` of each key ``i`` of ``tokens`` (int8): 1 when it
    proves q.k_i > q.k_j for every j != i, -1 when it proves some q.k_j > q.k_i, 0 when it decides
    neither.  Every score is fl(k_i . k_j), a sum of the same d products whichever of the two keys is
    the query, so one Gram computation serves both (symmetric when ``tokens`` are all the keys, half
    the products), and a key's best rival decides (fl(s_i - s_j) >= fl(s_i - max s_j): rounding is
    monotone); the bound is that of :func:`check_witnesses`, with the test's sign turned for -1."""
    ek = ExactKeys.of(keys)
    rows, n = np.asarray(tokens, dtype=np.int64), ek.n
    every = len(rows) == n and np.array_equal(rows, np.arange(n))
    c = np.concatenate([np.abs(ek.array[rows[a : a + block]]) @ ek.colmax for a in range(0, len(rows), block)] or [[]])
    single = ek.single and ek.dim <= 2**22 and bool(np.all(c <= 2.0**100))
    thr = 4.0 * ek.dim * ((c * 2.0**-21 + 2.0**-120) if single else (c * 2.0**-50 + 2.0**-1020))  # 4 E'
    M, own, top = np.float32 if single else np.float64, np.zeros(len(rows)), np.full(n if every else len(rows), -np.inf)
    for a in range(0, len(rows), block):  # each block made in the products' precision as it is needed
        part = rows[a : a + block]
        A = ek.array[part].astype(M)  # one copy per block of witnesses (and one transfer, on a device)
        for b in range(a if every else 0, n, block):
            S = ek.matmul(A, ek.array[b : b + block].astype(M).T)
            mine = np.flatnonzero((part >= b) & (part < b + block))
            own[a + mine], S[mine, part[mine] - b] = S[mine, part[mine] - b], -np.inf
            np.maximum(top[a : a + block], S.max(axis=1), out=top[a : a + block])
            if every and b > a:
                np.maximum(top[b : b + block], S.max(axis=0), out=top[b : b + block])
    gap, ok = own - top[rows if every else slice(None)], (c <= _C_MAX) & ~ek.subnormal_rows.any()
    return np.where(ok & (gap > thr), 1, np.where(ok & (-gap > thr), -1, 0)).astype(np.int8)


def _weights(ek: ExactKeys, i: int, combination, strict: bool):
    """``(indices, W, den)`` with the weights ``W / den`` of a well-formed combination, else a message."""
    if combination is None:
        return f"key {i}: no combination given"
    if not 0 <= i < ek.n:
        return f"key {i}: index out of range 0..{ek.n - 1}"
    idx, w = list(combination.indices), list(combination.weights)
    if not idx or len(set(idx)) != len(idx) or any(not 0 <= j < ek.n or j == i for j in idx):
        return f"key {i}: a combination names distinct keys in 0..{ek.n - 1} other than k_{i}, at least one"
    W, den = integer_vector_of_fractions(w)  # weights = W / den with den > 0
    low = min(W)
    if low < 0 or (strict and low == 0):
        c = W.index(low)
        return (
            f"key {i}: weight of k_{idx[c]} is {'zero' if low == 0 else 'negative'}; "
            f"{'strictly positive' if strict else 'non-negative'} weights are needed"
        )
    if sum(W) != den:
        return f"key {i}: the weights do not sum to 1"
    return idx, W, den


def check_combinations(keys, items, *, strict: bool) -> list[str | None]:
    """For each (i, combination): None if ``combination`` writes k_i exactly as a convex
    combination of other keys (strictly positive weights if ``strict``; for ``strict`` also the
    support's affine hull must be that of all keys); else a message.  All items together:
    sum_j W_j K_j - den K_i for every item in one pass over integer (object) arrays, and the
    support ranks by :func:`affine_rank`."""
    ek = ExactKeys.of(keys)
    out: list[str | None] = [None] * len(items)
    good = []
    for t, (i, combination) in enumerate(items):
        got = _weights(ek, i, combination, strict)
        if isinstance(got, str):
            out[t] = got
        else:
            good.append((t, i, *got))
    if not good:
        return out
    used = sorted({j for _, i, idx, _, _ in good for j in idx + [i]})
    K = dict(zip(used, ek.some_rows(used)))
    rows = [j for _, i, idx, _, _ in good for j in idx + [i]]
    coef = np.array([c for _, _, _, W, den in good for c in W + [-den]], dtype=object)
    starts = np.cumsum([0] + [len(idx) + 1 for _, _, idx, _, _ in good[:-1]])
    sums = np.add.reduceat(np.array([K[j] for j in rows]) * coef[:, None], starts, axis=0)  # exactly
    for (t, i, idx, W, den), miss in zip(good, sums):
        coord = next((c for c in range(ek.dim) if miss[c] != 0), None)
        if coord is not None:
            out[t] = (
                f"key {i}: the combination is {'above' if miss[coord] > 0 else 'below'} k_{i} in coordinate "
                f"{coord}; it must reproduce k_{i} exactly"
            )
        elif strict and (r := affine_rank([K[j] for j in idx])) != ek.affine_rank():  # r <= the keys' rank
            out[t] = (
                f"key {i}: the support spans an affine space of dimension {r} but the keys span "
                f"dimension {ek.affine_rank()}; k_{i} is not shown to be in the relative interior"
            )
    return out
