"""Realisable query sets that cover every direction, so that realisable answers equal free ones.

A head's realisable queries are ``Q = R (A u + b)`` over the ball ``||u||^2 <= n`` (RMSNorm) or
its slice ``1 . u = 0`` (LayerNorm), with ``A = W_q diag(g)`` (restricted to ``1^perp`` for
LayerNorm), ``b`` the query bias and ``R`` the rotary matrix of the position.  When ``A`` has
full row rank ``d`` and some preimage ``u*`` of ``-b`` in the domain has ``||u*||^2 < n`` (the
least-norm one is the shortest), every
direction ``v != 0`` has a positive multiple ``s v`` in ``A u + b`` with ``||u|| = sqrt(n)``
(``coverage.every_direction``, the explicit ``s``); the argmax of ``q . k_j`` depends only on the
direction of ``q``, and an invertible ``R`` maps directions onto directions
(``coverage.argmax_direction``).  Hence such a set makes exactly the keys win that free queries
make win, and has a non-zero query with equal scores exactly when free queries do.
:mod:`lnproofs.kernel.querysets.coverage` checks the hypotheses exactly.
"""

from __future__ import annotations

import dataclasses

from ..theorem import Hypothesis, Step, Theorem, general_symbols
from . import routine, width_hypothesis

__all__ = ["theorems"]

_SUMS = "finite sums and Kronecker deltas"
_SIGN = "sign under assumptions"


_WIDTH = "$n \\ge 2$ is an integer; $j$ runs over the $n$ coordinates of $u$"


