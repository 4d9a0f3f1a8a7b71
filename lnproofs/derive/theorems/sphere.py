"""Where the radial scaling g sends the centred vector P x.

With eps = 0, g(P x) lies on the sphere of radius sqrt(n) inside the hyperplane
orthogonal to 1 (an (n-2)-sphere).  With eps > 0 it lies strictly inside that ball, at
the closed-form radius sqrt(n) r / sqrt(r^2 + n eps) ("torch") or
sqrt(n) r / (r + eps sqrt(n)) ("std") of r = |P x|, which is at most r / sqrt(eps)
(resp. r / eps): a near-constant input lands near the centre.
"""

from __future__ import annotations

from ..theorem import Hypothesis, Step, Theorem, general_symbols
from . import routine, width_hypothesis
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


def _norm_p(n, k):
    """The vector p = P x and its norm as a named quantity ``\\|p\\| = (sum_k p_k^2)^(1/2)``."""
    import sympy as sp

    p = sp.IndexedBase("p", real=True)
    norm = sp.Symbol(r"\|p\|", positive=True)
    return p, norm, (norm, sp.sqrt(sp.Sum(p[k] ** 2, (k, 1, n))))


def _radius_general() -> Theorem:
    import sympy as sp

    s = general_symbols()
    n, j, k, x = s["n"], s["j"], s["k"], s["x"]
    p, norm, norm_def = _norm_p(n, k)
    xbar = sp.Symbol("xbar")
    hyps = (
        width_hypothesis(None, _WIDTH),
        Hypothesis("eps zero", r"$\epsilon = 0$, so that $g(y) = \sqrt{n}\, y / \|y\|$", r"\epsilon = 0"),
        Hypothesis("centred", r"$p = P x \ne 0$", r"p = Px \ne 0"),
    )
    norm_step = Step(
        r"By Lemma projection.mean_subtraction $p_j = x_j - \bar{x}$. The norm of $g(p)$ is",
        sp.sqrt(sp.Sum(n * p[j] ** 2 / norm**2, (j, 1, n))),
        sp.sqrt(n),
        _SUMS,
    )
    sum_step = Step(
        r"and $\mathbf{1}^T g(p)$ is",
        sp.Sum(sp.sqrt(n) * (x[j] - xbar) / norm, (j, 1, n)),
        0,
        _SUMS,
        why=r"$\sum_j x_j = n \bar{x}$",
    )
    return Theorem(
        "sphere.radius",
        _RADIUS_TITLE,
        r"For $\epsilon = 0$: $\|g(P x)\| = \sqrt{n}$ and $\mathbf{1}^T g(P x) = 0$, so $g(P x)$ lies on "
        r"the sphere of radius $\sqrt{n}$ inside the hyperplane orthogonal to $\mathbf{1}$, an "
        r"$(n-2)$-sphere.",
        r"\|g(Px)\| = \sqrt{n},\quad \mathbf{1}^T g(Px) = 0",
        hyps,
        (
            norm_step,
            sum_step,
            *routine(
                Step(
                    r"$\|g(p)\|^2 = \sum_j n p_j^2 / \|p\|^2 = n$", sp.Sum(n * p[j] ** 2 / norm**2, (j, 1, n)), n, _SUMS
                ),
                Step(r"$\mathbf{1}^T p = \sum_j (x_j - \bar{x}) = 0$", sp.Sum(x[j] - xbar, (j, 1, n)), 0, _SUMS),
            ),
        ),
        (norm_step, sum_step),
        definitions=((xbar, sp.Sum(x[k], (k, 1, n)) / n), norm_def),
        uses=("projection.mean_subtraction",),
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


#: the closed form of the radius as the statements write it
_FORMULA_LATEX = {
    "torch": r"\frac{\sqrt{n}\,r}{\sqrt{r^2 + n\epsilon}}",
    "std": r"\frac{\sqrt{n}\,r}{r + \epsilon\sqrt{n}}",
}


def _interior(convention: str, n_value: int | None) -> Theorem:
    import sympy as sp

    if n_value is not None:
        return _interior_concrete(convention, n_value)
    s = general_symbols()
    n, j, k = s["n"], s["j"], s["k"]
    eps = sp.Symbol("epsilon", positive=True)
    r = sp.Symbol("r", positive=True)
    p, norm, norm_def = _norm_p(n, k)
    hyps = (
        width_hypothesis(None, _WIDTH),
        Hypothesis("eps positive", r"$\epsilon > 0$", r"\epsilon > 0"),
        Hypothesis("norm", r"$p = P x$ has norm $r = \|p\| > 0$ ($p = 0$ gives the centre $g(p) = 0$)", r"r > 0"),
    )
    formula_latex = _FORMULA_LATEX[convention]
    if convention == "torch":
        bound, bound_text = r / sp.sqrt(eps), r"$r / \sqrt{\epsilon}$"
    else:
        bound, bound_text = r / eps, r"$r / \epsilon$"
    radius = formula_expr(r, n, eps, convention)
    first = Step(
        r"Since $g(p) = c\, p$ with $c$ the factor of $g$ at $\|p\|$,",
        sp.Sum((radial_factor(norm, n, eps, convention) * p[j]) ** 2, (j, 1, n)),
        (radial_factor(norm, n, eps, convention) * norm) ** 2,
        _SUMS,
    )
    below = Step(r"At $\|p\| = r$ its square is", radius**2, n, _SIGN, relation="<")
    bounded = Step("", radius**2, bound**2, _SIGN, relation="<=")
    closed, closed_value = _closed_form(r, n, eps, convention, formula_latex)
    return Theorem(
        f"sphere.interior_{convention}",
        rf"With $\epsilon > 0$, $g(P x)$ lies strictly inside the ball ({convention})",
        r"For $\epsilon > 0$: $\|g(P x)\| = " + formula_latex + r" < \sqrt{n}$ with $r = \|P x\|$, and it "
        f"is at most {bound_text}.",
        r"\|g(Px)\| = " + formula_latex + r" < \sqrt{n},\quad r = \|Px\|",
        hyps,
        (first, *routine(closed), below, bounded),
        (first, below, *routine(closed_value)),
        convention=convention,
        definitions=(norm_def,),
    )


def _closed_form(r, n, eps, convention: str, formula_latex: str) -> tuple:
    """The radius in closed form, ``sqrt(c^2 r^2)`` and ``c r`` with ``c`` the factor of ``g`` at ``r``."""
    import sympy as sp

    C = sp.Symbol("c", positive=True)
    bind = ((C, radial_factor(r, n, eps, convention)),)
    formula = formula_expr(r, n, eps, convention)
    return (
        Step(
            r"With $c$ the factor of $g$ at $r = \|P x\|$, $\|g(P x)\| = \sqrt{c^2 r^2} = " + formula_latex + "$",
            sp.sqrt(C**2 * r**2),
            formula,
            _SQUARES,
            where=bind,
        ),
        Step(
            r"The closed form of the radius: $\|g(P x)\| = c\, r$ with $c$ the factor of $g$ at $r$",
            C * r,
            formula,
            _SQUARES,
            where=bind,
        ),
    )


def _interior_concrete(convention: str, n_value: int) -> Theorem:
    import sympy as sp

    n = sp.Integer(n_value)
    eps = sp.Symbol("epsilon", positive=True)
    r = sp.Symbol("r", positive=True)
    radius = radius_expression(r, n, eps, convention)
    C = sp.Symbol("c", positive=True)  # the radial factor of g at |y| = r
    hyps = (
        width_hypothesis(n_value, _WIDTH),
        Hypothesis("eps positive", r"$\epsilon > 0$", r"\epsilon > 0"),
        Hypothesis("norm", r"$r = \|P x\| > 0$", r"r = \|Px\| > 0"),
    )
    bound = r / sp.sqrt(eps) if convention == "torch" else r / eps
    p = sp.Matrix(sp.symbols(f"p1:{n_value + 1}", real=True))
    R2 = sum(t**2 for t in p)
    c = radial_factor(sp.sqrt(R2), n, eps, convention)
    steps = (
        Step(
            r"$\|g(p)\|^2 = c(\|p\|)^2 \|p\|^2$ (explicit coordinates)",
            sum((c * t) ** 2 for t in p),
            c**2 * R2,
            "simplify-to-zero",
        ),
        *routine(_closed_form(r, n, eps, convention, _FORMULA_LATEX[convention])[0]),
        Step("The squared radius is strictly below $n$", radius**2, n, _SIGN, relation="<"),
        Step("and at most the bound", radius**2, bound**2, _SIGN, relation="<="),
    )
    conclusion = (
        Step(r"$\|g(P x)\| < \sqrt{n}$", radius**2, n, _SIGN, relation="<"),
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
        rf"For $\epsilon > 0$ and $n = {n_value}$: $\|g(P x)\| < \sqrt{{n}}$.",
        r"\|g(Px)\| < \sqrt{n}",
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
