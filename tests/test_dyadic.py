"""The exact integer forms of float arrays (kernel/dyadic.py): ``M * 2**e == values`` exactly,
and the fast integer matrix equal to the one made entry by entry."""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lnproofs.kernel.dyadic as dyadic
from lnproofs.kernel import dyadic_integers, fmpq_matrix, integer_matrix

FLOATS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),  # every exponent, subnormals
    st.floats(min_value=-4.0, max_value=4.0, allow_nan=False),
    st.floats(width=32, allow_nan=False, allow_infinity=False),  # float32 values, widened
    st.sampled_from([0.0, -0.0, 5e-324, -5e-324, 2.0**-1022, 1.7976931348623157e308, 1.0, -3.0]),
)


def _exact(ints, e):
    return [Fraction(int(m)) * Fraction(2) ** e for m in ints]


@given(st.lists(FLOATS, max_size=40))
def test_dyadic_integers_are_exact(values):
    ints, e = dyadic_integers(values)
    assert all(type(m) is int for m in ints)
    assert _exact(ints, e) == [Fraction(v) for v in values]


@given(st.lists(FLOATS, min_size=1, max_size=40), st.integers(1, 5))
def test_integer_matrix_is_the_entrywise_one(values, cols):
    arr = np.array(values + [0.0] * (-len(values) % cols)).reshape(-1, cols)
    M, e = integer_matrix(arr)
    ints, base = dyadic_integers(arr)
    assert (M.nrows(), M.ncols()) == arr.shape and e == base
    assert [int(x) for x in M.entries()] == ints
    assert _exact(M.entries(), e) == [Fraction(float(v)) for v in arr.ravel()]


@given(
    st.lists(
        st.floats(width=32, allow_nan=False, allow_infinity=False, min_value=-2.0, max_value=2.0),
        min_size=1,
        max_size=60,
    ),
    st.integers(1, 6),
)
def test_float32_matrices_take_the_int64_path_and_stay_exact(values, cols):
    arr = np.array(values, dtype=np.float32).astype(np.float64)
    arr = np.concatenate([arr, np.zeros(-len(arr) % cols)]).reshape(-1, cols)
    reference = dyadic_integers(arr)
    with pytest.MonkeyPatch.context() as mp:  # the entry-by-entry path is not used
        mp.setattr(dyadic, "dyadic_integers", lambda *_: (_ for _ in ()).throw(AssertionError("slow path")))
        if np.any(arr != 0) and _spread(arr) <= 62:
            M, e = integer_matrix(arr)
            assert ([int(x) for x in M.entries()], e) == reference
    Q = fmpq_matrix(arr)
    assert [Fraction(int(x.p), int(x.q)) for x in Q.entries()] == [Fraction(float(v)) for v in arr.ravel()]


def _spread(arr):
    """``top - low``: every nonzero |value| < 2**top and is a multiple of 2**low."""
    fr = [Fraction(float(v)) for v in arr.ravel() if v]
    top = max(abs(f.numerator).bit_length() - f.denominator.bit_length() + 1 for f in fr)
    low = min((f.numerator & -f.numerator).bit_length() - f.denominator.bit_length() for f in fr)
    return top - low


def test_wide_spread_uses_python_integers_exactly():
    values = np.array([[1e300, -5e-324, 0.0], [3.0, -(2.0**-600), 2.0**60 + 2.0**8]])
    M, e = integer_matrix(values)
    assert e == dyadic_integers(values)[1] == -1126 and max(abs(int(m)) for m in M.entries()).bit_length() > 63
    assert _exact(M.entries(), e) == [Fraction(v) for v in values.ravel()]


def test_all_zero_arrays():
    assert dyadic_integers(np.zeros(3)) == ([0, 0, 0], 0)
    assert dyadic_integers([]) == ([], 0)
    M, e = integer_matrix(np.zeros((2, 2)))
    assert e == 0 and not any(M.entries())


def test_a_float32_weight_matrix_takes_the_int64_path(monkeypatch):
    arr = np.random.default_rng(0).standard_normal((8, 300)).astype(np.float32).astype(np.float64)
    reference = dyadic_integers(arr)
    monkeypatch.setattr(dyadic, "dyadic_integers", lambda *_: (_ for _ in ()).throw(AssertionError("slow path")))
    M, e = integer_matrix(arr)
    assert ([int(x) for x in M.entries()], e) == reference
