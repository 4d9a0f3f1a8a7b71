"""The exact integer forms of float arrays (kernel/dyadic.py): ``M * 2**e == values`` exactly."""

from fractions import Fraction

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from lnproofs.kernel.dyadic import dyadic_integers, fmpq_matrix, integer_matrix

FLOATS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),                      # every exponent, subnormals
    st.floats(min_value=-4.0, max_value=4.0, allow_nan=False),
    st.floats(width=32, allow_nan=False, allow_infinity=False),            # float32 values, widened
    st.sampled_from([0.0, -0.0, 5e-324, -5e-324, 2.0 ** -1022, 1.7976931348623157e308, 1.0, -3.0]))


def _exact(ints, e):
    return [Fraction(m) * Fraction(2) ** e for m in ints]


@given(st.lists(FLOATS, max_size=40))
def test_dyadic_integers_are_exact(values):
    ints, e = dyadic_integers(values)
    assert all(type(m) is int for m in ints)
    assert _exact(ints, e) == [Fraction(v) for v in values]
    nonzero = [m for m in ints if m]
    assert not nonzero or any(m % 2 for m in nonzero)                       # e is the largest such exponent


@given(st.lists(st.floats(width=32, allow_nan=False, allow_infinity=False, min_value=-2.0, max_value=2.0),
                min_size=1, max_size=60), st.integers(1, 6))
def test_float32_matrices_take_the_int64_path_and_stay_exact(values, cols):
    arr = np.array(values, dtype=np.float32).astype(np.float64)
    arr = arr[: len(arr) // cols * cols].reshape(-1, cols) if len(arr) >= cols else arr.reshape(1, -1)
    M, e = integer_matrix(arr)
    assert (M.nrows(), M.ncols()) == arr.shape
    assert _exact([int(x) for x in M.entries()], e) == [Fraction(float(v)) for v in arr.ravel()]
    Q = fmpq_matrix(arr)
    assert [Fraction(int(x.p), int(x.q)) for x in Q.entries()] == [Fraction(float(v)) for v in arr.ravel()]


def test_wide_spread_uses_python_integers_exactly():
    values = [1e300, -5e-324, 0.0, 3.0, -2.0 ** -600, 2.0 ** 60 + 2.0 ** 8]
    ints, e = dyadic_integers(np.array(values))
    assert e == -1074 and max(abs(m) for m in ints).bit_length() > 63
    assert _exact(ints, e) == [Fraction(v) for v in values]


def test_all_zero_arrays():
    assert dyadic_integers(np.zeros(3)) == ([0, 0, 0], 0)
    assert dyadic_integers([]) == ([], 0)
