"""Selectability certificates as immutable data with an exact JSON round-trip.

A :class:`Certificate` holds one :class:`KeyResult` per key.  Each result says what was
proved about that key and carries the evidence:

* ``selectable``: ``witness`` is a query q with q.k_i > q.k_j for every j != i, or none (free and
  ball queries) when the keys are affinely independent, so that each is a vertex of their
  simplex (theorem ``attention.simplex_vertices``; the checker computes the exact affine rank);
* ``tie-only``: ``combination`` writes k_i as a convex combination of *other* keys, and
  ``witness`` puts k_i among the maximisers with some key strictly below;
* ``unselectable``: ``combination`` has strictly positive weights over other keys whose
  affine hull is that of all the keys, so k_i lies in the relative interior of the hull;
* ``not-realisable``: (cone query sets) no allowed query makes k_i win; evidence in extras;
* ``undecided``: nothing was verified; ``reason`` says why.

Witness entries are floats, or exact rationals (``Fraction``, written ``"p/q"`` in JSON)
when no float is exact.  Weights are always exact rationals.  Query-set specific data
(``"z"``, ``"u"``, ``"dual"``, ...) travels in ``extras``.  The JSON schema is
``lnproofs.selectability/1``; floats are written with Python's round-tripping repr.

Informational fields (floats stated as floats; they never change a status, and no check in
the kernel reads them): ``margin`` (per selectable key) and ``reason``, kept as read, and the
certificate's ``min_margin``, ``below_min_margin`` and ``rank``, which
:class:`lnproofs.certificates.Certificate` validates, reads, writes and measures again (see
:mod:`lnproofs.certificates.findings`).

``keys_from`` (certificate, optional): ``{"kind": "layernorm-inputs", "gain": [...],
"bias": [...], "eps": e}`` says the keys are the LayerNorm outputs
y = gain * (x - mean x) / sqrt(var x + eps) + bias (biased variance) of the N x d inputs
x that the certificate is checked against (the exact real outputs, not their floats).
Witnesses are then checked with exact square-root comparisons, and combinations (the
``unselectable`` claim) with interval arithmetic: the weights of the d keys of
``combination.indices`` are recomputed by an interval linear solve (``combination.weights``
holds their midpoints) and must be provably positive; see
:mod:`lnproofs.kernel.layernorm_keys`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from numbers import Integral
from types import MappingProxyType
from typing import Any

from .errors import CertificateFormatError, InputError, ShapeError
from .exact import to_fraction

SELECTABILITY_SCHEMA = "lnproofs.selectability/1"
STATUSES = ("selectable", "tie-only", "unselectable", "not-realisable", "undecided")
VERIFIED = ("exact", "bound", "none")
_BASE_FIELDS = ("index", "status", "witness", "combination", "verified", "margin", "reason")


def _bad(where: str, what: str) -> CertificateFormatError:
    return CertificateFormatError(f"certificate field {where} {what}")


def _int(value, where: str, what: str = "an integer", low: int | None = None, high: int | None = None) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not ((low is None or low <= value) and (high is None or value <= high))
    ):
        raise _bad(where, f"is {value!r}; expected {what}")
    return value


def _number(value, where: str):
    """A JSON number or "p/q" string (any number of digits, read by python-flint) -> float (exact) or Fraction."""
    try:
        exact = to_fraction(value) if isinstance(value, (int, float, str)) and not isinstance(value, bool) else None
    except InputError:
        exact = None
    if exact is None:
        raise _bad(where, f"is {value!r}; expected a number or a 'p/q' string (only finite numbers are accepted)")
    return value if type(value) is float else float(value) if type(value) is int and abs(value) <= 2**53 else exact


def _witness_entry(w):
    """A witness entry as the checks read it: a float, or a Fraction (an integer past 2**53 is never rounded)."""
    if type(w) is Fraction:
        return w
    return Fraction(int(w)) if isinstance(w, Integral) and abs(int(w)) > 2**53 else float(w)


def same_shape(data: dict, n: int, dim: int, what: str) -> None:
    """Raise a ShapeError unless ``data`` (a certificate's JSON) speaks of ``n`` keys in R^dim."""
    if (data.get("n_keys"), data.get("dim")) != (n, dim):
        raise ShapeError(
            f"the {what} is for {data.get('n_keys')!r} keys in R^{data.get('dim')!r} but the keys have shape ({n}, {dim})"
        )


def each_once(indices, n: int, where: str) -> None:
    """Raise unless ``indices`` name every key ``0..n-1`` exactly once."""
    seen = sorted(indices)
    if seen != list(range(n)):
        dup = next((a for a, b in zip(seen, seen[1:]) if a == b), None)
        what = f"index {dup} appears twice" if dup is not None else "some keys are missing or out of range"
        raise CertificateFormatError(f"{where} must list every key 0..{n - 1} once; {what}")


def freeze(value):
    if type(value) is dict or isinstance(value, Mapping):  # the plain dict first: the ABC test is slow
        return MappingProxyType({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value):
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    return value


@dataclass(frozen=True)
class Combination:
    """k_i = sum_j weights[j] * k[indices[j]], with exact rational weights."""

    indices: tuple[int, ...]
    weights: tuple[Fraction, ...]

    def __post_init__(self):
        object.__setattr__(self, "indices", tuple(int(i) for i in self.indices))
        object.__setattr__(self, "weights", tuple(Fraction(w) for w in self.weights))
        if len(self.indices) != len(self.weights):
            raise _bad("combination", f"has {len(self.indices)} indices but {len(self.weights)} weights")

    @classmethod
    def from_json(cls, data, where: str = "combination") -> Combination:
        if not isinstance(data, dict):
            raise _bad(where, "must be an object with 'indices' and 'weights'")
        for name in ("indices", "weights"):
            if not isinstance(data.get(name), list):
                raise _bad(f"{where}.{name}", "is missing or not a list")
        indices = [_int(i, f"{where}.indices[{n}]", "an integer key index") for n, i in enumerate(data["indices"])]
        weights = [Fraction(_number(w, f"{where}.weights[{n}]")) for n, w in enumerate(data["weights"])]
        return cls(tuple(indices), tuple(weights))


@dataclass(frozen=True)
class KeyResult:
    """What is proved about one key, with its evidence (see the module docstring)."""

    index: int
    status: str
    witness: tuple | None = None
    combination: Combination | None = None
    verified: str = "none"
    margin: float | None = None
    reason: str | None = None
    extras: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self):
        for name, value, choices in (("status", self.status, STATUSES), ("verified", self.verified, VERIFIED)):
            if value not in choices:
                raise _bad(f"results[{self.index}].{name}", f"is {value!r}; expected one of {', '.join(choices)}")
        if self.witness is not None and (
            type(self.witness) is not tuple or not set(map(type, self.witness)) <= {float}
        ):
            object.__setattr__(self, "witness", tuple(map(_witness_entry, self.witness)))
        object.__setattr__(self, "extras", freeze(dict(self.extras)))

    @classmethod
    def from_json(cls, data, where: str = "result") -> KeyResult:
        if not isinstance(data, dict):
            raise _bad(where, "must be an object")
        for name in ("index", "status", "verified"):
            if name not in data:
                raise _bad(f"{where}.{name}", "is missing")
        index = _int(data["index"], f"{where}.index")  # status and verified: checked on construction
        witness = data.get("witness")
        if witness is not None:
            if not isinstance(witness, list):
                raise _bad(f"{where}.witness", "must be a list of numbers or null")
            witness = tuple(_number(w, f"{where}.witness[{n}]") for n, w in enumerate(witness))
        combination = data.get("combination")
        combination = None if combination is None else Combination.from_json(combination, f"{where}.combination")
        extras = {k: v for k, v in data.items() if k not in _BASE_FIELDS}  # margin, reason: read, not checked
        return cls(
            index,
            data["status"],
            witness,
            combination,
            data["verified"],
            data.get("margin"),
            data.get("reason"),
            extras,
        )


@dataclass(frozen=True)
class Certificate:
    """Per-key selectability results for N keys in R^d under a query set: what the kernel reads of
    a certificate.  Its informational fields (``rank``, ``min_margin``) and its writer are those of
    :class:`lnproofs.certificates.Certificate`, which extends it."""

    n_keys: int
    dim: int
    query_set: Mapping[str, Any]
    results: tuple[KeyResult, ...]
    schema: str = SELECTABILITY_SCHEMA
    keys_from: Mapping[str, Any] | None = None

    def __post_init__(self):
        object.__setattr__(self, "results", tuple(self.results))
        object.__setattr__(self, "query_set", freeze(dict(self.query_set)))
        object.__setattr__(self, "keys_from", freeze(self.keys_from))

    @classmethod
    def from_json(cls, data) -> Certificate:
        if not isinstance(data, dict):  # JSON text is decoded by lnproofs.certificates
            raise CertificateFormatError("certificate must be a JSON object: schema, n_keys, dim, query_set, results")
        if data.get("schema") != SELECTABILITY_SCHEMA:
            raise _bad("schema", f"is {data.get('schema')!r}; expected {SELECTABILITY_SCHEMA!r}")
        for name in ("n_keys", "dim"):
            _int(data.get(name), name, "a non-negative integer", 0)
        query_set = data.get("query_set", {"kind": "free"})
        if not isinstance(query_set, dict) or not isinstance(query_set.get("kind"), str):
            raise _bad("query_set", "must be an object with a string field 'kind'")
        results = data.get("results")
        if not isinstance(results, list):
            raise _bad("results", "is missing or not a list")
        parsed = tuple(KeyResult.from_json(r, f"results[{n}]") for n, r in enumerate(results))
        return cls(data["n_keys"], data["dim"], query_set, parsed, keys_from=data.get("keys_from"))
