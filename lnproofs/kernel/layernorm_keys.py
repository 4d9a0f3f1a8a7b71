"""Keys given as the exact LayerNorm outputs of float inputs: schema and exact checks.

The keys are y_j = gain * z_j + bias with z_j = c_j * s_j, where c_j = x_j - mean(x_j) 1
(exactly rational for float inputs x_j in R^n) and s_j = sqrt(n) / sqrt(|c_j|^2 + n eps)
(torch convention: the biased variance |c_j|^2 / n plus eps under the root).  Queries are
all of R^n (free queries on the keys y_j).  Every z_j lies exactly on the hyperplane
1.z = 0, so the keys' exact affine hull is (at most) (n-1)-dimensional: there is no
rounding to be fooled by.

Witnesses.  For a rational query q, q.y_i - q.y_j = sqrt(n) (A_i / sqrt(M_i) - A_j / sqrt(M_j))
with A_j = (gain * q).c_j and M_j = |c_j|^2 + n eps, both rational.  Its sign is decided
exactly: when the signs of A_i and A_j differ it is that of A_i, otherwise by comparing
A_i^2 M_j with A_j^2 M_i.  A float filter comes first: with z^_j the float of z_j
computed from correctly rounded c_j and M_j (each entry within 6u relatively of z_j,
u = 2**-53: one rounding each for c, M, the square root, sqrt(n), the division and the
product) and q^ = fl(gain * q), the float scores S_j = fl(z^_j . q^) satisfy
|S_j - z_j.(gain*q)| <= (n + 8) u / (1 - (n + 8) u) sum_l |z_jl q_l gain_l|, which is below
E = 2 (n + 10) u T + n 2**-1000 with T = fl(sum_l max_j |z^_jl| |q^_l|) (n <= 2**20; the
extra factor and the absolute term absorb the roundings of T and of underflow).  A pair
is accepted by the filter when fl(S_i - S_j) > 4 E; rows or queries with entries outside
[2**-900, 2**900] (besides zeros) skip the filter.  Everything else is decided exactly.

Combinations.  ``unselectable``: ``combination.indices`` names n keys whose z are
affinely independent and hold z_i in the interior of their simplex; the checker solves
for the barycentric weights with interval arithmetic (python-flint ``arb``, first at 64
then at 256 bits) and accepts when the solve proves the matrix non-singular and every
weight positive.  The z_j lie on one hyperplane, so n affinely independent ones span the
affine hull of all keys, and y = gain * z + bias is affine, so the same weights write
y_i in the relative interior of the hull of the y_j.  ``tie-only``: the combination is one
other key with the same output (c equal, or with eps = 0 positive multiples), checked
exactly, and the witness ties with some key strictly below.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from flint import arb, arb_mat, ctx, fmpq, fmpz_mat

from .checker import Verdict
from .dyadic import integer_matrix, integer_vector_of_fractions
from .errors import CertificateFormatError, ShapeError
from .exact import to_fraction

KIND = "layernorm-inputs"
_U = 2.0**-53


@dataclass(frozen=True)
class LayerNormKeys:
    """Keys = LayerNorm(inputs) with this gain (None: ones), bias (None: zeros) and eps."""

    gain: tuple | None = None
    bias: tuple | None = None
    eps: float = 0.0

    @classmethod
    def from_json(cls, data) -> LayerNormKeys:
        if not isinstance(data, dict) or data.get("kind") != KIND:
            raise CertificateFormatError(f"keys_from must be an object with kind {KIND!r}")
        out = {}
        for name in ("gain", "bias"):
            v = data.get(name)
            if v is not None and (
                not isinstance(v, list)
                or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in v)
            ):
                raise CertificateFormatError(f"keys_from.{name} must be a list of finite numbers or null")
            out[name] = None if v is None else tuple(float(x) for x in v)
        eps = data.get("eps", 0.0)
        if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not math.isfinite(eps) or eps < 0:
            raise CertificateFormatError(f"keys_from.eps is {eps!r}; expected a finite number >= 0")
        return cls(out["gain"], out["bias"], float(eps))


class ExactLayerNormKeys:
    """The exact data of LayerNorm outputs: c_j = C_j * 2**e / n with integer rows C_j,
    M_j = |c_j|^2 + n eps as exact rationals (scaled by (n / 2**e)^2), and float z_j."""

    def __init__(self, inputs, spec: LayerNormKeys):
        X = np.ascontiguousarray(np.asarray(inputs, dtype=np.float64))
        if X.ndim != 2:
            raise ShapeError(f"inputs have shape {X.shape}; expected a 2-D array (rows are LayerNorm inputs)")
        self.n_keys, self.n = X.shape
        for name in ("gain", "bias"):
            v = getattr(spec, name)
            if v is not None and len(v) != self.n:
                raise ShapeError(f"{name} has length {len(v)} but the inputs have width {self.n}; they must match")
        self.spec = spec
        self._Cmat = None
        n = self.n
        M, e = integer_matrix(X)
        flat = [int(v) for v in M.entries()]
        rows = [flat[r * n : (r + 1) * n] for r in range(self.n_keys)]
        self.C = [[n * v - sum(r) for v in r] for r in rows]  # c_j = C_j * 2**e / n
        self.scale = Fraction(2) ** e / n
        eps_term = n * Fraction(spec.eps) / self.scale**2
        self.M = [sum(v * v for v in r) + eps_term for r in self.C]  # M_j / scale^2
        self.gain = [Fraction(1)] * n if spec.gain is None else [Fraction(g) for g in spec.gain]
        div = lambda v: (v << e) / n if e >= 0 else v / (n << -e)  # int division: correctly rounded
        Cf = np.array([[_float(div, v) for v in r] for r in self.C]).reshape(self.n_keys, n)
        Mf = np.array([_float(float, m * self.scale**2) for m in self.M])
        self.defined = np.array([m > 0 for m in self.M], dtype=bool)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            self.z = np.where(self.defined[:, None], Cf * (math.sqrt(n) / np.sqrt(Mf))[:, None], 0.0)
        exact_zero = np.array([[v == 0 for v in r] for r in self.C], dtype=bool).reshape(Cf.shape)
        big = (np.abs(Cf) > 2.0**900) | ((np.abs(Cf) < 2.0**-900) & ~exact_zero)
        self.filter_ok = ~big.any(axis=1) & (Mf > 2.0**-900) & (Mf < 2.0**900) & self.defined
        self.colmax = np.abs(self.z[self.filter_ok]).max(axis=0, initial=0.0)

    def score_parts(self, q) -> list[int]:
        """Integers A'_j = A_j * (one positive constant) for the query q (in y-space)."""
        Q, _ = integer_vector_of_fractions([g * v for g, v in zip(self.gain, map(to_fraction, q))])
        if self._Cmat is None:
            self._Cmat = fmpz_mat(self.C)
        return [int(v) for v in (self._Cmat * fmpz_mat(self.n, 1, Q)).entries()]

    @staticmethod
    def greater(a_i: int, m_i: Fraction, a_j: int, m_j: Fraction) -> int:
        """The sign of a_i / sqrt(m_i) - a_j / sqrt(m_j) (m > 0), exactly."""
        if (a_i > 0) != (a_j > 0) or a_i == 0 or a_j == 0:
            return (a_i > a_j) - (a_i < a_j)
        left, right = a_i * a_i * m_j, a_j * a_j * m_i
        sign = (left > right) - (left < right)
        return sign if a_i > 0 else -sign


