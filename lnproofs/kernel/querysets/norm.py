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
``j != i``, or ``y`` (d rationals), the compact form of ``u = P (g * (W_q^T R^T y))``
(:meth:`ExactQueryMap.compact_u`; a query depends on ``u`` only through ``P diag(g) W_q^T``):
one exact path, whichever form ``u`` takes.  ``not-realisable``: weights ``lambda_j >= 0`` (sum 1) over
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

    def pairs(self) -> list[tuple[int, int]]:
        """The coordinate pairs ``(a, b)`` each 2 x 2 block ``[[c_a, -s_a], [s_b, c_b]]`` rotates."""
        h = len(self.cos) // 2
        return [(i, i + h) for i in range(h)] if self.style == "half" else [(i, i + 1) for i in range(0, 2 * h, 2)]

    def matrix(self, d: int):
        """``R`` (d x d, the identity beyond the pairs) as an exact python-flint rational matrix."""
        R, c, s = fmpq_mat(d, d), [fmpq_of(x) for x in self.cos], [fmpq_of(x) for x in self.sin]
        for i in range(d):
            R[i, i] = 1
        for a, b in self.pairs():
            R[a, a], R[a, b], R[b, a], R[b, b] = c[a], -s[a], s[b], c[b]
        return R

    def invertible(self) -> bool:
        """Whether ``R`` is invertible: every block has ``c_a c_b + s_a s_b != 0``, in integers (a float is
        ``p / q``, ``q`` a power of two)."""
        c, s = [x.as_integer_ratio() for x in self.cos], [x.as_integer_ratio() for x in self.sin]
        return all(
            c[a][0] * c[b][0] * s[a][1] * s[b][1] + s[a][0] * s[b][0] * c[a][1] * c[b][1] for a, b in self.pairs()
        )

    @classmethod
    def from_json(cls, data) -> Rotation:
        require(
            isinstance(data, dict) and "cos" in data and "sin" in data,
            CertificateFormatError,
            "certificate field query_set.rotation needs 'cos' and 'sin'",
        )
        return cls(data["cos"], data["sin"], data.get("style", "half"), data.get("position"))


class NormQuerySet(QuerySetSchema):
    """What the three norm query sets share: validation, sizes and arrays."""

    G_NAME = "gain"  # the name of the gain vector in the schema
    REQUIRED = ("gain", "W_q", "b_q")
    FIELDS = ("gain", "W_q", "b_q", "eps", "beta", "rotation")  # JSON order
    centred = False  # u also satisfies 1 . u = 0
    radius = None
    rotation = None

    def __post_init__(self):
        kind, gname = self.kind, self.G_NAME
        g, b_q = _floats(getattr(self, gname), f"{kind} {gname}"), _floats(self.b_q, f"{kind} b_q")
        beta = None if self.beta is None else _floats(self.beta, f"{kind} beta")
        W_q = as_real_array(self.W_q, name=f"{kind} W_q", ndim=2)
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
            f"{kind} W_q has shape {W_q.shape} but {gname} has length {n}; W_q must be d x {n}",
        )
        require(
            len(b_q) == W_q.shape[0],
            ShapeError,
            f"{kind} b_q has length {len(b_q)} but W_q has {W_q.shape[0]} rows; they must agree",
        )
        eps = as_radius(self.eps, f"{kind} eps", positive=False)
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
        """The arrays as fresh float64 numpy arrays (``beta``: zeros when the set has none)."""
        beta = np.zeros(self.width) if self.beta is None else np.array(self.beta)
        arrays = {self.G_NAME: getattr(self, self.G_NAME), "b_q": self.b_q, "W_q": self.W_q, "beta": beta}
        return {name: np.array(value, dtype=np.float64) for name, value in arrays.items()}

    def validate(self, dim: int) -> None:
        require(
            self.dim == dim,
            ShapeError,
            f"{self.kind} W_q produces queries of dimension "
            f"{self.dim} but the keys have dimension {dim}; W_q must be {dim} x n",
        )


