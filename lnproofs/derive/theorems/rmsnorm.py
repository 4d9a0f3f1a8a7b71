"""RMSNorm: the sphere without the projection, then an axis-aligned ellipsoid; with eps > 0
the whole open ball (the realisable set of the ``rmsnorm`` query set), its support
function (the bound on a score gap over the ball).

RMSNorm(x) = a * x / rms(x) with rms(x) = sqrt(mean(x^2)) (eps = 0): no centring, so the
image is the whole (n-1)-sphere of radius sqrt(n) (gain 1), and with gain a the
axis-aligned ellipsoid sum_i z_i^2 / a_i^2 = n with semi-axes sqrt(n) |a_i| along e_i.
"""

from __future__ import annotations

from ..theorem import Hypothesis, Step, Theorem, general_symbols
from . import routine

__all__ = ["theorems"]


_SUMS = "finite sums and Kronecker deltas"
_SQUARES = "compare squares (both sides nonnegative)"


def _hyps(n_value, extra=()):
    width = (
        Hypothesis("width", r"$n \ge 2$ is an integer; $j, k$ range over $1, \dots, n$", r"n \ge 2")
        if n_value is None
        else Hypothesis("width", f"$n = {n_value}$", rf"n = {n_value}")
    )
    return (
        width,
        Hypothesis(
            "eps zero",
            r"$\epsilon = 0$ and $x \ne 0$; "
            r"$\operatorname{rms}(x) = \sqrt{\tfrac{1}{n}\sum_i x_i^2}$",
            r"\operatorname{rms}(x) = \sqrt{\tfrac{1}{n}\sum_i x_i^2}",
        ),
    ) + tuple(extra)


def _sphere(n_value):
    import sympy as sp

    text = (
        r"With $\epsilon = 0$, $\operatorname{RMSNorm}(x) = x / \operatorname{rms}(x)$ has norm $\sqrt{n}$, and "
        r"every point $u$ of the sphere of radius $\sqrt{n}$ is its own image: the image is the whole "
        r"$(n-1)$-sphere (no projection onto $\mathbf{1}^\perp$)."
    )
    latex = r"\left\|\frac{x}{\operatorname{rms}(x)}\right\| = \sqrt{n},\quad \operatorname{RMSNorm}(u) = u\ (\|u\| = \sqrt{n})"
    definitions = ()
    if n_value is None:
        s = general_symbols()
        n, j, k, x = s["n"], s["j"], s["k"], s["x"]
        rms, U = sp.Symbol(r"\operatorname{rms}(x)", positive=True), sp.Symbol(r"\|u\|", positive=True)
        definitions = ((rms, sp.sqrt(sp.Sum(x[k] ** 2, (k, 1, n)) / n)),)
        steps = (
            Step("", sp.sqrt(sp.Sum((x[j] / rms) ** 2, (j, 1, n))), sp.sqrt(n), _SUMS),
            Step(
                r"and for $\|u\| = \sqrt{n}$, $\operatorname{RMSNorm}(u) = u / \operatorname{rms}(u) = u$, as",
                sp.sqrt(U**2 / n),
                1,
                "expand",
                where=((U, sp.sqrt(n)),),
                why=r"$\operatorname{rms}(u)$",
            ),
        )
        concl = steps
        steps += routine(
            Step(
                r"$\operatorname{rms}(x) = \sqrt{\tfrac{1}{n}\sum_k x_k^2} = \|x\| / \sqrt{n}$",
                rms,
                sp.sqrt(sp.Sum(x[k] ** 2, (k, 1, n))) / sp.sqrt(n),
                _SQUARES,
            ),
            Step(
                r"$\|x / \operatorname{rms}(x)\|^2 = \sum_j n x_j^2 / \|x\|^2 = n$",
                sp.Sum((x[j] / rms) ** 2, (j, 1, n)),
                n,
                _SUMS,
            ),
        )
    else:
        x = sp.symbols(f"x1:{n_value + 1}", real=True)
        rms = sp.sqrt(sum(t**2 for t in x) / n_value)
        z = [t / rms for t in x]
        u = sp.Matrix([sp.sqrt(n_value)] + [0] * (n_value - 1))  # a point of the sphere: its own image
        U = sp.MatrixSymbol("u", n_value, 1)
        R = sp.Symbol("rms_u", positive=True)
        bind = ((U, u), (R, sp.sqrt(sum(t**2 for t in u) / n_value)))
        steps = (
            Step(
                r"$\|x / \operatorname{rms}(x)\|^2 = n$ (explicit)", sum(t**2 for t in z), n_value, "simplify-to-zero"
            ),
            Step(r"the point $u = \sqrt{n}\, e_1$ has $\operatorname{rms}(u) = 1$", R, 1, "expand", where=bind),
        )
        concl = (
            Step(
                r"$\|\operatorname{RMSNorm}(x)\| = \sqrt{n}$",
                sp.sqrt(sum(t**2 for t in z)),
                sp.sqrt(n_value),
                "simplify-to-zero",
            ),
            Step(
                r"$\operatorname{RMSNorm}(u) = u / \operatorname{rms}(u) = u$ for $u = \sqrt{n}\, e_1$",
                U / R,
                U,
                "expand",
                where=bind,
            ),
        )
    return Theorem(
        "rmsnorm.sphere",
        r"RMSNorm maps onto the full sphere of radius $\sqrt{n}$",
        text,
        latex,
        _hyps(n_value),
        steps,
        concl,
        n=n_value,
        definitions=definitions,
    )


