"""What a course's other systems import: the grades as an LMS gradebook CSV (Canvas, Moodle), the parts
answered in words for grading by hand (a CSV, and notebooks for nbgrader's manual grading), and the
class-wide answer key for the teacher.

* ``canvas``: the columns of Canvas's gradebook import, ``Student, ID, SIS User ID, SIS Login ID,
  Section`` and one assignment column, with a ``Points Possible`` row; the roster id goes in ``SIS User
  ID``, the email in ``SIS Login ID``.
* ``moodle``: ``ID number, Email address`` and one assignment column, as Moodle's grade import maps them.
* nbgrader: ``DIR/source/ASSIGNMENT/written.ipynb`` (one manually graded Markdown cell per written part,
  nbgrader cell metadata schema 3) and ``DIR/submitted/ID/ASSIGNMENT/written.ipynb`` per student, holding
  that student's text in the same cells (nbgrader's course folder layout).
"""

from __future__ import annotations

import json
from pathlib import Path

from ..certificates.writes import folder_entry, output_folder, write_text
from .csvtext import csv_text

__all__ = ["LMS_FORMATS", "lms_csv", "written_csv", "write_nbgrader", "answer_key_csv"]

LMS_FORMATS = ("canvas", "moodle")


def lms_csv(gradebook, kind: str, assignment: str = "Homework") -> str:
    """The totals of every graded student in the ``kind`` LMS's import format (students not graded are left out)."""
    graded = [(s, gradebook.grade_of(s.id)) for s in gradebook.students]
    graded = [(s, g) for s, g in graded if g is not None]
    possible = max((g.possible for _, g in graded), default=0)
    if kind == "canvas":
        rows = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", assignment]]
        rows.append(["Points Possible", "", "", "", "", possible])
        rows += [[s.name or s.id, "", s.id, s.email, "", g.total] for s, g in graded]
    else:
        rows = [["ID number", "Email address", assignment]]
        rows += [[s.id, s.email, g.total] for s, g in graded]
    return csv_text(rows)


def written_csv(gradebook) -> str:
    """Every part answered in words: ``student, name, problem, part, prompt, answer``."""
    rows = [["student", "name", "problem", "part", "prompt", "answer"]]
    for grade in gradebook.grades:
        rows += [
            [grade.student.id, grade.student.name, p, part, prompt, text] for p, part, prompt, text in grade.written
        ]
    return csv_text(rows)


def _cell(grade_id: str, source: str, points: int) -> dict:
    return {
        "cell_type": "markdown",
        "id": grade_id,
        "metadata": {
            "nbgrader": {
                "grade": True,
                "grade_id": grade_id,
                "locked": False,
                "points": points,
                "schema_version": 3,
                "solution": True,
                "task": False,
            }
        },
        "source": source,
    }


def _notebook(cells: list[dict]) -> str:
    data = {
        "cells": cells,
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def _prompts(topics) -> list[tuple[str, str, str]]:
    from .problems import PROBLEM_CLASSES

    return [(t, name, prompt) for t in topics for name, prompt in PROBLEM_CLASSES[t].written]


def write_nbgrader(gradebook, folder, assignment: str = "homework", points: int = 1) -> dict:
    """The written parts as nbgrader's manually graded answers (layout in the module docstring)."""
    folder = output_folder(folder, "--nbgrader")
    prompts = _prompts(gradebook.problems)

    def cells(answers: dict) -> list[dict]:
        out = []
        for topic, name, prompt in prompts:
            out.append(
                {
                    "cell_type": "markdown",
                    "id": f"{topic}-{name}-prompt",
                    "metadata": {},
                    "source": f"**{topic}, {name}.** {prompt}",
                }
            )
            out.append(_cell(f"{topic}-{name}", answers.get((topic, name), "YOUR ANSWER HERE"), points))
        return out

    source = folder_entry(folder, Path("source") / assignment, folder=True)
    write_text(folder_entry(source, "written.ipynb"), _notebook(cells({})))
    written = {"source": source / "written.ipynb"}
    for grade in gradebook.grades:
        place = folder_entry(folder, Path("submitted") / grade.student.id / assignment, folder=True)
        answers = {(p, part): text for p, part, _, text in grade.written}
        write_text(folder_entry(place, "written.ipynb"), _notebook(cells(answers)))
        written[grade.student.id] = place / "written.ipynb"
    return written


def answer_key_csv(rows) -> str:
    """The class-wide answer key: ``student, name, problem, field, answer`` (the answer as compact JSON),
    from (student, problem set, solutions) triples."""
    out = [["student", "name", "problem", "field", "answer"]]
    for student, problem_set, solutions in rows:
        for problem, solution in zip(problem_set.problems, solutions):
            for field, value in solution.answers.items():
                out.append([student.id, student.name, problem.id, field, json.dumps(value, ensure_ascii=False)])
    return csv_text(out)
