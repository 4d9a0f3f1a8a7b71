"""Vocabulary certificates: the kernel's self filter against the plain Gram matrix, the compact
certificate (manifest and .npy arrays) through save, load and 'lnproofs check', and tampered
evidence refuted."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from lnproofs.certificates.vocab import NONE, QUERY, RESULT, SELF, load_vocab
from lnproofs.kernel import (
    BoxQuerySet,
    CertificateFormatError,
    FreeQueries,
    KeyResult,
    LayerNormQuerySet,
    RMSNormQuerySet,
    self_filter,
)
from lnproofs.propose.certification import certify
from lnproofs.propose.vocab import certify_vocab_keys


def check_vocab(keys, qs, selves, scale, results, shared=None):
    """The kernel's check of a vocabulary certificate made of these pieces (its manifest and arrays)."""
    from lnproofs.certificates.writers import query_set_to_json
    from lnproofs.kernel import check_vocab as kernel_check

    n, d = np.shape(keys)
    ev = np.full(n, NONE, dtype=np.int8)
    ev[[r.index for r in results if r.status != "undecided"]] = RESULT
    ev[np.asarray(selves, dtype=np.int64)] = SELF
    arrays = {"evidence": ev, "scale": np.asarray(scale, dtype=np.float64)}
    if shared is not None:
        ev[shared[0]] = QUERY
        rows = np.zeros(n, dtype=np.int32)
        rows[shared[0]] = np.arange(len(shared[0]))
        arrays.update(queries=np.asarray(shared[1], dtype=np.float64), rows=rows)
    manifest = {
        "n_keys": n,
        "dim": d,
        "query_set": query_set_to_json(qs),
        "results": [r for r in results if r.status != "undecided"],
    }
    return kernel_check(keys, manifest, arrays)


