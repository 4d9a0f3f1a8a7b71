"""The exact simplex of the fallback: every answer proved by its own certificate (an optimum by a
dual of equal value, infeasibility by a Farkas vector), whatever the scale of the columns, and
keys whose rows differ by 10^16 in size decided from the float solver's start, not by pivoting
from scratch."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest

from lnproofs.propose import exact_lp


def _problem(rng: random.Random):
    m, n = rng.randint(1, 5), rng.randint(1, 8)
    scale = [2 ** rng.randint(-60, 60) for _ in range(n)]
    A = [[rng.randint(-3, 3) * scale[j] for j in range(n)] for _ in range(m)]
    if rng.random() < 0.3 and m > 1:
        A[-1] = [a + b for a, b in zip(A[0], A[1])]  # a redundant row (when b agrees)
    b = [rng.randint(0, 3) for _ in range(m)]
    if rng.random() < 0.3 and m > 1:
        b[-1] = b[0] + b[1]
    c = [rng.randint(-2, 2) for _ in range(n)]
    return A, b, c


def _dot(u, v):
    return sum((Fraction(a) * Fraction(b) for a, b in zip(u, v)), Fraction(0))


@pytest.mark.parametrize("seed", range(4))
def test_every_answer_carries_its_proof(seed):
    rng = random.Random(seed)
    seen = set()
    for _ in range(60):
        A, b, c = _problem(rng)
        m, n = len(A), len(A[0])
        columns = [[A[r][j] for r in range(m)] for j in range(n)]
        status, x, y = exact_lp.simplex(A, b, c)
        seen.add(status)
        if status == "infeasible":  # Farkas: y.A_j <= 0 for every column, y.b > 0
            assert all(_dot(y, col) <= 0 for col in columns) and _dot(y, b) > 0
        elif status == "optimal":  # x feasible, y dual feasible, equal values
            assert all(v >= 0 for v in x)
            assert all(_dot(A[r], x) == b[r] for r in range(m))
            assert all(_dot(y, columns[j]) >= c[j] for j in range(n))
            assert _dot(c, x) == _dot(y, b)
        else:  # unbounded: a feasible problem whose objective grows (the dual has no solution)
            assert status == "unbounded"
    assert {"infeasible", "optimal"} <= seen


def test_keys_whose_rows_differ_by_1e16_are_decided_from_the_float_start(monkeypatch):
    """Half the keys times 10^16: the float engine leaves keys to the exact fallback, whose every
    linear program starts from HiGHS's basis or Farkas vector (no phase one from the artificial
    basis), and every key is decided and holds in the kernel."""
    import lnproofs

    starts = []
    run = exact_lp._Exact.run

    def counted(self, basis, cost, allowed):
        starts.append(basis == list(range(self.n, self.n + self.m)))
        return run(self, basis, cost, allowed)

    monkeypatch.setattr(exact_lp._Exact, "run", counted)
    calls = []
    simplex = exact_lp.simplex
    monkeypatch.setattr(exact_lp, "simplex", lambda *a: calls.append(1) or simplex(*a))
    rng = np.random.default_rng(0)
    keys = rng.standard_normal((100, 32))
    keys[::2] *= 1e16
    cert = lnproofs.certify(keys)
    assert cert.summary["undecided"] == 0
    assert lnproofs.check_certificate(cert, keys).ok
    assert calls, "the exact fallback was not reached: the case no longer tests it"
    assert not any(starts)
