"""The numeric theorem checks: every theorem has one, they pass on real layers, and they fail on wrong ones."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

from lnproofs.kernel import OptionError  # noqa: E402
from torch_backend import sampling, tolerances  # noqa: E402
from torch_backend.theorems import CheckResult, check_names, run_checks  # noqa: E402

SMALL = {"width": 8, "samples": 64, "device": "cpu"}


def test_registered_names_are_exactly_the_theorems_lnproofs_proves():
    from lnproofs.derive.registry import theorem_names

    assert set(check_names()) == set(theorem_names())
    assert len(check_names()) == len(theorem_names())
    assert set(tolerances.TABLE) >= set(theorem_names())


@pytest.fixture(scope="module", params=["float64", "float32"])
def all_results(request):
    return request.param, run_checks(dtype=request.param, **SMALL)


def test_every_check_passes_on_torch_layers(all_results):
    dtype, results = all_results
    assert [r.name for r in results] == check_names()
    failed = {r.name: r.messages for r in results if not r.passed}
    assert not failed, failed


def test_results_report_samples_errors_tolerances_and_speed(all_results):
    dtype, results = all_results
    for r in results:
        assert isinstance(r, CheckResult)
        assert r.samples > 0 and r.seconds >= 0 and r.throughput >= 0
        assert r.device == "cpu" and r.dtype == dtype and r.width == SMALL["width"]
        assert 0 <= r.max_error <= r.tolerance
        widths = {f["width"] for f in r.families}
        assert r.tolerance in {tolerances.tolerance(r.name, getattr(torch, dtype), w) for w in widths}
        data = r.to_json()
        assert set(data) >= {"name", "samples", "max_error", "tolerance", "passed", "device", "seconds", "throughput"}


def test_adversarial_families_and_small_widths_are_covered(all_results):
    _, results = all_results
    by_name = {r.name: r for r in results}
    families = {f["family"] for f in by_name["decomposition.torch"].families}
    assert families == {"random", "near-constant", "magnitudes"}
    assert {f["width"] for f in by_name["decomposition.torch"].families} == {2, 3, 8}
    assert {f["width"] for f in by_name["ellipsoid.interlacing"].families} >= {2, 3}


def _unbiased_layer_norm(x, shape, weight=None, bias=None, eps=1e-5):
    y = x - x.mean(-1, keepdim=True)
    z = y / torch.sqrt(x.var(-1, keepdim=True, correction=1) + eps)
    return z * (1 if weight is None else weight) + (0 if bias is None else bias)


def _uncentred_layer_norm(x, shape, weight=None, bias=None, eps=1e-5):
    z = x / torch.sqrt(x.var(-1, keepdim=True, correction=0) + eps)
    return z * (1 if weight is None else weight) + (0 if bias is None else bias)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_layer_with_the_wrong_variance_is_caught(dtype):
    names = ["decomposition.torch", "sphere.radius", "ellipsoid.equation", "sphere.interior_torch"]
    results = run_checks(dtype=dtype, names=names, layer_norm=_unbiased_layer_norm, **SMALL)
    assert all(not r.passed for r in results), [(r.name, r.max_error, r.tolerance) for r in results]
    assert all(r.messages for r in results)


def test_a_layer_that_forgets_to_centre_is_caught():
    names = ["ellipsoid.hyperplane", "attention.uniform_query", "sphere.radius", "attention.ellipsoid_witness"]
    results = run_checks(names=names, layer_norm=_uncentred_layer_norm, **SMALL)
    assert [r.name for r in results if r.passed] == []


def test_the_std_convention_checks_catch_the_torch_formula():
    def torch_formula(x, shape, weight=None, bias=None, eps=1e-5):
        return F.layer_norm(x, shape, weight, bias, eps)

    results = run_checks(names=["decomposition.std", "sphere.interior_std"], layer_norm_std=torch_formula, **SMALL)
    assert all(not r.passed for r in results)


def test_an_rms_norm_with_a_hidden_eps_is_caught():
    def leaky(x, shape, weight=None, eps=None):
        return F.rms_norm(x, shape, weight, eps=1e-6)

    results = run_checks(names=["rmsnorm.sphere", "rmsnorm.ellipsoid"], rms_norm=leaky, **SMALL)
    assert all(not r.passed for r in results)


def test_a_layer_that_leaks_zero_gain_coordinates_is_caught():
    def leaky(x, shape, weight=None, bias=None, eps=1e-5):
        w = None if weight is None else torch.where(weight == 0, torch.full_like(weight, 1e-3), weight)
        return F.layer_norm(x, shape, w, bias, eps)

    (result,) = run_checks(names=["ellipsoid.zero_gains"], layer_norm=leaky, **SMALL)
    assert not result.passed


def test_a_wrong_radial_map_breaks_the_caveat_and_witness_checks():
    def no_eps(x, shape, weight=None, bias=None, eps=1e-5):  # ignores eps: near-constant keys land on the sphere
        return F.layer_norm(x, shape, weight, bias, 0.0)

    (eps_caveat,) = run_checks(names=["attention.eps_caveat"], layer_norm=no_eps, **SMALL)
    assert not eps_caveat.passed

    def sqrt_n_minus_1(x, shape, weight=None, bias=None, eps=1e-5):
        n = x.shape[-1]
        z = F.layer_norm(x, shape, None, None, eps) * math.sqrt((n - 1) / n)
        return z * (1 if weight is None else weight) + (0 if bias is None else bias)

    results = run_checks(
        names=["ellipsoid.principal_axes", "ellipsoid.equal_gains"], layer_norm=sqrt_n_minus_1, **SMALL
    )
    assert all(not r.passed for r in results)


def test_chunking_changes_nothing_but_memory():
    names = ["decomposition.torch", "ellipsoid.hyperplane"]
    whole = run_checks(names=names, seed=3, **SMALL)
    chunked = run_checks(names=names, seed=3, chunk_rows=5, **SMALL)
    for a, b in zip(whole, chunked):
        assert a.passed and b.passed
        assert a.samples == b.samples


def test_same_seed_same_numbers():
    a = run_checks(names=["sphere.interior_torch"], seed=7, **SMALL)[0]
    b = run_checks(names=["sphere.interior_torch"], seed=7, **SMALL)[0]
    assert a.max_error == b.max_error and a.samples == b.samples


def test_chunks_are_bounded_for_huge_batches():
    rows = sampling.default_chunk_rows(768, torch.float32)
    assert rows * 768 * 4 <= 1 << 27
    sizes = list(sampling.chunk_sizes(10_000_000, rows))
    assert sum(sizes) == 10_000_000 and max(sizes) == rows


def test_magnitudes_cover_1e30_in_float64_and_stay_finite_in_float32():
    assert sampling.magnitude_exponent_limit(torch.float64, 768) == 30
    limit32 = sampling.magnitude_exponent_limit(torch.float32, 768)
    assert 10 <= limit32 < 30
    x = torch.full((768,), 10.0**limit32, dtype=torch.float32)
    assert torch.isfinite((x * x).sum()) and (torch.tensor(10.0**-limit32, dtype=torch.float32) ** 2) > 0


def test_tolerances_come_from_the_unit_roundoff_and_the_width():
    assert tolerances.unit_roundoff(torch.float64) == 2.0**-53
    assert tolerances.unit_roundoff(torch.float32) == 2.0**-24
    c, p = tolerances.TABLE["decomposition.torch"]
    assert tolerances.tolerance("decomposition.torch", torch.float32, 64) == c * 2.0**-24 * 64**p


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"width": 3}, "width"),
        ({"samples": 2}, "samples"),
        ({"names": ["no.such.theorem"]}, "no.such.theorem"),
        ({"dtype": "float16"}, "float16"),
        ({"device": "tpu"}, "tpu"),
    ],
)
def test_bad_options_are_one_clear_error(kwargs, fragment):
    with pytest.raises(OptionError, match=fragment.replace(".", r"\.")):
        run_checks(**{**SMALL, **kwargs})


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message given when no GPU is present")
def test_cuda_without_a_gpu_is_one_clear_line(cli):
    result = cli(["recheck", "--device", "cuda", "--only", "projection.trace"])
    assert result.status == 2
    assert "no CUDA GPU" in result.err and "Traceback" not in result.err


def test_cli_runs_selected_checks_and_prints_json(cli):
    result = cli(
        [
            "recheck",
            "--only",
            "projection.trace",
            "attention.demo_threshold",
            "--samples",
            "32",
            "--width",
            "6",
            "--json",
            "--device",
            "cpu",
        ]
    )
    assert result.status == 0, result.err
    data = result.json()
    assert data["passed"] and [r["name"] for r in data["results"]] == ["projection.trace", "attention.demo_threshold"]


def test_cli_table_lists_every_theorem(cli):
    result = cli(["recheck", "--list"])
    assert result.status == 0 and result.out.split() == check_names()
    table = cli(["recheck", "--only", "projection.kernel", "--samples", "32", "--dtype", "float32"])
    expected_device = "cuda" if torch.cuda.is_available() else "cpu"  # --device auto
    assert table.status == 0 and "projection.kernel" in table.out and "pass" in table.out
    assert expected_device in table.out


def test_results_are_written_as_they_go_and_a_run_resumes(cli, tmp_path):
    out = tmp_path / "results.jsonl"
    first = cli(["recheck", "--only", "projection.trace", "--samples", "32", "--device", "cpu", "--out", out])
    assert first.status == 0 and len(out.read_text().splitlines()) == 1
    again = cli(
        [
            "recheck",
            "--only",
            "projection.trace",
            "projection.kernel",
            "--samples",
            "32",
            "--device",
            "cpu",
            "--out",
            out,
            "--resume",
            "--json",
        ]
    )
    assert again.status == 0, again.err
    assert [r["name"] for r in again.json()["results"]] == ["projection.trace", "projection.kernel"]
    assert len(out.read_text().splitlines()) == 2  # only the missing check ran
    (tmp_path / "bad.jsonl").write_text("not json\n")
    bad = cli(["recheck", "--out", tmp_path / "bad.jsonl", "--resume", "--device", "cpu"])
    assert bad.status == 2 and "not a recheck result" in bad.err


def test_demo_check_uses_the_demo_configuration():
    from lnproofs.derive import demo_config
    from torch_backend import checks_attention

    assert checks_attention.DEMO_ANGLES_DEG == demo_config.KEY_ANGLES_DEG
    assert checks_attention.DEMO_ADJUSTABLE == demo_config.ADJUSTABLE_KEY
    assert checks_attention.DEMO_WATCHED == demo_config.WATCHED_KEY
    for m in (1.0, 2.0, demo_config.threshold_float()):
        ours = checks_attention._demo_keys(m, torch.float64, torch.device("cpu"))
        assert torch.allclose(ours, torch.tensor(demo_config.demo_keys(m), dtype=torch.float64), atol=1e-15)
