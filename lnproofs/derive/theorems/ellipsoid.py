"""The image of LayerNorm after the affine map h(y) = diag(a) y + b: a hyperplane ellipsoid.

Notation: A = diag(a), P = I - 1 1^T / n, M = A P A, w = (1/a_1, ..., 1/a_n) (all gains
non-zero), H = {z : w^T z = 0} = A U with U = 1^perp, P2 = I - w w^T / (w^T w) and
N = P2 A^-2 P2 (the matrix of the Riechers paper).  For general n, vectors of U are
written y = P q (y_j = q_j - sum_k q_k / n), so the hypothesis 1^T y = 0 is built in.
For a concrete n the proofs use explicit matrices; the eigen-structure statements use the
fixed rational gains of :func:`sample_gains` and exact arithmetic.
"""

from __future__ import annotations

from fractions import Fraction

from ..theorem import Hypothesis, Step, Theorem, general_symbols
from . import width_hypothesis
from .decomposition import radial_factor
from .sphere import radius_expression

__all__ = ["theorems", "sample_gains", "secular_function"]


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


# ------------------------------------------------------------------ hyperplane


def _hyperplane(n_value):
    hyps = (
        width_hypothesis(n_value, _WIDTH),
        _NONZERO,
        Hypothesis(
            "image",
            r"$z = h(y) = \operatorname{diag}(a) y + b$ with $y = c P x$ for a scalar $c$ "
            r"(any $\epsilon$, either convention)",
            r"z = \operatorname{diag}(a)\,c\,Px + b",
        ),
    )
    text = (
        r"If every $a_i \ne 0$, every $z = \operatorname{LN}(x)$ satisfies $\sum_i (z_i - b_i)/a_i = 0$: the image "
        r"lies in the hyperplane through $b$ with normal $(1/a_1, \dots, 1/a_n)$."
    )
    latex = r"\sum_{i=1}^{n} \frac{z_i - b_i}{a_i} = 0"
    if n_value is None:
        sp, s, n, i, j, k, a, _ = _gen()
        x, b = s["x"], s["b"]
        c = sp.Symbol("c", real=True)
        mean = sp.Sum(x[k], (k, 1, n)) / n
        z = lambda t: a[t] * c * (x[t] - mean) + b[t]  # noqa: E731
        steps = (
            Step(
                r"$\sum_j (z_j - b_j)/a_j = c \sum_j (x_j - \bar{x})$",
                sp.Sum((z(j) - b[j]) / a[j], (j, 1, n)),
                c * sp.Sum(x[j] - mean, (j, 1, n)),
                _SUMS,
            ),
            Step(r"$\sum_j (x_j - \bar{x}) = 0$", sp.Sum(x[j] - mean, (j, 1, n)), 0, _SUMS),
        )
        concl = (Step(r"$\sum_j (z_j - b_j)/a_j = 0$", sp.Sum((z(j) - b[j]) / a[j], (j, 1, n)), 0, _SUMS),)
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
    )


# -------------------------------------------------------------------- equation


