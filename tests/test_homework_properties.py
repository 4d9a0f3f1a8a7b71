"""Every generated exercise is true: each topic's generator states the claims its instance must satisfy
(``claims()``, each decided exactly), and Hypothesis draws instances over seeds, student ids and attempts
and checks every claim.  The default run draws 25 instances per topic; the long run draws 2,000:

    pytest tests/test_homework_properties.py --hypothesis-profile=deep

Also: the wrong answers of non-spanning keys are refused, and variants differ between attempts."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lnproofs.homework import TOPICS, ProblemSet, check_answers, generate
from lnproofs.homework.problems import UniformProblem

#: instances per topic: 25, or 2,000 under the "deep" profile (tests/conftest.py)
EXAMPLES = 2000 if settings.default.max_examples >= 1000 else 25

_seeds = st.integers(min_value=0, max_value=2**63)
_students = st.none() | st.from_regex(r"[a-z][a-z0-9._-]{0,10}", fullmatch=True)
_attempts = st.integers(min_value=1, max_value=50)


@pytest.mark.parametrize("topic", TOPICS)
def test_every_generated_instance_satisfies_every_claim(topic):
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(seed=_seeds, student=_students, attempt=_attempts)
    def check(seed, student, attempt):
        (problem,) = generate(seed, topic, student=student, attempt=attempt).problems
        claims = problem.claims()
        assert claims and all(c.holds for c in claims), [c.text for c in claims if not c.holds]
        assert type(problem).from_json(json.loads(json.dumps(problem.to_json()))) == problem

    check()


@pytest.mark.parametrize("topic", TOPICS)
def test_the_library_solution_of_a_drawn_instance_is_accepted(topic):
    @settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(seed=_seeds, attempt=_attempts)
    def check(seed, attempt):
        problem_set = generate(seed, topic, attempt=attempt)
        (problem,) = problem_set.problems
        result = check_answers(problem_set, {"answers": {topic: problem.solve().answers}})
        assert result.ok, result.to_text()

    check()


def test_a_fresh_variant_per_attempt_and_per_student():
    first = generate(5, student="ada", attempt=1).to_json()["problems"]
    again = generate(5, student="ada", attempt=1).to_json()["problems"]
    second = generate(5, student="ada", attempt=2).to_json()["problems"]
    other = generate(5, student="alan", attempt=1).to_json()["problems"]
    assert first == again
    for name, variant in (("attempt 2", second), ("another student", other)):
        same = [a["topic"] for a, b in zip(first, variant) if a == b]
        assert len(same) <= 1, (name, same)  # a topic may repeat by chance, not the set


def test_variety_across_a_class():
    sets = [generate(11, student=f"s{i:03d}") for i in range(60)]
    gains = {p.by_id()["ellipsoid"].gain for p in sets}
    widths = {p.by_id()["projection"].n for p in sets}
    thresholds = {p.by_id()["threshold"].key2 for p in sets}
    assert len(gains) >= 55 and widths == {3, 4, 5, 6} and len(thresholds) >= 7


#: as the old generator could draw: four keys b + diag(a) y, y in {+-(e1 - e2), +-(e3 - e4)}, whose
#: differences do not span the output plane of this LayerNorm
_GAIN, _BIAS = (1, 2, -1, 3), (0, 1, 0, -1)
_YS = ((1, -1, 0, 0), (-1, 1, 0, 0), (0, 0, 1, -1), (0, 0, -1, 1))
NON_SPANNING = UniformProblem(
    gain=_GAIN, bias=_BIAS, keys=tuple(tuple(a * y + b for a, y, b in zip(_GAIN, ys, _BIAS)) for ys in _YS)
)


def test_a_query_that_only_ties_the_keys_listed_is_refused():
    problem_set = ProblemSet(seed=0, problems=(NON_SPANNING,))
    assert not all(c.holds for c in NON_SPANNING.claims())  # the claim names what the old generator missed
    for query in ([2, 1, 0, 0], ["0", "0", "3", "-1"], [2, 1, 3, -1]):  # each q_i a_i equal within a pair
        result = check_answers(problem_set, {"answers": {"uniform": {"query": query}}})
        (part,) = result.problems[0].parts
        assert not part.ok and "not every output of this LayerNorm" in part.message, part.message
    right = [Fraction(1, a) * 6 for a in NON_SPANNING.gain]
    assert check_answers(problem_set, {"answers": {"uniform": {"query": [str(v) for v in right]}}}).ok
