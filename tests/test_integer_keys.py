"""The searches' integer keys and key differences (numpy limbs) equal the kernel's, entry for
entry, on keys of every spread: float32-like, float64 over wide exponent ranges, zeros,
subnormals, one row, extremes, repeated keys."""

import numpy as np
import pytest

from lnproofs.kernel import difference_matrix, integer_matrix
from lnproofs.propose.integer_keys import integer_keys, key_differences


def _cases():
    rng = np.random.default_rng(3)
    yield rng.standard_normal((30, 32))
    yield rng.standard_normal((29, 32)).astype(np.float32).astype(np.float64)
    yield rng.standard_normal((40, 16)) * np.exp2(rng.integers(-60, 60, (40, 16)))
    yield rng.standard_normal((12, 8)) * np.exp2(rng.integers(-1000, 1000, (12, 8)))
    yield np.array([[5e-324, -5e-324, 0.0, 1.7976931348623157e308], [1.0, -2.0, 3.0, 2.0**-1074]])
    yield np.zeros((3, 4))
    yield np.array([[0.0, 0.0], [0.0, 2.0**60]])
    yield rng.standard_normal((1, 32))
    keys = rng.standard_normal((20, 8))
    keys[5] = keys[2]  # a repeated key: a zero difference row
    yield keys


@pytest.mark.parametrize("keys", list(_cases()), ids=lambda a: f"{a.shape[0]}x{a.shape[1]}")
def test_the_same_integers_as_the_kernel(keys):
    K, e = integer_keys(keys)
    K0, e0 = integer_matrix(keys)
    assert (K.nrows(), K.ncols()) == (K0.nrows(), K0.ncols()) and K == K0 and e == e0
    D, K1 = key_differences(keys)
    D0, K2 = difference_matrix(keys)
    assert (D.nrows(), D.ncols()) == (D0.nrows(), D0.ncols()) and D == D0 and K1 == K2
    D2, none = key_differences(keys, with_keys=False)
    assert none is None and (D2.nrows(), D2.ncols()) == (D0.nrows(), D0.ncols()) and D2 == D0


def test_both_roads_of_the_differences_are_taken():
    """The float limbs serve keys whose integers stay below 2**1000; wider spreads take the
    integer product, and both give the kernel's differences."""
    from lnproofs.propose.integer_keys import _float_limbs

    narrow, wide = list(_cases())[0], list(_cases())[3]
    assert _float_limbs(narrow) is not None and _float_limbs(wide) is None
    limbs = _float_limbs(narrow)
    assert len(limbs) >= 2 and all(np.abs(part).max() < 2.0**52 for part in limbs)
    for bad in (np.inf, np.nan):  # no limbs of a non-finite entry (and no endless loop)
        keys = narrow.copy()
        keys[3, 4] = bad
        assert _float_limbs(keys) is None


def test_a_changed_entry_changes_the_integers():
    keys = np.random.default_rng(4).standard_normal((6, 5)) * np.exp2(np.arange(30).reshape(6, 5))
    other = keys.copy()
    other[4, 3] = np.nextafter(other[4, 3], np.inf)
    assert integer_keys(other)[0] != integer_matrix(keys)[0]
    assert integer_keys(other)[0] == integer_matrix(other)[0]
