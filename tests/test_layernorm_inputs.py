"""Certifying LayerNorm outputs from the LayerNorm inputs (exact centring, rigorous scaling)."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from lnproofs import InputError, certify_layernorm_outputs, check_certificate, layernorm
from lnproofs.certificates.certificate import Certificate
from lnproofs.certificates.writers import combination_to_json
from lnproofs.kernel import Combination


def _plane_vertices(y: np.ndarray) -> set[int]:
    from scipy.spatial import ConvexHull

    d = y.shape[1]
    basis = np.linalg.qr(np.eye(d) - 1.0 / d)[0][:, : d - 1]
    return {int(v) for v in ConvexHull(y @ basis).vertices}


def _inputs(n=200, d=5, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)) * rng.uniform(0.05, 3.0, (n, 1)) + rng.standard_normal((n, 1))


def _edit(cert, index, **fields):
    data = json.loads(cert.dumps())
    data["results"][index].update(fields)
    return Certificate.from_json(data)


def test_eps_zero_every_distinct_output_is_selectable():
    x = _inputs()
    x[3] = x[4]  # same input: same output, tie-only
    x[6] = 2.0 * x[7]  # exact positive multiple after centring: same output
    gain, bias = np.linspace(0.5, 2.0, 5), np.arange(5.0)
    cert = certify_layernorm_outputs(x, gain, bias, 0.0, min_margin=1e-9)
    ties = {3, 4, 6, 7}
    assert [r.index for r in cert.results if r.status == "tie-only"] == sorted(ties)
    assert all(r.status == "selectable" for r in cert.results if r.index not in ties)
    assert cert.keys_from["kind"] == "layernorm-inputs" and cert.keys_from["eps"] == 0.0
    assert check_certificate(cert, x).ok
    assert cert.rank is None and cert.below_min_margin == ()


def test_eps_positive_statuses_match_the_hull_and_the_checker_agrees():
    x = _inputs(seed=1)
    eps = 1.0  # large enough that short inputs fall inside
    cert = certify_layernorm_outputs(x, eps=eps)
    y = layernorm(x, eps=eps)
    vertices = _plane_vertices(y)
    assert cert.summary["undecided"] == 0
    assert set(cert.indices("selectable")) == vertices
    assert set(cert.indices("unselectable")) == set(range(len(x))) - vertices
    assert check_certificate(cert, x).ok
    r = cert.results[cert.indices("unselectable")[0]]
    assert len(r.combination.indices) == 5  # n keys whose simplex holds the key


def test_checker_refutes_tampered_layernorm_claims():
    x = _inputs(seed=2)
    cert = certify_layernorm_outputs(x, eps=1.0)
    inside = cert.indices("unselectable")[0]
    vertex = cert.indices("selectable")[0]
    bad_witness = _edit(cert, inside, status="selectable", witness=[1.0, 0.0, 0.0, 0.0, -1.0], combination=None)
    assert not check_certificate(bad_witness, x).ok
    others = [j for j in range(len(x)) if j != vertex][:5]
    bad_comb = _edit(
        cert,
        vertex,
        status="unselectable",
        witness=None,
        combination=combination_to_json(Combination(tuple(others), (Fraction(1, 5),) * 5)),
    )
    report = check_certificate(bad_comb, x)
    assert not report.ok and "interval" in str(report)
    best = max(cert.indices("selectable"), key=lambda i: cert[i].margin)
    bad_margin = _edit(cert, best, margin=cert[best].margin * 1.5)
    assert not check_certificate(bad_margin, x).ok
    other_eps = json.loads(cert.dumps())
    other_eps["keys_from"]["eps"] = 0.0  # the claims are about eps = 1
    assert not check_certificate(Certificate.from_json(other_eps), x).ok


def test_constant_input_needs_eps():
    x = _inputs(20, 4, seed=3)
    x[2] = 1.5
    with pytest.raises(InputError, match="row 2 is constant and eps is 0"):
        certify_layernorm_outputs(x, eps=0.0)
    cert = certify_layernorm_outputs(x, eps=0.5)  # with eps > 0 its output is the bias
    assert cert.summary["undecided"] == 0 and check_certificate(cert, x).ok


def test_cli_layernorm_inputs_and_check(cli, tmp_path):
    x = _inputs(60, 4, seed=4)
    path, out = tmp_path / "x.npy", tmp_path / "c.json"
    np.save(path, x)
    np.save(tmp_path / "g.npy", np.array([1.0, 2.0, 0.5, 1.0]))
    got = cli(
        [
            "certify",
            path,
            "--keys-from-layernorm-inputs",
            "--gain",
            tmp_path / "g.npy",
            "--bias",
            "0,1,0,1",
            "--eps",
            "0.5",
            "--min-margin",
            "1e-6",
            "--out",
            out,
        ]
    )
    assert got.status == 0, got.err
    assert "LayerNorm outputs of the inputs given" in got.out
    data = json.loads(out.read_text())
    assert data["keys_from"] == {
        "kind": "layernorm-inputs",
        "gain": [1.0, 2.0, 0.5, 1.0],
        "bias": [0.0, 1.0, 0.0, 1.0],
        "eps": 0.5,
    }
    checked = cli(["check", out, path])
    assert checked.status == 0 and "every claim holds" in checked.out


@pytest.mark.parametrize("eps", [0.0, 1e-5])
def test_python_api_one_text_of_keys(eps):
    x = _inputs(1024, 8, seed=5)
    cert = certify_layernorm_outputs(x, eps=eps, min_margin=1e-6)
    assert cert.n_keys == 1024 and cert.summary["undecided"] == 0
    assert check_certificate(cert, x).ok
