"""Homework for a whole class: the roster, one problem set per student, nothing given away in a
student's folder, and a class of 30 with right, wrong, partial and malformed submissions graded in
one command; the expected points are worked out here from what each submission holds."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from lnproofs.homework import generate
from lnproofs.homework.classroom import student_problem_set
from lnproofs.homework.grading import possible_points

SEED = 7340213  # large, so that finding it in a student's file cannot be a coincidence
N_STUDENTS = 30
STUDENT_FILES = {"problems.md", "problems.tex", "problems.pdf", "homework.ipynb"}


def _roster_text(count: int) -> str:
    rows = ["id,name,email"]
    for i in range(count):
        email = f"s{i:02d}@example.org" if i % 3 else ""
        rows.append(f"s{i:02d},Student {i},{email}")
    return "\n".join(rows) + "\n"


@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    """A class of 30 written by the command line (no PDFs; with the notebooks)."""
    from lnproofs.cli import main

    base = tmp_path_factory.mktemp("class")
    (base / "roster.csv").write_text(_roster_text(N_STUDENTS))
    status = main(
        [
            "homework",
            "new",
            "--roster",
            str(base / "roster.csv"),
            "--seed",
            str(SEED),
            "--out",
            str(base / "hw7"),
            "--no-pdf",
            "--notebook",
        ]
    )
    assert status == 0
    return base


def _files(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# ------------------------------------------------------------------ generation
def test_each_student_has_their_own_problems_drawn_from_seed_and_id(klass):
    hw = klass / "hw7"
    sets = {}
    for i in range(N_STUDENTS):
        student = f"s{i:02d}"
        problem_set = student_problem_set(hw, student)
        assert problem_set == generate(SEED, None, student=student)
        sets[student] = json.dumps([p.to_json() for p in problem_set.problems])
    assert len(set(sets.values())) == N_STUDENTS  # nobody shares a problem set
    # one road: without a student the generator gives the seed-only problems of 'homework new --seed'
    assert generate(SEED).student is None and generate(SEED) != generate(SEED, student="s00")
    info = json.loads((hw / "class.json").read_text())
    assert info["seed"] == SEED and [s["id"] for s in info["students"]] == list(sets)


def test_class_is_byte_reproducible_and_a_smaller_roster_changes_nobody(klass, tmp_path):
    # another interpreter, another hash seed, three of the students: their folders are identical
    (tmp_path / "roster.csv").write_text(
        "id,name,email\ns07,Student 7,s07@example.org\ns00,Student 0,\ns13,Student 13,s13@example.org\n"
    )
    env = dict(os.environ, PYTHONHASHSEED="4321")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "lnproofs",
            "homework",
            "new",
            "--roster",
            str(tmp_path / "roster.csv"),
            "--seed",
            str(SEED),
            "--out",
            str(tmp_path / "again"),
            "--no-pdf",
            "--notebook",
        ],
        check=True,
        env=env,
        capture_output=True,
        timeout=600,
    )
    for student in ("s00", "s07", "s13"):
        for part in ("students", "solutions"):
            assert _files(tmp_path / "again" / part / student) == _files(klass / "hw7" / part / student)


def _answer_strings(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _answer_strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _answer_strings(v)
    elif isinstance(value, str):
        yield value


def test_nothing_in_a_students_folder_gives_the_answers_away(klass):
    import sympy as sp

    hw = klass / "hw7"
    for i in range(N_STUDENTS):
        student = f"s{i:02d}"
        folder = hw / "students" / student
        files = _files(folder)
        assert set(files) <= STUDENT_FILES and {"problems.md", "problems.tex", "homework.ipynb"} <= set(files)
        text = "\n".join(data.decode("utf-8") for data in files.values())
        assert str(SEED) not in text  # the seed and an id would regenerate the solutions
        assert "olution" not in text and "certificate" not in text
        problem_set = student_problem_set(hw, student)
        for problem in problem_set.problems:  # the data of a problem is no answer given away
            if problem.topic == "threshold":
                from lnproofs.homework.statements import latex_of

                for value in problem.key2:  # as in the sheets, and JSON-escaped as in the notebook
                    text = text.replace(latex_of(value), "").replace(json.dumps(latex_of(value))[1:-1], "")
            if problem.topic == "support":  # the radius sqrt(n) of the sphere is data
                data = f"\\sqrt{{{problem.n}}}"
                text = text.replace(data, "").replace(json.dumps(data)[1:-1], "")
        irrational = set()
        for problem in problem_set.problems:
            solution = problem.solve()
            for value in _answer_strings(solution.answers):
                if "sqrt" in value:
                    irrational.add(value)
                    irrational.add(sp.latex(sp.sympify(value)))
            if problem.topic == "selectability":  # the evidence of each status
                for entry in solution.answers["keys"].values():
                    if "combination" in entry:
                        weights = ", ".join(json.dumps(w) for w in entry["combination"]["weights"])
                        irrational.add(f'"weights": [{weights}]')
        assert irrational
        leaked = [value for value in irrational if value in text]
        assert not leaked, (student, leaked)


# ------------------------------------------------------------------ a class of 30, graded in one command
_FLIP = {"selectable": "tie-only", "tie-only": "unselectable", "unselectable": "selectable"}


def _corrupt(field, value):
    """A wrong value of the same shape (the problem ids and field names make it wrong for sure)."""
    if isinstance(value, int):
        return value + 1
    if field == "query":
        return [0] * len(value)  # the zero query never counts
    if field == "status_at":
        return {m: _FLIP[s] for m, s in value.items()}
    if isinstance(value, str):
        return f"1 + ({value})"
    if value and isinstance(value[0], list):
        return [[f"1 + ({value[0][0]})", *value[0][1:]], *value[1:]]
    return [f"1 + ({value[0]})", *value[1:]]


def _plan(index: int) -> str:
    kinds = ["right", "wrong", "partial", "mixed", "right-subfolder", "wrong-renamed"]
    return kinds[index % len(kinds)]


def _make_submission(problem_set, kind: str, rng_index: int):
    """(answers object, expected points per problem id) for one student's submission of ``kind``."""
    answers, expected = {}, {}
    for position, problem in enumerate(problem_set.problems):
        solution = problem.solve().answers
        possible = possible_points(problem)
        mode = {
            "right": "right",
            "right-subfolder": "right",
            "wrong": "wrong",
            "wrong-renamed": "wrong",
            "partial": ("omit", "right", "drop")[(position + rng_index) % 3],
            "mixed": ("wrong", "right", "drop", "omit")[(position + rng_index) % 4],
        }[kind]
        if mode == "omit":  # the problem is not answered
            expected[problem.id] = 0
            continue
        given = json.loads(json.dumps(solution))
        lost = 0
        if problem.topic == "selectability":
            keys = given["keys"]
            chosen = [k for k in sorted(keys, key=int) if (int(k) + rng_index) % 3 == 0]
            for k in chosen:
                if mode == "wrong":
                    status = _FLIP[keys[k]["status"]]
                    keys[k] = {"status": status, "query": [1, 0]} if status == "selectable" else {"status": status}
                elif mode == "drop":
                    del keys[k]
            lost = len(chosen) if mode in ("wrong", "drop") else 0
        elif problem.topic == "vocab" and mode == "wrong":  # one point per token: toggle some tokens
            chosen = {t for t in range(1, 9) if (t + rng_index) % 3 == 0}
            given["never"] = sorted(set(given["never"]) ^ chosen)
            lost = len(chosen)
        elif problem.topic == "vocab" and mode == "drop":  # the only field: every token's point is lost
            del given["never"]
            lost = possible
        elif problem.topic == "causal" and mode in ("wrong", "drop"):  # one point per key
            stops = given["stops"]
            chosen = [k for k in sorted(stops, key=int) if (int(k) + rng_index) % 3 == 0]
            for k in chosen:
                if mode == "wrong":
                    stops[k] = int(k) if stops[k] == "never" else "never"
                else:
                    del stops[k]
            lost = len(chosen)
        elif problem.topic == "centred" and mode in ("wrong", "drop"):  # one point per key
            if mode == "wrong":
                chosen = {k for k in range(1, len(problem.keys) + 1) if (k + rng_index) % 3 == 0}
                given["winners"] = sorted(set(given["winners"]) ^ chosen)
                lost = len(chosen)
            else:
                del given["winners"]
                lost = len(problem.keys)
        elif problem.topic == "rotary" and mode in ("wrong", "drop"):  # the matrix, and one point per key
            if (position + rng_index) % 2:
                given["relative"] = _corrupt("relative", given["relative"]) if mode == "wrong" else None
                lost = 1
            elif mode == "wrong":
                chosen = {k for k in range(1, len(problem.keys) + 1) if (k + rng_index) % 3 == 0}
                given["winners"] = sorted(set(given["winners"]) ^ chosen)
                lost = len(chosen)
            else:
                del given["winners"]
                lost = len(problem.keys)
        elif mode in ("wrong", "drop"):
            field = problem.fields[(position + rng_index) % len(problem.fields)]
            if mode == "wrong":
                given[field] = _corrupt(field, given[field])
            else:
                del given[field]
            lost = 1
        answers[problem.id] = given
        expected[problem.id] = possible - lost
    return answers, expected