def _keys(n=400, d=6, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


def _exact_signs(K):
    """+1 where q = k_i makes k_i win strictly, -1 where another key beats it, 0 for a tie at the top (Fractions)."""
    F = [[Fraction(x) for x in row] for row in K.tolist()]
    out = []
    for i, q in enumerate(F):
        s = [sum(a * b for a, b in zip(q, k)) for k in F]
        top = max(s[:i] + s[i + 1 :])
        out.append(1 if s[i] > top else -1 if s[i] < top else 0)
    return np.array(out)


@pytest.mark.parametrize("block", [7, 64, 4096])
def test_the_self_filter_agrees_with_exact_scores_and_decides_the_clear_cases(block):
    K = _keys(n=120, d=5)
    K[10] = K[11] = K[11] * 10  # equal long rows: a tie at the top, which no float test can decide
    K[12] = K[12] * 1e-3  # a short row loses to others
    exact = _exact_signs(K)
    for rows in (np.arange(len(K)), np.arange(5, 100, 3)):  # the symmetric road and the rows road
        got = self_filter(K, rows, block=block)
        assert np.all((got == 0) | (got == exact[rows])), "a sign the exact scores contradict"
        assert got.dtype == np.int8 and {1, -1} <= set(got.tolist())
    got = self_filter(K, np.arange(len(K)), block=block)
    assert np.flatnonzero(got == 0).tolist() == [10, 11] and got[12] == -1


def test_the_self_filter_leaves_near_ties_and_subnormal_keys_to_the_exact_path():
    K = np.array([[1.0, 0.0], [1.0, 2.0**-40], [0.0, 1.0]])
    assert self_filter(K, [0, 1, 2]).tolist() == [0, 0, 1]  # gaps 0 and 2**-80: below the filter's bound
    verdicts = check_vocab(K, FreeQueries(), [0, 1, 2], np.ones(3), [])  # ... decided exactly instead
    assert [v.ok for v in verdicts] == [False, True, True] and "= 0" in verdicts[0].message
    K2 = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    assert self_filter(K2, [0, 1, 2]).tolist() == [0, 0, 1]
    K3 = np.array([[1.0, 5e-324], [0.0, 1.0]])  # subnormal entries: the filter declines, exact integers decide
    assert self_filter(K3, [0, 1]).tolist() == [0, 0]
    assert all(v.ok for v in check_vocab(K3, FreeQueries(), [0, 1], np.ones(2), []))


def test_a_self_claim_the_filter_refutes_is_refused_and_named():
    K = _keys(n=50, d=4, seed=5)
    K[7] = K[3] * 1e-2  # k_7 loses to k_3 at its own direction, by far
    verdicts = check_vocab(K, FreeQueries(), range(50), np.ones(50), [])
    bad = [v for v in verdicts if not v.ok]
    assert [v.index for v in bad if v.index == 7] == [7] and "beats its own witness" in bad[0].message
    assert all(v.ok for v in verdicts if v.index != 7 and _exact_signs(K)[v.index] == 1)


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


def test_tampered_vocabulary_certificates_are_refuted(tmp_path, cli, rewrite_array):
    K = _keys(n=200, d=3, seed=4)
    cert, path = _saved(tmp_path, K)
    loser = cert.statuses().index("unselectable")
    ev = cert.evidence.copy()
    ev[loser] = SELF  # an interior key claimed to win at its own direction
    data = json.loads(path.read_text())
    data["results"] = [r for r in data["results"] if r["index"] != loser]
    path.write_text(json.dumps(data))
    rewrite_array(path, "evidence", ev)
    result = cli(["check", path])
    assert result.status == 1 and f"key {loser}" in result.out
    cert, path = _saved(tmp_path, K)
    Q = cert.queries.copy()
    Q[0] = -Q[0]  # a shared query pointed the other way
    rewrite_array(path, "queries", Q)
    assert cli(["check", path]).status == 1


def test_a_changed_array_or_keys_file_is_refused(tmp_path, cli):
    K = _keys(n=100, d=3, seed=5)
    cert, path = _saved(tmp_path, K)
    np.save(path.with_name("cert.evidence.npy"), np.zeros(len(K), np.int8))  # the hash no longer matches
    result = cli(["check", path])
    assert result.status == 2 and "SHA-256" in result.err
    cert, path = _saved(tmp_path, K)
    np.save(tmp_path / "keys.npy", K * 2)
    assert cli(["check", path]).status == 2


def test_kernel_refuses_malformed_evidence():
    from lnproofs.certificates.writers import query_set_to_json
    from lnproofs.kernel import check_vocab as kernel_check

    K = _keys(n=20, d=3)
    one = np.ones(20)
    manifest = {"n_keys": 20, "dim": 3, "query_set": query_set_to_json(FreeQueries()), "results": []}
    with pytest.raises(CertificateFormatError, match="one code 0..3 per key"):
        kernel_check(K, manifest, {"evidence": np.full(19, SELF, np.int8)})
    with pytest.raises(CertificateFormatError, match="results with the other evidence must list every key"):
        kernel_check(K, dict(manifest, results=[KeyResult(3, "selectable")]), {"evidence": np.zeros(20, np.int8)})
    with pytest.raises(CertificateFormatError, match="scale"):
        check_vocab(K, FreeQueries(), range(20), -one, [])
    got = check_vocab(K, FreeQueries(), [], one, [KeyResult(i, "undecided") for i in range(20)])
    assert all(v.ok and v.status == "undecided" for v in got)


def test_reader_refuses_malformed_evidence(tmp_path):
    K = _keys(n=50, d=3, seed=6)
    cert = certify_vocab_keys(K)
    from dataclasses import replace

    for bad in (
        np.full(49, SELF, np.int8),
        np.full(50, 7, np.int8),
        np.full(50, RESULT, np.int8),
        np.full(50, QUERY, np.int8),
    ):
        with pytest.raises(CertificateFormatError):
            replace(cert, evidence=bad, queries=None).check(K)
    assert replace(cert, evidence=np.full(50, NONE, np.int8), results=()).check(K).ok


def test_box_self_witnesses_must_fit_the_box():
    K = _keys(n=120, d=4, seed=7)
    cert = certify_vocab_keys(K, BoxQuerySet(2.0))
    assert cert.check(K).ok and cert.evidence_counts()["own key"] > 0
    from dataclasses import replace

    report = replace(cert, scale=cert.scale * 2.0**20).check(K)
    assert not report.ok and "leaves the box" in report.failures[0].message


def test_single_precision_products_agree_with_double():
    K = _keys(n=500, d=16, seed=8).astype(np.float32).astype(np.float64)
    single = self_filter(K, np.arange(500))
    K64 = K.copy()
    K64[0, 0] = np.nextafter(K64[0, 0], 10.0)  # no longer a float32: the double products are used
    double = self_filter(K64, np.arange(500))
    assert (single == 1).sum() > 0 and (single[1:] == double[1:]).all()


@pytest.mark.parametrize("qs", [None, BoxQuerySet(1.0), "biased"])
def test_a_chunk_of_tokens_has_the_statuses_of_the_whole(qs):
    K = _keys(n=600, d=5, seed=3)
    if qs == "biased":
        qs = BoxQuerySet(1.0, tuple(np.random.default_rng(4).normal(size=600) * 0.1))
    chunk = np.arange(150, 420)
    assert (self_filter(K, chunk, block=64) == self_filter(K, np.arange(600), block=64)[chunk]).all()
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
    assert self_filter(K, range(4))[0] == -1
    found = nudged_witnesses(K, [0], bound)
    assert set(found) == {0}
    q = found[0]
    assert (K @ q).argmax() == 0 and (bound is None or np.abs(q).max() <= bound)
    cert = certify_vocab_keys(K, None if bound is None else BoxQuerySet(bound))
    assert cert.statuses()[0] == "selectable" and cert.evidence[0] == QUERY and cert.check(K).ok
    assert nudged_witnesses(np.array([[0.0, 0.0], [1.0, 1.0], [1.0, -1.0], [-2.0, 0.0]]), [0]) == {}


def _output_layer(n=400, d=6, seed=11, bias=True, centred=True):
    """Float32 keys (lifted with a float32 output bias) and the final norm's query set (W_q = [I; 0])."""
    from lnproofs.kernel import LayerNormQuerySet, RMSNormQuerySet

    rng = np.random.default_rng(seed)
    f32 = lambda a: np.asarray(a, dtype=np.float32).astype(np.float64)  # noqa: E731
    K, g, beta = f32(rng.normal(size=(n, d))), f32(1 + 0.2 * rng.normal(size=d)), f32(0.1 * rng.normal(size=d))
    W, b_q = np.eye(d), np.zeros(d)
    if bias:
        K = np.hstack([K, f32(0.3 * rng.normal(size=(n, 1)))])
        W, b_q = np.vstack([W, np.zeros((1, d))]), np.r_[b_q, 1.0]
    qs = (
        LayerNormQuerySet(tuple(g), tuple(beta), W, tuple(b_q), 1e-5)
        if centred
        else RMSNormQuerySet(tuple(g), W, tuple(b_q), 1e-6, beta=tuple(beta))
    )
    return K, qs


@pytest.mark.parametrize("centred", [True, False])
def test_norm_sets_of_an_output_layer_agree_with_the_engine_and_hold(tmp_path, centred):
    """Own directions, the nudge and the norm's search give the statuses the per-token engine
    gives, and the saved certificate is checked from its files."""
    K, qs = _output_layer(centred=centred)
    cert = certify_vocab_keys(K, qs)
    reference = certify(K, qs, progress=False, workers=1)
    assert cert.statuses() == list(reference.statuses)
    assert cert.evidence_counts()["own key"] > 0 and "undecided" not in cert.statuses()
    np.save(tmp_path / "k.npy", K)
    cert.save(tmp_path / "c.json", tmp_path / "k.npy")
    assert load_vocab(tmp_path / "c.json", json.loads((tmp_path / "c.json").read_text())).check(K).ok


def test_float_witnesses_of_a_norm_set_are_decided_exactly():
    """Own directions win (the float filter accepts them); a witness off the grid, off the hyperplane,
    outside the ball or not finite goes to the exact path, which refutes it; a set whose W_q is not a
    selection has no float filter, and the exact path decides its own directions."""
    from dataclasses import replace

    from lnproofs.kernel import norm_directions
    from lnproofs.propose.vocab_norm import norm_self_scales

    K, qs = _output_layer(n=200, bias=False)
    proposed, t = norm_self_scales(K, qs)
    tokens = np.flatnonzero(proposed)[:5]
    U = norm_directions(K, qs, tokens) * t[tokens, None]
    undecided = [KeyResult(i, "undecided") for i in range(len(K)) if i not in tokens]
    got = check_vocab(K, qs, [], np.ones(len(K)), undecided, (tokens, U))
    assert all(v.ok for v in got)
    bad = U.copy()
    bad[0, 0] = np.nextafter(bad[0, 0], 1.0)  # off the 20-bit grid, and 1.u != 0
    bad[1] = bad[1] * 2.0  # ||u||^2 about 4 n
    bad[2, :2] += [2.0**-10, 0.0]  # off 1.u = 0
    bad[3, 0] = np.nan
    bad[4, 1] = np.inf
    got = {v.index: v for v in check_vocab(K, qs, [], np.ones(len(K)), undecided, (tokens, bad))}
    assert [got[i].ok for i in tokens] == [False] * 5
    assert "1.u = 0" in got[tokens[0]].message and "exceeds n" in got[tokens[1]].message
    assert "1.u = 0" in got[tokens[2]].message and "malformed" in got[tokens[3]].message
    twisted = replace(qs, W_q=qs.W_q * 2.0)  # not a 0/1 selection: the exact path alone, the same verdicts
    got = {v.index: v for v in check_vocab(K, twisted, [], np.ones(len(K)), undecided, (tokens, U))}
    assert all(got[i].ok for i in tokens)


def test_a_witness_whose_rival_wins_is_refuted_by_the_norm_check():
    """A token's own direction taken as another token's witness: the exact path names the rival."""
    from lnproofs.kernel import norm_directions
    from lnproofs.propose.vocab_norm import norm_self_scales

    K, qs = _output_layer(n=200, bias=False)
    proposed, t = norm_self_scales(K, qs)
    a, b = np.flatnonzero(proposed)[:2]
    U = norm_directions(K, qs, [a]) * t[a]
    others = [KeyResult(i, "undecided") for i in range(len(K)) if i != b]
    got = {v.index: v for v in check_vocab(K, qs, [], np.ones(len(K)), others, ([b], U))}
    assert not got[b].ok and got[b].message.startswith(f"key {b}: witness gives")


@pytest.mark.parametrize("kind", ["free", "layernorm"])
def test_chunks_on_two_workers_make_the_certificate_of_one_process_and_resume(tmp_path, kind):
    """certify-vocab's --workers road: chunks of tokens on a two-worker Dask cluster, each written as
    it finishes; merged, the statuses of one process; a lost chunk alone is made again."""
    from lnproofs.propose.vocab import certify_vocab_chunks

    K, qs = (_keys(n=600, d=5, seed=3), None) if kind == "free" else _output_layer(n=600, d=5)
    whole = certify_vocab_keys(K, qs)
    folder = tmp_path / "chunks"
    spread = certify_vocab_chunks(K, qs, workers=2, chunk=250, folder=folder)
    assert spread.statuses() == whole.statuses() and spread.check(K).ok
    names = ["chunk-0-250.json", "chunk-250-500.json", "chunk-500-600.json"]
    assert sorted(p.name for p in folder.glob("chunk-*.json")) == names
    stamps = {name: (folder / name).stat().st_mtime_ns for name in names}
    (folder / names[1]).unlink()
    again = certify_vocab_chunks(K, qs, workers=2, chunk=250, folder=folder)
    assert again.statuses() == whole.statuses() and (folder / names[1]).is_file()
    assert [(folder / name).stat().st_mtime_ns == stamps[name] for name in names] == [True, False, True]


def test_float64_keys_with_a_unit_gain_use_the_float_witnesses():
    """Grivas et al.'s random models are float64: with gain 1 (a power of two) the lifted keys are the
    keys themselves, exactly, so the float filter applies; with a float64 gain that is not a power of two
    the exact path decides the same claims."""
    from lnproofs.experiments.unargmaxable import _layernorm_set, random_model

    W, b = random_model("normal", 8, classes=300)
    keys, qs = np.hstack([W, b[:, None]]), _layernorm_set(8, b)
    cert = certify_vocab_keys(keys, qs)
    assert cert.evidence_counts().get("own key", 0) > 0 and cert.check(keys).ok
    assert cert.statuses() == list(certify(keys, qs, progress=False, workers=1).statuses)
    from dataclasses import replace

    odd = replace(qs, gamma=tuple([1.1] * 8))  # no float filter: the exact path decides the same claims
    odd_cert = certify_vocab_keys(keys, odd)
    assert odd_cert.check(keys).ok


@pytest.mark.parametrize("centred", [True, False])
def test_a_norm_set_without_offsets_is_the_hull_question_of_its_points(centred):
    """Theorem vocab.no_offset: with q0 = 0 a token can be output exactly when its point g o k_i
    (differenced, (L a)_l = a_l - a_n, for LayerNorm) is a vertex of the points' hull; every
    answer, the duals of the points inside included, is held by the kernel."""
    from scipy.spatial import ConvexHull

    from lnproofs.propose.homogeneous import is_homogeneous

    rng = np.random.default_rng(7)
    K = rng.standard_normal((40, 5)).astype(np.float32).astype(np.float64)
    g = (0.5 + rng.random(5)).astype(np.float32).astype(np.float64)
    qs = (
        LayerNormQuerySet(tuple(g), (0.0,) * 5, np.eye(5), (0.0,) * 5, 1e-5)
        if centred
        else RMSNormQuerySet(tuple(g), np.eye(5), (0.0,) * 5, 1e-6)
    )
    assert is_homogeneous(qs)
    A = K * g
    points = A[:, :-1] - A[:, -1:] if centred else A
    vertices = set(ConvexHull(points).vertices.tolist())
    cert = certify_vocab_keys(K, qs)
    statuses = cert.statuses()
    assert {i for i, s in enumerate(statuses) if s == "selectable"} == vertices
    assert all(s == "not-realisable" for i, s in enumerate(statuses) if i not in vertices)
    assert len(vertices) < 40 and cert.check(K).ok


def test_offsets_or_a_rotation_keep_a_norm_set_off_the_subspace_road():
    from lnproofs.propose.homogeneous import is_homogeneous

    qs = LayerNormQuerySet((1.0,) * 3, (0.0, 0.5, 0.0), np.eye(3), (0.0,) * 3, 0.0)
    assert not is_homogeneous(qs)
    lifted = LayerNormQuerySet(
        (1.0,) * 3, (0.0,) * 3, np.vstack([np.eye(3), np.zeros((1, 3))]), (0.0,) * 3 + (1.0,), 0.0
    )
    assert not is_homogeneous(lifted)
    twice = LayerNormQuerySet((1.0,) * 3, (0.0,) * 3, np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]]), (0.0,) * 2, 0.0)
    assert not is_homogeneous(twice)  # one coordinate selected twice: M's entries would be sums


