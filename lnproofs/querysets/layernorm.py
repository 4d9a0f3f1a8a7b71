"""Queries a LayerNorm layer can produce: ``q = W_q (gamma * u + beta) + b_q``.

``u`` ranges over the closure of the LayerNorm image: ``1 . u = 0`` and
``||u|| <= sqrt(n)``.  With ``eps = 0`` that is exactly the closure of what LayerNorm
outputs; with ``eps > 0`` LayerNorm's outputs lie strictly inside (radius
``sqrt(n) r / sqrt(r^2 + n eps)`` for an input of centred norm ``r``), so the set used
here is an outer bound and a "selectable" answer may need an input of very large norm.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..arrays import as_real_array
from ..errors import CertificateFormatError, FileFormatError, InputError, OptionError, ShapeError, require

__all__ = ["KIND", "QUERY_SET", "LayerNormQuerySet", "load_layernorm", "certify", "check", "check_all",
           "certify_results", "check_result", "ExactLayer", "propose"]

KIND = "layernorm"
ARRAYS = ("gamma", "beta", "W_q", "b_q")


def _vector(values, name):
    return tuple(float(x) for x in as_real_array(values, name=name, ndim=1))


@dataclass(frozen=True)
class LayerNormQuerySet:
    """The closure of the queries of one layer (optionally also ``||q|| <= radius``)."""

    gamma: tuple
    beta: tuple
    W_q: tuple
    b_q: tuple
    eps: float = 0.0
    radius: float | None = None

    kind = KIND

    def __post_init__(self):
        gamma = _vector(self.gamma, "layernorm gamma")
        beta = _vector(self.beta, "layernorm beta")
        W_q = as_real_array(self.W_q, name="layernorm W_q", ndim=2)
        b_q = _vector(self.b_q, "layernorm b_q")
        n = len(gamma)
        require(n >= 2, ShapeError, f"layernorm gamma has length {n}; LayerNorm needs width n >= 2")
        require(len(beta) == n, ShapeError, f"layernorm beta has length {len(beta)} but gamma has length {n}; they must agree")
        require(W_q.shape[1] == n, ShapeError,
                f"layernorm W_q has shape {W_q.shape} but gamma has length {n}; W_q must be d x {n}")
        require(len(b_q) == W_q.shape[0], ShapeError,
                f"layernorm b_q has length {len(b_q)} but W_q has {W_q.shape[0]} rows; they must agree")
        try:
            eps = float(self.eps)
        except (TypeError, ValueError):
            raise OptionError(f"layernorm eps {self.eps!r} is not a number; give eps >= 0") from None
        require(eps == eps and 0 <= eps < float("inf"), OptionError, f"layernorm eps = {self.eps!r}; give a finite eps >= 0")
        object.__setattr__(self, "gamma", gamma)
        object.__setattr__(self, "beta", beta)
        object.__setattr__(self, "W_q", tuple(tuple(float(x) for x in row) for row in W_q))
        object.__setattr__(self, "b_q", b_q)
        object.__setattr__(self, "eps", eps)
        if self.radius is not None:
            from .ball import _check_radius
            object.__setattr__(self, "radius", _check_radius(self.radius))

    @property
    def width(self) -> int:
        """``n``, the LayerNorm width."""
        return len(self.gamma)

    @property
    def dim(self) -> int:
        """``d``, the query dimension."""
        return len(self.b_q)

    def arrays(self) -> dict[str, np.ndarray]:
        return {"gamma": np.array(self.gamma), "beta": np.array(self.beta),
                "W_q": np.array(self.W_q, dtype=np.float64).reshape(self.dim, self.width), "b_q": np.array(self.b_q)}

    def validate(self, dim: int) -> None:
        require(self.dim == dim, ShapeError,
                f"layernorm W_q produces queries of dimension {self.dim} but the keys have dimension {dim}; "
                f"W_q must be {dim} x n")

    def to_json(self) -> dict:
        data = {"kind": KIND, "gamma": list(self.gamma), "beta": list(self.beta),
                "W_q": [list(row) for row in self.W_q], "b_q": list(self.b_q), "eps": self.eps}
        if self.radius is not None:
            data["radius"] = self.radius
        return data

    @classmethod
    def from_json(cls, data: dict) -> "LayerNormQuerySet":
        require(isinstance(data, dict) and data.get("kind") == KIND, CertificateFormatError,
                "certificate field query_set is not a layernorm query set")
        for name in ARRAYS:
            require(name in data, CertificateFormatError,
                    f"certificate field query_set has no {name!r}; a layernorm query set needs {', '.join(ARRAYS)}")
        try:
            return cls(data["gamma"], data["beta"], data["W_q"], data["b_q"], data.get("eps", 0.0), data.get("radius"))
        except CertificateFormatError:
            raise
        except InputError as err:
            raise CertificateFormatError(f"certificate field query_set: {err}") from None


QUERY_SET = LayerNormQuerySet


def load_layernorm(path, *, radius: float | None = None) -> LayerNormQuerySet:
    """Read arrays ``gamma``, ``beta``, ``W_q``, ``b_q`` (and optional ``eps``) from a .npz file."""
    path = Path(path)
    require(path.exists() and path.is_file(), FileFormatError,
            f"{path} does not exist; give a .npz file with arrays {', '.join(ARRAYS)} (and optional eps)")
    require(path.suffix.lower() == ".npz", FileFormatError,
            f"{path} has suffix {path.suffix or '(none)'!r}; layer parameters must be a .npz file with arrays {', '.join(ARRAYS)}")
    try:
        with np.load(path, allow_pickle=False) as archive:
            found = {k: archive[k] for k in archive.files}
    except Exception as exc:
        reason = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
        raise FileFormatError(f"{path} could not be read as .npz ({reason}); is the file complete?") from None
    missing = [name for name in ARRAYS if name not in found]
    if missing:
        raise FileFormatError(f"{path} has no array {missing[0]!r} (it holds: {', '.join(sorted(found)) or 'none'}); "
                              f"it needs {', '.join(ARRAYS)} and optionally eps")
    eps = 0.0
    if "eps" in found:
        eps_arr = as_real_array(found["eps"], name=f"{path} eps")
        require(eps_arr.size == 1, ShapeError, f"{path} eps has shape {eps_arr.shape}; give one number")
        eps = float(eps_arr.reshape(-1)[0])
    return LayerNormQuerySet(as_real_array(found["gamma"], name=f"{path} gamma", ndim=1),
                             as_real_array(found["beta"], name=f"{path} beta", ndim=1),
                             as_real_array(found["W_q"], name=f"{path} W_q", ndim=2),
                             as_real_array(found["b_q"], name=f"{path} b_q", ndim=1), eps, radius)


# ---------------------------------------------------------------------------
# Exact arithmetic (python-flint rationals; no solver is imported below this line
# until ``propose``).


from ._exact import fmpq_matrix as _fmpq_matrix, fmpq_of as _fmpq, fraction_of_fmpq as _fraction  # noqa: E402


class ExactLayer:
    """Exact rational forms of one layer's query map and of the keys (built once, read-only)."""

    def __init__(self, keys, query_set: LayerNormQuerySet):
        arrays = query_set.arrays()
        self.n, self.d = query_set.width, query_set.dim
        self.keys = _fmpq_matrix(keys)                      # N x d
        self.W_q = _fmpq_matrix(arrays["W_q"])              # d x n
        self.W_qT = self.W_q.transpose()                    # n x d
        self.gamma = [_fmpq(x) for x in query_set.gamma]
        beta = _fmpq_matrix(arrays["beta"].reshape(-1, 1))
        self.q0 = self.W_q * beta + _fmpq_matrix(arrays["b_q"].reshape(-1, 1))   # d x 1
        self.radius = None if query_set.radius is None else _fmpq(query_set.radius)

    def query(self, u) -> "list":
        """``q = W_q (gamma * u + beta) + b_q`` exactly, for rational ``u`` (fmpq entries)."""
        from flint import fmpq_mat

        gu = fmpq_mat(self.n, 1, [g * x for g, x in zip(self.gamma, u)])
        return self.W_q * gu + self.q0

    def scores(self, q):
        return self.keys * q                                 # N x 1


