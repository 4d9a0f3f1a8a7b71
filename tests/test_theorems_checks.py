"""No check of a proof is ever dropped: every check the proofs made before they were written for people
is made still, with the same content and the same rule.

``tests/reference/proof_checks.json`` records, for each theorem (general n and n = 4, both epsilon
conventions), the checks its proof made when every step was printed (commit 4dcfb33): the checking
method, the relation and both sides and the method's data with every named quantity substituted and
evaluated (:func:`check_content`).  It was written by ``python tests/test_theorems_checks.py
record OUT.json`` in a checkout of that commit; a theorem added later is recorded as its first
version proved it (``vocab.soft_cap``), its entries taken from a recording of that version.  Each
recorded check must be made again by the same theorem today, displayed or not: the same method, the same relation, the same expressions up to the
names of summation indices (and, for a symmetric rule, the order of the two sides of an equation).
"""

from __future__ import annotations

import collections
import json
import pathlib
import sys

import pytest

REFERENCE = pathlib.Path(__file__).parent / "reference" / "proof_checks.json"

#: rules whose verdict on ``a = b`` is their verdict on ``b = a`` (the claim is ``a - b`` vanishing)
SYMMETRIC = (
    "simplify-to-zero",
    "expand",
    "rewrite J^2 = nJ",
    "finite sums and Kronecker deltas",
    "compare squares (both sides nonnegative)",
)


def _evaluated(value, where):
    """``value`` with the bindings substituted in order and every sum, product and delta evaluated."""
    import sympy as sp

    if not isinstance(value, (sp.Basic, sp.MatrixBase)):
        return value
    out = value
    for sym, val in where:
        if isinstance(sym, sp.MatrixSymbol):
            out = out.xreplace({sym: val})
        elif isinstance(val, sp.Lambda):
            out = out.replace(sym, val)
        else:
            out = out.subs(sym, val)
    if hasattr(out, "doit"):
        out = out.doit()
    if isinstance(out, sp.MatrixExpr) and not isinstance(out, sp.MatrixBase):
        out = out.as_explicit()
    return out


def _renamed(value):
    """``value`` with the index of each sum renamed by its depth: sum_j x_j and sum_t x_t agree."""
    import sympy as sp

    if not isinstance(value, sp.Basic) or not value.has(sp.Sum):
        return value

    def walk(expr, depth):
        if isinstance(expr, sp.Sum):
            limits, body = [], expr.function
            for k, (index, *bounds) in enumerate(expr.limits):
                dummy = sp.Symbol(f"_index{depth + k}", integer=True)
                body = body.xreplace({index: dummy})
                limits.append((dummy, *(walk(b, depth) for b in bounds)))
            return sp.Sum(walk(body, depth + len(limits)), *limits)
        if not expr.args or isinstance(expr, sp.MatrixBase):
            return expr
        return expr.func(*(walk(a, depth) for a in expr.args))

    return walk(value, 0)


def _text(value) -> str:
    import sympy as sp

    if isinstance(value, (dict, sp.Dict)):
        return sp.sstr({_text(k): v for k, v in dict(value).items()})
    return sp.sstr(_renamed(value))


def check_content(step) -> list:
    """``[method, relation, lhs, rhs, data]`` of one step as text, every binding substituted."""
    sides = [_text(_evaluated(getattr(step, name), step.where)) for name in ("lhs", "rhs")]
    data = [_text(_evaluated(d, step.where)) for d in step.data]
    return [step.method, step.relation, *sides, data]


def theorem_key(theorem) -> str:
    return f"{theorem.name}|{'n' if theorem.n is None else theorem.n}|{theorem.convention}"


def checks(theorem) -> list:
    """Every check the proof of ``theorem`` makes (its steps, displayed or not, and its conclusion)."""
    return [check_content(s) for s in theorem.steps + theorem.conclusion]


