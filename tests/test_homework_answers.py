"""Exact answer checking: right answers pass in any equivalent form, each kind of wrong answer
gets its own specific message.  The problems here are built by hand and their answers worked
out by hand, independently of the solver code."""

from __future__ import annotations

from fractions import Fraction

import pytest

from lnproofs.homework import ProblemSet, check_answers
from lnproofs.homework.answers import parse_expression
from lnproofs.homework.problems import (
    EllipsoidProblem,
    ProjectionProblem,
    SelectabilityProblem,
    SphereProblem,
    ThresholdProblem,
    UniformProblem,
)

PROJECTION = ProjectionProblem(n=4, x=(1, 1, -5, -1))  # mean -1, Px = (2, 2, -4, 0)
SPHERE = SphereProblem(x=(1, 4, 6, 1), eps=Fraction(1, 4))  # mean 3, Px = (-2, 1, 3, -2), |Px|^2 = 18
ELLIPSOID = EllipsoidProblem(gain=(1, 2, 2), bias=(0, 1, -1))
UNIFORM = UniformProblem(gain=(1, -2, 2), bias=(1, -1, -2), keys=((0, -1, 0), (2, -1, -4), (1, -3, -4), (1, 1, 0)))
THRESHOLD = ThresholdProblem(magnitudes=(Fraction(12, 5), Fraction(3)))
# a diamond: four vertices, (1, 1) on the edge between keys 1 and 2, (0, 0) and (1, 0) inside
DIAMOND = SelectabilityProblem(keys=((2, 0), (0, 2), (-2, 0), (0, -2), (1, 1), (0, 0), (1, 0)))


def _one(problem, answer):
    result = check_answers(ProblemSet(seed=0, problems=(problem,)), {"answers": {problem.id: answer}})
    return {p.part: p for p in result.problems[0].parts}, result


def _msg(problem, answer, part):
    parts, _ = _one(problem, answer)
    assert not parts[part].ok, parts[part]
    return parts[part].message


# ---------------------------------------------------------------- projection
P4 = [["3/4" if i == j else "-1/4" for j in range(4)] for i in range(4)]
GOOD_PROJECTION = {"P": P4, "P_squared": P4, "Px": [2, 2, -4, 0]}


def test_projection_correct_answers_pass_in_any_exact_form():
    answer = {
        "P": [[0.75 if i == j else "-0.25" for j in range(4)] for i in range(4)],
        "P_squared": P4,
        "Px": ["2", "4/2", -4, "0"],
    }
    parts, result = _one(PROJECTION, answer)
    assert result.ok, result.to_text()
    assert all(p.ok for p in parts.values())


def test_projection_wrong_entry_names_the_entry_and_expected_value():
    bad = [row[:] for row in P4]
    bad[0][1] = "1/4"
    message = _msg(PROJECTION, {**GOOD_PROJECTION, "P": bad}, "P")
    assert "entry (1, 2)" in message and "should be -1/4" in message and "you gave 1/4" in message


def test_projection_px_that_does_not_sum_to_zero_is_told_so():
    message = _msg(PROJECTION, {**GOOD_PROJECTION, "Px": [3, 2, -4, 0]}, "Px")
    assert "entry 1 should be 2" in message and "sums to 1" in message


def test_projection_wrong_shape_and_missing_part():
    message = _msg(PROJECTION, {**GOOD_PROJECTION, "Px": [2, 2, -4]}, "Px")
    assert "4 entries" in message
    parts, _ = _one(PROJECTION, {"P": P4, "Px": [2, 2, -4, 0]})
    assert not parts["P_squared"].ok and "no answer" in parts["P_squared"].message


# ---------------------------------------------------------------- sphere
GOOD_SPHERE = {
    "Px": [-2, 1, 3, -2],
    "norm_Px": "sqrt(18)",
    "g": ["-2*sqrt(2)/3", "sqrt(2)/3", "sqrt(2)", "-2*sqrt(2)/3"],
    "norm_g_eps": "6*sqrt(2)/sqrt(19)",
}