def _equation(n_value, convention):
    import sympy as sp

    eps = sp.Symbol("epsilon", positive=True)
    r = sp.Symbol("r", positive=True)
    hyps = (
        width_hypothesis(n_value, _WIDTH),
        _NONZERO,
        Hypothesis(
            "image", r"$z = \operatorname{diag}(a) g(p) + b$ with $p = P x \ne 0$ and $g$ the radial scaling", ""
        ),
        Hypothesis("convention", f"the {convention!r} convention for " + r"$\epsilon > 0$", ""),
    )
    text = (
        r"If every $a_i \ne 0$, $z = \operatorname{LN}(x)$ satisfies "
        r"$(z - b)^T \operatorname{diag}(a)^{-2} (z - b) = n$ when $\epsilon = 0$, and "
        r"$= \|g(P x)\|^2 < n$ when $\epsilon > 0$ " + f"({convention} convention)."
    )
    latex = r"(z-b)^T \operatorname{diag}(a)^{-2} (z-b) = n\ (\epsilon = 0),\quad < n\ (\epsilon > 0)"
    radius = radius_expression(
        r, sp.Symbol("n", positive=True, integer=True) if n_value is None else sp.Integer(n_value), eps, convention
    )
    if n_value is None:
        _, s, n, i, j, k, a, _ = _gen()
        p = sp.IndexedBase("p", real=True)
        R2 = sp.Sum(p[k] ** 2, (k, 1, n))
        y0 = lambda t: sp.sqrt(n) * p[t] / sp.sqrt(R2)  # noqa: E731
        ye = lambda t: radial_factor(sp.sqrt(R2), n, eps, convention) * p[t]  # noqa: E731
        form = lambda yy: sp.Sum((a[j] * yy(j)) ** 2 / a[j] ** 2, (j, 1, n))  # noqa: E731
        steps = (
            Step(
                r"$(z - b)^T \operatorname{diag}(a)^{-2} (z - b) = \sum_j (a_j y_j)^2 / a_j^2 = \|y\|^2$",
                form(lambda t: p[t]),
                R2,
                _SUMS,
            ),
            Step(r"$\epsilon = 0$: $\|g(p)\|^2 = n$", form(y0), n, _SUMS),
            Step(
                r"$\epsilon > 0$: $\|g(p)\|^2 = c(\|p\|)^2 \|p\|^2$",
                form(ye),
                radial_factor(sp.sqrt(R2), n, eps, convention) ** 2 * R2,
                _SUMS,
            ),
            Step("which is below $n$ (theorem sphere.interior)", radius**2, n, _SIGN, relation="<"),
        )
        concl = (
            Step(r"$\epsilon = 0$: the quadratic form equals $n$", form(y0), n, _SUMS),
            Step(r"$\epsilon > 0$: the quadratic form equals $\|g(P x)\|^2 < n$", radius**2, n, _SIGN, relation="<"),
        )
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
    )


# ---------------------------------------------- principal axes / Riechers form


def _mn_steps_general():
    """Steps showing M N z = z and N M z = z for z in H (general n)."""
    sp, s, n, i, j, k, a, y = _gen()
    W = sp.Sum(1 / a[k] ** 2, (k, 1, n))
    T = sp.Sum(y(k) / a[k] ** 2, (k, 1, n))
    Nz = lambda t: (y(t) - T / W) / a[t]  # noqa: E731  (N z)_t for z = A y
    C = sp.Sum(a[k] ** 2 * y(k), (k, 1, n)) / n
    v = lambda t: a[t] * y(t) - C / a[t]  # noqa: E731  (A^-2 M z)_t
    lt = (
        Step(
            r"$w^T z = \sum_j (1/a_j) a_j y_j = \mathbf{1}^T y = 0$, so $P_2 z = z$ for $z = A y \in H$",
            sp.Sum(a[j] * y(j) / a[j], (j, 1, n)),
            0,
            _SUMS,
        ),
        Step(
            r"$(N z)_i = (P_2 A^{-2} z)_i = y_i/a_i - \frac{1}{a_i} \frac{w^T A^{-2} z}{w^T w}$",
            y(i) / a[i] - (1 / a[i]) * sp.Sum((1 / a[j]) * y(j) / a[j], (j, 1, n)) / W,
            Nz(i),
            _SUMS,
        ),
        Step(
            r"$(M N z)_i = a_i (a_i (N z)_i - \tfrac{1}{n} \sum_j a_j (N z)_j) = a_i y_i = z_i$",
            a[i] * (a[i] * Nz(i) - sp.Sum(a[j] * Nz(j), (j, 1, n)) / n),
            a[i] * y(i),
            _SUMS,
        ),
        Step(
            r"$(A^{-2} M z)_i = \frac{1}{a_i}(a_i^2 y_i - \tfrac{1}{n} \sum_j a_j^2 y_j) = z_i - C w_i$",
            (a[i] ** 2 * y(i) - sp.Sum(a[j] ** 2 * y(j), (j, 1, n)) / n) / a[i],
            v(i),
            _SUMS,
        ),
        Step(
            r"$(N M z)_i = (P_2 (z - C w))_i = z_i$ ($P_2$ fixes $z$ and removes $w$)",
            v(i) - (1 / a[i]) * sp.Sum(v(j) / a[j], (j, 1, n)) / W,
            a[i] * y(i),
            _SUMS,
        ),
    )
    return lt, Nz, v, W


