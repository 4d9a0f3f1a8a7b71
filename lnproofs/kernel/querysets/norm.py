"""Queries a normalisation layer can produce, and their exact checks (one module, three kinds).

Every set is ``q = R (W_q (g * u + beta) + b_q)`` with ``||u|| <= sqrt(n)``:

* ``layernorm`` (:class:`LayerNormQuerySet`, ``g = gamma``): centred (``1 . u = 0``), no
  rotation, optionally ``||q|| <= radius``: the closure of the LayerNorm image.  With
  ``eps > 0`` LayerNorm's outputs lie strictly inside (radius ``sqrt(n) r / sqrt(r^2 + n eps)``
  for an input of centred norm ``r``): an outer bound, and "selectable" may need a large input.
* ``rmsnorm`` (:class:`RMSNormQuerySet`, ``g = gain``, ``beta`` optional): no centring.  With
  ``eps > 0`` the outputs fill exactly the open ball (``x = s u``, ``s^2 = n eps / (n - ||u||^2)``),
  and the queries that make a key win form an open set, so the answer is exact; with ``eps = 0``
  the outputs lie on the sphere and the ball is an outer bound.
* ``layernorm_rotary`` (:class:`RotaryLayerNormQuerySet`): the rmsnorm schema, centred: one
  LayerNorm head at one rotary position (GPT-NeoX, Pythia).

``R`` (``rotation``, optional; else ``I``) is the rotary matrix of the query's position, its
entries the floats of the model's own cos/sin table (``R[i, i] = cos_i``, ``R[i, i + r/2] = -sin_i``,
``R[i + r/2, i] = sin_{i + r/2}`` for ``i < r/2``, the identity beyond ``r``), applied exactly.

Certificates (per key ``i``): ``selectable``: rationals ``u`` with ``||u||^2 <= n`` (and
``1 . u = 0`` when centred) whose query ``q`` (the witness) has ``q . k_i > q . k_j`` for every
``j != i``; LayerNorm sets also accept ``y`` (d floats) for ``u = P diag(gamma) W_q^T y``
(:meth:`ExactLayer.check_factored`).  ``not-realisable``: weights ``lambda_j >= 0`` (sum 1) over
other keys with ``sqrt(n) ||P (g * (W_q^T R^T v))|| + (R (W_q beta + b_q)) . v <= 0`` for
``v = k_i - sum_j lambda_j k_j`` (``P`` the projection onto 1-perp when centred, else ``I``):
the left side is the largest ``q . v`` over the set (Cauchy-Schwarz), so ``k_i`` never wins
strictly; decided exactly by comparing squares.  Everything is exact python-flint arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from flint import fmpq, fmpq_mat, fmpz_mat

from ..arrays import as_radius, as_real_array
from ..certificates import Combination
from ..checker import ExactKeys, Verdict, _weights, check_witnesses
from ..dyadic import (
    dyadic_integers,
    fmpq_matrix,
    fmpq_of,
    fraction_of_fmpq,
    integer_matrix,
    integer_vector_of_fractions,
    pow2,
)
from ..errors import CertificateFormatError, OptionError, ShapeError, require
from ..exact import to_fraction
from ..querysets import QuerySetSchema

__all__ = [
    "QUERY_SETS",
    "Rotation",
    "LayerNormQuerySet",
    "RMSNormQuerySet",
    "RotaryLayerNormQuerySet",
    "ExactQueryMap",
    "ExactLayer",
    "primal_query",
    "check_dual",
    "check_all",
    "check_float_witnesses",
]

ROTATION_STYLES = ("half", "interleaved")


def _floats(values, name: str) -> tuple:
    return tuple(float(x) for x in as_real_array(values, name=name, ndim=1))


@dataclass(frozen=True)
class Rotation:
    """The rotary matrix of one position: ``cos``/``sin`` (length ``r``, even) from the
    model's own table, as floats; ``style`` ``"half"`` pairs coordinate ``i`` with ``i + r/2``,
    ``"interleaved"`` pairs ``2i`` with ``2i + 1``."""

    cos: tuple
    sin: tuple
    style: str = "half"
    position: int | None = None

    def __post_init__(self):
        cos, sin = _floats(self.cos, "rotation cos"), _floats(self.sin, "rotation sin")
        require(
            len(cos) == len(sin) and len(cos) % 2 == 0,
            ShapeError,
            f"rotation cos and sin have lengths {len(cos)} and {len(sin)}; give equal, even, non-zero lengths",
        )
        require(
            self.style in ROTATION_STYLES,
            OptionError,
            f"rotation style {self.style!r} is not known; accepted: {', '.join(ROTATION_STYLES)}",
        )
        object.__setattr__(self, "cos", cos)
        object.__setattr__(self, "sin", sin)

    def matrix(self, d: int):
        """``R`` (d x d) as an exact python-flint rational matrix."""
        R, half = fmpq_mat(d, d), len(self.cos) // 2
        for i in range(d):
            R[i, i] = 1
        for i, (c, s) in enumerate(zip(self.cos, self.sin)):
            if self.style == "half":
                partner, sign = (i + half, -1) if i < half else (i - half, 1)
            else:
                partner, sign = (i + 1, -1) if i % 2 == 0 else (i - 1, 1)
            R[i, i], R[i, partner] = fmpq_of(c), sign * fmpq_of(s)
        return R

    @classmethod
    def from_json(cls, data) -> Rotation:
        require(
            isinstance(data, dict) and "cos" in data and "sin" in data,
            CertificateFormatError,
            "certificate field query_set.rotation needs 'cos' and 'sin'",
        )
        return cls(data["cos"], data["sin"], data.get("style", "half"), data.get("position"))


class _NormSet(QuerySetSchema):
    """What the three norm query sets share: validation, sizes and arrays."""

    G_NAME = "gain"  # the name of the gain vector in the schema
    REQUIRED = ("gain", "W_q", "b_q")
    FIELDS = ("gain", "W_q", "b_q", "eps", "beta", "rotation")  # JSON order
    centred = False  # u also satisfies 1 . u = 0
    radius = None
    rotation = None

    def __post_init__(self):
        kind, gname = self.kind, self.G_NAME
        name = "layernorm" if kind == "layernorm" else "rmsnorm"
        g, b_q = _floats(getattr(self, gname), f"{name} {gname}"), _floats(self.b_q, f"{name} b_q")
        beta = None if self.beta is None else _floats(self.beta, f"{kind} beta")
        W_q = as_real_array(self.W_q, name=f"{name} W_q", ndim=2)
        n = len(g)
        require(n >= 2 or not self.centred, ShapeError, f"{kind} {gname} has length {n}; LayerNorm needs width n >= 2")
        require(
            beta is None or len(beta) == n,
            ShapeError,
            f"{kind} beta has length {len(beta or ())} but {gname} has length {n}; they must agree",
        )
        require(
            W_q.shape[1] == n,
            ShapeError,
            f"{name} W_q has shape {W_q.shape} but {gname} has length {n}; W_q must be d x {n}",
        )
        require(
            len(b_q) == W_q.shape[0],
            ShapeError,
            f"{name} b_q has length {len(b_q)} but W_q has {W_q.shape[0]} rows; they must agree",
        )
        eps = as_radius(self.eps, f"{name} eps", positive=False)
        rotation = self.rotation
        if rotation is not None and not isinstance(rotation, Rotation):
            rotation = Rotation.from_json(rotation) if isinstance(rotation, dict) else Rotation(*rotation)
        require(
            rotation is None or len(rotation.cos) <= len(b_q),
            ShapeError,
            f"rotation has {len(getattr(rotation, 'cos', ()))} entries but queries have dimension {len(b_q)}",
        )
        W_q.flags.writeable = False  # a read-only float64 copy: no Python float per entry
        values = {gname: g, "beta": beta, "W_q": W_q, "b_q": b_q, "eps": eps, "rotation": rotation}
        for key in set(self.FIELDS) & set(values):
            object.__setattr__(self, key, values[key])
        if self.radius is not None:
            object.__setattr__(self, "radius", as_radius(self.radius))
        object.__setattr__(
            self,
            "_arrays",
            {
                gname: np.array(g),
                "b_q": np.array(b_q),
                "W_q": W_q,
                "beta": np.zeros(n) if beta is None else np.array(beta),
            },
        )

    def _fields(self) -> tuple:
        return tuple(self.W_q.shape if f == "W_q" else getattr(self, f) for f in self.FIELDS)

    def __eq__(self, other):
        """Equal fields (``W_q`` compared entry by entry)."""
        return type(other) is type(self) and self._fields() == other._fields() and np.array_equal(self.W_q, other.W_q)

    def __hash__(self):
        return hash((type(self).__name__, self._fields()))

    width = property(lambda self: len(getattr(self, self.G_NAME)), doc="``n``, the normalised width.")
    dim = property(lambda self: len(self.b_q), doc="``d``, the query dimension.")

    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays as fresh float64 numpy arrays (kept from validation, copied on each call)."""
        return {k: v.copy() for k, v in self._arrays.items()}

    def validate(self, dim: int) -> None:
        require(
            self.dim == dim,
            ShapeError,
            f"{'layernorm' if self.kind == 'layernorm' else 'rmsnorm'} W_q produces queries of dimension "
            f"{self.dim} but the keys have dimension {dim}; W_q must be {dim} x n",
        )


