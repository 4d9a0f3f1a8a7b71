"""Query sets, trusted half: each set's schema and the exact checks of its certificates.

A *query set* says which queries q are allowed when we ask whether key k_i can win
the attention argmax (q.k_i > q.k_j for every j != i).  ``free`` allows every q in R^d;
``subspace`` allows q = W^T z; ``layernorm`` allows the queries a LayerNorm + W_q layer
can produce; ``rmsnorm`` the queries an RMSNorm + W_q layer (optionally rotated by
RoPE) can produce; ``layernorm_rotary`` the queries of a LayerNorm layer rotated by RoPE;
``ball`` allows ||q|| <= R; ``box`` allows |q_l| <= B with a per-key bias on the scores.
Related kinds share a module (``free``: free, ball, box; ``norm``: the three norm sets).
Adding a query set is adding its kind to :data:`KINDS` here with the module that defines and
checks it: the one place a kind's name meets its class (:func:`kind_of`).  Every other layer
registers its own piece of a kind under the class (its proposer, its numeric re-check, its
command-line option), and ``tests/test_kinds.py`` fails when a layer misses a kind.

The protocol
------------
A module ``lnproofs/kernel/querysets/<module>.py`` defines:

``QUERY_SETS``
    the kinds it checks (the strings stored in certificates as ``query_set["kind"]``), each with a
    frozen dataclass describing the set, with ``validate(dim)``, its JSON fields ``FIELDS`` (written
    by :func:`lnproofs.certificates.writers.query_set_to_json` as a plain JSON object whose ``"kind"``
    entry is its ``kind`` attribute) and ``from_json(data: dict)`` (a classmethod that validates and
    raises :class:`~lnproofs.kernel.errors.CertificateFormatError` naming the bad field).

``check_all(keys, query_set, results) -> list[Verdict]``
    re-verify each result, independently of how it was made; returns one
    :class:`~lnproofs.kernel.checker.Verdict` per result, whose ``ok`` is True only if the claim
    holds and whose ``message`` names the key and the failing inequality otherwise.  It must be
    exact (rational or integer arithmetic, or the proven float filter of
    :mod:`lnproofs.kernel.checker`), except for certificates that declare
    ``verified == "bound"``, which are checked with a rigorous floating-point bound.
    It must import neither cvxpy nor torch.  ``keys`` may be a numpy array or a
    :class:`lnproofs.kernel.checker.ExactKeys` (use ``ExactKeys.of(keys)`` to get the latter).
    ``QuerySetSchema`` (below) gives a dataclass its JSON.

Helpers for exact checking live in :mod:`lnproofs.kernel.checker`: ``ExactKeys``,
``check_witnesses`` (strict or tie inequalities for many queries at once),
``check_combinations`` (exact convex combinations, many at once) and ``affine_rank``.
"""

from __future__ import annotations

import importlib

from ..errors import CertificateFormatError, InputError, require

#: each query-set kind and the module under lnproofs.kernel.querysets that reads and checks it
KINDS = {
    "free": "free",
    "ball": "free",
    "box": "free",
    "subspace": "subspace",
    "layernorm": "norm",
    "rmsnorm": "norm",
    "layernorm_rotary": "norm",
}


def kind_of(name: str) -> type:
    """The class of query sets of kind ``name``, the kind object every layer registers its own piece under:
    its JSON form (``FIELDS``, ``from_json``), its dimension check (``validate``) and its exact checks
    (``check``); the class is imported with its module on first use."""
    if name not in KINDS:
        raise CertificateFormatError(f"query_set kind {name!r} is unknown; known kinds: {', '.join(KINDS)}")
    return importlib.import_module(f".{KINDS[name]}", __name__).QUERY_SETS[name]


def query_set_from_json(data) -> object:
    """The query-set object for a certificate's ``query_set`` entry (``None`` means free)."""
    data = {"kind": "free"} if data is None else data
    if not isinstance(data, dict) or not isinstance(data.get("kind"), str):
        raise CertificateFormatError('query_set must be an object with a string field \'kind\', e.g. {"kind": "free"}')
    return kind_of(data["kind"]).from_json(data)


class QuerySetSchema:
    """The JSON of a query-set dataclass: ``kind`` and the fields ``FIELDS`` in order (an
    ``OPTIONAL`` field is left out when None; written by
    :func:`lnproofs.certificates.writers.query_set_to_json`); reading checks the kind and the
    ``REQUIRED`` fields, and the dataclass's own validation errors name the field."""

    FIELDS: tuple = ()
    REQUIRED: tuple = ()
    OPTIONAL = ("beta", "rotation", "radius")

    def validate(self, dim: int) -> None:
        """Raise a ShapeError if the set's queries do not live in R^dim (every dimension fits by default)."""

    def check(self, keys, results) -> list:
        """One exact verdict per result under this set: the ``check_all`` of the kind's module."""
        return importlib.import_module(type(self).__module__).check_all(keys, self, results)

    @classmethod
    def from_json(cls, data: dict):
        require(
            isinstance(data, dict) and data.get("kind") == cls.kind,
            CertificateFormatError,
            f"certificate field query_set is not a {cls.kind} query set",
        )
        for name in sorted(set(data) - {"kind", *cls.FIELDS}):
            raise CertificateFormatError(f"query_set field {name!r} is not used by {cls.kind} query sets; remove it")
        for name in cls.REQUIRED:
            require(
                name in data,
                CertificateFormatError,
                f"certificate field query_set has no {name!r}; the {cls.kind} query set needs {', '.join(cls.REQUIRED)}",
            )
        try:
            return cls(**{name: data[name] for name in cls.FIELDS if name in data})
        except CertificateFormatError:
            raise
        except InputError as err:
            raise CertificateFormatError(f"certificate field query_set: {err}") from None
