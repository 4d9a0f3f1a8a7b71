"""The principal axes of LayerNorm's ellipsoid, and their agreement with the Riechers form.

Notation: ``A = diag(a)``, ``P = I - 1 1^T / n``, ``M = A P A``, ``w = (1/a_1, ..., 1/a_n)``,
``H = {z : w^T z = 0} = A U`` with ``U = 1^perp``, ``P_2 = I - w w^T / (w^T w)`` and
``N = P_2 A^-2 P_2``.  For general n a vector of ``U`` is written ``y = P q``; for a concrete n
the proofs use explicit matrices with the fixed rational gains of :func:`sample_gains`.
"""

from __future__ import annotations

from ..theorem import Hypothesis, Step, Theorem
from . import width_hypothesis
from .ellipsoid import _NONZERO, _SQUARES, _SUMS, _WIDTH, _gen, n_sym, sample_gains

__all__ = ["theorems", "principal_axes", "riechers", "charpoly", "explicit_matrices"]


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


def principal_axes(n_value):
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
            source="hornjohnson2013",
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


def explicit_matrices(n):
    import sympy as sp

    a = [sp.Rational(g.numerator, g.denominator) for g in sample_gains(n)]
    A = sp.diag(*a)
    P = sp.eye(n) - sp.ones(n, n) / n
    w = sp.Matrix([1 / g for g in a])
    P2 = sp.eye(n) - w * w.T / (w.T * w)[0]
    M = A * P * A
    N = P2 * A.inv() ** 2 * P2
    return M, N, P2, w, A * P


def charpoly(matrix, symbol):
    """det(symbol I - matrix) as a SymPy polynomial expression in ``symbol``."""
    import sympy as sp
    from sympy.polys.matrices import DomainMatrix

    dm = DomainMatrix.from_Matrix(symbol * sp.eye(matrix.shape[0]) - matrix)
    return dm.domain.to_sympy(dm.det())


def _explicit_symbols(n):
    """Matrix symbols A, P, M, N, P2, w and their explicit values (sample gains)."""
    import sympy as sp

    M, N, P2, w, L = explicit_matrices(n)
    a = [sp.Rational(g.numerator, g.denominator) for g in sample_gains(n)]
    values = {"A": sp.diag(*a), "P": sp.eye(n) - sp.ones(n, n) / n, "M": M, "N": N, "P2": P2, "w": w}
    S = {k: sp.MatrixSymbol(k if k != "P2" else "P_2", *v.shape) for k, v in values.items()}
    return S, tuple((S[k], values[k]) for k in ("A", "P", "M", "N", "P2", "w"))


def riechers(n_value):
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
        M, N, P2, w, _ = explicit_matrices(n_value)
        S, bind = _explicit_symbols(n_value)
        x = sp.Symbol("x")
        qm = sp.cancel(charpoly(M, x) / x)
        qn = sp.cancel(charpoly(N, x) / x)
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


def theorems(n: int | None = None, convention: str = "torch") -> list:
    """The principal axes and the Riechers form, for general n or width ``n``."""
    return [principal_axes(n), riechers(n)]
