"""Grading policies a course uses: feedback levels per topic (the expected answer hidden, shown after a
date, or the points alone), Gradescope's results.json checked against its documented schema with
visibilities and per-test scores, the parts answered in words collected for grading by hand (a CSV and
nbgrader notebooks), the class-wide answer key, and the grades as Canvas's and Moodle's import CSV."""

from __future__ import annotations

import csv
import json

import jsonschema
import nbformat
import pytest

from lnproofs.homework import TOPICS as ALL_TOPICS
from lnproofs.homework.classroom import student_problem_set, write_class
from lnproofs.homework.roster import Roster, Student

TOPICS = "ellipsoid,uniform,threshold"
ROSTER = Roster(
    (Student("ada", "Ada Lovelace", "ada@example.org"), Student("bob", "Bob B.", "bob@example.org"), Student("cy"))
)

#: Gradescope's results.json as its autograder specification documents it
GRADESCOPE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "score": {"type": "number"},
        "execution_time": {"type": "number"},
        "output": {"type": "string"},
        "output_format": {"type": "string"},
        "visibility": {"enum": ["hidden", "after_due_date", "after_published", "visible"]},
        "stdout_visibility": {"enum": ["hidden", "after_due_date", "after_published", "visible"]},
        "extra_data": {"type": "object"},
        "tests": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["name"],
                "properties": {
                    "score": {"type": "number"},
                    "max_score": {"type": "number"},
                    "status": {"enum": ["passed", "failed"]},
                    "name": {"type": "string"},
                    "number": {"type": "string"},
                    "output": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "visibility": {"enum": ["hidden", "after_due_date", "after_published", "visible"]},
                    "extra_data": {"type": "object"},
                },
            },
        },
    },
}

POLICY = {
    "schema": "lnproofs.homework-policy/1",
    "feedback": {
        "default": "full",
        "threshold": {"level": "hide-answer", "reveal_after": "2026-12-20T23:59:00+00:00"},
        "ellipsoid": "score-only",
    },
    "gradescope": {"visibility": "visible", "stdout_visibility": "hidden", "tests": {"uniform": "after_published"}},
}


@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    base = tmp_path_factory.mktemp("policy")
    write_class(ROSTER, 424242, TOPICS, base / "hw", pdf=False)
    subs = base / "subs"
    subs.mkdir()
    for student in ("ada", "bob"):
        problem_set = student_problem_set(base / "hw", student)
        answers = {p.id: p.solve().answers for p in problem_set.problems}
        if student == "ada":  # a wrong threshold, wrong semi-axes, and explanations in words
            answers["threshold"]["threshold"] = "5/2"
            answers["ellipsoid"]["semi_axes"] = ["1"] * (problem_set.by_id()["ellipsoid"].n - 1)
            answers["uniform"]["explain"] = "Every output z has sum (z_i - b_i)/a_i = 0."
            answers["threshold"]["explain"] = "Key 2 then lies on the segment from key 1 to key 3."
        (subs / f"{student}.json").write_text(json.dumps({"answers": answers}))
    (base / "policy.json").write_text(json.dumps(POLICY))
    return base


