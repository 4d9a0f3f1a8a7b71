"""When LayerNorm does not save a key: constructed counterexamples with an exact check each.

With ``epsilon > 0`` a near-constant input's key falls inside the hull of others; a key map of
lower rank than the width can merge keys or put one between two others; duplicate keys can only
tie.
"""

from __future__ import annotations

from ..theorem import Hypothesis, Step, Theorem, general_symbols
from . import CONVENTION_NAMES, routine, width_hypothesis
from .attention import _SELECT, _SIGN, _SUMS, _WIDTH
from .sphere import radius_expression

__all__ = ["theorems"]


# ---------------------------------------------------------------------- caveats


def _eps_caveat(n_value, convention):
    import sympy as sp

    nn = sp.Symbol("n", positive=True, integer=True) if n_value is None else sp.Integer(n_value)
    eps = sp.Symbol("epsilon", positive=True)
    dl, h = sp.Symbol("delta", positive=True), sp.Symbol("h", positive=True)
    text = (
        r"With $\epsilon > 0$ LayerNorm can make a key unselectable: for $u = e_1 - e_2$ the inputs $x_1 = t u$, "
        r"$x_2 = -t u$ and the near-constant $x_3 = \delta u$ ($0 < \delta < t$) give keys $k_1 = \rho(t) e$, "
        r"$k_2 = -k_1$, $k_3 = \rho(\delta) e$ "
        f"({CONVENTION_NAMES[convention]} convention, gain 1, bias 0); "
        r"since $\rho(\delta) < \rho(t)$, $k_3$ is a strict convex combination of $k_1$ and $k_2$ (with "
        r"$\epsilon = 0$ it would coincide with $k_1$ and only tie)."
    )
    latex = r"k_3 = \alpha k_1 + \beta k_2,\ \alpha = \tfrac{1 + \rho(\delta)/\rho(t)}{2},\ \beta = \tfrac{1 - \rho(\delta)/\rho(t)}{2} > 0"
    hyps = (
        width_hypothesis(n_value, _WIDTH),
        _SELECT,
        Hypothesis("eps positive", r"$\epsilon > 0$", r"\epsilon > 0"),
        Hypothesis(
            "construction",
            r"$x_1 = t u$, $x_2 = -t u$, $x_3 = \delta u$ with $u = e_1 - e_2$, $t = \delta + h$ and $\delta, h > 0$; "
            r"$\|P x\| = \sqrt{2}\,|s|$ for $x = s u$ (Lemma projection.kernel), and $\rho(s)$ is the radius "
            rf"$\|g(P x)\|$ of Theorem sphere.interior_{convention} at $\|P x\| = \sqrt{{2}}\, s$; "
            r"$e = g(P u) / \|g(P u)\|$, $\rho_1 = \rho(t)$ and $\rho_3 = \rho(\delta)$",
            "",
        ),
    )
    tt, delta = dl + h, dl
    r1, r3 = (
        radius_expression(sp.sqrt(2) * tt, nn, eps, convention),
        radius_expression(sp.sqrt(2) * delta, nn, eps, convention),
    )
    p1, p3 = sp.Symbol("rho_1", positive=True), sp.Symbol("rho_3", positive=True)
    alpha, beta = (1 + p3 / p1) / 2, (1 - p3 / p1) / 2
    al, be = sp.Symbol("alpha"), sp.Symbol("beta")
    weights = ((al, alpha), (be, beta))
    steps = [
        Step(
            r"So $k_1 = \rho_1 e$, $k_2 = -\rho_1 e$, $k_3 = \rho_3 e$, and along $e$, $\alpha k_1 + \beta k_2 = k_3$, as",
            al * p1 + be * (-p1),
            p3,
            "simplify-to-zero",
        ),
        Step("", al + be, 1, "simplify-to-zero"),
        Step(
            r"and $\beta > 0$ since the radius grows with $\|P x\|$: for $t = \delta + h > \delta$,",
            p1**2 - p3**2,
            0,
            _SIGN,
            relation=">",
        ),
    ]
    if n_value is not None:
        # explicit numbers: t = 1, delta = 1/100, eps = 1/10 with the explicit LayerNorm of the three inputs
        vals = {dl: sp.Rational(1, 100), h: sp.Rational(99, 100), eps: sp.Rational(1, 10)}
        R1, R3 = r1.subs(vals), r3.subs(vals)
        steps.append(
            Step(
                rf"explicit: $n = {n_value}$, $t = 1$, $\delta = 1/100$, $\epsilon = 1/10$: "
                r"$\beta = (1 - \rho_3/\rho_1)/2 > 0$",
                (1 - R3 / R1) / 2,
                0,
                _SIGN,
                relation=">",
            )
        )
    # the weights as an identity in any two non-zero radii (not the named rho_1, rho_3 of this proof)
    f1, f3 = sp.Symbol("rho_1", real=True, nonzero=True), sp.Symbol("rho_3", real=True, nonzero=True)
    free = ((al, (1 + f3 / f1) / 2), (be, (1 - f3 / f1) / 2))
    combination = Step(
        r"For any radii $\rho_1, \rho_3 \ne 0$, $\alpha k_1 + \beta k_2 = (\alpha - \beta) \rho_1 e = \rho_3 e = k_3$ "
        "(coefficients along $e$), expanded",
        al * f1 + be * (-f1),
        f3,
        "expand",
        where=free,
    )
    concl = (steps[0], steps[2], *routine(combination))
    steps += routine(combination, Step(r"$\alpha + \beta = 1$, expanded", al + be, 1, "expand", where=free))
    return Theorem(
        "attention.eps_caveat",
        r"$\epsilon > 0$ can make a near-constant input's key unselectable",
        text,
        latex,
        hyps,
        tuple(steps),
        concl,
        n=n_value,
        convention=convention,
        definitions=((p1, r1), (p3, r3)) + weights,
    )


