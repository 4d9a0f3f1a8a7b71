"""Homework: seeded exercises on LayerNorm geometry and attention, with exact answer checking.

``generate(seed, topics)`` makes a :class:`ProblemSet`; ``write_homework`` writes the
problem set, the instructor's solutions and ``problems.json``; ``check_answers``
checks a student's answers exactly and explains every wrong one.
"""

from __future__ import annotations

from .answers import ANSWERS_SCHEMA, CheckResult, PartResult, ProblemResult, check_answers, load_answers, load_problem_set
from .generate import ProblemSet, generate, generate_homework, parse_topics
from .problems import TOPICS, Solution, problem_from_json
from .render import write_homework

__all__ = [
    "ANSWERS_SCHEMA",
    "TOPICS",
    "CheckResult",
    "PartResult",
    "ProblemResult",
    "ProblemSet",
    "Solution",
    "check_answers",
    "generate",
    "generate_homework",
    "load_answers",
    "load_problem_set",
    "parse_topics",
    "problem_from_json",
    "write_homework",
]
