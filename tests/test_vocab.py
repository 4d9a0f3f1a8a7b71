"""Vocabulary certificates: the self-witness screen against the plain Gram matrix, the compact
certificate (manifest and .npy arrays) through save, load and 'lnproofs check', and tampered
evidence refuted."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lnproofs.certificates.vocab import load_vocab
from lnproofs.kernel.errors import CertificateFormatError
from lnproofs.kernel.querysets.free import BoxQuerySet
from lnproofs.kernel.querysets.free import FreeQueries
from lnproofs.certificates.vocab import NONE, QUERY, RESULT, SELF
from lnproofs.kernel.certificates import KeyResult
from lnproofs.certificates.vocab import check_vocab
from lnproofs.propose.vocab import self_screen as self_witnesses
from lnproofs.propose.certification import certify
from lnproofs.propose.vocab import certify_vocab_keys


def _keys(n=400, d=6, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


@pytest.mark.parametrize("block", [7, 64, 4096])
def test_self_witnesses_match_the_gram_matrix(block):
    K = _keys()
    K[10] = K[11]                                    # equal rows never win at their own direction
    K[12] = K[12] * 1e-3                             # a short row loses to others
    G = K @ K.T
    off = G.copy()
    np.fill_diagonal(off, -np.inf)
    expected = np.diag(G) - off.max(axis=1) > 1e-9 * np.abs(G).max()
    got = self_witnesses(K, block=block)
    assert (got == expected).all() and got.sum() > 0
    assert not got[10] and not got[11] and not got[12]


def test_self_witnesses_refuse_near_ties_and_subnormal_keys():
    K = np.array([[1.0, 0.0], [1.0, 2.0 ** -40], [0.0, 1.0]])
    assert self_witnesses(K).tolist() == [False, False, True]     # gaps 0 and 2**-80: below the filter's bound
    verdicts = check_vocab(K, FreeQueries(), [0, 1, 2], np.ones(3), [])     # ... decided exactly instead
    assert [v.ok for v in verdicts] == [False, True, True] and "= 0" in verdicts[0].message
    K2 = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    assert self_witnesses(K2).tolist() == [False, False, True]
    K3 = np.array([[1.0, 5e-324], [0.0, 1.0]])                   # subnormal entries: decided exactly
    assert all(v.ok for v in check_vocab(K3, FreeQueries(), [0, 1], np.ones(2), []))


@pytest.mark.parametrize("box", [None, 100.0])
def test_statuses_match_the_plain_engine(box):
    K = _keys(n=150, d=3, seed=1)
    vocab = certify_vocab_keys(K, None if box is None else BoxQuerySet(box))
    plain = certify(K).statuses
    assert [s == "selectable" for s in vocab.statuses()] == [s == "selectable" for s in plain]
    assert "undecided" not in vocab.statuses()
    assert vocab.check(K).ok
    ev = vocab.evidence_counts()
    assert ev["own key"] > 0 and ev.get("full result", 0) > 0


def _saved(tmp_path, K, qs=None):
    np.save(tmp_path / "keys.npy", K)
    cert = certify_vocab_keys(K, qs)
    path = cert.save(tmp_path / "cert.json", tmp_path / "keys.npy")
    return cert, path


def test_save_load_and_check_on_the_command_line(tmp_path, cli):
    K = _keys(n=300, d=4, seed=2)
    b = np.random.default_rng(3).normal(size=len(K))
    cert, path = _saved(tmp_path, K, BoxQuerySet(100.0, tuple(b)))
    again = load_vocab(path, json.loads(path.read_text()))
    assert again.statuses() == cert.statuses() and again.check(K).ok
    assert {p.name for p in tmp_path.iterdir()} >= {"cert.evidence.npy", "cert.bias.npy", "cert.scale.npy"}
    result = cli(["check", path])
    assert result.status == 0 and "every claim holds" in result.out


def _rewrite(path, name, array):
    from lnproofs.certificates.keyfile import sha256_of

    target = path.with_name(f"cert.{name}.npy")
    np.save(target, array)
    data = json.loads(path.read_text())
    data["arrays"][name]["sha256"] = sha256_of(target)
    path.write_text(json.dumps(data))


def test_tampered_vocabulary_certificates_are_refuted(tmp_path, cli):
    K = _keys(n=200, d=3, seed=4)
    cert, path = _saved(tmp_path, K)
    loser = cert.statuses().index("unselectable")
    ev = cert.evidence.copy()
    ev[loser] = SELF                                   # an interior key claimed to win at its own direction
    data = json.loads(path.read_text())
    data["results"] = [r for r in data["results"] if r["index"] != loser]
    path.write_text(json.dumps(data))
    _rewrite(path, "evidence", ev)
    result = cli(["check", path])
    assert result.status == 1 and f"key {loser}" in result.out
    cert, path = _saved(tmp_path, K)
    Q = cert.queries.copy()
    Q[0] = -Q[0]                                        # a shared query pointed the other way
    _rewrite(path, "queries", Q)
    assert cli(["check", path]).status == 1


def test_a_changed_array_or_keys_file_is_refused(tmp_path, cli):
    K = _keys(n=100, d=3, seed=5)
    cert, path = _saved(tmp_path, K)
    np.save(path.with_name("cert.evidence.npy"), np.zeros(len(K), np.int8))   # the hash no longer matches
    result = cli(["check", path])
    assert result.status == 2 and "SHA-256" in result.err
    cert, path = _saved(tmp_path, K)
    np.save(tmp_path / "keys.npy", K * 2)
    assert cli(["check", path]).status == 2


def test_kernel_refuses_malformed_evidence():
    K = _keys(n=20, d=3)
    one = np.ones(20)
    with pytest.raises(CertificateFormatError, match="named once"):
        check_vocab(K, FreeQueries(), range(19), one, [])
    with pytest.raises(CertificateFormatError, match="named once"):
        check_vocab(K, FreeQueries(), range(20), one, [KeyResult(3, "undecided")])
    with pytest.raises(CertificateFormatError, match="scale"):
        check_vocab(K, FreeQueries(), range(20), -one, [])
    got = check_vocab(K, FreeQueries(), [], one, [KeyResult(i, "undecided") for i in range(20)])
    assert all(v.ok and v.status == "undecided" for v in got)


def test_reader_refuses_malformed_evidence(tmp_path):
    K = _keys(n=50, d=3, seed=6)
    cert = certify_vocab_keys(K)
    from dataclasses import replace
    for bad in (np.full(49, SELF, np.int8), np.full(50, 7, np.int8), np.full(50, RESULT, np.int8),
                np.full(50, QUERY, np.int8)):
        with pytest.raises(CertificateFormatError):
            replace(cert, evidence=bad, queries=None).check(K)
    assert replace(cert, evidence=np.full(50, NONE, np.int8), results=()).check(K).ok


def test_box_self_witnesses_must_fit_the_box():
    K = _keys(n=120, d=4, seed=7)
    cert = certify_vocab_keys(K, BoxQuerySet(2.0))
    assert cert.check(K).ok and cert.evidence_counts()["own key"] > 0
    from dataclasses import replace
    report = replace(cert, scale=cert.scale * 2.0 ** 20).check(K)
    assert not report.ok and "leaves the box" in report.failures[0].message


def test_single_precision_products_agree_with_double():
    K = _keys(n=500, d=16, seed=8).astype(np.float32).astype(np.float64)
    single = self_witnesses(K)
    K64 = K.copy()
    K64[0, 0] = np.nextafter(K64[0, 0], 10.0)       # no longer a float32: the double products are used
    double = self_witnesses(K64)
    assert single.sum() > 0 and (single[1:] == double[1:]).all()


@pytest.mark.parametrize("qs", [None, BoxQuerySet(1.0), "biased"])
def test_a_chunk_of_tokens_has_the_statuses_of_the_whole(qs):
    K = _keys(n=600, d=5, seed=3)
    if qs == "biased":
        qs = BoxQuerySet(1.0, tuple(np.random.default_rng(4).normal(size=600) * 0.1))
    chunk = np.arange(150, 420)
    screened = self_witnesses(K, block=64, rows=chunk)
    assert (screened[chunk] == self_witnesses(K, block=64)[chunk]).all()
    assert not screened[:150].any() and not screened[420:].any()
    whole = certify_vocab_keys(K, qs).statuses()
    part = certify_vocab_keys(K, qs, indices=chunk)
    got = part.statuses()
    assert got[150:420] == whole[150:420] and "undecided" not in whole[150:420]
    assert set(got[:150] + got[420:]) == {"undecided"}
    assert part.check(K).ok


@pytest.mark.parametrize("bound", [None, 0.5])
def test_a_vertex_whose_own_key_loses_gets_a_nudged_witness_the_kernel_accepts(bound):
    """k_0 = (1, 0) loses at q = k_0 to (2, 0.1) but is a vertex (q = (-1, 0) wins): the nudge finds
    a float witness (inside the box when there is one), the kernel accepts it, and the interior
    point (0, 0) of another triangle gets none."""
    from lnproofs.propose.vocab import nudged_witnesses

    K = np.array([[1.0, 0.0], [2.0, 0.1], [2.0, -0.1], [1.5, 0.0]])
    assert not self_witnesses(K)[0]
    found = nudged_witnesses(K, [0], bound)
    assert set(found) == {0}
    q = found[0]
    assert (K @ q).argmax() == 0 and (bound is None or np.abs(q).max() <= bound)
    cert = certify_vocab_keys(K, None if bound is None else BoxQuerySet(bound))
    assert cert.statuses()[0] == "selectable" and cert.evidence[0] == QUERY and cert.check(K).ok
    assert nudged_witnesses(np.array([[0.0, 0.0], [1.0, 1.0], [1.0, -1.0], [-2.0, 0.0]]), [0]) == {}