def test_sphere_correct_answers_pass():
    _, result = _one(SPHERE, GOOD_SPHERE)
    assert result.ok, result.to_text()
    _, result = _one(SPHERE, {**GOOD_SPHERE, "norm_Px": "3*2^(1/2)", "norm_g_eps": "6*sqrt(38)/19"})
    assert result.ok, result.to_text()


def test_sphere_squared_norm_gets_a_hint():
    message = _msg(SPHERE, {**GOOD_SPHERE, "norm_Px": 18}, "norm_Px")
    assert "squared norm" in message and "3*sqrt(2)" in message


def test_sphere_decimal_for_an_irrational_value_is_explained():
    message = _msg(SPHERE, {**GOOD_SPHERE, "norm_Px": "4.2426"}, "norm_Px")
    assert "irrational" in message and "4.2426" in message.replace("21213/5000", "4.2426")


def test_sphere_eps_radius_confused_with_sqrt_n():
    message = _msg(SPHERE, {**GOOD_SPHERE, "norm_g_eps": "2"}, "norm_g_eps")
    assert "strictly inside" in message


def test_sphere_point_off_the_sphere_reports_its_norm():
    message = _msg(SPHERE, {**GOOD_SPHERE, "g": [-2, 1, 3, -2]}, "g")
    assert "entry 1" in message and "norm" in message and "sqrt(4)" in message


# ---------------------------------------------------------------- ellipsoid
GOOD_ELLIPSOID = {"center": [0, 1, -1], "normal": [2, 1, 1], "semi_axes": ["sqrt(6)", "2*sqrt(3)"]}


def test_ellipsoid_correct_answers_pass_in_any_order_and_form():
    _, result = _one(ELLIPSOID, GOOD_ELLIPSOID)
    assert result.ok, result.to_text()
    _, result = _one(
        ELLIPSOID, {"center": ["0", "1", "-1"], "normal": ["1", "1/2", "1/2"], "semi_axes": ["sqrt(12)", "6^(1/2)"]}
    )
    assert result.ok, result.to_text()


def test_ellipsoid_semi_axis_missing_factor_n_gets_a_hint():
    # lambda = 2 for the semi-axis sqrt(6): sqrt(lambda) = sqrt(2) forgets n = 3
    message = _msg(ELLIPSOID, {**GOOD_ELLIPSOID, "semi_axes": ["sqrt(2)", "2*sqrt(3)"]}, "semi_axes")
    assert "sqrt(2)" in message and "sqrt(n * lambda)" in message and "sqrt(6)" in message


def test_ellipsoid_semi_axis_squared_gets_a_hint():
    message = _msg(ELLIPSOID, {**GOOD_ELLIPSOID, "semi_axes": ["6", "2*sqrt(3)"]}, "semi_axes")
    assert "take its square root" in message


def test_ellipsoid_wrong_number_of_semi_axes():
    message = _msg(ELLIPSOID, {**GOOD_ELLIPSOID, "semi_axes": ["sqrt(6)", "2*sqrt(3)", "1"]}, "semi_axes")
    assert "2 semi-axes" in message and "you gave 3" in message


def test_ellipsoid_normal_not_parallel_to_inverse_gain():
    message = _msg(ELLIPSOID, {**GOOD_ELLIPSOID, "normal": [1, 1, 1]}, "normal")
    assert "1/a" in message and "(1, 1/2, 1/2)" in message
    message = _msg(ELLIPSOID, {**GOOD_ELLIPSOID, "normal": [0, 0, 0]}, "normal")
    assert "zero vector" in message


def test_ellipsoid_centre_is_the_bias():
    message = _msg(ELLIPSOID, {**GOOD_ELLIPSOID, "center": [0, 0, 0]}, "center")
    assert "bias b = (0, 1, -1)" in message


# ---------------------------------------------------------------- uniform
def test_uniform_any_nonzero_multiple_of_inverse_gain_passes():
    for q in (["1", "-1/2", "1/2"], [2, -1, 1], [-4, 2, -2]):
        _, result = _one(UNIFORM, {"query": q})
        assert result.ok, (q, result.to_text())


