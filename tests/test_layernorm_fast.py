"""The batched LayerNorm search gives the reference per-key search's statuses, and checks."""

import numpy as np
import pytest
from reference.layernorm_reference import reference_results

from lnproofs.kernel import LayerNormQuerySet
from lnproofs.propose.querysets.layernorm import certify_results


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("N,n,d", [(12, 8, 3), (6, 10, 4), (20, 6, 2)])
def test_statuses_equal_the_reference(seed, N, n, d):
    rng = np.random.default_rng(seed)
    qs = LayerNormQuerySet(
        rng.normal(size=n), rng.normal(size=n) * 0.3, rng.normal(size=(d, n)), rng.normal(size=d), 1e-5
    )
    keys = rng.normal(size=(N, d))
    keys[1] = keys[0]  # a duplicate: never strictly selectable
    keys[2] = 0.5 * (keys[3] + keys[4])  # inside the hull
    fast = certify_results(keys, qs)
    ref = reference_results(keys, qs)
    assert [r["status"] for r in fast] == [r["status"] for r in ref]
    assert all(v.ok for v in qs.check(keys, fast))
    from lnproofs.propose.querysets.layernorm_fast import certify_results_fast

    small = certify_results_fast(keys, qs, compact=True)
    assert [r["status"] for r in small] == [r["status"] for r in ref]
    assert all(v.ok for v in qs.check(keys, small))
    assert any("y" in r for r in small)


def test_a_tampered_compact_certificate_is_refuted():
    from lnproofs.propose.querysets.layernorm_fast import certify_results_fast

    rng = np.random.default_rng(4)
    qs = LayerNormQuerySet(rng.normal(size=8), np.zeros(8), rng.normal(size=(3, 8)), np.zeros(3))
    keys = rng.normal(size=(6, 3))
    results = certify_results_fast(keys, qs, compact=True)
    target = next(r for r in results if "y" in r)
    target["y"] = [-v for v in target["y"]]  # now the query points away from the key
    verdict = qs.check(keys, [target])[0]
    assert not verdict.ok
    target["y"] = [v * 1e6 for v in target["y"]]  # u far outside the ball
    assert not qs.check(keys, [target])[0].ok


def _structured(rng, n, d, style):
    gamma, beta, W, b_q = (
        1 + 0.3 * rng.normal(size=n),
        0.1 * rng.normal(size=n),
        rng.normal(size=(d, n)),
        0.1 * rng.normal(size=d),
    )
    if style == "random-init":  # unit gains, no biases: q0 = 0
        gamma, beta, b_q = np.ones(n), np.zeros(n), np.zeros(d)
    elif style == "zero-gains":
        gamma[: n // 2] = 0.0
    elif style == "rank-deficient":  # W_q of rank 1 exactly (powers of two times one row)
        W = np.outer(rng.choice([-2.0, -1.0, 0.5, 1.0, 4.0], size=d), rng.normal(size=n))
    return LayerNormQuerySet(gamma, beta, W, b_q, 1e-5)


@pytest.mark.parametrize("style", ["random-init", "zero-gains", "rank-deficient"])
@pytest.mark.parametrize("seed", range(2))
def test_structured_weights_give_the_reference_statuses(style, seed):
    rng = np.random.default_rng(50 + seed)
    n, d, N = 8, 3, 9
    qs = _structured(rng, n, d, style)
    keys = rng.normal(size=(N, d))
    keys[1] = keys[0]  # a duplicate
    keys[2] = 0.5 * (keys[3] + keys[4])  # inside the hull
    fast, ref = certify_results(keys, qs), reference_results(keys, qs)
    assert [r["status"] for r in fast] == [r["status"] for r in ref]
    assert all(v.ok for v in qs.check(keys, fast))