def _rank_deficient(n_value):
    import sympy as sp

    definitions = ()
    if n_value == 2:
        text = (
            r"A key map with $d_{\mathrm{head}} < n$ can make LayerNorm keys unselectable: for $n = 2$ and "
            r"$W_k = \mathbf{1}^T$ ($d_{\mathrm{head}} = 1$) every LayerNorm output (gain 1, bias 0) maps to the "
            r"score-free key $W_k z = \mathbf{1}^T z = 0$, so no key wins."
        )
        z1 = sp.Matrix([1, -1])
        z2 = sp.Matrix([-1, 1])
        W, Z1, Z2 = sp.MatrixSymbol("W_k", 1, 2), sp.MatrixSymbol("z_1", 2, 1), sp.MatrixSymbol("z_2", 2, 1)
        D = sp.Symbol("D")
        bind = ((W, sp.Matrix([[1, 1]])), (Z1, z1), (Z2, z2), (D, ((z1 - z2).T * (z1 - z2))[0]))
        steps = (
            Step("$W_k z_1 = 0$", W * Z1, sp.ZeroMatrix(1, 1), "expand", where=bind),
            Step("$W_k z_2 = 0$", W * Z2, sp.ZeroMatrix(1, 1), "expand", where=bind),
        )
        concl = (
            Step(
                "the keys $W_k z_1$ and $W_k z_2$ coincide: they can only tie",
                W * Z1 - W * Z2,
                sp.ZeroMatrix(1, 1),
                "expand",
                where=bind,
            ),
            Step(
                r"yet $z_1$ and $z_2$ are distinct LayerNorm outputs: $D = \|z_1 - z_2\|^2 > 0$",
                D,
                0,
                _SIGN,
                relation=">",
                where=bind,
            ),
        )
        latex = r"W_k = \mathbf{1}^T:\ W_k z = 0"
    else:
        nn = sp.Symbol("n", positive=True, integer=True) if n_value is None else sp.Integer(n_value)
        text = (
            r"A key map with $d_{\mathrm{head}} < n$ can make a LayerNorm key unselectable: with $W_k = e_1^T$ "
            r"($d_{\mathrm{head}} = 1$) the LayerNorm outputs ($\epsilon = 0$, gain 1, bias 0) $z_A, z_B, z_C$ of "
            r"$u_A = e_1 - e_2$, $u_B = e_2 - e_1$, $u_C = e_2 - e_3$ are distinct points of the sphere, but "
            r"$W_k z_C = 0 = \tfrac12 (W_k z_A + W_k z_B)$ lies strictly between the other two keys, so it is in "
            "their hull."
        )
        latex = r"W_k = e_1^T:\ W_k z_C = \tfrac12 (W_k z_A + W_k z_B),\ z_C \notin \{z_A, z_B\}"
        c = sp.sqrt(nn) / sp.sqrt(2)  # sqrt(n) / |u| for each u
        zA1, zB1, zC1, zA2, zC2 = sp.symbols("z_A1 z_B1 z_C1 z_A2 z_C2", real=True)
        bind = ((zA1, c), (zB1, -c), (zC1, 0), (zA2, -c), (zC2, c))  # coordinates 1 and 2 of z = sqrt(n) u / sqrt(2)
        steps = (
            Step(
                r"Each $\|u\| = \sqrt{2}$, so $z = \sqrt{n/2}\, u$ (Theorem sphere.radius); in the first coordinate",
                zC1,
                (zA1 + zB1) / 2,
                "expand",
                where=bind,
            ),
            Step(
                r"while the second coordinates of $z_C$ and $z_A$ differ:",
                (zC2 - zA2) ** 2,
                0,
                _SIGN,
                relation=">",
                where=bind,
            ),
        )
        definitions = bind
        concl = steps
        steps += routine(
            Step(
                r"$\|u\| = \sqrt{2}$ for each $u$, so $z = \sqrt{n}\, u / \sqrt{2}$: $z_{A,1} = -z_{B,1}$",
                zA1 + zB1,
                0,
                "expand",
                where=bind,
            )
        )
    hyps = (
        width_hypothesis(n_value, _WIDTH),
        _SELECT,
        Hypothesis(
            "key map",
            r"keys are $W_k z$ with $W_k$ of shape $d_{\mathrm{head}} \times n$, "
            r"$d_{\mathrm{head}} < n$",
            r"d_{head} < n",
        ),
    )
    if n_value != 2:
        hyps += (Hypothesis("three coordinates", r"$n \ge 3$ (the construction uses $e_1, e_2, e_3$)", r"n \ge 3"),)
    return Theorem(
        "attention.rank_deficient_caveat",
        "A rank-deficient key map can make LayerNorm keys unselectable",
        text,
        latex,
        hyps,
        steps,
        concl,
        n=n_value,
        definitions=definitions if n_value is None else (),
    )