def _ellipsoid(n_value):
    import sympy as sp

    text = (
        r"With gain $a$ (all $a_i \ne 0$) and $\epsilon = 0$, $z = a \odot x / \operatorname{rms}(x)$ lies on the "
        r"axis-aligned ellipsoid $\sum_i z_i^2 / a_i^2 = n$, with semi-axes $\sqrt{n}\,|a_i|$ along the "
        r"coordinate axes $e_i$."
    )
    latex = r"\sum_{i=1}^n \frac{z_i^2}{a_i^2} = n,\quad \text{semi-axes } \sqrt{n}\,|a_i| \text{ along } e_i"
    hyps = _hyps(n_value, (Hypothesis("gains", r"every gain $a_i$ is non-zero", r"a_i \ne 0"),))
    definitions = ()
    if n_value is None:
        s = general_symbols()
        n, j, k, x, a = s["n"], s["j"], s["k"], s["x"], s["a"]
        rms, z = sp.Symbol(r"\operatorname{rms}(x)", positive=True), sp.Function("z")
        t = sp.Symbol("t", positive=True, integer=True)
        definitions = ((rms, sp.sqrt(sp.Sum(x[k] ** 2, (k, 1, n)) / n)), (z, sp.Lambda((t,), a[t] * x[t] / rms)))
        ai, tt = sp.Symbol("a_i", real=True, nonzero=True), sp.Symbol("t", real=True)
        steps = (
            Step("", sp.Sum(z(j) ** 2 / a[j] ** 2, (j, 1, n)), n, _SUMS, why="Theorem rmsnorm.sphere"),
            Step(
                r"and a point $t e_i$, $t > 0$, is on the ellipsoid for",
                tt**2 / ai**2 - n,
                sp.FiniteSet(sp.sqrt(n) * sp.Abs(ai)),
                "solve",
                data=(tt, sp.Interval.open(0, sp.oo)),
            ),
        )
        zi = sp.Symbol("z_i", real=True)
        bind = ((zi, sp.sqrt(n) * ai),)
        axis_point = Step(
            r"The point $z_i e_i$ with $z_i = \sqrt{n}\, a_i$ satisfies the equation",
            zi**2 / ai**2,
            n,
            "expand",
            where=bind,
        )
        semi_axis = Step(
            r"Its semi-axis along $e_i$ has length $|z_i| = \sqrt{n}\,|a_i|$",
            sp.sqrt(zi**2),
            sp.sqrt(n) * sp.Abs(ai),
            _SQUARES,
            where=bind,
        )
        concl = steps + routine(semi_axis)
        steps += routine(
            Step(
                r"$\sum_j z_j^2 / a_j^2 = \sum_j n x_j^2 / \|x\|^2$",
                sp.Sum(z(j) ** 2 / a[j] ** 2, (j, 1, n)),
                n * sp.Sum(x[j] ** 2, (j, 1, n)) / sp.Sum(x[k] ** 2, (k, 1, n)),
                _SUMS,
            ),
            axis_point,
        )
    else:
        x = sp.symbols(f"x1:{n_value + 1}", real=True)
        a = sp.symbols(f"a1:{n_value + 1}", real=True, nonzero=True)
        rms = sp.sqrt(sum(t**2 for t in x) / n_value)
        z = [a[t] * x[t] / rms for t in range(n_value)]
        steps = (
            Step(
                r"$\sum_i z_i^2 / a_i^2 = n$ (explicit)",
                sum(z[t] ** 2 / a[t] ** 2 for t in range(n_value)),
                n_value,
                "simplify-to-zero",
            ),
        )
        zt = sp.Symbol("z_t", real=True)
        concl = (steps[0],) + tuple(
            Step(
                rf"the axis point $z_t e_{{{t + 1}}}$ with $z_t = \sqrt{{n}}\, a_{{{t + 1}}}$ is on the ellipsoid",
                zt**2 / a[t] ** 2,
                n_value,
                "expand",
                where=((zt, sp.sqrt(n_value) * a[t]),),
            )
            for t in range(n_value)
        )
    return Theorem(
        "rmsnorm.ellipsoid",
        "RMSNorm with a gain: an axis-aligned ellipsoid",
        text,
        latex,
        hyps,
        steps,
        concl,
        n=n_value,
        definitions=definitions,
        uses=("rmsnorm.sphere",),
    )


