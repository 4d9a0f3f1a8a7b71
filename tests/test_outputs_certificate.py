"""The full-width norm outputs' certificate of a text file: rows that win as their own query are
written as "own row", put back from the arrays before the kernel checks them."""

import numpy as np

from lnproofs.certificates.check import check_certificate
from lnproofs.models.corpus_heads import OWN_ROW, outputs_certificate, with_own_rows


def _sphere(N, n, seed=0):
    X = np.random.default_rng(seed).standard_normal((N, n))
    return np.round(X / np.linalg.norm(X, axis=1, keepdims=True) * np.sqrt(n) * 2**20) / 2**20  # exact midpoints


def test_points_on_a_sphere_win_with_their_own_row_and_the_check_agrees():
    Y = _sphere(40, 16)
    cert = outputs_certificate(Y)
    assert [r["witness"] for r in cert["results"]] == [OWN_ROW] * 40
    assert cert["summary"]["selectable"] == 40
    report = check_certificate(with_own_rows(cert, Y), Y)
    assert report.ok and all(v.ok for v in report.verdicts)


def test_a_point_inside_is_not_given_its_own_row_and_twins_tie():
    Y = _sphere(30, 8)
    Y = np.vstack([Y, 0.5 * (Y[0] + Y[1]), Y[2]])  # a midpoint (exact), and a twin of row 2
    cert = outputs_certificate(Y)
    status = {r["index"]: (r["status"], r["witness"]) for r in cert["results"]}
    assert status[30][0] in ("tie-only", "unselectable") and status[30][1] != OWN_ROW
    assert status[2][0] == "tie-only" and status[31][0] == "tie-only"
    assert check_certificate(with_own_rows(cert, Y), Y).ok


def test_an_own_row_claimed_for_a_point_inside_is_refuted():
    Y = _sphere(20, 8)
    Y = np.vstack([Y, 0.5 * (Y[0] + Y[1])])
    cert = outputs_certificate(Y)
    forged = dict(
        cert,
        results=[
            dict(r, status="selectable", witness=OWN_ROW, combination=None, margin=None) if r["index"] == 20 else r
            for r in cert["results"]
        ],
    )
    forged["summary"] = dict(cert["summary"], selectable=21, unselectable=0)
    report = check_certificate(with_own_rows(forged, Y), Y)
    assert not report.ok
    assert not next(v for v in report.verdicts if v.index == 20).ok


def test_short_texts_take_interpolating_queries_and_agree_with_the_engine():
    """Affinely independent keys (no more than one plus their dimension) are all selectable
    without a witness (theorem attention.simplex_vertices), which the kernel checks by their
    exact affine rank; otherwise each key's interpolating query (K q = e_i when the keys are no
    more than their dimension) is proposed first, and the statuses are the engine's, also when a
    key lies between two others (singular Gram matrix)."""
    from lnproofs.models.corpus_heads import SIMPLEX_REASON, interpolating_queries
    from lnproofs.models.text_heads import _free_results
    from lnproofs.propose.certification import certify_results

    rng = np.random.default_rng(3)
    keys = rng.standard_normal((12, 16))
    cert = _free_results(keys)
    assert cert["summary"]["selectable"] == 12
    assert all(r["witness"] is None and r["reason"] == SIMPLEX_REASON for r in cert["results"])
    assert check_certificate(cert, keys).ok
    for i, q in interpolating_queries(keys, np.arange(12)):
        scores = keys @ q
        assert abs(scores[i] - 1) < 1e-9 and np.abs(np.delete(scores, i)).max() < 1e-9
    wide = rng.standard_normal((18, 16))  # one key too many for the theorem
    cert = _free_results(wide)
    assert all(r["witness"] is not None for r in cert["results"] if r["status"] == "selectable")
    assert check_certificate(cert, wide).ok
    inside = np.vstack([keys, 0.5 * (keys[0] + keys[1])])
    inside = np.round(inside * 2**20) / 2**20
    inside[12] = 0.5 * (inside[0] + inside[1])  # exactly between keys 0 and 1
    cert = _free_results(inside)  # 13 keys of affine rank 11: no simplex
    assert [r["status"] for r in cert["results"]] == [r.status for r in certify_results(inside)]
    assert all(r["witness"] is not None for r in cert["results"] if r["status"] == "selectable")
    assert cert["results"][12]["status"] in ("tie-only", "unselectable")
    assert check_certificate(cert, inside).ok


def test_rows_with_a_byte_equal_twin_are_left_to_the_engine(monkeypatch):
    """A rotary model's first norm outputs repeat for a repeated token.  Such a row has no strict
    witness (its twin scores the same), so no query is proposed for it: the engine settles the
    twins (tie-only here), while the other rows, fewer than the width, get the interpolating
    queries of the distinct rows (every other distinct row scores 0) and win with them."""
    import lnproofs.models.corpus_heads as corpus_heads

    rng = np.random.default_rng(5)
    Y = rng.standard_normal((9, 16)) * rng.uniform(0.5, 2.0, (9, 1))  # not on a sphere: own rows fail
    Y = np.vstack([Y, Y[4], Y[7]])  # rows 9 and 10 repeat 4 and 7
    asked, real = [], corpus_heads.interpolating_queries

    def spy(K, rows):
        found = real(K, rows)
        asked.append((len(K), sorted(i for i, _ in found)))
        return found

    monkeypatch.setattr(corpus_heads, "interpolating_queries", spy)
    cert = outputs_certificate(Y)
    status = {r["index"]: (r["status"], r["witness"]) for r in cert["results"]}
    assert {4, 7, 9, 10} == {i for i, (s, _) in status.items() if s == "tie-only"}
    own = {i for i, (_, w) in status.items() if w == OWN_ROW}
    assert asked == [(9, sorted(set(range(9)) - {4, 7} - own))]  # the distinct rows, twins left out
    assert all(status[i][0] == "selectable" for i in set(range(9)) - {4, 7})
    assert check_certificate(with_own_rows(cert, Y), Y).ok