@dataclass(frozen=True, eq=False)
class LayerNormQuerySet(_NormSet):
    """The closure of the queries of one LayerNorm layer (optionally also ``||q|| <= radius``)."""

    gamma: tuple
    beta: tuple
    W_q: np.ndarray  # d x n, read-only float64
    b_q: tuple
    eps: float = 0.0
    radius: float | None = None

    kind = "layernorm"
    G_NAME = "gamma"
    REQUIRED = ARRAYS = ("gamma", "beta", "W_q", "b_q")
    FIELDS = ARRAYS + ("eps", "radius")
    centred = True


@dataclass(frozen=True, eq=False)
class RMSNormQuerySet(_NormSet):
    """The closure of the queries of one RMSNorm layer and head (see the module docstring)."""

    gain: tuple
    W_q: np.ndarray
    b_q: tuple
    eps: float = 0.0
    rotation: Rotation | None = None
    beta: tuple | None = None  # an output bias (layernorm_rotary), added to gain * u

    kind = "rmsnorm"


@dataclass(frozen=True, eq=False)
class RotaryLayerNormQuerySet(RMSNormQuerySet):
    """The closure of the queries of one LayerNorm layer and head at one rotary position."""

    kind = "layernorm_rotary"
    centred = True


QUERY_SETS = {"layernorm": LayerNormQuerySet, "rmsnorm": RMSNormQuerySet, "layernorm_rotary": RotaryLayerNormQuerySet}