def _principal_axes(n_value):
    import sympy as sp

    hyps = (
        width_hypothesis(n_value, _WIDTH),
        _NONZERO,
        Hypothesis(
            "notation",
            r"$A = \operatorname{diag}(a)$, $M = A P A$, $w = 1/a$, $H = w^\perp$, "
            r"$P_2 = I - w w^T/(w^T w)$, $N = P_2 A^{-2} P_2$",
            r"M = A P A,\ N = P_2 A^{-2} P_2",
        ),
        Hypothesis(
            "linear image of a sphere",
            r"the image of the sphere of radius $\sqrt{n}$ of a subspace under a "
            r"linear map $L$ injective on it is the ellipsoid with shape matrix $n L L^T$",
            "",
        ),
    )
    text = (
        r"For $\epsilon = 0$ and all $a_i \ne 0$ the image is the ellipsoid in $b + H$ whose semi-axes are "
        r"$\sqrt{n\lambda}$ for the non-zero eigenvalues $\lambda$ of $\operatorname{diag}(a) P \operatorname{diag}(a)$, "
        "along its eigenvectors."
    )
    latex = r"\text{semi-axes } \sqrt{n\lambda},\ \lambda \in \operatorname{spec}(\operatorname{diag}(a) P \operatorname{diag}(a)) \setminus \{0\}"
    lam, t = sp.Symbol("lambda", positive=True), sp.Symbol("t", real=True)
    axis = (
        Step(
            r"A point $t u$ on the axis $u$ ($N u = u/\lambda$, $\|u\| = 1$) is on the ellipsoid iff "
            r"$t^2 / \lambda = n$; for $t > 0$ that is $t = \sqrt{n\lambda}$",
            t**2 / lam - n_sym(n_value),
            sp.FiniteSet(sp.sqrt(n_sym(n_value) * lam)),
            "solve",
            data=(t, sp.Interval.open(0, sp.oo)),
        ),
    )
    if n_value is None:
        _, s, n, i, j, k, a, _ = _gen()
        P = lambda r_, c_: sp.KroneckerDelta(r_, c_) - 1 / n  # noqa: E731
        lt, _, _, _ = _mn_steps_general()
        steps = (
            Step(
                "$(A P)(A P)^T = A P P^T A = A P A = M$, entrywise",
                sp.Sum(a[i] * P(i, k) * a[j] * P(j, k), (k, 1, n)),
                a[i] * P(i, j) * a[j],
                _SUMS,
            ),
        ) + lt
        concl = axis + (lt[2], lt[4])
    else:
        S, bind = _explicit_symbols(n_value)
        steps = (
            Step("$(A P)(A P)^T = M$ (explicit)", S["A"] * S["P"] * (S["A"] * S["P"]).T, S["M"], "expand", where=bind),
            Step(
                "$M w = 0$: the range of $M$ is $H$", S["M"] * S["w"], sp.ZeroMatrix(n_value, 1), "expand", where=bind
            ),
            Step("$M N = P_2$: $N$ inverts $M$ on $H$", S["M"] * S["N"], S["P2"], "expand", where=bind),
            Step("$N M = P_2$", S["N"] * S["M"], S["P2"], "expand", where=bind),
        )
        concl = axis + (steps[2],)
    return Theorem(
        "ellipsoid.principal_axes", "Principal axes and semi-axes", text, latex, hyps, steps, concl, n=n_value
    )


def n_sym(n_value):
    import sympy as sp

    return sp.Symbol("n", positive=True, integer=True) if n_value is None else sp.Integer(n_value)


def _explicit_matrices(n):
    import sympy as sp

    a = [sp.Rational(g.numerator, g.denominator) for g in sample_gains(n)]
    A = sp.diag(*a)
    P = sp.eye(n) - sp.ones(n, n) / n
    w = sp.Matrix([1 / g for g in a])
    P2 = sp.eye(n) - w * w.T / (w.T * w)[0]
    M = A * P * A
    N = P2 * A.inv() ** 2 * P2
    return M, N, P2, w, A * P


def _charpoly(matrix, symbol):
    """det(symbol I - matrix) as a SymPy polynomial expression in ``symbol``."""
    import sympy as sp
    from sympy.polys.matrices import DomainMatrix

    dm = DomainMatrix.from_Matrix(symbol * sp.eye(matrix.shape[0]) - matrix)
    return dm.domain.to_sympy(dm.det())