def test_tokens_no_query_at_all_makes_win_carry_the_free_lps_exact_duals():
    """With offsets, a token that loses for every u in R^n loses in the ball: the free LP's exact
    weights are the kernel's duals; a dual with a weight moved is refused."""
    from lnproofs.propose.homogeneous import relaxed_duals

    K, qs = _output_layer(n=200, d=3)
    duals = relaxed_duals(K, qs, range(len(K)))
    assert 50 < len(duals) < 200 and all(v.ok for v in qs.check(K, duals))
    cert = certify_vocab_keys(K, qs)
    assert all(cert.statuses()[r.index] == "not-realisable" for r in duals)
    w = list(duals[0].extras["dual"]["weights"])
    bad = KeyResult(
        duals[0].index,
        "not-realisable",
        None,
        None,
        "exact",
        None,
        None,
        {"dual": {"indices": duals[0].extras["dual"]["indices"], "weights": ["0"] * (len(w) - 1) + ["1"]}},
    )
    assert len(w) > 1 and not qs.check(K, [bad])[0].ok


def test_a_token_without_a_direction_in_the_ball_is_screened_quietly():
    """A zero key has no own direction; the screen skips it without nan warnings."""
    import warnings

    K, qs = _output_layer(n=50, d=4)
    K[3, :4] = 0.0  # a zero key: only its bias is left, no direction
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cert = certify_vocab_keys(K, qs)
    assert cert.evidence[3] != SELF and "undecided" not in cert.statuses() and cert.check(K).ok


