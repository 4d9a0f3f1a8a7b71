"""What LayerNorm's geometry means for attention (Brody, Alon and Yahav), with witnesses.

A key k_i is *selectable* when some query q gives it a strictly larger score q.k_i than
every other key.  The theorems give explicit witness queries (uniform attention along
the normal 1/a, k_i - b on a sphere, diag(a)^-2 (k_i - b) on the ellipsoid), the theorem
of the alternative with convex weights as the certificate of the negative side, the
caveats as constructed counterexamples, and the exact threshold of the seed demo.
"""

from __future__ import annotations

from ..theorem import Hypothesis, Step, Theorem, general_symbols
from . import width_hypothesis
from .sphere import radius_expression

__all__ = ["theorems"]


_SUMS = "finite sums and Kronecker deltas"
_SIGN = "sign under assumptions"
_SELECT = Hypothesis(
    "selectable",
    r"$k_i$ is selectable when some $q$ has $q \cdot k_i > q \cdot k_j$ for every "
    r"$j \ne i$",
    r"\exists q\ \forall j \ne i:\ q^T k_i > q^T k_j",
)


_WIDTH = r"keys live in $\mathbb{R}^n$, $n \ge 2$ (sums run over the $n$ coordinates)"


# --------------------------------------------------------------- uniform query


def _uniform(n_value):
    import sympy as sp

    text = (
        "Keys that are LayerNorm outputs with all gains non-zero lie in one affine hyperplane, so the query "
        r"$q = (1/a_1, \dots, 1/a_n)$ gives every key the same score $q \cdot k = q \cdot b$: uniform attention."
    )
    latex = r"q = (1/a_1, \dots, 1/a_n):\quad q^T k = q^T b \text{ for every key } k = \operatorname{diag}(a) y + b,\ \mathbf{1}^T y = 0"
    hyps = (
        width_hypothesis(n_value, _WIDTH),
        Hypothesis(
            "keys",
            r"$k = \operatorname{diag}(a) y + b$ with $\mathbf{1}^T y = 0$ (any $\epsilon$, either "
            "convention)",
            "",
        ),
        Hypothesis("gains", r"every $a_i \ne 0$", r"a_i \ne 0"),
    )
    if n_value is None:
        s = general_symbols()
        n, j, k, a, b = s["n"], s["j"], s["k"], s["a"], s["b"]
        p = sp.IndexedBase("p", real=True)
        c = sp.Symbol("c", real=True)
        y = lambda t: c * (p[t] - sp.Sum(p[k], (k, 1, n)) / n)  # noqa: E731  a vector of 1^perp
        key = lambda t: a[t] * y(t) + b[t]  # noqa: E731
        score = sp.Sum(key(j) / a[j], (j, 1, n))
        steps = (
            Step(
                r"$q \cdot k = \sum_j (a_j y_j + b_j)/a_j = \mathbf{1}^T y + q \cdot b$",
                score,
                sp.Sum(y(j), (j, 1, n)) + sp.Sum(b[j] / a[j], (j, 1, n)),
                _SUMS,
            ),
            Step(r"$\mathbf{1}^T y = 0$", sp.Sum(y(j), (j, 1, n)), 0, _SUMS),
        )
        concl = (Step(r"$q \cdot k = q \cdot b$ for every key", score, sp.Sum(b[j] / a[j], (j, 1, n)), _SUMS),)
    else:
        a = sp.symbols(f"a1:{n_value + 1}", real=True, nonzero=True)
        b = sp.symbols(f"b1:{n_value + 1}", real=True)
        x = sp.symbols(f"x1:{n_value + 1}", real=True)
        c = sp.Symbol("c", real=True)
        mean = sum(x) / n_value
        key = [a[t] * c * (x[t] - mean) + b[t] for t in range(n_value)]
        score = sum(key[t] / a[t] for t in range(n_value))
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
        concl = (
            Step(r"$q \cdot k = q \cdot b$ (explicit)", score, sum(b[t] / a[t] for t in range(n_value)), "expand"),
        )
    return Theorem(
        "attention.uniform_query", "The normal query attends uniformly", text, latex, hyps, steps, concl, n=n_value
    )