def _duplicate(n_value):
    import sympy as sp

    text = (
        r"Duplicate keys can only tie: if $k_j = k_i$ ($j \ne i$) then $q \cdot k_i - q \cdot k_j = 0$ for every "
        r"$q$, so neither wins strictly; on a sphere $q = k_i - b$ makes both maximal (a tie at the top)."
    )
    latex = r"k_j = k_i \Rightarrow q^T k_i - q^T k_j = 0\ \forall q"
    hyps = (width_hypothesis(n_value, _WIDTH), _SELECT, Hypothesis("duplicate", r"$k_j = k_i$ for some $j \ne i$", ""))
    if n_value is None:
        s = general_symbols()
        n, t = s["n"], sp.Symbol("t", positive=True, integer=True)
        q, ki, kj = sp.IndexedBase("q", real=True), sp.IndexedBase("k_i", real=True), sp.IndexedBase("k_j", real=True)
        u, v = sp.IndexedBase("u", real=True), sp.IndexedBase("v", real=True)
        gap = sp.Sum(q[t] * ki[t], (t, 1, n)) - sp.Sum(q[t] * kj[t], (t, 1, n))
        tie = sp.Sum(u[t] * (u[t] - v[t]), (t, 1, n))  # q = u = k_i - b, v = k_j - b
        bind_gap, bind_tie, method = ((kj, ki),), ((v, u),), _SUMS
    else:
        Q, Ki, Kj = (sp.MatrixSymbol(name, n_value, 1) for name in ("q", "k_i", "k_j"))
        U, V = sp.MatrixSymbol("u", n_value, 1), sp.MatrixSymbol("v", n_value, 1)
        kvec = sp.Matrix(sp.symbols(f"k1:{n_value + 1}", real=True))
        uvec = sp.Matrix(sp.symbols(f"u1:{n_value + 1}", real=True))
        gap, tie = Q.T * Ki - Q.T * Kj, U.T * (U - V)
        qvec = sp.Matrix(sp.symbols(f"q1:{n_value + 1}", real=True))
        bind_gap, bind_tie, method = ((Q, qvec), (Ki, kvec), (Kj, kvec)), ((U, uvec), (V, uvec)), "expand"
    zero = 0 if n_value is None else sp.ZeroMatrix(1, 1)
    steps = (
        Step(r"With coordinates $k_{it}$ of $k_i$, $q \cdot k_i - q \cdot k_j$ is", gap, zero, method, where=bind_gap),
        Step(
            r"and on a sphere $q = u = k_i - b$ gives the duplicate ($v = k_j - b = u$) the same maximal score:",
            tie,
            zero,
            method,
            where=bind_tie,
        ),
    )
    concl = (steps[0],)
    return Theorem(
        "attention.duplicate_caveat", "Duplicate keys can only tie", text, latex, hyps, steps, concl, n=n_value
    )


def theorems(n: int | None = None, convention: str = "torch") -> list:
    """The caveats for general n, or their explicit versions for width ``n``."""
    return [_eps_caveat(n, convention), _rank_deficient(n), _duplicate(n)]
