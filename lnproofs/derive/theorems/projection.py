"""The centring projection P = I - J/n, J = 1 1^T: its theorems, for general and concrete n.

For general n the proofs work in the commutative algebra spanned by ``I`` and ``J``
(reduction modulo ``J^2 = n J``) and entrywise with symbolic indices, Kronecker deltas
and finite sums.  For a concrete n they use the explicit n x n matrices.
"""

from __future__ import annotations

from ..theorem import Hypothesis, Step, Theorem, chain, general_symbols
from . import routine

__all__ = ["theorems", "projection_matrix"]


_RULE = "rewrite J^2 = nJ"


def projection_matrix(n: int):
    """The explicit SymPy matrix I - 1 1^T / n."""
    import sympy as sp

    return sp.eye(n) - sp.ones(n, n) / n


def _hyp_general(s):
    return (
        Hypothesis("width", "$n$ is a positive integer", r"n \in \mathbb{Z}_{>0}"),
        Hypothesis(
            "ones",
            r"$J = \mathbf{1}\mathbf{1}^T$ is the all-ones $n \times n$ matrix and $P = I - \tfrac{1}{n} J$",
            r"J = \mathbf{1}\mathbf{1}^T,\ P = I - \tfrac{1}{n} J",
        ),
        Hypothesis("indices", "$i, j, k$ range over $1, \\dots, n$", r"1 \le i, j, k \le n"),
    )


def _hyp_concrete(n):
    return (
        Hypothesis("width", f"$n = {n}$", rf"n = {n}"),
        Hypothesis(
            "ones",
            r"$P = I - \tfrac{1}{n}\mathbf{1}\mathbf{1}^T$ as an explicit matrix",
            r"P = I - \tfrac{1}{n}\mathbf{1}\mathbf{1}^T",
        ),
    )


def _entry(s, r, c):
    """P_rc = delta_rc - 1/n."""
    import sympy as sp

    return sp.KroneckerDelta(r, c) - 1 / s["n"]