def _parse_rationals(values, what, length):
    from ..exact import to_fraction

    if not isinstance(values, (list, tuple)) or len(values) != length:
        raise ValueError(f"{what} must be a list of {length} numbers")
    return [_fmpq(to_fraction(v)) for v in values]


def _snap_into_set(u_float, n: int):
    """Rationalise ``u``, project it exactly onto ``1 . u = 0`` and shrink it into ``||u||^2 <= n``."""
    from math import isqrt

    from flint import fmpq

    u = [_fmpq(float(x)) for x in u_float]
    mean = sum(u, fmpq(0)) / n
    u = [x - mean for x in u]
    norm2 = sum((x * x for x in u), fmpq(0))
    if norm2 > n:
        bits = 64
        # s = floor(sqrt(n / norm2) * 2^bits) / 2^bits  <=  sqrt(n / norm2)
        ratio = fmpq(n) / norm2 * fmpq(1 << (2 * bits))
        s = fmpq(isqrt(int(ratio.p) // int(ratio.q)), 1 << bits)
        u = [s * x for x in u]
    return u


def _check_primal(layer: ExactLayer, index: int, u) -> tuple[bool, str, object]:
    from flint import fmpq

    n = layer.n
    total = sum(u, fmpq(0))
    if total != 0:
        return False, f"key {index}: u is not on the hyperplane 1.u = 0 (1.u = {float(total):.3g})", None
    norm2 = sum((x * x for x in u), fmpq(0))
    if norm2 > n:
        return False, f"key {index}: ||u||^2 = {float(norm2):.17g} exceeds n = {n}", None
    q = layer.query(u)
    if layer.radius is not None:
        qn2 = sum((q[a, 0] * q[a, 0] for a in range(layer.d)), fmpq(0))
        if qn2 > layer.radius * layer.radius:
            return False, f"key {index}: ||q||^2 = {float(qn2):.17g} exceeds R^2 = {float(layer.radius ** 2):.17g}", None
    s = layer.scores(q)
    N = s.nrows()
    mine = s[index, 0]
    margin = None
    for j in range(N):
        if j == index:
            continue
        gap = mine - s[j, 0]
        if gap <= 0:
            return False, (f"key {index}: q.k_{index} - q.k_{j} = {float(gap):.6g} is not > 0 "
                           f"for the query made from u"), None
        margin = gap if margin is None or gap < margin else margin
    return True, "", margin


def _check_dual(layer: ExactLayer, index: int, indices, weights) -> tuple[bool, str]:
    """``sqrt(n) ||P g|| + sum_j lambda_j (c_i - c_j) <= 0``, decided exactly by comparing squares."""
    from flint import fmpq, fmpq_mat

    if len(indices) != len(weights) or not indices:
        return False, f"key {index}: the dual certificate needs as many weights as indices (at least one)"
    if any(w < 0 for w in weights):
        return False, f"key {index}: dual weight below zero"
    if sum(weights, fmpq(0)) != 1:
        return False, f"key {index}: dual weights sum to {float(sum(weights, fmpq(0))):.17g}, not 1"
    N = layer.keys.nrows()
    if any(not (0 <= j < N) or j == index for j in indices):
        return False, f"key {index}: dual indices must be other keys in 0..{N - 1}"
    d = layer.d
    v = [layer.keys[index, a] - sum((w * layer.keys[j, a] for j, w in zip(indices, weights)), fmpq(0))
         for a in range(d)]
    vm = fmpq_mat(d, 1, v)
    g = layer.W_qT * vm
    w = [gam * g[r, 0] for r, gam in enumerate(layer.gamma)]
    mean = sum(w, fmpq(0)) / layer.n
    pg2 = sum(((x - mean) * (x - mean) for x in w), fmpq(0))
    c = sum((layer.q0[a, 0] * v[a] for a in range(d)), fmpq(0))
    if c > 0:
        return False, f"key {index}: dual offset sum_j lambda_j (c_i - c_j) = {float(c):.6g} is positive"
    if layer.n * pg2 > c * c:
        bound = float(layer.n * pg2) ** 0.5 + float(c)
        return False, f"key {index}: dual bound sqrt(n)||P g|| + sum_j lambda_j (c_i - c_j) = {bound:.6g} is not <= 0"
    return True, ""


def check_result(layer: ExactLayer, result: dict) -> tuple[bool, str]:
    """Exact verdict on one result dictionary (JSON form); ``(ok, message)``."""
    from ..exact import to_fraction

    index = result.get("index")
    status = result.get("status")
    try:
        if status == "selectable":
            u = _parse_rationals(result.get("u"), "u", layer.n)
            ok, msg, _ = _check_primal(layer, index, u)
            return ok, msg
        if status == "not-realisable":
            dual = result.get("dual") or {}
            indices = [int(j) for j in dual.get("indices", [])]
            weights = [_fmpq(to_fraction(w)) for w in dual.get("weights", [])]
            return _check_dual(layer, index, indices, weights)
    except (ValueError, TypeError, AttributeError) as err:
        return False, f"key {index}: malformed {status} certificate ({err})"
    if status == "undecided":
        return True, ""
    return False, f"key {index}: status {status!r} is not used with layernorm query sets"


# ---------------------------------------------------------------------------
# Proposals (the cone program): solvers only propose.


def _span_basis(query_set: LayerNormQuerySet) -> np.ndarray:
    """Orthonormal basis of the part of 1-perp that can change any score."""
    arrays = query_set.arrays()
    n = query_set.width
    M = arrays["gamma"][:, None] * arrays["W_q"].T            # n x d
    M = M - M.mean(axis=0, keepdims=True)
    U, S, _ = np.linalg.svd(M, full_matrices=False)
    keep = S > (S.max() if S.size else 0.0) * 1e-12 * max(n, 1)
    return U[:, keep]


def propose(keys, query_set: LayerNormQuerySet, index: int, basis=None):
    """Solve max_u min_j (s_i - s_j) over the set; returns ``(t, u, lambdas)`` (floats) or None."""
    import clarabel
    import scipy.sparse as sp

    arrays = query_set.arrays()
    keys = np.asarray(keys, dtype=np.float64)
    n = query_set.width
    Q = _span_basis(query_set) if basis is None else basis
    r = Q.shape[1]
    A_lin = arrays["gamma"][:, None] * (arrays["W_q"].T @ keys.T)   # n x N: a_j
    q0 = arrays["W_q"] @ arrays["beta"] + arrays["b_q"]
    c = keys @ q0
    others = [j for j in range(len(keys)) if j != index]
    D = (Q.T @ (A_lin[:, [index]] - A_lin[:, others])).T            # rows: (a_i - a_j) in the basis
    e = c[index] - c[others]
    m = len(others)
    scale = max(1.0, float(np.abs(D).max(initial=0.0)), float(np.abs(e).max(initial=0.0)))
    # variables x = (y (r), t); minimise -t
    rows = [sp.hstack([sp.csc_matrix(-D / scale), sp.csc_matrix(np.ones((m, 1)))])]
    b = [e / scale]
    cones = [clarabel.NonnegativeConeT(m)]
    radius = np.sqrt(n) * (1 - 1e-9)
    soc = sp.vstack([sp.csc_matrix((1, r + 1)), sp.hstack([-sp.identity(r), sp.csc_matrix((r, 1))])])
    rows.append(soc)
    b.append(np.concatenate([[radius], np.zeros(r)]))
    cones.append(clarabel.SecondOrderConeT(r + 1))
    if query_set.radius is not None:
        Mq = arrays["W_q"] @ (arrays["gamma"][:, None] * Q)            # d x r
        dq = Mq.shape[0]
        rows.append(sp.vstack([sp.csc_matrix((1, r + 1)), sp.hstack([sp.csc_matrix(-Mq), sp.csc_matrix((dq, 1))])]))
        b.append(np.concatenate([[query_set.radius * (1 - 1e-9)], q0]))
        cones.append(clarabel.SecondOrderConeT(dq + 1))
    A = sp.vstack(rows).tocsc()
    P = sp.csc_matrix((r + 1, r + 1))
    cost = np.zeros(r + 1)
    cost[-1] = -1.0
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    try:
        solution = clarabel.DefaultSolver(P, cost, A, np.concatenate(b), cones, settings).solve()
    except Exception:  # a solver failure is only a missing proposal
        return None
    if str(solution.status) not in ("Solved", "AlmostSolved"):
        return None
    x = np.asarray(solution.x)
    lam = np.zeros(len(keys))
    lam[others] = np.maximum(np.asarray(solution.z)[:m], 0.0)
    return float(x[-1]) * scale, Q @ x[:r], lam


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


def certify_results(keys, query_set: LayerNormQuerySet, *, progress=None, indices=None) -> list[dict]:
    """Result dictionaries (certificate JSON form) for every key, each checked exactly."""
    from ..exact import format_fraction

    keys = np.asarray(keys, dtype=np.float64)
    query_set.validate(keys.shape[1])
    layer = ExactLayer(keys, query_set)
    basis = _span_basis(query_set)
    N = len(keys)
    todo = list(range(N)) if indices is None else sorted({int(j) for j in indices})
    # Keys that are not vertices of the hull can never win strictly: the free engine's
    # exact convex weights are a dual certificate (g = 0 and zero offset).
    from ..certify import certify_results as free_results
    free = {r.index: r for r in free_results(keys, indices=todo)} if N > 1 else {}
    results = []
    for i in todo:
        entry = {"index": i, "status": "undecided", "witness": None, "combination": None,
                 "verified": "none", "margin": None, "reason": None}
        hull = free.get(i)
        if hull is not None and hull.status in ("unselectable", "tie-only") and hull.combination is not None:
            from flint import fmpq
            comb = hull.combination
            ok_dual, _ = _check_dual(layer, i, list(comb.indices),
                                     [fmpq(w.numerator, w.denominator) for w in comb.weights])
            if ok_dual:
                entry.update(status="not-realisable", verified="exact",
                             dual={"indices": list(comb.indices), "weights": [format_fraction(w) for w in comb.weights]})
                results.append(entry)
                continue
        if N == 1:
            proposal = (1.0, np.zeros(query_set.width), np.zeros(1))
        else:
            proposal = propose(keys, query_set, i, basis)
        if proposal is None:
            entry["reason"] = "the cone solver gave no usable answer"
            results.append(entry)
            continue
        t, u_float, lam = proposal
        u = _snap_into_set(u_float, layer.n)
        ok, msg, margin = _check_primal(layer, i, u)
        if ok:
            q = layer.query(u)
            entry.update(status="selectable", verified="exact",
                         witness=[float(_fraction(q[a, 0])) for a in range(layer.d)],
                         margin=None if margin is None else float(_fraction(margin)),
                         u=[format_fraction(_fraction(x)) for x in u])
            results.append(entry)
            continue
        reason = msg
        for indices, weights in _dual_candidates(i, lam):
            from flint import fmpq
            wq = [fmpq(w.numerator, w.denominator) for w in weights]
            ok_dual, msg_dual = _check_dual(layer, i, indices, wq)
            if ok_dual:
                entry.update(status="not-realisable", verified="exact", reason=None,
                             dual={"indices": indices, "weights": [format_fraction(w) for w in weights]},
                             margin=t)
                break
            reason = f"{msg}; {msg_dual}"
        else:
            entry["reason"] = (f"solver optimum {t:.3g}; neither the query nor the dual bound could be verified "
                               f"exactly ({reason})")
        results.append(entry)
        if progress is not None:
            progress(i + 1, N)
    return results


# ---------------------------------------------------------------------------
# The query-set protocol of :mod:`lnproofs.querysets`.


def _float_keys(keys) -> np.ndarray:
    return np.asarray(getattr(keys, "array", keys), dtype=np.float64)


def certify(keys, query_set: LayerNormQuerySet, *, indices=None, progress=None, **_options) -> list:
    """One :class:`~lnproofs.certificates.KeyResult` per key (statuses selectable, not-realisable, undecided)."""
    from ..certificates import KeyResult

    callback = None
    if progress and callable(progress):
        callback = progress
    return [KeyResult.from_json(entry) for entry in
            certify_results(_float_keys(keys), query_set, progress=callback, indices=indices)]


def check_all(keys, query_set: LayerNormQuerySet, results) -> list:
    """Exact verdicts for many results (the layer's exact forms are built once)."""
    from ..checker import Verdict

    arr = _float_keys(keys)
    query_set.validate(arr.shape[1])
    layer = ExactLayer(arr, query_set)
    verdicts = []
    for r in results:
        data = r.to_json() if hasattr(r, "to_json") else dict(r)
        index = data.get("index")
        if not isinstance(index, int) or not 0 <= index < len(arr):
            verdicts.append(Verdict(index if isinstance(index, int) else -1, str(data.get("status")), False,
                                    f"key {index}: index out of range 0..{len(arr) - 1}"))
            continue
        ok, message = check_result(layer, data)
        verdicts.append(Verdict(index, data.get("status"), ok, message))
    return verdicts


def check(keys, query_set: LayerNormQuerySet, result):
    return check_all(keys, query_set, [result])[0]