def _malformed(folder: Path, students: list[str]) -> dict:
    """Write one malformed submission per student in ``students``; file -> (student, reason fragment)."""
    cases = [
        ("{}.json", '{"answers": {"threshold": ', "not valid JSON"),
        ("{}.json", '{"schema": "other/2", "answers": {}}', "schema"),
        ("{}.json", '{"answers": null}', "must be a JSON object"),
        ("{}.json", '{"answers": [1, 2]}', "must be a JSON object"),
        ("{}.json", b"\xff\xfe{}", "not UTF-8"),
        ("{}.json", "[" * 200000 + "]" * 200000, "nested too deep"),
        ("{}.json", '{"student_id": 5, "answers": {}}', "must be text"),
    ]
    out = {}
    for student, (pattern, content, fragment) in zip(students, cases):
        path = folder / pattern.format(student)
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
        out[path.name] = (student, fragment)
    return out


def _read_csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_a_class_of_30_graded_in_one_command(klass, tmp_path, cli):
    hw = klass / "hw7"
    subs = tmp_path / "submissions"
    subs.mkdir()
    ids = [f"s{i:02d}" for i in range(N_STUDENTS)]
    missing = {"s05", "s17"}
    malformed_students = ["s01", "s08", "s12", "s19", "s22", "s26", "s29"]
    expected = {}
    for index, student in enumerate(ids):
        if student in missing or student in malformed_students:
            continue
        kind = _plan(index)
        answers, points = _make_submission(student_problem_set(hw, student), kind, index)
        expected[student] = points
        data = {"schema": "lnproofs.homework-answers/1", "answers": answers}
        if kind == "right-subfolder":  # a per-student folder, as course systems export
            (subs / student.upper()).mkdir()
            (subs / student.upper() / "answers.json").write_text(json.dumps(data))
        elif kind == "wrong-renamed":  # the file's name is no id; the id inside says whose it is
            (subs / f"hw7 final ({index}).json").write_text(json.dumps({**data, "student_id": student}))
        else:
            (subs / f"{student}.json").write_text(json.dumps(data))
    bad = _malformed(subs, malformed_students)
    # files that are no submission of a roster student, each listed apart with its reason
    (subs / "s99.json").write_text('{"answers": {}}')
    (subs / "notes.txt").write_text("see attached")
    (subs / "s03.ipynb").write_text("{}")
    (subs / "stranger.json").write_text(json.dumps({"student_id": "s42", "answers": {}}))
    (subs / ".DS_Store").write_text("x")  # hidden: skipped
    apart = {
        "s99.json": "cannot tell whose",
        "notes.txt": "not a .json answers file",
        "s03.ipynb": "notebook",
        "stranger.json": "'s42' is not on the roster",
    }

    out = tmp_path / "out" / "grades.csv"
    result = cli(["homework", "grade", subs, "--problems", hw, "--out", out])
    assert result.status == 1, result.err  # some files could not be graded: listed, and said so
    rows = _read_csv(out)
    assert [r["student"] for r in rows] == ids  # one row per roster student, in roster order
    problems = [p.id for p in generate(SEED, None, student="s00").problems]
    for row in rows:
        student = row["student"]
        if student in expected:
            possible = sum(possible_points(p) for p in student_problem_set(hw, student).problems)
            assert row["status"] == "graded", row
            assert {p: int(row[p]) for p in problems} == expected[student], student
            assert int(row["total"]) == sum(expected[student].values()) and int(row["possible"]) == possible
        else:  # never a silent zero: the cells stay empty and the status says why
            assert row["status"] == ("no submission" if student in missing else "not graded"), row
            assert all(row[p] == "" for p in problems) and row["total"] == ""
    kinds = {_plan(i) for i, s in enumerate(ids) if s in expected}
    assert {"right", "wrong", "partial", "mixed"} <= kinds
    totals = {s: sum(p.values()) for s, p in expected.items()}
    assert len(set(totals.values())) >= 4  # a real mix of grades

    listed = _read_csv(out.with_name("grades_not_graded.csv"))
    by_file = {r["file"]: r for r in listed if r["file"]}
    for name, (student, fragment) in bad.items():
        assert by_file[name]["student"] == student and fragment.lower() in by_file[name]["reason"].lower(), by_file[
            name
        ]
    for name, fragment in apart.items():
        assert fragment in by_file[name]["reason"], by_file[name]
    assert ".DS_Store" not in by_file
    assert {r["student"] for r in listed if r["reason"] == "no submission"} == missing
    assert len(listed) == len(bad) + len(apart) + len(missing)

    feedback = out.with_name("grades_feedback")
    assert sorted(p.stem for p in feedback.iterdir()) == ids
    for student, points in expected.items():
        text = (feedback / f"{student}.txt").read_text()
        possible = sum(possible_points(p) for p in student_problem_set(hw, student).problems)
        assert f"Score: {sum(points.values())} of {possible} points" in text
        for problem, got in points.items():
            assert f"{problem}: {got} of " in text
        # every wrong answer has its own message line under its problem
        wrong_lines = [line for line in text.splitlines() if line.startswith("  ")]
        lost_answered = sum(
            possible_points(p) - points[p.id]
            for p in student_problem_set(hw, student).problems
            if f"{p.id}: 0 of {possible_points(p)} points (not answered)" not in text
        )
        assert len(wrong_lines) == lost_answered, (student, text)
    for name, (student, fragment) in bad.items():
        text = (feedback / f"{student}.txt").read_text()
        assert "could not be graded" in text and fragment.lower() in text.lower()
    for student in missing:
        assert "No submission was received" in (feedback / f"{student}.txt").read_text()