# ------------------------------------------------------- sphere / ellipsoid witness


def _witness(n_value, ellipsoid: bool):
    import sympy as sp

    name = "attention.ellipsoid_witness" if ellipsoid else "attention.sphere_witness"
    if ellipsoid:
        text = (
            r"Distinct keys on the $\epsilon = 0$ ellipsoid $(k - b)^T \operatorname{diag}(a)^{-2} (k - b) = n$ are "
            r"all selectable: $q = \operatorname{diag}(a)^{-2} (k_i - b)$ gives "
            r"$q \cdot k_i - q \cdot k_j = \tfrac12 \|\operatorname{diag}(a)^{-1} (k_i - k_j)\|^2 > 0$."
        )
        latex = r"q = \operatorname{diag}(a)^{-2}(k_i - b):\ q^T(k_i - k_j) = \tfrac12 \|\operatorname{diag}(a)^{-1}(k_i - k_j)\|^2 > 0"
    else:
        text = (
            r"Distinct keys on a sphere with centre $b$ are all selectable: $q = k_i - b$ gives "
            r"$q \cdot k_i - q \cdot k_j = \tfrac12 \|k_i - k_j\|^2 > 0$."
        )
        latex = r"q = k_i - b:\ q^T(k_i - k_j) = \tfrac12\|k_i - k_j\|^2 > 0"
    hyps = (
        width_hypothesis(n_value, _WIDTH),
        _SELECT,
        Hypothesis(
            "keys",
            (
                r"$u = k_i - b$ and $v = k_j - b$ satisfy "
                r"$u^T \operatorname{diag}(a)^{-2} u = v^T \operatorname{diag}(a)^{-2} v = n$"
                if ellipsoid
                else r"$u = k_i - b$ and $v = k_j - b$ have equal norms $\|u\| = \|v\|$"
            ),
            "",
        ),
        Hypothesis("distinct", r"$k_i \ne k_j$", r"k_i \ne k_j"),
    )
    d2 = sp.Symbol("D", positive=True)  # the positive squared (weighted) distance of distinct keys
    if n_value is None:
        s = general_symbols()
        n, t = s["n"], s["k"]
        u, v, a = sp.IndexedBase("u", real=True), sp.IndexedBase("v", real=True), s["a"]
        wgt = (lambda r: 1 / a[r] ** 2) if ellipsoid else (lambda r: 1)
        S = lambda f: sp.Sum(f, (t, 1, n))  # noqa: E731
        gap = S(wgt(t) * u[t] * (u[t] - v[t]))  # q.(k_i - k_j) with q = W u
        identity = Step(
            r"$q \cdot (k_i - k_j) = \tfrac12 \|u - v\|_W^2 + \tfrac12 (\|u\|_W^2 - \|v\|_W^2)$, $W$ the weights",
            gap,
            S(wgt(t) * (u[t] - v[t]) ** 2) / 2 + (S(wgt(t) * u[t] ** 2) - S(wgt(t) * v[t] ** 2)) / 2,
            _SUMS,
        )
        rho = sp.Symbol("rho", positive=True)
        U2, V2 = sp.Symbol("U", nonnegative=True), sp.Symbol("V", nonnegative=True)
        equal = Step(
            r"with $U = \|u\|_W^2$ and $V = \|v\|_W^2$ both equal to $\rho^2$ the second half vanishes",
            S(wgt(t) * (u[t] - v[t]) ** 2) / 2 + (U2 - V2) / 2,
            S(wgt(t) * (u[t] - v[t]) ** 2) / 2,
            _SUMS,
            where=((U2, rho**2), (V2, rho**2)),
        )
        steps = (identity, equal)
    else:
        u = sp.symbols(f"u1:{n_value + 1}", real=True)
        v = sp.symbols(f"v1:{n_value + 1}", real=True)
        a = sp.symbols(f"a1:{n_value + 1}", real=True, nonzero=True)
        wgt = (lambda r: 1 / a[r] ** 2) if ellipsoid else (lambda r: 1)
        gap = sum(wgt(r) * u[r] * (u[r] - v[r]) for r in range(n_value))
        half = sum(wgt(r) * (u[r] - v[r]) ** 2 for r in range(n_value)) / 2
        diff = (sum(wgt(r) * u[r] ** 2 for r in range(n_value)) - sum(wgt(r) * v[r] ** 2 for r in range(n_value))) / 2
        steps = (
            Step(
                r"$q \cdot (k_i - k_j) = \tfrac12 \|u - v\|_W^2 + \tfrac12 (\|u\|_W^2 - \|v\|_W^2)$ (explicit)",
                gap,
                half + diff,
                "expand",
            ),
        )
    concl = (
        Step(
            r"the gap $\tfrac12 D$ with $D = \|u - v\|_W^2 > 0$ (distinct keys) is positive",
            d2 / 2,
            0,
            _SIGN,
            relation=">",
        ),
    ) + steps[:1]
    title = "Keys on the ellipsoid are selectable" if ellipsoid else "Keys on a sphere are selectable"
    return Theorem(name, title, text, latex, hyps, steps, concl, n=n_value)


