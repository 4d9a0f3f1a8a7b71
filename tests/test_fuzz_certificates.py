"""Fuzzing ``lnproofs check``: certificates built from the schema (valid ones must hold) and
the same certificates with fields mutated (types, lengths, indices, rationals of extreme size and
sign, float literals at the edges, unicode digits, whitespace, nesting): every answer is exit
status 0, 1 or 2 with one line for bad input, never 3, within the watchdog's time.

Run longer with ``--hypothesis-profile=deep``."""

from __future__ import annotations

import hashlib
import itertools
import json
from fractions import Fraction

import numpy as np
from fuzzing import assert_clean_answer, fuzz_settings, mutated_json, mutated_numbers, run_cli, scratch, watchdog
from hypothesis import given
from hypothesis import strategies as st


def _signed_permutations(vector):
    out = []
    for perm in itertools.permutations(vector):
        for signs in itertools.product((1, -1), repeat=len(vector)):
            point = tuple(s * x for s, x in zip(signs, perm))
            if point not in out:
                out.append(point)
    return out


def _rational(value: Fraction):
    return float(value) if value.denominator == 1 and abs(value) < 2**53 else f"{value.numerator}/{value.denominator}"


@st.composite
def valid_certificates(draw):
    """``(certificate JSON, keys)``: points of one sphere (signed permutations of an integer vector,
    closed under negation) and the origin; a point is selectable with a positive multiple of itself
    as witness, the origin is in the relative interior (equal weights), or a key is left undecided."""
    dim = draw(st.integers(2, 3))
    vector = draw(st.lists(st.integers(1, 40), min_size=dim, max_size=dim, unique=True))
    points = _signed_permutations(vector)
    pairs = sorted({tuple(sorted((p, tuple(-x for x in p)))) for p in points})
    chosen = draw(st.lists(st.sampled_from(pairs), min_size=1, max_size=min(len(pairs), 6), unique=True))
    sphere = [p for pair in chosen for p in pair]
    keys = [list(p) for p in sphere] + [[0] * dim]
    order = draw(st.permutations(range(len(keys))))
    keys = [keys[i] for i in order]
    where = {i: n for n, i in enumerate(order)}
    scales = st.builds(Fraction, st.integers(1, 10**40), st.integers(1, 10**40))
    results = []
    for index, key in enumerate(keys):
        base = {"index": index, "witness": None, "combination": None, "margin": None, "reason": None}
        if draw(st.integers(0, 5)) == 0:
            results.append({**base, "status": "undecided", "verified": "none", "reason": "not tried"})
        elif any(key):
            scale = draw(scales)
            results.append(
                {**base, "status": "selectable", "verified": "exact", "witness": [_rational(scale * x) for x in key]}
            )
        else:
            support = [where[n] for n in range(len(sphere))]
            weights = [f"1/{len(support)}"] * len(support)
            results.append(
                {
                    **base,
                    "status": "unselectable",
                    "verified": "exact",
                    "combination": {"indices": support, "weights": weights},
                }
            )
    cert = {
        "schema": "lnproofs.selectability/1",
        "n_keys": len(keys),
        "dim": dim,
        "query_set": {"kind": "free"},
        "results": results,
    }
    return cert, np.array(keys, dtype=np.float64)


def _files(tmp_path, cert, keys, text=None, name_keys=False):
    np.save(tmp_path / "k.npy", keys)
    if name_keys and isinstance(cert, dict):
        cert = {
            **cert,
            "keys_file": {"path": "k.npy", "sha256": hashlib.sha256((tmp_path / "k.npy").read_bytes()).hexdigest()},
        }
    (tmp_path / "c.json").write_text(text if text is not None else json.dumps(cert), encoding="utf-8")
    return tmp_path / "c.json", tmp_path / "k.npy"


@fuzz_settings()
@given(valid_certificates(), st.booleans())
def test_valid_certificates_hold(case, name_keys):
    cert, keys = case
    with scratch() as tmp_path, watchdog():
        path, keys_path = _files(tmp_path, cert, keys, name_keys=name_keys)
        result = run_cli(["check", path] + ([] if name_keys else [keys_path]))
    assert result.status == 0, (result.out, result.err)


def _check_mutated(data, cert, keys):
    """``lnproofs check`` on a mutation of ``cert``: 0, 1 or 2 with one line, in time."""
    text = data.draw(mutated_json(cert))
    with scratch() as tmp_path, watchdog():
        path, keys_path = _files(tmp_path, cert, keys, text=text)
        result = run_cli(["check", path, keys_path])
    assert_clean_answer(result)


@fuzz_settings()
@given(st.data())
def test_mutated_certificates_never_crash(data):
    cert, keys = data.draw(valid_certificates())
    _check_mutated(data, cert, keys)


@fuzz_settings()
@given(st.data())
def test_mutated_query_sets_and_findings_never_crash(data):
    """The same with a ball query set, a rank finding and margins present, so that their fields
    are mutated too."""
    cert, keys = data.draw(valid_certificates())
    cert["query_set"] = {"kind": "ball", "radius": 1e6}
    cert["rank"] = {
        "exact_affine_dimension": cert["dim"],
        "numerical_affine_dimension": cert["dim"],
        "singular_values": [1.0] * cert["dim"],
        "threshold": 1e-9,
        "rule": "r",
    }
    cert["min_margin"] = 0.0
    for result in cert["results"]:
        if result["status"] == "selectable":
            result["margin"] = 1.0
    _check_mutated(data, cert, keys)


@fuzz_settings()
@given(st.data())
def test_numbers_at_the_edges_never_crash(data):
    """Witness entries, weights, indices and margins replaced by numbers of the right type and
    extreme size or sign, so that the exact arithmetic and the messages behind them run."""
    cert, keys = data.draw(valid_certificates())
    if data.draw(st.booleans()):
        cert["query_set"] = {"kind": "ball", "radius": data.draw(st.floats(1e-300, 1e300))}
    text = data.draw(mutated_numbers(cert))
    with scratch() as tmp_path, watchdog():
        path, keys_path = _files(tmp_path, cert, keys, text=text)
        result = run_cli(["check", path, keys_path])
    assert_clean_answer(result)