class ExactQueryMap:
    """Exact forms of one query set's map ``u -> R (W_q (g * u + beta) + b_q)`` (read-only); it depends
    on the query set only, so a run over many texts builds it once per head (``query_map``)."""

    def __init__(self, query_set):
        arrays = query_set.arrays()
        self.n, self.d = query_set.width, query_set.dim
        self.W_float = arrays["W_q"]  # Wq, WqT: built on first use
        smallest = np.min(
            np.abs(self.W_float), where=self.W_float != 0, initial=np.inf
        )  # frexp's exponent grows with |x|
        self.ew = int(np.frexp(smallest)[1]) - 53 if np.isfinite(smallest) else 0
        self.G, self.eg = dyadic_integers(arrays[query_set.G_NAME])  # g = G * 2^eg
        self.q0 = fmpq_matrix(arrays["b_q"].reshape(-1, 1))  # W_q beta + b_q, exact
        if query_set.beta is not None and any(query_set.beta):
            self.q0 = self.Wq * (fmpq_matrix(arrays["beta"].reshape(-1, 1)) * pow2(self.ew)) + self.q0  # integer W_q
        self.radius = None if query_set.radius is None else fmpq_of(query_set.radius)
        self.centred = query_set.centred
        self.R = None if query_set.rotation is None else query_set.rotation.matrix(self.d)
        self._hn = None

    def __getattr__(self, name):
        """``Wq`` and ``WqT``: ``W_q = Wq * 2**ew`` with the integer d x n matrix ``Wq`` (fmpz_mat) and its
        transpose, built on first use (a covering head's checks need a few columns only)."""
        if name not in ("Wq", "WqT"):
            raise AttributeError(name)
        self.Wq = integer_matrix(self.W_float)[0]
        self.WqT = self.Wq.transpose()
        return getattr(self, name)

    def query(self, U, D: int):
        """``q = R (W_q (g * u + beta) + b_q)`` exactly for ``u = U / D`` (integers ``U``; a d x 1 fmpq_mat)."""
        v = fmpz_mat(self.n, 1, [g * int(x) for g, x in zip(self.G, U)])
        q = fmpq_mat(self.Wq * v) * (pow2(self.ew + self.eg) / fmpq(D)) + self.q0
        return q if self.R is None else self.R * q

    def gram(self):
        """``(Hn, c, q0)``: ``H = R A P A^T R^T = Hn * c`` with the integer d x d matrix ``Hn``
        (``A = W_q diag(g)``, ``P = I - 11^T/n`` when centred, else ``I``; ``R`` the rotation or ``I``)
        and the exact offset ``R q0`` (fmpq).  The part without ``R`` is built once (``_hn``: it does
        not depend on the position, so a map of the same head at another position may share it)."""
        if self._hn is None:
            n, entries = self.n, self.Wq.entries()
            WG = fmpz_mat(self.d, n, [entries[r * n + c] * self.G[c] for r in range(self.d) for c in range(n)])
            S = WG * fmpz_mat(n, 1, [1] * n)
            self.WG, self.WGT = WG, WG.transpose()
            self.scale = pow2(self.ew + self.eg)
            Hn = WG * self.WGT * n
            self._hn = (Hn - S * S.transpose() if self.centred else Hn, self.scale * self.scale / n, self.q0)
        if self.R is None:
            return self._hn
        (Hn, c, q0), (Ri, den) = self._hn, self.R.numer_denom()
        return Ri * Hn * Ri.transpose(), c / (den * den), self.R * q0

    def compact_queries(self, Y, s) -> list:
        """For each column ``y`` of the integer matrix ``Y`` (fmpz_mat, d x m) times the rational ``s``:
        the query ``q = H y + R q0`` made from ``u = P diag(g) W_q^T R^T y`` (so ``1.u = 0`` when
        centred and ``||u||^2 = y^T H y``), or None when that ``u`` has ``||u||^2 > n``."""
        Hn, c, q0 = self.gram()
        HY, m, out = (Hn * Y).entries(), Y.ncols(), []
        for t in range(m):
            col = [HY[a * m + t] for a in range(self.d)]
            norm2 = fmpq(sum(int(Y[a, t]) * col[a] for a in range(self.d))) * c * s * s
            out.append(None if norm2 > self.n else fmpq_mat(self.d, 1, col) * (c * s) + q0)
        return out


