"""Small key sets, as ``reproduce figure1`` certifies them by the thousand: the verdict of
:func:`lnproofs.has_unselectable` (which stops at the first key certified not selectable, and
decides at most d + 1 affinely independent keys by the kernel's rank check) is that of the
full certificate, whose every claim has passed the kernel."""

from __future__ import annotations

import numpy as np
import pytest

from lnproofs import certify, has_unselectable
from lnproofs.kernel import FreeQueries


def _verdict(keys) -> bool:
    cert = certify(keys)
    assert all(v.ok for v in FreeQueries().check(keys, cert.results))
    assert all(r.status != "undecided" for r in cert.results)
    return any(r.status in ("unselectable", "tie-only") for r in cert.results)


@pytest.mark.parametrize("n, d", [(3, 3), (4, 3), (5, 3), (8, 2), (8, 3), (20, 3), (30, 5), (12, 11)])
def test_the_verdict_is_that_of_the_full_certificate(n, d):
    rng = np.random.default_rng([n, d])
    for trial in range(6):
        keys = rng.standard_normal((n, d))
        if trial % 2:  # one key strictly inside: the mean of the others
            keys[trial % n] = np.delete(keys, trial % n, axis=0).mean(axis=0)
        assert has_unselectable(keys, seed=trial) is _verdict(keys)


def test_few_keys_that_are_not_affinely_independent_go_to_the_search():
    on_a_line = np.array([[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [1.0, 0.0, 0.0]])  # n <= d + 1, middle key inside
    assert has_unselectable(on_a_line) is True
    twins = np.array([[1.0, 2.0], [1.0, 2.0]])  # twins tie under every query
    assert has_unselectable(twins) is True
    simplex = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    assert has_unselectable(simplex) is False
