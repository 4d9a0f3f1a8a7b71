"""The squared semi-axes of LayerNorm's ellipsoid: the secular equation and the interlacing.

``diag(a) P diag(a) = diag(a)^2 - a a^T / n``; by the matrix determinant lemma its
eigenvalues off the poles ``a_i^2`` are the roots of ``f(lambda) = 1 - (1/n) sum_i a_i^2 /
(a_i^2 - lambda)``, and ``f`` decreases between consecutive poles, so one root lies in each gap.
"""

from __future__ import annotations

from ..theorem import Hypothesis, Step, Theorem
from . import routine, width_hypothesis
from .axes import charpoly
from .ellipsoid import _NONZERO, _SIGN, _SUMS, _WIDTH, _gen, sample_gains, secular_function

__all__ = ["theorems", "secular", "interlacing"]


# -------------------------------------------------------- secular equation


def secular(n_value):
    import sympy as sp

    lam = sp.Symbol("lambda", real=True)
    hyps = (
        width_hypothesis(n_value, _WIDTH),
        _NONZERO,
        Hypothesis(
            "off the poles",
            r"$\lambda \ne a_i^2$ for every $i$ (so $\operatorname{diag}(a)^2 - \lambda I$ is "
            r"invertible), and $c \ne 0$ is a scalar",
            "",
        ),
    )
    text = (
        r"$\operatorname{diag}(a) P \operatorname{diag}(a) = \operatorname{diag}(a)^2 - a a^T / n$, and its "
        r"eigenvalues $\lambda$ off the poles $a_i^2$ are the roots of "
        r"$f(\lambda) = 1 - \tfrac{1}{n} \sum_i a_i^2 / (a_i^2 - \lambda)$, $\lambda = 0$ among them."
    )
    latex = (
        r"\operatorname{diag}(a) P \operatorname{diag}(a) = \operatorname{diag}(a)^2 - \tfrac{1}{n} a a^T,\quad "
        r"1 - \frac{1}{n}\sum_{i=1}^n \frac{a_i^2}{a_i^2 - \lambda} = 0"
    )
    definitions = ()
    if n_value is None:
        _, s, n, i, j, k, a, _ = _gen()
        c = sp.Symbol("c", real=True)
        f, v, t = sp.Function("f"), sp.Function("v"), sp.Symbol("t", positive=True, integer=True)
        definitions = (
            (f, sp.Lambda((lam,), 1 - sp.Sum(a[k] ** 2 / (a[k] ** 2 - lam), (k, 1, n)) / n)),
            (v, sp.Lambda((t,), a[t] * c / (a[t] ** 2 - lam))),
        )
        steps = (
            Step(
                r"By the definition of $P$, $(A P A)_{ij}$ with $A = \operatorname{diag}(a)$ is",
                a[i] * (sp.KroneckerDelta(i, j) - 1 / n) * a[j],
                a[i] ** 2 * sp.KroneckerDelta(i, j) - a[i] * a[j] / n,
                _SUMS,
                why="expand",
            ),
            Step(
                r"So $A P A v = \lambda v$ reads $(a_i^2 - \lambda) v_i = a_i c$ with $c = \tfrac{1}{n} a^T v$: off the "
                r"poles $v_i = a_i c / (a_i^2 - \lambda)$, and $c = \tfrac{1}{n} a^T v$ holds iff $c f(\lambda) = 0$, as",
                c - sp.Sum(a[j] * v(j), (j, 1, n)) / n,
                c * f(lam),
                _SUMS,
            ),
            Step(
                r"($c \ne 0$ for $v \ne 0$). Conversely, for a root $\lambda$ of $f$ that $v$ is an eigenvector:",
                (a[i] ** 2 - lam) * v(i) - a[i] * sp.Sum(a[j] * v(j), (j, 1, n)) / n,
                a[i] * c * f(lam),
                _SUMS,
                why=r"$((A P A - \lambda I) v)_i$",
            ),
            Step(r"And $\lambda = 0$ is a root:", f(0), 0, _SUMS),
        )
        concl = (steps[0], steps[2])
    else:
        a = [sp.Rational(g.numerator, g.denominator) for g in sample_gains(n_value)]
        av = sp.Matrix(a)
        A = sp.diag(*a)
        P = sp.eye(n_value) - sp.ones(n_value, n_value) / n_value
        M = A * P * A
        f = secular_function(a, lam, n_value)
        As, Ps, avs = (
            sp.MatrixSymbol("A", n_value, n_value),
            sp.MatrixSymbol("P", n_value, n_value),
            sp.MatrixSymbol("a", n_value, 1),
        )
        bind = ((As, A), (Ps, sp.eye(n_value) - sp.ones(n_value, n_value) / n_value), (avs, av))
        steps = (
            Step(
                r"$A P A = A^2 - a a^T / n$ (explicit gains $a_i = (-1)^i (i+2)/(i+1)$)",
                As * Ps * As,
                As * As - avs * avs.T / n_value,
                "expand",
                where=bind,
            ),
            Step("$f(0) = 0$", f, 0, "simplify-to-zero", where=((lam, 0),)),
        )
        concl = (
            Step(
                r"Matrix determinant lemma: $\det(A^2 - a a^T/n - \lambda I) = \prod_i (a_i^2 - \lambda) f(\lambda)$",
                M - lam * sp.eye(n_value),
                sp.Mul(*[g**2 - lam for g in a]) * f,
                "determinant lemma",
            ),
        )
    return Theorem(
        "ellipsoid.secular_equation",
        "The secular equation of the squared semi-axes",
        text,
        latex,
        hyps,
        steps,
        concl,
        n=n_value,
        definitions=definitions,
    )