_SIGN = "sign under assumptions"


def _interior(n_value):
    """eps > 0: |RMSNorm(x)|^2 = n S / (S + n eps) < n with S = |x|^2."""
    import sympy as sp

    eps = sp.Symbol("epsilon", positive=True)
    S = sp.Symbol("S", positive=True)
    n = general_symbols()["n"] if n_value is None else sp.Integer(n_value)
    hyps = (
        _hyps(n_value)[0],
        Hypothesis(
            "eps positive",
            r"$\epsilon > 0$, $x \ne 0$ and $\operatorname{RMSNorm}(x) = x / \sqrt{m + \epsilon}$",
            r"\epsilon > 0",
        ),
    )
    definitions = ()
    if n_value is None:
        s = general_symbols()
        j, k, x = s["j"], s["k"], s["x"]
        m_def, m = sp.Symbol("m", real=True), sp.Symbol("m", positive=True)  # defined, and its positive value
        definitions = ((m_def, sp.Sum(x[k] ** 2, (k, 1, n)) / n),)
        first = Step("", sp.Sum(x[j] ** 2 / (m_def + eps), (j, 1, n)), n * m_def / (m_def + eps), _SUMS)
        below = Step("", n * m / (m + eps), n, _SIGN, relation="<", chained=True)
        with_s, closing = _interior_with_s(n, S, eps)
        theorem = Theorem(
            "rmsnorm.interior",
            r"With $\epsilon > 0$, RMSNorm lands strictly inside the ball of radius $\sqrt{n}$",
            r"For $\epsilon > 0$ and $x \ne 0$, $\|\operatorname{RMSNorm}(x)\|^2 = n m / (m + \epsilon) < n$ with "
            r"$m = \tfrac{1}{n}\|x\|^2$: the outputs lie strictly inside the ball, at relative depth "
            r"$1 - \sqrt{m / (m + \epsilon)}$.",
            r"\|\operatorname{RMSNorm}(x)\|^2 = \frac{n\|x\|^2}{\|x\|^2 + n\epsilon} < n",
            hyps,
            (first, below, *routine(with_s)),
            (first, below, *routine(*closing)),
            definitions=definitions,
        )
        return theorem
    else:
        x = sp.symbols(f"x1:{n_value + 1}", real=True)
        S2 = sum(t**2 for t in x)
        first = Step(
            r"$\|x / \sqrt{S/n + \epsilon}\|^2 = S / (S/n + \epsilon)$ (explicit)",
            sum((t / sp.sqrt(S2 / n + eps)) ** 2 for t in x),
            S2 / (S2 / n + eps),
            "simplify-to-zero",
        )
    with_s, concl = _interior_with_s(n, S, eps)
    steps = (first, with_s)
    return Theorem(
        "rmsnorm.interior",
        r"With $\epsilon > 0$, RMSNorm lands strictly inside the ball of radius $\sqrt{n}$",
        r"For $\epsilon > 0$ and $x \ne 0$, $\|\operatorname{RMSNorm}(x)\|^2 = n\|x\|^2 / (\|x\|^2 + n\epsilon) "
        r"< n$: the outputs lie strictly inside the ball, at relative depth $1 - \sqrt{m / (m + \epsilon)}$ "
        r"with $m = \tfrac{1}{n}\sum_i x_i^2$.",
        r"\|\operatorname{RMSNorm}(x)\|^2 = \frac{n\|x\|^2}{\|x\|^2 + n\epsilon} < n",
        hyps,
        steps,
        concl,
        n=n_value,
    )


