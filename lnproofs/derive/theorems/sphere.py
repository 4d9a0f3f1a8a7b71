"""Where the radial scaling g sends the centred vector P x.

With eps = 0, g(P x) lies on the sphere of radius sqrt(n) inside the hyperplane
orthogonal to 1 (an (n-2)-sphere).  With eps > 0 it lies strictly inside that ball, at
the closed-form radius sqrt(n) r / sqrt(r^2 + n eps) ("torch") or
sqrt(n) r / (r + eps sqrt(n)) ("std") of r = |P x|, which is at most r / sqrt(eps)
(resp. r / eps): a near-constant input lands near the centre.
"""

from __future__ import annotations

from ..theorem import Hypothesis, Step, Theorem, general_symbols
from . import width_hypothesis
from .decomposition import radial_factor

__all__ = ["theorems", "radius_expression"]


_SUMS = "finite sums and Kronecker deltas"
_SQUARES = "compare squares (both sides nonnegative)"
_SIGN = "sign under assumptions"


def radius_expression(r, n, eps, convention: str):
    """|g(y)| as a function of r = |y| (SymPy)."""
    return radial_factor(r, n, eps, convention) * r


_RADIUS_TITLE = r"With $\epsilon = 0$, $g(P x)$ lies on an $(n-2)$-sphere of radius $\sqrt{n}$"


_WIDTH = r"$n \ge 2$ is an integer; $j, k$ range over $1, \dots, n$"


def _radius_general() -> Theorem:
    import sympy as sp

    s = general_symbols()
    n, j, k, x = s["n"], s["j"], s["k"], s["x"]
    p = sp.IndexedBase("p", real=True)  # p = P x
    R2 = sp.Sum(p[k] ** 2, (k, 1, n))
    g_j = sp.sqrt(n) * p[j] / sp.sqrt(R2)
    mean = sp.Sum(x[k], (k, 1, n)) / n
    hyps = (
        width_hypothesis(None, _WIDTH),
        Hypothesis(
            "eps zero", r"$\epsilon = 0$, so $g(y) = \sqrt{n}\, y / \|y\|$ in both conventions", r"\epsilon = 0"
        ),
        Hypothesis(
            "centred",
            r"$p = P x$, so $p_j = x_j - \bar{x}$ (projection.mean_subtraction), and $p \ne 0$",
            r"p = Px \ne 0",
        ),
    )
    steps = (
        Step(r"$\|g(p)\|^2 = \sum_j n p_j^2 / \|p\|^2 = n$", sp.Sum(g_j**2, (j, 1, n)), n, _SUMS),
        Step(r"$\mathbf{1}^T p = \sum_j (x_j - \bar{x}) = 0$", sp.Sum(x[j] - mean, (j, 1, n)), 0, _SUMS),
        Step(
            r"$\mathbf{1}^T g(p) = \frac{\sqrt{n}}{\|p\|}\,\mathbf{1}^T p = \frac{\sqrt{n}}{\|p\|} \sum_j (x_j - \bar{x})$",
            sp.Sum(sp.sqrt(n) * (x[j] - mean) / sp.sqrt(R2), (j, 1, n)),
            0,
            _SUMS,
        ),
    )
    conclusion = (
        Step(r"$\|g(P x)\| = \sqrt{n}$", sp.sqrt(sp.Sum(g_j**2, (j, 1, n))), sp.sqrt(n), _SUMS),
        Step(r"$\mathbf{1}^T g(P x) = 0$", sp.Sum(sp.sqrt(n) * (x[j] - mean) / sp.sqrt(R2), (j, 1, n)), 0, _SUMS),
    )
    return Theorem(
        "sphere.radius",
        _RADIUS_TITLE,
        r"For $\epsilon = 0$: $\|g(P x)\| = \sqrt{n}$ and $\mathbf{1}^T g(P x) = 0$, so $g(P x)$ lies on "
        r"the sphere of radius $\sqrt{n}$ inside the hyperplane orthogonal to $\mathbf{1}$, an "
        r"$(n-2)$-sphere.",
        r"\|g(Px)\| = \sqrt{n},\quad \mathbf{1}^T g(Px) = 0",
        hyps,
        steps,
        conclusion,
    )


def _radius_concrete(n: int) -> Theorem:
    import sympy as sp

    x = sp.Matrix(sp.symbols(f"x1:{n + 1}", real=True))
    P = sp.eye(n) - sp.ones(n, n) / n
    p = P * x
    R2 = sp.expand((p.T * p)[0])
    g = sp.sqrt(n) * p / sp.sqrt(R2)
    hyps = (
        width_hypothesis(n, _WIDTH),
        Hypothesis("eps zero", r"$\epsilon = 0$ and $P x \ne 0$", r"\epsilon = 0,\ Px \ne 0"),
    )
    Ps, Xs, one = sp.MatrixSymbol("P", n, n), sp.MatrixSymbol("x", n, 1), sp.MatrixSymbol("1", n, 1)
    steps = (
        Step(
            r"$\mathbf{1}^T P x = 0$ (explicit)",
            one.T * Ps * Xs,
            sp.ZeroMatrix(1, 1),
            "expand",
            where=((Ps, P), (Xs, x), (one, sp.ones(n, 1))),
        ),
        Step(r"$\|g(P x)\|^2 = n$ (explicit)", sum(t**2 for t in g), sp.Integer(n), "simplify-to-zero"),
    )
    conclusion = (
        Step(r"$\|g(P x)\| = \sqrt{n}$", sp.sqrt(sum(t**2 for t in g)), sp.sqrt(n), "simplify-to-zero"),
        Step(r"$\mathbf{1}^T g(P x) = 0$", (sp.ones(1, n) * g)[0], 0, "simplify-to-zero"),
    )
    return Theorem(
        "sphere.radius",
        _RADIUS_TITLE,
        rf"For $\epsilon = 0$ and $n = {n}$: $\|g(P x)\| = \sqrt{{{n}}}$ and $\mathbf{{1}}^T g(P x) = 0$.",
        r"\|g(Px)\| = \sqrt{n},\quad \mathbf{1}^T g(Px) = 0",
        hyps,
        steps,
        conclusion,
        n=n,
    )


