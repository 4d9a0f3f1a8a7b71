"""``lnproofs certify KEYS`` takes the vocabulary engine's road: the same statuses as the vocabulary
engine and the per-key engine, a ``lnproofs.vocab/1`` certificate that ``lnproofs check`` reads, and
every tampering with it refused."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lnproofs.certificates.certificate import Certificate
from lnproofs.certificates.limits import read_json_file
from lnproofs.certificates.vocab import QUERY, RESULT, SELF, load_vocab
from lnproofs.kernel import BoxQuerySet
from lnproofs.propose.certification import certify
from lnproofs.propose.vocab import certify_vocab_keys


def _keys(seed: int = 0) -> np.ndarray:
    """Keys with every kind of evidence: vertices that win as their own query, a vertex whose own key
    loses (a nudge or the engine finds its query), points inside the hull, a duplicate (tie-only)."""
    rng = np.random.default_rng(seed)
    outer = rng.standard_normal((40, 5)).astype(np.float32).astype(np.float64)
    inside = outer[:6].mean(axis=0, keepdims=True) * np.ones((3, 1)) + rng.uniform(-1e-3, 1e-3, (3, 5))
    skewed = np.array([[10.0, 0, 0, 0, 0], [9.0, 1.0, 0, 0, 0]])  # k_1 loses at q = k_1, wins elsewhere
    return np.vstack([outer, inside, skewed, skewed[:1]])


def _written(path):
    return load_vocab(path, read_json_file(path))


@pytest.mark.parametrize("box", [None, "3"])
def test_certify_gives_the_statuses_of_the_vocabulary_engine_and_of_the_per_key_engine(cli, tmp_path, box):
    keys = _keys()
    np.save(tmp_path / "k.npy", keys)
    extra = [] if box is None else ["--box", box]
    made = cli(["certify", tmp_path / "k.npy", "--out", tmp_path / "cert.json", *extra])
    assert made.status == 0, made.err
    written = _written(tmp_path / "cert.json")
    qs = None if box is None else BoxQuerySet(3.0)
    assert written.statuses() == certify_vocab_keys(keys, qs).statuses() == list(certify(keys, qs).statuses)
    assert ({"selectable", "unselectable", "tie-only"} if box is None else {"selectable", "not-realisable"}) <= set(
        written.statuses()
    )
    assert written.keys_file["path"] == "k.npy" and written.query_set["kind"] == ("free" if box is None else "box")
    codes = set(np.unique(written.evidence).tolist())
    assert {SELF, RESULT} <= codes and (box is not None or QUERY in codes)  # every kind of evidence is used
    checked = cli(["check", tmp_path / "cert.json", "--json"])
    assert checked.status == 0 and checked.json()["ok"], checked.err + checked.out
    printed = cli(["certify", tmp_path / "k.npy", *extra, "--json"])  # per key, checkable with its keys
    assert [r["status"] for r in printed.json()["results"]] == written.statuses()
    (tmp_path / "printed.json").write_text(printed.out)
    assert cli(["check", tmp_path / "printed.json", tmp_path / "k.npy"]).status == 0


def test_the_summary_names_every_key_that_is_not_selectable(cli, tmp_path):
    np.save(tmp_path / "k.npy", _keys())
    shown = cli(["certify", tmp_path / "k.npy"])
    assert shown.status == 0, shown.err
    statuses = certify_vocab_keys(_keys()).statuses()
    for i, s in enumerate(statuses):
        assert (f"key {i}: {s}" in shown.out) == (s != "selectable")
    assert f"{statuses.count('selectable')} selectable" in shown.out and "own key" in shown.out


def test_selectability_form_makes_the_same_claims(tmp_path):
    keys = _keys(1)
    cert = certify_vocab_keys(keys, BoxQuerySet(2.0, tuple(np.linspace(0, 1, len(keys)))))
    per_key = cert.selectability(keys)
    assert list(per_key.statuses) == cert.statuses()
    again = Certificate.from_json(per_key.dumps())
    from lnproofs.certificates.check import check_certificate

    assert check_certificate(again, keys).ok


@pytest.fixture
def written(cli, tmp_path):
    np.save(tmp_path / "k.npy", _keys())
    assert cli(["certify", tmp_path / "k.npy", "--out", tmp_path / "cert.json"]).status == 0
    return tmp_path / "cert.json"


def test_a_tampered_array_is_refused_by_its_hash(cli, written):
    target = written.with_name("cert.evidence.npy")
    evidence = np.load(target)
    evidence[0] = RESULT if evidence[0] != RESULT else SELF
    np.save(target, evidence)
    refused = cli(["check", written])
    assert refused.status == 2 and "sha" in refused.err.lower() and "evidence" in refused.err


def test_a_rewritten_array_is_refuted_by_the_kernel(cli, written, rewrite_array):
    statuses = _written(written).statuses()
    inside = statuses.index("unselectable")
    evidence = _written(written).evidence.copy()
    evidence[inside] = SELF  # an interior key claimed to win as its own query
    data = json.loads(written.read_text())
    data["results"] = [r for r in data["results"] if r["index"] != inside]
    written.write_text(json.dumps(data))
    rewrite_array(written, "evidence", evidence)
    refuted = cli(["check", written, "--json"])
    assert refuted.status == 1
    assert [f["index"] for f in refuted.json()["failures"]] == [inside]


def test_a_tampered_manifest_is_refused(cli, written):
    data = json.loads(written.read_text())
    full = next(r for r in data["results"] if r["status"] == "unselectable")
    full["status"] = "selectable"
    full["witness"] = [1.0] * 5
    full["combination"] = None
    written.write_text(json.dumps(data))
    assert cli(["check", written]).status == 1
    data["n_keys"] += 1
    written.write_text(json.dumps(data))
    assert cli(["check", written]).status == 2
    data["n_keys"] -= 1
    data["arrays"]["evidence"]["path"] = "../cert.evidence.npy"
    written.write_text(json.dumps(data))
    assert cli(["check", written]).status == 2


def test_wrong_keys_and_another_shape_are_refused(cli, tmp_path, written):
    other = _keys(3)
    np.save(tmp_path / "other.npy", other)
    assert cli(["check", written, tmp_path / "other.npy"]).status == 2  # not the keys it names
    np.save(tmp_path / "k.npy", other)  # the named file replaced
    refused = cli(["check", written])
    assert refused.status == 2 and "does not match" in refused.err
    from lnproofs.certificates.keyfile import sha256_of

    np.save(tmp_path / "k.npy", other[:, :4])  # another shape, with the hash made to match
    data = json.loads(written.read_text())
    data["keys_file"]["sha256"] = sha256_of(tmp_path / "k.npy")
    written.write_text(json.dumps(data))
    refused = cli(["check", written])
    assert refused.status == 2 and "refuted" not in refused.out


def test_decimals_are_read_exactly_and_check_reads_them_the_same_way(cli, tmp_path):
    (tmp_path / "k.csv").write_text("0,0\n1,0.1\n3,0.3\n")
    assert cli(["certify", tmp_path / "k.csv", "--out", tmp_path / "c.json"]).status == 0
    cert = _written(tmp_path / "c.json")
    assert cert.keys_reading == {"reading": "exact", "scale": "10"}
    assert cert.statuses() == ["selectable", "unselectable", "selectable"]
    assert cli(["check", tmp_path / "c.json"]).status == 0
    data = json.loads((tmp_path / "c.json").read_text())
    data["keys_reading"] = {"reading": "float64"}  # as floats, 0.1 and 0.3 are not on a line: the result fails
    (tmp_path / "c.json").write_text(json.dumps(data))
    assert cli(["check", tmp_path / "c.json"]).status == 1


def test_chunks_of_an_interrupted_run_are_kept_for_resume_only(cli, tmp_path, monkeypatch):
    import lnproofs.propose.vocab as vocab

    monkeypatch.setattr(vocab, "CHUNK_TOKENS", 16)  # a test-sized key set is kept in chunks
    np.save(tmp_path / "k.npy", _keys())
    out, chunks = tmp_path / "cert.json", tmp_path / "cert.json.chunks"
    assert cli(["certify", tmp_path / "k.npy", "--out", out]).status == 0 and not chunks.exists()
    chunks.mkdir()
    (chunks / "chunk-0-47.json").write_text("{}")  # what an interrupted run left (unreadable: made again)
    refused = cli(["certify", tmp_path / "k.npy", "--out", out])
    assert refused.status == 2 and "--resume" in refused.err
    resumed = cli(["certify", tmp_path / "k.npy", "--out", out, "--resume"])
    assert resumed.status == 0, resumed.err
    assert not chunks.exists() and _written(out).statuses() == certify_vocab_keys(_keys()).statuses()


def test_keys_at_the_ends_of_the_float_range_are_proved_and_checked(cli, tmp_path):
    """Keys whose scores overflow in floats: the nudges' witnesses, decided by the kernel."""
    np.save(tmp_path / "k.npy", np.array([[5e-324, 1.7976931348623157e308], [1e-320, 1.0], [3.0, -1e308]]))
    made = cli(["certify", tmp_path / "k.npy", "--out", tmp_path / "c.json"])
    assert made.status == 0 and made.err == "", made.err
    assert _written(tmp_path / "c.json").statuses() == ["selectable"] * 3
    assert cli(["check", tmp_path / "c.json"]).status == 0