def _rows(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_the_class_answer_key_holds_every_students_answers(klass):
    rows = _rows(klass / "hw" / "answer_key.csv")
    for student in ("ada", "bob", "cy"):
        for problem in student_problem_set(klass / "hw", student).problems:
            for field, value in problem.solve().answers.items():
                (row,) = [r for r in rows if (r["student"], r["problem"], r["field"]) == (student, problem.id, field)]
                assert json.loads(row["answer"].lstrip("'")) == value


def test_feedback_levels_hide_the_expected_answer_until_the_date(klass, cli):
    hw, subs = klass / "hw", klass / "subs"
    threshold = student_problem_set(hw, "ada").by_id()["threshold"].solve().answers["threshold"]
    before, after = klass / "before" / "grades.csv", klass / "after" / "grades.csv"
    common = ["homework", "grade", subs, "--problems", hw, "--policy", klass / "policy.json"]
    assert cli(common + ["--out", before, "--now", "2026-12-01T12:00:00Z"]).status == 0
    assert cli(common + ["--out", after, "--now", "2026-12-21T00:00:00Z"]).status == 0
    early = (before.with_name("grades_feedback") / "ada.txt").read_text()
    late = (after.with_name("grades_feedback") / "ada.txt").read_text()
    assert "expected [hidden], you gave 5/2" in early and threshold not in early.split("threshold: 1 of")[1]
    assert "(the expected answers are hidden until 2026-12-20T23:59:00+00:00)" in early
    assert f"expected {threshold}" in late and "[hidden]" not in late.split("threshold:")[1]
    ellipsoid = early.split("ellipsoid:")[1].split("\n\n")[0]
    assert "(the messages are hidden)" in ellipsoid and "semi_axes" not in ellipsoid  # score-only
    assert "Answered in words (graded by hand): uniform explain, threshold explain" in early
    written = _rows(before.with_name("grades_written.csv"))
    assert {(r["student"], r["problem"], r["part"]) for r in written} == {
        ("ada", "uniform", "explain"),
        ("ada", "threshold", "explain"),
    }
    assert all(r["prompt"] and r["answer"] for r in written)


def test_gradescope_results_follow_the_documented_schema_and_the_policy(klass, cli, tmp_path):
    hw = klass / "hw"
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "answers.json").write_bytes((klass / "subs" / "ada.json").read_bytes())
    (tmp_path / "meta.json").write_text(json.dumps({"users": [{"email": "ada@example.org", "name": "Ada"}]}))
    out = tmp_path / "results.json"
    argv = ["homework", "grade", submission, "--problems", hw, "--format", "gradescope", "--out", out]
    argv += ["--metadata", tmp_path / "meta.json", "--policy", klass / "policy.json", "--now", "2026-12-01T00:00:00Z"]
    assert cli(argv).status == 0
    results = json.loads(out.read_text())
    jsonschema.validate(results, GRADESCOPE_SCHEMA)
    assert results["visibility"] == "visible" and results["stdout_visibility"] == "hidden"
    assert isinstance(results["execution_time"], int)
    scored = [t for t in results["tests"] if t["max_score"] > 0]
    assert [t["name"].split(": ")[1] for t in scored] == ["ellipsoid", "uniform", "threshold"]
    assert results["score"] == sum(t["score"] for t in scored) < sum(t["max_score"] for t in scored)
    by_name = {t["name"]: t for t in results["tests"]}
    assert by_name["Problem 2: uniform"]["visibility"] == "after_published"
    threshold = by_name["Problem 3: threshold"]
    assert threshold["visibility"] == "visible" and "[hidden]" in threshold["output"]
    whole = by_name["Problem 3: threshold, the whole messages"]
    assert whole["visibility"] == "after_due_date" and whole["max_score"] == 0 and "[hidden]" not in whole["output"]
    words = [t for t in results["tests"] if "graded by hand" in t["name"]]
    assert len(words) == 2 and all(t["max_score"] == 0 and "\n\n" in t["output"] for t in words)
    assert len({t["number"] for t in results["tests"]}) == len(results["tests"])


def test_grades_as_canvas_and_moodle_import_them_and_nbgrader_notebooks(klass, cli, tmp_path):
    hw, subs = klass / "hw", klass / "subs"
    out = tmp_path / "grades.csv"
    base = ["homework", "grade", subs, "--problems", hw, "--out", out, "--assignment", "Homework 7"]
    assert cli(base + ["--lms", "canvas", "--nbgrader", tmp_path / "nbgrader"]).status == 0
    assert cli(base + ["--lms", "moodle"]).status == 0
    grades = {r["student"]: r for r in _rows(out)}
    canvas = _rows(tmp_path / "grades_canvas.csv")
    assert list(canvas[0]) == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Homework 7"]
    assert canvas[0]["Student"] == "Points Possible" and canvas[0]["Homework 7"] == grades["ada"]["possible"]
    assert {(r["SIS User ID"], r["SIS Login ID"], r["Homework 7"]) for r in canvas[1:]} == {
        (s, f"{s}@example.org", grades[s]["total"]) for s in ("ada", "bob")
    }  # cy handed nothing in: left out, never a zero
    moodle = _rows(tmp_path / "grades_moodle.csv")
    assert [(r["ID number"], r["Email address"], r["Homework 7"]) for r in moodle] == [
        (s, f"{s}@example.org", grades[s]["total"]) for s in ("ada", "bob")
    ]
    source = nbformat.read(tmp_path / "nbgrader" / "source" / "homework_7" / "written.ipynb", as_version=4)
    nbformat.validate(source)
    graded = [c for c in source.cells if "nbgrader" in c.metadata]
    assert {c.metadata.nbgrader.grade_id for c in graded} == {"uniform-explain", "threshold-explain"}
    assert all(c.metadata.nbgrader.grade and c.metadata.nbgrader.solution for c in graded)
    ada = nbformat.read(tmp_path / "nbgrader" / "submitted" / "ada" / "homework_7" / "written.ipynb", as_version=4)
    nbformat.validate(ada)
    texts = {c.metadata.nbgrader.grade_id: c.source for c in ada.cells if "nbgrader" in c.metadata}
    assert texts["uniform-explain"].startswith("Every output z")


