"""The batched LayerNorm search gives the reference per-key search's statuses, and checks."""

import numpy as np
import pytest

from lnproofs.kernel.querysets.layernorm import LayerNormQuerySet, check_all
from lnproofs.propose.querysets.layernorm import certify_results
from reference.layernorm_reference import reference_results


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("N,n,d", [(12, 8, 3), (6, 10, 4), (20, 6, 2)])
def test_statuses_equal_the_reference(seed, N, n, d):
    rng = np.random.default_rng(seed)
    qs = LayerNormQuerySet(rng.normal(size=n), rng.normal(size=n) * 0.3, rng.normal(size=(d, n)),
                           rng.normal(size=d), 1e-5)
    keys = rng.normal(size=(N, d))
    keys[1] = keys[0]                                  # a duplicate: never strictly selectable
    keys[2] = 0.5 * (keys[3] + keys[4])                # inside the hull
    fast = certify_results(keys, qs)
    ref = reference_results(keys, qs)
    assert [r["status"] for r in fast] == [r["status"] for r in ref]
    assert all(v.ok for v in check_all(keys, qs, fast))
    from lnproofs.propose.querysets.layernorm_fast import certify_results_fast
    small = certify_results_fast(keys, qs, compact=True)
    assert [r["status"] for r in small] == [r["status"] for r in ref]
    assert all(v.ok for v in check_all(keys, qs, small))
    assert any("y" in r for r in small)


def test_a_tampered_compact_certificate_is_refuted():
    from lnproofs.propose.querysets.layernorm_fast import certify_results_fast

    rng = np.random.default_rng(4)
    qs = LayerNormQuerySet(rng.normal(size=8), np.zeros(8), rng.normal(size=(3, 8)), np.zeros(3))
    keys = rng.normal(size=(6, 3))
    results = certify_results_fast(keys, qs, compact=True)
    target = next(r for r in results if "y" in r)
    target["y"] = [-v for v in target["y"]]            # now the query points away from the key
    verdict = check_all(keys, qs, [target])[0]
    assert not verdict.ok
    target["y"] = [v * 1e6 for v in target["y"]]      # u far outside the ball
    assert not check_all(keys, qs, [target])[0].ok