def _every_direction(n_value):
    import sympy as sp

    text = (
        "Let $A$ have full row rank $d$ on the domain of $u$, and let some $u^*$ in the domain have $A u^* = -b$ and "
        "$\\|u^{*}\\|^{2} = n - \\delta < n$. Then every direction $v \\ne 0$ is realised on the image of the sphere: "
        "with $a = A^+ v$, $V = \\|a\\|^2$ and $p = a \\cdot u^*$, the point $u = s a + u^*$ for "
        "$s = (-p + \\sqrt{p^2 + V\\delta}) / V > 0$ is in the domain, has $\\|u\\|^2 = n$ and $A u + b = s v$; the "
        "ray meets the sphere once, and every smaller $s > 0$ gives a point strictly inside (so sets reached only "
        "with $\\epsilon > 0$ realise every direction too)."
    )
    latex = (
        r"\forall v \ne 0\ \exists s > 0:\ s v = A u + b,\ \|u\|^2 = n,\quad "
        r"s = \frac{-p + \sqrt{p^2 + V (n - \|u^*\|^2)}}{V}"
    )
    hyps = (
        width_hypothesis(n_value, _WIDTH),
        Hypothesis(
            "full row rank",
            "$A$ ($d \\times n$; for LayerNorm $A = W_q \\operatorname{diag}(g) P$) has "
            "rank $d$, so $A^+ = A^\\top (A A^\\top)^{-1}$ has $A A^+ = I_d$ and maps into the row space of "
            "$A$, inside $\\mathbf{1}^\\perp$ for LayerNorm",
            r"\operatorname{rank} A = d",
        ),
    )
    s, p = sp.Symbol("s", real=True), sp.Symbol("p", real=True)
    V, dl = sp.Symbol("V", positive=True), sp.Symbol("delta", positive=True)
    C = sp.Symbol(r"\|u^{*}\|^{2}", nonnegative=True)
    vi, bi = sp.Symbol("v_i"), sp.Symbol("b_i")
    Av, Aw = sp.Symbol("(A a)_i", real=True), sp.Symbol("(A w)_i", real=True)
    if n_value is None:
        n, j = general_symbols()["n"], general_symbols()["j"]
        a, w, A = sp.IndexedBase("a", real=True), sp.IndexedBase("w", real=True), sp.IndexedBase("A", real=True)
        i = sp.Symbol("i", positive=True, integer=True)

        def S(expr):
            return sp.Sum(expr, (j, 1, n))

        norm = Step(
            r"Its norm is",
            S((s * a[j] + w[j]) ** 2),
            s**2 * S(a[j] ** 2) + 2 * s * S(a[j] * w[j]) + S(w[j] ** 2),
            _SUMS,
            why=r"$= s^2 V + 2 s p + \|u^*\|^2$",
        )
        linear = Step(
            r"For $u = s a + w$ with $w = u^*$, entry $i$ of $A u + b = (b_i)$ is",
            S(A[i, j] * (s * a[j] + w[j])) + bi,
            s * S(A[i, j] * a[j]) + S(A[i, j] * w[j]) + bi,
            _SUMS,
        )
        domain = Step(
            r"$u$ stays in the domain (for LayerNorm $\mathbf{1} \cdot a = \mathbf{1} \cdot u^* = 0$):",
            S(s * a[j] + w[j]),
            s * S(a[j]) + S(w[j]),
            _SUMS,
        )
    else:
        n = sp.Integer(n_value)
        a, w = sp.symbols(f"a1:{n_value + 1}", real=True), sp.symbols(f"w1:{n_value + 1}", real=True)
        A = sp.symbols(f"A1:{n_value + 1}", real=True)
        norm = Step(
            "$\\|s a + u^*\\|^2 = s^2 V + 2 s p + \\|u^*\\|^2$ (explicit)",
            sum((s * x + y) ** 2 for x, y in zip(a, w)),
            s**2 * sum(x**2 for x in a) + 2 * s * sum(x * y for x, y in zip(a, w)) + sum(y**2 for y in w),
            "expand",
        )
        linear = Step(
            "row $i$ of $A (s a + u^*) + b$ is $s (A a)_i + (A u^*)_i + b_i$ (explicit row $A_i$)",
            sum(r * (s * x + y) for r, x, y in zip(A, a, w)) + bi,
            s * sum(r * x for r, x in zip(A, a)) + sum(r * y for r, y in zip(A, w)) + bi,
            "expand",
        )
        domain = Step(
            "$\\mathbf{1} \\cdot (s a + u^*) = s\\, \\mathbf{1} \\cdot a + \\mathbf{1} \\cdot u^*$ (explicit)",
            sum(s * x + y for x, y in zip(a, w)),
            s * sum(a) + sum(w),
            "expand",
        )
    root = (-p + sp.sqrt(p**2 + V * dl)) / V
    other = (-p - sp.sqrt(p**2 + V * dl)) / V
    sp_, sm_ = sp.Symbol("s_+", real=True), sp.Symbol("s_-", real=True)
    image = Step(
        "", s * Av + Aw + bi, s * vi, "expand", where=((Av, vi), (Aw, -bi)), chained=True, why="$A a = v$, $A u^* = -b$"
    )
    sphere = Step(
        r"so $\|u\|^2 = n$ exactly when $V s^2 + 2 p s + \|u^*\|^2 - n = 0$, which holds at $s_+$, and $s_\pm$ are "
        r"real as $p^2 + V\delta > 0$:",
        V * sp_**2 + 2 * p * sp_ + C - n,
        0,
        "simplify-to-zero",
    )
    disc = Step("", p**2 + V * dl, 0, _SIGN, relation=">")
    product = Step(
        r"Their product is negative, so $s_+ > 0 > s_-$ and the ray $s > 0$ meets the sphere once:",
        sp_ * sm_,
        -dl / V,
        "simplify-to-zero",
    )
    once = Step("", -dl / V, 0, _SIGN, relation="<", chained=True)
    factor = Step(
        r"For $0 < s < s_+$ the point is strictly inside ($x = s_+ - s > 0$, $y = s - s_- > 0$):",
        V * s**2 + 2 * p * s + C - n,
        V * (s - sp_) * (s - sm_),
        "simplify-to-zero",
        why=r"$\|u\|^2 - n$",
    )
    x, y = sp.Symbol("x", positive=True), sp.Symbol("y", positive=True)
    inside = Step("", -V * x * y, 0, _SIGN, relation="<", why=r"$= -V x y$")
    definitions = ((sp_, root), (sm_, other), (C, n - dl))
    centred, neg, rationalised, pos = _ray_routine(s, p, V, dl, root)
    steps = (linear, image, domain, norm, sphere, disc, product, once, factor, inside)
    steps += routine(centred, neg, rationalised, pos)
    concl = (sphere, image, once, inside, *routine(neg, pos))
    return Theorem(
        "coverage.every_direction",
        "A full-rank query set with its centre inside realises every direction on its boundary",
        text,
        latex,
        hyps,
        steps,
        concl,
        n=n_value,
        definitions=definitions,
    )