def _interior_with_s(n, S, eps) -> tuple:
    """The interior's form in ``S = |x|^2``: one step and the two conclusions."""
    import sympy as sp

    step = Step(
        r"With $S = \|x\|^2$: $S / (S/n + \epsilon) = n S / (S + n\epsilon)$",
        S / (S / n + eps),
        n * S / (S + n * eps),
        "simplify-to-zero",
    )
    concl = (
        Step(
            r"$\|\operatorname{RMSNorm}(x)\|^2 = n S / (S + n\epsilon) < n$ with $S = \|x\|^2$: strictly inside "
            r"the sphere of radius $\sqrt{n}$",
            n * S / (S + n * eps),
            n,
            _SIGN,
            relation="<",
        ),
        Step(
            r"the relative gap $1 - \|\operatorname{RMSNorm}(x)\| / \sqrt{n}$ is $1 - \sqrt{m / (m + \epsilon)}$, "
            r"$m = S / n$, $S = \|x\|^2$",
            sp.sqrt(n * S / (S + n * eps)) / sp.sqrt(n),
            sp.sqrt((S / n) / (S / n + eps)),
            _SQUARES,
        ),
    )
    return step, concl


def _ball_image(n_value):
    """eps > 0: every u with |u|^2 = U < n is RMSNorm(s u) for s = sqrt(n eps / (n - U))."""
    import sympy as sp

    eps = sp.Symbol("epsilon", positive=True)
    gap = sp.Symbol("delta", positive=True)  # n - U
    n = general_symbols()["n"] if n_value is None else sp.Integer(n_value)
    U = n - gap
    s_sym = sp.Symbol("s", positive=True)
    s_val = sp.sqrt(n * eps / gap)
    bind = ((s_sym, s_val),)
    hyps = (
        _hyps(n_value)[0],
        Hypothesis(
            "eps positive",
            r"$\epsilon > 0$; $u$ has $\|u\|^2 = U = n - \delta$ with "
            r"$\delta > 0$",
            r"\epsilon > 0,\ \|u\|^2 < n",
        ),
    )
    steps = (
        Step(
            r"With $s = \sqrt{n\epsilon/\delta}$ and $x = s u$, $\tfrac{1}{n}\|x\|^2 + \epsilon$ is",
            s_sym**2 * U / n + eps,
            s_sym**2,
            "simplify-to-zero",
        ),
        Step(
            r"so $\operatorname{RMSNorm}(s u) = s u / \sqrt{s^2} = u$:",
            s_sym / sp.sqrt(s_sym**2 * U / n + eps),
            1,
            "simplify-to-zero",
        ),
    )
    concl = steps[1:]
    return Theorem(
        "rmsnorm.ball_image",
        r"With $\epsilon > 0$, RMSNorm maps onto the whole open ball of radius "
        r"$\sqrt{n}$",
        r"For $\epsilon > 0$, every $u$ with $\|u\| < \sqrt{n}$ is the image of $x = s u$, "
        r"$s = \sqrt{n\epsilon / (n - \|u\|^2)}$: the outputs fill the open ball, so the closed ball is the "
        "exact closure of the realisable set.",
        r"\operatorname{RMSNorm}\!\left(\sqrt{\tfrac{n\epsilon}{n - \|u\|^2}}\,u\right) = u",
        hyps,
        steps,
        concl,
        n=n_value,
        definitions=bind,
    )


