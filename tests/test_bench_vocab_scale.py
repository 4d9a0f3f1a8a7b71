"""The vocabulary-scale benchmark on a tiny shape: its chunks go through the vocabulary road and
the kernel, and its output describes the machine and the estimate it makes."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_vocab_scale.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_vocab_scale", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_keys_are_float32_gaussians_of_the_given_spread(bench):
    K = bench.make_keys(4000, 16, 0.02, 0)
    assert K.dtype == np.float64 and K.shape == (4000, 16)
    assert np.array_equal(K.astype(np.float32).astype(np.float64), K)
    assert abs(K.std() - 0.02) < 0.001
    assert np.array_equal(K, bench.make_keys(4000, 16, 0.02, 0))


def test_a_tiny_shape_runs_end_to_end(bench, tmp_path):
    out = tmp_path / "scale.json"
    got = bench.main(
        [
            "--shapes",
            "600x3",
            "--chunks",
            "2",
            "--chunk-size",
            "250",
            "--sets",
            "free,box",
            "--box",
            "0.01",
            "--out",
            str(out),
            "--target-cores",
            "8",
        ]
    )
    assert json.loads(out.read_text()) == got
    assert got["machine"]["cores"] >= 1 and got["machine"]["blas"] and got["workers"] == 1
    free, box = got["rows"]
    for row in (free, box):
        assert row["all_ok"] and row["chunks_run"] == 2
        assert [c["first"] for c in row["per_chunk"]] == [0, 250]
        assert [sum(c["counts"].values()) for c in row["per_chunk"]] == [250, 250]
        assert all(c["undecided_outside"] == 350 for c in row["per_chunk"])
        est = row["estimate"]
        assert est["chunks_in_vocabulary"] == 3 and est["target_cores"] == 8 and est["keys_scale"] == 1.0
        # Python's round of a float, as the benchmark rounds (numpy's round of 0.95 gives 1.0, Python's 0.9)
        per_cpu = float(np.mean([c["make_cpu_s"] + c["check_cpu_s"] for c in row["per_chunk"]]))
        assert est["per_chunk_cpu_s"] == round(per_cpu, 1)
    # in the plane, few of 600 Gaussian points are hull vertices: the residue is decided by the engine
    assert "unselectable" in free["per_chunk"][0]["counts"]
    # without a bias a witness can be scaled into any box: the box has the free answers, named its way
    assert box["set"] == "box" and box["box_bound"] == 0.01
    for f, b in zip(free["per_chunk"], box["per_chunk"]):
        assert b["counts"].get("selectable") == f["counts"].get("selectable")
        assert b["counts"].get("not-realisable", 0) == f["counts"].get("unselectable", 0) + f["counts"].get(
            "tie-only", 0
        )


def test_fewer_keys_scale_the_estimate_back(bench, tmp_path):
    got = bench.main(["--shapes", "1000x4", "--keys", "500", "--chunk-size", "200", "--out", str(tmp_path / "s.json")])
    row = got["rows"][0]
    assert row["keys_measured"] == 500 and row["vocabulary"] == 1000
    assert row["estimate"]["keys_scale"] == 2.0 and row["estimate"]["chunks_in_vocabulary"] == 5
    assert sum(row["per_chunk"][0]["counts"].values()) == 200


def test_an_unknown_shape_is_one_line(bench, tmp_path):
    with pytest.raises(SystemExit, match="shape 'llama' is not known"):
        bench.main(["--shapes", "llama", "--out", str(tmp_path / "s.json")])


def test_the_estimate_divides_core_seconds_among_the_workers_memory_allows(bench):
    import argparse

    args = argparse.Namespace(target_cores=16, target_memory_gb=128.0, efficiency=0.7)
    chunks = [
        {"make_s": 200.0, "check_s": 100.0, "make_cpu_s": 100.0, "check_cpu_s": 50.0, "peak_rss_gb": 5.0},
        {"make_s": 220.0, "check_s": 80.0, "make_cpu_s": 110.0, "check_cpu_s": 40.0, "peak_rss_gb": 4.0},
    ]
    est = bench.estimate(chunks, 151936, 151936, 10000, 2, args)
    assert est["chunks_in_vocabulary"] == 16 and est["per_chunk_s"] == 300.0 and est["per_chunk_cpu_s"] == 150.0
    assert est["here_hours"] == round(16 * 300 / 2 / 3600, 2)
    assert est["target_hours"] == round(16 * 150 / (16 * 0.7) / 3600, 2)
    assert est["target_workers"] == 16 and est["target_threads_per_worker"] == 1
    half = bench.estimate(chunks, 256000, 64000, 10000, 1, args)  # a quarter of the keys measured
    assert half["keys_scale"] == 4.0 and half["per_chunk_cpu_s"] == 600.0 and half["peak_gb_per_worker"] == 20.0
    assert half["target_workers"] == 5 and half["target_threads_per_worker"] == 3  # 80% of 128 GB at 20 GB each


def test_the_realisable_set_of_an_rmsnorm_is_the_free_chunk_and_a_proved_coverage_claim(bench, tmp_path):
    got = bench.main(
        ["--shapes", "300x3", "--chunk-size", "150", "--sets", "free,realisable", "--out", str(tmp_path / "s.json")]
    )
    free, realisable = got["rows"]
    assert realisable["set"] == "realisable" and realisable["all_ok"]
    assert realisable["per_chunk"][0]["counts"] == free["per_chunk"][0]["counts"]
    assert realisable["per_chunk"][0]["coverage_s"] >= 0 and free["per_chunk"][0]["coverage_s"] is None
    est = realisable["estimate"]
    assert est["per_chunk_make_cpu_s"] <= est["per_chunk_cpu_s"] and est["target_minutes_make"] >= 0