def test_a_relaxed_dual_the_exact_offsets_refuse_is_left_to_the_norms_search(monkeypatch):
    """The free LP sees offsets rounded to doubles; a dual the kernel refuses is not returned."""
    from lnproofs.kernel import Combination
    from lnproofs.propose import homogeneous
    from lnproofs.propose.querysets import box

    K, qs = _output_layer(n=60, d=3)
    good = homogeneous.relaxed_duals(K, qs, range(len(K)))
    assert good
    wrong = KeyResult(
        good[0].index, "not-realisable", None, Combination((good[0].index ^ 1,), (Fraction(1),)), "exact"
    )  # one other key: no dual
    monkeypatch.setattr(box, "certify", lambda *a, **k: [wrong])
    assert homogeneous.relaxed_duals(K, qs, range(len(K))) == []


def test_the_engine_holds_float64_keys_without_copies_of_its_own():
    """A vocabulary's keys, read once as a float64 matrix, are not copied by the engine, the kernel or
    the table's margins: what they allocate beyond the keys are blocks (the kernel's tests of about
    2^21 entries, the self filter's and the margins' float32 blocks of 2,048 keys and their scores),
    under 1.5 times these 6,000 keys (1.1 measured; blocks do not grow with the vocabulary: a whole
    float64 copy would add 1, a float32 one 0.5); and the keys come back unchanged."""
    import tracemalloc

    from lnproofs.models.vocab_run import margins
    from lnproofs.propose.vocab import certify_vocab_chunks

    rng = np.random.default_rng(0)
    K = (rng.standard_normal((6000, 1024), dtype=np.float32) * np.float32(0.02)).astype(np.float64)
    before = K.copy()
    tracemalloc.start()
    try:
        cert = certify_vocab_chunks(K, None, seed=0)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        margins(K)
        table_peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1.5 * K.nbytes and table_peak < 1.5 * K.nbytes
    assert np.array_equal(K, before)
    assert (cert.evidence != NONE).all()


