"""The box query set: scores q.k_j + b_j over |q_l| <= B (or all of R^d), checked exactly and against
an independent reference (scipy's convex hull of the lifted keys), with tampered evidence refuted."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest
from scipy.spatial import ConvexHull

from lnproofs.certificates.check import check_certificate
from lnproofs.certificates.writers import query_set_to_json
from lnproofs.kernel import BoxQuerySet, Combination, KeyResult, OptionError, ShapeError
from lnproofs.propose.certification import certify
from lnproofs.propose.querysets import box as proposer


def _keys(seed=3, n=40, d=2):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.normal(size=n)


def _upper_hull_vertices(K, b):
    """Keys that win for some query with a bias: vertices of an upper facet of the lifted hull
    (a facet whose outward normal has a positive last coordinate), by scipy's Qhull."""
    hull = ConvexHull(np.hstack([K, b[:, None]]))
    out = set()
    for simplex, eq in zip(hull.simplices, hull.equations):
        if eq[-2] > 1e-12:  # normal (a, c): c > 0 is an upper facet
            out.update(int(v) for v in simplex)
    return out


@pytest.mark.parametrize("n", [40, 400])  # 400: the LPs grow their rivals from 64
def test_free_with_bias_matches_the_upper_hull(n):
    K, b = _keys(n=n)
    res = proposer.certify(K, BoxQuerySet(None, tuple(b)))
    assert all(v.ok for v in BoxQuerySet(None, tuple(b)).check(K, res))
    assert {r.index for r in res if r.status == "selectable"} == _upper_hull_vertices(K, b)
    assert all(r.status in ("selectable", "not-realisable") for r in res)


def test_without_bias_statuses_follow_free_queries_and_witnesses_fit():
    K, _ = _keys(n=30)
    free = certify(K)
    res = proposer.certify(K, BoxQuerySet(0.5))
    assert [r.status == "selectable" for r in res] == [s == "selectable" for s in free.statuses]
    for r in res:
        if r.witness is not None:
            assert max(abs(Fraction(x)) for x in r.witness) <= Fraction(0.5)


def test_the_lp_on_a_growing_set_of_rivals_has_the_whole_lps_optimum():
    """Constraint generation ends at the optimum of the LP over every rival (its witness or its dual)."""
    from scipy.optimize import linprog

    K, b = _keys(seed=9, n=300, d=3)
    for i in range(0, 300, 37):
        for bound in (None, 0.3):
            q, combos, _ = proposer._lp(K, b, i, bound, start=4, add=2)
            others = np.delete(np.arange(300), i)
            box = (-bound, bound) if bound is not None else (None, None)
            whole = linprog(
                np.r_[np.zeros(3), -1.0],
                A_ub=np.hstack([K[others] - K[i], np.ones((299, 1))]),
                b_ub=b[i] - b[others],
                bounds=[box] * 3 + [(None, 1.0)],
                method="highs",
            )
            assert (q is not None) == (-whole.fun > 1e-9)
            if q is None:
                assert (
                    combos
                    and BoxQuerySet(bound, tuple(b))
                    .check(K, [KeyResult(i, "not-realisable", None, combos[-1], "exact")])[0]
                    .ok
                )


def test_a_small_box_loses_tokens_that_a_large_one_keeps():
    K, b = _keys(seed=5)
    b = b * 10
    small = proposer.certify(K, BoxQuerySet(0.01, tuple(b)))
    large = proposer.certify(K, BoxQuerySet(100.0, tuple(b)))
    n_small = sum(r.status == "selectable" for r in small)
    n_large = sum(r.status == "selectable" for r in large)
    assert n_small < n_large
    assert all(r.status != "undecided" for r in small + large)


def test_certificate_round_trip_through_certify_and_check():
    K, b = _keys(n=25)
    qs = BoxQuerySet(100.0, tuple(b))
    cert = certify(K, qs)
    assert BoxQuerySet.from_json(query_set_to_json(qs)) == qs
    assert check_certificate(cert.to_json(), K).ok


def _tampered(K, qs):
    res = proposer.certify(K, qs)
    win = next(r for r in res if r.status == "selectable")
    lose = next(r for r in res if r.status == "not-realisable")
    loser_witness = replace(lose, status="selectable", witness=win.witness, combination=None)
    out_of_box = replace(win, witness=tuple(float(x) * 2**40 for x in win.witness))
    if qs.bound is None:  # free queries: r must vanish exactly, a tiny move breaks it
        w = list(lose.combination.weights)
        w[0] += Fraction(1, 2**30)
        w[-1] -= Fraction(1, 2**30) if len(w) > 1 else 0
        shifted = replace(lose, combination=Combination(lose.combination.indices, tuple(w)))
    else:  # the box: all the weight on the key that breaks the bound most
        b = np.asarray(qs.bias)
        i = lose.index
        worst = max(
            (j for j in range(len(K)) if j != i), key=lambda j: qs.bound * np.abs(K[i] - K[j]).sum() + b[i] - b[j]
        )
        shifted = replace(lose, combination=Combination((worst,), (Fraction(1),)))
    claim_win = replace(
        win,
        status="not-realisable",
        witness=None,
        combination=Combination(tuple(j for j in range(len(K)) if j != win.index)[:1], (Fraction(1),)),
    )
    tie = replace(win, status="tie-only")
    return {
        "a loser's claim with a winner's witness": loser_witness,
        "a witness outside the box": out_of_box,
        "dual weights moved": shifted,
        "a winner claimed never to win": claim_win,
        "a tie-only claim": tie,
    }


@pytest.mark.parametrize("bound", [None, 100.0])
def test_tampered_evidence_is_refuted(bound):
    K, b = _keys(seed=11, n=30)
    qs = BoxQuerySet(bound, tuple(b * 3))
    for name, bad in _tampered(K, qs).items():
        if name == "a witness outside the box" and bound is None:
            continue
        verdict = qs.check(K, [bad])[0]
        assert not verdict.ok, name
        assert verdict.message, name


def test_bad_box_and_bias():
    for bad in (0, -1.0, float("nan"), float("inf"), "x", True):
        with pytest.raises(OptionError):
            BoxQuerySet(bad)
    K, b = _keys(n=5)
    with pytest.raises(ShapeError, match="one bias per key"):
        BoxQuerySet(1.0, tuple(b[:4])).check(K, [KeyResult(0, "undecided")])