def _explicit_symbols(n):
    """Matrix symbols A, P, M, N, P2, w and their explicit values (sample gains)."""
    import sympy as sp

    M, N, P2, w, L = _explicit_matrices(n)
    a = [sp.Rational(g.numerator, g.denominator) for g in sample_gains(n)]
    values = {"A": sp.diag(*a), "P": sp.eye(n) - sp.ones(n, n) / n, "M": M, "N": N, "P2": P2, "w": w}
    S = {k: sp.MatrixSymbol(k if k != "P2" else "P_2", *v.shape) for k, v in values.items()}
    return S, tuple((S[k], values[k]) for k in ("A", "P", "M", "N", "P2", "w"))


def _riechers(n_value):
    import sympy as sp

    hyps = (
        width_hypothesis(n_value, _WIDTH),
        _NONZERO,
        Hypothesis(
            "notation",
            r"$M = A P A$, $N = P_2 A^{-2} P_2$ with $P_2$ the projection orthogonal to "
            r"$w = 1/a$",
            "",
        ),
    )
    text = (
        r"The Riechers form agrees: $N = P_2 \operatorname{diag}(a)^{-2} P_2$ has the same eigenvectors in $H$ as "
        r"$\operatorname{diag}(a) P \operatorname{diag}(a)$, with eigenvalues $\mu = 1/\lambda$, so its semi-axes "
        r"$\sqrt{n / \mu}$ equal $\sqrt{n\lambda}$."
    )
    latex = r"M N = N M = P_2,\quad \sqrt{n/\mu} = \sqrt{n\lambda}\ \ (\mu = 1/\lambda)"
    lam = sp.Symbol("lambda", positive=True)
    nn = n_sym(n_value)
    mu = sp.Symbol("mu", positive=True)
    same = Step(
        r"$\sqrt{n / \mu}$ at $\mu = 1/\lambda$ equals $\sqrt{n\lambda}$",
        sp.sqrt(nn / mu),
        sp.sqrt(nn * lam),
        _SQUARES,
        where=((mu, 1 / lam),),
    )
    if n_value is None:
        lt, _, _, _ = _mn_steps_general()
        steps = lt + (same,)
        concl = (lt[2], lt[4], same)
    else:
        M, N, P2, w, _ = _explicit_matrices(n_value)
        S, bind = _explicit_symbols(n_value)
        x = sp.Symbol("x")
        qm = sp.cancel(_charpoly(M, x) / x)
        qn = sp.cancel(_charpoly(N, x) / x)
        qN, qMinv, qM0 = sp.symbols("q_N q_M(1/x) q_M(0)")
        recip = Step(
            r"$q_N = \chi_N(x)/x$ is $x^{n-1} q_M(1/x) / q_M(0)$ with $q_M = \chi_M(x)/x$ ($\chi$ the "
            r"characteristic polynomial): the non-zero eigenvalues of $N$ are $\mu = 1/\lambda$",
            qN,
            x ** (n_value - 1) * qMinv / qM0,
            "simplify-to-zero",
            where=((qN, qn), (qMinv, qm.subs(x, 1 / x)), (qM0, qm.subs(x, 0))),
        )
        steps = (
            Step("$M N = P_2$ (explicit)", S["M"] * S["N"], S["P2"], "expand", where=bind),
            Step("$N M = P_2$ (explicit)", S["N"] * S["M"], S["P2"], "expand", where=bind),
            Step("$N w = 0$", S["N"] * S["w"], sp.ZeroMatrix(n_value, 1), "expand", where=bind),
        )
        concl = (recip, same)
    return Theorem(
        "ellipsoid.riechers_form", "Agreement with the Riechers form", text, latex, hyps, steps, concl, n=n_value
    )


# -------------------------------------------------------- secular equation


