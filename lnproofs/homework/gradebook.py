"""Writing a :class:`.grading.Gradebook`: the gradebook CSV, the list of what was not graded,
one feedback file per student (at the levels of a :mod:`.policy`), and the answers given in words.

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

from pathlib import Path

from ..certificates.writes import folder_entry, output_file, output_folder, write_text
from .csvtext import csv_text
from .grading import Gradebook, StudentGrade
from .policy import DEFAULT_POLICY

__all__ = [
    "gradebook_csv",
    "not_graded_csv",
    "feedback_text",
    "write_gradebook",
    "gradebook_outputs",
    "grade_lines",
    "held_back",
    "companion_paths",
]


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
    return csv_text(rows)


def not_graded_csv(gradebook: Gradebook) -> str:
    rows = [["file", "student", "reason"]]
    rows += [[n.file, n.student, n.reason] for n in gradebook.not_graded + gradebook.too_complex]
    rows += [["", s.id, "no submission"] for s in gradebook.missing]
    return csv_text(rows)


def held_back(topic_policy, level: str) -> str:
    """What a student is told about feedback held back at ``level`` (empty at ``full``)."""
    if level == "full":
        return ""
    what = "the expected answers are hidden" if level == "hide-answer" else "the messages are hidden"
    when = topic_policy.reveal_after
    return f"({what}" + (f" until {when.isoformat()}" if when is not None else "") + ")"


def grade_lines(grade: StudentGrade, policy=DEFAULT_POLICY, now=None) -> list[str]:
    """The feedback lines of a graded submission, each problem at its policy's level at ``now``."""
    lines = [f"Submission: {grade.file}", f"Score: {grade.total} of {grade.possible} points", ""]
    for s in grade.scores:
        rule = policy.of(s.problem)
        level = rule.level_at(now)
        note = held_back(rule, level) if s.wrong else ""
        head = f"{s.problem}: {s.points} of {s.possible} points" + ("" if s.answered else " (not answered)")
        lines.append(head + (f" {note}" if note else ""))
        lines += [f"  {line}" for line in s.lines_at(level)]
    lines += [f"Note: {note}" for note in grade.notes]
    if grade.written:
        lines.append(
            "Answered in words (graded by hand): " + ", ".join(f"{p} {part}" for p, part, _, _ in grade.written)
        )
    return lines


def feedback_text(gradebook: Gradebook, student, policy=DEFAULT_POLICY, now=None) -> str:
    """The feedback for one roster student: every wrong answer with its message (at the policy's level),
    or why nothing was graded."""
    lines = [f"Homework feedback for {student.label}", ""]
    grade = gradebook.grade_of(student.id)
    if grade is not None:
        lines += grade_lines(grade, policy, now)
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


def written_path(out) -> Path:
    """The answers given in words that go with gradebook ``out``: grades_written.csv."""
    out = Path(out)
    stem = out.name[: -len(out.suffix)] if out.suffix else out.name
    return out.with_name(f"{stem}_written.csv")


def gradebook_outputs(out, feedback_dir=None) -> tuple[Path, Path, Path]:
    """(gradebook, not-graded list, feedback folder), each checked for writing (only regular files
    of ours are replaced; missing folders are created) before anything is graded."""
    out = output_file(out)
    not_graded_path, default_feedback = companion_paths(out)
    output_file(not_graded_path, None)
    feedback = output_folder(feedback_dir if feedback_dir is not None else default_feedback, "--feedback")
    return out, not_graded_path, feedback


def write_gradebook(gradebook: Gradebook, out, feedback_dir=None, policy=DEFAULT_POLICY, now=None) -> dict:
    """Write the gradebook CSV at ``out``, its not-graded list, one feedback file per roster student (at the
    policy's levels at ``now``) and the answers given in words (``grades_written.csv``)."""

    from .exports import written_csv

    out, not_graded_path, feedback = gradebook_outputs(out, feedback_dir)
    write_text(out, gradebook_csv(gradebook))
    write_text(not_graded_path, not_graded_csv(gradebook))
    for student in gradebook.students:
        write_text(folder_entry(feedback, f"{student.id}.txt"), feedback_text(gradebook, student, policy, now))
    written = output_file(written_path(out), None)
    write_text(written, written_csv(gradebook))
    return {"gradebook": out, "not_graded": not_graded_path, "feedback": feedback, "written": written}
