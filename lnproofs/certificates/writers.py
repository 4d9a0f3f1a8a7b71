"""The JSON writers of the kernel's data: what files and people read, no claim decided here.

The kernel (:mod:`lnproofs.kernel`) reads certificates and decides them; writing them is done
here, outside the trusted code.  A writer that got a field wrong makes a certificate the kernel
then refutes or refuses, never a wrong verdict.  Schemas: ``lnproofs.selectability/1`` (see
:mod:`lnproofs.kernel.certificates`) and each query set's JSON (:mod:`lnproofs.kernel.querysets`).
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from flint import fmpq

__all__ = [
    "format_fraction",
    "plain",
    "combination_to_json",
    "result_to_json",
    "query_set_to_json",
    "rotation_to_json",
    "layernorm_keys_to_json",
]


def format_fraction(value) -> str:
    """``"p/q"``, or ``"p"`` when the denominator is 1 (python-flint writes the digits, so
    numbers of any length are written: Python's own int-to-text limit does not apply)."""
    value = Fraction(value)
    return str(fmpq(value.numerator, value.denominator))


def plain(value):
    """A frozen value (:func:`lnproofs.kernel.freeze`) as JSON: mappings as dicts,
    tuples as lists, exact rationals as ``"p/q"``."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [plain(v) for v in value]
    if isinstance(value, Fraction):
        return format_fraction(value)
    return value


def combination_to_json(combination) -> dict:
    """A :class:`~lnproofs.kernel.Combination` as JSON (weights as ``"p/q"``)."""
    return {"indices": list(combination.indices), "weights": [format_fraction(w) for w in combination.weights]}


def result_to_json(result) -> dict:
    """A :class:`~lnproofs.kernel.KeyResult` as JSON: the base fields in order, then its extras."""
    witness, combination = result.witness, result.combination
    out = {
        "index": int(result.index),
        "status": result.status,
        "witness": None
        if witness is None
        else [format_fraction(w) if type(w) is Fraction else float(w) for w in witness],
        "combination": None if combination is None else combination_to_json(combination),
        "verified": result.verified,
        "margin": None if result.margin is None else float(result.margin),
        "reason": result.reason,
    }
    for key, value in result.extras.items():
        out[key] = plain(value)
    return out


def query_set_to_json(query_set) -> dict:
    """A query set's JSON (:mod:`lnproofs.kernel.querysets`): ``kind`` and the fields ``FIELDS`` in
    order, an ``OPTIONAL`` field left out when None; ``None`` is the free query set."""
    if query_set is None:
        return {"kind": "free"}
    return {
        "kind": query_set.kind,
        **{
            key: _field(getattr(query_set, key))
            for key in query_set.FIELDS
            if getattr(query_set, key) is not None or key not in query_set.OPTIONAL
        },
    }


def _field(value):
    """A query-set field: a rotation by :func:`rotation_to_json`, arrays and nested tuples as lists."""
    if hasattr(value, "cos"):
        return rotation_to_json(value)
    if hasattr(value, "tolist"):
        return value.tolist()
    return [_field(v) for v in value] if isinstance(value, tuple) else value


def rotation_to_json(rotation) -> dict:
    """A :class:`~lnproofs.kernel.Rotation` as JSON."""
    data = {
        "cos": list(rotation.cos),
        "sin": list(rotation.sin),
        "style": rotation.style,
        "entries": "floats of the model's own cos/sin table, applied exactly to the query",
    }
    if rotation.position is not None:
        data["position"] = int(rotation.position)
    return data


def layernorm_keys_to_json(spec) -> dict:
    """A :class:`~lnproofs.kernel.LayerNormKeys` as a certificate's ``keys_from``."""
    vec = lambda v: None if v is None else [float(x) for x in v]  # noqa: E731
    return {"kind": "layernorm-inputs", "gain": vec(spec.gain), "bias": vec(spec.bias), "eps": float(spec.eps)}