class ExactLayer:
    """Exact forms of one layer's query map and of the keys (built once, read-only): integers times
    one power of two per array, so the products in the checks are integer matrix products."""

    def __init__(self, keys, query_set, query_map: ExactQueryMap | None = None):
        self.query_map = ExactQueryMap(query_set) if query_map is None else query_map
        self.keys = ExactKeys.of(keys)
        self.N = self.keys.n
        self.ln = query_set.kind == "layernorm"

    def __getattr__(self, name):
        """The query map's exact forms and ``query`` (n, d, Wq, ew, G, eg, q0, radius, centred, R, ...)."""
        if name == "query_map":
            raise AttributeError(name)
        return getattr(self.query_map, name)

    def winners(self, items) -> list:
        """``(ok, message)`` for ``(index, q)`` pairs with exact queries ``q`` (fmpq d x 1): ``q.k_i > q.k_j``
        for every ``j != i``, by the witness check of every query set (:func:`.checker.check_witnesses`)."""
        got = check_witnesses(self.keys, [(i, [fraction_of_fmpq(x) for x in q.entries()]) for i, q in items])
        return [(message is None, message or "") for message in got]

    def check_factored(self, items) -> list:
        """Exact ``(ok, message, q)`` for ``(index, y)`` pairs, ``u = P diag(gamma) W_q^T y``
        (:meth:`ExactQueryMap.compact_queries`, the exact query; None when it is outside the set),
        then :meth:`winners` for all items together."""
        if not items:
            return []
        ints, ey = dyadic_integers(np.array([y for _, y in items], dtype=np.float64).reshape(len(items), self.d).T)
        made = self.query_map.compact_queries(fmpz_mat(self.d, len(items), ints), pow2(ey))
        out, queries = {}, []
        for t, ((index, _), q) in enumerate(zip(items, made)):
            if q is None:
                out[t] = (False, f"key {index}: ||u||^2 exceeds n = {self.n}", None)
            elif self.radius is not None and (q.transpose() * q)[0, 0] > self.radius * self.radius:
                out[t] = (False, f"key {index}: ||q||^2 exceeds R^2", None)
            else:
                queries.append((t, (index, q)))
        for (t, (_, q)), verdict in zip(queries, self.winners([item for _, item in queries])):
            out[t] = (*verdict, q)
        return [out[t] for t in range(len(items))]

    def direction_terms(self, C, Dc: int = 1):
        """For ``v = C / Dc`` (integers): ``(n ||P w||^2, c)`` exactly (fmpq) with
        ``w = g * (W_q^T R^T v)`` and ``c = (R q0) . v``: the largest ``q . v`` over the set
        is ``sqrt(n ||P w||^2) + c``."""
        Y = [int(x) for x in C]
        if self.R is not None:  # R^T v, scaled to integers by a positive factor
            num, den = (self.R.transpose() * fmpz_mat(self.d, 1, Y)).numer_denom()
            Y, Dc = [int(num[a, 0]) for a in range(self.d)], Dc * int(den)
        g = self.WqT * fmpz_mat(self.d, 1, Y)
        w = [gam * int(g[r, 0]) for r, gam in enumerate(self.G)]  # times 2^(eg+ew)
        nw2 = self.n * sum(x * x for x in w) - (sum(w) ** 2 if self.centred else 0)
        scale = pow2(self.ew + self.eg) / fmpq(Dc)
        return fmpq(nw2) * scale * scale, sum((self.q0[a, 0] * Y[a] for a in range(self.d)), fmpq(0)) / fmpq(Dc)


