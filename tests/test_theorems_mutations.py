"""A wrong step or a wrong statement makes a proof fail: nothing is taken on trust."""

from __future__ import annotations

import dataclasses

import pytest
import sympy as sp

from lnproofs.derive import registry
from lnproofs.derive.theorem import Step, check_step, mutate_step

_FLIP = {"<": ">", ">": "<", "<=": ">", ">=": "<"}


def wrong(step: Step) -> Step:
    """A version of ``step`` whose claim is false: a relation reversed, a term added, a root moved."""
    rhs, method = step.rhs, step.method
    if step.relation in _FLIP:
        return dataclasses.replace(step, relation=_FLIP[step.relation])
    if method == "eigen (characteristic polynomial)":
        keys = list(rhs)
        return dataclasses.replace(
            step, rhs={k + 1 if i == 0 else k: v for i, (k, v) in enumerate(rhs.items())} if len(keys) else rhs
        )
    if method == "solve":
        if isinstance(rhs, sp.FiniteSet):
            return dataclasses.replace(step, rhs=sp.FiniteSet(*[e + 1 for e in rhs]))
        return dataclasses.replace(step, rhs=sp.Interval(rhs.start, rhs.end + 1, rhs.left_open, rhs.right_open))
    if method == "root isolation (Sturm)":
        (_, hi), rest = rhs[-1], rhs[:-1]
        return dataclasses.replace(step, rhs=rest + ((hi + 1, hi + 2),))
    if method == "limit":
        return dataclasses.replace(step, rhs=(1 if rhs in (sp.oo, -sp.oo) else rhs + 1))
    # lhs = rhs holds, so lhs = rhs + 1 is false whatever rhs is (a sign flip can be harmless when
    # rhs is identically zero; the named tests below flip signs and drop factors on purpose)
    if isinstance(rhs, (sp.MatrixBase, sp.MatrixExpr)):
        return dataclasses.replace(step, rhs=rhs + sp.ones(*rhs.shape))
    return dataclasses.replace(step, rhs=rhs + 1)


def _every_step(theorems):
    for theorem in theorems:
        for index in range(len(theorem.steps) + len(theorem.conclusion)):
            yield pytest.param(theorem, index, id=f"{theorem.name}[{'n' if theorem.n is None else theorem.n}]#{index}")


GENERAL = registry.all_theorems()
GENERAL_STD = [t for t in registry.all_theorems(convention="std") if t.convention == "std"]


@pytest.mark.parametrize("theorem, index", list(_every_step(GENERAL + GENERAL_STD)))
def test_every_wrong_step_fails_general_n(theorem, index):
    steps = theorem.steps + theorem.conclusion
    bad = wrong(steps[index])
    ok, detail = check_step(bad)
    assert ok is False, (bad.claim_text(), detail)
    result = mutate_step(theorem, index, **{f.name: getattr(bad, f.name) for f in dataclasses.fields(bad)}).prove()
    assert result.status == "failed"
    assert result.steps[index].checked is False


@pytest.mark.parametrize("theorem, index", [p for p in _every_step([t for t in registry.all_theorems(3) if t.n == 3])])
def test_every_wrong_step_fails_n_3(theorem, index):
    bad = wrong((theorem.steps + theorem.conclusion)[index])
    ok, detail = check_step(bad)
    assert ok is False, (bad.claim_text(), detail)


def test_wrong_statement_fails():
    # the statement P^2 = P with a flipped sign: P^2 = -P
    theorem = registry.get_theorem("projection.idempotent")
    k = len(theorem.steps)
    bad = theorem.with_step(k, rhs=-theorem.conclusion[0].rhs)
    assert bad.prove().status == "failed"
    assert theorem.prove().status == "proved"


def test_dropped_factor_in_the_rewrite_fails():
    # J^2 = J instead of J^2 = n J: the step "I - 2J/n + J^2/n^2 = I - J/n" no longer holds with n dropped
    theorem = registry.get_theorem("projection.idempotent")
    n, J = sp.Symbol("n", positive=True, integer=True), sp.Symbol("J")
    index = next(i for i, s in enumerate(theorem.steps) if s.method == "rewrite J^2 = nJ")
    bad = theorem.with_step(index, rhs=sp.Symbol("I") - 2 * J / n + J / n**2)
    assert bad.prove().status == "failed"


def test_dropped_sqrt_n_in_the_radius_fails():
    theorem = registry.get_theorem("sphere.radius")
    last = len(theorem.steps)  # first conclusion: |g(P x)| = sqrt(n)
    n = sp.Symbol("n", positive=True, integer=True)
    assert theorem.with_step(last, rhs=n).prove().status == "failed"