def _ray_routine(s, p, V, dl, root) -> tuple:
    """The routine checks of the ray: ``u`` stays centred, and ``s_+ > 0`` case by case in the sign of ``p``
    (the product of the roots proves it at once)."""
    import sympy as sp

    al, om = sp.Symbol("alpha", real=True), sp.Symbol("omega", real=True)
    pn, pp = sp.Symbol("p", nonpositive=True), sp.Symbol("p", nonnegative=True)
    centred = Step(
        r"For LayerNorm $\alpha = \mathbf{1} \cdot a = 0$ and $\omega = \mathbf{1} \cdot u^* = 0$, so $u$ stays in "
        r"$\mathbf{1}^\perp$",
        s * al + om,
        0,
        "expand",
        where=((al, 0), (om, 0)),
    )
    neg = Step(r"Case $p \le 0$: $s_+ > 0$", (-pn + sp.sqrt(pn**2 + V * dl)) / V, 0, _SIGN, relation=">")
    rationalised = Step(
        r"$s_+ = \delta / (p + \sqrt{p^2 + V \delta})$ (multiply by the conjugate)",
        root,
        dl / (p + sp.sqrt(p**2 + V * dl)),
        "simplify-to-zero",
    )
    pos = Step(
        r"Case $p \ge 0$: $s_+ = \delta / (p + \sqrt{p^2 + V \delta}) > 0$",
        dl / (pp + sp.sqrt(pp**2 + V * dl)),
        0,
        _SIGN,
        relation=">",
    )
    return centred, neg, rationalised, pos


def _argmax_routine(s, ca, sa, sb, cb) -> tuple:
    """The routine checks of the argmax theorem: the signs of a scaled gap, one block times its explicit
    inverse, and an exact rotation's determinant."""
    import sympy as sp

    g, h, th = sp.Symbol("g", positive=True), sp.Symbol("h", positive=True), sp.Symbol("theta", real=True)
    inverse = sp.Matrix([[cb, sa], [-sb, ca]]) / (ca * cb + sa * sb)
    v1, v2 = sp.symbols("v_1 v_2", real=True)
    positive = Step(
        r"A positive gap $g = q \cdot (k_i - k_j)$ stays positive: $s g > 0$", s * g, 0, _SIGN, relation=">"
    )
    back = Step(
        r"and back: $q = (1/s)(s q)$, and $h / s > 0$ for a positive gap $h$ of $s q$", h / s, 0, _SIGN, relation=">"
    )
    block = Step(
        r"One block times its explicit inverse is $I$ when $\Delta \ne 0$",
        _block(ca, sa, sb, cb) * inverse,
        sp.eye(2),
        "simplify-to-zero",
    )
    image = Step(
        r"so $B (s B^{-1} v) = s v$ on the block, $v = (v_1, v_2)$, with the explicit inverse",
        _block(ca, sa, sb, cb) * (s * inverse * sp.Matrix([v1, v2])),
        s * sp.Matrix([v1, v2]),
        "simplify-to-zero",
    )
    exact = Step(
        r"An exact rotation by $\theta$ has $\Delta = \cos^2 \theta + \sin^2 \theta = 1$",
        sp.cos(th) ** 2 + sp.sin(th) ** 2,
        1,
        "simplify-to-zero",
    )
    return positive, back, block, image, exact


def _block(ca, sa, sb, cb):
    import sympy as sp

    return sp.Matrix([[ca, -sa], [sb, cb]])