def _general() -> list:
    import sympy as sp

    s = general_symbols()
    n, i, j, k, x, v, I, J = (s[key] for key in ("n", "i", "j", "k", "x", "v", "I", "J"))
    P = I - J / n
    hyps = _hyp_general(s)
    Psym = sp.Symbol("P")
    xbar = sp.Symbol("xbar")
    mean = sp.Sum(x[j], (j, 1, n)) / n
    Px_i = sp.Sum(_entry(s, i, j) * x[j], (j, 1, n))
    r_, c_ = sp.symbols("r c", positive=True, integer=True)
    Pf, Jf = sp.Function("P"), sp.Function("J")
    entries = ((Pf, sp.Lambda((r_, c_), sp.KroneckerDelta(r_, c_) - 1 / n)), (Jf, sp.Lambda((r_, c_), sp.Integer(1))))
    defs_p = ((Psym, P),)

    out = []
    out.append(
        Theorem(
            "projection.mean_subtraction",
            "Subtracting the mean is the projection $P$",
            r"For every $x \in \mathbb{R}^n$, $x - \bar{x}\,\mathbf{1} = P x$.",
            r"x - \bar{x}\,\mathbf{1} = P x,\quad P = I - \tfrac{1}{n}\mathbf{1}\mathbf{1}^T",
            hyps,
            chain(
                Px_i,
                (x[i] - mean, "finite sums and Kronecker deltas", r"$\sum_j \delta_{ij} x_j = x_i$"),
                (x[i] - xbar, "simplify-to-zero", r"definition of $\bar{x}$"),
                description="Entry $i$ of $P x$",
            ),
            (Step("", Px_i, x[i] - xbar, "finite sums and Kronecker deltas", why="the chain above"),),
            definitions=((xbar, mean),),
            uses=("def:projection",),
        )
    )
    out.append(
        Theorem(
            "projection.symmetric",
            "$P$ is symmetric",
            "$P^T = P$.",
            r"P^T = P",
            hyps,
            (
                Step("", Jf(j, i), Jf(i, j), "expand", why="every entry of $J$ is $1$"),
                *chain(
                    Pf(j, i),
                    (
                        sp.KroneckerDelta(i, j) - 1 / n,
                        "finite sums and Kronecker deltas",
                        r"$\delta_{ji} = \delta_{ij}$",
                    ),
                    (Pf(i, j), "finite sums and Kronecker deltas", "definition of $P$"),
                ),
            ),
            (Step("", Pf(j, i), Pf(i, j), "finite sums and Kronecker deltas", why="the chain above"),),
            definitions=entries,
            uses=("def:projection",),
        )
    )
    out.append(
        Theorem(
            "projection.idempotent",
            "$P$ is idempotent",
            "$P^2 = P$.",
            r"P^2 = P",
            hyps,
            (
                Step(
                    "",
                    sp.Sum(Jf(i, k) * Jf(k, j), (k, 1, n)),
                    n * Jf(i, j),
                    "finite sums and Kronecker deltas",
                    why=r"so $J^2 = nJ$",
                ),
                *chain(
                    Psym**2,
                    (I - 2 * J / n + J**2 / n**2, _RULE, r"expand; $I J = J I = J$"),
                    (I - J / n, _RULE, "$J^2 = nJ$"),
                    (Psym, _RULE, "definition of $P$"),
                ),
                *routine(
                    Step(
                        r"The square of $I - \tfrac{1}{n} J$ expanded ($I$ and $J$ commute)",
                        P**2,
                        I**2 - 2 * I * J / n + J**2 / n**2,
                        "expand",
                    ),
                    Step(
                        r"Then $I^2 = I$, $I J = J$ and $J^2 = n J$",
                        I**2 - 2 * I * J / n + J**2 / n**2,
                        I - J / n,
                        _RULE,
                    ),
                ),
            ),
            (Step("", Psym**2, Psym, _RULE, why="the chain above"),),
            definitions=defs_p + entries[1:],
            uses=("def:projection",),
        )
    )
    out.append(
        Theorem(
            "projection.trace",
            "The trace of $P$",
            r"$\operatorname{tr} P = n - 1$.",
            r"\operatorname{tr} P = n - 1",
            hyps,
            (
                Step(
                    "",
                    sp.Sum(Pf(i, i), (i, 1, n)),
                    n - 1,
                    "finite sums and Kronecker deltas",
                    why=r"$P_{ii} = 1 - \tfrac{1}{n}$",
                ),
                Step("", Psym, n - 1, "trace (tr I = n, tr J = n)"),
            ),
            (Step("", Psym, n - 1, "trace (tr I = n, tr J = n)", why="the line above"),),
            definitions=defs_p + entries[:1],
            uses=("def:projection",),
        )
    )
    out.append(
        Theorem(
            "projection.kernel",
            r"The kernel of $P$ is $\operatorname{span}(\mathbf{1})$",
            r"$P\mathbf{1} = 0$, $P v = v$ for every $v$ orthogonal to $\mathbf{1}$, and every $x$ splits as "
            r"$x = P x + \bar{x}\,\mathbf{1}$; hence $P x = 0$ exactly when $x$ is a multiple of $\mathbf{1}$.",
            r"P\mathbf{1} = 0,\ \ P v = v\ (\mathbf{1}^T v = 0),\ \ \ker P = \operatorname{span}(\mathbf{1})",
            hyps,
            (
                Step("", Psym, 0, "apply to 1 (J 1 = n 1)"),
                Step("", Psym, 1, "apply to v orthogonal to 1 (J v = 0)"),
                Step(
                    r"Every $x$ is $P x + \tfrac{1}{n} J x = P x + \bar{x}\,\mathbf{1}$, so $P x = 0$ forces "
                    r"$x = \bar{x}\,\mathbf{1}$",
                    Psym + J / n,
                    I,
                    _RULE,
                    why="definition of $P$",
                ),
                Step(
                    r"Entrywise, with $\sum_j v_j = 0$",
                    sp.Sum(Pf(i, j) * v[j], (j, 1, n)),
                    v[i] - sp.Sum(v[j], (j, 1, n)) / n,
                    "finite sums and Kronecker deltas",
                ),
            ),
            (Step("", Psym, 0, "apply to 1 (J 1 = n 1)"), Step("", Psym, 1, "apply to v orthogonal to 1 (J v = 0)")),
            definitions=defs_p + entries[:1],
            uses=("def:projection", "projection.mean_subtraction"),
        )
    )
    mu = sp.Symbol("mu")
    out.append(
        Theorem(
            "projection.eigenvalues",
            "The spectrum of $P$",
            r"$P$ has eigenvalue $0$ once (eigenvector $\mathbf{1}$) and eigenvalue $1$ with multiplicity $n - 1$ "
            r"(the complement of $\mathbf{1}$).",
            r"\operatorname{spec} P = \{0^{(1)}, 1^{(n-1)}\}",
            hyps,
            (
                Step(
                    r"An eigenvalue $\mu$ of $P$ has $\mu^2 = \mu$, since",
                    Psym**2 - Psym,
                    0,
                    _RULE,
                    why="projection.idempotent",
                ),
                Step("", mu**2 - mu, sp.FiniteSet(0, 1), "solve", data=(mu,)),
                Step("", Psym, 0, "apply to 1 (J 1 = n 1)", why=r"$\mathbf{1}$: eigenvalue $0$"),
                Step(
                    r"The complement of $\mathbf{1}$ has dimension $n - 1$ and",
                    Psym,
                    1,
                    "apply to v orthogonal to 1 (J v = 0)",
                    why="eigenvalue $1$",
                ),
                *routine(
                    Step("The dimensions add up: $1 + (n - 1) = n$", sp.Add(1, n - 1, evaluate=False), n, "expand")
                ),
            ),
            (Step("", Psym, 0 * 1 + 1 * (n - 1), "trace (tr I = n, tr J = n)", why="multiplicities agree"),),
            definitions=defs_p,
            uses=("projection.idempotent", "projection.trace"),
        )
    )
    return out


