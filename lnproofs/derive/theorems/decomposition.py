"""LayerNorm = h(g(P x)): projection, radial scaling, affine map; for both eps conventions.

* ``"torch"``: LN(x) = a * (x - mean) / sqrt(var + eps) + b and
  g(y) = sqrt(n) y / sqrt(|y|^2 + n eps);
* ``"std"``: LN(x) = a * (x - mean) / (std + eps) + b and
  g(y) = sqrt(n) y / (|y| + eps sqrt(n));

with the biased variance var = |x - mean 1|^2 / n, std = sqrt(var), and h(y) = diag(a) y + b.
"""

from __future__ import annotations

from ..theorem import Hypothesis, Step, Theorem, general_symbols
from . import routine

__all__ = ["theorems", "radial_factor"]


_SUMS = "finite sums and Kronecker deltas"
_SQUARES = "compare squares (both sides nonnegative)"


def radial_factor(norm, n, eps, convention: str):
    """The scalar c with g(y) = c y, as a SymPy expression of |y| = ``norm``."""
    import sympy as sp

    if convention == "torch":
        return sp.sqrt(n) / sp.sqrt(norm**2 + n * eps)
    return sp.sqrt(n) / (norm + eps * sp.sqrt(n))


def _ln_factor(var, eps, convention: str):
    """The scalar LayerNorm divides by: sqrt(var + eps) or sqrt(var) + eps."""
    import sympy as sp

    return sp.sqrt(var + eps) if convention == "torch" else sp.sqrt(var) + eps


_TITLE = r"LayerNorm $= h \circ g \circ P$: affine after radial scaling after projection ({convention})"


def _statement(convention):
    if convention == "torch":
        return (
            r"$\operatorname{LN}_{\mathrm{torch}}(x) = a \odot (x - \bar{x}\mathbf{1}) / \sqrt{\operatorname{var}(x) + \epsilon} + b$ "
            r"equals $h(g(P x))$ with $g(y) = \sqrt{n}\, y / \sqrt{\|y\|^2 + n\epsilon}$ and "
            r"$h(y) = \operatorname{diag}(a) y + b$.",
            r"\frac{x - \bar{x}\mathbf{1}}{\sqrt{\operatorname{var}(x) + \epsilon}} \odot a + b"
            r" = h(g(Px)),\ g(y) = \frac{\sqrt{n}\,y}{\sqrt{\|y\|^2 + n\epsilon}},\ h(y) = \operatorname{diag}(a) y + b",
        )
    return (
        r"$\operatorname{LN}_{\mathrm{std}}(x) = a \odot (x - \bar{x}\mathbf{1}) / (\operatorname{std}(x) + \epsilon) + b$ "
        r"equals $h(g(P x))$ with $g(y) = \sqrt{n}\, y / (\|y\| + \epsilon\sqrt{n})$ and "
        r"$h(y) = \operatorname{diag}(a) y + b$.",
        r"\frac{x - \bar{x}\mathbf{1}}{\operatorname{std}(x) + \epsilon} \odot a + b"
        r" = h(g(Px)),\ g(y) = \frac{\sqrt{n}\,y}{\|y\| + \epsilon\sqrt{n}},\ h(y) = \operatorname{diag}(a) y + b",
    )


def _hyps(convention, n=None):
    width = (
        Hypothesis("width", r"$n \ge 2$ is an integer", r"n \ge 2")
        if n is None
        else Hypothesis("width", f"$n = {n}$", rf"n = {n}")
    )
    return (
        width,
        Hypothesis(
            "defined",
            r"$\epsilon \ge 0$ and $r = \|P x\| > 0$ (with $\epsilon = 0$ a constant $x$ has no LayerNorm)",
            r"\epsilon \ge 0,\ r = \|Px\| > 0",
        ),
    )