@dataclass(frozen=True, eq=False)
class LayerNormQuerySet(NormQuerySet):
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
class RMSNormQuerySet(NormQuerySet):
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
        # the exponent of the smallest entry (frexp's exponent grows with |x|): W_q = Wq * 2**ew
        smallest = np.min(np.abs(self.W_float), where=self.W_float != 0, initial=np.inf)
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
        return self.queries([(U, D)])[0]

    def queries(self, items) -> list:
        """:meth:`query` for many ``(U, D)`` items, in one integer product."""
        if not items:
            return []
        v = fmpz_mat(self.n, len(items), [g * int(U[c]) for c, g in enumerate(self.G) for U, _ in items])
        P, scale = (self.Wq * v).entries(), pow2(self.ew + self.eg)
        out = []
        for t, (_, D) in enumerate(items):
            q = fmpq_mat(self.d, 1, P[t :: len(items)]) * (scale / fmpq(D)) + self.q0
            out.append(q if self.R is None else self.R * q)
        return out

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

    def pulled(self, Y, D: int = 1) -> tuple:
        """``(w, Y', D')`` for ``y = Y / D`` (integers): ``R^T y = Y' / D'`` and ``g * (W_q^T R^T y) = w 2^(ew + eg) / D'``."""
        Y = [int(x) for x in Y]
        if self.R is not None:  # R^T y, scaled to integers by a positive factor
            num, den = (self.R.transpose() * fmpz_mat(self.d, 1, Y)).numer_denom()
            Y, D = [int(num[a, 0]) for a in range(self.d)], D * int(den)
        return [g * int(x) for g, x in zip(self.G, (self.WqT * fmpz_mat(self.d, 1, Y)).entries())], Y, D

    def compact_u(self, y) -> tuple[list[int], int]:
        """``(U, D)`` with ``u = U / D = P (g * (W_q^T R^T y))`` exactly for rationals ``y`` (d entries): the
        compact form of a witness ``u`` (queries depend on ``u`` only through ``P diag(g) W_q^T``)."""
        w, _, D = self.pulled(*integer_vector_of_fractions([to_fraction(v) for v in y]))
        if self.centred:
            w, D = [self.n * x - sum(w) for x in w], D * self.n
        e = self.ew + self.eg
        return ([x << e for x in w], D) if e >= 0 else (w, D << -e)

    def direction_terms(self, C, Dc: int = 1):
        """For ``v = C / Dc`` (integers): ``(n ||P w||^2, c)`` exactly (fmpq) with ``w = g * (W_q^T R^T v)``
        and ``c = (R q0) . v``: the largest ``q . v`` over the set is ``sqrt(n ||P w||^2) + c``."""
        w, Y, Dc = self.pulled(C, Dc)
        nw2 = self.n * sum(x * x for x in w) - (sum(w) ** 2 if self.centred else 0)
        scale = pow2(self.ew + self.eg) / fmpq(Dc)
        return fmpq(nw2) * scale * scale, sum((self.q0[a, 0] * Y[a] for a in range(self.d)), fmpq(0)) / fmpq(Dc)


class ExactLayer:
    """Exact forms of one layer's query map and of the keys (built once, read-only): integers times
    one power of two per array, so the products in the checks are integer matrix products."""

    def __init__(self, keys, query_set, query_map: ExactQueryMap | None = None):
        self.query_map = ExactQueryMap(query_set) if query_map is None else query_map
        self.keys = ExactKeys.of(keys)
        self.N, self.kind = self.keys.n, query_set.kind

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


