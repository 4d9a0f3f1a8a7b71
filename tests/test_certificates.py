"""The split between the kernel and the certificates people hold: the kernel decides every claim
and never reads the informational floats; lnproofs.certificates shows, stores and re-measures."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from lnproofs import Certificate, certify, check_certificate
from lnproofs import kernel as schema
from lnproofs.certificates.writers import query_set_to_json
from lnproofs.kernel import (
    KINDS,
    BallQuerySet,
    BoxQuerySet,
    CertificateFormatError,
    FreeQueries,
    LayerNormQuerySet,
    RMSNormQuerySet,
    RotaryLayerNormQuerySet,
    Rotation,
    SubspaceQuerySet,
    check_claims,
    kind_of,
)

KEYS = np.array([[2.0, 0.0], [0.0, 2.0], [-2.0, 0.0], [0.0, -2.0], [0.5, 0.25], [3.0, 3.0]])


@pytest.fixture(scope="module")
def cert():
    return certify(KEYS, min_margin=0.5)


def _edited(cert, index, **fields):
    data = json.loads(cert.dumps())
    data["results"][index].update(fields)
    return data


def test_a_wrong_margin_passes_the_kernel_and_fails_the_check(cert):
    best = max(cert.indices("selectable"), key=lambda i: cert[i].margin)
    data = _edited(cert, best, margin=cert[best].margin * 1.5)
    assert all(v.ok for v in check_claims(data, KEYS))  # the kernel never reads margins
    report = check_certificate(data, KEYS)
    assert not report.ok and [v.index for v in report.failures] == [best]
    assert "margin" in report.failures[0].message


def test_a_wrong_claim_fails_in_the_kernel_and_in_the_check(cert):
    key = cert.indices("unselectable")[0]
    data = _edited(cert, key, status="selectable", witness=[1.0, 1.0], combination=None)
    kernel = [v for v in check_claims(data, KEYS) if not v.ok]
    assert [v.index for v in kernel] == [key]
    assert check_certificate(data, KEYS).failures == tuple(kernel)


def test_a_wrong_rank_finding_is_one_more_failed_verdict(cert):
    data = json.loads(cert.dumps())
    data["rank"] = {"exact_affine_dimension": 1, "numerical_affine_dimension": 1, "singular_values": [1.0, 0.5]}
    assert all(v.ok for v in check_claims(data, KEYS))
    failures = check_certificate(data, KEYS).failures
    assert [(v.index, v.status) for v in failures] == [(-1, "rank finding")]


def test_the_people_certificate_is_the_kernel_schema_plus_the_count_below_the_threshold(cert):
    assert isinstance(cert, Certificate) and isinstance(cert, schema.Certificate)
    data = cert.to_json()
    keys = list(data)
    assert keys[keys.index("min_margin") + 1] == "below_min_margin"
    assert data["below_min_margin"] == len(cert.below_min_margin)
    kernel = schema.Certificate.from_json(json.loads(cert.dumps()))  # what the kernel reads: no writer, no findings
    assert not hasattr(kernel, "to_json") and not hasattr(kernel, "min_margin")
    assert not hasattr(kernel.results[0], "to_json") and not hasattr(schema.Combination, "to_json")
    assert (kernel.n_keys, kernel.dim, kernel.results) == (cert.n_keys, cert.dim, cert.results)
    again = Certificate.from_json(cert.dumps())
    assert again == cert and again.dumps() == cert.dumps()


def test_the_check_accepts_the_kernel_schema_the_people_class_and_json(cert):
    for given in (cert, schema.Certificate.from_json(json.loads(cert.dumps())), cert.to_json(), cert.dumps()):
        assert check_certificate(given, KEYS).ok


def test_a_malformed_rank_finding_is_refused_when_read(cert):
    data = json.loads(cert.dumps())
    data["rank"] = {"exact_affine_dimension": -1, "numerical_affine_dimension": 1, "singular_values": []}
    with pytest.raises(CertificateFormatError, match="rank.exact_affine_dimension"):
        Certificate.from_json(data)
    data["rank"] = {"exact_affine_dimension": 2, "numerical_affine_dimension": 2, "singular_values": ["big"]}
    with pytest.raises(CertificateFormatError, match="rank.singular_values"):
        check_certificate(data, KEYS)  # the check reads JSON as strictly as load does


_W = [[1.0, 0.5, -0.25], [0.0, 2.0, 1.0]]
QUERY_SETS = {
    "free": FreeQueries(),
    "ball": BallQuerySet(2.5),
    "subspace": SubspaceQuerySet([[1.0, 0.0], [0.5, 0.5]], radius=3.0),
    "layernorm": LayerNormQuerySet([1.0, 2.0, 0.5], [0.0, 0.1, 0.0], _W, [0.5, -0.5], eps=1e-5),
    "rmsnorm": RMSNormQuerySet([1.0, 1.5, 2.0], _W, [0.0, 0.25], rotation=Rotation([0.6, 0.8], [0.8, 0.6], position=3)),
    "layernorm_rotary": RotaryLayerNormQuerySet([1.0, 1.5, 2.0], _W, [0.0, 0.25], beta=[0.1, 0.0, -0.1]),
    "box": BoxQuerySet(100.0, (0.5, -0.25, 0.0)),
}


def test_every_kind_has_a_query_set_here():
    assert sorted(QUERY_SETS) == sorted(KINDS)


@pytest.mark.parametrize("kind", sorted(QUERY_SETS))
def test_every_query_set_round_trips_through_json(kind):
    query_set = QUERY_SETS[kind]
    data = json.loads(json.dumps(query_set_to_json(query_set)))
    assert data["kind"] == kind
    again = kind_of(kind).from_json(data)
    assert query_set_to_json(again) == query_set_to_json(query_set)


@pytest.mark.parametrize("kind", sorted(k for k in QUERY_SETS if k != "free"))
def test_a_missing_required_field_is_named(kind):
    data = query_set_to_json(QUERY_SETS[kind])
    cls = type(QUERY_SETS[kind])
    missing = cls.REQUIRED[0]
    del data[missing]
    with pytest.raises(CertificateFormatError, match=f"has no '{missing}'"):
        cls.from_json(data)


def test_free_queries_refuse_a_field_they_do_not_use():
    with pytest.raises(CertificateFormatError, match="'radius' is not used by free query sets"):
        FreeQueries.from_json({"kind": "free", "radius": 1.0})


def test_a_bad_field_value_becomes_one_certificate_line():
    data = query_set_to_json(QUERY_SETS["layernorm"])
    data["eps"] = "small"
    with pytest.raises(CertificateFormatError, match="certificate field query_set: .*eps"):
        LayerNormQuerySet.from_json(data)


def test_a_witness_of_the_wrong_length_is_refuted_not_a_crash(cert):
    key = cert.indices("selectable")[0]
    data = _edited(cert, key, witness=[1.0], margin=0.5)
    report = check_certificate(data, KEYS)
    assert [v.index for v in report.failures] == [key]
    assert "needs a witness query with 2 entries" in report.failures[0].message


def test_rationals_of_any_length_are_read_back():
    huge = Fraction(10**5000 + 1, 10**5000)
    result = schema.KeyResult(0, "unselectable", combination=schema.Combination((1, 2), (huge, 1 - huge)))
    cert = Certificate(
        3, 1, {"kind": "free"}, (result, schema.KeyResult(1, "undecided"), schema.KeyResult(2, "undecided"))
    )
    again = Certificate.from_json(cert.dumps())
    assert again == cert and again[0].combination.weights[0] == huge


def test_a_report_counts_claims_and_keys_apart_when_they_differ():
    from lnproofs.certificates.check import CheckReport
    from lnproofs.kernel import Verdict

    per_key = CheckReport(True, (Verdict(0, "selectable", True), Verdict(1, "selectable", True)), 2, 3, "free")
    assert str(per_key).startswith("every claim holds: 2 keys in R^3 (free queries)")
    positions = CheckReport(
        True, tuple(Verdict(t, "coverage", True) for t in range(5)), 6, 4, "coverage of every direction"
    )
    assert str(positions).startswith("every claim holds: 5 claims about 6 keys in R^4 (coverage of every direction)")
