"""Every correct answer is accepted, in every exact form a student writes, and near-misses still fail.

One table of equivalent forms and one of near-misses per answer field, on problems whose answers are
known by heart: P = I - J/4 and Px = (-2, -1, 0, 3) for x = (1, 2, 3, 6); |Px| = sqrt(14); the gain
(1, 2, 2) has the normal 1/a ~ (2, 1, 1) and the semi-axes 2 sqrt(3) and sqrt(6); the demo's threshold
is 1 + sqrt(2); the gain (1, 2, 3) has squared gains 1, 4, 9 and f(2) = 5/21 > 0."""

from __future__ import annotations

from fractions import Fraction

import pytest

from lnproofs.homework import ProblemSet, check_answers
from lnproofs.homework.problems import (
    EllipsoidProblem,
    InterlacingProblem,
    ProjectionProblem,
    SelectabilityProblem,
    SphereProblem,
    ThresholdProblem,
    UniformProblem,
)

PROJECTION = ProjectionProblem(n=4, x=(1, 2, 3, 6))
SPHERE = SphereProblem(x=(1, 2, 3, 6), eps=Fraction(1))
ELLIPSOID = EllipsoidProblem(gain=(1, 2, 2), bias=(0, 1, -1))
UNIFORM = UniformProblem(gain=(1, -2, 2), bias=(1, -1, -2), keys=((0, -1, 0), (2, -1, -4), (1, -3, -4), (1, 1, 0)))
THRESHOLD = ThresholdProblem(magnitudes=(Fraction(12, 5), Fraction(3)))
INTERLACING = InterlacingProblem(gain=(1, 2, -3), point=Fraction(2))
DIAMOND = SelectabilityProblem(keys=((0, 2), (2, 0), (0, -2), (-2, 0), (1, 1), (0, 0)))

P_ROW = ["3/4", "-1/4", "-1/4", "-1/4"]
THRESHOLD_STATUS = {"12/5": "selectable", "3": "unselectable"}


def _part(problem, field, value, others=None):
    answer = dict(others or {})
    answer[field] = value
    result = check_answers(ProblemSet(seed=0, problems=(problem,)), {"answers": {problem.id: answer}})
    return next(p for p in result.problems[0].parts if p.part == field)


def _matrix(first_row):
    return [first_row] + [P_ROW[-i:] + P_ROW[:-i] for i in range(1, 4)]


EQUIVALENT = [
    (PROJECTION, "P", _matrix(["3/4", "-1/4", "-1/4", "-1/4"])),
    (PROJECTION, "P", _matrix([0.75, -0.25, "-0.25", "−1/4"])),  # floats, decimal strings, a Unicode minus
    (PROJECTION, "P", _matrix(["6/8", "-2/8", " -1/4 ", "-1 / 4"])),
    (PROJECTION, "Px", [-2, -1, 0, 3]),
    (PROJECTION, "Px", ["-2", "-1", "0", "3"]),
    (PROJECTION, "Px", [-2.0, -1.0, 0.0, 3.0]),
    (PROJECTION, "Px", ["−2", "-2/2", "0/7", "3.0"]),
    (SPHERE, "norm_Px", "sqrt(14)"),
    (SPHERE, "norm_Px", "√14"),
    (SPHERE, "norm_Px", "SQRT(14)"),
    (SPHERE, "norm_Px", "14^(1/2)"),
    (SPHERE, "norm_Px", "sqrt(56)/2"),
    (SPHERE, "norm_Px", "14**0.5"),
    (SPHERE, "g", ["-2*sqrt(14)/7", "-sqrt(14)/7", "0", "3*sqrt(14)/7"]),
    (SPHERE, "g", ["-4/√14", "−2/√14", 0, "6/sqrt(14)"]),
    (ELLIPSOID, "normal", [2, 1, 1]),
    (ELLIPSOID, "normal", ["2/sqrt(6)", "1/sqrt(6)", "1/sqrt(6)"]),  # a unit normal
    (ELLIPSOID, "normal", ["2√3", "√3", "√3"]),
    (ELLIPSOID, "normal", [-4, -2, -2]),
    (ELLIPSOID, "normal", [1, 0.5, "1/2"]),
    (ELLIPSOID, "semi_axes", ["2*sqrt(3)", "sqrt(6)"]),
    (ELLIPSOID, "semi_axes", ["√6", "2√3"]),
    (ELLIPSOID, "semi_axes", ["sqrt(12)", "6^(1/2)"]),
    (ELLIPSOID, "semi_axes", ["2 sqrt(3)", "sqrt(2)*sqrt(3)"]),
    (UNIFORM, "query", [2, -1, 1]),
    (UNIFORM, "query", ["1", "-1/2", "1/2"]),
    (UNIFORM, "query", ["2*sqrt(3)", "-sqrt(3)", "sqrt(3)"]),  # a sqrt(3)-scaled query
    (UNIFORM, "query", [-4.0, "2", "−2"]),
    (THRESHOLD, "threshold", "1 + sqrt(2)"),
    (THRESHOLD, "threshold", "1+√2"),
    (THRESHOLD, "threshold", "√2 + 1"),
    (THRESHOLD, "threshold", "1/(√2 − 1)"),
    (THRESHOLD, "threshold", "(2 + 2√2)/2"),
    (THRESHOLD, "threshold", "1/(sqrt(2)-1)"),
    (THRESHOLD, "status_at", {"12/5": "Selectable", "3": "UNSELECTABLE"}),
    (THRESHOLD, "status_at", {"2.4": " selectable ", "3.0": "Unselectable"}),
    (INTERLACING, "brackets", [[1, 4], [4, 9]]),
    (INTERLACING, "brackets", [["4", "9"], ["1", "4"]]),
    (INTERLACING, "brackets", [[1.0, 4.0], ["8/2", "9"]]),
    (INTERLACING, "f_at", "5/21"),
    (INTERLACING, "f_at", "10/42"),
    (INTERLACING, "below", 0),
    (INTERLACING, "below", "0"),
    (INTERLACING, "below", 0.0),
]