def _secular(n_value):
    import sympy as sp

    lam = sp.Symbol("lambda", real=True)
    hyps = (
        width_hypothesis(n_value, _WIDTH),
        _NONZERO,
        Hypothesis(
            "off the poles",
            r"$\lambda \ne a_i^2$ for every $i$ (so $\operatorname{diag}(a)^2 - \lambda I$ is "
            "invertible)",
            "",
        ),
    )
    text = (
        r"$\operatorname{diag}(a) P \operatorname{diag}(a) = \operatorname{diag}(a)^2 - a a^T / n$; by the matrix "
        r"determinant lemma its eigenvalues $\lambda$ off the poles $a_i^2$ are the roots of "
        r"$1 - \tfrac{1}{n} \sum_i a_i^2 / (a_i^2 - \lambda) = 0$, $\lambda = 0$ among them."
    )
    latex = (
        r"\operatorname{diag}(a) P \operatorname{diag}(a) = \operatorname{diag}(a)^2 - \tfrac{1}{n} a a^T,\quad "
        r"1 - \frac{1}{n}\sum_{i=1}^n \frac{a_i^2}{a_i^2 - \lambda} = 0"
    )
    if n_value is None:
        _, s, n, i, j, k, a, _ = _gen()
        c = sp.Symbol("c", real=True)
        f = 1 - sp.Sum(a[k] ** 2 / (a[k] ** 2 - lam), (k, 1, n)) / n
        v = lambda t: a[t] * c / (a[t] ** 2 - lam)  # noqa: E731
        m_entry = a[i] * (sp.KroneckerDelta(i, j) - 1 / n) * a[j]
        steps = (
            Step(
                r"$(A P A)_{ij} = a_i (\delta_{ij} - 1/n) a_j = a_i^2 \delta_{ij} - a_i a_j / n$",
                m_entry,
                a[i] ** 2 * sp.KroneckerDelta(i, j) - a[i] * a[j] / n,
                _SUMS,
            ),
            Step(
                r"An eigenvector $v$ solves $(a_i^2 - \lambda) v_i = a_i c$ with $c = a^T v / n$, so "
                r"$v_i = a_i c/(a_i^2 - \lambda)$; then $c - \tfrac{1}{n} \sum_j a_j v_j = c f(\lambda)$",
                c - sp.Sum(a[j] * v(j), (j, 1, n)) / n,
                c * f,
                _SUMS,
            ),
            Step(
                r"Conversely that $v$ gives $((A^2 - a a^T/n - \lambda I) v)_i = a_i c f(\lambda)$",
                (a[i] ** 2 - lam) * v(i) - a[i] * sp.Sum(a[j] * v(j), (j, 1, n)) / n,
                a[i] * c * f,
                _SUMS,
            ),
            Step(
                r"$f(0) = 1 - \tfrac{1}{n} \sum_i a_i^2 / a_i^2 = 0$, so $\lambda = 0$ is a root (eigenvector $w = 1/a$)",
                f.subs(lam, 0),
                0,
                _SUMS,
            ),
        )
        concl = (steps[0], steps[2])
    else:
        a = [sp.Rational(g.numerator, g.denominator) for g in sample_gains(n_value)]
        av = sp.Matrix(a)
        A = sp.diag(*a)
        P = sp.eye(n_value) - sp.ones(n_value, n_value) / n_value
        M = A * P * A
        f = secular_function(a, lam, n_value)
        As, Ps, avs = (
            sp.MatrixSymbol("A", n_value, n_value),
            sp.MatrixSymbol("P", n_value, n_value),
            sp.MatrixSymbol("a", n_value, 1),
        )
        bind = ((As, A), (Ps, sp.eye(n_value) - sp.ones(n_value, n_value) / n_value), (avs, av))
        steps = (
            Step(
                r"$A P A = A^2 - a a^T / n$ (explicit gains $a_i = (-1)^i (i+2)/(i+1)$)",
                As * Ps * As,
                As * As - avs * avs.T / n_value,
                "expand",
                where=bind,
            ),
            Step("$f(0) = 0$", f, 0, "simplify-to-zero", where=((lam, 0),)),
        )
        concl = (
            Step(
                r"Matrix determinant lemma: $\det(A^2 - a a^T/n - \lambda I) = \prod_i (a_i^2 - \lambda) f(\lambda)$",
                M - lam * sp.eye(n_value),
                sp.Mul(*[g**2 - lam for g in a]) * f,
                "determinant lemma",
            ),
        )
    return Theorem(
        "ellipsoid.secular_equation",
        "The secular equation of the squared semi-axes",
        text,
        latex,
        hyps,
        steps,
        concl,
        n=n_value,
    )


