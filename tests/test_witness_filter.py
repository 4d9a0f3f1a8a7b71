"""The float filter of the kernel's witness check against exact arithmetic, for every kind of
witness entry (floats, long rationals rounded to floats, large integers), and the work of
checking long-digit witnesses: linear in the certificate, never an exact product per key."""

import json
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lnproofs.certificates.certificate import Certificate
from lnproofs.certificates.check import check_certificate
from lnproofs.kernel import ExactKeys, KeyResult, check_claims, check_witnesses


def _reference(keys, i, q, mode):
    """The claim decided in Fraction arithmetic alone."""
    score = [sum(Fraction(a) * Fraction(b) for a, b in zip(q, row)) for row in keys.tolist()]
    others = score[:i] + score[i + 1 :]
    if mode == "strict":
        return all(score[i] > s for s in others)
    return all(score[i] >= s for s in others) and (not others or any(score[i] > s for s in others))


def _entries(rng, d, kind):
    base = rng.integers(-3, 4, size=d) * 2.0 ** rng.integers(-40, 40, size=d)
    if kind == "float":
        return tuple(float(x) for x in base)
    if kind == "rational":  # long digits, a different denominator per entry
        return tuple(
            Fraction(float(x)) + Fraction(int(rng.integers(-5, 6)), 10**60 + 7 * c + 1) for c, x in enumerate(base)
        )
    if kind == "integer":  # past 2**53: float(int) rounds
        return tuple(int(x * 2**40) * 2**30 + int(rng.integers(-3, 4)) for x in base)
    return tuple(Fraction(float(x)) if c % 2 else float(x) for c, x in enumerate(base))  # mixed


