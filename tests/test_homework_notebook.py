"""The notebook handout: filled in programmatically, executed headless, and its answers file graded
by 'homework grade'; and the Gradescope autograder, run with the layout the documentation shows."""

from __future__ import annotations

import csv
import json
import re
import shlex
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from lnproofs.homework.classroom import student_problem_set, write_class
from lnproofs.homework.grading import possible_points
from lnproofs.homework.roster import Roster, Student

DOCS = Path(__file__).resolve().parent.parent / "docs" / "homework.md"
SEED = 90210
_FIELD = re.compile(r'^(\s*)"([^"]+)": None,(.*)$')


@pytest.fixture(scope="module")
def hw(tmp_path_factory):
    folder = tmp_path_factory.mktemp("nb") / "hw"
    roster = Roster((Student("ana", "Ana A.", "ana@example.org"), Student("ben", "Ben B.", "ben@example.org")))
    write_class(roster, SEED, None, folder, pdf=False, notebook=True)
    return folder


def _fill(cell_source: str, answers: dict, keep) -> str:
    """Replace ``None`` on each answer line by the value in ``answers`` (top level, or one level down)."""
    lines = []
    for line in cell_source.splitlines():
        match = _FIELD.match(line)
        if match and keep(match.group(2)):
            name = match.group(2)
            nested = next((v for v in answers.values() if isinstance(v, dict) and name in v), {})
            written = "Because every output lies in the hyperplane."  # a part answered in words
            value = answers[name] if name in answers else nested.get(name, written)
            line = f"{match.group(1)}{json.dumps(name)}: {json.dumps(value)},"
        lines.append(line)
    return "\n".join(lines)


def _run(notebook, where: Path):
    NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(where)}}).execute()
    errors = [
        o
        for c in notebook.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]
    assert not errors, errors


def test_filled_notebooks_are_graded_through_homework_grade(hw, tmp_path, cli):
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    expected = {}
    for student in ("ana", "ben"):
        path = hw / "students" / student / "homework.ipynb"
        notebook = nbformat.read(path, as_version=4)
        nbformat.validate(notebook)
        problem_set = student_problem_set(hw, student)
        points = {}
        for position, problem in enumerate(problem_set.problems):
            (cell,) = [
                c
                for c in notebook.cells
                if c.cell_type == "code" and c.metadata.get("lnproofs", {}).get("problem") == problem.id
            ]
            answers = problem.solve().answers  # the instructor's solutions
            if student == "ana":  # every answer
                cell.source = _fill(cell.source, answers, lambda name: True)
                points[problem.id] = possible_points(problem)
            elif problem.topic == "projection":  # only P: 1 of 3
                cell.source = _fill(cell.source, answers, lambda name: name == "P")
                points[problem.id] = 1
            elif problem.topic == "uniform":  # as Fractions, which the notebook writes as "p/q"
                values = ", ".join(f"Fraction({v!r})" for v in answers["query"])
                cell.source = "from fractions import Fraction\n" + cell.source.replace(
                    '"query": None,', f'"query": [{values}],'
                )
                points[problem.id] = possible_points(problem)
            elif position % 2 == 0:
                cell.source = _fill(cell.source, answers, lambda name: True)
                points[problem.id] = possible_points(problem)
            else:  # left as it came: not answered
                points[problem.id] = 0
        expected[student] = points
        work = tmp_path / f"work-{student}"
        work.mkdir()
        _run(notebook, work)
        written = work / f"{student}.json"
        assert json.loads(written.read_text())["student_id"] == student
        (submissions / f"{student}.json").write_bytes(written.read_bytes())
    out = tmp_path / "grades.csv"
    result = cli(["homework", "grade", submissions, "--problems", hw, "--out", out])
    assert result.status == 0, result.out + result.err
    with open(out, newline="") as handle:
        rows = {r["student"]: r for r in csv.DictReader(handle)}
    for student, points in expected.items():
        assert {p: int(rows[student][p]) for p in points} == points, (student, rows[student])
    assert int(rows["ana"]["total"]) == int(rows["ana"]["possible"])
    feedback = (tmp_path / "grades_feedback" / "ben.txt").read_text()
    assert "not answered" in feedback and "no answer given for 'Px'" in feedback


def test_an_untouched_notebook_writes_an_answers_file_with_nothing_answered(hw, tmp_path, cli):
    notebook = nbformat.read(hw / "students" / "ben" / "homework.ipynb", as_version=4)
    _run(notebook, tmp_path)
    data = json.loads((tmp_path / "ben.json").read_text())
    assert data == {"schema": "lnproofs.homework-answers/1", "student_id": "ben", "answers": {}}