def _interlacing(n_value):
    import sympy as sp

    lam = sp.Symbol("lambda", real=True)
    hyps = (
        width_hypothesis(n_value, _WIDTH),
        _NONZERO,
        Hypothesis("distinct", r"the squared gains are distinct: $a_{(1)}^2 < \dots < a_{(n)}^2$ after sorting", ""),
    )
    text = (
        r"With $a_{(1)}^2 \le \dots \le a_{(n)}^2$ sorted, the non-zero eigenvalues "
        r"$\lambda_1 \le \dots \le \lambda_{n-1}$ of $\operatorname{diag}(a) P \operatorname{diag}(a)$ interlace: "
        r"$a_{(i)}^2 \le \lambda_i \le a_{(i+1)}^2$."
    )
    latex = r"a_{(i)}^2 \le \lambda_i \le a_{(i+1)}^2,\quad i = 1, \dots, n-1"
    if n_value is None:
        _, s, n, i, j, k, a, _ = _gen()
        f = 1 - sp.Sum(a[k] ** 2 / (a[k] ** 2 - lam), (k, 1, n)) / n
        sq = sp.Symbol("s", positive=True)  # one squared gain
        gap = sp.Symbol("delta", real=True, nonzero=True)  # s - lambda off the pole
        nn = sp.Symbol("n", positive=True, integer=True)
        steps = (
            Step(
                r"$f'(\lambda) = -\tfrac{1}{n} \sum_i a_i^2 / (a_i^2 - \lambda)^2$",
                f,
                -sp.Sum(a[k] ** 2 / (a[k] ** 2 - lam) ** 2, (k, 1, n)) / n,
                "derivative",
                data=(lam,),
            ),
            Step(
                "each term of $f'$ is negative off the poles, so $f$ strictly decreases between poles",
                -sq / (nn * gap**2),
                0,
                _SIGN,
                relation="<",
            ),
            Step(
                r"just right of a pole $s = a_{(i)}^2$ its term $-\tfrac{1}{n}\, s/(s - \lambda)$ tends to $+\infty$",
                -sq / (nn * (sq - lam)),
                sp.oo,
                "limit",
                data=(lam, sq, "+"),
            ),
            Step(
                r"just left of a pole it tends to $-\infty$",
                -sq / (nn * (sq - lam)),
                -sp.oo,
                "limit",
                data=(lam, sq, "-"),
            ),
            Step(
                r"as $\lambda \to \infty$ every term tends to $0$, so $f \to 1 > 0$: no root above $a_{(n)}^2$",
                -sq / (nn * (sq - lam)),
                0,
                "limit",
                data=(lam, sp.oo),
            ),
            Step(r"$f(0) = 0$: the root below $a_{(1)}^2$ is $\lambda = 0$", f.subs(lam, 0), 0, _SUMS),
        )
        concl = (
            Step(
                r"One root in each of the $n - 1$ gaps $(a_{(i)}^2, a_{(i+1)}^2)$ by the intermediate value theorem, "
                r"plus $\lambda = 0$: that accounts for all $n$ eigenvalues",
                sp.Add(n - 1, 1, evaluate=False),
                n,
                "expand",
            ),
        )
    else:
        a = [sp.Rational(g.numerator, g.denominator) for g in sample_gains(n_value)]
        A = sp.diag(*a)
        M = A * (sp.eye(n_value) - sp.ones(n_value, n_value) / n_value) * A
        char = _charpoly(M, lam)
        sq = sorted(g**2 for g in a)
        intervals = ((sp.Integer(0), sp.Integer(0)),) + tuple((sq[t], sq[t + 1]) for t in range(n_value - 1))
        steps = (
            Step(
                r"$\det(\operatorname{diag}(a) P \operatorname{diag}(a) - \lambda I) = (-1)^n$ times the "
                "characteristic polynomial (explicit gains)",
                M - lam * sp.eye(n_value),
                (-1) ** n_value * char,
                "determinant lemma",
            ),
        )
        concl = (
            Step(
                r"Exactly one eigenvalue in $[0, 0]$ and in each $[a_{(i)}^2, a_{(i+1)}^2]$, and no other real root",
                char,
                intervals,
                "root isolation (Sturm)",
                data=(lam,),
            ),
        )
    return Theorem(
        "ellipsoid.interlacing",
        "The squared semi-axes interlace the squared gains",
        text,
        latex,
        hyps,
        steps,
        concl,
        n=n_value,
    )


# ----------------------------------------------------------- zero and equal gains