@pytest.mark.parametrize(
    "problem, field, value", EQUIVALENT, ids=[f"{p.id}-{f}-{i}" for i, (p, f, _) in enumerate(EQUIVALENT)]
)
def test_equivalent_forms_are_accepted(problem, field, value):
    part = _part(problem, field, value)
    assert part.ok, part.message


NEAR_MISSES = [
    (PROJECTION, "P", _matrix(["3/4", "-1/4", "-1/4", "-1/5"]), "entry (1, 4) should be -1/4, you gave -1/5"),
    (PROJECTION, "P", _matrix([0.7500001, -0.25, -0.25, -0.25]), "0.7500001 is a rounded decimal"),
    (PROJECTION, "Px", [-2, -1, 0, 2.9999999], 'rounded decimal, not an exact value; write the fraction "3"'),
    (PROJECTION, "Px", [1, 2, 3, 6], "must sum to 0"),
    (PROJECTION, "Px", ["-2", "-1", "0", "3", "0"], "must have 4 entries"),
    (SPHERE, "norm_Px", "14", "that is the squared norm"),
    (SPHERE, "norm_Px", "3.7416573867739413", "rounded decimal, not an exact value; write the exact number with sqrt"),
    (SPHERE, "norm_Px", "sqrt(15)", "expected sqrt(14)"),
    (SPHERE, "norm_Px", "sqrt(14", "not a well-formed expression"),
    (SPHERE, "g", ["-2", "-1", "0", "3"], "not sqrt(4)"),
    (ELLIPSOID, "normal", [1, 2, 2], "not normal to the hyperplane"),  # a, not 1/a
    (ELLIPSOID, "normal", [2, 1, "1.0000001"], "rounded decimal"),
    (ELLIPSOID, "normal", ["2/sqrt(6)", "1/sqrt(6)", "1/sqrt(7)"], "not normal to the hyperplane"),
    (ELLIPSOID, "normal", [0, 0, 0], "the zero vector is not a normal"),
    (ELLIPSOID, "semi_axes", ["2*sqrt(3)", "sqrt(6)", "sqrt(6)"], "2 semi-axes; you gave 3"),
    (ELLIPSOID, "semi_axes", ["sqrt(6)", "sqrt(6)"], "sqrt(6) (≈ 2.44949) is not a semi-axis"),
    (ELLIPSOID, "semi_axes", ["2", "sqrt(2)"], "is sqrt(lambda)"),
    (UNIFORM, "query", [1, 1, 1], "off by"),
    (UNIFORM, "query", ["sqrt(2)", "-1/2", "1/2"], "off by"),
    (UNIFORM, "query", [0, 0, 0], "non-zero query"),
    (THRESHOLD, "threshold", "2.414213562373095", "rounded decimal, not an exact value; write the exact number"),
    (THRESHOLD, "threshold", "5/2", "no decimal or fraction equals it"),
    (THRESHOLD, "threshold", "1 + sqrt(3)", "expected 1 + sqrt(2)"),
    (THRESHOLD, "status_at", {"12/5": "selected", "3": "unselectable"}, '"selected" is not a status'),
    (THRESHOLD, "status_at", {"12/5": "selectable", "3": "tie-only"}, "at m = 3 key 2 is unselectable, not tie-only"),
    (THRESHOLD, "status_at", {"2.5": "selectable", "3": "unselectable"}, "'2.5' is not one of the magnitudes"),
    (INTERLACING, "brackets", [[1, 4], [4, 8]], "[4, 8] is not an interval between consecutive squared gains"),
    (INTERLACING, "brackets", [[1, 4]], "one in each interval; you gave 1"),
    (INTERLACING, "f_at", "-5/21", "f(2) = 5/21, you gave -5/21"),
    (INTERLACING, "f_at", 0.2380952380952381, 'write the fraction "5/21"'),
    (INTERLACING, "below", 1, "0 non-zero eigenvalues are below 2, not 1: f there is positive"),
    (INTERLACING, "below", 0.5, "0.5 is not a count"),
]


