"""Equal rows read from their bytes (``lnproofs.propose.twins``) give what ``np.unique`` over
rows gives, class for class and in the same order, signed zeros and wide rows included."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from lnproofs.propose.twins import row_classes

# few distinct values, so that rows repeat and first columns tie
VALUES = st.sampled_from([-2.0, -0.0, 0.0, 0.5, 1.0, 1e300, -5e-324, 3.0])


def reference(A):
    _, first, inverse, counts = np.unique(A + 0.0, axis=0, return_index=True, return_inverse=True, return_counts=True)
    return first, inverse.reshape(-1), counts


@given(
    st.integers(1, 9).flatmap(lambda n: arrays(np.float64, st.tuples(st.integers(1, 12), st.just(n)), elements=VALUES))
)
def test_row_classes_agree_with_unique_over_rows(A):
    for got, want in zip(row_classes(A), reference(A)):
        assert np.array_equal(got, want)


def test_wide_rows_with_twins_and_signed_zeros():
    rng = np.random.default_rng(7)
    A = rng.standard_normal((20, 384))
    A[5] = A[2]
    A[9] = A[2]
    A[11, 0] = A[3, 0]  # a tie in the first column, rows distinct
    A[12] = A[4]
    A[4, 7], A[12, 7] = 0.0, -0.0  # twins up to the sign of a zero
    first, inverse, counts = row_classes(A)
    assert counts.sum() == 20 and len(first) == 17
    assert inverse[2] == inverse[5] == inverse[9] and inverse[4] == inverse[12] and inverse[3] != inverse[11]
    for got, want in zip((first, inverse, counts), reference(A)):
        assert np.array_equal(got, want)


def test_empty_and_zero_width_arrays_follow_unique():
    for A in (np.zeros((0, 3)), np.zeros((4, 0))):
        for got, want in zip(row_classes(A), reference(A)):
            assert np.array_equal(got, want)
