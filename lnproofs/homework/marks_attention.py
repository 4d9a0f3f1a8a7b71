"""Marking the attention problems: selectability with certificates, uniform attention, thresholds.

Every wrong answer names its counterexample: the inequality that fails and by how much,
or the convex combination that does not reproduce the key.
"""

from __future__ import annotations

from fractions import Fraction

from ..certificates.writers import format_fraction
from .marks_geometry import _expr_check
from .problem_base import STATUSES
from .values import (
    PartResult,
    _expression,
    _is_zero,
    _mismatch,
    _part,
    _rational,
    _same,
    _scores,
    _show,
    _vec_text,
    _vector,
    _Wrong,
    json_text,
    read_integer,
    read_status,
)
from .values import expected as expected_

__all__ = ["check_selectability", "check_uniform", "check_threshold"]


def _witness_message(keys, number, q, tie=False):
    """None if q makes key ``number`` (1-based) win strictly (or tie when ``tie``), else why not."""
    scores = _scores(keys, q)
    i = number - 1
    if tie:
        best = max(scores)
        if scores[i] != best:
            j = scores.index(best)
            return (
                f"with the query {_vec_text(q)} key {j + 1} scores {format_fraction(best)}, more than key {number} "
                f"({format_fraction(scores[i])}), so key {number} is not among the maximisers"
            )
        if min(scores) == best:
            return f"the query {_vec_text(q)} gives every key the same score; some key must score lower"
        return None
    failing = [(scores[i] - scores[j], j) for j in range(len(keys)) if j != i and scores[i] <= scores[j]]
    if not failing:
        return None
    gap, j = min(failing)
    return (
        f"the query {_vec_text(q)} gives key {number} the score {format_fraction(scores[i])} and key {j + 1} the "
        f"score {format_fraction(scores[j])}, so q.k_{number} - q.k_{j + 1} = {format_fraction(gap)} is not > 0"
        f" ({len(failing)} of {len(keys) - 1} inequalities fail)"
    )


def _combination_message(keys, number, value):
    """None if ``value`` writes key ``number`` as a convex combination of the other keys, else why not."""
    if (
        not isinstance(value, dict)
        or not isinstance(value.get("keys"), list)
        or not isinstance(value.get("weights"), list)
    ):
        raise _Wrong('a combination must be {"keys": [key numbers], "weights": ["p/q", ...]}')
    numbers, weights = value["keys"], value["weights"]
    if len(numbers) != len(weights) or not numbers:
        raise _Wrong(f"the combination has {len(numbers)} keys but {len(weights)} weights")
    numbers = [read_integer(k, "a key number") for k in numbers]
    for k in numbers:
        if not 1 <= k <= len(keys):
            raise _Wrong(f"{k!r} is not a key number; keys are numbered 1 to {len(keys)}")
        if k == number:
            raise _Wrong(f"the combination uses key {number} itself; use only the other keys")
    if len(set(numbers)) != len(numbers):
        raise _Wrong("the combination lists a key twice; list each key once with its total weight")
    w = _vector(weights, len(weights), _rational, "weights")
    negative = [(k, x) for k, x in zip(numbers, w) if x < 0]
    if negative:
        k, x = negative[0]
        return f"the weight of key {k} is {format_fraction(x)} < 0; convex weights are non-negative"
    total = sum(w, Fraction(0))
    if total != 1:
        return f"the weights sum to {format_fraction(total)}, not 1"
    dim = len(keys[0])
    point = [sum((x * keys[k - 1][c] for k, x in zip(numbers, w)), Fraction(0)) for c in range(dim)]
    target = [Fraction(v) for v in keys[number - 1]]
    if point != target:
        c = next(c for c in range(dim) if point[c] != target[c])
        return (
            f"the combination gives {_vec_text(point)} but key {number} is {_vec_text(target)}: coordinate {c + 1} "
            f"is off by {format_fraction(point[c] - target[c])}"
        )
    return None


