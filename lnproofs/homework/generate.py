"""Seeded generation of problem sets: the same seed always gives the same problems.

Only :class:`random.Random` seeded with an integer is used (its integer methods are
stable across Python versions), and nothing reads the clock.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from fractions import Fraction
from itertools import permutations

from ..kernel.errors import OptionError, require
from .problems import (
    TOPICS,
    EllipsoidProblem,
    ProjectionProblem,
    SelectabilityProblem,
    SphereProblem,
    ThresholdProblem,
    UniformProblem,
    problem_from_json,
)
from .vocabulary import draw_vocab

__all__ = ["ProblemSet", "generate", "generate_homework", "parse_topics", "SCHEMA"]

SCHEMA = "lnproofs.homework/1"


@dataclass(frozen=True)
class ProblemSet:
    """A seeded list of problems, one per topic, in the order of :data:`TOPICS`.

    ``student`` is the roster id the problems were drawn for (None for a problem set
    drawn from the seed alone, as ``homework new --seed`` makes).
    """

    seed: int
    problems: tuple
    student: str | None = None

    def to_json(self) -> dict:
        data = {"schema": SCHEMA, "seed": self.seed}
        if self.student is not None:
            data["student"] = self.student
        data["problems"] = [p.to_json() for p in self.problems]
        return data

    @classmethod
    def from_json(cls, data) -> ProblemSet:
        from ..kernel.errors import FileFormatError

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
        return cls(seed=seed, problems=parsed, student=student)

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


def _nonconstant(rng: random.Random, n: int, low: int, high: int) -> tuple[int, ...]:
    while True:
        x = tuple(rng.randint(low, high) for _ in range(n))
        if len(set(x)) > 1:
            return x


def _projection(rng: random.Random) -> ProjectionProblem:
    return ProjectionProblem(n=4, x=_nonconstant(rng, 4, -5, 5))


def _sphere(rng: random.Random) -> SphereProblem:
    n = 4
    while True:
        y = [rng.randint(-3, 3) for _ in range(n - 1)]
        y.append(-sum(y))
        if any(y) and abs(y[-1]) <= 4:
            break
    shift = rng.randint(-3, 3)
    eps = rng.choice([Fraction(1, 4), Fraction(1, 2), Fraction(1)])
    return SphereProblem(x=tuple(v + shift for v in y), eps=eps)


def _ellipsoid(rng: random.Random) -> EllipsoidProblem:
    a, b = rng.sample([1, 2, 3], 2)
    gain = [a, b, b]
    position = rng.randrange(3)
    gain[0], gain[position] = gain[position], gain[0]
    bias = tuple(rng.randint(-2, 2) for _ in range(3))
    return EllipsoidProblem(gain=tuple(gain), bias=bias)


def _cross(o, a, b) -> int:
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def _lattice_shape(points) -> tuple[int, int, int]:
    """(#strict hull vertices, #other boundary points, #interior points) of distinct 2-D integer points.

    Used only to choose a problem with a mix of answers; the statuses in the solution
    come from the certifier and the exact checker.
    """
    pts = sorted(points)
    if all(_cross(pts[0], pts[1], p) == 0 for p in pts[2:]):
        return (0, 0, 0)  # collinear: rejected by the caller

    def half(seq):
        hull = []
        for p in seq:
            while len(hull) >= 2 and _cross(hull[-2], hull[-1], p) <= 0:
                hull.pop()
            hull.append(p)
        return hull

    hull = half(pts)[:-1] + half(pts[::-1])[:-1]
    edges = list(zip(hull, hull[1:] + hull[:1]))
    boundary = 0
    for p in pts:
        if p in hull:
            continue
        if any(_cross(a, b, p) == 0 for a, b in edges):
            boundary += 1
    return (len(hull), boundary, len(pts) - len(hull) - boundary)


def _selectability(rng: random.Random) -> SelectabilityProblem:
    lattice = [(x, y) for x in range(-2, 3) for y in range(-2, 3)]
    while True:
        points = rng.sample(lattice, 7)
        vertices, boundary, interior = _lattice_shape(points)
        if 3 <= vertices <= 5 and boundary >= 1 and interior >= 1:
            return SelectabilityProblem(keys=tuple(points))


def _uniform(rng: random.Random) -> UniformProblem:
    n = rng.choice([3, 4])
    while True:
        gain = tuple(rng.choice([-2, -1, 1, 2, 3]) for _ in range(n))
        if len(set(gain)) > 1:
            break
    bias = tuple(rng.randint(-2, 2) for _ in range(n))
    base = (1, -1) + (0,) * (n - 2)
    shapes = sorted(set(permutations(base)))
    ys = rng.sample(shapes, 4)
    keys = tuple(tuple(a * y + b for a, y, b in zip(gain, row, bias)) for row in ys)
    return UniformProblem(gain=gain, bias=bias, keys=keys)


def _threshold(rng: random.Random) -> ThresholdProblem:
    low = rng.choice([Fraction(3, 2), Fraction(2), Fraction(12, 5)])
    high = rng.choice([Fraction(5, 2), Fraction(3), Fraction(4)])
    mags = [low, high]
    rng.shuffle(mags)
    return ThresholdProblem(magnitudes=tuple(mags))


_MAKERS = {
    "projection": _projection,
    "sphere": _sphere,
    "ellipsoid": _ellipsoid,
    "selectability": _selectability,
    "uniform": _uniform,
    "threshold": _threshold,
    "vocab": draw_vocab,
}


def _stream(seed: int, position: int, student: str | None) -> random.Random:
    """The random stream of one topic: from the seed alone, or from the seed and a student's id.

    With a student the stream is seeded by SHA-256 of ``"seed/id/position"`` (stable across
    Python versions and machines, and unrelated between students).
    """
    if student is None:
        return random.Random(seed * 1000 + position)
    digest = hashlib.sha256(f"lnproofs.homework/{seed}/{student}/{position}".encode()).digest()
    return random.Random(int.from_bytes(digest, "big"))


def generate(seed: int = 0, topics=None, student: str | None = None) -> ProblemSet:
    """A problem set, one problem per topic; each topic draws from its own seeded stream.

    ``topics`` is an iterable of topic names or a comma-separated string (default: all).
    A topic's problem depends only on the seed (and ``student``, a roster id, when given),
    not on which other topics are asked for.  Without ``student`` the problems are those
    of ``homework new --seed``; with it, each student of a class gets their own numbers.
    """
    require(
        isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0,
        OptionError,
        f"seed must be a non-negative integer, not {seed!r}",
    )
    if student is not None:
        from .roster import check_student_id

        check_student_id(student)
    if topics is None or isinstance(topics, str):
        chosen = parse_topics(topics)
    else:
        chosen = parse_topics(",".join(topics))
    problems = []
    for position, topic in enumerate(TOPICS):
        if topic in chosen:
            problems.append(_MAKERS[topic](_stream(seed, position, student)))
    # a round trip through JSON keeps the object and the file in lockstep
    return ProblemSet(seed=seed, problems=tuple(problem_from_json(p.to_json()) for p in problems), student=student)


#: the name under which :func:`generate` is exported from the top-level package
generate_homework = generate
