"""Exercises on attention heads: a causal head's first stops, and the keys a rotary head can select.

``causal``: the query at position t sees keys
1..t; a key that cannot win over a prefix cannot win over a longer one, so each key has a first stop
(the library's causal record, checked by the kernel, gives it).  ``rotary``: the query at position t
scores key j through R_{p_j - t} (theorem ``rotary.relative``); the keys it can select are those of the
rotated keys (certified by the library, checked by the kernel).  Each kind draws, claims, solves,
states and marks itself.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

from ..certificates.writers import format_fraction
from ..kernel import InputError, parse_fraction, require
from .problem_base import Claim, ProblemKind, fr_text, matrix_text, read_plane_keys
from .solution import Solution
from .statements import keys_display
from .topics_attention import plane_statuses

__all__ = ["CausalProblem", "RotaryProblem", "first_stops", "rotation"]


def _vec(values) -> str:
    return "(" + ", ".join(format_fraction(Fraction(v)) for v in values) + ")"


# --------------------------------------------------------------------------- causal first stops
def first_stops(keys) -> list:
    """Per key (1-based positions): the first position at which it cannot win over the keys seen so far,
    or None; decided exactly from the statuses of every prefix."""
    out = []
    for j in range(1, len(keys) + 1):
        stop = None
        for t in range(j, len(keys) + 1):
            prefix = list(keys[:t])
            if len(prefix) >= 2 and plane_statuses(prefix)[j - 1] != "selectable":
                stop = t
                break
        out.append(stop)
    return out


@dataclass(frozen=True)
class CausalProblem(ProblemKind):
    """A causal head: the first position at which each key can no longer win."""

    keys: tuple[tuple[int, int], ...]
    topic: ClassVar[str] = "causal"
    fields: ClassVar[tuple[str, ...]] = ("stops",)

    def to_json(self) -> dict:
        return {"id": self.id, "topic": self.topic, "keys": [list(k) for k in self.keys]}

    def points(self) -> int:
        return len(self.keys)  # one per key

    @classmethod
    def from_json(cls, data: dict) -> CausalProblem:
        return cls(keys=read_plane_keys(data, "causal", 2, 12))

    @classmethod
    def draw(cls, rng: random.Random) -> CausalProblem:
        count = rng.randint(5, 7)
        lattice = [(x, y) for x in range(-3, 4) for y in range(-3, 4)]
        while True:
            keys = tuple(rng.sample(lattice, count))
            stops = first_stops(keys)
            kinds = {"never" if s is None else "own" if s == j else "later" for j, s in enumerate(stops, 1)}
            if kinds == {"never", "own", "later"}:
                return cls(keys=keys)

    def claims(self) -> tuple[Claim, ...]:
        stops = first_stops(self.keys)
        kinds = {"never" if s is None else "own" if s == j else "later" for j, s in enumerate(stops, 1)}
        stays = all(
            plane_statuses(list(self.keys[:t]))[j - 1] != "selectable"
            for j, s in enumerate(stops, 1)
            if s is not None
            for t in range(s, len(self.keys) + 1)
        )
        return (
            Claim(
                "5 to 7 distinct keys in the plane", 5 <= len(self.keys) <= 7 and len(set(self.keys)) == len(self.keys)
            ),
            Claim("a key that stops never wins again on a longer prefix", stays),
            Claim(
                "some key never stops, some stops at its own position, some later", kinds == {"never", "own", "later"}
            ),
        )

    def record(self) -> dict:
        """The library's causal record (free queries), verified key by key by the kernel."""
        import numpy as np

        from ..kernel import check_causal
        from ..propose.causal import causal_evidence

        keys = np.array(self.keys, dtype=np.float64)
        record = causal_evidence(keys)
        bad = [v for v in check_causal(keys, record) if not v.ok]
        require(not bad, InputError, f"the causal record failed the kernel's check: {bad[:1]}")
        return record

    def solve(self) -> Solution:
        from ..propose.causal import stops as record_stops

        found = [None if s is None else s + 1 for s in record_stops(self.record())]
        require(
            found == first_stops(self.keys),
            InputError,
            "causal problem: the library's stops disagree with the exact ones",
        )
        answers = {str(j): ("never" if s is None else s) for j, s in enumerate(found, 1)}
        work = tuple(
            f"Key {j}: "
            + (
                "it wins at every position from its own on."
                if s is None
                else f"at position {s} it lies in the convex hull of keys 1..{s}, so it stops there."
            )
            for j, s in enumerate(found, 1)
        )
        return Solution(
            self.id, {"stops": answers}, ("attention.selectable_iff_not_in_hull",), work, statuses=dict(answers)
        )

    def statement(self):
        count = len(self.keys)
        intro = [
            "In a causal attention head the query at position $t$ sees only the keys at positions $1, \\dots, t$. "
            "The keys, in position order, are",
            keys_display(self.keys),
            "Queries are free (any vector). A key can win at position $t \\ge j$ when some query scores it strictly "
            "above keys $1..t$ other than itself.",
        ]
        parts = [
            (
                "stops",
                f"For each key $j$ give its stop: the first position $t \\ge j$ at which it can no longer win, "
                f'or $\\texttt{{"never"}}$ if it can win at every position from $j$ to ${count}$, as an object '
                "mapping each key number to its stop.",
            ),
        ]
        return intro, parts

    def mark(self, answer):
        from .values import PartResult, _Wrong, expected, json_text, read_integer

        truth = first_stops(self.keys)
        given = answer.get("stops")
        if not isinstance(given, dict):
            text = (
                "no answer given for 'stops'"
                if given is None
                else f'stops must be an object {{"1": 3, "2": "never", ...}}, not {json_text(given)}'
            )
            return [PartResult(self.id, f"key {j}", False, text) for j in range(1, len(truth) + 1)]
        parts = []
        for j, right in enumerate(truth, 1):
            value = given.get(str(j))
            try:
                if value is None:
                    raise _Wrong(f"no answer given for key {j}")
                stop = (
                    None
                    if isinstance(value, str) and value.strip().lower() == "never"
                    else read_integer(value, 'a position or "never"')
                )
                if stop is not None and not j <= stop <= len(truth):
                    raise _Wrong(f"key {j} first appears at position {j}; a stop lies between {j} and {len(truth)}")
                message = None
                if stop != right:
                    message = (
                        f"key {j} can win at every position from {j} on, not only until {stop}"
                        if right is None
                        else f"key {j} stops at position {expected(right)}: "
                        + expected(f"there it lies in the convex hull of keys 1..{right}")
                        + ("" if stop is None or stop < right else f", and before {right} it can still win")
                    )
            except _Wrong as err:
                message = str(err)
            parts.append(PartResult(self.id, f"key {j}", message is None, message or "correct"))
        return parts