def primal_query(layer: ExactLayer, index: int, U, D: int):
    """The exact query made from ``u = U / D`` when ``u`` is in the set (and ``q`` in the ball), else
    ``(False, message, None)``."""
    n = layer.n
    if len(U) != n or D <= 0:
        return False, f"key {index}: u must have {n} entries and a positive denominator", None
    if layer.centred and sum(U) != 0:
        return False, f"key {index}: u is not on the hyperplane 1.u = 0", None
    norm2 = sum(x * x for x in U)
    if norm2 > n * D * D:
        return False, f"key {index}: ||u||^2 exceeds n = {n}", None
    q = layer.query(U, D)
    if layer.radius is not None and (q.transpose() * q)[0, 0] > layer.radius * layer.radius:
        return False, f"key {index}: ||q|| exceeds the radius R", None
    return q


def check_dual(layer: ExactLayer, index: int, indices, weights) -> tuple[bool, str]:
    """``sqrt(n) ||P (g * (W_q^T R^T v))|| + (R q0) . v <= 0``, decided exactly by comparing squares
    (``weights``: Fractions or ints, as every caller has them; read as convex weights by
    :func:`.checker._weights`)."""
    got = _weights(layer.keys, index, Combination(indices, weights), False)
    if isinstance(got, str):
        return False, got
    indices, Lam, L = got
    K = layer.keys.integer_matrix()  # k_j = K_j 2^exponent
    # v = V * 2^ek / L; a positive rescaling of v scales both sides of the test alike
    V = [L * int(K[index, a]) - sum(lam * int(K[j, a]) for j, lam in zip(indices, Lam)) for a in range(layer.d)]
    n_pg2, c = layer.direction_terms(V)
    if c > 0 or n_pg2 > c * c:  # sqrt(n_pg2) + c <= 0 exactly when c <= 0 and n_pg2 <= c^2
        return False, f"key {index}: the dual bound sqrt(n) ||P (g * W_q^T R^T v)|| + (R q0) . v is not <= 0"
    return True, ""


