"""Exercises on what a set of queries can do: the scores it reaches, softmax weights under a query
ball, and the keys centred queries can select.

``support``: over the outputs z = a * u + b of a LayerNorm (eps = 0, u on the sphere of radius sqrt(n)
in the hyperplane 1.u = 0) the score q.z ranges over q.b -+ sqrt(n) |P (a * q)| (Cauchy-Schwarz in the
hyperplane), the bound that the kernel's not-realisable certificates compare with.  ``softmax``: with
queries in the ball |q| <= r, the log-odds log(w_i / w_j) = q.(k_i - k_j) is at most r |k_i - k_j|
(Cauchy-Schwarz), reached at one query.  ``centred``:
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
from ..kernel import InputError, parse_fraction, require
from .problem_base import MAX_KEYS, Claim, ProblemKind, fr_text, read_ints, read_plane_keys
from .solution import Solution
from .statements import keys_display
from .topics_attention import plane_statuses

__all__ = ["SupportProblem", "SoftmaxBallProblem", "CentredProblem"]


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


# --------------------------------------------------------------------------- softmax under a query ball
@dataclass(frozen=True)
class SoftmaxBallProblem(ProblemKind):
    """The largest log-odds of two keys over a ball of queries, the query reaching it, and the radius a target needs."""

    keys: tuple[tuple[int, int], ...]
    radius: Fraction
    pair: tuple[int, int]
    target: Fraction
    topic: ClassVar[str] = "softmax"
    fields: ClassVar[tuple[str, ...]] = ("max_log_odds", "query", "radius_for")

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "topic": self.topic,
            "keys": [list(k) for k in self.keys],
            "radius": format_fraction(self.radius),
            "pair": list(self.pair),
            "target": format_fraction(self.target),
        }

    @classmethod
    def from_json(cls, data: dict) -> SoftmaxBallProblem:
        keys = read_plane_keys(data, "softmax", 2, 8)
        pair = read_ints(data.get("pair"), "softmax problem 'pair'", low=2)
        require(
            len(pair) == 2 and pair[0] != pair[1] and all(1 <= p <= len(keys) for p in pair),
            InputError,
            "softmax problem 'pair': two key numbers",
        )
        radius, target = parse_fraction(str(data.get("radius"))), parse_fraction(str(data.get("target")))
        require(radius > 0 and target > 0, InputError, "softmax problem: radius and target must be positive")
        return cls(keys=keys, radius=radius, pair=pair, target=target)

    @classmethod
    def draw(cls, rng: random.Random) -> SoftmaxBallProblem:
        count = rng.randint(3, 4)
        keys = tuple(rng.sample([(x, y) for x in range(-3, 4) for y in range(-3, 4)], count))
        pair = tuple(n + 1 for n in rng.sample(range(count), 2))
        radius = rng.choice([Fraction(1, 2), Fraction(1), Fraction(3, 2), Fraction(2), Fraction(3)])
        target = rng.choice([Fraction(k, 2) for k in range(1, 21)])
        problem = cls(keys=keys, radius=radius, pair=pair, target=target)
        reach = problem.exact()["max_log_odds"]
        if (reach - _q(target)).equals(0):
            return cls(keys=keys, radius=radius, pair=pair, target=target + Fraction(1, 2))
        return problem

    def exact(self) -> dict:
        import sympy as sp

        i, j = self.pair
        d = [a - b for a, b in zip(self.keys[i - 1], self.keys[j - 1])]
        length = sp.sqrt(sum(v * v for v in d))
        r = _q(self.radius)
        return {
            "max_log_odds": sp.radsimp(r * length),
            "query": [sp.radsimp(r * v / length) for v in d],
            "radius_for": sp.radsimp(_q(self.target) / length),
        }

    def claims(self) -> tuple[Claim, ...]:
        import sympy as sp

        v = self.exact()
        i, j = self.pair
        d = [a - b for a, b in zip(self.keys[i - 1], self.keys[j - 1])]
        q = v["query"]
        return (
            Claim("3 or 4 distinct keys, and the pair's keys differ", len(set(self.keys)) == len(self.keys) and any(d)),
            Claim(
                "the maximising query lies on the ball's boundary",
                sp.expand(sum(e**2 for e in q) - _q(self.radius) ** 2) == 0,
            ),
            Claim(
                "it reaches the Cauchy-Schwarz bound r |k_i - k_j|",
                (sum(a * b for a, b in zip(q, d)) - v["max_log_odds"]).equals(0),
            ),
            Claim("the target needs another radius than r", not (v["radius_for"] - _q(self.radius)).equals(0)),
        )

    def solve(self) -> Solution:
        import sympy as sp

        v = self.exact()
        i, j = self.pair
        work = (
            f"$\\log(w_{i}/w_{j}) = q^\\top(k_{i} - k_{j})$ and by Cauchy-Schwarz $q^\\top(k_{i} - k_{j}) \\le "
            f"\\|q\\|\\,\\|k_{i} - k_{j}\\| \\le r\\,\\|k_{i} - k_{j}\\| = {sp.latex(v['max_log_odds'])}$, with equality "
            f"only at $q = r(k_{i} - k_{j})/\\|k_{i} - k_{j}\\| = ({', '.join(sp.latex(e) for e in v['query'])})$.",
            f"The log-odds ${format_fraction(self.target)}$ needs $\\|q\\| \\ge {format_fraction(self.target)}/\\|k_{i} - "
            f"k_{j}\\| = {sp.latex(v['radius_for'])}$.",
        )
        answers = {
            "max_log_odds": sp.sstr(v["max_log_odds"]),
            "query": [sp.sstr(e) for e in v["query"]],
            "radius_for": sp.sstr(v["radius_for"]),
        }
        return Solution(self.id, answers, (), work)

    def statement(self):
        i, j = self.pair
        intro = [
            "Softmax attention gives key $k$ the weight $w_k = e^{q^\\top k}/\\sum_l e^{q^\\top k_l}$, so "
            "$w_i/w_j = e^{q^\\top(k_i - k_j)}$. The keys are",
            keys_display(self.keys),
            f"and the queries range over the ball $\\|q\\| \\le r$ with $r = {format_fraction(self.radius)}$.",
        ]
        parts = [
            ("max_log_odds", f"Find the largest value of $\\log(w_{i}/w_{j})$ over the ball, exactly."),
            ("query", "Give the query of the ball that reaches it."),
            (
                "radius_for",
                f"What is the smallest $\\|q\\|$ of a query with $\\log(w_{i}/w_{j}) = {format_fraction(self.target)}$?",
            ),
        ]
        return intro, parts

    def mark(self, answer):
        from .marks_geometry import _expr_check, vector_check
        from .values import _part

        v = self.exact()
        return [
            _part(self, "max_log_odds", answer, _expr_check(v["max_log_odds"])),
            _part(self, "query", answer, vector_check("query", v["query"], 2)),
            _part(self, "radius_for", answer, _expr_check(v["radius_for"])),
        ]


def _q(value):
    import sympy as sp

    value = Fraction(value)
    return sp.Rational(value.numerator, value.denominator)


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
        from .values import mark_members

        def why(j, wins):
            if wins:
                return f"key {j} can win: P k_{j} is a vertex of the hull of the projected keys (you did not list it)"
            return f"key {j} cannot win: P k_{j} lies in the hull of the other projected keys (you listed it)"

        return mark_members(self, answer, "winners", len(self.keys), self.winners(), why)


def _spread(points) -> bool:
    """Not all on one line."""
    (x0, y0) = points[0]
    return any((x1 - x0) * (y2 - y0) != (y1 - y0) * (x2 - x0) for (x1, y1) in points for (x2, y2) in points)