def interlacing(n_value):
    import sympy as sp

    lam = sp.Symbol("lambda", real=True)
    hyps = (
        width_hypothesis(n_value, _WIDTH),
        _NONZERO,
        Hypothesis("distinct", r"the squared gains are distinct: $a_{(1)}^2 < \dots < a_{(n)}^2$ after sorting", ""),
        Hypothesis(
            "the intermediate value theorem",
            "a function continuous on an interval that takes values of both signs there has a root in it",
            "",
            source="rudin1976",
        ),
    )
    text = (
        r"With $a_{(1)}^2 \le \dots \le a_{(n)}^2$ sorted, the non-zero eigenvalues "
        r"$\lambda_1 \le \dots \le \lambda_{n-1}$ of $\operatorname{diag}(a) P \operatorname{diag}(a)$ interlace: "
        r"$a_{(i)}^2 \le \lambda_i \le a_{(i+1)}^2$."
    )
    latex = r"a_{(i)}^2 \le \lambda_i \le a_{(i+1)}^2,\quad i = 1, \dots, n-1"
    definitions = ()
    if n_value is None:
        _, s, n, i, j, k, a, _ = _gen()
        f = 1 - sp.Sum(a[k] ** 2 / (a[k] ** 2 - lam), (k, 1, n)) / n
        sq = sp.Symbol("s", positive=True)  # one squared gain
        gap = sp.Symbol("delta", real=True, nonzero=True)  # s - lambda off the pole
        nn = sp.Symbol("n", positive=True, integer=True)
        term = -sq / (nn * (sq - lam))
        derivative = Step(
            r"By Theorem ellipsoid.secular_equation the non-zero eigenvalues are the roots of $f$ other than "
            r"$\lambda = 0$, and",
            f,
            -sp.Sum(a[k] ** 2 / (a[k] ** 2 - lam) ** 2, (k, 1, n)) / n,
            "derivative",
            data=(lam,),
        )
        steps = (
            derivative,
            Step(
                r"whose terms, at a squared gain $s$ and $\delta = s - \lambda \ne 0$, are negative:",
                -sq / (nn * gap**2),
                0,
                _SIGN,
                relation="<",
                why=r"$f$ decreases between poles",
            ),
            Step(
                r"The term $-\tfrac{1}{n}\, s/(s - \lambda)$ of $f$ at the pole $s = a_{(i)}^2$ has",
                term,
                sp.oo,
                "limit",
                data=(lam, sq, "+"),
            ),
            Step("", term, -sp.oo, "limit", data=(lam, sq, "-")),
            Step(
                r"while the others stay bounded, so $f$ runs from $+\infty$ to $-\infty$ on each gap "
                r"$(a_{(i)}^2, a_{(i+1)}^2)$ and has there exactly one root (intermediate values). Above "
                r"$a_{(n)}^2$ it decreases to $1$, as",
                term,
                0,
                "limit",
                data=(lam, sp.oo),
            ),
            *routine(
                Step(
                    r"$f(0) = 0$ (Theorem ellipsoid.secular_equation): the root below $a_{(1)}^2$ is $\lambda = 0$",
                    f.subs(lam, 0),
                    0,
                    _SUMS,
                )
            ),
        )
        concl = steps[:3] + routine(
            Step(
                r"One root in each of the $n - 1$ gaps $(a_{(i)}^2, a_{(i+1)}^2)$, plus $\lambda = 0$: that accounts "
                r"for all $n$ eigenvalues",
                sp.Add(n - 1, 1, evaluate=False),
                n,
                "expand",
            )
        )
    else:
        a = [sp.Rational(g.numerator, g.denominator) for g in sample_gains(n_value)]
        A = sp.diag(*a)
        M = A * (sp.eye(n_value) - sp.ones(n_value, n_value) / n_value) * A
        char = charpoly(M, lam)
        sq = sorted(g**2 for g in a)
        intervals = ((sp.Integer(0), sp.Integer(0)),) + tuple((sq[t], sq[t + 1]) for t in range(n_value - 1))
        steps = (
            Step(
                r"$\det(\operatorname{diag}(a) P \operatorname{diag}(a) - \lambda I) = (-1)^n$ times the "
                "characteristic polynomial (explicit gains)",
                M - lam * sp.eye(n_value),
                (-1) ** n_value * char,
                "determinant lemma",
            ),
        )
        concl = (
            Step(
                r"Exactly one eigenvalue in $[0, 0]$ and in each $[a_{(i)}^2, a_{(i+1)}^2]$, and no other real root",
                char,
                intervals,
                "root isolation (Sturm)",
                data=(lam,),
            ),
        )
    return Theorem(
        "ellipsoid.interlacing",
        "The squared semi-axes interlace the squared gains",
        text,
        latex,
        hyps,
        steps,
        concl,
        n=n_value,
        definitions=definitions,
        uses=("ellipsoid.secular_equation",),
    )


def theorems(n: int | None = None, convention: str = "torch") -> list:
    """The secular equation and the interlacing, for general n or width ``n``."""
    return [secular(n), interlacing(n)]