_SUPPORT_TEXT = (
    r"Over the ball $\|u\| \le \sqrt{n}$, $v \cdot u \le \sqrt{n}\,\|v\|$, with equality at "
    r"$u = \sqrt{n}\, v / \|v\|$. With $v = a \odot W_q^T R^T (k_i - \sum_j \lambda_j k_j)$ ($a$ the gain, $W_q$ "
    r"the query map, $R$ a rotary matrix, $\lambda_j \ge 0$ weights) this bounds the score gap of key $i$ over the "
    "keys $k_j$ for every query an RMSNorm can produce."
)


def _support_minimum(t) -> tuple:
    """Cauchy-Schwarz in the numbers ``U = |u|^2``, ``V = |v|^2``, ``p = u . v``: the minimum of
    ``|u - t v|^2`` over ``t`` and its sign."""
    import sympy as sp

    Us, Vs, P = sp.Symbol("U", nonnegative=True), sp.Symbol("V", positive=True), sp.Symbol("p", real=True)
    Q = sp.Symbol("Q", nonnegative=True)
    minimum = Step(
        r"At $t = p / V$ ($p = u \cdot v$, $U = \|u\|^2$, $V = \|v\|^2$): $U - 2tp + t^2 V = U - p^2 / V$",
        Us - 2 * t * P + t**2 * Vs,
        Us - P**2 / Vs,
        "simplify-to-zero",
        where=((t, P / Vs),),
    )
    nonnegative = Step(
        r"Hence $U V - p^2 = V Q \ge 0$ with $Q = \|u - t v\|^2$ (Cauchy--Schwarz)", Vs * Q, 0, _SIGN, relation=">="
    )
    return minimum, nonnegative