def _status_message(problem, solution, number, claimed):
    truth = solution.statuses.get(str(number))
    if claimed == truth:
        return None
    best = solution.answers["keys"][str(number)]
    if truth == "selectable":
        q = [Fraction(v) for v in best["query"]]
        scores = _scores(problem.keys, q)
        rival = max(s for j, s in enumerate(scores) if j != number - 1)
        return f"key {number} is {expected_('selectable')}, not {claimed}: " + expected_(
            f"the query {_vec_text(q)} gives it "
            f"{format_fraction(scores[number - 1])}, more than every other key (at most {format_fraction(rival)})"
        )
    if truth in ("tie-only", "unselectable"):
        comb = best["combination"]
        terms = " + ".join(f"{w}*k_{k}" for k, w in zip(comb["keys"], comb["weights"]))
        where = (
            "on the boundary of the hull of the keys (it can tie but never win)"
            if truth == "tie-only"
            else "strictly inside the hull of the keys"
        )
        return f"key {number} is {expected_(truth)}, not {claimed}: " + expected_(f"k_{number} = {terms} lies {where}")
    return f"key {number} could not be decided by the library ({truth}); ask your instructor"


def check_selectability(problem, answer, solution):
    from .library import checker_verdict

    results = []
    given = answer.get("keys")
    if not isinstance(given, dict):
        return [
            PartResult(
                problem.id, "keys", False, '\'keys\' must map key numbers ("1", "2", ...) to {"status": ..., ...}'
            )
        ]
    count = len(problem.keys)
    for name in given:
        if name not in {str(k) for k in range(1, count + 1)}:
            results.append(
                PartResult(
                    problem.id,
                    f"key {name}",
                    False,
                    f'{name!r} is not a key number; keys are numbered "1" to "{count}"',
                )
            )
    for number in range(1, count + 1):
        part = f"key {number}"
        entry = given.get(str(number))
        if entry is None:
            results.append(PartResult(problem.id, part, False, f"no answer given for key {number}"))
            continue
        try:
            if not isinstance(entry, dict):
                raise _Wrong(_bare_entry(number, entry))
            if "status" not in entry:
                raise _Wrong(f'key {number}: give its "status" ({", ".join(STATUSES)}) with its evidence')
            claimed = read_status(entry["status"], STATUSES)
            message = _status_message(problem, solution, number, claimed)
            if message is None:
                message = _certificate_message(problem, number, claimed, entry, checker_verdict)
        except _Wrong as err:
            message = str(err)
        results.append(PartResult(problem.id, part, message is None, message or "correct"))
    return results


def _bare_entry(number, entry) -> str:
    """The message for an entry that is not an object: what was written and the object to write."""
    try:
        status = read_status(entry, STATUSES)
    except _Wrong:
        return (
            f'key {number}: write an object such as {{"status": "selectable", "query": [1, 0]}}, not {json_text(entry)}'
        )
    evidence = '"query": [...]' if status == "selectable" else '"combination": {"keys": [...], "weights": [...]}'
    return (
        f'key {number}: write the object {{"status": "{status}", {evidence}}}, not the bare status {json_text(entry)}'
    )


def _certificate_message(problem, number, claimed, entry, checker_verdict):
    keys = [[Fraction(v) for v in k] for k in problem.keys]
    if claimed == "selectable":
        if "query" not in entry:
            raise _Wrong(f'give the query that makes key {number} win ("query": [...])')
        q = _vector(entry["query"], len(keys[0]), _rational, "query")
        message = _witness_message(keys, number, q)
        trusted = checker_verdict(problem.keys, number - 1, "selectable", witness=q)
        if trusted != (message is None):
            raise _Wrong("the exact checker and the homework checker disagree on this query; please report it")
        return message
    if "combination" not in entry:
        raise _Wrong(
            f"give the convex combination of other keys that reproduces key {number} "
            '("combination": {"keys": [...], "weights": [...]})'
        )
    comb = entry["combination"]
    message = _combination_message(keys, number, comb)
    weights = [_rational(w) for w in comb["weights"]]
    indices = [read_integer(k, "a key number") - 1 for k in comb["keys"]]
    trusted = checker_verdict(problem.keys, number - 1, claimed, combination=(indices, weights))
    if trusted != (message is None):
        raise _Wrong("the exact checker and the homework checker disagree on this combination; please report it")
    if message is None and "query" in entry and claimed == "tie-only":
        q = _vector(entry["query"], len(keys[0]), _rational, "query")
        message = _witness_message(keys, number, q, tie=True)
    return message


