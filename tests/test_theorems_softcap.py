"""vocab.soft_cap: proved by SymPy for general and explicit widths; a decreasing map, a cap dropped
inside the tanh, a map that is not monotone, or a broken tie fail the proof; the numeric re-check
passes for the map and fails for a decreasing one."""

from __future__ import annotations

import pytest
import sympy as sp

from lnproofs.derive import registry


def _theorem(n=None):
    return registry.get_theorem("vocab.soft_cap", n)


@pytest.mark.parametrize("n", [None, 2, 5])
def test_proved_for_general_and_explicit_widths(n):
    result = _theorem(n).prove()
    assert result.proved and all(s.checked for s in result.steps)
    assert [s.kind for s in result.steps].count("conclusion") == 3


def _step(theorem, words):
    steps = theorem.steps + theorem.conclusion
    return next(i for i, s in enumerate(steps) if s.description.startswith(words)), steps


def test_a_decreasing_map_fails_the_difference_and_the_order():
    theorem = _theorem()
    index, steps = _step(theorem, "for two logits")
    x, y, c = sp.Symbol("x", real=True), sp.Symbol("y", real=True), sp.Symbol("c", positive=True)
    assert theorem.with_step(index, lhs=c * sp.tanh(y / c) - c * sp.tanh(x / c)).prove().status == "failed"
    order, _ = _step(theorem, "with $x = y + s$")
    assert theorem.with_step(order, lhs=-steps[order].lhs).prove().status == "failed"


def test_a_cap_dropped_inside_the_tanh_fails_the_difference():
    theorem = _theorem()
    index, steps = _step(theorem, "for two logits")
    x, y, c = sp.Symbol("x", real=True), sp.Symbol("y", real=True), sp.Symbol("c", positive=True)
    bad = theorem.with_step(index, lhs=c * sp.tanh(x) - c * sp.tanh(y))
    assert bad.prove().status == "failed"


def test_a_map_that_is_not_monotone_fails_the_derivative_and_its_sign():
    theorem = _theorem()
    index, steps = _step(theorem, "the capped logit")
    z, c = sp.Symbol("z", real=True), sp.Symbol("c", positive=True)
    assert theorem.with_step(index, lhs=c * sp.sin(z / c)).prove().status == "failed"
    sign = index + 1
    assert theorem.with_step(sign, lhs=sp.cos(z / c)).prove().status == "failed"  # cos changes sign


def test_a_tie_that_breaks_fails():
    theorem = _theorem(3)
    index, steps = _step(theorem, "and with $x = y$")
    assert theorem.with_step(index, rhs=sp.Symbol("c", positive=True)).prove().status == "failed"


def test_the_numeric_recheck_passes_and_fails_for_a_decreasing_map(monkeypatch):
    torch = pytest.importorskip("torch")
    from torch_backend import checks_softcap
    from torch_backend.theorems import run_checks

    small = dict(width=8, samples=256, device="cpu")
    (result,) = run_checks(names=["vocab.soft_cap"], **small)
    assert result.passed and result.samples > 0
    monkeypatch.setattr(checks_softcap, "cap", lambda z, c: -c * torch.tanh(z / c))  # a decreasing map
    (result,) = run_checks(names=["vocab.soft_cap"], **small)
    assert not result.passed and any("another token" in m for m in result.messages)