def test_single_student_notebook_and_class_notebooks_hold_no_answers(hw, tmp_path, cli):
    assert cli(["homework", "new", "--seed", "3", "--out", tmp_path / "one", "--no-pdf", "--notebook"]).status == 0
    single = nbformat.read(tmp_path / "one" / "homework.ipynb", as_version=4)
    nbformat.validate(single)
    assert "answers.json" in single.cells[-1].source and "student_id" not in single.cells[-1].source
    for notebook in (single, nbformat.read(hw / "students" / "ana" / "homework.ipynb", as_version=4)):
        code = [c for c in notebook.cells if c.cell_type == "code"]
        assert all(not c.outputs for c in code)
        fields = [line for c in code for line in c.source.splitlines() if _FIELD.match(line)]
        assert fields and all('": None,' in line for line in fields)


# ------------------------------------------------------------------ Gradescope, as docs/homework.md sets it up
def _documented_command(root: Path) -> list[str]:
    """The 'lnproofs homework grade' line of run_autograder in the docs, with /autograder moved under ``root``."""
    text = DOCS.read_text()
    block = re.search(r"`run_autograder`:\n\n```bash\n(#!.*?)```", text, flags=re.S)
    assert block, "docs/homework.md shows run_autograder"
    command = block.group(1).replace("\\\n", " ")
    line = next(line for line in command.splitlines() if "homework grade" in line)
    argv = shlex.split(line.replace("/autograder", str(root / "autograder")))
    return argv[argv.index("homework") :]


def _autograder(tmp_path: Path, hw: Path, files: dict, email: str) -> dict:
    import shutil

    root = tmp_path / "gs"
    shutil.copytree(hw, root / "autograder" / "source" / "hw7")
    (root / "autograder" / "submission").mkdir(parents=True)
    for name, text in files.items():
        (root / "autograder" / "submission" / name).write_text(text)
    (root / "autograder" / "submission_metadata.json").write_text(
        json.dumps({"id": 1, "users": [{"email": email, "id": 7, "name": "Someone"}], "assignment": {"title": "HW 7"}})
    )
    return root


def test_gradescope_results_json_as_the_documented_autograder_runs_it(hw, tmp_path, cli):
    problem_set = student_problem_set(hw, "ana")
    answers = {p.id: p.solve().answers for p in problem_set.problems}
    answers["threshold"]["threshold"] = "5/2"  # one wrong part
    del answers["uniform"]  # one problem not answered
    root = _autograder(
        tmp_path, hw, {"my answers.json": json.dumps({"answers": answers}), "homework.ipynb": "{}"}, "ANA@example.org"
    )
    result = cli(_documented_command(root))
    assert result.status == 0, result.err
    results = json.loads((root / "autograder" / "results" / "results.json").read_text())
    tests = {t["name"].split(": ")[1]: t for t in results["tests"]}
    assert set(tests) == {p.id for p in problem_set.problems}
    for problem in problem_set.problems:
        test = tests[problem.id]
        assert set(test) >= {"name", "score", "max_score", "output"}
        assert test["max_score"] == possible_points(problem)
    assert tests["threshold"]["score"] == tests["threshold"]["max_score"] - 1
    assert "threshold:" in tests["threshold"]["output"] and "5/2" in tests["threshold"]["output"]
    assert tests["uniform"]["score"] == 0 and tests["uniform"]["output"] == "not answered"
    assert results["score"] == sum(t["score"] for t in results["tests"])
    assert results["score"] == sum(possible_points(p) for p in problem_set.problems) - 2
    assert "homework.ipynb" in results["output"]  # what was not read is named


@pytest.mark.parametrize(
    "files, email, fragment",
    [
        ({"a.json": '{"answers": '}, "ana@example.org", "not valid JSON"),
        ({"notes.txt": "hello"}, "ana@example.org", "not a .json answers file"),
        ({}, "ana@example.org", "no answers file"),
        ({"a.json": '{"student_id": "ana", "answers": {}}'}, "ben@example.org", "submitted by 'ben'"),
    ],
)
def test_gradescope_unreadable_submission_scores_zero_with_the_reason(hw, tmp_path, cli, files, email, fragment):
    root = _autograder(tmp_path, hw, files, email)
    result = cli(_documented_command(root))
    assert result.status == 0, result.err
    results = json.loads((root / "autograder" / "results" / "results.json").read_text())
    assert results["score"] == 0 and results["tests"] == []
    assert fragment in results["output"]
