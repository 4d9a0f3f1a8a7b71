"""The LayerNorm layer report: real layers pass, wrong outputs fail, the eps figures are right."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from lnproofs.kernel import InputError  # noqa: E402
from torch_backend.layers import layer_report, min_spread  # noqa: E402


def _layer(n=16, seed=0):
    rng = np.random.default_rng(seed)
    gain = rng.uniform(0.5, 2.0, n) * rng.choice([-1, 1], n)
    return gain, rng.normal(size=n), rng


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_real_layer_outputs_satisfy_the_geometry(dtype):
    gain, bias, rng = _layer()
    x = rng.normal(size=(3000, 16)) * 3 + 1
    report = layer_report(gain, bias, 1e-5, x, device="cpu", dtype=dtype, chunk_rows=700)
    assert report["passed"]
    assert report["hyperplane_residual"] <= report["tolerance"] and report["ellipsoid_residual"] <= report["tolerance"]
    assert report["n_inputs"] == 3000 and report["width"] == 16


def test_counts_inside_and_distance_follow_the_formula():
    gain, bias, rng = _layer()
    eps = 1e-2
    x = rng.normal(size=(500, 16))
    x[:50] = 3.0 + 1e-3 * rng.normal(size=(50, 16))  # spread far below sqrt(eps): pulled well inside
    report = layer_report(gain, bias, eps, x, device="cpu", dtype="float64", per_input=True)
    assert report["strictly_inside"] == 500  # eps > 0: every output is strictly inside in float64
    sigma = x.std(axis=1)
    deficit = 1 - sigma / np.sqrt(sigma**2 + eps)
    assert np.allclose(report["deficits"], deficit, rtol=1e-9, atol=1e-15)
    z = torch.nn.functional.layer_norm(torch.tensor(x), (16,), torch.tensor(gain), torch.tensor(bias), eps).numpy()
    offset = np.linalg.norm(z - bias, axis=1)
    assert np.allclose(report["distances"], offset * (1 / (1 - deficit) - 1), rtol=1e-8)
    assert report["min_spread"]["inputs_below"] >= 50


@pytest.mark.parametrize("convention", ["torch", "std"])
def test_minimal_spread_gives_exactly_the_tolerated_pull(convention):
    tau, eps = 1e-3, 1e-5
    sigma = min_spread(eps, tau, convention)
    pull = 1 - sigma / math.sqrt(sigma**2 + eps) if convention == "torch" else 1 - sigma / (sigma + eps)
    assert math.isclose(pull, tau, rel_tol=1e-9)
    gain, bias, rng = _layer()
    report = layer_report(
        gain,
        bias,
        eps,
        rng.normal(size=(10, 16)),
        device="cpu",
        dtype="float64",
        convention=convention,
        spread_tolerance=tau,
    )
    assert math.isclose(report["min_spread"]["measured_deficit"], tau, rel_tol=1e-6)


def test_outputs_of_a_different_layer_fail():
    gain, bias, rng = _layer()
    x = rng.normal(size=(200, 16))
    z = torch.nn.functional.layer_norm(torch.tensor(x), (16,), torch.tensor(gain), torch.tensor(bias), 1e-5).numpy()
    assert layer_report(gain, bias, 1e-5, x, outputs=z, device="cpu", dtype="float64")["passed"]
    z[17] *= 1.001
    report = layer_report(gain, bias, 1e-5, x, outputs=z, device="cpu", dtype="float64")
    assert not report["passed"] and report["ellipsoid_residual"] > report["tolerance"]


def test_zero_gains_report_the_constant_coordinates():
    gain, bias, rng = _layer()
    gain[[2, 5]] = 0.0
    x = rng.normal(size=(100, 16))
    report = layer_report(gain, bias, 1e-5, x, device="cpu", dtype="float32")
    assert report["passed"] and report["zero_gains"] == 2 and report["zero_gain_deviation"] == 0.0
    assert report["hyperplane_residual"] is None


def test_bad_layer_inputs_are_one_clear_error():
    gain, bias, rng = _layer()
    with pytest.raises(InputError, match="width"):
        layer_report(gain, bias, 1e-5, rng.normal(size=(4, 15)), device="cpu")
    with pytest.raises(InputError, match="bias"):
        layer_report(gain, bias[:3], 1e-5, rng.normal(size=(4, 16)), device="cpu")
    with pytest.raises(InputError, match="eps"):
        layer_report(gain, bias, -1.0, rng.normal(size=(4, 16)), device="cpu")


def test_cli_layer_report(cli, tmp_path):
    gain, bias, rng = _layer()
    np.savez(tmp_path / "ln.npz", gamma=gain, beta=bias, eps=np.array(1e-5))
    np.save(tmp_path / "x.npy", rng.normal(size=(300, 16)))
    result = cli(["recheck", "--layer", tmp_path / "ln.npz", "--inputs", tmp_path / "x.npy", "--device", "cpu"])
    assert result.status == 0, result.err
    assert "PASS" in result.out and "strictly inside" in result.out
    data = cli(
        ["recheck", "--layer", tmp_path / "ln.npz", "--inputs", tmp_path / "x.npy", "--json", "--dtype", "float32"]
    ).json()
    assert data["eps"] == 1e-5 and data["dtype"] == "float32" and data["passed"]
