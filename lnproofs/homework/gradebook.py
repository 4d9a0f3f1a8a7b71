"""Writing a :class:`.grading.Gradebook`: the gradebook CSV, the list of what was not graded,
one feedback file per student, and Gradescope's autograder ``results.json``.

``grades.csv`` has one row per roster student (in roster order): ``student``, ``name``,
``file``, ``status`` (``graded``, ``not graded`` or ``no submission``), one column of
points per problem, ``total`` and ``possible``.  A student who was not graded has empty
point cells, never a zero.  ``grades_not_graded.csv`` (next to it, named after it) lists
``file``, ``student`` and ``reason`` for every submission that could not be graded and
every roster student without a submission, and every answer that was too complex to check
(graded 0 points, to be checked by hand).  Cells that a spreadsheet would read as a
formula (starting with ``= + - @``) are written with a leading apostrophe.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from ..certificates.writes import folder_entry, output_file, output_folder, write_text
from .grading import Gradebook, StudentGrade

__all__ = [
    "gradebook_csv",
    "not_graded_csv",
    "feedback_text",
    "write_gradebook",
    "gradebook_outputs",
    "gradescope_results",
    "write_gradescope",
    "companion_paths",
]


def _cell(value) -> str:
    text = str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def _csv(rows) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for row in rows:
        writer.writerow([_cell(v) for v in row])
    return buffer.getvalue()


def _status(gradebook: Gradebook) -> dict:
    """student id -> (status, file) for the students who were not graded."""
    out = {}
    for item in gradebook.not_graded:
        if item.student and item.student not in out:
            out[item.student] = ("not graded", item.file)
    for student in gradebook.missing:
        out[student.id] = ("no submission", "")
    return out


def gradebook_csv(gradebook: Gradebook) -> str:
    rows = [["student", "name", "file", "status", *gradebook.problems, "total", "possible"]]
    status = _status(gradebook)
    for student in gradebook.students:
        grade = gradebook.grade_of(student.id)
        if grade is not None:
            points = {s.problem: s.points for s in grade.scores}
            rows.append(
                [
                    student.id,
                    student.name,
                    grade.file,
                    "graded",
                    *(points.get(p, "") for p in gradebook.problems),
                    grade.total,
                    grade.possible,
                ]
            )
        else:
            what, file = status.get(student.id, ("no submission", ""))
            rows.append([student.id, student.name, file, what, *([""] * len(gradebook.problems)), "", ""])
    return _csv(rows)


def not_graded_csv(gradebook: Gradebook) -> str:
    rows = [["file", "student", "reason"]]
    rows += [[n.file, n.student, n.reason] for n in gradebook.not_graded + gradebook.too_complex]
    rows += [["", s.id, "no submission"] for s in gradebook.missing]
    return _csv(rows)


def _grade_lines(grade: StudentGrade) -> list[str]:
    lines = [f"Submission: {grade.file}", f"Score: {grade.total} of {grade.possible} points", ""]
    for s in grade.scores:
        lines.append(f"{s.problem}: {s.points} of {s.possible} points" + ("" if s.answered else " (not answered)"))
        lines += [f"  {part}: {message}" for part, message in s.wrong]
    return lines


def feedback_text(gradebook: Gradebook, student) -> str:
    """The feedback for one roster student: every wrong answer with its message, or why nothing was graded."""
    lines = [f"Homework feedback for {student.label}", ""]
    grade = gradebook.grade_of(student.id)
    if grade is not None:
        lines += _grade_lines(grade)
    else:
        mine = [n for n in gradebook.not_graded if n.student == student.id]
        if mine:
            lines += [f"Your submission {n.file} could not be graded: it {n.reason}." for n in mine]
            lines.append("Please correct it and hand it in again.")
        else:
            lines.append("No submission was received.")
    return "\n".join(lines) + "\n"


def companion_paths(out) -> tuple[Path, Path]:
    """(the not-graded list, the feedback folder) that go with gradebook ``out``: grades_not_graded.csv, grades_feedback/."""
    out = Path(out)
    stem = out.name[: -len(out.suffix)] if out.suffix else out.name
    return out.with_name(f"{stem}_not_graded.csv"), out.with_name(f"{stem}_feedback")


def gradebook_outputs(out, feedback_dir=None) -> tuple[Path, Path, Path]:
    """(gradebook, not-graded list, feedback folder), each checked for writing (only regular files
    of ours are replaced; missing folders are created) before anything is graded."""
    out = output_file(out)
    not_graded_path, default_feedback = companion_paths(out)
    output_file(not_graded_path, None)
    feedback = output_folder(feedback_dir if feedback_dir is not None else default_feedback, "--feedback")
    return out, not_graded_path, feedback


def write_gradebook(gradebook: Gradebook, out, feedback_dir=None) -> dict:
    """Write the gradebook CSV at ``out``, its not-graded list, and one feedback file per roster student."""
    out, not_graded_path, feedback = gradebook_outputs(out, feedback_dir)
    write_text(out, gradebook_csv(gradebook))
    write_text(not_graded_path, not_graded_csv(gradebook))
    for student in gradebook.students:
        write_text(folder_entry(feedback, f"{student.id}.txt"), feedback_text(gradebook, student))
    return {"gradebook": out, "not_graded": not_graded_path, "feedback": feedback}


def gradescope_results(gradebook: Gradebook) -> dict:
    """Gradescope's autograder ``results.json`` for one submission: a test per problem, and the total.

    When the submission holds no gradable answers file the score is 0 and ``output`` says
    exactly why, so the student sees the reason and can submit again.
    """
    ignored = [n for n in gradebook.not_graded if not n.file.lower().endswith(".json")]
    problems = [n for n in gradebook.not_graded if n not in ignored]
    if len(gradebook.grades) == 1 and not problems:
        (grade,) = gradebook.grades
        tests = [
            {
                "name": f"Problem {number}: {s.problem}",
                "score": s.points,
                "max_score": s.possible,
                "status": "passed" if s.points == s.possible else "failed",
                "output": s.output,
            }
            for number, s in enumerate(grade.scores, 1)
        ]
        output = f"Graded {grade.file} for {grade.student.label}: {grade.total} of {grade.possible} points."
        if ignored:
            output += " Not read: " + "; ".join(f"{n.file} ({n.reason})" for n in ignored) + "."
        return {"score": grade.total, "output": output, "tests": tests}
    if problems:
        why = "; ".join(f"{n.file} {n.reason}" for n in problems)
        output = f"Your submission could not be graded: {why}. Please correct it and submit again."
    elif len(gradebook.grades) > 1:
        names = ", ".join(g.file for g in gradebook.grades)
        output = f"Your submission holds answers files for several students ({names}); submit only your own."
    else:
        output = (
            "Your submission holds no answers file (a .json file). Upload the ID.json that your notebook "
            "wrote, or your answers file in the format of docs/homework.md."
        )
        if ignored:
            output += " Found instead: " + "; ".join(f"{n.file} ({n.reason})" for n in ignored) + "."
    return {"score": 0, "output": output, "tests": []}


def write_gradescope(gradebook: Gradebook, out) -> Path:
    """Write :func:`gradescope_results` as JSON at ``out`` (its folder is created)."""
    out = output_file(out)
    write_text(out, json.dumps(gradescope_results(gradebook), indent=2) + "\n")
    return out