def test_wrong_threshold_fails():
    theorem = registry.get_theorem("attention.demo_threshold")
    bad = theorem.with_step(0, rhs=sp.FiniteSet(2 + sp.sqrt(2)))
    assert bad.prove().status == "failed"
    bad = theorem.with_step(0, rhs=sp.FiniteSet(1 - sp.sqrt(2)))
    assert bad.prove().status == "failed"


def test_swapped_conventions_fail():
    # the torch radius formula does not hold for the std convention
    torch_thm = registry.get_theorem("sphere.interior_torch")
    std_thm = registry.get_theorem("sphere.interior_std")
    k = len(std_thm.steps)  # the first conclusion: the squared radius in closed form
    assert std_thm.prove().status == "proved"
    bad = std_thm.with_step(k, rhs=torch_thm.conclusion[0].rhs)
    assert bad.prove().status == "failed"


def _closing(theorem):
    from lnproofs.report.proofs import closing_steps

    return closing_steps(theorem.prove())


CLOSED = [t for t in GENERAL + GENERAL_STD if _closing(t)]


def test_some_proofs_close_a_chain():
    assert len(CLOSED) >= 5


@pytest.mark.parametrize("theorem", CLOSED, ids=lambda t: f"{t.name}[{t.convention}]")
def test_a_false_statement_closing_a_chain_fails_and_is_shown(theorem):
    """The conclusion a displayed chain proves is not printed twice, yet it is checked on its own: made
    false, the proof fails and the printed proof shows the failed relation."""
    from lnproofs.report.proofs import shown_steps

    for closing in _closing(theorem):
        index = closing.index - 1
        bad = wrong((theorem.steps + theorem.conclusion)[index])
        result = mutate_step(theorem, index, **{f.name: getattr(bad, f.name) for f in dataclasses.fields(bad)}).prove()
        assert result.status == "failed"
        assert any(s.index == closing.index and not s.checked for s in shown_steps(result))


def test_every_check_is_printed_closes_a_printed_chain_or_is_bookkeeping():
    """No check is hidden unaccounted: each step and conclusion of a proof is a displayed relation, the
    same claim as one, the claim that a displayed chain proves, or a bookkeeping step (a routine check the
    blueprint lists); the report's counts of shown and unprinted checks add up to every check."""
    from lnproofs.report.proofs import closing_steps, hidden_steps, shown_steps

    for theorem in GENERAL + GENERAL_STD:
        result = theorem.prove()
        shown = {(s.claim_latex, s.method) for s in shown_steps(result)}
        closed = {s.index for s in closing_steps(result)}
        for s in result.steps:
            assert (s.claim_latex, s.method) in shown or s.index in closed or s.bookkeeping, (theorem.name, s.index)
        assert len(shown_steps(result)) + len(hidden_steps(result)) == len(result.steps)


_PROVED: dict = {}


def _proved(theorem):
    """The proof of one of the module's theorems, made once (theorems with explicit matrices are not hashable)."""
    if id(theorem) not in _PROVED:
        _PROVED[id(theorem)] = (theorem, theorem.prove())
    return _PROVED[id(theorem)][1]


def _bookkeeping(theorems):
    for theorem in theorems:
        for index, step in enumerate(theorem.steps + theorem.conclusion):
            if step.bookkeeping:
                yield pytest.param(
                    theorem, index, id=f"{theorem.name}[{'n' if theorem.n is None else theorem.n}]#{index}"
                )


BOOKKEEPING = list(_bookkeeping(GENERAL + GENERAL_STD + [t for t in registry.all_theorems(4) if t.n == 4]))


def test_the_restored_routine_checks_are_bookkeeping_steps():
    assert len(BOOKKEEPING) >= 100
    assert {p.values[0].name for p in BOOKKEEPING} >= {"coverage.argmax_direction", "ellipsoid.equation"}


@pytest.mark.parametrize("theorem, index", BOOKKEEPING)
def test_a_false_bookkeeping_step_fails_the_theorem_and_is_shown(theorem, index):
    """A routine check is not printed while it holds; made false, it fails the theorem, and the printed
    proof shows it with the note that the proof is not complete."""
    from lnproofs.report.proofs import hidden_steps, shown_steps

    good = _proved(theorem)
    assert any(s.index == index + 1 for s in hidden_steps(good))
    bad = wrong((theorem.steps + theorem.conclusion)[index])
    result = mutate_step(theorem, index, **{f.name: getattr(bad, f.name) for f in dataclasses.fields(bad)}).prove()
    assert result.status == "failed"
    assert [s.index for s in shown_steps(result) if not s.checked] == [index + 1]