def _zero_gains(n_value):
    import sympy as sp

    hyps = (
        width_hypothesis(n_value, _WIDTH),
        Hypothesis("zero gains", r"exactly $k$ of the gains are non-zero, $0 \le k \le n$", ""),
    )
    text = (
        r"Coordinates with $a_i = 0$ are constant ($z_i = b_i$). The image spans an affine subspace of dimension "
        r"$\operatorname{rank}(\operatorname{diag}(a) P \operatorname{diag}(a)) = k$ when $k < n$ (the block of "
        r"non-zero gains is invertible) and $n - 1$ when $k = n$; for $\epsilon = 0$ and $k = n - 1$ the image is "
        r"an ellipsoid surface of dimension $k - 1$."
    )
    latex = r"a_i = 0 \Rightarrow z_i = b_i;\quad \operatorname{rank}(\operatorname{diag}(a) P \operatorname{diag}(a)) = k\ (k < n),\ n - 1\ (k = n)"
    if n_value is None:
        _, s, n, i, j, k_, a, _ = _gen()
        y, b = s["y"], s["b"]
        kk = sp.Symbol("k", positive=True, integer=True)
        m = sp.Symbol("m", positive=True, integer=True)  # m = n - k > 0 zero gains
        c = sp.Symbol("c", real=True)
        steps = (
            Step(
                "$z_i = a_i y_i + b_i$ with $a_i = 0$ is $b_i$", a[i] * y[i] + b[i], b[i], "expand", where=((a[i], 0),)
            ),
            Step(
                "Row $i$ of $A P A$ vanishes when $a_i = 0$",
                a[i] * (sp.KroneckerDelta(i, j) - 1 / n) * a[j],
                0,
                "expand",
                where=((a[i], 0),),
            ),
            Step(
                r"A null vector $v$ of the non-zero block $D^2 - a a^T/n$ has $v_j = c/a_j$ with $c = a^T v/n$, and then "
                r"$c - \tfrac{1}{n} \sum_{j \le k} a_j v_j = c (1 - k/n)$",
                c - sp.Sum(a[j] * (c / a[j]), (j, 1, kk)) / n,
                c * (1 - kk / n),
                _SUMS,
            ),
            Step(
                r"For $k < n$ ($n = k + m$, $m \ge 1$) the factor $1 - k/n$ is positive, so $c = 0$, $v = 0$: the block is "
                "invertible",
                1 - kk / (kk + m),
                0,
                _SIGN,
                relation=">",
            ),
            Step(
                "For $k = n$ the factor vanishes and $v = 1/a$ spans the kernel (rank $n - 1$)",
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
        R2 = sp.Sum(p[k] ** 2, (k, 1, n))
        mean = sp.Sum(x[k], (k, 1, n)) / n
        steps = (
            Step(
                r"$A P A = (c I)(I - \tfrac{1}{n} J)(c I) = c^2 P$",
                (c * I) * (I - J / n) * (c * I),
                c**2 * (I - J / n),
                "rewrite J^2 = nJ",
                data=(n,),
            ),
            Step(
                r"$c^2 P$ has eigenvalue $c^2$ on $\mathbf{1}^\perp$",
                c**2 * (I - J / n),
                c**2,
                "apply to v orthogonal to 1 (J v = 0)",
                data=(n,),
            ),
            semi,
            Step(
                r"$\|z - b\|^2 = \sum_j (c g_j)^2 = c^2 n$ for $g$ on the sphere of radius $\sqrt{n}$",
                sp.Sum((c * sp.sqrt(n) * p[j] / sp.sqrt(R2)) ** 2, (j, 1, n)),
                c**2 * n,
                _SUMS,
            ),
            Step(
                r"$\mathbf{1}^T (z - b)$ is $c \sum_j (x_j - \bar{x})$ times the radial scale, which is $0$",
                sp.Sum(c * (x[j] - mean), (j, 1, n)),
                0,
                _SUMS,
            ),
        )
        concl = (
            Step(
                r"$\|z - b\| = |c|\sqrt{n}$",
                sp.sqrt(sp.Sum((c * sp.sqrt(n) * p[j] / sp.sqrt(R2)) ** 2, (j, 1, n))),
                sp.Abs(c) * sp.sqrt(n),
                _SUMS,
            ),
            steps[4],
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
    return Theorem("ellipsoid.equal_gains", "Equal gains give a sphere", text, latex, hyps, steps, concl, n=n_value)


def theorems(n: int | None = None, convention: str = "torch") -> list:
    """The ellipsoid theorems for general n or width ``n``; ``convention`` is used for eps > 0."""
    return [
        _hyperplane(n),
        _equation(n, convention),
        _principal_axes(n),
        _riechers(n),
        _secular(n),
        _interlacing(n),
        _zero_gains(n),
        _equal_gains(n),
    ]