@pytest.mark.parametrize(
    "policy, fragment",
    [
        (
            {"feedback": {"threshold": "hide-answers"}},
            "is not one of full, hide-answer, score-only; did you mean 'hide-answer'?",
        ),
        (
            {"feedback": {"treshold": "full"}},
            "'treshold', which is no topic of this homework; did you mean 'threshold'?",
        ),
        ({"feedback": {"threshold": {"level": "full", "reveal_after": "next week"}}}, "is not a date-time"),
        ({"gradescope": {"visibility": "after-due-date"}}, "did you mean 'after_due_date'?"),
        ({"feedbacks": {}}, "no section ['feedbacks']"),
    ],
)
def test_a_bad_policy_is_refused_with_one_line(klass, cli, tmp_path, policy, fragment):
    (tmp_path / "p.json").write_text(json.dumps(policy))
    argv = ["homework", "grade", klass / "subs", "--problems", klass / "hw", "--out", tmp_path / "g.csv"]
    result = cli(argv + ["--policy", tmp_path / "p.json"])
    assert result.status == 2 and fragment in result.err and "Traceback" not in result.err


_FLIP = {"selectable": "unselectable", "tie-only": "selectable", "unselectable": "selectable", "never": 1}


def _wrong(problem, field, value):
    """A wrong answer of the right shape for any field."""
    if problem.topic == "selectability":
        return {k: {"status": _FLIP[v["status"]], "query": [1, 0]} for k, v in value.items()}
    if field in ("never", "winners"):
        count = len(problem.rows) if field == "never" else len(problem.keys)
        return sorted(set(range(1, count + 1)) - set(value))
    if field == "stops":
        return {k: (_FLIP["never"] if v == "never" else "never") for k, v in value.items()}
    if field == "status_at":
        return {m: _FLIP[s] for m, s in value.items()}
    if isinstance(value, int):
        return value + 1
    if isinstance(value, list):
        return [_wrong(problem, field, v) for v in value]
    return "97/3"


@pytest.mark.parametrize("topic", ALL_TOPICS)
def test_hiding_the_answer_leaves_no_expected_value_in_any_message(topic):
    from lnproofs.homework import ProblemSet, check_answers, generate

    (problem,) = generate(2026, topic).problems
    solution = problem.solve().answers
    wrong = {field: _wrong(problem, field, value) for field, value in solution.items()}
    result = check_answers(ProblemSet(seed=0, problems=(problem,)), {"answers": {topic: wrong}})
    parts = [p for p in result.problems[0].parts if not p.ok]
    assert parts, topic
    strings = set()

    def collect(value):
        if isinstance(value, dict):
            for v in value.values():
                collect(v)
        elif isinstance(value, list):
            for v in value:
                collect(v)
        elif isinstance(value, str) and ("sqrt" in value or "/" in value):
            strings.add(value)

    collect(solution)
    hidden = "\n".join(p.hidden for p in parts)
    assert "[hidden]" in hidden or topic in ("uniform", "centred")  # their messages name only what was given
    assert not [s for s in strings if s in hidden], (topic, [s for s in strings if s in hidden], hidden)
