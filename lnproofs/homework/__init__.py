"""Homework: seeded exercises on LayerNorm geometry and attention, with exact answer checking.

``generate(seed, topics)`` makes a :class:`ProblemSet`; ``write_homework`` writes the
problem set, the instructor's solutions and ``problems.json``; ``check_answers``
checks a student's answers exactly and explains every wrong one.  For a class,
``read_roster`` reads the roster, ``write_class`` writes every student's problem set
(``generate(seed, topics, student=id)``) and ``grade_folder`` grades a folder of
submissions into a :class:`Gradebook` (written by ``write_gradebook`` or, for
Gradescope, ``write_gradescope``), each problem's feedback at the level of a grading
:class:`Policy` (``read_policy``).  ``export_prairielearn`` writes every topic as a
PrairieLearn question.  Every problem kind draws its instances, states their ``claims()``
and solves itself exactly; ``generate(..., attempt=N)`` draws a fresh variant per attempt.
"""

from __future__ import annotations

from .answers import (
    ANSWERS_SCHEMA,
    CheckResult,
    PartResult,
    ProblemResult,
    check_answers,
    load_answers,
    load_problem_set,
)
from .classroom import ClassInfo, write_class
from .generate import ProblemSet, generate, generate_homework, parse_topics
from .gradebook import write_gradebook
from .gradescope import write_gradescope
from .grading import Gradebook, ProblemSource, grade_folder
from .policy import Policy, read_policy
from .prairielearn import export_prairielearn
from .problems import TOPICS, Solution, problem_from_json
from .render import write_homework
from .roster import Roster, Student, read_roster

__all__ = [
    "ANSWERS_SCHEMA",
    "TOPICS",
    "CheckResult",
    "ClassInfo",
    "Gradebook",
    "ProblemSource",
    "Roster",
    "Student",
    "PartResult",
    "Policy",
    "ProblemResult",
    "ProblemSet",
    "Solution",
    "check_answers",
    "export_prairielearn",
    "generate",
    "generate_homework",
    "grade_folder",
    "load_answers",
    "load_problem_set",
    "parse_topics",
    "problem_from_json",
    "read_policy",
    "read_roster",
    "write_class",
    "write_gradebook",
    "write_gradescope",
    "write_homework",
]
