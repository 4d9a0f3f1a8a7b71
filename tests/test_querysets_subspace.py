"""Subspace query sets q = W^T z: known answers, exact arithmetic, rejected mutations."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from lnproofs.certificates.check import check_certificate
from lnproofs.certificates.writers import query_set_to_json
from lnproofs.kernel import ShapeError, SubspaceQuerySet
from lnproofs.propose.certification import certify


def _layernorm_outputs(rng, count, width):
    x = rng.normal(size=(count, width))
    x -= x.mean(axis=1, keepdims=True)
    return x / np.linalg.norm(x, axis=1, keepdims=True) * np.sqrt(width)


def test_narrow_head_makes_many_layernorm_keys_unselectable():
    from scipy.spatial import ConvexHull

    rng = np.random.default_rng(2)
    keys = _layernorm_outputs(rng, 30, 8)  # all on a sphere: every key is selectable freely
    W = rng.normal(size=(3, 8))  # a head of width 3
    free = certify(keys)
    assert free.summary["selectable"] == 30
    cert = certify(keys, SubspaceQuerySet(W))
    hull = ConvexHull(keys @ W.T)
    expected_unselectable = set(range(30)) - set(hull.vertices.tolist())
    assert set(cert.indices("unselectable")) | set(cert.indices("tie-only")) == expected_unselectable
    assert set(cert.indices("selectable")) == set(hull.vertices.tolist())
    fraction = len(expected_unselectable) / 30
    assert 0.3 <= fraction <= 0.55  # about 40 % of the keys lose
    assert check_certificate(cert.to_json(), keys).ok


def test_witness_is_a_query_in_the_row_space():
    rng = np.random.default_rng(3)
    keys = rng.normal(size=(12, 5))
    W = rng.normal(size=(2, 5))
    cert = certify(keys, SubspaceQuerySet(W))
    for r in cert:
        if r.status == "selectable":
            z = [Fraction(x) for x in r.extras["z"]]
            q = [sum(z[a] * Fraction(W[a, c]) for a in range(2)) for c in range(5)]
            assert list(r.witness) == q
            scores = [sum(Fraction(k) * x for k, x in zip(row, q)) for row in keys]
            assert all(scores[r.index] > s for j, s in enumerate(scores) if j != r.index)


def test_exact_products_decide_where_the_float_product_rounds():
    # W k_0 = 1 + 2^-60 rounds to 1.0 = W k_1 in floats, so the float points tie;
    # exactly, k_0 wins alone and k_1 lies strictly between W k_2 = 0 and W k_0.
    keys = np.array([[1.0, 2.0**-60], [1.0, 0.0], [0.0, 0.0]])
    W = np.array([[1.0, 1.0]])
    assert (keys @ W.T)[0, 0] == (keys @ W.T)[1, 0]
    assert certify(keys @ W.T).statuses[:2] == ("tie-only", "tie-only")
    cert = certify(keys, SubspaceQuerySet(W))
    assert cert.statuses[0] == "selectable"
    assert cert.statuses[2] == "selectable"
    assert cert.statuses[1] in ("unselectable", "undecided")  # never a claim the exact points refute
    assert check_certificate(cert.to_json(), keys).ok


def test_affine_combination_is_exact_in_the_products():
    keys = np.array([[0.1, 0.7], [0.2, 0.45], [0.3, 0.2], [5.0, -3.0]])
    W = np.array([[1.0, 0.3]])
    cert = certify(keys, SubspaceQuerySet(W))
    r = cert[1]
    assert r.status == "unselectable"
    point = [sum(Fraction(W[0, c]) * Fraction(keys[j, c]) for c in range(2)) for j in range(4)]
    assert sum(w * point[j] for j, w in zip(r.combination.indices, r.combination.weights)) == point[1]
    assert check_certificate(cert.to_json(), keys).ok


def test_ball_radius_scales_witnesses_into_the_ball():
    rng = np.random.default_rng(4)
    keys = rng.normal(size=(10, 4))
    W = rng.normal(size=(2, 4)) * 100
    cert = certify(keys, SubspaceQuerySet(W, radius=0.5))
    for r in cert:
        if r.witness is not None:
            assert sum(Fraction(x) ** 2 for x in r.witness) <= Fraction(1, 4)
    assert check_certificate(cert.to_json(), keys).ok


def _mutate(cert_json, index, **changes):
    data = {**cert_json, "results": [dict(r) for r in cert_json["results"]]}
    data["results"][index].update(changes)
    return data


def test_mutated_certificates_are_rejected():
    rng = np.random.default_rng(2)
    keys = _layernorm_outputs(rng, 20, 8)
    W = rng.normal(size=(2, 8))
    cert = certify(keys, SubspaceQuerySet(W)).to_json()
    assert check_certificate(cert, keys).ok
    sel = next(r for r in cert["results"] if r["status"] == "selectable")
    uns = next(r for r in cert["results"] if r["status"] == "unselectable")
    # a selectable key's z replaced by the negative
    bad = _mutate(cert, sel["index"], z=[-x for x in sel["z"]])
    assert not check_certificate(bad, keys).ok
    # the witness no longer W^T z
    bad = _mutate(cert, sel["index"], witness=[1.0] * 8)
    assert not check_certificate(bad, keys).ok
    # an unselectable key claimed selectable with another key's z
    bad = _mutate(cert, uns["index"], status="selectable", z=sel["z"], witness=None, combination=None)
    assert not check_certificate(bad, keys).ok
    # a selectable key claimed unselectable with the weights of another key
    bad = _mutate(cert, sel["index"], status="unselectable", combination=uns["combination"], witness=None)
    assert not check_certificate(bad, keys).ok
    # weights perturbed by 2^-60
    comb = dict(uns["combination"])
    w = [Fraction(x) for x in comb["weights"]]
    w[0] += Fraction(1, 2**60)
    w[1] -= Fraction(1, 2**60)
    comb["weights"] = [f"{x.numerator}/{x.denominator}" for x in w]
    bad = _mutate(cert, uns["index"], combination=comb)
    assert not check_certificate(bad, keys).ok


def test_query_set_json_round_trip_and_width_check():
    W = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 0.0]])
    qs = SubspaceQuerySet(W, radius=2.0)
    assert SubspaceQuerySet.from_json(query_set_to_json(qs)) == qs
    with pytest.raises(ShapeError, match="dimension 4"):
        qs.validate(4)
    with pytest.raises(ShapeError):
        certify(np.ones((3, 4)) * np.arange(3)[:, None], qs)