# --------------------------------------------------- theorem of the alternative


def _alternative(n_value):
    import sympy as sp

    text = (
        r"$k_i$ is selectable (some $q$ has $q \cdot k_i > q \cdot k_j$ for all $j \ne i$) if and only if $k_i$ "
        r"is not in the convex hull of the other keys. Convex weights $w$ with $\sum_j w_j k_j = k_i$ certify the "
        r"negative side: then $q \cdot k_i = \sum_j w_j\, q \cdot k_j \le \max_j q \cdot k_j$ for every $q$. A "
        r"separating $q$ certifies the positive side: then $\sum_j w_j\, q \cdot (k_i - k_j) > 0$ contradicts any "
        "such weights. One of the two always exists (Gordan)."
    )
    latex = r"(\exists q\ \forall j \ne i:\ q^T k_i > q^T k_j) \iff k_i \notin \operatorname{conv}\{k_j : j \ne i\}"
    hyps = (
        width_hypothesis(n_value, _WIDTH),
        _SELECT,
        Hypothesis(
            "Gordan's alternative",
            r"for finitely many vectors $d_j = k_i - k_j$, either some $q$ has "
            r"$q \cdot d_j > 0$ for all $j$, or some non-zero $w \ge 0$ has $\sum_j w_j d_j = 0$ (linear "
            "programming duality)",
            "",
        ),
        Hypothesis("weights", r"$w_j \ge 0$ and $\sum_j w_j = 1$ over the $m$ other keys", r"w \ge 0,\ \sum_j w_j = 1"),
    )
    m = sp.Symbol("m", positive=True, integer=True)
    j, t = sp.Symbol("j", positive=True, integer=True), sp.Symbol("t", positive=True, integer=True)
    dim = sp.Symbol("n", positive=True, integer=True) if n_value is None else sp.Integer(n_value)
    q, w, K = sp.IndexedBase("q", real=True), sp.IndexedBase("w", real=True), sp.IndexedBase("K", real=True)
    sc = sp.IndexedBase("s", real=True)
    si = sp.Symbol("s_i", real=True)
    W = sp.Sum(w[j], (j, 1, m))
    Wsym = sp.Symbol("W", positive=True)  # the total weight sum_j w_j
    steps = [
        Step(
            r"Linearity: $q \cdot (\sum_j w_j k_j) = \sum_j w_j\, q \cdot k_j$, coordinates $t = 1, \dots, n$",
            sp.Sum(q[t] * sp.Sum(w[j] * K[j, t], (j, 1, m)), (t, 1, dim)),
            sp.Sum(w[j] * sp.Sum(q[t] * K[j, t], (t, 1, dim)), (j, 1, m)),
            _SUMS,
        ),
        Step(
            r"With scores $s_j = q \cdot k_j$: $\sum_j w_j (s_i - s_j) = s_i \sum_j w_j - \sum_j w_j s_j$",
            sp.Sum(w[j] * (si - sc[j]), (j, 1, m)),
            si * W - sp.Sum(w[j] * sc[j], (j, 1, m)),
            _SUMS,
        ),
        Step(
            r"$\sum_j w_j = 1$ turns it into $s_i - \sum_j w_j s_j$, which is $0$ when $k_i = \sum_j w_j k_j$",
            si * Wsym - sp.Sum(w[j] * sc[j], (j, 1, m)),
            si - sp.Sum(w[j] * sc[j], (j, 1, m)),
            _SUMS,
            where=((Wsym, 1),),
        ),
    ]
    g = sp.Symbol("g", positive=True)  # the smallest gap q.(k_i - k_j) of a separating q
    steps.append(
        Step(
            r"If every gap $s_i - s_j \ge g > 0$ then $\sum_j w_j (s_i - s_j) \ge g \sum_j w_j = g > 0$: no "
            "convex weights exist",
            g * 1,
            0,
            _SIGN,
            relation=">",
        )
    )
    if n_value is not None:
        # an explicit instance: the centroid of e_1..e_n is in the hull, e_1 is selectable with q = e_1
        e = [sp.Matrix([1 if r == c else 0 for r in range(n_value)]) for c in range(n_value)]
        centroid = sum(e, sp.zeros(n_value, 1)) / n_value
        E, Wv = sp.MatrixSymbol("E", n_value, n_value), sp.MatrixSymbol("w", n_value, 1)
        steps.append(
            Step(
                rf"Instance: with $E = [e_1 \cdots e_{{{n_value}}}]$ and weights $w = 1/n$, $E w$ is the "
                "centroid $c$",
                E * Wv,
                sp.MatrixSymbol("c", n_value, 1),
                "expand",
                where=(
                    (E, sp.eye(n_value)),
                    (Wv, sp.ones(n_value, 1) / n_value),
                    (sp.MatrixSymbol("c", n_value, 1), centroid),
                ),
            )
        )
        steps.append(
            Step(
                r"Instance: $q = e_1$ separates $e_1$ from $e_2, \dots, e_n$ and the centroid (gap "
                r"$1 - 1/n > 0$)",
                (e[0].T * (e[0] - centroid))[0],
                0,
                _SIGN,
                relation=">",
            )
        )
    concl = (steps[0], steps[2], steps[3])
    return Theorem(
        "attention.selectable_iff_not_in_hull",
        "Selectable iff not in the hull of the others",
        text,
        latex,
        hyps,
        tuple(steps),
        concl,
        n=n_value,
    )


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
        f"({convention} convention, gain 1, bias 0); "
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
            r"$x_1 = t u$, $x_2 = -t u$, $x_3 = \delta u$ with $u = e_1 - e_2$ and "
            r"$t = \delta + h$, $\delta, h > 0$; $\|P x\| = \sqrt{2}\,|s|$ for $x = s u$",
            "",
        ),
        Hypothesis("convention", f"the {convention!r} convention", ""),
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
            r"$\alpha k_1 + \beta k_2 = (\alpha - \beta) \rho_1 e = \rho_3 e = k_3$ (coefficients along $e$)",
            al * p1 + be * (-p1),
            p3,
            "expand",
            where=weights,
        ),
        Step(r"$\alpha + \beta = 1$", al + be, 1, "expand", where=weights),
        Step(
            r"$\rho(t)^2 - \rho(\delta)^2 > 0$ for $t = \delta + h > \delta > 0$: the radius grows with $\|P x\|$",
            r1**2 - r3**2,
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
    concl = (
        steps[0],
        Step(
            r"$\beta > 0$ because $\rho_3 < \rho_1$ (the squared radii differ by a positive amount)",
            r1**2 - r3**2,
            0,
            _SIGN,
            relation=">",
        ),
    )
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
    )


