"""Exercises on what a LayerNorm lets a query do: the scores it can reach, and the keys it can select.

``support``: over the outputs z = a * u + b of a LayerNorm (eps = 0, u on the sphere of radius sqrt(n)
in the hyperplane 1.u = 0) the score q.z ranges over q.b -+ sqrt(n) |P (a * q)| (Cauchy-Schwarz in the
hyperplane), the bound that the kernel's not-realisable certificates compare with.  ``centred``:
queries produced by a LayerNorm with gain 1 and bias 0 are centred (1.q = 0), so key i can win exactly
when its projection P k_i is a vertex of the projected keys' hull: centring can take a key's win away.
Each kind draws, claims, solves, states and marks itself.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

from ..certificates.writers import format_fraction
from ..kernel.errors import InputError, require
from .problem_base import MAX_KEYS, Claim, ProblemKind, fr_text, read_ints
from .solution import Solution
from .topics_attention import plane_statuses

__all__ = ["SupportProblem", "CentredProblem"]


def _vec(values) -> str:
    return "(" + ", ".join(format_fraction(Fraction(v)) for v in values) + ")"


def _centre(v) -> list[Fraction]:
    mean = Fraction(sum(v), len(v))
    return [Fraction(x) - mean for x in v]


# --------------------------------------------------------------------------- support
@dataclass(frozen=True)
class SupportProblem(ProblemKind):
    """The largest and smallest score a query gives the outputs of a LayerNorm, and where it is largest."""

    gain: tuple[int, ...]
    bias: tuple[int, ...]
    query: tuple[int, ...]
    topic: ClassVar[str] = "support"
    fields: ClassVar[tuple[str, ...]] = ("max_score", "min_score", "argmax")

    @property
    def n(self) -> int:
        return len(self.gain)

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "topic": self.topic,
            "gain": list(self.gain),
            "bias": list(self.bias),
            "query": list(self.query),
        }

    @classmethod
    def from_json(cls, data: dict) -> SupportProblem:
        gain = read_ints(data.get("gain"), "support problem 'gain'", low=3)
        bias = read_ints(data.get("bias"), "support problem 'bias'", low=3)
        query = read_ints(data.get("query"), "support problem 'query'", low=3)
        require(
            len(gain) == len(bias) == len(query) and all(gain),
            InputError,
            "support problem: n non-zero gains, n biases, n query entries",
        )
        require(
            any(_centre([a * q for a, q in zip(gain, query)])), InputError, "support problem: P(a * q) must not be 0"
        )
        return cls(gain=gain, bias=bias, query=query)

    @classmethod
    def draw(cls, rng: random.Random) -> SupportProblem:
        n = rng.randint(3, 4)
        while True:
            gain = tuple(rng.choice([-2, -1, 1, 2, 3]) for _ in range(n))
            query = tuple(rng.randint(-2, 2) for _ in range(n))
            if any(_centre([a * q for a, q in zip(gain, query)])):
                return cls(gain=gain, bias=tuple(rng.randint(-2, 2) for _ in range(n)), query=query)

    def exact(self) -> dict:
        import sympy as sp

        n = self.n
        w = [sp.Rational(v.numerator, v.denominator) for v in _centre([a * q for a, q in zip(self.gain, self.query)])]
        length = sp.sqrt(sum(v * v for v in w))
        base = sum(q * b for q, b in zip(self.query, self.bias))
        u = [sp.radsimp(sp.sqrt(n) * v / length) for v in w]
        return {
            "max_score": sp.radsimp(base + sp.sqrt(n) * length),
            "min_score": sp.radsimp(base - sp.sqrt(n) * length),
            "argmax": [sp.radsimp(b + a * x) for a, x, b in zip(self.gain, u, self.bias)],
            "u": u,
        }

    def claims(self) -> tuple[Claim, ...]:
        import sympy as sp

        v, n = self.exact(), self.n
        u = v["u"]
        score = sp.expand(sum(q * z for q, z in zip(self.query, v["argmax"])))
        return (
            Claim("n is 3 or 4 and every gain is non-zero", 3 <= n <= 4 and all(self.gain)),
            Claim(
                "the maximiser is an output: u sums to 0 and has norm sqrt(n)",
                sp.expand(sum(u)) == 0 and sp.nsimplify(sp.expand(sum(x * x for x in u))) == n,
            ),
            Claim("the query's score there is the maximum", (score - v["max_score"]).equals(0)),
            Claim("the scores span an interval: maximum above minimum", bool(v["max_score"] > v["min_score"])),
        )

    def solve(self) -> Solution:
        import sympy as sp

        v = self.exact()
        w = fr_text(_centre([a * q for a, q in zip(self.gain, self.query)]))
        work = (
            "For $z = a \\odot u + b$: $q^\\top z = (a \\odot q)^\\top u + q^\\top b$, and over the sphere of radius "
            "$\\sqrt n$ in $\\mathbf 1^\\top u = 0$ the first term ranges over $\\pm\\sqrt n\\,\\|P(a \\odot q)\\|$ "
            f"(Cauchy-Schwarz in the hyperplane); $P(a \\odot q) = ({', '.join(w)})$.",
            f"Maximum ${sp.latex(v['max_score'])}$, minimum ${sp.latex(v['min_score'])}$, reached at "
            f"$z = ({', '.join(sp.latex(e) for e in v['argmax'])})$ for the maximum.",
        )
        answers = {
            "max_score": sp.sstr(v["max_score"]),
            "min_score": sp.sstr(v["min_score"]),
            "argmax": [sp.sstr(e) for e in v["argmax"]],
        }
        return Solution(self.id, answers, ("ellipsoid.hyperplane",), work)

    def statement(self):
        intro = [
            f"A LayerNorm on $\\mathbb R^{{{self.n}}}$ with $\\varepsilon = 0$ has gain $a = {_vec(self.gain)}$ and bias "
            f"$b = {_vec(self.bias)}$; its outputs are $z = a \\odot u + b$ with $\\mathbf 1^\\top u = 0$ and "
            f"$\\|u\\| = \\sqrt{{{self.n}}}$. A query $q = {_vec(self.query)}$ scores an output with $q^\\top z$."
        ]
        parts = [
            ("max_score", "Find the largest score $q^\\top z$ over the outputs, exactly."),
            ("min_score", "Find the smallest."),
            ("argmax", "Give the output $z$ with the largest score."),
        ]
        return intro, parts

    def mark(self, answer):
        from .marks_geometry import _expr_check, vector_check
        from .values import _part

        v = self.exact()
        return [
            _part(self, "max_score", answer, _expr_check(v["max_score"])),
            _part(self, "min_score", answer, _expr_check(v["min_score"])),
            _part(self, "argmax", answer, vector_check("argmax", v["argmax"], self.n)),
        ]


# --------------------------------------------------------------------------- centred queries
def _plane(key) -> tuple[int, int]:
    """Coordinates of P k in the basis (1, -1, 0), (1, 1, -2) of the plane 1.x = 0 (a linear bijection of
    that plane onto R^2, so it keeps which points are vertices of a hull)."""
    a, b, c = key
    return (a - b, a + b - 2 * c)


@dataclass(frozen=True)
class CentredProblem(ProblemKind):
    """Keys in R^3 and queries produced by a LayerNorm with gain 1 and bias 0: which keys can win?"""

    keys: tuple[tuple[int, int, int], ...]
    topic: ClassVar[str] = "centred"
    fields: ClassVar[tuple[str, ...]] = ("winners",)

    def to_json(self) -> dict:
        return {"id": self.id, "topic": self.topic, "keys": [list(k) for k in self.keys]}

    def points(self) -> int:
        return len(self.keys)  # one per key

    @classmethod
    def from_json(cls, data: dict) -> CentredProblem:
        rows = data.get("keys")
        require(
            isinstance(rows, list) and 3 <= len(rows) <= MAX_KEYS, InputError, "centred problem 'keys': 3 or more keys"
        )
        keys = tuple(read_ints(r, "centred problem key", low=3) for r in rows)
        require(all(len(k) == 3 for k in keys), InputError, "centred problem: keys in R^3")
        require(len({_plane(k) for k in keys}) == len(keys), InputError, "centred problem: distinct projections P k")
        return cls(keys=keys)

    @classmethod
    def draw(cls, rng: random.Random) -> CentredProblem:
        cube = [(x, y, z) for x in range(-2, 3) for y in range(-2, 3) for z in range(-2, 3)]
        while True:
            problem = cls(keys=tuple(rng.sample(cube, rng.randint(4, 6))))
            if all(c.holds for c in problem.claims()):
                return problem

    def winners(self) -> set[int]:
        return {j for j, s in enumerate(plane_statuses([_plane(k) for k in self.keys]), 1) if s == "selectable"}

    def free_winners(self) -> set[int]:
        """The keys free queries can make win: vertices of the keys' own hull, decided by the library's checker."""
        from .library import certify_keys

        cert = certify_keys([list(k) for k in self.keys])
        return {int(r["index"]) + 1 for r in cert["results"] if r["status"] == "selectable"}

    def claims(self) -> tuple[Claim, ...]:
        projected = [_plane(k) for k in self.keys]
        return (
            Claim(
                "4 to 6 keys with distinct projections onto the plane 1.x = 0",
                len(set(projected)) == len(projected) >= 4,
            ),
            Claim("the projections do not all lie on one line", _spread(projected)),
            Claim(
                "some key cannot win with a centred query and at least two can",
                2 <= len(self.winners()) < len(self.keys),
            ),
        )

    def solve(self) -> Solution:
        from .library import certify_keys

        cert = certify_keys([list(_plane(k)) for k in self.keys])
        found = {int(r["index"]) + 1 for r in cert["results"] if r["status"] == "selectable"}
        require(
            found == self.winners(), InputError, "centred problem: the certificate disagrees with the exact statuses"
        )
        lost = sorted(self.free_winners() - found)
        work = (
            "A centred query has $q^\\top k = q^\\top P k$, so key $i$ wins for some centred query exactly when "
            "$P k_i$ is a vertex of the hull of the projected keys.",
            f"The keys that can win: {', '.join(map(str, sorted(found)))}"
            + (
                f"; key(s) {', '.join(map(str, lost))} win(s) with free queries but not with centred ones."
                if lost
                else "."
            ),
        )
        return Solution(
            self.id,
            {"winners": sorted(found)},
            ("projection.mean_subtraction", "attention.selectable_iff_not_in_hull"),
            work,
            certificate=cert,
        )

    def statement(self):
        items = [f"k_{{{i}}} = {_vec(k)}" for i, k in enumerate(self.keys, 1)]
        intro = [
            "The queries of this head are outputs of a LayerNorm with gain $1$ and bias $0$, so every query is "
            "centred: $\\mathbf 1^\\top q = 0$ (any centred direction occurs). The keys are",
            "$$" + ",\\quad ".join(items) + ".$$",
        ]
        parts = [
            ("winners", "Which keys can some centred query make the strict winner? Give the list of their numbers.")
        ]
        return intro, parts

    def mark(self, answer):
        from .values import PartResult, _Wrong, read_number_set

        truth = self.winners()
        try:
            if "winners" not in answer:
                raise _Wrong("no answer given for 'winners'")
            given = read_number_set(answer["winners"], len(self.keys), "key", "winners")
        except _Wrong as err:
            return [PartResult(self.id, f"key {j}", False, str(err)) for j in range(1, len(self.keys) + 1)]
        parts = []
        for j in range(1, len(self.keys) + 1):
            ok = (j in given) == (j in truth)
            why = (
                f"key {j} can win: P k_{j} is a vertex of the hull of the projected keys (you did not list it)"
                if j in truth
                else f"key {j} cannot win: P k_{j} lies in the hull of the other projected keys (you listed it)"
            )
            parts.append(PartResult(self.id, f"key {j}", ok, "correct" if ok else why))
        return parts


def _spread(points) -> bool:
    """Not all on one line."""
    (x0, y0) = points[0]
    return any((x1 - x0) * (y2 - y0) != (y1 - y0) * (x2 - x0) for (x1, y1) in points for (x2, y2) in points)
