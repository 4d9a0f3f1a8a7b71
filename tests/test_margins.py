"""Witness margins in bulk (certificates/findings.py) are the floats of the one-by-one
reference (tests/reference/margins.py), for float and rational witnesses, ties and near ties."""

from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from reference.margins import witness_margins_one_by_one

from lnproofs.certificates.findings import witness_margins


def _same(a, b):
    return len(a) == len(b) and all(x == y or (x != x and y != y) for x, y in zip(a, b))


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(2, 40),
    st.integers(1, 70),
    st.sampled_from(["float32", "twins", "near", "wide"]),
)
def test_bulk_margins_equal_the_one_by_one_floats(seed, n, d, kind):
    rng = np.random.default_rng(seed)
    keys = rng.standard_normal((n, d))
    if kind == "float32":
        keys = keys.astype(np.float32).astype(np.float64)
    elif kind == "twins":
        keys[1::2] = keys[0::2][: len(keys[1::2])]
    elif kind == "near":
        keys[1] = keys[0] + 2.0**-50 * rng.standard_normal(d)
    else:
        keys *= 2.0 ** rng.integers(-60, 60, (n, 1))
    items = []
    for t in range(min(n, 12)):
        i = int(rng.integers(0, n))
        q = keys[i] + (0.0 if t % 3 == 0 else 0.1) * rng.standard_normal(d)
        items.append((i, tuple(float(x) for x in q)))
        if t % 4 == 1:
            items.append((i, tuple(Fraction(float(x)) / 3 for x in q)))
        if t % 5 == 2:
            items.append((i, tuple(0.0 for _ in q)))
    assert _same(witness_margins(keys, items), witness_margins_one_by_one(keys, items))


def test_many_witnesses_in_several_chunks_keep_their_order():
    rng = np.random.default_rng(0)
    keys = rng.standard_normal((3000, 4))
    items = [(int(i), tuple(float(x) for x in keys[i])) for i in rng.integers(0, 3000, 1500)]
    assert _same(witness_margins(keys, items), witness_margins_one_by_one(keys, items))