def _uniform_trusted(problem, q) -> None:
    """The library's exact uniform-attention check must agree that a rational ``q`` ties the keys."""
    from .library import uniform_check

    if all(x.is_Rational for x in q):
        trusted, _ = uniform_check(problem.keys, [Fraction(int(x.p), int(x.q)) for x in q])
        if not trusted:
            raise _Wrong("the exact checker and the homework checker disagree on this query; please report it")


def check_uniform(problem, answer):
    """Right when the query scores every output of the LayerNorm alike: a non-zero multiple of 1/a
    (rational or not).  A query that only ties the keys listed is told which outputs it misses."""
    import sympy as sp

    n, gain = len(problem.gain), problem.gain

    def query(value):
        q = _vector(value, n, _expression, "query")
        if _is_zero(q):
            return "the zero query ties every key trivially; give a non-zero query"
        i = _mismatch(q, gain)
        if i is None:
            _uniform_trusted(problem, q)
            return None
        scores = [sp.expand(sum(x * k for x, k in zip(q, key))) for key in problem.keys]
        j = next((j for j in range(1, len(scores)) if not _same(scores[j], scores[0])), None)
        if j is not None:
            return (
                f"the query {_vec_text(q)} gives key 1 the score {_show(scores[0])} but key {j + 1} the score "
                f"{_show(scores[j])} (off by {_show(scores[j] - scores[0])})"
            )
        step = sp.expand(q[0] * gain[0] - q[i] * gain[i])
        return (
            f"the query {_vec_text(q)} gives these {len(scores)} keys the same score, but not every output of "
            f"this LayerNorm: an output moves within its hyperplane along diag(a)(e_1 - e_{i + 1}), which "
            f"changes your score by q_1 a_1 - q_{i + 1} a_{i + 1} = {_show(step)}, not 0; a query that works "
            "for every output gives every q_i a_i the same value"
        )

    return [_part(problem, "query", answer, query)]


def check_threshold(problem, answer):

    t = problem.threshold()

    def status_at(value):
        if not isinstance(value, dict):
            raise _Wrong("status_at must map each magnitude (as written on the sheet) to a status")
        asked = {m: format_fraction(m) for m in problem.magnitudes}
        given = {}
        for key, status in value.items():
            if status is None:
                continue  # left blank
            try:
                m = _rational(key)
            except _Wrong:
                raise _Wrong(
                    f"{key!r} is not one of the magnitudes asked about ({', '.join(asked.values())})"
                ) from None
            if m not in asked:
                raise _Wrong(f"{key!r} is not one of the magnitudes asked about ({', '.join(asked.values())})")
            given[m] = read_status(status, STATUSES)
        problems = []
        for m, text in asked.items():
            if m not in given:
                problems.append(f"no status given for m = {text}")
                continue
            truth = problem.status(m)
            if given[m] != truth:
                relation = "<" if truth == "selectable" else ">" if truth == "unselectable" else "="
                problems.append(
                    f"at m = {text} key 2 is {expected_(truth)}, not {given[m]} "
                    + expected_(f"({text} {relation} {_show(t)})")
                )
        return "; ".join(problems) or None

    return [
        _part(problem, "threshold", answer, _expr_check(t)),
        _part(problem, "status_at", answer, status_at),
    ]
