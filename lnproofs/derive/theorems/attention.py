"""What LayerNorm's geometry means for attention (Brody, Alon and Yahav), with witnesses.

A key k_i is *selectable* when some query q gives it a strictly larger score q.k_i than
every other key.  The theorems give explicit witness queries (uniform attention along
the normal 1/a, k_i - b on a sphere, diag(a)^-2 (k_i - b) on the ellipsoid), the theorem
of the alternative with convex weights as the certificate of the negative side, the
caveats as constructed counterexamples, and the exact threshold of the seed demo.
"""

from __future__ import annotations

import dataclasses

from ..theorem import Hypothesis, Step, Theorem, chain, general_symbols
from . import routine, width_hypothesis

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
    definitions = ()
    if n_value is None:
        s = general_symbols()
        n, j, k, a, b = s["n"], s["j"], s["k"], s["a"], s["b"]
        q_, t = sp.IndexedBase("q", real=True), sp.Symbol("t", positive=True, integer=True)
        y, key = sp.Function("y"), sp.Function("k")
        definitions = (
            (y, sp.Lambda((t,), q_[t] - sp.Sum(q_[k], (k, 1, n)) / n)),
            (key, sp.Lambda((t,), a[t] * y(t) + b[t])),
        )
        score = sp.Sum(key(j) / a[j], (j, 1, n))
        steps = chain(
            score,
            (sp.Sum(y(j), (j, 1, n)) + sp.Sum(b[j] / a[j], (j, 1, n)), _SUMS, "expand"),
            (sp.Sum(b[j] / a[j], (j, 1, n)), _SUMS, r"$\mathbf{1}^T y = 0$"),
            description=r"Every $y \in \mathbf{1}^\perp$ is $y = P q$ for some $q$ (Lemma projection.kernel), and",
        )
        concl = (Step("", score, sp.Sum(b[j] / a[j], (j, 1, n)), _SUMS),)
        scaled, scaled_concl = _uniform_scaled(n, j, k, a, b)
        steps += scaled
        concl += scaled_concl
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
        "attention.uniform_query",
        "The normal query attends uniformly",
        text,
        latex,
        hyps,
        steps,
        concl,
        n=n_value,
        definitions=definitions,
        uses=("projection.kernel",),
    )


def _uniform_scaled(n, j, k, a, b) -> tuple:
    """The uniform score for ``y = c (p - pbar 1)``, a scalar times a centred vector: routine steps
    and a routine conclusion."""
    import sympy as sp

    p, c = sp.IndexedBase("p", real=True), sp.Symbol("c", real=True)

    def y(t):
        return c * (p[t] - sp.Sum(p[k], (k, 1, n)) / n)

    score = sp.Sum((a[j] * y(j) + b[j]) / a[j], (j, 1, n))
    where = r"for $y = c\,(p - \bar{p}\mathbf{1})$, $c$ a scalar and $\bar{p} = \tfrac{1}{n} \sum_k p_k$"
    steps = routine(
        Step(
            rf"$q \cdot k = \sum_j (a_j y_j + b_j)/a_j = \mathbf{{1}}^T y + q \cdot b$ {where}",
            score,
            sp.Sum(y(j), (j, 1, n)) + sp.Sum(b[j] / a[j], (j, 1, n)),
            _SUMS,
        ),
        Step(rf"$\mathbf{{1}}^T y = 0$ {where}", sp.Sum(y(j), (j, 1, n)), 0, _SUMS),
    )
    concl = routine(Step(rf"$q \cdot k = q \cdot b$ {where}", score, sp.Sum(b[j] / a[j], (j, 1, n)), _SUMS))
    return steps, concl


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
    definitions = ()
    if n_value is None:
        s = general_symbols()
        n, t = s["n"], sp.Symbol("t", positive=True, integer=True)
        u, v, a = sp.IndexedBase("u", real=True), sp.IndexedBase("v", real=True), s["a"]
        wgt = (lambda r: 1 / a[r] ** 2) if ellipsoid else (lambda r: 1)
        S = lambda f: sp.Sum(f, (t, 1, n))  # noqa: E731
        gap = S(wgt(t) * u[t] * (u[t] - v[t]))  # q.(k_i - k_j) with q = W u
        D, U, V = sp.Symbol("D", real=True), sp.Symbol("U", real=True), sp.Symbol("V", real=True)
        definitions = ((D, S(wgt(t) * (u[t] - v[t]) ** 2)), (U, S(wgt(t) * u[t] ** 2)), (V, S(wgt(t) * v[t] ** 2)))
        steps = (
            Step(
                r"The gap $q \cdot (k_i - k_j)$ is",
                gap,
                D / 2 + (U - V) / 2,
                _SUMS,
            ),
            Step("", D / 2 + (U - V) / 2, D / 2, _SUMS, where=((V, U),), chained=True, why="$U = V$"),
            Step("", D / 2, 0, _SIGN, chained=True, relation=">", why="$k_i \\ne k_j$"),
        )
        steps = steps[:2] + (dataclasses.replace(steps[2], lhs=d2 / 2),)
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
    if n_value is None:
        concl = (steps[0], steps[2])
    else:
        concl = (Step(r"the gap $\tfrac12 D$, $D > 0$, is positive", d2 / 2, 0, _SIGN, relation=">"),) + steps[:1]
    title = "Keys on the ellipsoid are selectable" if ellipsoid else "Keys on a sphere are selectable"
    return Theorem(name, title, text, latex, hyps, steps, concl, n=n_value, definitions=definitions)


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
            "Gordan's theorem of the alternative",
            r"for finitely many vectors $d_j \in \mathbb{R}^n$ exactly one holds: some $q$ has $q \cdot d_j > 0$ for "
            r"every $j$, or some $w \ge 0$, $w \ne 0$, has $\sum_j w_j d_j = 0$ (applied to "
            r"$d_j = k_i - k_j$; then $w / \sum_j w_j$ are convex weights with $\sum_j w_j k_j = k_i$)",
            "",
            source="gordan1873",
        ),
        Hypothesis("weights", r"$w_j \ge 0$ and $\sum_j w_j = 1$ over the $m$ other keys", r"w \ge 0,\ \sum_j w_j = 1"),
    )
    m = sp.Symbol("m", positive=True, integer=True)
    j, t = sp.Symbol("j", positive=True, integer=True), sp.Symbol("t", positive=True, integer=True)
    dim = sp.Symbol("n", positive=True, integer=True) if n_value is None else sp.Integer(n_value)
    q, w, K = sp.IndexedBase("q", real=True), sp.IndexedBase("w", real=True), sp.IndexedBase("k", real=True)
    sc = sp.IndexedBase("s", real=True)
    si = sc[sp.Symbol("i", positive=True, integer=True)]
    Wsym = sp.Symbol("W", positive=True)  # the total weight sum_j w_j
    definitions = ((Wsym, sp.Sum(w[j], (j, 1, m))),)
    steps = [
        Step(
            r"Let $s_j = q \cdot k_j$ (coordinates $k_{jt}$, $t = 1, \dots, n$). Then "
            r"$q \cdot \sum_j w_j k_j = \sum_j w_j s_j$:",
            sp.Sum(q[t] * sp.Sum(w[j] * K[j, t], (j, 1, m)), (t, 1, dim)),
            sp.Sum(w[j] * sp.Sum(q[t] * K[j, t], (t, 1, dim)), (j, 1, m)),
            _SUMS,
            why="linearity",
        ),
        Step(
            r"For weights $w_1, \dots, w_m \ge 0$ on the other keys,",
            sp.Sum(w[j] * (si - sc[j]), (j, 1, m)),
            si * Wsym - sp.Sum(w[j] * sc[j], (j, 1, m)),
            _SUMS,
        ),
        Step(
            "",
            si * Wsym - sp.Sum(w[j] * sc[j], (j, 1, m)),
            si - sp.Sum(w[j] * sc[j], (j, 1, m)),
            _SUMS,
            where=((Wsym, 1),),
            chained=True,
            why="$W = 1$",
        ),
    ]
    in_scores, in_scores_concl = _hull_in_scores(dim, m, j, t, q, w, sc, Wsym)
    steps += in_scores
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
    concl = (steps[0], steps[2], *steps[3 + len(in_scores) :], *in_scores_concl)
    return Theorem(
        "attention.selectable_iff_not_in_hull",
        "Selectable iff not in the hull of the others",
        text,
        latex,
        hyps,
        tuple(steps),
        concl,
        n=n_value,
        definitions=definitions,
    )