def _hostile_keys(rng, n, d, keyset):
    """n keys in R^d of one hostile kind: dyadic entries of wide exponents, and then twins, near-ties
    2^-60 apart, subnormal entries, one float32 step apart, twins but for the sign of their zeros,
    zero keys, products past the float range, or Gaussian float32 numbers."""
    keys = rng.integers(-4, 5, size=(n, d)) * 2.0 ** rng.integers(-30, 30, size=(n, d))
    if keyset == "twins":
        keys[1::2] = keys[0::2][: len(keys[1::2])]
    elif keyset == "near" and n > 1:
        keys[1] = keys[0] + 2.0**-60 * rng.integers(-2, 3, size=d)
    elif keyset == "tiny":
        keys[0] *= 2.0**-1060  # subnormal entries: never the filter
    elif keyset == "ulp32" and n > 1:  # one float32 step apart: the single-precision filter's edge
        keys[1] = np.nextafter(keys[0].astype(np.float32), np.float32(np.inf)).astype(np.float64)
    elif keyset == "signed zeros" and n > 1:  # twins but for the sign of their zeros
        keys[0, ::2] = 0.0
        keys[1] = np.where(keys[0] == 0, -0.0, keys[0])
    elif keyset == "zeros":
        keys[: max(1, n // 2)] = 0.0
    elif keyset == "huge":
        keys[-1] *= 2.0**990  # products past the float range: the filters decline
    elif keyset == "float32":
        keys = rng.normal(size=(n, d)).astype(np.float32).astype(np.float64)
    return keys


@settings(max_examples=150, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 7),
    st.integers(1, 5),
    st.sampled_from(["float", "rational", "integer", "mixed"]),
    st.sampled_from(["strict", "tie"]),
    st.sampled_from(["plain", "twins", "near", "tiny", "ulp32", "signed zeros"]),
)
def test_the_filter_and_the_exact_path_agree_with_fraction_arithmetic(seed, n, d, kind, mode, keyset):
    """Whatever settles a pair (the filter or the integers), the verdict is the exact one."""
    rng = np.random.default_rng(seed)
    keys = _hostile_keys(rng, n, d, keyset)
    i = int(rng.integers(n))
    q = _entries(rng, d, kind)
    got = check_witnesses(keys, [(i, q)], mode=mode)[0]
    assert (got is None) == (_reference(keys, i, q, mode) or (mode == "tie" and n == 1))


def test_float32_keys_are_multiplied_in_single_precision_and_decided_the_same():
    """Keys that are all normal float32 numbers are marked single (the self filter's products in float32,
    block by block); one key off the float32 grid, or a float32-subnormal entry, keeps doubles.  The self
    filter and the witness check (doubles) decide their own witnesses as Fraction arithmetic does."""
    from lnproofs.kernel import self_filter

    rng = np.random.default_rng(3)
    K = rng.standard_normal((300, 24)).astype(np.float32).astype(np.float64)
    assert ExactKeys(K).single is True
    items = [(i, K[i]) for i in range(len(K))] + [(i, -K[i]) for i in range(5)]
    off = K.copy()
    off[7, 3] = 1 / 3
    tiny = K.copy()
    tiny[2, 2] = 2.0**-130
    assert ExactKeys(off).single is False and ExactKeys(tiny).single is False
    for keys in (K, off, tiny):
        got = check_witnesses(keys, items)
        expected = [_reference(keys, i, q, "strict") for i, q in items]
        assert [m is None for m in got] == expected
        signs = self_filter(keys, np.arange(len(keys)))
        assert all(s == 0 or (s == 1) == e for s, e in zip(signs.tolist(), expected)) and (signs != 0).sum() > 250


def _long_digit_certificate(n, d, digits=300):
    """Keys on the unit sphere (every key selectable, clearly) and witnesses with ``digits``-digit
    denominators, one per entry: the certificates whose check cost N^2 d before."""
    rng = np.random.default_rng(n)
    keys = rng.standard_normal((n, d))
    keys /= np.linalg.norm(keys, axis=1, keepdims=True)
    results = [
        KeyResult(
            i,
            "selectable",
            tuple(Fraction(float(x)) + Fraction(1, 10**digits + 7 * c + i) for c, x in enumerate(keys[i])),
            verified="exact",
        )
        for i in range(n)
    ]
    return keys, Certificate(n, d, {"kind": "free"}, tuple(results))


@pytest.mark.parametrize("n", [10, 40, 160])
def test_long_digit_witnesses_take_no_exact_product_per_key(monkeypatch, n):
    """Counted, not timed: checking a certificate of long-digit witnesses computes no exact score
    vector (each would cost N d products of long integers, N^2 d for the certificate), whatever N;
    the float filter settles every pair from the witnesses' rounded floats."""
    calls = []
    exact = ExactKeys.int_scores

    def counted(self, Q):
        calls.append(len(Q))
        return exact(self, Q)

    monkeypatch.setattr(ExactKeys, "int_scores", counted)
    keys, cert = _long_digit_certificate(n, 6)
    assert all(v.ok for v in check_claims(json.loads(cert.dumps()), keys))
    assert check_certificate(cert.dumps(), keys).ok
    assert calls == []


def test_a_rational_witness_that_ties_is_still_decided_exactly(monkeypatch):
    """A witness that ties two keys exactly (no float can settle it) goes to the integers, once."""
    calls = []
    exact = ExactKeys.int_scores
    monkeypatch.setattr(ExactKeys, "int_scores", lambda self, Q: calls.append(1) or exact(self, Q))
    keys = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]])
    tie = (Fraction(1, 3**200) * 3**200, Fraction(10**80 + 1, 10**80 + 1))  # q = (1, 1): k_0, k_1 tie
    assert "q.k_0 - q.k_1 = 0" in check_witnesses(keys, [(0, tie)])[0]
    assert check_witnesses(keys, [(0, tie)], mode="tie") == [None]
    assert len(calls) == 2


def test_a_tie_with_byte_equal_twins_is_settled_by_the_filter(monkeypatch):
    """Keys equal float for float (a zero of either sign as 0.0) score the same under any query,
    so a tie claim whose only equal rivals are such twins needs no exact product; a strict claim
    against a twin is still refused (exactly), and a tie with only twins as rivals has no key
    strictly below."""
    calls = []
    exact = ExactKeys.int_scores
    monkeypatch.setattr(ExactKeys, "int_scores", lambda self, Q: calls.append(1) or exact(self, Q))
    keys = np.array([[1.0, 0.0, 2.0], [0.5, -3.0, 1.0], [1.0, -0.0, 2.0], [1.0, 0.0, 2.0]])
    q = (0.75, 0.125, 1.5)
    assert check_witnesses(keys, [(0, q), (2, q), (3, q)], mode="tie") == [None, None, None]
    assert calls == []
    assert "q.k_0 - q.k_2 = 0" in check_witnesses(keys, [(0, q)])[0] and calls == [1]
    assert "strictly below" in check_witnesses(keys[[0, 2]], [(0, q)], mode="tie")[0]