def _float(convert, value) -> float:
    """``convert(value)``, or an infinity of its sign past the float range (such rows skip the filter)."""
    try:
        return convert(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def check_ln_witnesses(keys: ExactLayerNormKeys, items, *, mode: str = "strict") -> list[str | None]:
    """For each (i, q): None if q.y_i > q.y_j for all j != i ("strict"), or >= with some
    strict ("tie"); else a message.  The float filter of the module docstring, then exact."""
    N, n = keys.n_keys, keys.n
    out: list[str | None] = [None] * len(items)
    if not items:
        return out
    gain = np.array([float(g) for g in keys.gain])
    Q = np.array([[float(max(min(v, 2**1000), -(2**1000))) for v in q] for _, q in items]) * gain[None, :]
    idx = np.array([i for i, _ in items], dtype=np.int64)
    absQ = np.abs(Q)
    q_ok = ~np.any(((absQ < 2.0**-900) & (Q != 0)) | (absQ > 2.0**900), axis=1)
    q_ok &= np.array([all(type(v) is float or isinstance(v, (int, np.floating)) for v in q) for _, q in items])
    E = 2 * (n + 10) * _U * (absQ @ keys.colmax) + n * 2.0**-1000
    S = keys.z @ Q.T  # N x W float scores
    ar = np.arange(len(items))
    gap = S[idx, ar][None, :] - S
    good = (gap > 4 * E[None, :]) & keys.filter_ok[:, None] & q_ok[None, :]
    good &= keys.filter_ok[idx][None, :]
    good[idx, ar] = True
    for c in np.flatnonzero(~good.all(axis=0)):
        i, q = items[c]
        if not keys.defined[i]:
            out[c] = f"key {i}: its LayerNorm input is constant and eps is 0, so its output is undefined"
            continue
        A = keys.score_parts(q)
        below = bool((good[:, c] & (np.arange(N) != i)).any())
        for j in np.flatnonzero(~good[:, c]).tolist():
            if j == i:
                continue
            if not keys.defined[j]:
                out[c] = f"key {j}: its LayerNorm input is constant and eps is 0, so its output is undefined"
                break
            sign = keys.greater(A[i], keys.M[i], A[j], keys.M[j])
            if sign > 0:
                below = True
            elif sign < 0 or mode == "strict":
                rel = "<" if sign < 0 else "="
                out[c] = (
                    f"key {i}: the witness gives q.y_{i} {rel} q.y_{j} (decided exactly) but the claim needs "
                    f"{'>' if mode == 'strict' else '>='}"
                )
                break
        if out[c] is None and mode == "tie" and not below and N > 1:
            out[c] = f"key {i}: the witness ties every key with y_{i}; tie-only needs some key strictly below"
    return out


def check_ln_interior(keys: ExactLayerNormKeys, i: int, support) -> str | None:
    """None if z_i is proved (arb) to be a strictly positive combination of the n
    affinely independent z_j of ``support`` (key indices; None: no combination given); else a message."""
    n = keys.n
    support = [int(j) for j in support or ()]
    if len(support) != n or len(set(support)) != n or i in support or not all(0 <= j < keys.n_keys for j in support):
        return f"key {i}: an interior claim needs {n} distinct other keys (got {len(support)})"
    if not all(keys.defined[j] for j in support + [i]):
        return f"key {i}: a key of the claim has a constant input with eps 0 (undefined output)"
    old = ctx.prec
    try:
        for prec in (64, 256):
            ctx.prec = prec

            def z(j):
                s = arb(n).sqrt() / arb(fmpq(keys.M[j].numerator, keys.M[j].denominator)).sqrt()
                return [arb(c) * s for c in keys.C[j][: n - 1]]  # z_j = C_j sqrt(n) / sqrt(M_j) exactly

            cols = [z(j) for j in support]
            A = arb_mat(n, n, [cols[c][r] for r in range(n - 1) for c in range(n)] + [arb(1)] * n)
            b = arb_mat(n, 1, z(i) + [arb(1)])
            try:
                lam = A.solve(b)
            except ZeroDivisionError:
                continue
            if all(lam[r, 0] > 0 for r in range(n)):
                return None
    finally:
        ctx.prec = old
    return f"key {i}: interval arithmetic did not prove positive weights over keys {support}"


def _twin(keys: ExactLayerNormKeys, i: int, j: int) -> bool:
    """z_i == z_j exactly."""
    a, b = keys.C[i], keys.C[j]
    if keys.spec.eps > 0 or not any(a) or not any(b):
        return a == b
    ga, gb = math.gcd(*a), math.gcd(*b)
    return [v // ga for v in a] == [v // gb for v in b]


def check_all(inputs, spec, results) -> list[Verdict]:
    """Verdicts for the results of a certificate whose keys are LayerNorm(inputs)."""
    keys = inputs if isinstance(inputs, ExactLayerNormKeys) else ExactLayerNormKeys(inputs, spec)
    msgs: dict[int, str | None] = {}
    strict, tie = [], []
    for pos, r in enumerate(results):
        if r.status == "undecided":
            msgs[pos] = None
        elif r.status in ("selectable", "tie-only"):
            if r.witness is None or len(r.witness) != keys.n:
                msgs[pos] = f"key {r.index}: a {r.status} claim needs a witness query with {keys.n} entries"
            elif r.status == "tie-only":
                comb = r.combination
                ok = (
                    comb is not None
                    and len(comb.indices) == 1
                    and comb.weights[0] == 1
                    and 0 <= comb.indices[0] < keys.n_keys
                    and comb.indices[0] != r.index
                    and _twin(keys, r.index, comb.indices[0])
                )
                if not ok:
                    msgs[pos] = f"key {r.index}: a tie-only claim needs one other key with the same output, weight 1"
                else:
                    tie.append(pos)
            else:
                strict.append(pos)
        elif r.status == "unselectable":
            msgs[pos] = check_ln_interior(keys, r.index, r.combination and r.combination.indices)
        else:
            msgs[pos] = f"key {r.index}: {r.status!r} is not a status for free queries"
    for group, mode in ((strict, "strict"), (tie, "tie")):
        got = check_ln_witnesses(keys, [(results[p].index, results[p].witness) for p in group], mode=mode)
        msgs.update(zip(group, got))
    return [Verdict(r.index, r.status, msgs[p] is None, msgs[p] or "") for p, r in enumerate(results)]