def _argmax_direction(n_value):
    import sympy as sp

    text = (
        "The keys a query $q \\ne 0$ makes the strict winner (or a tied maximiser) of $q \\cdot k_j$ are those "
        "of $s q$ for every $s > 0$: $(s q) \\cdot (k_i - k_j) = s\\, q \\cdot (k_i - k_j)$ has the sign of "
        "$q \\cdot (k_i - k_j)$.  A rotary matrix built from any table of cosines and sines, block by block "
        "$\\begin{pmatrix} c_a & -s_a \\\\ s_b & c_b \\end{pmatrix}$ with $c_a c_b + s_a s_b \\ne 0$, is "
        "invertible, so $R_t (s R_t^{-1} v) = s v$: a set that realises every direction still does after "
        "the rotation.  Hence a query set realising every direction makes exactly the keys win that free "
        "queries make win; and since a gap is zero exactly when $s$ times it is, such a set has a non-zero query "
        "giving every key the same score (uniform attention) exactly when free queries have one."
    )
    latex = (
        r"\operatorname{sign}\,(s q)\cdot(k_i - k_j) = \operatorname{sign}\, q\cdot(k_i - k_j)\ (s > 0),"
        r"\quad R_t\,(s R_t^{-1} v) = s v"
    )
    hyps = (
        width_hypothesis(n_value, _WIDTH),
        Hypothesis("scale", "$s > 0$", r"s > 0"),
        Hypothesis(
            "rotation blocks",
            "each $2 \\times 2$ block of $R_t$ pairs two coordinates, $B = \\begin{pmatrix} c_a & -s_a \\\\ s_b & c_b "
            "\\end{pmatrix}$ on them with $v = (v_1, v_2)$, the identity elsewhere, and has "
            "$\\Delta = c_a c_b + s_a s_b \\ne 0$; exact rotations have $\\Delta = \\cos^2 \\theta + \\sin^2 \\theta = 1$",
            r"c_a c_b + s_a s_b \ne 0",
        ),
    )
    s = sp.Symbol("s", positive=True)
    t = sp.Symbol("t", positive=True, integer=True)
    if n_value is None:
        n = general_symbols()["n"]
        q, ki, kj = sp.IndexedBase("q", real=True), sp.IndexedBase("k_i", real=True), sp.IndexedBase("k_j", real=True)
        scale = Step(
            "$(s q) \\cdot (k_i - k_j) = s\\, q \\cdot (k_i - k_j)$",
            sp.Sum(s * q[t] * (ki[t] - kj[t]), (t, 1, n)),
            s * sp.Sum(q[t] * (ki[t] - kj[t]), (t, 1, n)),
            _SUMS,
        )
    else:
        q, ki, kj = (sp.symbols(f"{name}1:{n_value + 1}", real=True) for name in ("q", "ki", "kj"))
        scale = Step(
            "$(s q) \\cdot (k_i - k_j) = s\\, q \\cdot (k_i - k_j)$ (explicit)",
            sum(s * x * (y - z) for x, y, z in zip(q, ki, kj)),
            s * sum(x * (y - z) for x, y, z in zip(q, ki, kj)),
            "expand",
        )
    ca, sa, sb, cb = sp.symbols("c_a s_a s_b c_b", real=True)
    delta = ca * cb + sa * sb
    Dl = sp.Symbol("Delta", real=True, nonzero=True)
    inverse = sp.Matrix([[cb, sa], [-sb, ca]]) / Dl
    v1, v2 = sp.symbols("v_1 v_2", real=True)
    B, Binv, Vv = sp.MatrixSymbol("B", 2, 2), sp.MatrixSymbol("B^{-1}", 2, 2), sp.MatrixSymbol("v", 2, 1)
    blocks = ((Dl, delta), (B, _block(ca, sa, sb, cb)), (Binv, inverse), (Vv, sp.Matrix([v1, v2])))
    steps = [
        dataclasses.replace(scale, description="A positive factor keeps the sign of every gap:"),
        Step(
            r"On a block $B$ of $R_t$, with $B^{-1}$ the matrix below ($\Delta \ne 0$), $R_t (s R_t^{-1} v) = s v$:",
            B * (s * Binv * Vv),
            s * Vv,
            "simplify-to-zero",
        ),
    ]
    if n_value is not None:
        half = n_value // 2
        c = sp.symbols(f"c1:{n_value + 1}", real=True)
        sn = sp.symbols(f"sigma1:{n_value + 1}", real=True)
        R, Rinv = sp.eye(n_value), sp.eye(n_value)
        for a in range(half):  # the "half" pairing: a with a + half
            b = a + half
            blk, det = _block(c[a], sn[a], sn[b], c[b]), c[a] * c[b] + sn[a] * sn[b]
            inv = sp.Matrix([[c[b], sn[a]], [-sn[b], c[a]]]) / det
            for (r, rr), (k, kk) in ((x, y) for x in enumerate((a, b)) for y in enumerate((a, b))):
                R[rr, kk], Rinv[rr, kk] = blk[r, k], inv[r, k]
        steps.append(
            Step(
                f"the whole ${n_value} \\times {n_value}$ rotary matrix times its block inverse is $I$ (explicit)",
                R * Rinv,
                sp.eye(n_value),
                "simplify-to-zero",
            )
        )
    positive, back, block, image, exact = _argmax_routine(s, ca, sa, sb, cb)
    concl = (steps[0], steps[1]) + ((steps[-1],) if n_value is not None else ()) + routine(positive, image)
    steps += routine(positive, back, block, image, exact)
    return Theorem(
        "coverage.argmax_direction",
        "The argmax depends only on the query's direction, and invertible rotations keep every direction",
        text,
        latex,
        hyps,
        tuple(steps),
        concl,
        n=n_value,
        definitions=blocks,
    )


def theorems(n: int | None = None, convention: str = "torch") -> list:
    """The coverage theorems for general n or width ``n``."""
    return [_argmax_direction(n), _every_direction(n)]