@settings(max_examples=120, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 6),
    st.integers(2, 5),
    st.sampled_from(["strict", "tie"]),
    st.sampled_from(["plain", "twins", "constant", "scaled"]),
    st.sampled_from(["float", "rational", "integer"]),
)
def test_the_layernorm_input_filter_agrees_with_its_exact_comparisons(seed, N, n, mode, inputs, kind):
    """Keys given as LayerNorm inputs: the verdicts with the float filter are those of the exact
    square-root comparisons alone (the filter switched off on a second copy of the same keys)."""
    from lnproofs.kernel import ExactLayerNormKeys, LayerNormKeys, check_ln_witnesses

    rng = np.random.default_rng(seed)
    X = rng.integers(-3, 4, size=(N, n)) * 2.0 ** rng.integers(-20, 20, size=(N, 1))
    if inputs == "twins":
        X[1::2] = X[0::2][: len(X[1::2])] * 2.0
    elif inputs == "constant":
        X[0] = 1.5  # undefined with eps 0
    elif inputs == "scaled":
        X *= 2.0**600
    spec = LayerNormKeys(tuple(float(g) for g in rng.integers(1, 4, size=n)), None, float(rng.choice([0.0, 1e-5])))
    fast, slow = ExactLayerNormKeys(X, spec), ExactLayerNormKeys(X, spec)
    slow.filter_ok[:] = False
    items = []
    for t in range(N):
        q = fast.z[t] if t % 2 else rng.standard_normal(n)
        if kind == "rational":
            q = [Fraction(float(x)) + Fraction(1, 10**40 + c) for c, x in enumerate(q)]
        elif kind == "integer":
            q = [int(x * 2**60) + 1 for x in q]  # past 2**53: float(int) rounds
        items.append((t, tuple(float(x) for x in q) if kind == "float" else tuple(q)))
    assert check_ln_witnesses(fast, items, mode=mode) == check_ln_witnesses(slow, items, mode=mode)


def test_integer_witness_entries_past_two_to_the_53_stay_exact():
    """A witness given with integers keeps them: past 2**53 as rationals, never rounded to floats."""
    big = 2**60 + 1
    result = KeyResult(0, "selectable", (big, np.int64(3), 0.5))
    assert result.witness == (Fraction(big), 3.0, 0.5) and type(result.witness[0]) is Fraction
    keys = np.array([[2.0**-60, 0.0, 0.0], [0.0, 0.0, 2.0]])
    # exactly q.k_0 = 1 + 2**-60 > q.k_1 = 1; with big rounded to 2**60 the two would tie
    assert check_witnesses(keys, [(0, result.witness)]) == [None]
    assert check_witnesses(keys, [(0, (2.0**60, 3.0, 0.5))])[0] is not None


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 9),
    st.integers(1, 5),
    st.sampled_from(["plain", "twins", "near", "tiny", "ulp32", "signed zeros", "zeros", "huge", "float32"]),
    st.sampled_from([1, 2, 3, 64]),
    st.booleans(),
)
def test_the_self_filter_never_contradicts_fraction_arithmetic(seed, n, d, keyset, block, every):
    """Every key's own witness: 1 only where q = k_i wins strictly, -1 only where a rival beats it,
    on the symmetric road (every key) and on the rows road, for any block size."""
    from lnproofs.kernel import self_filter

    rng = np.random.default_rng(seed)
    keys = _hostile_keys(rng, n, d, keyset)
    rows = np.arange(n) if every else np.sort(rng.choice(n, size=max(1, n // 2), replace=False))
    got = self_filter(keys, rows, block=block)
    for i, sign in zip(rows.tolist(), got.tolist()):
        wins = _reference(keys, i, keys[i], "strict")
        rival = any(
            sum(Fraction(a) * Fraction(b) for a, b in zip(keys[i], keys[j]))
            > sum(Fraction(a) * Fraction(a) for a in keys[i])
            for j in range(n)
            if j != i
        )
        assert sign == 0 or (sign == 1 and wins) or (sign == -1 and rival), (i, sign, wins, rival)