def _evidence(layer: ExactLayer, result) -> tuple:
    """What a result claims, read from its fields: ``("y", y)``, ``("u", q)`` (the query made from ``u``
    when ``u`` is in the set and any stated witness is that query) or a verdict ``(ok, message)``;
    a selectable LayerNorm result may give ``y`` (d floats, the compact form) in place of ``u``."""
    index, status, y = result.get("index"), result.get("status"), result.get("y")
    if type(index) is not int or not 0 <= index < layer.N:
        return False, f"key {index}: index out of range 0..{layer.N - 1}"
    try:
        if layer.ln and status == "selectable" and y is not None:
            if (
                not isinstance(y, (list, tuple))
                or len(y) != layer.d
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in y)
            ):
                return False, f"key {index}: y must be a list of {layer.d} numbers"
            return "y", [float(v) for v in y]
        if status == "selectable":
            u = result.get("u")
            if not isinstance(u, (list, tuple)) or len(u) != layer.n:
                raise ValueError(f"u must be a list of {layer.n} numbers")
            U, D = integer_vector_of_fractions([to_fraction(v) for v in u])
            q, witness = primal_query(layer, index, U, D), result.get("witness")
            if isinstance(q, tuple):
                return q[:2]
            if witness is not None and (
                len(witness) != layer.d
                or any(  # a stated witness is that query
                    to_fraction(w) != fraction_of_fmpq(q[a, 0]) for a, w in enumerate(witness)
                )
            ):
                return False, f"key {index}: the witness is not the query made from u"
            return "u", q
        if status == "not-realisable":
            dual = result.get("dual") or {}
            return check_dual(
                layer,
                index,
                [int(j) for j in dual.get("indices", [])],
                [to_fraction(w) for w in dual.get("weights", [])],
            )
    except (ValueError, TypeError, AttributeError, ZeroDivisionError) as err:
        return False, f"key {index}: malformed {status} certificate ({err})"
    if status == "undecided":
        return True, ""
    return False, f"key {index}: status {status!r} is not used with {'layernorm' if layer.ln else 'rmsnorm'} query sets"


def _decide(layer: ExactLayer, datas: list) -> list[tuple[bool, str]]:
    """``(ok, message)`` for result dictionaries: every ``y`` together and
    every ``u`` together (:meth:`ExactLayer.winners`), the rest one by one."""
    evidence = [_evidence(layer, d) for d in datas]
    ys = [t for t, e in enumerate(evidence) if e[0] == "y"]
    us = [t for t, e in enumerate(evidence) if e[0] == "u"]
    out = dict(zip(ys, [v[:2] for v in layer.check_factored([(datas[t]["index"], evidence[t][1]) for t in ys])]))
    out.update(zip(us, layer.winners([(datas[t]["index"], evidence[t][1]) for t in us])))
    return [out.get(t, evidence[t]) for t in range(len(datas))]


def check_all(keys, query_set, results) -> list:
    """Exact verdicts for many results (the layer's exact forms are built once; the queries of all
    results are checked together)."""
    ek = ExactKeys.of(keys)
    query_set.validate(ek.dim)
    layer = ExactLayer(ek, query_set)
    datas = [
        r if isinstance(r, dict) else {**r.extras, "index": r.index, "status": r.status, "witness": r.witness}
        for r in results
    ]  # a result's JSON, or a KeyResult's fields
    return [
        Verdict(d["index"] if type(d.get("index")) is int else -1, str(d.get("status")), *verdict)
        for d, verdict in zip(datas, _decide(layer, datas))
    ]


