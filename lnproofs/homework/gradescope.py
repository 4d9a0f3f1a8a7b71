"""Gradescope's autograder ``results.json`` for one submission, as its specification documents it.

Top level: ``score``, ``execution_time`` (seconds), ``output``, ``visibility``, ``stdout_visibility`` and
``tests``.  One test per problem (``number``, ``name``, ``score``, ``max_score``, ``status``, ``output``,
``visibility``), its output at the feedback level of the grading policy (:mod:`.policy`); where that
level holds messages back, a second test of 0 points holds the whole messages with the visibility
``after_due_date``; each part answered in words is a test of 0 points holding the text, for grading by
hand in Gradescope.
"""

from __future__ import annotations

import json

from ..certificates.writes import output_file, write_text
from .gradebook import held_back
from .grading import Gradebook
from .policy import DEFAULT_POLICY

__all__ = ["gradescope_results", "write_gradescope"]


def _tests(grade, policy, now) -> list[dict]:
    tests = []
    for number, s in enumerate(grade.scores, 1):
        rule = policy.of(s.problem)
        level = rule.level_at(now)
        note = held_back(rule, level) if s.wrong else ""
        tests.append(
            {
                "number": str(number),
                "name": f"Problem {number}: {s.problem}",
                "score": s.points,
                "max_score": s.possible,
                "status": "passed" if s.points == s.possible else "failed",
                "output": s.output_at(level) + (f"\n{note}" if note else ""),
                "visibility": policy.visibility_of(s.problem),
            }
        )
        if note:
            tests.append(
                {
                    "number": f"{number}.1",
                    "name": f"Problem {number}: {s.problem}, the whole messages",
                    "score": 0,
                    "max_score": 0,
                    "output": s.output_at("full"),
                    "visibility": "after_due_date",
                }
            )
    numbers = {s.problem: n for n, s in enumerate(grade.scores, 1)}
    for k, (problem, part, prompt, text) in enumerate(grade.written, 1):
        tests.append(
            {
                "number": f"{numbers.get(problem, 0)}.{k + 1}",
                "name": f"Problem {numbers.get(problem, 0)}: {problem} {part} (in words; graded by hand)",
                "score": 0,
                "max_score": 0,
                "output": f"{prompt}\n\n{text}",
                "visibility": "visible",
            }
        )
    return tests


def gradescope_results(gradebook: Gradebook, policy=DEFAULT_POLICY, now=None, seconds=None) -> dict:
    """``results.json`` for one submission (see the module docstring).  When the submission holds no
    gradable answers file the score is 0 and ``output`` says exactly why, so the student can submit again."""
    ignored = [n for n in gradebook.not_graded if not n.file.lower().endswith(".json")]
    problems = [n for n in gradebook.not_graded if n not in ignored]
    head = {"score": 0}
    if seconds is not None:
        head["execution_time"] = max(0, round(seconds))
    tail = {"visibility": policy.visibility, "stdout_visibility": policy.stdout_visibility}
    if len(gradebook.grades) == 1 and not problems:
        (grade,) = gradebook.grades
        output = f"Graded {grade.file} for {grade.student.label}: {grade.total} of {grade.possible} points."
        if grade.notes:
            output += " " + " ".join(f"Note: {note}." for note in grade.notes)
        if ignored:
            output += " Not read: " + "; ".join(f"{n.file} ({n.reason})" for n in ignored) + "."
        return {**head, "score": grade.total, "output": output, **tail, "tests": _tests(grade, policy, now)}
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
    return {**head, "output": output, **tail, "tests": []}


def write_gradescope(gradebook: Gradebook, out, policy=DEFAULT_POLICY, now=None, seconds=None):
    """Write :func:`gradescope_results` as JSON at ``out`` (its folder is created)."""
    out = output_file(out)
    write_text(out, json.dumps(gradescope_results(gradebook, policy, now, seconds), indent=2) + "\n")
    return out