def test_uniform_wrong_query_names_the_keys_and_the_gap():
    # q = (1, 1, 1): scores -1, -3, -6, 2
    message = _msg(UNIFORM, {"query": [1, 1, 1]}, "query")
    assert "key 1 the score -1" in message and "key 2" in message and "off by -2" in message


def test_uniform_zero_query_is_refused():
    assert "non-zero" in _msg(UNIFORM, {"query": [0, 0, 0]}, "query")


def test_uniform_irrational_multiple_passes_and_an_irrational_wrong_query_is_told_why():
    assert _one(UNIFORM, {"query": ["sqrt(2)", "-sqrt(2)/2", "sqrt(2)/2"]})[1].ok
    assert "off by 2*sqrt(2)" in _msg(UNIFORM, {"query": ["sqrt(2)", 0, 0]}, "query")


# ---------------------------------------------------------------- threshold
def test_threshold_equivalent_forms_pass():
    for text in ("1 + sqrt(2)", "sqrt(2)+1", "1/(sqrt(2) - 1)", "(2 + 2*sqrt(2))/2"):
        _, result = _one(THRESHOLD, {"threshold": text, "status_at": {"12/5": "selectable", "3": "unselectable"}})
        assert result.ok, (text, result.to_text())


def test_threshold_decimal_gets_expected_and_given():
    message = _msg(THRESHOLD, {"threshold": "2.4142", "status_at": {}}, "threshold")
    assert "1 + sqrt(2)" in message and "irrational" in message and "2.4142" in message


def test_threshold_status_on_the_wrong_side():
    message = _msg(
        THRESHOLD, {"threshold": "1+sqrt(2)", "status_at": {"2.4": "unselectable", "3": "unselectable"}}, "status_at"
    )
    assert "at m = 12/5 key 2 is selectable, not unselectable" in message and "12/5 <" in message


def test_threshold_unknown_magnitude_is_named():
    message = _msg(THRESHOLD, {"threshold": "1+sqrt(2)", "status_at": {"5": "unselectable"}}, "status_at")
    assert "'5' is not one of the magnitudes" in message


# ---------------------------------------------------------------- selectability
GOOD_DIAMOND = {
    "keys": {
        "1": {"status": "selectable", "query": [1, 0]},
        "2": {"status": "selectable", "query": [0, 1]},
        "3": {"status": "selectable", "query": ["-1", "0"]},
        "4": {"status": "selectable", "query": [0, -3]},
        "5": {"status": "tie-only", "combination": {"keys": [1, 2], "weights": ["1/2", "1/2"]}, "query": [1, 1]},
        "6": {"status": "unselectable", "combination": {"keys": [1, 3], "weights": ["1/2", 0.5]}},
        "7": {"status": "unselectable", "combination": {"keys": [1, 3], "weights": ["3/4", "1/4"]}},
    }
}


def _diamond_with(number, entry):
    keys = dict(GOOD_DIAMOND["keys"])
    keys[str(number)] = entry
    return _msg(DIAMOND, {"keys": keys}, f"key {number}")


def test_selectability_correct_answers_pass():
    _, result = _one(DIAMOND, GOOD_DIAMOND)
    assert result.ok, result.to_text()


def test_failing_witness_names_the_inequality_and_the_gap():
    message = _diamond_with(1, {"status": "selectable", "query": [1, 1]})
    assert "q.k_1 - q.k_2 = 0 is not > 0" in message


def test_claimed_selectable_key_inside_the_hull_gets_the_counterexample_combination():
    message = _diamond_with(6, {"status": "selectable", "query": [1, 0]})
    assert message.startswith("key 6 is unselectable, not selectable") and "k_6 =" in message


def test_claimed_unselectable_vertex_gets_a_winning_query():
    message = _diamond_with(2, {"status": "unselectable", "combination": {"keys": [1, 3], "weights": ["1/2", "1/2"]}})
    assert "key 2 is selectable, not unselectable" in message and "the query" in message