def _interior(convention: str, n_value: int | None) -> Theorem:
    import sympy as sp

    s = general_symbols()
    n = s["n"] if n_value is None else sp.Integer(n_value)
    eps = sp.Symbol("epsilon", positive=True)
    r = sp.Symbol("r", positive=True)
    radius = radius_expression(r, n, eps, convention)
    C = sp.Symbol("c", positive=True)  # the radial factor of g at |y| = r
    hyps = (
        width_hypothesis(n_value, _WIDTH),
        Hypothesis("eps positive", r"$\epsilon > 0$", r"\epsilon > 0"),
        Hypothesis("norm", r"$r = \|P x\| > 0$ (for $P x = 0$, $g(P x) = 0$ is the centre itself)", r"r = \|Px\| > 0"),
        Hypothesis("convention", f"the {convention!r} convention", ""),
    )
    if convention == "torch":
        bound, bound_text = r / sp.sqrt(eps), r"$r / \sqrt{\epsilon}$"
        formula_latex = r"\frac{\sqrt{n}\,r}{\sqrt{r^2 + n\epsilon}}"
    else:
        bound, bound_text = r / eps, r"$r / \epsilon$"
        formula_latex = r"\frac{\sqrt{n}\,r}{r + \epsilon\sqrt{n}}"
    if n_value is None:
        j, k = s["j"], s["k"]
        p = sp.IndexedBase("p", real=True)
        R2 = sp.Sum(p[k] ** 2, (k, 1, n))
        g_j = radial_factor(sp.sqrt(R2), n, eps, convention) * p[j]
        first = Step(
            r"$\|g(p)\|^2 = c(\|p\|)^2 \sum_j p_j^2$ with $c$ the radial factor, for $p = P x$",
            sp.Sum(g_j**2, (j, 1, n)),
            radial_factor(sp.sqrt(R2), n, eps, convention) ** 2 * R2,
            _SUMS,
        )
    else:
        p = sp.Matrix(sp.symbols(f"p1:{n_value + 1}", real=True))
        R2 = sum(t**2 for t in p)
        c = radial_factor(sp.sqrt(R2), n, eps, convention)
        first = Step(
            r"$\|g(p)\|^2 = c(\|p\|)^2 \|p\|^2$ (explicit coordinates)",
            sum((c * t) ** 2 for t in p),
            c**2 * R2,
            "simplify-to-zero",
        )
    steps = (
        first,
        Step(
            r"Hence $\|g(P x)\| = \sqrt{c(r)^2 r^2} = " + formula_latex + r"$ at $r = \|P x\|$",
            sp.sqrt(C**2 * r**2),
            formula_expr(r, n, eps, convention),
            _SQUARES,
            where=((C, radial_factor(r, n, eps, convention)),),
        ),
        Step("The squared radius is strictly below $n$", radius**2, n, _SIGN, relation="<"),
        Step(
            f"The radius is at most {bound_text}: a near-constant input (small $r$) lands near the centre",
            radius**2,
            bound**2,
            _SIGN,
            relation="<=",
        ),
    )
    conclusion = (
        Step(
            r"$\|g(P x)\| < \sqrt{n}$ (both sides are nonnegative, compare squares)", radius**2, n, _SIGN, relation="<"
        ),
        Step(
            r"closed form of the radius: $\|g(P x)\| = c(r)\, r$",
            C * r,
            formula_expr(r, n, eps, convention),
            _SQUARES,
            where=((C, radial_factor(r, n, eps, convention)),),
        ),
    )
    return Theorem(
        f"sphere.interior_{convention}",
        rf"With $\epsilon > 0$, $g(P x)$ lies strictly inside the ball ({convention})",
        r"For $\epsilon > 0$: $\|g(P x)\| = " + formula_latex + r" < \sqrt{n}$ with $r = \|P x\|$, and it "
        f"is at most {bound_text}.",
        r"\|g(Px)\| = " + formula_latex + r" < \sqrt{n},\quad r = \|Px\|",
        hyps,
        steps,
        conclusion,
        n=n_value,
        convention=convention,
    )


def formula_expr(r, n, eps, convention):
    """The closed form written as in the statement (independently of ``radial_factor``)."""
    import sympy as sp

    if convention == "torch":
        return sp.sqrt(n) * r / sp.sqrt(r**2 + n * eps)
    return sp.sqrt(n) * r / (r + eps * sp.sqrt(n))


def theorems(n: int | None = None, convention: str = "torch") -> list:
    """sphere.radius and both conventions' interior theorems, general or for width ``n``."""
    radius = _radius_general() if n is None else _radius_concrete(n)
    return [radius, _interior("torch", n), _interior("std", n)]
