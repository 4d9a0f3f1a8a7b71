"""Numeric re-check of vocabulary certificates: real ones agree under every query set that has
references, tampered ones are reported token by token, and ``lnproofs check --numeric`` runs it."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("torch")

from lnproofs.certificates.vocab import QUERY, RESULT, SELF
from lnproofs.kernel import (  # noqa: E402
    BoxQuerySet,  # noqa: E402
    CertificateFormatError,
    FileFormatError,
    ShapeError,
    norm_directions,  # noqa: E402
)
from lnproofs.propose.vocab import certify_vocab_keys  # noqa: E402
from torch_backend.querysets import own_directions  # noqa: E402
from torch_backend.vocab import recheck_vocab  # noqa: E402


def _output_layer(n=240, d=6, seed=11, centred=True):
    """Float32 keys whose last coordinate is an output bias, under a final norm's set whose
    W_q = [I; 0] selects the first d coordinates and b_q = (0, ..., 0, 1) adds the bias."""
    from lnproofs.kernel import LayerNormQuerySet, RMSNormQuerySet

    rng = np.random.default_rng(seed)
    f32 = lambda a: np.asarray(a, dtype=np.float32).astype(np.float64)  # noqa: E731
    K = np.hstack([f32(rng.normal(size=(n, d))), f32(0.3 * rng.normal(size=(n, 1)))])
    g, beta = f32(1 + 0.2 * rng.normal(size=d)), f32(0.1 * rng.normal(size=d))
    W, b_q = np.vstack([np.eye(d), np.zeros((1, d))]), np.r_[np.zeros(d), 1.0]
    if centred:
        return K, LayerNormQuerySet(tuple(g), tuple(beta), W, tuple(b_q), 1e-5)
    return K, RMSNormQuerySet(tuple(g), W, tuple(b_q), 1e-6, beta=tuple(beta))


def _free(bias=False, box=False, n=240, d=4, seed=7):
    rng = np.random.default_rng(seed)
    K = rng.normal(size=(n, d))
    if box:
        return K, BoxQuerySet(1.0)
    return K, (BoxQuerySet(None, tuple(rng.normal(size=n))) if bias else None)


SETS = {
    "free": lambda: _free(),
    "free with a bias": lambda: _free(bias=True),
    "box": lambda: _free(box=True),
    "layernorm output layer": lambda: _output_layer(n=240),
    "rmsnorm output layer": lambda: _output_layer(n=240, centred=False),
}


def _loaded(path):
    """The certificate as lnproofs reads it (torch_backend reads no certificate file itself)."""
    from lnproofs.certificates.limits import read_json_file
    from lnproofs.certificates.vocab import load_vocab

    return load_vocab(path, read_json_file(path))


def _saved(tmp_path, name):
    K, qs = SETS[name]()
    cert = certify_vocab_keys(K, qs)
    np.save(tmp_path / "keys.npy", K)
    return K, cert, cert.save(tmp_path / "cert.json", tmp_path / "keys.npy")


@pytest.mark.parametrize("name", list(SETS))
def test_a_certified_vocabulary_agrees(tmp_path, name):
    K, cert, path = _saved(tmp_path, name)
    counts = cert.evidence_counts()
    assert counts["own key"] > 0 and counts["shared query"] > 0 and counts["full result"] > 0
    report = recheck_vocab(K, _loaded(path), device="cpu", samples=512)
    assert report["ok"], report["messages"]
    assert report["device"] == "cpu" and report["disagreeing"] == []
    checked = report["checked"]
    assert checked["self_witnesses"] == counts["own key"] and checked["shared_witnesses"] == counts["shared query"]
    assert checked["sampled_queries"] >= 512 and report["min_witness_margin"] > 0
    if name == "free":  # its full results go to the selectability re-check
        assert checked["results_rechecked"] == counts["full result"]
    else:  # every token claimed never to win has its dual bound
        assert checked["duals"] == sum(s == "not-realisable" for s in cert.statuses()) > 0
    again = recheck_vocab(K, cert, device="cpu", samples=512)  # the loaded certificate object reads the same
    assert again["ok"] and again["checked"] == checked


@pytest.mark.parametrize("centred", [True, False])
def test_own_directions_are_the_certificates_rows(centred):
    """The torch rebuild of J_i gives the integers lnproofs writes, entry for entry."""
    K, qs = _output_layer(n=300, centred=centred)
    arrays, tokens = qs.arrays(), np.arange(len(K))
    mine = own_directions(K, arrays["W_q"].argmax(axis=0), arrays[qs.G_NAME], tokens, qs.centred, block=64)
    assert np.array_equal(mine, norm_directions(K, qs, tokens))


@pytest.mark.parametrize("name", ["free", "layernorm output layer"])
def test_a_rival_that_beats_an_own_key_witness_is_named(tmp_path, name):
    K, cert, path = _saved(tmp_path, name)
    i = int(np.flatnonzero(cert.evidence == SELF)[0])
    j = next(int(j) for j in np.flatnonzero(cert.evidence == RESULT) if j != i)
    changed = K.copy()
    # j now outscores i at i's witness: three times its key, or (lifted output bias) its key with a larger bias
    changed[j] = 3.0 * K[i] if name == "free" else K[i] + np.eye(K.shape[1])[-1]
    report = recheck_vocab(changed, _loaded(path), device="cpu", samples=0)
    assert not report["ok"] and i in report["disagreeing"]
    assert any(m.startswith(f"token {i} (own key): token {j} beats it") for m in report["messages"])


@pytest.mark.parametrize("name", ["box", "free with a bias", "layernorm output layer", "rmsnorm output layer"])
def test_a_winning_token_claimed_not_realisable_is_reported(tmp_path, name, rewrite_array):
    K, cert, path = _saved(tmp_path, name)
    own = np.flatnonzero(cert.evidence == SELF)
    i, j = int(own[0]), int(own[1])
    data = json.loads(path.read_text())
    weights = {"indices": [j], "weights": ["1"]}
    claim = {"dual": weights, "combination": None} if "output" in name else {"combination": weights}
    data["results"].append({"index": i, "status": "not-realisable", "witness": None, "verified": "exact", **claim})
    path.write_text(json.dumps(data))
    evidence = cert.evidence.copy()
    evidence[i] = RESULT
    rewrite_array(path, "evidence", evidence)
    report = recheck_vocab(K, _loaded(path), device="cpu", samples=512)
    assert not report["ok"] and report["disagreeing"] == [i]
    assert any(m.startswith(f"token {i} (not-realisable): the largest score gap") for m in report["messages"])
    assert any(
        m.startswith(f"token {i} (not-realisable): certified never to win, but it strictly wins")
        for m in report["messages"]
    )


@pytest.mark.parametrize("name", ["free", "box", "rmsnorm output layer"])
def test_a_replaced_shared_row_is_reported(tmp_path, name, rewrite_array):
    K, cert, path = _saved(tmp_path, name)
    i = int(np.flatnonzero(cert.evidence == QUERY)[0])
    Q = cert.queries.copy()
    Q[cert.rows[i]] = -Q[cert.rows[i]]  # the query (or u) pointed the other way
    rewrite_array(path, "queries", Q)
    report = recheck_vocab(K, _loaded(path), device="cpu", samples=0)
    assert not report["ok"] and i in report["disagreeing"]
    assert any(m.startswith(f"token {i} (shared query): token ") for m in report["messages"])


def test_a_witness_outside_the_box_is_reported(tmp_path, rewrite_array):
    K, cert, path = _saved(tmp_path, "box")
    i = int(np.flatnonzero(cert.evidence == SELF)[0])
    scale = cert.scale.copy()
    scale[i] *= 4.0  # t_i k_i now leaves |q_l| <= 1
    rewrite_array(path, "scale", scale)
    report = recheck_vocab(K, _loaded(path), device="cpu", samples=0)
    assert any(m.startswith(f"token {i} (own key): its witness leaves the box") for m in report["messages"])


def test_bad_input_is_one_clear_error(tmp_path):
    K, cert, path = _saved(tmp_path, "free")
    with pytest.raises(ShapeError, match="240 keys of dimension 4, but the keys have shape"):
        recheck_vocab(K[:, :3], _loaded(path), device="cpu")
    np.save(path.with_name("cert.evidence.npy"), np.zeros(len(K), np.int8))
    with pytest.raises(FileFormatError, match="SHA-256"):
        recheck_vocab(K, _loaded(path), device="cpu")
    with pytest.raises(CertificateFormatError, match="takes a loaded certificate"):
        recheck_vocab(K, path, device="cpu")


def test_check_numeric_on_the_command_line(tmp_path, cli, rewrite_array):
    K, cert, path = _saved(tmp_path, "layernorm output layer")
    result = cli(["check", path, "--numeric", "--device", "cpu"])
    assert result.status == 0 and "numeric re-check on cpu: agrees" in result.out
    result = cli(["check", path, "--numeric", "--device", "cpu", "--json"])
    out = json.loads(result.out)
    assert result.status == 0 and out["ok"] and out["numeric"]["ok"] and out["numeric"]["query_set"] == "layernorm"
    result = cli(["check", tmp_path, "--numeric", "--device", "cpu"])  # a folder: its vocabulary file too
    assert result.status == 0 and f"{path}: numeric re-check on cpu: agrees" in result.out
    i = int(np.flatnonzero(cert.evidence == QUERY)[0])
    Q = cert.queries.copy()
    Q[cert.rows[i]] = -Q[cert.rows[i]]
    rewrite_array(path, "queries", Q)
    result = cli(["check", path, "--numeric", "--device", "cpu"])
    assert result.status == 1 and "numeric re-check on cpu: DISAGREES" in result.out
    assert f"token {i} (shared query): token " in result.out and "Traceback" not in result.out + result.err


def test_a_bad_device_is_one_line_at_the_command_line(tmp_path, cli):
    _, _, path = _saved(tmp_path, "box")
    result = cli(["check", path, "--numeric", "--device", "abacus"])
    assert result.status == 2 and "device 'abacus' is not accepted" in result.err
    assert len(result.err.strip().splitlines()) == 1


def test_a_full_result_whose_u_loses_is_reported(tmp_path):
    """A norm set's full result: its exact u turned the other way makes a rival win there."""
    K, cert, path = _saved(tmp_path, "layernorm output layer")
    data = json.loads(path.read_text())
    claim = next(r for r in data["results"] if r["status"] == "selectable" and r.get("u") is not None)
    claim["u"] = [f"-{x}" if not str(x).startswith("-") else str(x)[1:] for x in map(str, claim["u"])]
    path.write_text(json.dumps(data))
    report = recheck_vocab(K, _loaded(path), device="cpu", samples=0)
    i = claim["index"]
    assert not report["ok"] and report["disagreeing"] == [i]
    assert any(m.startswith(f"token {i} (full result): token ") for m in report["messages"])
    claim["status"] = "probably"
    path.write_text(json.dumps(data))
    with pytest.raises(CertificateFormatError, match="status is 'probably'; expected one of"):  # read by lnproofs
        recheck_vocab(K, _loaded(path), device="cpu")