# --------------------------------------------------------------------------- rotary
#: rotations whose powers have small rational entries: (cos, sin) from Pythagorean triples, and a quarter turn
_TURNS = (("3/5", "4/5"), ("4/5", "3/5"), ("0", "1"))


def _pmatrix(rows) -> str:
    return (
        "\\begin{pmatrix} " + " \\\\ ".join(" & ".join(format_fraction(v) for v in r) for r in rows) + " \\end{pmatrix}"
    )


def rotation(c: Fraction, s: Fraction, steps: int) -> tuple[tuple[Fraction, Fraction], tuple[Fraction, Fraction]]:
    """R^steps for R = [[c, -s], [s, c]] (steps may be negative: R^-1 = R^T), exactly."""
    if steps < 0:
        c, s, steps = c, -s, -steps
    re, im = Fraction(1), Fraction(0)
    for _ in range(steps):
        re, im = re * c - im * s, re * s + im * c
    return ((re, -im), (im, re))


@dataclass(frozen=True)
class RotaryProblem(ProblemKind):
    """A rotary head's key set: which keys the last query can select once positions rotate them."""

    keys: tuple[tuple[int, int], ...]
    turn: tuple[str, str]
    topic: ClassVar[str] = "rotary"
    fields: ClassVar[tuple[str, ...]] = ("relative", "winners")

    def to_json(self) -> dict:
        return {"id": self.id, "topic": self.topic, "keys": [list(k) for k in self.keys], "turn": list(self.turn)}

    def points(self) -> int:
        return 1 + len(self.keys)  # the matrix, and one per key

    @classmethod
    def from_json(cls, data: dict) -> RotaryProblem:
        keys = read_plane_keys(data, "rotary", 3, 8)
        turn = data.get("turn")
        require(isinstance(turn, list) and len(turn) == 2, InputError, "rotary problem 'turn' must be [cos, sin]")
        c, s = (parse_fraction(str(v)) for v in turn)
        require(c * c + s * s == 1, InputError, "rotary problem 'turn' must satisfy cos^2 + sin^2 = 1")
        return cls(keys=keys, turn=(format_fraction(c), format_fraction(s)))

    @classmethod
    def draw(cls, rng: random.Random) -> RotaryProblem:
        lattice = [(x, y) for x in range(-2, 3) for y in range(-2, 3) if (x, y) != (0, 0)]
        while True:
            problem = cls(keys=tuple(rng.sample(lattice, 4)), turn=rng.choice(_TURNS))
            if all(c.holds for c in problem.claims()):
                return problem

    @property
    def position(self) -> int:
        """The query's position: 1, the second key's (positions count from 0), so the rotations needed
        are R^-1 to R^(n-2) and their entries stay small."""
        return 1

    def seen(self) -> list[tuple[Fraction, Fraction]]:
        """The keys as the query sees them: R_{p_j - t} k_j with p_j = j - 1."""
        c, s = (parse_fraction(v) for v in self.turn)
        out = []
        for p, k in enumerate(self.keys):
            R = rotation(c, s, p - self.position)
            out.append(tuple(R[r][0] * k[0] + R[r][1] * k[1] for r in range(2)))
        return out

    def winners(self, keys=None) -> set[int]:
        keys = self.seen() if keys is None else keys
        return {j for j, s in enumerate(plane_statuses(keys), 1) if s == "selectable"}

    def claims(self) -> tuple[Claim, ...]:
        c, s = (parse_fraction(v) for v in self.turn)
        seen = self.seen()
        return (
            Claim("the turn is a rotation: cos^2 + sin^2 = 1", c * c + s * s == 1),
            Claim("the rotated keys are distinct", len(set(seen)) == len(seen)),
            Claim("the rotation changes which keys can win", self.winners() != self.winners(list(self.keys))),
            Claim("some key cannot win and at least two can", 2 <= len(self.winners()) < len(self.keys)),
        )

    def solve(self) -> Solution:
        from math import lcm

        from .library import certify_keys

        seen = self.seen()
        scale = lcm(*(v.denominator for k in seen for v in k))
        cert = certify_keys([[int(v * scale) for v in k] for k in seen])  # a positive scale keeps the winners
        found = {int(r["index"]) + 1 for r in cert["results"] if r["status"] == "selectable"}
        require(
            found == self.winners(), InputError, "rotary problem: the certificate disagrees with the exact statuses"
        )
        c, s = (parse_fraction(v) for v in self.turn)
        R = rotation(c, s, -self.position)
        work = (
            f"The query at position $t = {self.position}$ scores key $j$ (position $j - 1$) through "
            "$R_{j-1-t}k_j$, since $(R_t q)^\\top(R_p k) = q^\\top R_{p-t} k$; for key 1 that is $R_{-t} = "
            f"R^{{-{self.position}}} = {_pmatrix(R)}$.",
            "The keys as the query sees them are "
            + ", ".join(f"$({', '.join(fr_text(k))})$" for k in seen)
            + f"; the vertices of their hull, keys {', '.join(map(str, sorted(found)))}, can win "
            "(the library's certificate, checked by the kernel, agrees).",
        )
        answers = {"relative": matrix_text(R), "winners": sorted(found)}
        return Solution(
            self.id, answers, ("rotary.relative", "attention.selectable_iff_not_in_hull"), work, certificate=cert
        )

    def statement(self):
        c, s = self.turn
        intro = [
            f"A rotary head rotates the query and the key at position $p$ by $R_p = R^p$, $R = \\begin{{pmatrix}} {c} & -{s} "
            f"\\\\ {s} & {c} \\end{{pmatrix}}$. Key $j$ sits at position $j - 1$:",
            keys_display(self.keys),
            f"and the query sits at position $t = {self.position}$; it may be any vector.",
        ]
        parts = [
            ("relative", "Give the matrix $M$ with $(R_t q)^\\top (R_0 k_1) = q^\\top M k_1$ for every $q$, as rows."),
            ("winners", "Which keys can this query make the strict winner? Give the list of their numbers."),
        ]
        return intro, parts

    def mark(self, answer):
        from .values import _matrix, _part, expected, mark_members

        c, s = (parse_fraction(v) for v in self.turn)
        R = rotation(c, s, -self.position)

        def relative(value):
            given = _matrix(value, 2, "relative")
            if [list(r) for r in given] == [list(r) for r in R]:
                return None
            return f"the query at position {self.position} sees key 1 through R^-{self.position} = {expected(matrix_text(R))}, not {matrix_text(given)}"

        def why(j, wins):
            if wins:
                return f"key {j} can win: it is a vertex of the hull of the rotated keys (you did not list it)"
            return f"key {j} cannot win: rotated, it lies in the hull of the other keys (you listed it)"

        winners = mark_members(self, answer, "winners", len(self.keys), self.winners(), why)
        return [_part(self, "relative", answer, relative), *winners]
