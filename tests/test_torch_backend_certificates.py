"""Numeric re-check of certificates: real certificates agree, mutated ones are reported, key by key."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

pytest.importorskip("torch")

from lnproofs.kernel import CertificateFormatError, ShapeError  # noqa: E402
from torch_backend.certificates import recheck_certificate  # noqa: E402


def _square_keys():
    # four vertices of a square, its centre (strictly inside), a point on an edge (tie-only), a duplicate vertex
    return np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0], [0.0, 0.0], [0.5, 0.5], [1.0, 0.0]])


def _square_certificate():
    results = [
        {
            "index": 1,
            "status": "selectable",
            "witness": [0.0, 1.0],
            "combination": None,
            "verified": "exact",
            "margin": 0.5,
            "reason": None,
        },
        {"index": 2, "status": "selectable", "witness": [-1.0, 0.0], "margin": 1.0},
        {"index": 3, "status": "selectable", "witness": [0.0, -1.0], "margin": 1.0},
        {
            "index": 4,
            "status": "unselectable",
            "witness": None,
            "combination": {"indices": [0, 1, 2, 3], "weights": ["1/4", "1/4", "1/4", "1/4"]},
        },
        {
            "index": 5,
            "status": "tie-only",
            "witness": [1.0, 1.0],
            "combination": {"indices": [0, 1], "weights": ["1/2", "1/2"]},
        },
        {"index": 0, "status": "tie-only", "witness": [1.0, 0.0], "combination": {"indices": [6], "weights": ["1"]}},
        {"index": 6, "status": "tie-only", "witness": [1.0, 0.0], "combination": {"indices": [0], "weights": ["1"]}},
    ]
    return {
        "schema": "lnproofs.selectability/1",
        "n_keys": 7,
        "dim": 2,
        "query_set": {"kind": "free"},
        "summary": {},
        "results": results,
    }


def test_a_correct_certificate_agrees():
    report = recheck_certificate(_square_keys(), _square_certificate(), device="cpu", samples=512)
    assert report["ok"], report["messages"]
    assert report["device"] == "cpu" and report["checked"]["witnesses"] == 6
    assert report["checked"]["combinations"] == 4 and report["checked"]["sampled_queries"] >= 512
    assert report["checked"]["perturbed_witnesses"] > 0


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_an_interior_key_certified_selectable_is_reported(dtype):
    cert = _square_certificate()
    cert["results"][3] = {"index": 4, "status": "selectable", "witness": [1.0, 1.0]}
    report = recheck_certificate(_square_keys(), cert, device="cpu", dtype=dtype, samples=256)
    assert not report["ok"]
    assert any(m.startswith("key 4 (selectable)") for m in report["messages"])


def test_a_vertex_certified_unselectable_is_caught_by_sampled_queries():
    keys = _square_keys()[:5]
    cert = {
        "schema": "lnproofs.selectability/1",
        "n_keys": 5,
        "dim": 2,
        "query_set": {"kind": "free"},
        "results": [
            {"index": 2, "status": "unselectable", "combination": {"indices": [1, 3], "weights": ["1/2", "1/2"]}}
        ],
    }
    report = recheck_certificate(keys, cert, device="cpu", samples=256)
    assert not report["ok"]
    joined = " ".join(report["messages"])
    assert "key 2 (unselectable)" in joined and "residual" in joined and "strictly wins" in joined


def test_wrong_weights_are_reported_with_their_residual():
    cert = _square_certificate()
    cert["results"][3]["combination"]["weights"] = ["1/2", "1/4", "1/8", "1/8"]
    report = recheck_certificate(_square_keys(), cert, device="cpu", samples=64)
    assert not report["ok"] and any("key 4" in m and "residual" in m for m in report["messages"])
    cert["results"][3]["combination"]["weights"] = ["1/2", "1/2", "1/2", "-1/2"]
    report = recheck_certificate(_square_keys(), cert, device="cpu", samples=64)
    assert any("key 4" in m and "negative" in m for m in report["messages"])


def test_a_tie_that_is_a_strict_win_is_reported():
    cert = _square_certificate()
    cert["results"][4]["witness"] = [1.0, 1.2]  # key 5 = (1/2, 1/2) vs key 1 = (0, 1): no tie
    report = recheck_certificate(_square_keys(), cert, device="cpu", samples=64)
    assert any(m.startswith("key 5 (tie-only)") for m in report["messages"])


def _certify(cli, tmp_path, keys, *extra):
    np.save(tmp_path / "k.npy", keys)
    result = cli(["certify", tmp_path / "k.npy", "--json", *extra])  # the claims per key
    assert result.status == 0, result.err
    return result.json()


def _keys(seed=0):
    rng = np.random.default_rng(seed)
    keys = rng.normal(size=(30, 3))
    keys[20:] *= 0.2
    return keys


@pytest.mark.parametrize("kind", ["free", "subspace", "ball", "layernorm"])
def test_certificates_from_certify_agree_and_mutations_do_not(cli, tmp_path, kind):
    keys = _keys()
    rng = np.random.default_rng(5)
    extra = []
    if kind == "subspace":
        np.save(tmp_path / "W.npy", rng.normal(size=(2, 3)))
        extra = ["--query-subspace", tmp_path / "W.npy"]
    elif kind == "ball":
        extra = ["--query-ball", "2.5"]
    elif kind == "layernorm":
        n = 5
        np.savez(
            tmp_path / "p.npz",
            gamma=rng.normal(size=n),
            beta=rng.normal(size=n),
            W_q=rng.normal(size=(3, n)),
            b_q=rng.normal(size=3),
        )
        extra = ["--query-layernorm", tmp_path / "p.npz"]
    cert = _certify(cli, tmp_path, keys, *extra)
    report = recheck_certificate(keys, cert, device="cpu", samples=1024)
    assert report["ok"], report["messages"]
    assert report["query_set"] == kind
    # mutation: claim a selectable key never wins
    mutated = copy.deepcopy(cert)
    target = next(r for r in mutated["results"] if r["status"] == "selectable")
    target["status"] = "not-realisable" if kind == "layernorm" else "unselectable"
    target["combination"] = {"indices": [j for j in range(3) if j != target["index"]][:2], "weights": ["1/2", "1/2"]}
    if kind == "layernorm":
        target["dual"] = target["combination"]
    bad = recheck_certificate(keys, mutated, device="cpu", samples=1024)
    assert not bad["ok"]
    assert any(m.startswith(f"key {target['index']} ") for m in bad["messages"]), bad["messages"]


def test_numeric_flag_of_check_uses_the_recheck(cli, tmp_path):
    keys = _keys(1)
    (tmp_path / "c.json").write_text(json.dumps(_certify(cli, tmp_path, keys)))  # the claims per key
    assert cli(["certify", tmp_path / "k.npy", "--out", tmp_path / "v.json"]).status == 0  # and the manifest
    for cert in ("c.json", "v.json"):
        result = cli(["check", tmp_path / cert, tmp_path / "k.npy", "--numeric", "--device", "cpu"])
        assert result.status == 0, result.err
        assert "agrees" in result.out


def test_malformed_certificates_are_one_clear_error():
    keys = _square_keys()
    with pytest.raises(CertificateFormatError, match="schema"):
        recheck_certificate(keys, {"schema": "other"}, device="cpu")
    cert = _square_certificate()
    cert["results"][0]["status"] = "maybe"
    with pytest.raises(CertificateFormatError, match="maybe"):
        recheck_certificate(keys, cert, device="cpu")
    cert = _square_certificate()
    cert["query_set"] = {"kind": "sphere"}
    with pytest.raises(CertificateFormatError, match="sphere"):
        recheck_certificate(keys, cert, device="cpu")
    with pytest.raises(ShapeError, match="shape"):
        recheck_certificate(keys[:, :1], _square_certificate(), device="cpu")


def test_keys_proved_vertices_without_witnesses_are_rechecked_with_the_theorems_queries():
    """A free certificate of affinely independent keys holds no witnesses (theorem
    attention.simplex_vertices); the re-check builds the theorem's query of each key (its column of
    the pseudo-inverse of [K | 1]) and confirms that the key wins with it; without the theorem's
    condition (more keys than one plus the dimension) a missing witness is a disagreement."""
    from lnproofs.models.corpus_heads import simplex_certificate

    keys = np.random.default_rng(5).normal(size=(6, 5))
    cert = simplex_certificate(keys)
    got = recheck_certificate(keys, cert, samples=64)
    assert got["ok"] and got["checked"]["witnesses"] == 6 and got["min_witness_margin"] > 0
    more = np.vstack([keys, keys.mean(axis=0) + 0.1])
    results = cert["results"] + [dict(cert["results"][0], index=6)]
    got = recheck_certificate(more, dict(cert, n_keys=7, results=results), samples=64)
    assert not got["ok"] and any("carries no witness" in m for m in got["messages"])