def _rank_deficient(n_value):
    import sympy as sp

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
                r"$\|u\| = \sqrt{2}$ for each $u$, so $z = \sqrt{n}\, u / \sqrt{2}$: $z_{A,1} = -z_{B,1}$",
                zA1 + zB1,
                0,
                "expand",
                where=bind,
            ),
            Step(r"$W_k z_C = \tfrac12 W_k z_A + \tfrac12 W_k z_B$", zC1, (zA1 + zB1) / 2, "expand", where=bind),
            Step(
                "$z_C$ differs from $z_A$ in coordinate $2$ (and from $z_B$ in coordinate $1$)",
                (zC2 - zA2) ** 2,
                0,
                _SIGN,
                relation=">",
                where=bind,
            ),
        )
        concl = (steps[1], steps[2])
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
        n, t = s["n"], s["k"]
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
        Step(r"$q \cdot k_i - q \cdot k_j$ with $k_j = k_i$", gap, zero, method, where=bind_gap),
        Step(
            r"on a sphere, $q = u = k_i - b$ gives the duplicate ($v = k_j - b = u$) the same maximal score: "
            r"$u \cdot (u - v) = 0$",
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


# ------------------------------------------------------------------- the demo


def _demo_keys(m):
    import sympy as sp

    from .. import demo_config as cfg

    keys = []
    for index, angle in enumerate(cfg.KEY_ANGLES_DEG):
        theta = sp.pi * sp.Rational(str(angle)) / 180
        scale = m if index == cfg.ADJUSTABLE_KEY else 1
        keys.append(sp.Matrix([scale * sp.cos(theta), scale * sp.sin(theta)]))
    return keys


def _collinearity(keys):
    """det[k_adj - k_left, k_watched - k_left]: zero when the watched key is on the segment's line."""
    import sympy as sp

    from .. import demo_config as cfg

    left, adj, watched = keys[cfg.WATCHED_KEY - 1], keys[cfg.ADJUSTABLE_KEY], keys[cfg.WATCHED_KEY]
    return sp.expand(sp.Matrix.hstack(adj - left, watched - left).det())


def _demo():
    import sympy as sp

    from .. import demo_config as cfg

    m = sp.Symbol("m", positive=True)
    keys = _demo_keys(m)
    k1, k2, k3, k4 = keys
    D = _collinearity(keys)
    mstar = sp.sympify(cfg.THRESHOLD_TEXT)
    half = sp.sqrt(2) / 2
    q = sp.Matrix([m, 1])  # normal to k3 - k1 = (-1, m), pointing away from the origin
    s = sp.Symbol("s", positive=True)  # m = m* + s above the threshold, or m = 1 + s in general
    beta = half / m
    alpha = (1 - beta + half) / 2
    gamma = (1 - beta - half) / 2
    angles = ", ".join(f"{angle:g}" for angle in cfg.KEY_ANGLES_DEG)
    text = (
        f"In the seed demo (keys at angles {angles} degrees, key 3 scaled by $m > 0$), key 2 is "
        rf"selectable iff $m < m^* = {sp.latex(mstar)}$: the threshold solves the collinearity of keys 1, 2 and $m$ "
        r"times key 3; below it $q = (m, 1)$ is a witness, at it keys 1, 2, 3 tie, above it key 2 is a convex "
        "combination of keys 1, 3 and 4."
    )
    latex = r"\text{key 2 selectable} \iff m < m^* = " + sp.latex(mstar)
    hyps = (
        _SELECT,
        Hypothesis(
            "demo",
            r"$k_1, k_2, k_4$ unit vectors at $0^\circ, 45^\circ, 180^\circ$, "
            r"$k_3 = m\,(0, 1)$, $m > 0$",
            "",
        ),
    )
    Q = sp.MatrixSymbol("q", 2, 1)
    K = [sp.MatrixSymbol(f"k_{t + 1}", 2, 1) for t in range(4)]
    Ds = sp.Symbol("D")
    al, be, ga = sp.symbols("alpha beta gamma")
    bind = ((Q, q),) + tuple(zip(K, keys)) + ((Ds, D),)
    wts = ((al, alpha), (be, beta), (ga, gamma))
    zero = sp.ZeroMatrix(1, 1)
    steps = (
        Step(
            r"Collinearity of $k_1, k_2, k_3$: $D(m) = \det[k_3 - k_1, k_2 - k_1] = 0$ has the single positive root "
            r"$m^*$",
            D,
            sp.FiniteSet(mstar),
            "solve",
            data=(m, sp.Interval.open(0, sp.oo)),
        ),
        Step(r"$D(m) = (1 - \sqrt{2}/2)(m - m^*)$", D, (1 - half) * (m - mstar), "simplify-to-zero"),
        Step(r"the factor $1 - \sqrt{2}/2$ is positive", 1 - half, 0, _SIGN, relation=">"),
        Step(
            r"witness $q = (m, 1)$: $q \cdot (k_2 - k_1) = -D$",
            Q.T * (K[1] - K[0]),
            -Ds * sp.Identity(1),
            "simplify-to-zero",
            where=bind,
        ),
        Step(
            r"likewise $q \cdot (k_2 - k_3) = -D$",
            Q.T * (K[1] - K[2]),
            -Ds * sp.Identity(1),
            "simplify-to-zero",
            where=bind,
        ),
        Step(r"and $q \cdot (k_2 - k_4) > 0$ for every $m > 0$", (q.T * (k2 - k4))[0], 0, _SIGN, relation=">"),
        Step(
            r"the witness gap $-D$ is positive exactly for $m < m^*$",
            -D > 0,
            sp.Interval.open(0, mstar),
            "solve",
            data=(m, sp.Interval.open(0, sp.oo)),
        ),
        Step(
            r"for $m \ge m^*$: $\alpha k_1 + \beta k_3 + \gamma k_4 = k_2$ with $\beta = \sqrt{2}/(2m)$",
            al * K[0] + be * K[2] + ga * K[3],
            K[1],
            "simplify-to-zero",
            where=wts + bind,
        ),
        Step("the weights add to 1", al + be + ga, 1, "simplify-to-zero", where=wts),
        Step(
            r"$\gamma = D / (2m)$, so $\gamma \ge 0$ iff $m \ge m^*$",
            ga,
            Ds / (2 * m),
            "simplify-to-zero",
            where=wts + bind,
        ),
        Step(
            r"$\gamma > 0$ above the threshold ($m = m^* + s$)",
            ga,
            0,
            _SIGN,
            relation=">",
            where=wts + ((m, mstar + s),),
        ),
        Step(
            r"$\alpha > 0$ for $m > 1$ ($m = 1 + s$), in particular above $m^* > 1$",
            al,
            0,
            _SIGN,
            relation=">",
            where=wts + ((m, 1 + s),),
        ),
        Step(r"$\beta > 0$", be, 0, _SIGN, relation=">", where=wts),
        Step(
            r"at $m = m^*$ the witness ties: $q \cdot (k_2 - k_1) = 0$",
            Q.T * (K[1] - K[0]),
            zero,
            "simplify-to-zero",
            where=bind + ((m, mstar),),
        ),
    )
    concl = (steps[0], steps[6], steps[10])
    return Theorem("attention.demo_threshold", "The exact threshold of the seed demo", text, latex, hyps, steps, concl)


def theorems(n: int | None = None, convention: str = "torch") -> list:
    """The attention theorems for general n, or their explicit versions for width ``n``."""
    out = [
        _uniform(n),
        _witness(n, False),
        _witness(n, True),
        _alternative(n),
        _eps_caveat(n, convention),
        _rank_deficient(n),
        _duplicate(n),
    ]
    if n is None:
        out.append(_demo())  # a planar configuration: it has no width parameter
    return out