def test_grade_against_a_single_problem_set_without_roster(tmp_path, cli):
    # 'homework new --seed' (one problem set for everyone) is graded the same way; ids come from the files
    assert (
        cli(
            ["homework", "new", "--seed", "2", "--topics", "uniform,threshold", "--out", tmp_path / "hw", "--no-pdf"]
        ).status
        == 0
    )
    problem_set = generate(2, "uniform,threshold")
    answers = {p.id: p.solve().answers for p in problem_set.problems}
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "kim.json").write_text(json.dumps({"answers": answers}))
    (subs / "lee.json").write_text(json.dumps({"answers": {"threshold": answers["threshold"]}}))
    result = cli(["homework", "grade", subs, "--problems", tmp_path / "hw", "--out", tmp_path / "g.csv", "--json"])
    assert result.status == 0, result.err
    assert result.json()["graded"] == 2 and result.json()["no_submission"] == []
    rows = {r["student"]: r for r in _read_csv(tmp_path / "g.csv")}
    assert (rows["kim"]["total"], rows["kim"]["possible"]) == ("3", "3")
    assert (rows["lee"]["uniform"], rows["lee"]["threshold"], rows["lee"]["total"]) == ("0", "2", "2")


def test_exact_values_in_any_form_earn_the_points(klass, tmp_path, cli):
    hw = klass / "hw7"
    problem = student_problem_set(hw, "s04").by_id()["projection"]
    P = problem.solve().answers["P"]

    def decimal(v):  # "0.75" is read as exactly 3/4; a fraction with no finite decimal stays "p/q"
        v = Fraction(v)
        return str(float(v)) if v * 10**6 == int(v * 10**6) else f"{v.numerator}/{v.denominator}"

    decimals = [[decimal(v) for v in row] for row in P]
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "s04.json").write_text(json.dumps({"answers": {"projection": {"P": decimals}}}))
    assert cli(["homework", "grade", subs, "--problems", hw, "--out", tmp_path / "g.csv"]).status == 0
    row = next(r for r in _read_csv(tmp_path / "g.csv") if r["student"] == "s04")
    assert row["projection"] == "1"  # P right; P_squared and Px missing: 1 of 3


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_json_numbers_are_wrong_answers_not_crashes(tmp_path, cli, token):
    # Python's JSON reader accepts NaN and Infinity; they are answers refused with a message
    problem_set = generate(2, "uniform")
    n = len(problem_set.problems[0].gain)
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "kim.json").write_text(
        '{"answers": {"uniform": {"query": [' + ", ".join([token] + ["1"] * (n - 1)) + "]}}}"
    )
    assert (
        cli(["homework", "new", "--seed", "2", "--topics", "uniform", "--out", tmp_path / "hw", "--no-pdf"]).status == 0
    )
    result = cli(["homework", "grade", subs, "--problems", tmp_path / "hw", "--out", tmp_path / "g.csv"])
    assert result.status == 0, result.out + result.err
    assert "is not a finite number" in (tmp_path / "g_feedback" / "kim.txt").read_text()


