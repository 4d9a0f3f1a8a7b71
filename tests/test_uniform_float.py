"""The float64 decision of the compact uniform question (``propose/uniform_float.py``) gives the
exact status whenever it gives one, also at the ball's boundary and for nearly dependent keys,
and it gives one for ordinary heads (so the runs do not fall back to the balls)."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lnproofs.kernel import ExactQueryMap, LayerNormQuerySet, RotaryLayerNormQuerySet
from lnproofs.models.head_sets import positioned_map
from lnproofs.propose.uniform import uniform_attention
from lnproofs.propose.uniform_float import float_data, float_decision, rotated_data


def _set(rng, n, d, gain_scale=1.0):
    return LayerNormQuerySet(
        rng.normal(size=n) * gain_scale,
        rng.normal(size=n) * 0.1,
        rng.normal(size=(d, n)),
        rng.normal(size=d) * 0.1,
        1e-5,
    )


def _float(keys, qs):
    return float_decision(keys, *float_data(*ExactQueryMap(qs).gram()), qs.width)


def _exact(keys, qs):
    answer = uniform_attention(keys, qs)  # the exact rationals (no compact shortcut)
    return answer.status, answer.extras.get("least_norm_squared")


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(4, 10), d=st.integers(2, 6), data=st.data())
def test_a_float_decision_is_the_exact_status(seed, n, d, data):
    N = data.draw(st.integers(2, d))
    rng = np.random.default_rng(seed)
    qs = _set(rng, n, d, gain_scale=10.0 ** data.draw(st.integers(-3, 2)))
    keys = rng.normal(size=(N, d)) * 10.0 ** data.draw(st.integers(-4, 4))
    decided = _float(keys, qs)
    if decided is not None:
        assert decided[0] == _exact(keys, qs)[0]


def test_ordinary_heads_are_decided_both_ways():
    seen = set()
    for seed in range(40):
        rng = np.random.default_rng(seed)
        qs = _set(rng, 12, 6, gain_scale=[1.0, 0.01][seed % 2])
        keys = rng.normal(size=(4, 6)) * [1.0, 30.0][seed % 4 // 2]
        decided = _float(keys, qs)
        assert decided is not None, seed
        status, norm2 = _exact(keys, qs)
        assert decided[0] == status and abs(decided[1] - norm2) <= 1e-9 * norm2
        seen.add(status)
    assert seen == {"feasible", "infeasible"}


@pytest.mark.parametrize("seed", range(6))
def test_at_the_ball_boundary_it_gives_the_exact_status_or_none(seed):
    """Gains scaled by ``s`` scale ``||u*||^2`` by ``1 / s^2``: put it within a few units in the
    last place of ``n`` (the bounds must refuse or be right), then a millionth away (they decide)."""
    rng = np.random.default_rng(700 + seed)
    n, d = 10, 5
    base = _set(rng, n, d)
    keys = rng.normal(size=(3, d)) * 20
    _, norm2 = _exact(keys, base)
    for relative, must_decide in [(0.0, False), (2e-16, False), (-2e-16, False), (1e-6, True), (-1e-6, True)]:
        s = float(np.sqrt(norm2 / n * (1 + relative)))
        qs = LayerNormQuerySet(np.asarray(base.gamma) * s, base.beta, base.W_q, base.b_q, base.eps)
        decided, (status, _) = _float(keys, qs), _exact(keys, qs)
        assert decided is None or decided[0] == status, relative
        if must_decide:
            assert decided is not None and decided[0] == status


@pytest.mark.parametrize("gap", [0.0, 1e-300, 1e-30, 1e-12])
def test_nearly_dependent_keys_are_refused_or_right(gap):
    rng = np.random.default_rng(11)
    qs = _set(rng, 9, 5)
    keys = rng.normal(size=(4, 5))
    keys[3] = keys[1] + gap  # difference rows 0 and 2 (nearly) equal
    decided = _float(keys, qs)
    assert decided is None or decided[0] == _exact(keys, qs)[0]
    if gap == 0.0:
        assert decided is None  # G is singular: nothing is proved


def test_compact_runs_name_the_float_bounds():
    rng = np.random.default_rng(3)
    qs = _set(rng, 12, 6)
    keys = rng.normal(size=(4, 6))
    compact = uniform_attention(keys, qs, compact=True)
    assert compact.extras["decided_by"] == "float64 bounds"
    assert compact.status == _exact(keys, qs)[0]


@pytest.mark.parametrize("seed", range(4))
def test_ill_conditioned_keys_at_the_boundary_are_refused_or_right(seed):
    """Nearly dependent differences make the float solve lose digits: near the boundary the
    bounds must widen with them (the error of the solve and of G are both needed here)."""
    rng = np.random.default_rng(900 + seed)
    n, d = 10, 5
    base = _set(rng, n, d)
    keys = rng.normal(size=(4, d)) * 20
    keys[3] = keys[1] + rng.normal(size=d) * 1e-7  # G has a condition number near 1e14
    _, norm2 = _exact(keys, base)
    wrong = 0
    for relative in np.geomspace(1e-15, 1e-3, 25):
        for sign in (1, -1):
            s = float(np.sqrt(norm2 / n * (1 + sign * relative)))
            qs = LayerNormQuerySet(np.asarray(base.gamma) * s, base.beta, base.W_q, base.b_q, base.eps)
            decided = _float(keys, qs)
            wrong += decided is not None and decided[0] != _exact(keys, qs)[0]
    assert wrong == 0


def _rotary(rng, n, d, position, gain_scale=1.0):
    angles = position / 10000.0 ** (np.arange(d // 2) / (d // 2))
    cos, sin = np.concatenate([np.cos(angles)] * 2), np.concatenate([np.sin(angles)] * 2)
    return RotaryLayerNormQuerySet(
        rng.normal(size=n) * gain_scale,
        rng.normal(size=(d, n)),
        rng.normal(size=d) * 0.1,
        1e-5,
        beta=rng.normal(size=n) * 0.1,
        rotation=(cos, sin, "half", position),
    )


@pytest.mark.parametrize("seed", range(6))
def test_a_rotary_position_rotated_in_floats_holds_the_exact_forms_within_its_bounds(seed):
    from fractions import Fraction

    from flint import fmpq

    def exact(x):  # a float as an exact rational
        f = Fraction(float(x))
        return fmpq(f.numerator, f.denominator)

    rng = np.random.default_rng(40 + seed)
    n, d = 12, 6
    at = _rotary(rng, n, d, position=3 + 50 * seed)
    base = ExactQueryMap(dataclasses.replace(at, rotation=None))
    Hf, eH, qf, eq = rotated_data(positioned_map(base, at).R, float_data(*base.gram()))
    Hn, c, q0 = ExactQueryMap(at).gram()  # the position's exact forms, built alone
    for i in range(d):
        assert abs(q0[i, 0] - exact(qf[i])) <= exact(eq[i])
        for j in range(d):
            assert abs(Hn[i, j] * c - exact(Hf[i, j])) <= exact(eH[i, j])
    assert (eH > 0).all() and (eH <= 1e-12 * np.abs(Hf).max()).all()  # bounds, and tight ones


@pytest.mark.parametrize("seed", range(10))
def test_rotary_compact_answers_are_the_exact_status(seed):
    rng = np.random.default_rng(60 + seed)
    n, d = 12, 6
    at = _rotary(rng, n, d, position=7 + seed, gain_scale=[1.0, 0.01][seed % 2])
    base = ExactQueryMap(dataclasses.replace(at, rotation=None))
    keys = rng.normal(size=(4, d)) * [1.0, 30.0][seed % 4 // 2]
    compact = uniform_attention(keys, at, query_map=positioned_map(base, at), compact=True)
    assert compact.extras["decided_by"] == "float64 bounds"
    assert compact.status == uniform_attention(keys, at).status


@pytest.mark.parametrize("seed", range(6))
def test_more_differences_than_dimensions_give_the_exact_answer_and_proof(seed, monkeypatch):
    import lnproofs.propose.integer_keys as integer_keys
    import lnproofs.propose.uniform_norm as uniform_norm
    from lnproofs.propose.integer_keys import key_differences
    from lnproofs.propose.uniform import check_uniform
    from lnproofs.propose.uniform_float import first_differences_independent

    rng = np.random.default_rng(80 + seed)
    d = 5
    qs = _set(rng, 9, d)
    keys = rng.normal(size=(d + 3, d)) * 10.0 ** (seed - 3)
    if seed % 3 == 2:
        keys[3] = keys[1] + 1e-9 * keys[2]  # nearly dependent: refused, or proved right
    calls = []
    monkeypatch.setattr(uniform_norm, "key_differences", lambda *a, **k: calls.append(1) or key_differences(*a, **k))
    monkeypatch.setattr(integer_keys, "key_differences", lambda *a, **k: calls.append(1) or key_differences(*a, **k))
    for query_set in (None, qs):
        answer = uniform_attention(keys, query_set, compact=True)
        exact = uniform_attention(keys, query_set)
        assert answer.status == exact.status == "infeasible" and answer.proof == exact.proof
        assert check_uniform(keys, answer) == (True, "")
    if seed % 3 != 2:
        assert first_differences_independent(keys) and not calls  # decided without the integers


def test_dependent_first_differences_are_not_claimed_independent():
    from lnproofs.propose.uniform import check_uniform
    from lnproofs.propose.uniform_float import first_differences_independent

    for seed in range(1, 7):
        # dyadic keys with k_5 - k_0 = 3 (k_1 - k_0) - 2 (k_2 - k_0) exactly: float LU does not see the
        # zero pivot (rounding leaves a tiny one), the bound must
        rng = np.random.default_rng(seed)
        keys = rng.integers(-50, 50, size=(8, 5)) * 0.375 + 0.125
        keys[5] = keys[1] * 3 - keys[2] * 2
        assert not first_differences_independent(keys), seed
    rng = np.random.default_rng(9)
    keys = rng.normal(size=(8, 5))
    keys[4] = keys[2]  # differences 2 and 4 equal: the first five dependent
    assert not first_differences_independent(keys)
    answer = uniform_attention(keys, compact=True)
    assert answer.status == "infeasible" and answer.proof["pairs"] != [[j + 1, 0] for j in range(5)]
    assert check_uniform(keys, answer) == (True, "")


@pytest.mark.parametrize("seed", range(6))
def test_without_an_offset_the_answer_is_the_exact_roads(seed, monkeypatch):
    """q0 = 0 (no biases, as in randomly initialised models): u* = 0, and with fewer differences
    than dimensions the exact road answers feasible; the shortcut gives that same answer,
    for a set at a rotary position too."""
    import lnproofs.propose.uniform_norm as uniform_norm

    rng = np.random.default_rng(120 + seed)
    n, d = 10, 6
    plain = LayerNormQuerySet(rng.normal(size=n), np.zeros(n), rng.normal(size=(d, n)), np.zeros(d), 1e-5)
    at = dataclasses.replace(_rotary(rng, n, d, position=5 + seed), beta=np.zeros(n), b_q=np.zeros(d))
    keys = rng.normal(size=(1 + seed % 5, d))
    for qs, qmap in ((plain, None), (at, positioned_map(ExactQueryMap(dataclasses.replace(at, rotation=None)), at))):
        quick = uniform_attention(keys, qs, query_map=qmap, compact=True).to_json()
        with monkeypatch.context() as m:
            m.setattr(uniform_norm, "_float_first", lambda *a: None)
            exact = uniform_attention(keys, qs, compact=True).to_json()
        assert quick == exact and quick["status"] == "feasible"
