"""Causal prefixes in one pass: stops equal the per-prefix reference's, evidence is checked exactly."""

from __future__ import annotations

import copy
import json
from fractions import Fraction

import numpy as np
import pytest
from reference_causal import reference_stops

from lnproofs.kernel import CertificateFormatError, OptionError, ShapeError, check_causal
from lnproofs.propose.causal import causal_evidence, stops
from lnproofs.propose.querysets.layernorm import LayerNormQuerySet


def _half_inside(T, d, seed):
    """Half the keys Gaussian, half strictly inside the hull of a few of them, shuffled."""
    rng = np.random.default_rng(seed)
    outer = rng.standard_normal((T - T // 2, d))
    inner = np.array(
        [rng.dirichlet(np.ones(d + 2)) @ outer[rng.choice(len(outer), d + 2, replace=False)] for _ in range(T // 2)]
    )
    keys = np.vstack([outer, inner])
    return keys[rng.permutation(T)]


def _duplicates(seed):
    """Integer keys with repeated rows (a vertex repeated later, an interior point repeated) and ties."""
    rng = np.random.default_rng(seed)
    base = rng.integers(-3, 4, size=(14, 3)).astype(float)
    keys = np.vstack([base, base[[2, 0, 7]], [[0.0, 0.0, 0.0]], base[[5]]])
    return keys[rng.permutation(len(keys))]


def _flat(seed):
    """Keys in R^4 on a 2-dimensional affine plane (exactly: integer coefficients)."""
    rng = np.random.default_rng(seed)
    coef = rng.integers(-4, 5, size=(24, 2)).astype(float)
    return coef @ np.array([[1.0, 2.0, 0.0, -1.0], [0.0, 1.0, 3.0, 1.0]]) + np.array([1.0, 0.0, 2.0, 0.5])


def _layernorm(seed, d=3, n=6):
    rng = np.random.default_rng(seed)
    return LayerNormQuerySet(
        rng.uniform(0.5, 1.5, n), rng.normal(size=n) * 0.3, rng.normal(size=(d, n)), rng.normal(size=d) * 0.6
    )


CASES = {
    "gaussian": lambda s: np.random.default_rng(s).standard_normal((30, 3)),
    "half-inside": lambda s: _half_inside(36, 3, s),
    "duplicates": _duplicates,
    "flat": _flat,
}


def _assert_matches_reference(keys, query_set=None):
    record = causal_evidence(keys, query_set)
    reference = reference_stops(keys, query_set)
    assert not record["undecided"] and not reference["undecided_at"]
    assert stops(record) == reference["first_unselectable"]
    assert all(v.ok for v in check_causal(keys, record, query_set))
    return record


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("seed", [0, 1])
def test_free_stops_equal_the_per_prefix_reference(case, seed):
    keys = CASES[case](seed)
    record = _assert_matches_reference(keys)
    found = stops(record)
    assert any(s is None for s in found)
    if case != "gaussian":
        assert any(s is not None for s in found)


def test_duplicates_stop_where_the_twin_appears():
    keys = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    record = _assert_matches_reference(keys)
    assert stops(record)[1] == 3 and stops(record)[3] == 3


@pytest.mark.parametrize("seed", [0, 3])
def test_layernorm_stops_equal_the_per_prefix_reference(seed):
    keys = np.random.default_rng(seed + 10).standard_normal((20, 3))
    record = _assert_matches_reference(keys, _layernorm(seed))
    assert record["query_set"]["kind"] == "layernorm"
    assert any(s is not None for s in stops(record))


def test_rmsnorm_stops_equal_the_per_prefix_reference():
    from lnproofs.kernel import RMSNormQuerySet

    rng = np.random.default_rng(2)
    qs = RMSNormQuerySet(rng.uniform(0.5, 1.5, 5), rng.normal(size=(3, 5)), rng.normal(size=3) * 3.0)
    keys = rng.standard_normal((18, 3))
    record = _assert_matches_reference(keys, qs)
    assert record["query_set"]["kind"] == "rmsnorm"


@pytest.mark.parametrize("kind", ["ball", "subspace"])
def test_other_query_sets_use_their_own_search_and_match_the_reference(kind):
    from lnproofs.kernel import BallQuerySet, SubspaceQuerySet

    rng = np.random.default_rng(0)
    keys = rng.standard_normal((16, 3))
    qs = BallQuerySet(2.0) if kind == "ball" else SubspaceQuerySet(rng.normal(size=(2, 3)))
    _assert_matches_reference(keys, qs)


def test_realisable_stops_come_no_later_than_free_ones_and_a_free_record_bounds_them():
    keys = np.random.default_rng(7).standard_normal((25, 3))
    free_record = causal_evidence(keys)
    free, real = stops(free_record), stops(causal_evidence(keys, _layernorm(1)))
    bounded = causal_evidence(keys, _layernorm(1), free_record=free_record)
    assert stops(bounded) == real
    assert all(v.ok for v in check_causal(keys, bounded, _layernorm(1)))
    with pytest.raises(OptionError, match="free_record"):
        causal_evidence(keys[:-1], _layernorm(1), free_record=free_record)
    for f, r in zip(free, real):
        assert r is not None or f is None
        assert f is None or r <= f


def _entry(record, want):
    return next(e for e in record["keys"] if want(e))


def _refuted(keys, record, query_set=None):
    return [v for v in check_causal(keys, record, query_set) if not v.ok]


@pytest.fixture(scope="module")
def free_case():
    keys = _half_inside(36, 3, 4)
    return keys, causal_evidence(keys)


def _mutated(record, index, change):
    data = copy.deepcopy(record)
    change(next(e for e in data["keys"] if e["index"] == index))
    return data


def test_tampered_free_evidence_is_refuted(free_case):
    keys, record = free_case
    assert not _refuted(keys, record)
    late = _entry(record, lambda e: e["stop"] is not None and e["stop"] > e["index"] and e["win"])
    j, stop = late["index"], late["stop"]
    comb = late["cannot_win"]["combination"]

    def weight_after_stop(e):
        e["cannot_win"]["combination"]["indices"][0] = len(keys) - 1 if stop < len(keys) - 1 else j + 0

    def weight_on_itself(e):
        e["cannot_win"]["combination"]["indices"][0] = j

    def weights_off(e):
        w = [Fraction(x) for x in comb["weights"]]
        if len(w) == 1:
            spare = next(i for i in range(stop + 1) if i not in (j, comb["indices"][0]))
            e["cannot_win"]["combination"]["indices"].append(spare)
            w = [w[0], Fraction(0)]
        w[0], w[1] = w[0] - Fraction(1, 3) * w[0], w[1] + Fraction(1, 3) * w[0]
        e["cannot_win"]["combination"]["weights"] = [str(x) for x in w]

    def witness_reversed(e):
        e["win"]["witness"] = [-x for x in e["win"]["witness"]]

    def stop_later(e):
        e["stop"] = stop + 1

    def stop_before_index(e):
        e["stop"] = j - 1

    def stop_out_of_range(e):
        e["stop"] = len(keys)

    mutations = [weight_on_itself, weights_off, witness_reversed, stop_before_index, stop_out_of_range]
    if stop < len(keys) - 1:
        mutations += [weight_after_stop, stop_later]
    for change in mutations:
        bad = _refuted(keys, _mutated(record, j, change))
        assert [v.index for v in bad] == [j], change.__name__


def test_a_witness_losing_to_a_key_before_its_last_position_is_refuted(free_case):
    keys, record = free_case
    never = _entry(record, lambda e: e["stop"] is None)
    other = _entry(record, lambda e: e["stop"] is None and e["index"] != never["index"])
    data = _mutated(record, never["index"], lambda e: e.update(win=copy.deepcopy(other["win"])))
    bad = _refuted(keys, data)
    assert [v.index for v in bad] == [never["index"]] and "q.k_" in bad[0].message


def test_a_stop_claimed_too_early_is_refuted(free_case):
    keys, record = free_case
    late = _entry(record, lambda e: e["stop"] is not None and e["stop"] > e["index"] + 1)
    data = _mutated(record, late["index"], lambda e: e.update(stop=e["stop"] - 1))
    assert [v.index for v in _refuted(keys, data)] == [late["index"]]


def test_tampered_layernorm_evidence_is_refuted():
    keys = np.random.default_rng(10).standard_normal((20, 3))
    qs = _layernorm(0)
    record = causal_evidence(keys, qs)
    late = _entry(record, lambda e: e["stop"] is not None)
    j = late["index"]
    dual = late["cannot_win"]["dual"]
    data = _mutated(record, j, lambda e: e["cannot_win"]["dual"].update(weights=["1/3"] * len(dual["weights"])))
    assert [v.index for v in _refuted(keys, data, qs)] == [j]
    winner = _entry(record, lambda e: e["win"] is not None and e["index"] != j)
    data = _mutated(record, j, lambda e: e.update(stop=None, cannot_win=None, win=copy.deepcopy(winner["win"])))
    assert [v.index for v in _refuted(keys, data, qs)] == [j]


def test_record_round_trips_through_json_and_is_checked_again(free_case):
    keys, record = free_case
    again = json.loads(json.dumps(record))
    assert again == record
    assert all(v.ok for v in check_causal(keys, again))
    claims = [v.status for v in check_causal(keys, again)]
    assert claims == ["wins to the end" if s is None else f"stops at {s}" for s in stops(record)]


def test_a_query_set_reference_needs_the_set_to_be_checked():
    keys = np.random.default_rng(10).standard_normal((12, 3))
    qs = _layernorm(0)
    record = causal_evidence(keys, qs, query_set_ref={"layer": 0, "head": 1})
    assert record["query_set"] == {"layer": 0, "head": 1}
    assert all(v.ok for v in check_causal(keys, record, qs))
    with pytest.raises(CertificateFormatError, match="does not hold"):
        check_causal(keys, record)


def test_malformed_records_are_refused_in_one_line(free_case):
    keys, record = free_case
    with pytest.raises(ShapeError):
        check_causal(keys[:-1], record)
    for field, value in (("stop", "3"), ("win", [1.0]), ("index", -1)):
        data = copy.deepcopy(record)
        data["keys"][0][field] = value
        with pytest.raises(CertificateFormatError, match=field):
            check_causal(keys, data)
    data = copy.deepcopy(record)
    data["keys"][1] = copy.deepcopy(data["keys"][0])
    with pytest.raises(CertificateFormatError, match="once"):
        check_causal(keys, data)


def test_rotated_query_sets_are_refused():
    from lnproofs.kernel import RMSNormQuerySet, Rotation

    rng = np.random.default_rng(0)
    qs = RMSNormQuerySet(
        np.ones(4), rng.normal(size=(2, 4)), np.zeros(2), 0.0, Rotation([0.5, 0.5], [0.8, 0.8], "half", 3)
    )
    with pytest.raises(OptionError, match="position 3"):
        causal_evidence(rng.normal(size=(5, 2)), qs)


def test_record_size_grows_linearly_with_the_keys():
    sizes = {}
    for T in (40, 80):
        keys = _half_inside(T, 3, 0)
        record = causal_evidence(keys)
        sizes[T] = len(json.dumps(record))
        for e in record["keys"]:  # one witness, at most d + 1 weights
            if e["cannot_win"] is not None:
                assert len(e["cannot_win"]["combination"]["indices"]) <= 4
    assert sizes[80] < 2.5 * sizes[40]  # per-prefix certificates grow about 4x


def test_lnproofs_check_reads_a_causal_record(cli, tmp_path, free_case):
    keys, record = free_case
    np.save(tmp_path / "k.npy", keys)
    (tmp_path / "r.json").write_text(json.dumps(record))
    result = cli(["check", tmp_path / "r.json", tmp_path / "k.npy"])
    assert result.status == 0, result.err
    assert "every claim holds" in result.out and "undecided" in result.out
    result = cli(["check", tmp_path / "r.json", tmp_path / "k.npy", "--json"])
    assert result.status == 0 and len(result.json()["claims"]) == len(keys)
    j = next(e["index"] for e in record["keys"] if e["stop"] is not None)
    early = _mutated(record, j, lambda e: e.update(stop=e["stop"] - 1 if e["stop"] > e["index"] else len(keys)))
    (tmp_path / "bad.json").write_text(json.dumps(early))
    result = cli(["check", tmp_path / "bad.json", tmp_path / "k.npy"])
    assert result.status == 1 and f"key {j}" in result.out


def test_lnproofs_check_reads_a_layernorm_causal_record(cli, tmp_path):
    keys = np.random.default_rng(10).standard_normal((14, 3))
    record = causal_evidence(keys, _layernorm(0))
    np.save(tmp_path / "k.npy", keys)
    (tmp_path / "r.json").write_text(json.dumps(record))
    result = cli(["check", tmp_path / "r.json", tmp_path / "k.npy"])
    assert result.status == 0 and "layernorm" in result.out, result.err
    j = next(e["index"] for e in record["keys"] if e["stop"] is not None)
    data = _mutated(
        record,
        j,
        lambda e: e.update(stop=None, cannot_win=None, win=copy.deepcopy(_entry(record, lambda f: f["win"])["win"])),
    )
    (tmp_path / "bad.json").write_text(json.dumps(data))
    assert cli(["check", tmp_path / "bad.json", tmp_path / "k.npy"]).status == 1


def test_a_shared_win_is_written_only_for_keys_the_free_certificate_has_selectable():
    """A key that wins at every position names the free certificate's witness instead of a copy
    when that certificate has it selectable; a key the certificate left undecided gets the
    record's own win; either way the record read back passes the check."""
    from lnproofs.certificates.writers import result_to_json
    from lnproofs.models.text_causal import SAME_AS_FREE, free_record, with_free_wins
    from lnproofs.propose.certification import certify_results

    keys = np.random.default_rng(3).standard_normal((20, 3))
    results = [result_to_json(r) for r in certify_results(keys)]
    full = causal_evidence(keys, results=results)
    ends = [e["index"] for e in full["keys"] if e["stop"] is None]
    assert len(ends) >= 2 and all(results[j]["status"] == "selectable" for j in ends)
    left = dict(results[ends[0]], status="undecided", witness=None, reason="not decided")
    free = {"results": [left if r["index"] == ends[0] else r for r in results]}
    shared = free_record(keys, free)
    wins = {e["index"]: e["win"] for e in shared["keys"]}
    assert wins[ends[0]] not in (None, SAME_AS_FREE) and all(wins[j] == SAME_AS_FREE for j in ends[1:])
    assert [(e["index"], e["stop"]) for e in shared["keys"]] == [(e["index"], e["stop"]) for e in full["keys"]]
    assert all(v.ok for v in check_causal(keys, with_free_wins(json.loads(json.dumps(shared)), free)))
    back = {e["index"]: e["win"] for e in with_free_wins(shared, free)["keys"]}
    assert all(back[j] == e["win"] for j, e in ((e["index"], e) for e in full["keys"]) if j in ends[1:])


def test_keys_all_selectable_over_the_whole_sequence_need_no_second_check(monkeypatch):
    """The whole sequence's certificate was checked when it was made: a record whose keys all win
    there goes through the kernel's causal check only for the keys that stop."""
    import lnproofs.propose.causal as causal

    calls = []
    monkeypatch.setattr(causal, "check_causal", lambda *a: calls.append(a) or check_causal(*a))
    on_sphere = np.random.default_rng(4).standard_normal((10, 3))
    on_sphere /= np.linalg.norm(on_sphere, axis=1, keepdims=True)
    record = causal_evidence(on_sphere)
    assert stops(record) == [None] * 10 and not calls
    record = causal_evidence(_half_inside(16, 3, 0))
    assert any(s is not None for s in stops(record)) and len(calls) == 1
    assert {e["index"] for e in calls[0][1]["keys"]} == {e["index"] for e in record["keys"] if e["stop"] is not None}
