"""The image of LayerNorm after the affine map h(y) = diag(a) y + b: a hyperplane ellipsoid.

Notation: A = diag(a), P = I - 1 1^T / n, M = A P A, w = (1/a_1, ..., 1/a_n) (all gains
non-zero), H = {z : w^T z = 0} = A U with U = 1^perp, P2 = I - w w^T / (w^T w) and
N = P2 A^-2 P2 (the matrix of the Riechers paper).  For general n, vectors of U are
written y = P q (y_j = q_j - sum_k q_k / n), so the hypothesis 1^T y = 0 is built in.
For a concrete n the proofs use explicit matrices; the eigen-structure statements use the
fixed rational gains of :func:`sample_gains` and exact arithmetic.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

from ..theorem import Hypothesis, Step, Theorem, chain, general_symbols
from . import CONVENTION_NAMES, routine, width_hypothesis
from .decomposition import radial_factor
from .sphere import radius_expression

__all__ = ["theorems", "sample_gains", "secular_function", "n_sym"]


_SUMS = "finite sums and Kronecker deltas"
_SQUARES = "compare squares (both sides nonnegative)"
_SIGN = "sign under assumptions"


def sample_gains(n: int) -> list:
    """Distinct non-zero rational gains of mixed sign with distinct squares: (-1)^i (i+2)/(i+1)."""
    return [Fraction((-1) ** i * (i + 2), i + 1) for i in range(n)]


def secular_function(a, lam, n):
    """1 - (1/n) sum_i a_i^2 / (a_i^2 - lam) for an explicit list of gains (SymPy)."""
    return 1 - sum(ai**2 / (ai**2 - lam) for ai in a) / n


_WIDTH = r"$n \ge 2$ is an integer; $i, j, k$ range over $1, \dots, n$"


_NONZERO = Hypothesis("gains", "every gain is non-zero", r"a_i \ne 0")


def _gen():
    import sympy as sp

    s = general_symbols()
    n, i, j, k = s["n"], s["i"], s["j"], s["k"]
    a, q = s["a"], sp.IndexedBase("q", real=True)
    Q = sp.Sum(q[k], (k, 1, n))

    def y(t):  # a vector of U, entry t
        return q[t] - Q / n

    return sp, s, n, i, j, k, a, y


def n_sym(n_value):
    import sympy as sp

    return sp.Symbol("n", positive=True, integer=True) if n_value is None else sp.Integer(n_value)


# ------------------------------------------------------------------ hyperplane


def _hyperplane(n_value):
    hyps = (
        width_hypothesis(n_value, _WIDTH),
        _NONZERO,
        Hypothesis(
            "image",
            r"$z = \operatorname{diag}(a)\, c P x + b$ for a scalar $c$ (every LayerNorm output is one, for any "
            r"$\epsilon$ and either convention)",
            r"z = \operatorname{diag}(a)\,c\,Px + b",
        ),
    )
    text = (
        r"If every $a_i \ne 0$, every $z = \operatorname{LN}(x)$ satisfies $\sum_i (z_i - b_i)/a_i = 0$: the image "
        r"lies in the hyperplane through $b$ with normal $(1/a_1, \dots, 1/a_n)$."
    )
    latex = r"\sum_{i=1}^{n} \frac{z_i - b_i}{a_i} = 0"
    definitions = ()
    if n_value is None:
        sp, s, n, i, j, k, a, _ = _gen()
        x, b = s["x"], s["b"]
        c = sp.Symbol("c", real=True)
        xbar, z, t = sp.Symbol("xbar"), sp.Function("z"), sp.Symbol("t", positive=True, integer=True)
        definitions = ((xbar, sp.Sum(x[k], (k, 1, n)) / n), (z, sp.Lambda((t,), c * a[t] * (x[t] - xbar) + b[t])))
        steps = chain(
            sp.Sum((z(j) - b[j]) / a[j], (j, 1, n)),
            (c * sp.Sum(x[j] - xbar, (j, 1, n)), _SUMS, "expand"),
            (0, _SUMS, r"$\sum_j x_j = n\bar{x}$"),
            description=r"By Lemma projection.mean_subtraction",
        )
        steps += routine(Step(r"$\sum_j (x_j - \bar{x}) = 0$", sp.Sum(x[j] - xbar, (j, 1, n)), 0, _SUMS))
        concl = (Step("", sp.Sum((z(j) - b[j]) / a[j], (j, 1, n)), 0, _SUMS),)
    else:
        import sympy as sp

        x = sp.symbols(f"x1:{n_value + 1}", real=True)
        a = sp.symbols(f"a1:{n_value + 1}", real=True, nonzero=True)
        b = sp.symbols(f"b1:{n_value + 1}", real=True)
        c = sp.Symbol("c", real=True)
        mean = sum(x) / n_value
        z = [a[t] * c * (x[t] - mean) + b[t] for t in range(n_value)]
        X, one = sp.MatrixSymbol("x", n_value, 1), sp.MatrixSymbol("1", n_value, 1)
        steps = (
            Step(
                r"$\mathbf{1}^T (x - \bar{x}\,\mathbf{1}) = 0$ (explicit)",
                one.T * (X - one * (one.T * X) / n_value),
                sp.ZeroMatrix(1, 1),
                "expand",
                where=((X, sp.Matrix(x)), (one, sp.ones(n_value, 1))),
            ),
        )
        concl = (Step(r"$\sum_j (z_j - b_j)/a_j = 0$", sum((z[t] - b[t]) / a[t] for t in range(n_value)), 0, "expand"),)
    return Theorem(
        "ellipsoid.hyperplane",
        "The image lies in a hyperplane with normal $1/a$",
        text,
        latex,
        hyps,
        steps,
        concl,
        n=n_value,
        definitions=definitions,
        uses=("projection.mean_subtraction",),
    )


# -------------------------------------------------------------------- equation


def _equation(n_value, convention):
    import sympy as sp

    eps = sp.Symbol("epsilon", positive=True)
    r = sp.Symbol("r", positive=True)
    hyps = (
        width_hypothesis(n_value, _WIDTH),
        _NONZERO,
        Hypothesis("image", r"$z = \operatorname{diag}(a)\, g(p) + b$ with $p = P x \ne 0$", ""),
    )
    text = (
        r"If every $a_i \ne 0$, $z = \operatorname{LN}(x)$ satisfies "
        r"$(z - b)^T \operatorname{diag}(a)^{-2} (z - b) = n$ when $\epsilon = 0$, and "
        r"$= \|g(P x)\|^2 < n$ when $\epsilon > 0$ " + f"({CONVENTION_NAMES[convention]} convention)."
    )
    latex = r"(z-b)^T \operatorname{diag}(a)^{-2} (z-b) = n\ (\epsilon = 0),\quad < n\ (\epsilon > 0)"
    radius = radius_expression(
        r, sp.Symbol("n", positive=True, integer=True) if n_value is None else sp.Integer(n_value), eps, convention
    )
    definitions = ()
    if n_value is None:
        _, s, n, i, j, k, a, _ = _gen()
        g, z = sp.IndexedBase("g", real=True), sp.Function("z")
        t = sp.Symbol("t", positive=True, integer=True)
        form = Step(
            r"With $g = g(p)$ the form is $\|g(p)\|^2$, which is $n$ for $\epsilon = 0$ by Theorem "
            f"sphere.radius and below $n$ for $\\epsilon > 0$ by Theorem sphere.interior_{convention}",
            sp.Sum((z(j) - s["b"][j]) ** 2 / a[j] ** 2, (j, 1, n)),
            sp.Sum(g[j] ** 2, (j, 1, n)),
            _SUMS,
            why="cancel $a_j^2$",
        )
        definitions = ((z, sp.Lambda((t,), a[t] * g[t] + s["b"][t])),)
        cases, cited = _equation_cases(n, j, k, a, eps, radius, convention)
        steps, concl = (form, *cases), (form, *cited)
    else:
        a = sp.symbols(f"a1:{n_value + 1}", real=True, nonzero=True)
        p = sp.symbols(f"p1:{n_value + 1}", real=True)
        R2 = sum(t**2 for t in p)
        y0 = [sp.sqrt(n_value) * t / sp.sqrt(R2) for t in p]
        form0 = sum((a[t] * y0[t]) ** 2 / a[t] ** 2 for t in range(n_value))
        c = radial_factor(sp.sqrt(R2), n_value, eps, convention)
        forme = sum((a[t] * c * p[t]) ** 2 / a[t] ** 2 for t in range(n_value))
        steps = (
            Step(
                r"$\epsilon > 0$: the quadratic form equals $c(\|p\|)^2 \|p\|^2$ (explicit)",
                forme,
                c**2 * R2,
                "simplify-to-zero",
            ),
            Step("which is below $n$", radius**2, n_value, _SIGN, relation="<"),
        )
        concl = (
            Step(r"$\epsilon = 0$: the quadratic form equals $n$ (explicit)", form0, n_value, "simplify-to-zero"),
            Step(r"$\epsilon > 0$: below $n$", radius**2, n_value, _SIGN, relation="<"),
        )
    return Theorem(
        "ellipsoid.equation",
        "The ellipsoid equation",
        text,
        latex,
        hyps,
        steps,
        concl,
        n=n_value,
        convention=convention,
        uses=("ellipsoid.hyperplane", "sphere.radius", f"sphere.interior_{convention}"),
        definitions=definitions,
    )


def _equation_cases(n, j, k, a, eps, radius, convention) -> tuple:
    """The values of the form that Theorems sphere.radius and sphere.interior give, checked here again:
    routine steps and routine conclusions."""
    import sympy as sp

    p = sp.IndexedBase("p", real=True)
    R2 = sp.Sum(p[k] ** 2, (k, 1, n))
    factor = radial_factor(sp.sqrt(R2), n, eps, convention)

    def form(y):  # the quadratic form at z - b = diag(a) y
        return sp.Sum((a[j] * y(j)) ** 2 / a[j] ** 2, (j, 1, n))

    at_zero = Step(
        r"For $\epsilon = 0$, $g(p)_j = \sqrt{n}\, p_j / \|p\|$ and the form is $n$",
        form(lambda t: sp.sqrt(n) * p[t] / sp.sqrt(R2)),
        n,
        _SUMS,
    )
    below = Step(r"For $\epsilon > 0$, $\|g(p)\|^2$ at $r = \|p\|$ is below $n$", radius**2, n, _SIGN, relation="<")
    steps = routine(
        Step(
            r"At $z - b = \operatorname{diag}(a)\, p$ the form is $\sum_j (a_j p_j)^2 / a_j^2 = \|p\|^2$",
            form(lambda t: p[t]),
            R2,
            _SUMS,
        ),
        at_zero,
        Step(
            r"For $\epsilon > 0$, $g(p) = c\, p$ with $c$ the factor of $g$ at $\|p\|$, and the form is $c^2 \|p\|^2$",
            form(lambda t: factor * p[t]),
            factor**2 * R2,
            _SUMS,
        ),
        below,
    )
    return steps, routine(at_zero, below)


# ----------------------------------------------------------- zero and equal gains


def _zero_gains(n_value):
    import sympy as sp

    hyps = (
        width_hypothesis(n_value, _WIDTH),
        Hypothesis(
            "zero gains",
            r"exactly $k$ of the gains are non-zero, $0 \le k \le n$, and $z = \operatorname{diag}(a)\, y + b$ with "
            r"$y = g(P x)$",
            "",
        ),
    )
    text = (
        r"Coordinates with $a_i = 0$ are constant ($z_i = b_i$). The image spans an affine subspace of dimension "
        r"$\operatorname{rank}(\operatorname{diag}(a) P \operatorname{diag}(a)) = k$ when $k < n$ (the block of "
        r"non-zero gains is invertible) and $n - 1$ when $k = n$."
    )
    latex = r"a_i = 0 \Rightarrow z_i = b_i;\quad \operatorname{rank}(\operatorname{diag}(a) P \operatorname{diag}(a)) = k\ (k < n),\ n - 1\ (k = n)"
    if n_value is None:
        _, s, n, i, j, k_, a, _ = _gen()
        y, b = s["y"], s["b"]
        kk = sp.Symbol("k", positive=True, integer=True)
        m = sp.Symbol("m", positive=True, integer=True)  # m = n - k > 0 zero gains
        c = sp.Symbol("c", real=True)
        zero = Step(
            r"Where $a_i = 0$, $z_i = b_i$ and row $i$ of $A P A$ ($A = \operatorname{diag}(a)$) vanishes:",
            a[i] * y[i] + b[i],
            b[i],
            "expand",
            where=((a[i], 0),),
        )
        steps = (
            zero,
            Step("", a[i] * (sp.KroneckerDelta(i, j) - 1 / n) * a[j], 0, "expand", where=((a[i], 0),)),
            Step(
                r"Order the gains so that $a_1, \dots, a_k$ are the non-zero ones. A null vector $v$ of the block "
                r"$(a_i a_j (\delta_{ij} - \tfrac{1}{n}))_{i, j \le k}$ has $v_j = c / a_j$ with "
                r"$c = \tfrac{1}{n} \sum_{j \le k} a_j v_j$, and then",
                c - sp.Sum(a[j] * (c / a[j]), (j, 1, kk)) / n,
                c * (1 - kk / n),
                _SUMS,
                why="so $c (1 - k/n) = 0$",
            ),
            Step(
                r"For $k < n$, that is $n = k + m$ with $m \ge 1$, $c = 0$ and $v = 0$: the block is invertible, as",
                1 - kk / (kk + m),
                0,
                _SIGN,
                relation=">",
            ),
            Step(
                r"For $k = n$ the factor vanishes and $v_j = 1/a_j$ spans the kernel: rank $n - 1$.",
                1 - kk / n,
                0,
                "expand",
                where=((kk, n),),
            ),
        )
        concl = (steps[0], steps[3])
    else:
        g = sample_gains(n_value)
        zeros = [0] if n_value == 2 else [0, n_value - 1] if n_value >= 4 else [0]
        a = [sp.Integer(0) if t in zeros else sp.Rational(g[t].numerator, g[t].denominator) for t in range(n_value)]
        nz = [t for t in range(n_value) if t not in zeros]
        kk = len(nz)
        A = sp.diag(*a)
        M = A * (sp.eye(n_value) - sp.ones(n_value, n_value) / n_value) * A
        block = M.extract(nz, nz)
        value = sp.Mul(*[a[t] ** 2 for t in nz]) * (1 - sp.Rational(kk, n_value))
        ys = sp.symbols(f"y1:{n_value + 1}", real=True)
        bs = sp.symbols(f"b1:{n_value + 1}", real=True)
        E = sp.Matrix([[1 if c == t else 0 for c in range(n_value)] for t in zeros])
        Es, As, Ps = (
            sp.MatrixSymbol("E", *E.shape),
            sp.MatrixSymbol("A", n_value, n_value),
            sp.MatrixSymbol("P", n_value, n_value),
        )
        steps = (
            Step(
                f"Rows {', '.join(str(t + 1) for t in zeros)} of $A P A$ vanish (gains $a_i = 0$ there; $E$ selects "
                "them)",
                Es * As * Ps * As,
                sp.ZeroMatrix(len(zeros), n_value),
                "expand",
                where=((Es, E), (As, A), (Ps, sp.eye(n_value) - sp.ones(n_value, n_value) / n_value)),
            ),
            Step(
                r"the determinant of the non-zero block is $\prod_j a_j^2 (1 - k/n)$" + f" with $k = {kk}$",
                block,
                value,
                "determinant lemma",
            ),
        )
        ga = sp.symbols(f"a1:{n_value + 1}", real=True)
        concl = (
            Step(
                "$z_i = a_i y_i + b_i = b_i$ on the zero-gain coordinates",
                sp.Matrix([ga[t] * ys[t] + bs[t] for t in zeros]),
                sp.Matrix([bs[t] for t in zeros]),
                "expand",
                where=tuple((ga[t], 0) for t in zeros),
            ),
            Step(f"the block determinant is non-zero, so the rank is $k = {kk}$", value, 0, _SIGN, relation=">"),
        )
    return Theorem(
        "ellipsoid.zero_gains",
        "Zero gains: constant coordinates and a lower dimension",
        text,
        latex,
        hyps,
        steps,
        concl,
        n=n_value,
    )


def _equal_gains(n_value):
    import sympy as sp

    c = sp.Symbol("c", real=True, nonzero=True)
    hyps = (
        width_hypothesis(n_value, _WIDTH),
        Hypothesis("equal gains", r"$a_i = c \ne 0$ for every $i$", r"a = c\mathbf{1},\ c \ne 0"),
        Hypothesis("eps zero", r"$\epsilon = 0$ and $P x \ne 0$", ""),
    )
    text = (
        r"If $a_i = c \ne 0$ for all $i$, the image is the $(n-2)$-sphere of radius $|c|\sqrt{n}$ centred at $b$ in "
        r"the hyperplane $\mathbf{1}^T (z - b) = 0$; every semi-axis equals $|c|\sqrt{n}$."
    )
    latex = r"\|z - b\| = |c|\sqrt{n},\ \ \mathbf{1}^T (z - b) = 0"
    nn = n_sym(n_value)
    lam = sp.Symbol("lambda", positive=True)
    definitions = ()
    semi = Step(
        r"the semi-axes $\sqrt{n\lambda}$ at $\lambda = c^2$ equal $|c|\sqrt{n}$",
        sp.sqrt(nn * lam),
        sp.Abs(c) * sp.sqrt(nn),
        _SQUARES,
        where=((lam, c**2),),
    )
    if n_value is None:
        _, s, n, i, j, k, a, _ = _gen()
        I, J = sp.Symbol("I"), sp.Symbol("J")
        p, x = sp.IndexedBase("p", real=True), s["x"]
        norm = sp.Symbol(r"\|p\|", positive=True)
        xbar, Psym = sp.Symbol("xbar"), sp.Symbol("P")
        steps = (
            Step(
                r"With $A = c I$, $A P A = c^2 P$, and on $\mathbf{1}^\perp$",
                c**2 * Psym,
                c**2,
                "apply to v orthogonal to 1 (J v = 0)",
                data=(n,),
            ),
            *routine(
                Step(
                    r"$A P A = (c I)(I - \tfrac{1}{n} J)(c I) = c^2 P$",
                    (c * I) * (I - J / n) * (c * I),
                    c**2 * (I - J / n),
                    "rewrite J^2 = nJ",
                    data=(n,),
                )
            ),
            dataclasses.replace(semi, description=r"so by Theorem ellipsoid.principal_axes every semi-axis is"),
            Step(
                r"With $p = P x$, $z - b = c\, g(p) = c \sqrt{n}\, p / \|p\|$ (Theorem sphere.radius), so",
                sp.sqrt(sp.Sum((c * sp.sqrt(n) * p[j] / norm) ** 2, (j, 1, n))),
                sp.Abs(c) * sp.sqrt(n),
                _SUMS,
            ),
            Step(
                r"and $\mathbf{1}^T (z - b) = 0$, as $p_j = x_j - \bar{x}$ (Lemma projection.mean_subtraction):",
                sp.Sum(c * (x[j] - xbar), (j, 1, n)),
                0,
                _SUMS,
            ),
            *routine(
                Step(
                    r"$\|z - b\|^2 = \sum_j (c\, g(p)_j)^2 = c^2 n$",
                    sp.Sum((c * sp.sqrt(n) * p[j] / norm) ** 2, (j, 1, n)),
                    c**2 * n,
                    _SUMS,
                )
            ),
        )
        concl = steps[3:5]
        definitions = (
            (Psym, I - J / n),
            (norm, sp.sqrt(sp.Sum(p[k] ** 2, (k, 1, n)))),
            (xbar, sp.Sum(x[k], (k, 1, n)) / n),
        )
    else:
        P = sp.eye(n_value) - sp.ones(n_value, n_value) / n_value
        A = c * sp.eye(n_value)
        p = sp.symbols(f"p1:{n_value + 1}", real=True)
        R2 = sum(t**2 for t in p)
        zb = [c * sp.sqrt(n_value) * t / sp.sqrt(R2) for t in p]
        x = sp.symbols(f"x1:{n_value + 1}", real=True)
        mean = sum(x) / n_value
        As, Ps = sp.MatrixSymbol("A", n_value, n_value), sp.MatrixSymbol("P", n_value, n_value)
        steps = (
            Step("$A P A = c^2 P$ (explicit)", As * Ps * As, c**2 * Ps, "expand", where=((As, A), (Ps, P))),
            Step(
                "spectrum of $c^2 P$ (explicit)",
                c**2 * P,
                {sp.Integer(0): 1, c**2: n_value - 1},
                "eigen (characteristic polynomial)",
            ),
            semi,
        )
        concl = (
            Step(
                r"$\|z - b\| = |c|\sqrt{n}$ (explicit)",
                sp.sqrt(sum(t**2 for t in zb)),
                sp.Abs(c) * sp.sqrt(n_value),
                "simplify-to-zero",
            ),
            Step(r"$\mathbf{1}^T (z - b) = 0$ (explicit)", sum(c * (t - mean) for t in x), 0, "expand"),
        )
    return Theorem(
        "ellipsoid.equal_gains",
        "Equal gains give a sphere",
        text,
        latex,
        hyps,
        steps,
        concl,
        n=n_value,
        definitions=definitions,
        uses=("ellipsoid.principal_axes",),
    )


def theorems(n: int | None = None, convention: str = "torch") -> list:
    """The ellipsoid theorems for general n or width ``n``; ``convention`` is used for eps > 0."""
    return [_hyperplane(n), _equation(n, convention), _zero_gains(n), _equal_gains(n)]
