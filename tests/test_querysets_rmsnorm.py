"""The rmsnorm query set q = R (W_q (gain * u) + b_q), ||u|| <= sqrt(n): exact certificates,
their JSON round trip, rejection of wrong certificates, and agreement with sampling."""

import json
from fractions import Fraction

import numpy as np
import pytest

from lnproofs import certify, check_certificate
from lnproofs.certificates.certificate import Certificate
from lnproofs.certificates.writers import query_set_to_json
from lnproofs.kernel import CertificateFormatError, RMSNormQuerySet, Rotation, ShapeError
from lnproofs.models.rotary import rotate


def _instance(seed, *, n=10, d=4, N=12, spread=0.05, rotation=None):
    rng = np.random.default_rng(seed)
    gain = rng.uniform(0.5, 1.5, n)
    W = rng.normal(size=(d, n)) * spread
    b = rng.normal(size=d)
    keys = rng.normal(size=(N, d))
    return keys, RMSNormQuerySet(gain, W, b, 1e-6, rotation)


def _rotation(d=4, position=3, style="half"):
    angles = position * 10000.0 ** (-np.arange(d // 2) / (d // 2))
    full = np.concatenate([angles, angles]) if style == "half" else np.repeat(angles, 2)
    return Rotation(np.cos(full), np.sin(full), style, position)


@pytest.mark.parametrize("style", [None, "half", "interleaved"])
def test_certificates_check_exactly_and_round_trip(style):
    rotation = None if style is None else _rotation(style=style)
    keys, qs = _instance(1, rotation=rotation)
    cert = certify(keys, query_set=qs)
    statuses = {r.status for r in cert}
    assert statuses <= {"selectable", "not-realisable"} and statuses == {"selectable", "not-realisable"}
    assert check_certificate(cert, keys).ok
    again = Certificate.from_json(json.loads(json.dumps(cert.to_json())))
    assert again.query_set_json() == cert.query_set_json()
    assert check_certificate(again, keys).ok


@pytest.mark.parametrize("style", [None, "half"])
def test_statuses_agree_with_sampled_queries(style):
    """Keys that sampled queries from the set make win are never certified not-realisable,
    and every certified witness is a query of the set that makes its key win."""
    rotation = None if style is None else _rotation()
    keys, qs = _instance(2, rotation=rotation)
    cert = certify(keys, query_set=qs)
    rng = np.random.default_rng(7)
    n = qs.width
    u = rng.normal(size=(20000, n))
    u *= np.sqrt(n) * rng.uniform(0, 1, (20000, 1)) ** (1 / n) / np.linalg.norm(u, axis=1, keepdims=True)
    a = qs.arrays()
    q = (u * a["gain"]) @ a["W_q"].T + a["b_q"]
    if rotation is not None:
        q = rotate(q, np.array(rotation.cos), np.array(rotation.sin), rotation.style)
    winners = set(np.argmax(q @ keys.T, axis=1).tolist())
    for r in cert:
        if r.index in winners:
            assert r.status == "selectable", r.index
        if r.status == "selectable":
            w = np.array([float(x) for x in r.witness])
            scores = keys @ w
            assert np.argmax(scores) == r.index


def test_rotation_matrix_is_the_models_rotation():
    rng = np.random.default_rng(3)
    for style in ("half", "interleaved"):
        c, s = rng.normal(size=6), rng.normal(size=6)
        R = np.array([[float(x) for x in row] for row in Rotation(c, s, style).matrix(8).tolist()])
        x = rng.normal(size=8)
        np.testing.assert_allclose(R @ x, rotate(x, c, s, style), rtol=0, atol=1e-14)


def _tampered(keys, qs, edit):
    data = certify(keys, query_set=qs).to_json()
    edit(data)
    return check_certificate(Certificate.from_json(data), keys)


def test_wrong_certificates_are_rejected():
    keys, qs = _instance(1, rotation=_rotation())

    def outside_ball(data):
        r = next(r for r in data["results"] if r["status"] == "selectable")
        r["u"] = [str(10 * Fraction(x)) for x in r["u"]]

    def other_dual(data):
        r = next(r for r in data["results"] if r["status"] == "not-realisable")
        r["dual"] = {
            "indices": [
                next(
                    j for j in range(len(keys)) if j != r["index"] and data["results"][j]["status"] == "not-realisable"
                )
            ],
            "weights": ["1"],
        }

    def witness_changed(data):
        r = next(r for r in data["results"] if r["status"] == "selectable")
        r["witness"][0] = "0"

    def rotation_dropped(data):
        del data["query_set"]["rotation"]

    for edit in (outside_ball, other_dual, witness_changed):
        assert not _tampered(keys, qs, edit).ok, edit.__name__
    # without the rotation, the same statuses are not all justified
    report = _tampered(keys, qs, rotation_dropped)
    assert not report.ok


def test_interior_keys_get_the_hull_certificate():
    keys, qs = _instance(4)
    keys = np.vstack([keys, keys[:3].mean(axis=0)])
    cert = certify(keys, query_set=qs)
    assert cert[len(keys) - 1].status == "not-realisable"
    assert check_certificate(cert, keys).ok


def test_schema_errors_name_the_field():
    keys, qs = _instance(1)
    data = query_set_to_json(qs)
    with pytest.raises(CertificateFormatError, match="'gain'"):
        RMSNormQuerySet.from_json({k: v for k, v in data.items() if k != "gain"})
    with pytest.raises(CertificateFormatError, match="W_q"):
        RMSNormQuerySet.from_json({**data, "W_q": [[1.0, 2.0]]})
    with pytest.raises(ShapeError, match="even"):
        Rotation([1.0, 0.5, 0.2], [0.0, 0.1, 0.2])


def test_rotated_layernorm_set_agrees_with_the_layernorm_set_without_rotation():
    """With the identity as rotation (cos 1, sin 0) the layernorm_rotary set is the layernorm
    set: both exact answers must agree key by key."""
    from lnproofs.kernel import LayerNormQuerySet, RotaryLayerNormQuerySet

    rng = np.random.default_rng(5)
    n, d, N = 9, 4, 14
    gain, beta = rng.uniform(0.5, 1.5, n), rng.normal(size=n) * 0.5
    W, b = rng.normal(size=(d, n)) * 0.08, rng.normal(size=d) * 0.3
    keys = rng.normal(size=(N, d))
    rotated = RotaryLayerNormQuerySet(gain, W, b, 1e-5, Rotation(np.ones(4), np.zeros(4)), beta)
    plain = LayerNormQuerySet(gain, beta, W, b, 1e-5)
    a, c = certify(keys, query_set=rotated), certify(keys, query_set=plain)
    assert check_certificate(a, keys).ok and a.query_set_json()["kind"] == "layernorm_rotary"
    assert [r.status for r in a] == [r.status for r in c]
    assert {r.status for r in a} == {"selectable", "not-realisable"}


def test_rotated_layernorm_set_agrees_with_sampled_queries():
    from lnproofs.kernel import RotaryLayerNormQuerySet

    rng = np.random.default_rng(6)
    n, d, N = 8, 4, 12
    gain, beta = rng.uniform(0.5, 1.5, n), rng.normal(size=n) * 0.5
    W, b = rng.normal(size=(d, n)) * 0.1, rng.normal(size=d) * 0.3
    keys = rng.normal(size=(N, d))
    rotation = _rotation(position=5)
    qs = RotaryLayerNormQuerySet(gain, W, b, 1e-5, rotation, beta)
    cert = certify(keys, query_set=qs)
    assert check_certificate(cert, keys).ok
    u = rng.normal(size=(20000, n))
    u -= u.mean(axis=1, keepdims=True)
    u *= np.sqrt(n) * rng.uniform(0, 1, (20000, 1)) / np.linalg.norm(u, axis=1, keepdims=True)
    q = rotate((gain * u + beta) @ W.T + b, np.array(rotation.cos), np.array(rotation.sin))
    for j in set(np.argmax(q @ keys.T, axis=1).tolist()):
        assert cert[j].status == "selectable"
    # a u off the hyperplane is refused
    data = cert.to_json()
    r = next(r for r in data["results"] if r["status"] == "selectable")
    r["u"] = [str(Fraction(x) + 1) for x in r["u"]]
    assert not check_certificate(Certificate.from_json(data), keys).ok