def test_zero_and_equal_rows_are_not_proposed_to_the_self_filter(monkeypatch):
    """A zero key and equal keys never win at their own witness; they go to the engine, not to the
    kernel's exact integers over every key (which the self filter would leave them to), and the
    statuses are the plain engine's."""
    from lnproofs.propose import vocab as engine
    from lnproofs.propose.vocab import tied_rows

    K = _keys(n=200, d=3, seed=11)
    K[10] = K[11] * 3  # twins, far out: they tie at the top of every query along them
    K[11] = K[10]
    K[20] = 0.0
    K[21] = np.where(K[22] == 0, -0.0, K[22])  # equal to K[22] but for the sign of its zeros
    assert np.flatnonzero(tied_rows(K)).tolist() == [10, 11, 20, 21, 22]
    proposed, real = [], engine.check_vocab
    monkeypatch.setattr(engine, "check_vocab", lambda ek, m, a: proposed.append(a["evidence"]) or real(ek, m, a))
    vocab = certify_vocab_keys(K)
    assert (proposed[0][[10, 11, 20, 21, 22]] != SELF).all() and (proposed[0] == SELF).sum() == 195
    assert all(vocab.evidence[[10, 11, 20, 21, 22]] != SELF)
    assert vocab.statuses() == list(certify(K).statuses) and vocab.check(K).ok
    assert vocab.statuses()[10] != "selectable" and vocab.statuses()[11] != "selectable"
