"""Uniform attention: exact queries giving every key the same score, or exact proofs of none."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from lnproofs.kernel import LayerNormQuerySet, SubspaceQuerySet
from lnproofs.propose.uniform import check_uniform, uniform_attention


def _centred_integer_keys(rng, count, width):
    """Integer keys whose coordinates sum to zero exactly (what mean subtraction gives)."""
    keys = rng.integers(-9, 10, size=(count, width)).astype(float)
    keys[:, -1] = -keys[:, :-1].sum(axis=1)
    return keys


def _scores(keys, q):
    return [sum(Fraction(k) * Fraction(x) for k, x in zip(row, q)) for row in keys]


def test_projected_keys_admit_the_all_ones_direction():
    keys = _centred_integer_keys(np.random.default_rng(0), 10, 5)
    result = uniform_attention(keys)
    assert result.status == "feasible"
    q = [Fraction(x) for x in result.query]
    assert any(q) and len(set(_scores(keys, q))) == 1
    assert all(x == q[0] for x in q)  # the kernel is the line through 1
    assert check_uniform(keys, result) == (True, "")


def test_generic_keys_have_no_uniform_query_and_the_proof_checks():
    keys = np.random.default_rng(1).normal(size=(7, 4))
    result = uniform_attention(keys)
    assert result.status == "infeasible"
    pairs = result.proof["pairs"]
    assert len(pairs) == 4
    diffs = np.array([keys[a] - keys[b] for a, b in pairs])
    assert abs(np.linalg.det(diffs)) > 1e-9  # independent check of the rank
    assert check_uniform(keys, result)[0]


def test_few_keys_always_have_a_uniform_query():
    keys = np.random.default_rng(2).normal(size=(3, 5))
    result = uniform_attention(keys)
    assert result.status == "feasible" and check_uniform(keys, result)[0]


def test_subspace_without_the_ones_direction_loses_uniformity():
    keys = _centred_integer_keys(np.random.default_rng(3), 8, 4)
    with_ones = uniform_attention(keys, SubspaceQuerySet(np.array([[1.0, 1, 1, 1], [1, 0, 0, 0]])))
    assert with_ones.status == "feasible" and check_uniform(keys, with_ones)[0]
    without = uniform_attention(keys, SubspaceQuerySet(np.array([[1.0, 0, 0, 0], [0, 1, 0, 0]])))
    assert without.status == "infeasible" and check_uniform(keys, without)[0]


def test_layernorm_realisable_uniform_query():
    keys = _centred_integer_keys(np.random.default_rng(4), 6, 4)
    # q = u + beta with u in 1-perp: a uniform query needs q parallel to 1, i.e. u = 0 and beta = c 1
    shifted = LayerNormQuerySet(np.ones(4), np.full(4, 0.5), np.eye(4), np.zeros(4))
    result = uniform_attention(keys, shifted)
    assert result.status == "feasible"
    u = [Fraction(x) for x in result.extras["u"]]
    assert sum(u) == 0 and sum(x * x for x in u) <= 4
    assert check_uniform(keys, result)[0]
    centred = LayerNormQuerySet(np.ones(4), np.zeros(4), np.eye(4), np.zeros(4))
    none = uniform_attention(keys, centred)
    assert none.status == "infeasible" and check_uniform(keys, none)[0]


def test_layernorm_least_norm_solution_outside_the_ball():
    rng = np.random.default_rng(5)
    n, d = 5, 3
    qs = LayerNormQuerySet(np.full(n, 0.01), rng.normal(size=n), rng.normal(size=(d, n)), rng.normal(size=d))
    keys = rng.normal(size=(3, d))
    result = uniform_attention(keys, qs)
    assert result.status == "infeasible"
    assert result.proof["kind"] == "least-norm solution outside the ball"
    assert result.extras["least_norm_squared"] > n
    assert check_uniform(keys, result)[0]


def test_mutated_answers_are_rejected():
    keys = _centred_integer_keys(np.random.default_rng(6), 6, 4)
    good = uniform_attention(keys).to_json()
    assert not check_uniform(keys, {**good, "query": ["1", "1", "1", "2"]})[0]
    assert not check_uniform(keys, {**good, "query": ["0", "0", "0", "0"]})[0]
    generic = np.random.default_rng(7).normal(size=(6, 4))
    proof = uniform_attention(generic).to_json()
    assert check_uniform(generic, proof)[0]
    # free queries: the kernel decides by the keys' exact affine rank, whatever pairs the proof names
    flat = generic.copy()
    flat[:, 3] = 0.5  # every key in one hyperplane: rank 3 < d = 4
    assert check_uniform(flat, uniform_attention(flat).to_json())[0]
    assert check_uniform(flat, proof)[1] == "the keys' affine rank is 3, not d = 4"
    assert not check_uniform(generic[:4], {**proof, "n_keys": 4})[0]  # four keys in R^4 span at most 3 dimensions


def test_cli(cli, tmp_path):
    keys = _centred_integer_keys(np.random.default_rng(8), 5, 3)
    path = tmp_path / "k.npy"
    np.save(path, keys)
    human = cli(["uniform", path])
    assert human.status == 0 and "same score" in human.out
    data = cli(["uniform", path, "--json"]).json()
    assert data["status"] == "feasible" and check_uniform(keys, data)[0]
    W = tmp_path / "W.npy"
    np.save(W, np.array([[1.0, 0.0, 0.0]]))
    assert cli(["uniform", path, "--query-subspace", W, "--json"]).json()["status"] == "infeasible"


def _layernorm_case(seed, *, identical=False):
    rng = np.random.default_rng(seed)
    n, d, N = int(rng.integers(4, 10)), int(rng.integers(2, 5)), int(rng.integers(2, 8))
    scale = float(rng.choice([1.0, 0.05, 0.0]))
    qs = LayerNormQuerySet(
        gamma=rng.normal(size=n),
        beta=rng.normal(size=n) * scale,
        W_q=rng.normal(size=(d, n)),
        b_q=rng.normal(size=d) * scale,
    )
    keys = np.ones((N, d)) if identical else rng.normal(size=(N, d))
    return keys, qs


def test_layernorm_query_is_never_zero_when_the_offset_vanishes():
    """With beta = b_q = 0 the least-norm solution is u = 0 (q = 0); the answer must move
    along an exact kernel direction, however large its integer entries, to a non-zero q."""
    rng = np.random.default_rng(5)
    n, d = 8, 4
    qs = LayerNormQuerySet(gamma=rng.normal(size=n), beta=np.zeros(n), W_q=rng.normal(size=(d, n)), b_q=np.zeros(d))
    keys = rng.normal(size=(2, d))
    result = uniform_attention(keys, qs)
    assert result.status == "feasible"
    assert any(result.to_json()["query"][a] != "0" for a in range(d))
    assert check_uniform(keys, result) == (True, "")


@pytest.mark.parametrize("seed", range(24))
def test_layernorm_answers_check_and_tampered_proofs_fail(seed):
    keys, qs = _layernorm_case(seed, identical=seed % 3 == 0)
    answer = uniform_attention(keys, qs).to_json()
    assert check_uniform(keys, answer) == (True, "")
    if answer["status"] != "infeasible":
        return
    proof = answer["proof"]
    if "y" in proof:
        proof["y"] = [str(i + 1) for i in range(len(proof["y"]))]
    elif "pairs" in proof:  # independent differences, decided by the keys' affine rank: d keys span less
        keys = keys[: keys.shape[1]]
        answer["n_keys"] = len(keys)
    else:
        proof["combination"] = ["0"] * len(proof["combination"])
    ok, message = check_uniform(keys, answer)
    assert not ok and message
