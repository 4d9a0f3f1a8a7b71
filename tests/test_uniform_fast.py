"""The flint uniform-attention search gives the reference search's answers, and both check."""

from fractions import Fraction

import numpy as np
import pytest
from reference.uniform_reference import reference_uniform_attention

from lnproofs.kernel import LayerNormQuerySet
from lnproofs.propose.uniform import check_uniform, uniform_attention


def _layer(rng, n, d, *, zero_beta=False):
    beta = np.zeros(n) if zero_beta else rng.normal(size=n) * 0.1
    return LayerNormQuerySet(rng.normal(size=n), beta, rng.normal(size=(d, n)), rng.normal(size=d) * 0.1, 1e-5)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("shape", [(3, 5), (6, 5), (9, 4), (2, 3)])
def test_free_answers_equal_the_reference(seed, shape):
    rng = np.random.default_rng(seed)
    keys = rng.normal(size=shape)
    if seed % 3 == 0:
        keys[:, -1] = keys[:, 0]  # differences in a hyperplane: a uniform query exists
    fast, ref = uniform_attention(keys), reference_uniform_attention(keys)
    assert fast.status == ref.status and fast.proof == ref.proof  # same status; infeasible: the same pairs
    assert check_uniform(keys, fast) == (True, "")  # feasible: any checked null direction


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("N,n,d", [(3, 6, 3), (6, 8, 3), (2, 5, 4), (4, 12, 2), (5, 4, 4)])
def test_layernorm_statuses_equal_the_reference(seed, N, n, d):
    rng = np.random.default_rng(100 + seed)
    qs = _layer(rng, n, d, zero_beta=seed % 2 == 0)
    keys = rng.normal(size=(N, d))
    if seed % 4 == 1:
        keys = keys * 1e3  # large keys: the least-norm solution may leave the ball
    fast, ref = uniform_attention(keys, qs), reference_uniform_attention(keys, qs)
    assert fast.status == ref.status
    if fast.status == "feasible":  # the least-norm solution is unique: the same query
        assert fast.query == ref.query
    assert check_uniform(keys, fast) == (True, "")
    assert check_uniform(keys, ref) == (True, "")


def test_a_wrong_least_norm_proof_is_refuted():
    rng = np.random.default_rng(3)
    # a tiny gain: moving the query off q0 needs a u far outside the ball
    qs = LayerNormQuerySet(rng.normal(size=6) * 1e-3, np.zeros(6), rng.normal(size=(3, 6)), [1.0, 2.0, 3.0])
    keys = rng.normal(size=(2, 3))
    answer = uniform_attention(keys, qs).to_json()
    assert answer["status"] == "infeasible" and answer["proof"]["kind"] == "least-norm solution outside the ball"
    assert reference_uniform_attention(keys, qs).status == "infeasible"
    assert check_uniform(keys, answer) == (True, "")
    answer["proof"]["y"] = ["0"] * len(answer["proof"]["y"])
    ok, message = check_uniform(keys, answer)
    assert not ok and "does not solve" in message


@pytest.mark.parametrize("seed", range(6))
def test_compact_answers_keep_the_status_and_are_not_taken_as_proofs(seed):
    rng = np.random.default_rng(200 + seed)
    qs = _layer(rng, 10, 4)
    keys = rng.normal(size=(3, 4))
    full, compact = uniform_attention(keys, qs), uniform_attention(keys, qs, compact=True)
    assert full.status == compact.status == "feasible" and compact.query is None
    assert check_uniform(keys, full) == (True, "")
    assert not check_uniform(keys, compact)[0]  # a status without its query proves nothing


@pytest.mark.parametrize("seed", range(4))
def test_compact_answers_with_a_radius_carry_w_and_check(seed):
    rng = np.random.default_rng(300 + seed)
    base = _layer(rng, 10, 4)
    qs = LayerNormQuerySet(base.gamma, base.beta, base.W_q, base.b_q, base.eps, radius=1e6)
    keys = rng.normal(size=(3, 4))
    full, compact = uniform_attention(keys, qs), uniform_attention(keys, qs, compact=True)
    assert full.status == compact.status == "feasible" and full.query == compact.query
    data = compact.to_json()
    assert "w" in data and "u" not in data
    assert check_uniform(keys, data) == (True, "")
    data["w"] = [str(2 * Fraction(x)) for x in data["w"]]
    assert not check_uniform(keys, data)[0]


def test_fewer_differences_than_dimensions_is_a_proof_for_free_queries():
    keys = np.random.default_rng(5).normal(size=(4, 6))
    compact = uniform_attention(keys, compact=True).to_json()
    assert compact["status"] == "feasible" and compact["query"] is None
    assert check_uniform(keys, compact) == (True, "")
    assert reference_uniform_attention(keys).status == "feasible"
    wide = np.random.default_rng(5).normal(size=(8, 6))
    assert not check_uniform(wide, dict(compact, n_keys=8))[0]


def _compact_cases():
    for seed in range(8):
        for N, n, d in [(3, 6, 3), (6, 8, 3), (2, 5, 4), (4, 12, 2), (5, 4, 4)]:
            rng = np.random.default_rng(100 + seed)
            qs = _layer(rng, n, d, zero_beta=seed % 2 == 0)
            keys = rng.normal(size=(N, d)) * (1e3 if seed % 4 == 1 else 1.0)
            yield keys, qs
        rng = np.random.default_rng(300 + seed)
        small = 10.0 ** -(seed % 4)  # small gains: the least-norm query may leave the ball
        qs = LayerNormQuerySet(rng.normal(size=6) * small, np.zeros(6), rng.normal(size=(3, 6)), [1.0, 2.0, 3.0])
        yield rng.normal(size=(2, 3)), qs


@pytest.mark.parametrize("precision", [320, 4])
def test_compact_statuses_equal_the_exact_ones_whether_balls_decide_or_not(precision, monkeypatch):
    import lnproofs.propose.uniform_norm as uniform_norm

    monkeypatch.setattr(uniform_norm, "BALL_PRECS", (precision,))
    monkeypatch.setattr(uniform_norm, "_float_first", lambda *a: None)  # the balls, not the float bounds
    seen = {}
    for keys, qs in _compact_cases():
        full, compact = uniform_attention(keys, qs), uniform_attention(keys, qs, compact=True)
        assert compact.status == full.status
        if (compact.proof or {}).get("kind") != "independent differences":
            by = compact.extras.get("decided_by", "exact")
            seen[(compact.status, by)] = seen.get((compact.status, by), 0) + 1
    if precision == 320:  # the balls decide both ways
        assert seen.get(("feasible", "arb balls")) and seen.get(("infeasible", "arb balls"))
        assert not seen.get(("feasible", "exact")) and not seen.get(("infeasible", "exact"))
    else:  # 4-bit balls are mostly too wide: the exact path answers those
        assert seen.get(("feasible", "exact"))


@pytest.mark.parametrize("seed", range(6))
def test_dependent_differences_fall_back_to_independent_rows(seed):
    """Fewer differences than dimensions but not independent (a repeated key): the ball solve on
    every row cannot prove its Gram matrix invertible, and the independent rows decide, as the
    exact search does."""
    rng = np.random.default_rng(500 + seed)
    qs = _layer(rng, 8, 5)
    keys = rng.normal(size=(4, 5)) * (1e2 if seed % 2 else 1.0)
    keys[3] = keys[1]  # difference rows 0 and 2 are equal
    full, compact = uniform_attention(keys, qs), uniform_attention(keys, qs, compact=True)
    assert compact.status == full.status and compact.extras.get("decided_by") == "arb balls"