def _support(n_value):
    """max over |u| <= sqrt(n) of v . u is sqrt(n) |v| (the dual bound of the rmsnorm query set)."""
    import sympy as sp

    hyps = (
        _hyps(n_value)[0],
        Hypothesis(
            "vectors",
            r"$v \ne 0$ and $\|u\| \le \sqrt{n}$",
            r"v \ne 0,\ \|u\| \le \sqrt{n}",
        ),
    )
    t = sp.Symbol("t", real=True)
    if n_value is None:
        s = general_symbols()
        j, k = s["j"], s["k"]
        n = s["n"]
        u, v = sp.IndexedBase("u", real=True), sp.IndexedBase("v", real=True)
        norm_v = sp.Symbol(r"\|v\|", positive=True)
        # named quantities (substituted before checking); p without assumptions, so that the numbers of
        # the routine Cauchy-Schwarz step (a real p) are not taken for it
        U_, V_, p_ = sp.Symbol("U", real=True), sp.Symbol("V", real=True), sp.Symbol("p")
        sums = (
            (U_, sp.Sum(u[j] ** 2, (j, 1, n))),
            (V_, sp.Sum(v[j] ** 2, (j, 1, n))),
            (p_, sp.Sum(u[j] * v[j], (j, 1, n))),
            (norm_v, sp.sqrt(sp.Sum(v[k] ** 2, (k, 1, n)))),
        )
        cauchy = (
            Step(
                r"For real $t$,",
                sp.Sum((u[j] - t * v[j]) ** 2, (j, 1, n)),
                U_ - 2 * t * p_ + t**2 * V_,
                _SUMS,
            ),
            Step(
                "",
                U_ - 2 * t * p_ + t**2 * V_,
                (U_ * V_ - p_**2) / V_,
                _SUMS,
                where=((t, p_ / V_),),
                chained=True,
            ),
        )
        attain = Step(
            r"which is $\ge 0$: $(u \cdot v)^2 \le \|u\|^2 \|v\|^2 \le n \|v\|^2$ (Cauchy--Schwarz). The "
            r"bound is attained at $u^* = \sqrt{n}\, v / \|v\|$, a point of the ball:",
            sp.Sum(v[j] * sp.sqrt(n) * v[j] / norm_v, (j, 1, n)),
            sp.sqrt(n) * norm_v,
            _SUMS,
        )
        size = Step("", sp.Sum((sp.sqrt(n) * v[j] / norm_v) ** 2, (j, 1, n)), n, _SUMS)
        minimum, nonnegative = _support_minimum(t)
        return Theorem(
            "rmsnorm.support",
            r"The largest value of $v \cdot u$ over the ball $\|u\| \le \sqrt{n}$ is $\sqrt{n}\,\|v\|$",
            _SUPPORT_TEXT,
            r"\max_{\|u\| \le \sqrt{n}} v \cdot u = \sqrt{n}\,\|v\|",
            hyps,
            cauchy + routine(minimum, nonnegative) + (attain, size),
            (*routine(nonnegative), attain, size),
            definitions=sums,
        )
    else:
        n = sp.Integer(n_value)
        u = sp.symbols(f"u1:{n_value + 1}", real=True)
        v = sp.symbols(f"v1:{n_value + 1}", real=True)
        norm_v = sp.sqrt(sum(x**2 for x in v))
        expand = Step(
            r"$\|u - t v\|^2 = \|u\|^2 - 2t\, u \cdot v + t^2 \|v\|^2$ (explicit)",
            sum((a - t * b) ** 2 for a, b in zip(u, v)),
            sum(a**2 for a in u) - 2 * t * sum(a * b for a, b in zip(u, v)) + t**2 * sum(b**2 for b in v),
            "expand",
        )
        attain = Step(
            r"$u^* = \sqrt{n}\, v / \|v\|$ gives $v \cdot u^* = \sqrt{n}\,\|v\|$ (explicit)",
            sum(b * sp.sqrt(n) * b / norm_v for b in v),
            sp.sqrt(n) * norm_v,
            "simplify-to-zero",
        )
        size = Step(
            r"$\|u^*\|^2 = n$ (explicit)", sum((sp.sqrt(n) * b / norm_v) ** 2 for b in v), n, "simplify-to-zero"
        )
    minimum, nonnegative = _support_minimum(t)
    steps = (expand, minimum, nonnegative, attain, size)
    concl = (
        Step(
            r"$(u \cdot v)^2 \le \|u\|^2 \|v\|^2 \le n \|v\|^2$, so $v \cdot u \le \sqrt{n}\,\|v\|$ on the ball",
            nonnegative.lhs,
            0,
            _SIGN,
            relation=">=",
        ),
        attain,
    )
    return Theorem(
        "rmsnorm.support",
        r"The largest value of $v \cdot u$ over the ball $\|u\| \le \sqrt{n}$ is "
        r"$\sqrt{n}\,\|v\|$",
        _SUPPORT_TEXT,
        r"\max_{\|u\| \le \sqrt{n}} v \cdot u = \sqrt{n}\,\|v\|",
        hyps,
        steps,
        concl,
        n=n_value,
    )


def theorems(n: int | None = None, convention: str = "torch") -> list:
    """The RMSNorm theorems for general n or width ``n``."""
    return [_sphere(n), _ellipsoid(n), _interior(n), _ball_image(n), _support(n)]