def primal_queries(layer: ExactLayer, items) -> list:
    """For ``(index, U, D)`` items (``u = U / D``): the exact query made from ``u`` when ``u`` is in the
    set (and ``q`` in the ball), else ``(False, message, None)``; the queries of all items in one
    integer product."""
    n, out, inside = layer.n, [], []
    for t, (index, U, D) in enumerate(items):
        if len(U) != n or D <= 0:
            out.append((False, f"key {index}: u must have {n} entries and a positive denominator", None))
        elif layer.centred and sum(U) != 0:
            out.append((False, f"key {index}: u is not on the hyperplane 1.u = 0", None))
        elif sum(x * x for x in U) > n * D * D:
            out.append((False, f"key {index}: ||u||^2 exceeds n = {n}", None))
        else:
            out.append(None)
            inside.append(t)
    for t, q in zip(inside, layer.queries([items[t][1:] for t in inside])):
        bad = layer.radius is not None and (q.transpose() * q)[0, 0] > layer.radius * layer.radius
        out[t] = (False, f"key {items[t][0]}: ||q|| exceeds the radius R", None) if bad else q
    return out


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
    """What a result claims, read from its fields: ``(U, D)`` for a selectable result (``u = U / D``, given
    as ``u`` or in the compact form ``y``, :meth:`ExactQueryMap.compact_u`), else a verdict ``(ok, message)``."""
    index, status, y, u = result.get("index"), result.get("status"), result.get("y"), result.get("u")
    if type(index) is not int or not 0 <= index < layer.N:
        return False, f"key {index}: index out of range 0..{layer.N - 1}"
    try:
        if status == "selectable" and y is not None:
            if not isinstance(y, (list, tuple)) or len(y) != layer.d or any(isinstance(v, bool) for v in y):
                raise ValueError(f"y must be a list of {layer.d} numbers")
            return layer.compact_u(y)
        if status == "selectable":
            if not isinstance(u, (list, tuple)) or len(u) != layer.n:
                raise ValueError(f"u must be a list of {layer.n} numbers")
            return integer_vector_of_fractions([to_fraction(v) for v in u])
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
    return False, f"key {index}: status {status!r} is not used with {layer.kind} query sets"


def _stated(witness, q) -> bool:
    """Whether a stated witness (or none) is the query ``q``."""
    try:
        return witness is None or (
            len(witness) == q.nrows()
            and all(to_fraction(w) == fraction_of_fmpq(x) for w, x in zip(witness, q.entries()))
        )
    except (ValueError, TypeError):
        return False


def _decide(layer: ExactLayer, datas: list) -> list[tuple[bool, str]]:
    """``(ok, message)`` for result dictionaries: the queries of every ``u`` together, their wins
    together (:meth:`ExactLayer.winners`), the rest one by one."""
    evidence = [_evidence(layer, d) for d in datas]
    out = {t: e for t, e in enumerate(evidence) if isinstance(e[0], bool)}
    us = [t for t in range(len(datas)) if t not in out]
    made = primal_queries(layer, [(datas[t]["index"], *evidence[t]) for t in us])
    wins = []
    for t, q in zip(us, made):
        if isinstance(q, tuple):
            out[t] = q[:2]
        elif not _stated(datas[t].get("witness"), q):
            out[t] = (False, f"key {datas[t]['index']}: the witness is not the query made from u")
        else:
            wins.append((t, (datas[t]["index"], q)))
    out.update(zip([t for t, _ in wins], layer.winners([item for _, item in wins])))
    return [out[t] for t in range(len(datas))]


def check_all(keys, query_set, results) -> list:
    """Exact verdicts for many results (the layer's exact forms are built once; the queries of all
    results are checked together)."""
    ek = ExactKeys.of(keys)
    query_set.validate(ek.dim)
    layer = ExactLayer(ek, query_set)
    # a result's JSON, or a KeyResult's fields
    datas = [
        r if isinstance(r, dict) else {**r.extras, "index": r.index, "status": r.status, "witness": r.witness}
        for r in results
    ]
    return [
        Verdict(d["index"] if type(d.get("index")) is int else -1, str(d.get("status")), *verdict)
        for d, verdict in zip(datas, _decide(layer, datas))
    ]