def check_float_witnesses(keys, query_set, indices, U) -> list:
    """``selectable`` claims for the keys ``indices`` with the float witnesses ``u`` (the rows of ``U``),
    all at once (a vocabulary's).  A row is in the set when it is ``u = I 2^e`` with integers
    ``|I| < 2^20`` (``e`` from its largest entry; the row read back exactly), ``1 . I = 0`` when centred
    and ``2^(2e) I . I <= n``: with ``n <= 2^13`` these sums are exact in doubles, in any order.  The
    scores are those of the float keys ``L_j = (g * W_q^T k_j, k_j)`` at ``(u, q0)``:
    ``L_j . (u, q0) = k_j . (W_q (g * u) + q0) = k_j . q`` (theorem ``vocab.final_norm``, with ``W_q^T``
    moved onto the key), decided at once by :func:`.checker.check_witnesses`.  ``L`` is exact when
    ``W_q`` is a selection (entries 0 and 1, one 1 per column), ``g`` and the keys are float32 numbers
    (so their products are doubles) or ``g``'s entries are powers of two (and every product stays a
    normal double, or zero from a zero key), and ``q0`` is a float vector; such sets without rotation
    or radius are the ones this check accepts (an output layer's: ``W_q = I``, or ``[I; 0]`` with the
    output bias as a last key entry)."""
    ek, qm, n, g = ExactKeys.of(keys), ExactQueryMap(query_set), query_set.width, query_set.arrays()[query_set.G_NAME]
    W, U, q0 = qm.W_float, np.asarray(U, dtype=np.float64).reshape(len(indices), n), qm.q0.entries()
    w0 = np.array([float(fraction_of_fmpq(x)) for x in q0])
    picked = ek.array[:, W.argmax(axis=0)]
    Z = picked * g  # W_q^T k_j times g, when W_q selects coordinates
    require(
        qm.R is None
        and qm.radius is None
        and n <= 2**13
        and np.isin(W, (0, 1)).all()
        and (W.sum(axis=0) == 1).all()
        and (
            (ek.single is not None and np.array_equal(g.astype(np.float32), g))
            or (
                np.all(np.abs(np.frexp(g)[0]) == 0.5)
                and np.all((np.abs(Z) >= 2.0**-1022) & np.isfinite(Z) | (picked == 0))
            )
        )
        and all(fmpq_of(a) == b for a, b in zip(w0, q0)),
        CertificateFormatError,
        "float witnesses u are checked for sets q = W_q (g * u) + q0 with W_q a 0/1 selection, float32 g and keys "
        "(or g powers of two), float q0, no rotation and no radius; give the claims as results",
    )
    e = np.frexp(np.abs(U).max(axis=1, initial=0))[1] - 20
    with np.errstate(invalid="ignore", over="ignore"):
        I = np.ldexp(U, -e[:, None])
        inside = np.all((I == np.rint(I)) & (np.ldexp(I, e[:, None]) == U), axis=1) & np.all(np.isfinite(U), axis=1)
        inside &= ((I.sum(axis=1) == 0) | (not qm.centred)) & (np.ldexp((I * I).sum(axis=1), 2 * e) <= n)
    keep, rows = np.flatnonzero(w0), np.flatnonzero(inside)
    L = ExactKeys(np.hstack([Z, ek.array[:, keep]]))
    got = dict(zip(rows, check_witnesses(L, [(int(indices[t]), np.r_[U[t], w0[keep]]) for t in rows])))
    return [
        Verdict(
            int(i),
            "selectable",
            bool(inside[t]) and got[t] is None,
            got.get(t) or "" if inside[t] else f"key {i}: u is not in the set, or not on a grid of 20-bit integers",
        )
        for t, i in enumerate(indices)
    ]