def _concrete(n: int) -> list:
    import sympy as sp

    Pm = projection_matrix(n)
    P, J = sp.MatrixSymbol("P", n, n), sp.MatrixSymbol("J", n, n)
    X, one = sp.MatrixSymbol("x", n, 1), sp.MatrixSymbol("1", n, 1)
    xs = sp.Matrix(sp.symbols(f"x1:{n + 1}", real=True))
    ones = sp.ones(n, 1)
    bind_p, bind_j = (P, Pm), (J, sp.ones(n, n))
    bind_x, bind_1 = (X, xs), (one, ones)
    hyps = _hyp_concrete(n)
    basis = [sp.Matrix([1 if r == c else (-1 if r == c + 1 else 0) for r in range(n)]) for c in range(n - 1)]
    V = sp.MatrixSymbol("v", n, 1)
    zero = sp.ZeroMatrix(n, 1)
    out = [
        Theorem(
            "projection.mean_subtraction",
            "Subtracting the mean is the projection $P$",
            rf"For $x \in \mathbb{{R}}^{{{n}}}$, $x - \bar{{x}}\,\mathbf{{1}} = P x$.",
            r"x - \bar{x}\,\mathbf{1} = P x",
            hyps,
            (
                Step(
                    r"$P x = x - \tfrac{1}{n} J x$: multiply out the explicit matrices",
                    P * X,
                    X - J * X / n,
                    "expand",
                    where=(bind_p, bind_j, bind_x),
                ),
            ),
            (
                Step(
                    r"$x - \bar{x}\,\mathbf{1} = P x$",
                    X - one * (one.T * X) / n,
                    P * X,
                    "expand",
                    where=(bind_p, bind_x, bind_1),
                ),
            ),
            n=n,
        ),
        Theorem(
            "projection.symmetric",
            "$P$ is symmetric",
            "$P^T = P$.",
            r"P^T = P",
            hyps,
            (Step("$J^T = J$ for the all-ones matrix", J.T, J, "expand", where=(bind_j,)),),
            (Step("$P^T = P$", P.T, P, "expand", where=(bind_p,)),),
            n=n,
        ),
        Theorem(
            "projection.idempotent",
            "$P$ is idempotent",
            "$P^2 = P$.",
            r"P^2 = P",
            hyps,
            (
                Step("$J^2 = n J$ for the explicit all-ones matrix", J * J, n * J, "expand", where=(bind_j,)),
                Step(
                    r"$P^2 = I - \tfrac{2}{n} J + \tfrac{1}{n^2} J^2$",
                    P * P,
                    sp.Identity(n) - 2 * J / n + J * J / n**2,
                    "expand",
                    where=(bind_p, bind_j),
                ),
            ),
            (Step("$P^2 = P$", P * P, P, "expand", where=(bind_p,)),),
            n=n,
        ),
        Theorem(
            "projection.trace",
            "The trace of $P$",
            rf"$\operatorname{{tr}} P = {n - 1}$.",
            rf"\operatorname{{tr}} P = {n - 1}",
            hyps,
            (Step(r"$\operatorname{tr} J = n$", sp.Trace(J), n, "expand", where=(bind_j,)),),
            (Step(r"$\operatorname{tr} P = n - 1$", sp.Trace(P), sp.Integer(n - 1), "expand", where=(bind_p,)),),
            n=n,
        ),
        Theorem(
            "projection.kernel",
            r"The kernel of $P$ is $\operatorname{span}(\mathbf{1})$",
            r"$P\mathbf{1} = 0$ and $P$ fixes the basis $e_c - e_{c+1}$ of the complement of $\mathbf{1}$, so "
            r"$\ker P = \operatorname{span}(\mathbf{1})$.",
            r"P\mathbf{1} = 0,\ P v = v\ (\mathbf{1}^T v = 0)",
            hyps,
            tuple(
                Step(f"$P$ fixes $v = e_{{{c + 1}}} - e_{{{c + 2}}}$", P * V, V, "expand", where=(bind_p, (V, v)))
                for c, v in enumerate(basis)
            ),
            (Step(r"$P\mathbf{1} = 0$", P * one, zero, "expand", where=(bind_p, bind_1)),),
            n=n,
        ),
        Theorem(
            "projection.eigenvalues",
            "The spectrum of $P$",
            f"$P$ has eigenvalue $0$ once and eigenvalue $1$ with multiplicity ${n - 1}$.",
            rf"\operatorname{{spec}} P = \{{0^{{(1)}}, 1^{{({n - 1})}}\}}",
            hyps,
            (
                Step(
                    r"$P\mathbf{1} = 0$: the eigenvalue $0$ with eigenvector $\mathbf{1}$",
                    P * one,
                    zero,
                    "expand",
                    where=(bind_p, bind_1),
                ),
            ),
            (
                Step(
                    "Characteristic polynomial of $P$",
                    P,
                    {sp.Integer(0): 1, sp.Integer(1): n - 1},
                    "eigen (characteristic polynomial)",
                    where=(bind_p,),
                ),
            ),
            n=n,
        ),
    ]
    return out


def theorems(n: int | None = None, convention: str = "torch") -> list:
    """The projection theorems for general n (``n=None``) or the explicit width ``n``."""
    return _general() if n is None else _concrete(n)
