"""Softmax weights over query sets: closed-form answers, rigorous intervals, dual bounds."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from lnproofs.kernel import BallQuerySet, LayerNormQuerySet, OptionError, SubspaceQuerySet
from lnproofs.propose.softmax import max_weight, min_norm

PAIR = np.array([[1.0, 0.0], [-1.0, 0.0]])


def _sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


@pytest.mark.parametrize("radius, temperature", [(1.5, None), (0.7, 2.0), (3.0, 0.5)])
def test_max_weight_of_two_opposite_keys(radius, temperature):
    # best query: radius * e_1, weight sigmoid(2 R / T)
    result = max_weight(PAIR, 0, BallQuerySet(radius), temperature=temperature)
    best = _sigmoid(2 * radius / (temperature or 1.0))
    assert result.status == "solved"
    lo, hi = result.weight
    assert lo <= hi <= best + 1e-15  # a query in the ball cannot beat the optimum
    assert result.bound[1] >= best  # the dual bound is an upper bound
    assert best - lo < 1e-6 and result.bound[1] - best < 1e-6
    assert result.gap == pytest.approx(result.bound[1] - lo)
    assert result.query_norm[0] <= radius


def test_scaled_scores_use_one_over_sqrt_d():
    keys = np.array([[1.0, 0, 0, 0], [-1.0, 0, 0, 0]])
    result = max_weight(keys, 0, BallQuerySet(2.0), scaled=True)
    assert result.scale == "1/sqrt(4)"
    assert result.weight[0] <= _sigmoid(2.0) <= result.bound[1]


def test_min_norm_of_two_opposite_keys():
    tau = 0.8
    result = min_norm(PAIR, 0, tau)
    exact = math.log(tau / (1 - tau)) / 2  # weight sigmoid(2 q_1) = tau
    assert result.status == "solved"
    assert result.weight[0] >= tau  # the reported query reaches tau, rigorously
    assert result.bound[0] <= exact <= result.query_norm[1]
    assert result.query_norm[1] - result.bound[0] < 1e-5


def test_orthogonal_subspace_gives_exactly_one_half():
    W = np.array([[0.0, 1.0]])
    result = max_weight(PAIR, 0, SubspaceQuerySet(W, radius=5.0))
    assert result.weight[0] <= 0.5 <= result.weight[1]
    assert result.bound[0] <= 0.5 <= result.bound[1]
    impossible = min_norm(PAIR, 0, 0.9, SubspaceQuerySet(W, radius=5.0))
    assert impossible.status == "infeasible"
    assert impossible.bound[1] < 0.9


def test_interior_key_cannot_reach_a_large_weight_with_any_query():
    # k_1 = (k_0 + k_2) / 2: for every q, w_1 <= exp(-H(p)) with p averaging the keys to k_1
    keys = np.array([[1.0, 0.0], [0.0, 0.0], [-1.0, 0.0], [0.0, 3.0]])
    result = min_norm(keys, 1, 0.6)
    assert result.status == "infeasible"
    p = {
        j: Fraction(w)
        for j, w in zip(result.extras["entropy_weights"]["indices"], result.extras["entropy_weights"]["weights"])
    }
    assert sum(p.values()) == 1 and all(w >= 0 for w in p.values())
    for c in range(2):
        assert sum(w * Fraction(keys[j, c]) for j, w in p.items()) == Fraction(keys[1, c])
    entropy = -sum(float(w) * math.log(float(w)) for w in p.values() if w)
    assert math.exp(-entropy) <= result.bound[1] + 1e-12 < 0.6
    # the bound is a real upper bound: a grid of queries never beats it
    grid = np.linspace(-20, 20, 81)
    q = np.array(np.meshgrid(grid, grid)).reshape(2, -1).T
    s = q @ keys.T
    w = np.exp(s - s.max(axis=1, keepdims=True))
    assert (w[:, 1] / w.sum(axis=1)).max() <= result.bound[1]


def test_layernorm_set_bound_dominates_sampled_queries():
    rng = np.random.default_rng(3)
    n, d, N = 5, 3, 6
    qs = LayerNormQuerySet(rng.uniform(0.5, 1.5, n), rng.normal(size=n), rng.normal(size=(d, n)), rng.normal(size=d))
    keys = rng.normal(size=(N, d))
    result = max_weight(keys, 2, qs)
    assert result.status == "solved"
    u = rng.normal(size=(5000, n))
    u -= u.mean(axis=1, keepdims=True)
    u *= math.sqrt(n) / np.linalg.norm(u, axis=1, keepdims=True) * rng.uniform(0, 1, (5000, 1)) ** (1 / (n - 1))
    arrays = qs.arrays()
    q = (arrays["gamma"] * u + arrays["beta"]) @ arrays["W_q"].T + arrays["b_q"]
    s = q @ keys.T
    w = np.exp(s - s.max(axis=1, keepdims=True))
    sampled = (w[:, 2] / w.sum(axis=1)).max()
    assert sampled <= result.bound[1]
    assert result.weight[0] >= sampled - 1e-6
    assert result.gap < 1e-3


def test_bad_arguments():
    with pytest.raises(OptionError, match="bounded"):
        max_weight(PAIR, 0)
    with pytest.raises(OptionError, match="out of range"):
        max_weight(PAIR, 2, BallQuerySet(1.0))
    for tau in (0.0, 1.0, -0.5, 2.0):
        with pytest.raises(OptionError, match=r"\(0, 1\)"):
            min_norm(PAIR, 0, tau)


def test_cli_human_and_json(cli, tmp_path):
    path = tmp_path / "k.npy"
    np.save(path, PAIR)
    human = cli(["attention-weight", path, "--target", "0", "--max-weight", "--query-ball", "1"])
    assert human.status == 0, human.err
    assert "dual bound" in human.out and "interval" in human.out
    data = cli(["attention-weight", path, "--target", "0", "--min-norm", "--weight", "0.75", "--json"]).json()
    assert data["status"] == "solved" and data["weight"][0] >= 0.75
    assert data["bound"][0] <= math.log(3) / 2 <= data["query_norm"][1]
