"""The geometry exercises: the centring projection, the sphere, and the ellipsoid of a LayerNorm.

Each kind draws its own instances (``draw``), states what they must satisfy (``claims``, decided
exactly) and solves itself exactly (``solve``).  Widths run from 3 to 6.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

from ..certificates.writers import format_fraction
from ..kernel import InputError, parse_fraction, require
from .problem_base import Claim, ProblemKind, fr_text, matrix_text, read_ints
from .solution import Solution

__all__ = ["ProjectionProblem", "SphereProblem", "EllipsoidProblem", "ellipsoid_eigenvalues"]


def _mean(x) -> Fraction:
    return Fraction(sum(x), len(x))


def _nonzero_mean(rng: random.Random, n: int, low: int, high: int) -> tuple[int, ...]:
    """n integers, not all equal, whose mean is not 0 (so that Px differs from x)."""
    y = [rng.randint(low, high) for _ in range(n - 1)]
    y.append(-sum(y))
    if not any(y):
        y[0], y[1] = 1, -1 + y[1]
        y[-1] = -sum(y[:-1])
    shift = rng.choice([s for s in range(-3, 4) if s != 0])
    return tuple(v + shift for v in y)


# --------------------------------------------------------------------------- projection
@dataclass(frozen=True)
class ProjectionProblem(ProblemKind):
    """Write down P = I - J/n, show P^2 = P entry by entry, and compute P x."""

    n: int
    x: tuple[int, ...]
    topic: ClassVar[str] = "projection"
    fields: ClassVar[tuple[str, ...]] = ("P", "P_squared", "Px")
    written: ClassVar[tuple[tuple[str, str], ...]] = (
        (
            "conclude",
            "Conclude from your $P^2$ that $P$ is idempotent, and say what that means for applying $P$ twice.",
        ),
    )

    def to_json(self) -> dict:
        return {"id": self.id, "topic": self.topic, "n": self.n, "x": list(self.x)}

    @classmethod
    def from_json(cls, data: dict) -> ProjectionProblem:
        x = read_ints(data.get("x"), "projection problem 'x'", low=2)
        return cls(n=len(x), x=x)

    @classmethod
    def draw(cls, rng: random.Random) -> ProjectionProblem:
        n = rng.randint(3, 6)
        return cls(n=n, x=_nonzero_mean(rng, n, -4, 4))

    def projection(self) -> tuple[tuple[Fraction, ...], ...]:
        n = self.n
        return tuple(tuple(Fraction(int(i == j)) - Fraction(1, n) for j in range(n)) for i in range(n))

    def solve_px(self) -> list[Fraction]:
        """P x = x - mean(x) 1, exactly."""
        mean = _mean(self.x)
        return [v - mean for v in self.x]

    def _square(self):
        P, n = self.projection(), self.n
        return tuple(tuple(sum((P[i][k] * P[k][j] for k in range(n)), Fraction(0)) for j in range(n)) for i in range(n))

    def claims(self) -> tuple[Claim, ...]:
        px = self.solve_px()
        return (
            Claim("n is between 3 and 6", 3 <= self.n <= 6 and len(self.x) == self.n),
            Claim("x is not constant", len(set(self.x)) > 1),
            Claim("mean(x) is not 0, so Px differs from x", _mean(self.x) != 0 and px != list(map(Fraction, self.x))),
            Claim("P^2 = P entry by entry (the sheet asks to conclude it)", self._square() == self.projection()),
            Claim("Px sums to 0", sum(px) == 0),
        )

    def solve(self) -> Solution:
        P, n = self.projection(), self.n
        P2 = self._square()
        Px = self.solve_px()
        mean = _mean(self.x)
        diag, off = format_fraction(P[0][0]), format_fraction(P[0][1])
        work = (
            f"$P = I - \\tfrac{{1}}{{{n}}}J$ has diagonal entries ${diag}$ and off-diagonal entries ${off}$.",
            f"$(P^2)_{{ii}} = ({diag})^2 + {n - 1}\\cdot({off})^2 = {format_fraction(P2[0][0])}$ and "
            f"$(P^2)_{{ij}} = 2\\cdot({diag})({off}) + {n - 2}\\cdot({off})^2 = {format_fraction(P2[0][1])}$ "
            "for $i \\ne j$, so $P^2 = P$: applying $P$ twice is applying it once.",
            f"$\\operatorname{{mean}}(x) = {format_fraction(mean)}$, so $Px = x - ({format_fraction(mean)})\\,"
            f"\\mathbf{{1}} = ({', '.join(fr_text(Px))})$.",
        )
        answers = {"P": matrix_text(P), "P_squared": matrix_text(P2), "Px": fr_text(Px)}
        theorems = ("projection.mean_subtraction", "projection.idempotent", f"projection.idempotent@{n}")
        return Solution(self.id, answers, theorems, work)


# --------------------------------------------------------------------------- sphere
@dataclass(frozen=True)
class SphereProblem(ProblemKind):
    """Follow one input through the projection and the radial scaling (eps = 0 and eps > 0)."""

    x: tuple[int, ...]
    eps: Fraction
    topic: ClassVar[str] = "sphere"
    fields: ClassVar[tuple[str, ...]] = ("Px", "norm_Px", "g", "norm_g_eps")

    @property
    def n(self) -> int:
        return len(self.x)

    def to_json(self) -> dict:
        return {"id": self.id, "topic": self.topic, "x": list(self.x), "eps": format_fraction(self.eps)}

    @classmethod
    def from_json(cls, data: dict) -> SphereProblem:
        x = read_ints(data.get("x"), "sphere problem 'x'", low=2)
        require(len(set(x)) > 1, InputError, "sphere problem 'x' must not be constant (Px would be 0)")
        eps = parse_fraction(str(data.get("eps")))
        require(eps > 0, InputError, f"sphere problem 'eps' must be positive, not {data.get('eps')!r}")
        return cls(x=x, eps=eps)

    @classmethod
    def draw(cls, rng: random.Random) -> SphereProblem:
        n = rng.randint(3, 6)
        eps = rng.choice([Fraction(1, 4), Fraction(1, 2), Fraction(1), Fraction(2)])
        return cls(x=_nonzero_mean(rng, n, -3, 3), eps=eps)

    def exact(self) -> dict:
        """SymPy values: Px, ||Px||, g(Px) for eps = 0, and ||g(Px)|| for the given eps (torch convention)."""
        import sympy as sp

        n = self.n
        mean = sp.Rational(sum(self.x), n)
        Px = [sp.Integer(v) - mean for v in self.x]
        r = sp.sqrt(sum(v * v for v in Px))
        g = [sp.radsimp(sp.sqrt(n) * v / r) for v in Px]
        eps = sp.Rational(self.eps.numerator, self.eps.denominator)
        norm_eps = sp.radsimp(sp.sqrt(n) * r / sp.sqrt(r**2 + n * eps))
        return {"Px": Px, "norm_Px": r, "g": g, "norm_g_eps": norm_eps}

    def claims(self) -> tuple[Claim, ...]:
        import sympy as sp

        v, n = self.exact(), self.n
        norm2 = sp.nsimplify(sp.expand(sum(e**2 for e in v["g"])))
        inside = sp.Rational(n) - sp.expand(v["norm_g_eps"] ** 2)
        return (
            Claim("n is between 3 and 6", 3 <= n <= 6),
            Claim("mean(x) is not 0, so Px differs from x", sum(self.x) != 0),
            Claim("g(Px) lies on the sphere of radius sqrt(n)", norm2 == n),
            Claim("g(Px) lies in the hyperplane 1.z = 0", sp.expand(sum(v["g"])) == 0),
            Claim("with eps > 0 the point is strictly inside the sphere", bool(inside > 0)),
        )

    def solve(self) -> Solution:
        import sympy as sp

        v, n = self.exact(), self.n
        work = (
            f"$Px = x - \\operatorname{{mean}}(x)\\mathbf 1 = ({', '.join(str(e) for e in v['Px'])})$ and "
            f"$\\|Px\\| = {sp.latex(v['norm_Px'])}$.",
            f"With $\\varepsilon = 0$: $g(Px) = \\sqrt{{{n}}}\\,Px/\\|Px\\| = "
            f"({', '.join(sp.latex(e) for e in v['g'])})$, of norm $\\sqrt{{{n}}}$ and with entries summing to $0$.",
            f"With $\\varepsilon = {format_fraction(self.eps)}$ (torch convention): $\\|g(Px)\\| = "
            f"\\sqrt{{n}}\\,r/\\sqrt{{r^2 + n\\varepsilon}} = {sp.latex(v['norm_g_eps'])} < \\sqrt{{{n}}}$.",
        )
        answers = {
            "Px": [str(e) for e in v["Px"]],
            "norm_Px": sp.sstr(v["norm_Px"]),
            "g": [sp.sstr(e) for e in v["g"]],
            "norm_g_eps": sp.sstr(v["norm_g_eps"]),
        }
        return Solution(self.id, answers, ("sphere.radius", "sphere.interior_torch"), work)


# --------------------------------------------------------------------------- ellipsoid
def ellipsoid_eigenvalues(gain) -> list:
    """The eigenvalues of diag(a) P diag(a), exactly, from the secular equation: each squared gain
    a_k^2 of multiplicity m_k is an eigenvalue m_k - 1 times; the others (0 among them) are the
    roots of 1 - (1/n) sum_k m_k s_k / (s_k - lambda) = 0, of degree the number of distinct squares."""
    import sympy as sp

    n = len(gain)
    squares = {}
    for a in gain:
        squares[a * a] = squares.get(a * a, 0) + 1
    lam = sp.Symbol("lambda")
    values = [sp.Integer(s) for s, m in squares.items() for _ in range(m - 1)]
    numerator = sp.Mul(*[sp.Integer(s) - lam for s in squares]) * n - sum(
        m * s * sp.Mul(*[sp.Integer(t) - lam for t in squares if t != s]) for s, m in squares.items()
    )
    values += [sp.radsimp(r) for r in sp.roots(sp.Poly(sp.expand(numerator), lam), multiple=True)]
    return values


@dataclass(frozen=True)
class EllipsoidProblem(ProblemKind):
    """Centre, hyperplane normal and semi-axes of the image of a LayerNorm (eps = 0)."""

    gain: tuple[int, ...]
    bias: tuple[int, ...]
    topic: ClassVar[str] = "ellipsoid"
    fields: ClassVar[tuple[str, ...]] = ("center", "normal", "semi_axes")

    @property
    def n(self) -> int:
        return len(self.gain)

    def to_json(self) -> dict:
        return {"id": self.id, "topic": self.topic, "gain": list(self.gain), "bias": list(self.bias)}

    @classmethod
    def from_json(cls, data: dict) -> EllipsoidProblem:
        gain = read_ints(data.get("gain"), "ellipsoid problem 'gain'", low=3)
        bias = read_ints(data.get("bias"), "ellipsoid problem 'bias'", low=3)
        require(len(gain) == len(bias), InputError, "ellipsoid problem: 'gain' and 'bias' must have the same length")
        require(all(a != 0 for a in gain), InputError, "ellipsoid problem: every gain must be non-zero")
        require(
            len({a * a for a in gain}) <= 3,
            InputError,
            "ellipsoid problem: at most 3 different squared gains (the semi-axes then have closed forms)",
        )
        return cls(gain=gain, bias=bias)

    @classmethod
    def draw(cls, rng: random.Random) -> EllipsoidProblem:
        """Gains of 2 or 3 different sizes, some repeated (so the semi-axes have closed forms and differ)."""
        n = rng.randint(3, 6)
        kinds = rng.choice([2, 3]) if n >= 3 else 2
        sizes = rng.sample([1, 2, 3, 4], kinds)
        gain = sizes + [rng.choice(sizes) for _ in range(n - kinds)]
        rng.shuffle(gain)
        gain = [a * rng.choice([1, 1, -1]) for a in gain]
        bias = tuple(rng.randint(-2, 2) for _ in range(n))
        return cls(gain=tuple(gain), bias=bias)

    def semi_axes(self) -> list:
        """Exact semi-axes sqrt(n * lambda) for the non-zero eigenvalues of diag(a) P diag(a), descending."""
        import sympy as sp

        axes = [sp.sqrt(self.n * lam) for lam in ellipsoid_eigenvalues(self.gain) if lam != 0]
        return sorted((sp.radsimp(e) for e in axes), key=lambda e: float(e), reverse=True)

    def claims(self) -> tuple[Claim, ...]:
        import sympy as sp

        n = self.n
        values = ellipsoid_eigenvalues(self.gain)
        A = sp.diag(*[sp.Integer(a) for a in self.gain])
        M = A * (sp.eye(n) - sp.ones(n, n) / n) * A
        lam = sp.Symbol("lambda")
        product = sp.expand(sp.Mul(*[lam - v for v in values]))
        axes = self.semi_axes()
        return (
            Claim("n is between 3 and 6 and every gain is non-zero", 3 <= n <= 6 and all(self.gain)),
            Claim(
                "the eigenvalues are exactly the roots of the characteristic polynomial, with multiplicity",
                len(values) == n and sp.expand(M.charpoly(lam).as_expr() - product) == 0,
            ),
            Claim("0 is an eigenvalue exactly once, so there are n - 1 semi-axes", len(axes) == n - 1),
            Claim("the semi-axes are not all equal (some gains differ)", len({sp.nsimplify(a**2) for a in axes}) > 1),
        )

    def solve(self) -> Solution:
        import sympy as sp

        n = self.n
        axes = self.semi_axes()
        normal = [Fraction(1, a) for a in self.gain]
        a2 = ", ".join(str(a * a) for a in self.gain)
        work = (
            f"The centre is the bias $b = ({', '.join(str(b) for b in self.bias)})$; every output satisfies "
            f"$\\sum_i (z_i - b_i)/a_i = 0$, so a normal is $1/a = ({', '.join(fr_text(normal))})$.",
            f"$\\operatorname{{diag}}(a)P\\operatorname{{diag}}(a) = \\operatorname{{diag}}({a2}) - aa^\\top/{n}$; "
            "a squared gain repeated $m$ times is an eigenvalue $m - 1$ times, and the other non-zero "
            "eigenvalues $\\lambda$ are the roots of the secular equation $1 - \\tfrac1n\\sum_i a_i^2/(a_i^2-\\lambda) "
            "= 0$, interlacing the sorted $a_i^2$; they give the semi-axes $\\sqrt{n\\lambda}$: "
            + ", ".join(f"${sp.latex(e)}$" for e in axes)
            + ".",
        )
        answers = {
            "center": [str(b) for b in self.bias],
            "normal": fr_text(normal),
            "semi_axes": [sp.sstr(e) for e in axes],
        }
        theorems = ("ellipsoid.hyperplane", "ellipsoid.principal_axes", "ellipsoid.secular_equation")
        return Solution(self.id, answers, theorems, work)