def _hull_in_scores(dim, m, j, t, q, w, sc, Wsym) -> tuple:
    """The hull argument with the coordinates ``K_{jt}`` of the keys and the score ``s_i`` of ``k_i`` as
    plain numbers: routine steps and routine conclusions."""
    import sympy as sp

    K, si = sp.IndexedBase("K", real=True), sp.Symbol("s_i", real=True)
    g = sp.Symbol("g", positive=True)  # the smallest gap q.(k_i - k_j) of a separating q
    steps = routine(
        Step(
            r"Linearity, with $K_{jt}$ the coordinates of $k_j$: $q \cdot (\sum_j w_j k_j) = \sum_j w_j\, q \cdot k_j$",
            sp.Sum(q[t] * sp.Sum(w[j] * K[j, t], (j, 1, m)), (t, 1, dim)),
            sp.Sum(w[j] * sp.Sum(q[t] * K[j, t], (t, 1, dim)), (j, 1, m)),
            _SUMS,
        ),
        Step(
            r"With $s_i = q \cdot k_i$ and $s_j = q \cdot k_j$: $\sum_j w_j (s_i - s_j) = s_i \sum_j w_j - \sum_j w_j s_j$",
            sp.Sum(w[j] * (si - sc[j]), (j, 1, m)),
            si * sp.Sum(w[j], (j, 1, m)) - sp.Sum(w[j] * sc[j], (j, 1, m)),
            _SUMS,
        ),
        Step(
            r"$W = \sum_j w_j = 1$ turns it into $s_i - \sum_j w_j s_j$ (with $s_i = q \cdot k_i$), which is $0$ "
            r"when $k_i = \sum_j w_j k_j$",
            si * Wsym - sp.Sum(w[j] * sc[j], (j, 1, m)),
            si - sp.Sum(w[j] * sc[j], (j, 1, m)),
            _SUMS,
            where=((Wsym, 1),),
        ),
        Step(
            r"If every gap $s_i - s_j \ge g > 0$ then $\sum_j w_j (s_i - s_j) \ge g \sum_j w_j = g > 0$: no "
            "convex weights exist",
            g * 1,
            0,
            _SIGN,
            relation=">",
        ),
    )
    return steps, (steps[0], steps[2], steps[3])


def theorems(n: int | None = None, convention: str = "torch") -> list:
    """The attention theorems for general n, or their explicit versions for width ``n``."""
    return [_uniform(n), _witness(n, False), _witness(n, True), _alternative(n)]
