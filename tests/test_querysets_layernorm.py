"""LayerNorm-realisable queries: known answers, sampling agreement, exact checks, mutations."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from lnproofs.certificates.check import check_certificate
from lnproofs.certificates.writers import query_set_to_json
from lnproofs.kernel import CertificateFormatError, FileFormatError, ShapeError
from lnproofs.propose.certification import certify
from lnproofs.propose.querysets.layernorm import LayerNormQuerySet, load_layernorm


def _disk_layer(centre, radius):
    """n = 3: q = W_q u + centre sweeps the disk of the given radius around centre."""
    basis = np.array([[1.0, -1.0, 0.0], [1.0, 1.0, -2.0]])
    basis /= np.linalg.norm(basis, axis=1, keepdims=True)  # orthonormal rows in 1-perp
    scale = radius / math.sqrt(3)  # ||u|| <= sqrt(3)
    return LayerNormQuerySet(np.ones(3), np.zeros(3), scale * basis, np.asarray(centre, float))


def _winning_arcs(angles):
    """Each key on the unit circle wins for query directions strictly between its bisectors."""
    order = np.argsort(angles)
    arcs = {}
    for pos, j in enumerate(order):
        prev = angles[order[pos - 1]] - (2 * math.pi if pos == 0 else 0)
        nxt = angles[order[(pos + 1) % len(order)]] + (2 * math.pi if pos == len(order) - 1 else 0)
        arcs[int(j)] = ((prev + angles[j]) / 2, (angles[j] + nxt) / 2)
    return arcs


def test_small_realisable_set_lets_only_a_few_keys_win():
    rng = np.random.default_rng(0)
    angles = rng.uniform(0, 2 * math.pi, 12)
    keys = np.c_[np.cos(angles), np.sin(angles)]
    centre = np.array([2.0, 0.5])
    radius = 0.3
    qs = _disk_layer(centre, radius)
    cert = certify(keys, qs)
    # independently: the disk sees directions phi0 +- asin(radius / |centre|)
    phi0 = math.atan2(centre[1], centre[0])
    half = math.asin(radius / np.linalg.norm(centre))
    expected = set()
    for j, (lo, hi) in _winning_arcs(angles).items():
        for shift in (-2 * math.pi, 0.0, 2 * math.pi):
            if lo + shift < phi0 + half and phi0 - half < hi + shift:
                expected.add(j)
    assert 1 <= len(expected) <= 4
    assert set(cert.indices("selectable")) == expected
    assert set(cert.indices("not-realisable")) == set(range(12)) - expected
    assert all(r.verified == "exact" for r in cert)
    assert check_certificate(cert.to_json(), keys).ok


def test_agrees_with_sampling_in_higher_dimension():
    rng = np.random.default_rng(5)
    n, d, N = 6, 3, 15
    qs = LayerNormQuerySet(
        rng.uniform(0.5, 1.5, n), rng.normal(size=n) * 0.3, rng.normal(size=(d, n)), rng.normal(size=d) * 0.3
    )
    keys = rng.normal(size=(N, d))
    cert = certify(keys, qs)
    assert cert.summary["undecided"] == 0
    u = rng.normal(size=(20000, n))
    u -= u.mean(axis=1, keepdims=True)
    u *= math.sqrt(n) / np.linalg.norm(u, axis=1, keepdims=True)
    arrays = qs.arrays()
    q = (arrays["gamma"] * u + arrays["beta"]) @ arrays["W_q"].T + arrays["b_q"]
    winners = set(np.argmax(q @ keys.T, axis=1).tolist())
    assert winners <= set(cert.indices("selectable"))
    assert not winners & set(cert.indices("not-realisable"))
    assert cert.summary["not-realisable"] > 0 and cert.summary["selectable"] > 0


def test_selectable_u_is_in_the_set_exactly():
    rng = np.random.default_rng(1)
    qs = _disk_layer([1.0, 0.0], 2.0)  # the disk contains the origin: every vertex wins
    angles = rng.uniform(0, 2 * math.pi, 8)
    keys = np.c_[np.cos(angles), np.sin(angles)]
    cert = certify(keys, qs)
    assert cert.summary["selectable"] == 8
    for r in cert:
        u = [Fraction(x) for x in r.extras["u"]]
        assert sum(u) == 0 and sum(x * x for x in u) <= 3


def _mutate(cert_json, index, **changes):
    data = {**cert_json, "results": [dict(r) for r in cert_json["results"]]}
    data["results"][index].update(changes)
    return data


def test_mutated_certificates_are_rejected():
    rng = np.random.default_rng(0)
    angles = rng.uniform(0, 2 * math.pi, 12)
    keys = np.c_[np.cos(angles), np.sin(angles)]
    cert = certify(keys, _disk_layer([2.0, 0.5], 0.3)).to_json()
    sel = next(r for r in cert["results"] if r["status"] == "selectable")
    nr = next(r for r in cert["results"] if r["status"] == "not-realisable")
    u = [Fraction(x) for x in sel["u"]]
    # off the hyperplane
    bad_u = [str(u[0] + Fraction(1, 2**40))] + [f"{x.numerator}/{x.denominator}" for x in u[1:]]
    assert not check_certificate(_mutate(cert, sel["index"], u=bad_u), keys).ok
    # outside the ball (scaled up, still on the hyperplane)
    big = [f"{(4 * x).numerator}/{(4 * x).denominator}" for x in u]
    assert not check_certificate(_mutate(cert, sel["index"], u=big), keys).ok
    # a not-realisable key claimed selectable with another key's u
    claim = _mutate(cert, nr["index"], status="selectable", u=sel["u"], dual=None)
    assert not check_certificate(claim, keys).ok
    # a selectable key claimed not-realisable with another key's dual
    claim = _mutate(cert, sel["index"], status="not-realisable", dual=nr["dual"], u=None)
    assert not check_certificate(claim, keys).ok
    # dual weights that do not sum to 1
    dual = dict(nr["dual"])
    dual["weights"] = ["1/2"] * len(dual["weights"])
    if len(dual["weights"]) == 2:
        dual["weights"] = ["1/3", "1/3"]
    assert not check_certificate(_mutate(cert, nr["index"], dual=dual), keys).ok


def test_eps_closure_and_parameter_files(tmp_path):
    rng = np.random.default_rng(2)
    path = tmp_path / "p.npz"
    np.savez(path, gamma=np.ones(4), beta=np.zeros(4), W_q=rng.normal(size=(3, 4)), b_q=np.zeros(3), eps=1e-5)
    qs = load_layernorm(path)
    assert qs.eps == 1e-5 and qs.width == 4 and qs.dim == 3
    assert LayerNormQuerySet.from_json(query_set_to_json(qs)) == qs
    np.savez(tmp_path / "bad.npz", gamma=np.ones(4), beta=np.zeros(4), W_q=np.ones((3, 4)))
    with pytest.raises(FileFormatError, match="b_q"):
        load_layernorm(tmp_path / "bad.npz")
    with pytest.raises(ShapeError, match="W_q"):
        LayerNormQuerySet(np.ones(4), np.zeros(4), np.ones((3, 5)), np.zeros(3))
    with pytest.raises(ShapeError, match="dimension"):
        certify(np.ones((3, 2)), qs)
    with pytest.raises(CertificateFormatError):
        LayerNormQuerySet.from_json({"kind": "layernorm", "gamma": [1.0]})


def test_long_run_written_in_chunks_matches_one_pass(tmp_path):
    """Over 2000 keys with --out, results are certified and written chunk by chunk; the
    chunked run must give the same statuses as one pass, and pass the exact checker."""
    from lnproofs.certificates.check import check_certificate
    from lnproofs.kernel import LayerNormQuerySet

    rng = np.random.default_rng(5)
    n, d = 6, 3
    keys = rng.normal(size=(2100, d))
    qs = LayerNormQuerySet(
        gamma=rng.normal(size=n), beta=rng.normal(size=n), W_q=rng.normal(size=(d, n)), b_q=rng.normal(size=d)
    )
    chunked = certify(keys, qs, out=tmp_path / "cert.json")
    whole = certify(keys, qs)
    assert [r.status for r in chunked.results] == [r.status for r in whole.results]
    assert [r.index for r in chunked.results] == list(range(len(keys)))
    assert chunked.summary["selectable"] > 0 and chunked.summary["not-realisable"] > 0
    assert check_certificate(chunked, keys).ok