def test_edge_point_called_unselectable_is_told_it_is_tie_only():
    message = _diamond_with(5, {"status": "unselectable", "combination": {"keys": [1, 2], "weights": ["1/2", "1/2"]}})
    assert "key 5 is tie-only" in message and "boundary" in message


def test_bad_combinations_get_specific_messages():
    assert "sum to 3/2" in _diamond_with(
        6, {"status": "unselectable", "combination": {"keys": [1, 3], "weights": ["1", "1/2"]}}
    )
    assert "-1/2 < 0" in _diamond_with(
        7, {"status": "unselectable", "combination": {"keys": [1, 5], "weights": ["3/2", "-1/2"]}}
    )
    assert "coordinate 2 is off by 1" in _diamond_with(
        7, {"status": "unselectable", "combination": {"keys": [1, 2], "weights": ["1/2", "1/2"]}}
    )
    assert "key 7 itself" in _diamond_with(
        7, {"status": "unselectable", "combination": {"keys": [7], "weights": ["1"]}}
    )


def test_bad_status_and_missing_certificate():
    assert "\"maybe\" is not a status; write one of 'selectable'" in _diamond_with(3, {"status": "maybe"})
    assert "give the query" in _diamond_with(3, {"status": "selectable"})
    assert "convex combination" in _diamond_with(6, {"status": "unselectable"})


def test_tie_query_that_does_not_tie():
    message = _diamond_with(
        5, {"status": "tie-only", "combination": {"keys": [1, 2], "weights": ["1/2", "1/2"]}, "query": [1, 0]}
    )
    assert "not among the maximisers" in message


# ---------------------------------------------------------------- input handling
def test_a_misspelt_problem_id_or_field_loses_only_its_points_with_the_nearest_name():
    problem_set = ProblemSet(seed=0, problems=(UNIFORM, THRESHOLD))
    good = {"threshold": "1 + sqrt(2)", "status_at": {"12/5": "selectable", "3": "unselectable"}}
    result = check_answers(problem_set, {"answers": {"unifrom": {"query": [2, -1, 1]}, "threshold": good}})
    assert result.unanswered == ("uniform",) and result.problems[0].ok and not result.ok
    assert (
        "'unifrom' is not a problem of this set, so its answers were not checked; did you mean 'uniform'?"
        in result.to_text()
    )
    result = check_answers(problem_set, {"answers": {"uniform": {"qeury": [2, -1, 1]}, "threshold": good}})
    (part,) = result.problems[0].parts
    assert not part.ok and "you wrote 'qeury': write 'query' instead" in part.message
    assert result.problems[1].ok and "did you mean 'query'?" in result.to_text()


def test_unanswered_problems_are_listed_not_failed():
    problem_set = ProblemSet(seed=0, problems=(UNIFORM, THRESHOLD))
    result = check_answers(problem_set, {"answers": {"uniform": {"query": [2, -1, 1]}}})
    assert result.ok and result.unanswered == ("threshold",)


@pytest.mark.parametrize(
    "text", ["__import__('os')", "x + 1", "2**3**99", "sqrt(-1)", "1/0", "2 3", "lambda: 1", "9" * 40, "(1, 2)"]
)
def test_unsafe_or_malformed_expressions_are_refused(text):
    with pytest.raises(ValueError):
        parse_expression(text)


def test_expressions_are_exact():
    import sympy as sp

    assert parse_expression("2.5") == sp.Rational(5, 2)
    assert parse_expression("3^(1/2)*2") == 2 * sp.sqrt(3)
    assert parse_expression("-1/4") == sp.Rational(-1, 4)


def test_check_result_displays_itself():
    _, result = _one(UNIFORM, {"query": [1, 1, 1]})
    assert "**wrong**" in result._repr_markdown_()
    assert result._repr_latex_().startswith("$") and "\\times" in result._repr_latex_()
    assert result.to_json()["ok"] is False