@pytest.mark.parametrize(
    "problem, field, value, fragment",
    NEAR_MISSES,
    ids=[f"{p.id}-{f}-{i}" for i, (p, f, _, _) in enumerate(NEAR_MISSES)],
)
def test_near_misses_fail_with_a_message_naming_what_to_write(problem, field, value, fragment):
    part = _part(problem, field, value)
    assert not part.ok and fragment in part.message, part.message


def _keys(entries):
    return _part(DIAMOND, "keys", entries)


def test_selectability_entries_in_any_case_and_bare_statuses_told_the_object_to_write():
    from lnproofs.homework.answers import check_problem

    solution = DIAMOND.solve().answers["keys"]
    loud = {k: {**v, "status": v["status"].upper().replace("-", " ")} for k, v in solution.items()}
    assert all(p.ok for p in check_problem(DIAMOND, {"keys": loud}).parts)
    stringly = {
        k: {
            **v,
            "combination": {"keys": [str(i) for i in v["combination"]["keys"]], "weights": v["combination"]["weights"]},
        }
        if "combination" in v
        else v
        for k, v in solution.items()
    }
    assert all(p.ok for p in check_problem(DIAMOND, {"keys": stringly}).parts)
    bare = dict(solution, **{"5": "selectable", "6": "Unselectable"})
    parts = {p.part: p for p in check_problem(DIAMOND, {"keys": bare}).parts}
    assert (
        'write the object {"status": "selectable", "query": [...]}, not the bare status "selectable"'
        in parts["key 5"].message
    )
    assert '{"status": "unselectable", "combination": {"keys": [...], "weights": [...]}}' in parts["key 6"].message


def test_token_numbers_in_any_integer_form_and_duplicates_count_once():
    from lnproofs.homework import generate

    problem_set = generate(4, "vocab")
    (problem,) = problem_set.problems
    never = problem.solve().answers["never"]
    forms = [never, [str(t) for t in never], [float(t) for t in never], never + never[:1], [f" {t} " for t in never]]
    for value in forms:
        result = check_answers(problem_set, {"answers": {"vocab": {"never": value}}})
        assert result.ok, (value, result.to_text())
    wrong = check_answers(problem_set, {"answers": {"vocab": {"never": [*never, 2.5]}}})
    assert "2.5 is not a token number; write a whole number such as 3" in wrong.to_text()


def test_a_bare_value_for_a_problem_is_told_the_object_to_write():
    result = check_answers(ProblemSet(seed=0, problems=(UNIFORM,)), {"answers": {"uniform": [2, -1, 1]}})
    (part,) = result.problems[0].parts
    assert not part.ok and 'must be an object naming its fields, {"query": ...}; you wrote [2, -1, 1]' in part.message


def test_floats_are_read_as_written():
    assert _part(PROJECTION, "Px", [-2, -1, 0.0, 3]).ok
    problem = ProjectionProblem(n=5, x=(1, 0, 0, 0, 0))  # Px = (4/5, -1/5, -1/5, -1/5, -1/5)
    assert _part(problem, "Px", [0.8, -0.2, -0.2, -0.2, "-0.2"]).ok  # 0.2 is 1/5, not its binary value
