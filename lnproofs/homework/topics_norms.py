"""Exercises on RMSNorm's sphere and on the secular equation of a LayerNorm's ellipsoid.

``rmsnorm``: RMSNorm scales without centring, so its outputs fill a whole sphere (an axis-aligned
ellipsoid with a gain), and with eps > 0 the open ball (theorems ``rmsnorm.sphere``,
``rmsnorm.ellipsoid``, ``rmsnorm.ball_image``).  ``interlacing``: the eigenvalues of
diag(a) P diag(a) are the roots of the secular function and interlace the squared gains
(``ellipsoid.secular_equation``, ``ellipsoid.interlacing``); a student locates them without
solving a polynomial.  Each kind draws, claims, solves, states and marks itself.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

from ..certificates.writers import format_fraction
from ..kernel import InputError, parse_fraction, require
from .problem_base import Claim, ProblemKind, fr_text, read_ints
from .solution import Solution

__all__ = ["RMSNormProblem", "InterlacingProblem"]


def _vec(values) -> str:
    return "(" + ", ".join(format_fraction(Fraction(v)) for v in values) + ")"


# --------------------------------------------------------------------------- rmsnorm
@dataclass(frozen=True)
class RMSNormProblem(ProblemKind):
    """RMSNorm(x) on the sphere, the semi-axes with a gain, and the input that reaches a point inside."""

    x: tuple[int, ...]
    gain: tuple[int, ...]
    u: tuple[Fraction, ...]
    eps: Fraction
    topic: ClassVar[str] = "rmsnorm"
    fields: ClassVar[tuple[str, ...]] = ("y", "semi_axes", "scale")
    written: ClassVar[tuple[tuple[str, str], ...]] = (
        ("explain", "Explain why RMSNorm's outputs fill a whole sphere while LayerNorm's lie in a hyperplane."),
    )

    @property
    def n(self) -> int:
        return len(self.x)

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "topic": self.topic,
            "x": list(self.x),
            "gain": list(self.gain),
            "u": fr_text(self.u),
            "eps": format_fraction(self.eps),
        }

    @classmethod
    def from_json(cls, data: dict) -> RMSNormProblem:
        x = read_ints(data.get("x"), "rmsnorm problem 'x'", low=3)
        gain = read_ints(data.get("gain"), "rmsnorm problem 'gain'", low=3)
        u = data.get("u")
        require(isinstance(u, list) and len(u) == len(x), InputError, "rmsnorm problem 'u' must have n entries")
        u = tuple(parse_fraction(str(v)) for v in u)
        eps = parse_fraction(str(data.get("eps")))
        require(len(gain) == len(x) and all(gain), InputError, "rmsnorm problem: n non-zero gains")
        require(any(x), InputError, "rmsnorm problem 'x' must not be 0")
        require(eps > 0 and sum(v * v for v in u) < len(x), InputError, "rmsnorm problem: eps > 0 and |u|^2 < n")
        return cls(x=x, gain=gain, u=u, eps=eps)

    @classmethod
    def draw(cls, rng: random.Random) -> RMSNormProblem:
        n = rng.randint(3, 6)
        while True:
            x = tuple(rng.randint(-3, 4) for _ in range(n))
            if any(x) and sum(x) != 0:
                break
        sizes = rng.sample([1, 2, 3], 2)
        gain = sizes + [rng.choice(sizes) for _ in range(n - 2)]
        rng.shuffle(gain)
        halves = [Fraction(k, 2) for k in range(-2, 3)]
        while True:
            u = tuple(rng.choice(halves) for _ in range(n))
            if any(u) and sum(v * v for v in u) <= n - 1:
                break
        eps = rng.choice([Fraction(1, 4), Fraction(1, 2), Fraction(1), Fraction(2)])
        return cls(x=x, gain=tuple(a * rng.choice([1, -1]) for a in gain), u=u, eps=eps)

    def exact(self) -> dict:
        import sympy as sp

        n = self.n
        norm = sp.sqrt(sum(v * v for v in self.x))
        u2 = sum(v * v for v in self.u)
        return {
            "y": [sp.radsimp(sp.sqrt(n) * v / norm) for v in self.x],
            "semi_axes": sorted((sp.sqrt(n) * abs(a) for a in self.gain), key=float, reverse=True),
            "scale": sp.radsimp(sp.sqrt(sp.Rational(n) * _q(self.eps) / (n - _q(u2)))),
        }

    def claims(self) -> tuple[Claim, ...]:
        import sympy as sp

        v, n = self.exact(), self.n
        s = v["scale"]
        su = [s * _q(c) for c in self.u]
        image = [sp.radsimp(e / sp.sqrt(sum(t**2 for t in su) / n + _q(self.eps))) for e in su]
        sizes = [abs(a) for a in self.gain]
        return (
            Claim("n is between 3 and 6 and x is not 0", 3 <= n <= 6 and any(self.x)),
            Claim("mean(x) is not 0, so LayerNorm's centring would change x", sum(self.x) != 0),
            Claim(
                "RMSNorm(x) lies on the sphere of radius sqrt(n)",
                sp.nsimplify(sp.expand(sum(e**2 for e in v["y"]))) == n,
            ),
            Claim("RMSNorm(x) is not centred: its entries do not sum to 0", not sp.expand(sum(v["y"])).equals(0)),
            Claim(
                "the gains have a repeated size and two different sizes", len(set(sizes)) < n and len(set(sizes)) > 1
            ),
            Claim("u lies strictly inside the sphere", sum(c * c for c in self.u) < n),
            Claim("RMSNorm with eps maps s u exactly to u", all((a - _q(b)).equals(0) for a, b in zip(image, self.u))),
        )

    def solve(self) -> Solution:
        import sympy as sp

        v, n = self.exact(), self.n
        u2 = sum(c * c for c in self.u)
        work = (
            f"$\\|x\\|^2 = {sum(t * t for t in self.x)}$, so $\\operatorname{{RMSNorm}}(x) = \\sqrt{{{n}}}\\,x/\\|x\\| = "
            f"({', '.join(sp.latex(e) for e in v['y'])})$, of norm $\\sqrt{{{n}}}$; its entries do not sum to 0 "
            "(no centring), so the outputs fill the whole sphere.",
            "With gain $a$ the output $z = a \\odot y$ satisfies $\\sum_i z_i^2/a_i^2 = n$: semi-axes "
            f"$\\sqrt n\\,|a_i|$ = {', '.join(f'${sp.latex(e)}$' for e in v['semi_axes'])}.",
            f"$\\|u\\|^2 = {format_fraction(u2)} < {n}$; $\\operatorname{{RMSNorm}}(su) = u$ needs "
            f"$s^2 = n\\varepsilon/(n - \\|u\\|^2)$, so $s = {sp.latex(v['scale'])}$.",
        )
        answers = {
            "y": [sp.sstr(e) for e in v["y"]],
            "semi_axes": [sp.sstr(e) for e in v["semi_axes"]],
            "scale": sp.sstr(v["scale"]),
        }
        return Solution(self.id, answers, ("rmsnorm.sphere", "rmsnorm.ellipsoid", "rmsnorm.ball_image"), work)

    def statement(self):
        n = self.n
        intro = [
            "RMSNorm scales without centring: $\\operatorname{RMSNorm}(x) = a \\odot x/\\sqrt{\\operatorname{mean}"
            f"(x^2) + \\varepsilon}}$. Let $n = {n}$, $x = {_vec(self.x)}$ and the gain $a = {_vec(self.gain)}$."
        ]
        parts = [
            (
                "y",
                "With $\\varepsilon = 0$ and gain $1$, compute $\\operatorname{RMSNorm}(x)$ exactly; check its norm.",
            ),
            (
                "semi_axes",
                "With the gain $a$ and $\\varepsilon = 0$ the outputs lie on an ellipsoid: give all "
                f"${n}$ of its semi-axes (in any order, repeats included).",
            ),
            (
                "scale",
                f"With $\\varepsilon = {format_fraction(self.eps)}$ and gain $1$, the point $u = {_vec(self.u)}$ "
                "lies inside the sphere of radius $\\sqrt n$. Find the $s > 0$ with $\\operatorname{RMSNorm}(s u) = u$.",
            ),
        ]
        return intro, parts

    def mark(self, answer):
        from .marks_geometry import _expr_check, multiset_check, vector_check
        from .values import _part

        v = self.exact()
        return [
            _part(self, "y", answer, vector_check("y", v["y"], self.n)),
            _part(self, "semi_axes", answer, multiset_check(v["semi_axes"], "sqrt(n) |a_i| for each gain a_i")),
            _part(self, "scale", answer, _expr_check(v["scale"])),
        ]


def _q(value):
    import sympy as sp

    value = Fraction(value)
    return sp.Rational(value.numerator, value.denominator)


# --------------------------------------------------------------------------- interlacing
@dataclass(frozen=True)
class InterlacingProblem(ProblemKind):
    """Locate the eigenvalues of diag(a) P diag(a) between the squared gains, and one point among them."""

    gain: tuple[int, ...]
    point: Fraction
    topic: ClassVar[str] = "interlacing"
    fields: ClassVar[tuple[str, ...]] = ("brackets", "f_at", "below")
    written: ClassVar[tuple[tuple[str, str], ...]] = (
        ("explain", "Explain how the sign of f at the point tells on which side of its interval's eigenvalue it lies."),
    )

    @property
    def n(self) -> int:
        return len(self.gain)

    def squares(self) -> list[int]:
        return sorted(a * a for a in self.gain)

    def to_json(self) -> dict:
        return {"id": self.id, "topic": self.topic, "gain": list(self.gain), "point": format_fraction(self.point)}

    @classmethod
    def from_json(cls, data: dict) -> InterlacingProblem:
        gain = read_ints(data.get("gain"), "interlacing problem 'gain'", low=3)
        require(
            len({a * a for a in gain}) == len(gain) and all(gain),
            InputError,
            "interlacing problem: distinct squared gains",
        )
        point = parse_fraction(str(data.get("point")))
        require(
            point > 0 and point not in {a * a for a in gain}, InputError, "interlacing problem: the point is no pole"
        )
        return cls(gain=gain, point=point)

    @classmethod
    def draw(cls, rng: random.Random) -> InterlacingProblem:
        n = rng.randint(3, 5)
        gain = tuple(a * rng.choice([1, -1]) for a in rng.sample(range(1, 7), n))
        squares = sorted(a * a for a in gain)
        while True:
            i = rng.randrange(n - 1)
            lo, hi = squares[i], squares[i + 1]
            point = rng.choice(sorted({Fraction(k, d) for d in (1, 2, 4) for k in range(lo * d + 1, hi * d)}))
            problem = cls(gain=gain, point=point)
            if problem.f(point) != 0:
                return problem

    def f(self, lam: Fraction) -> Fraction:
        """The secular function 1 - (1/n) sum_i a_i^2 / (a_i^2 - lambda), exactly."""
        return 1 - sum((Fraction(a * a) / (a * a - lam) for a in self.gain), Fraction(0)) / self.n

    def below(self) -> int:
        """Non-zero eigenvalues below the point: one per interval left of it, and its own interval's when f < 0."""
        squares = self.squares()
        left = sum(1 for lo, hi in zip(squares, squares[1:]) if hi < self.point)
        return left + (1 if self.f(self.point) < 0 else 0)

    def claims(self) -> tuple[Claim, ...]:
        import sympy as sp

        lam = sp.Symbol("lambda")
        n = self.n
        A = sp.diag(*[sp.Integer(a) for a in self.gain])
        poly = sp.Poly(sp.cancel((A * (sp.eye(n) - sp.ones(n, n) / n) * A).charpoly(lam).as_expr() / lam), lam)
        squares = self.squares()
        one_each = all(poly.count_roots(lo, hi) == 1 for lo, hi in zip(squares, squares[1:]))
        return (
            Claim("n is between 3 and 5 with distinct squared gains", 3 <= n <= 5 and len(set(squares)) == n),
            Claim(
                "no squared gain is an eigenvalue, so each interval is open", all(poly.eval(s) != 0 for s in squares)
            ),
            Claim("each interval between consecutive squared gains holds exactly one eigenvalue", one_each),
            Claim("the point is no pole and no eigenvalue", self.point not in squares and self.f(self.point) != 0),
            Claim(
                "the sign rule counts the eigenvalues below the point", poly.count_roots(0, self.point) == self.below()
            ),
        )

    def solve(self) -> Solution:
        squares = self.squares()
        value = self.f(self.point)
        p = format_fraction(self.point)
        work = (
            "Between consecutive poles $f$ falls from $+\\infty$ to $-\\infty$ ($f'(\\lambda) = -\\tfrac1n\\sum_i "
            "a_i^2/(a_i^2-\\lambda)^2 < 0$), so each interval $[a_{(i)}^2, a_{(i+1)}^2]$ of the sorted squares "
            f"$({', '.join(map(str, squares))})$ holds exactly one eigenvalue.",
            f"$f({p}) = {format_fraction(value)}$, "
            + (
                "positive: the point lies left of its interval's eigenvalue"
                if value > 0
                else "negative: the point lies right of its interval's eigenvalue"
            )
            + f", so {self.below()} non-zero eigenvalues are below ${p}$.",
        )
        answers = {
            "brackets": [[str(lo), str(hi)] for lo, hi in zip(squares, squares[1:])],
            "f_at": format_fraction(value),
            "below": self.below(),
        }
        return Solution(self.id, answers, ("ellipsoid.secular_equation", "ellipsoid.interlacing"), work)

    def statement(self):
        n = self.n
        intro = [
            f"A LayerNorm on $\\mathbb R^{{{n}}}$ has gain $a = {_vec(self.gain)}$. The eigenvalues $\\lambda$ of "
            "$\\operatorname{diag}(a)P\\operatorname{diag}(a) = \\operatorname{diag}(a)^2 - aa^\\top/n$ that are not "
            "squared gains are the roots of the secular function $f(\\lambda) = 1 - \\tfrac1n\\sum_i a_i^2/(a_i^2 - "
            "\\lambda)$; $0$ is one of them."
        ]
        parts = [
            (
                "brackets",
                f"Give, for each of the ${n - 1}$ non-zero eigenvalues, the interval $[lo, hi]$ of consecutive "
                "squared gains that holds it, as a list of pairs.",
            ),
            ("f_at", f"Compute $f({format_fraction(self.point)})$ exactly."),
            ("below", f"How many non-zero eigenvalues are smaller than ${format_fraction(self.point)}$?"),
        ]
        return intro, parts

    def mark(self, answer):
        from .values import _part, _rational, _Wrong, expected, json_text, read_integer

        squares = self.squares()
        right_brackets = [(Fraction(lo), Fraction(hi)) for lo, hi in zip(squares, squares[1:])]

        def brackets(value):
            if not isinstance(value, list) or not all(isinstance(p, list) and len(p) == 2 for p in value):
                raise _Wrong(f"brackets must be a list of pairs such as [[1, 4], [4, 9]], not {json_text(value)}")
            given = sorted((_rational(lo), _rational(hi)) for lo, hi in value)
            if given == right_brackets:
                return None
            wrong = next((p for p in given if p not in right_brackets), None)
            if wrong is not None:
                return (
                    f"[{format_fraction(wrong[0])}, {format_fraction(wrong[1])}] is not an interval between consecutive "
                    f"squared gains; the squared gains, sorted, are {', '.join(map(str, squares))}"
                )
            return f"there are {len(right_brackets)} non-zero eigenvalues, one in each interval; you gave {len(given)} intervals"

        def f_at(value):
            given = _rational(value)
            right = self.f(self.point)
            if given == right:
                return None
            return f"f({format_fraction(self.point)}) = {expected(format_fraction(right))}, you gave {format_fraction(given)}"

        def below(value):
            given, right = read_integer(value, "a count"), self.below()
            if given == right:
                return None
            side = "positive" if self.f(self.point) > 0 else "negative"
            return (
                f"{expected(right)} non-zero eigenvalues are below {format_fraction(self.point)}, not {given}: "
                f"f there is {expected(side)}"
            )

        return [
            _part(self, "brackets", answer, brackets),
            _part(self, "f_at", answer, f_at),
            _part(self, "below", answer, below),
        ]