def _general(convention: str) -> Theorem:
    import sympy as sp

    s = general_symbols()
    n, i, j, k, x, a, b = (s[key] for key in ("n", "i", "j", "k", "x", "a", "b"))
    eps = sp.Symbol("epsilon", nonnegative=True)
    r = sp.Symbol("r", positive=True)
    xbar = sp.Symbol("xbar")
    Pf = sp.Function("P")
    rc = sp.symbols("r c", positive=True, integer=True)
    definitions = ((xbar, sp.Sum(x[j], (j, 1, n)) / n), (Pf, sp.Lambda(rc, sp.KroneckerDelta(*rc) - 1 / n)))
    var = sp.Symbol(r"\operatorname{var}(x)", nonnegative=True)
    definitions += ((var, r**2 / n),)
    g_factor = radial_factor(r, n, eps, convention)
    ln_div = _ln_factor(var, eps, convention)
    steps = routine(
        Step(
            r"Entry $i$ of $P x$ is $x_i - \bar{x}$ (Lemma projection.mean_subtraction)",
            sp.Sum(Pf(i, j) * x[j], (j, 1, n)),
            x[i] - xbar,
            _SUMS,
        ),
        Step(
            r"$\|P x\|^2 = \sum_k (x_k - \bar{x})^2 = \sum_k x_k^2 - n \bar{x}^2$, the numerator of the biased variance",
            sp.Sum((x[k] - xbar) ** 2, (k, 1, n)),
            sp.Sum(x[k] ** 2, (k, 1, n)) - n * xbar**2,
            _SUMS,
        ),
    )
    if convention == "std":
        steps += routine(
            Step(
                r"$\operatorname{std}(x) = \sqrt{\operatorname{var}(x)} = r / \sqrt{n}$",
                sp.sqrt(var),
                r / sp.sqrt(n),
                _SQUARES,
            )
        )
    steps += (
        Step(
            r"By Lemma projection.mean_subtraction $P x = x - \bar{x}\mathbf{1}$, so the factor of $g$ at "
            r"$\|y\| = r$ is one over LayerNorm's divisor",
            g_factor,
            1 / ln_div,
            _SQUARES,
        ),
    )
    conclusion = (
        Step(
            r"Entry $i$ of $\operatorname{LN}(x)$ is therefore that of $h(g(P x))$",
            a[i] * (x[i] - xbar) / ln_div + b[i],
            a[i] * g_factor * sp.Sum(Pf(i, j) * x[j], (j, 1, n)) + b[i],
            _SUMS,
            why="the line above",
        ),
    )
    text, latex = _statement(convention)
    return Theorem(
        f"decomposition.{convention}",
        _TITLE.format(convention=convention),
        text,
        latex,
        _hyps(convention),
        tuple(steps),
        conclusion,
        convention=convention,
        definitions=definitions,
        uses=("def:layernorm", "projection.mean_subtraction"),
    )


def _concrete(n: int, convention: str) -> Theorem:
    import sympy as sp

    eps = sp.Symbol("epsilon", nonnegative=True)
    x = sp.Matrix(sp.symbols(f"x1:{n + 1}", real=True))
    a = sp.Matrix(sp.symbols(f"a1:{n + 1}", real=True))
    b = sp.Matrix(sp.symbols(f"b1:{n + 1}", real=True))
    r = sp.Symbol("r", positive=True)
    P = sp.eye(n) - sp.ones(n, n) / n
    mean = sum(x) / n
    d = x - mean * sp.ones(n, 1)
    var = sum(t**2 for t in d) / n
    px = P * x
    Ps, Xs, one = sp.MatrixSymbol("P", n, n), sp.MatrixSymbol("x", n, 1), sp.MatrixSymbol("1", n, 1)
    V = sp.Symbol("var", nonnegative=True)
    bind = ((Ps, P), (Xs, x), (one, sp.ones(n, 1)))
    steps = [
        Step(
            r"$P x = x - \bar{x}\,\mathbf{1}$ (explicit matrix product)",
            Ps * Xs,
            Xs - one * (one.T * Xs) / n,
            "expand",
            where=bind,
        ),
        Step(
            r"$\|P x\|^2 = n \operatorname{var}(x)$ (explicit polynomials)",
            (Ps * Xs).T * (Ps * Xs),
            sp.Matrix([[n * V]]),
            "expand",
            where=bind + ((V, var),),
        ),
        Step(
            r"The radial factor of $g$ at $\|y\| = r$ equals one over LayerNorm's divisor at "
            r"$\operatorname{var} = r^2/n$",
            radial_factor(r, n, eps, convention),
            1 / _ln_factor(r**2 / n, eps, convention),
            _SQUARES,
        ),
    ]
    norm = sp.sqrt(sp.expand((px.T * px)[0]))
    g = radial_factor(norm, n, eps, convention) * px
    ln = sp.Matrix([a[t] * d[t] / _ln_factor(var, eps, convention) + b[t] for t in range(n)])
    hg = sp.Matrix([a[t] * g[t] + b[t] for t in range(n)])
    conclusion = (Step(r"$\operatorname{LN}(x) = h(g(P x))$ in every coordinate", ln, hg, "simplify-to-zero"),)
    text, latex = _statement(convention)
    return Theorem(
        f"decomposition.{convention}",
        _TITLE.format(convention=convention),
        text,
        latex,
        _hyps(convention, n),
        tuple(steps),
        conclusion,
        n=n,
        convention=convention,
    )


def theorems(n: int | None = None, convention: str = "torch") -> list:
    """Both conventions' decomposition theorems (always both), general or for width ``n``."""
    if n is None:
        return [_general("torch"), _general("std")]
    return [_concrete(n, "torch"), _concrete(n, "std")]