@pytest.mark.skipif(__import__("shutil").which("pdflatex") is None, reason="pdflatex is not installed")
def test_class_pdfs_compile_for_an_id_that_latex_must_escape(tmp_path, cli):
    (tmp_path / "roster.csv").write_text("id,name\nada_l.x,Ada\n")
    result = cli(
        [
            "homework",
            "new",
            "--roster",
            tmp_path / "roster.csv",
            "--seed",
            "5",
            "--topics",
            "threshold",
            "--out",
            tmp_path / "hw",
        ]
    )
    assert result.status == 0, result.err
    for path in ("students/ada_l.x/problems.pdf", "solutions/ada_l.x/problems.pdf", "solutions/ada_l.x/solutions.pdf"):
        assert (tmp_path / "hw" / path).read_bytes().startswith(b"%PDF"), path
    assert not list((tmp_path / "hw").rglob("*.log"))


def test_disagreeing_name_and_id_or_two_files_for_one_student_are_listed_not_graded(klass, tmp_path, cli):
    hw = klass / "hw7"
    subs = tmp_path / "subs"
    (subs / "S04").mkdir(parents=True)
    (subs / "s02.json").write_text(json.dumps({"student_id": "s03", "answers": {}}))
    (subs / "s04.json").write_text(json.dumps({"answers": {}}))
    (subs / "S04" / "answers.json").write_text(json.dumps({"answers": {}}))
    (subs / "S04" / "deeper").mkdir()
    out = tmp_path / "g.csv"
    assert cli(["homework", "grade", subs, "--problems", hw, "--out", out]).status == 1
    listed = {r["file"]: r for r in _read_csv(tmp_path / "g_not_graded.csv") if r["file"]}
    assert "its name says student 's02' but its \"student_id\" says 's03'" in listed["s02.json"]["reason"]
    for name in ("s04.json", str(Path("S04") / "answers.json")):
        assert listed[name]["student"] == "s04" and "2 submissions for student 's04'" in listed[name]["reason"]
    assert "nested too deep" in listed[str(Path("S04") / "deeper")]["reason"]
    rows = {r["student"]: r for r in _read_csv(out)}
    assert rows["s04"]["status"] == "not graded" and rows["s04"]["total"] == ""
    assert rows["s02"]["status"] == "not graded" and rows["s03"]["status"] == "no submission"
