"""Seeded generation of problem sets: the same seed always gives the same problems.

Only :class:`random.Random` seeded with an integer is used (its integer methods are
stable across Python versions), and nothing reads the clock.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

from ..kernel import OptionError, require
from .problems import PROBLEM_CLASSES, TOPICS, problem_from_json

__all__ = ["ProblemSet", "generate", "generate_homework", "parse_topics", "SCHEMA"]

SCHEMA = "lnproofs.homework/1"


@dataclass(frozen=True)
class ProblemSet:
    """A seeded list of problems, one per topic, in the order of :data:`TOPICS`.

    ``student`` is the roster id the problems were drawn for (None for a problem set
    drawn from the seed alone, as ``homework new --seed`` makes); ``attempt`` is the
    attempt they were drawn for (1, 2, ...).
    """

    seed: int
    problems: tuple
    student: str | None = None
    attempt: int = 1

    def to_json(self) -> dict:
        data = {"schema": SCHEMA, "seed": self.seed}
        if self.student is not None:
            data["student"] = self.student
        if self.attempt != 1:
            data["attempt"] = self.attempt
        data["problems"] = [p.to_json() for p in self.problems]
        return data

    @classmethod
    def from_json(cls, data) -> ProblemSet:
        from ..kernel import FileFormatError

        require(
            isinstance(data, dict) and data.get("schema") == SCHEMA,
            FileFormatError,
            f'problems.json must be a JSON object with "schema": "{SCHEMA}"',
        )
        problems = data.get("problems")
        require(isinstance(problems, list), FileFormatError, "problems.json must hold a list 'problems'")
        seed = data.get("seed")
        require(isinstance(seed, int), FileFormatError, "problems.json must hold an integer 'seed'")
        parsed = tuple(problem_from_json(p) for p in problems)
        ids = [p.id for p in parsed]
        require(len(set(ids)) == len(ids), FileFormatError, "problems.json lists a problem id twice")
        student = data.get("student")
        if student is not None:
            from .roster import check_student_id

            check_student_id(student, "problems.json 'student'")
        attempt = data.get("attempt", 1)
        require(isinstance(attempt, int) and attempt >= 1, FileFormatError, "problems.json 'attempt' must be >= 1")
        return cls(seed=seed, problems=parsed, student=student, attempt=attempt)

    def by_id(self) -> dict:
        return {p.id: p for p in self.problems}

    def _repr_markdown_(self) -> str:
        from .sheet import problem_set_markdown

        return problem_set_markdown(self)


def parse_topics(text: str | None) -> tuple[str, ...]:
    """``"sphere,threshold"`` -> the topics in canonical order; None -> all topics."""
    if text is None:
        return TOPICS
    asked = [t.strip() for t in str(text).split(",") if t.strip()]
    require(bool(asked), OptionError, f"--topics {text!r} names no topic; accepted: {','.join(TOPICS)}")
    for t in asked:
        require(t in TOPICS, OptionError, f"unknown topic {t!r}; accepted: {','.join(TOPICS)}")
    return tuple(t for t in TOPICS if t in asked)


def _stream(seed: int, topic: str, student: str | None, attempt: int) -> random.Random:
    """The random stream of one topic: SHA-256 of ``"seed/id/attempt/topic"`` (stable across Python
    versions and machines; unrelated between topics, students and attempts)."""
    digest = hashlib.sha256(f"lnproofs.homework/{seed}/{student or ''}/{attempt}/{topic}".encode()).digest()
    return random.Random(int.from_bytes(digest, "big"))


def generate(seed: int = 0, topics=None, student: str | None = None, attempt: int = 1) -> ProblemSet:
    """A problem set, one problem per topic; each topic draws from its own seeded stream.

    ``topics`` is an iterable of topic names or a comma-separated string (default: all).
    A topic's problem depends only on the seed, ``student`` (a roster id, when given) and
    ``attempt`` (1, 2, ...: a fresh variant of every problem per attempt), not on which other
    topics are asked for.
    """
    require(
        isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0,
        OptionError,
        f"seed must be a non-negative integer, not {seed!r}",
    )
    if student is not None:
        from .roster import check_student_id

        check_student_id(student)
    require(
        isinstance(attempt, int) and not isinstance(attempt, bool) and 1 <= attempt <= 10**6,
        OptionError,
        f"attempt must be an integer from 1 to 1000000, not {attempt!r}",
    )
    if topics is None or isinstance(topics, str):
        chosen = parse_topics(topics)
    else:
        chosen = parse_topics(",".join(topics))
    problems = [PROBLEM_CLASSES[topic].draw(_stream(seed, topic, student, attempt)) for topic in chosen]
    # a round trip through JSON keeps the object and the file in lockstep
    problems = tuple(problem_from_json(p.to_json()) for p in problems)
    return ProblemSet(seed=seed, problems=problems, student=student, attempt=attempt)


#: the name under which :func:`generate` is exported from the top-level package
generate_homework = generate