def every_theorem() -> list:
    """The theorems of the record: general n and n = 4, each convention's own statements once."""
    from lnproofs.derive import registry

    out = list(registry.all_theorems(4, "torch"))
    return out + [t for t in registry.all_theorems(4, "std") if t.convention == "std"]


def _key(check) -> tuple:
    method, relation, lhs, rhs, data = check
    if relation == "=" and method in SYMMETRIC:
        lhs, rhs = sorted((lhs, rhs))
    return method, relation, lhs, rhs, tuple(data)


def missing(recorded, made) -> list:
    """The recorded checks that ``made`` does not contain (as many times as they were recorded)."""
    left = collections.Counter(_key(c) for c in made)
    out = []
    for check in recorded:
        key = _key(check)
        if left[key] > 0:
            left[key] -= 1
        else:
            out.append(check)
    return out


def _recorded() -> dict:
    return json.loads(REFERENCE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def made() -> dict:
    return {theorem_key(t): checks(t) for t in every_theorem()}


def test_the_record_covers_every_theorem_for_general_n_and_n_4():
    from lnproofs.derive.registry import THEOREM_NAMES

    keys = _recorded().keys()
    assert {k.split("|")[0] for k in keys if k.split("|")[1] == "n"} == set(THEOREM_NAMES)
    # the planar demo has no width: every other result is recorded for n = 4 as well
    assert {k.split("|")[0] for k in keys if k.split("|")[1] == "4"} == set(THEOREM_NAMES) - {
        "attention.demo_threshold"
    }


@pytest.mark.parametrize("key", sorted(json.loads(REFERENCE.read_text(encoding="utf-8"))))
def test_every_recorded_check_is_made_still(key, made):
    recorded = _recorded()[key]
    assert key in made
    assert len(made[key]) >= len(recorded)
    lost = missing(recorded, made[key])
    assert lost == [], f"{key}: {len(lost)} recorded checks are no longer made: {lost}"


def test_a_dropped_check_is_found():
    """The comparison is not vacuous: a proof with one check left out, or one check changed, misses it."""
    import dataclasses

    from lnproofs.derive import registry

    theorem = registry.get_theorem("coverage.argmax_direction")
    recorded = _recorded()[theorem_key(theorem)]
    ours = checks(theorem)
    tight = [  # steps whose check is made exactly as often as recorded: leaving one out loses it
        index
        for index, check in enumerate(ours[: len(theorem.steps)])
        if sum(_key(c) == _key(check) for c in ours) == sum(_key(c) == _key(check) for c in recorded)
    ]
    assert len(tight) >= 3
    for index in tight:
        fewer = dataclasses.replace(theorem, steps=theorem.steps[:index] + theorem.steps[index + 1 :])
        assert missing(recorded, checks(fewer)), index
    step = theorem.steps[0]
    changed = dataclasses.replace(theorem, steps=(dataclasses.replace(step, rhs=step.rhs + 1),) + theorem.steps[1:])
    assert missing(recorded, checks(changed))
    changed = dataclasses.replace(theorem, steps=(dataclasses.replace(step, method="expand"),) + theorem.steps[1:])
    assert missing(recorded, checks(changed))


def test_summation_indices_are_names_only():
    import sympy as sp

    n, j, t = sp.symbols("n j t", integer=True)
    x = sp.IndexedBase("x")
    assert _text(sp.Sum(x[j], (j, 1, n))) == _text(sp.Sum(x[t], (t, 1, n)))
    assert _text(sp.Sum(x[j], (j, 1, n))) != _text(sp.Sum(x[t], (t, 2, n)))
    assert _text(sp.Sum(x[j] * x[t], (j, 1, n))) != _text(sp.Sum(x[t] * x[t], (t, 1, n)))


if __name__ == "__main__" and sys.argv[1:2] == ["record"]:  # python tests/test_theorems_checks.py record OUT
    record = {theorem_key(t): checks(t) for t in every_theorem()}
    pathlib.Path(sys.argv[2]).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
