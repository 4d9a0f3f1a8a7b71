"""Keys on a hyperplane up to rounding: the rank finding, margins and --min-margin."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lnproofs import certify, check_certificate
from lnproofs.certificates.certificate import Certificate


def _plane_vertices(keys: np.ndarray) -> set[int]:
    """Vertices of the keys' hull within the hyperplane 1.x = 0 (qhull, in plane coordinates)."""
    from scipy.spatial import ConvexHull

    d = keys.shape[1]
    basis = np.linalg.qr(np.eye(d) - 1.0 / d)[0][:, : d - 1]
    return {int(v) for v in ConvexHull(keys @ basis).vertices}


@pytest.fixture(scope="module")
def float_centred():
    x = np.random.default_rng(7).standard_normal((150, 6))
    keys = x - x.mean(axis=1, keepdims=True)
    assert np.any(keys.sum(axis=1) != 0)  # off the hyperplane by rounding
    return keys, certify(keys, min_margin=1e-9)


def test_float_centred_keys_get_the_rank_warning(float_centred):
    keys, cert = float_centred
    assert cert.rank["exact_affine_dimension"] == 6
    assert cert.rank["numerical_affine_dimension"] == 5
    assert cert.rank_warning and "up to rounding" in cert.rank_warning
    assert cert.describe().splitlines()[0] == cert.rank_warning
    data = json.loads(cert.dumps())
    assert data["rank"]["numerical_affine_dimension"] == 5
    assert check_certificate(cert, keys).ok


def test_min_margin_counts_apart_exactly_the_rounding_vertices(float_centred):
    keys, cert = float_centred
    selectable = set(cert.indices("selectable"))
    below = set(cert.below_min_margin)
    robust = selectable - below
    assert below  # some keys win only through rounding
    assert robust == _plane_vertices(keys)
    for r in cert.results:
        if r.status == "selectable":
            assert r.margin is not None
            assert (r.margin < 1e-12) == (r.index in below)  # rounding-size or key-size, nothing between
    data = json.loads(cert.dumps())
    assert data["min_margin"] == 1e-9 and data["below_min_margin"] == len(below)
    assert f"({len(below)} only by a margin below 1e-09)" in cert.describe()


def test_exactly_centred_keys_have_no_warning_and_the_plane_vertices():
    head = np.random.default_rng(8).integers(-50, 51, size=(120, 5)).astype(float)
    keys = np.hstack([head, -head.sum(axis=1, keepdims=True)])
    cert = certify(keys, min_margin=1e-9)
    assert cert.rank["numerical_affine_dimension"] == cert.rank["exact_affine_dimension"] == 5
    assert cert.rank_warning is None and "warning" not in cert.describe()
    assert set(cert.indices("selectable")) == _plane_vertices(keys)
    assert set(cert.indices("unselectable")) == set(range(len(keys))) - _plane_vertices(keys)
    assert cert.below_min_margin == ()


def test_a_key_whose_only_witness_has_a_tiny_margin():
    keys = np.array([[0.0, 0.0], [2.0, 0.0], [1.0, 1e-12], [1.0, -1.0]])
    cert = certify(keys, min_margin=1e-9)
    assert cert.statuses == ("selectable",) * 4
    assert cert.below_min_margin == (2,)
    assert 0 < cert[2].margin < 1e-11
    assert all(cert[i].margin > 1e-3 for i in (0, 1, 3))
    assert certify(keys).below_min_margin == ()  # no threshold, nothing counted apart


def test_tampered_rank_finding_is_refuted(float_centred):
    keys, cert = float_centred
    data = json.loads(cert.dumps())
    data["rank"]["numerical_affine_dimension"] = 6
    report = check_certificate(Certificate.from_json(data), keys)
    assert not report.ok and "numerical_affine_dimension" in str(report)


def test_cli_shows_the_warning_and_the_margin_count(cli, tmp_path, float_centred):
    keys, cert = float_centred
    path = tmp_path / "k.npy"
    np.save(path, keys)
    text = cli(["certify", path, "--min-margin", "1e-9"])
    assert text.status == 0
    assert text.out.startswith("warning: the keys span 6 dimensions exactly but only 5 numerically")
    assert "only by a margin below 1e-09" in text.out
    out = cli(["certify", path, "--min-margin", "1e-9", "--json"])
    data = out.json()
    assert data["below_min_margin"] == len(cert.below_min_margin)
    assert data["rank"]["exact_affine_dimension"] == 6


def test_tampered_margin_is_refuted(float_centred):
    keys, cert = float_centred
    best = max(cert.indices("selectable"), key=lambda i: cert[i].margin)
    data = json.loads(cert.dumps())
    data["results"][best]["margin"] *= 1.5
    report = check_certificate(Certificate.from_json(data), keys)
    assert not report.ok and f"key {best}: margin" in str(report)


def test_min_margin_count_equals_the_vertices_of_the_same_keys_centred_exactly():
    x = np.random.default_rng(9).standard_normal((150, 8))
    floaty = x - x.mean(axis=1, keepdims=True)
    grid = np.round(x * 2.0**20) / 2.0**20  # d = 8: centring these is exact
    exact = grid - grid.mean(axis=1, keepdims=True)
    assert np.all(exact.sum(axis=1) == 0) and np.any(floaty.sum(axis=1) != 0)
    rounded, made_exact = certify(floaty, min_margin=1e-9), certify(exact, min_margin=1e-9)
    assert made_exact.rank_warning is None and rounded.rank_warning is not None
    robust = set(rounded.indices("selectable")) - set(rounded.below_min_margin)
    assert robust == set(made_exact.indices("selectable"))
    assert made_exact.below_min_margin == ()


def test_json_on_stdout_alone_in_a_fresh_process(tmp_path):
    import subprocess
    import sys

    keys = np.random.default_rng(10).standard_normal((40, 4))
    path = tmp_path / "k.npy"
    np.save(path, keys - keys.mean(axis=1, keepdims=True))
    done = subprocess.run(
        [sys.executable, "-m", "lnproofs.cli", "certify", str(path), "--min-margin", "1e-9", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)  # solver banners went to stderr
    assert data["rank"]["exact_affine_dimension"] == 4 and "below_min_margin" in data