@pytest.mark.parametrize("kind", ["subspace", "ball", "layernorm"])
def test_every_query_set_takes_the_same_road_and_checks(cli, tmp_path, kind):
    rng = np.random.default_rng(5)
    keys = rng.normal(size=(30, 3))
    keys[20:] *= 0.2
    np.save(tmp_path / "k.npy", keys)
    if kind == "subspace":
        np.save(tmp_path / "W.npy", rng.normal(size=(2, 3)))
        extra = ["--query-subspace", tmp_path / "W.npy"]
    elif kind == "ball":
        extra = ["--query-ball", "2.5"]
    else:
        n = 5
        layer = {"gamma": rng.normal(size=n), "beta": rng.normal(size=n), "W_q": rng.normal(size=(3, n))}
        np.savez(tmp_path / "p.npz", **layer, b_q=rng.normal(size=3))
        extra = ["--query-layernorm", tmp_path / "p.npz"]
    made = cli(["certify", tmp_path / "k.npy", "--out", tmp_path / "c.json", *extra])
    assert made.status == 0, made.err
    written = _written(tmp_path / "c.json")
    printed = cli(["certify", tmp_path / "k.npy", "--json", *extra])
    assert [r["status"] for r in printed.json()["results"]] == written.statuses()
    assert "undecided" not in written.statuses() and "selectable" in written.statuses()
    assert cli(["check", tmp_path / "c.json"]).status == 0
