"""The principal axes of LayerNorm's ellipsoid, and their agreement with the Riechers form.

Notation: ``A = diag(a)``, ``P = I - 1 1^T / n``, ``M = A P A``, ``w = (1/a_1, ..., 1/a_n)``,
``H = {z : w^T z = 0} = A U`` with ``U = 1^perp``, ``P_2 = I - w w^T / (w^T w)`` and
``N = P_2 A^-2 P_2``.  For general n a vector of ``U`` is written ``y = P q``; for a concrete n
the proofs use explicit matrices with the fixed rational gains of :func:`sample_gains`.
"""

from __future__ import annotations

import dataclasses

from ..theorem import Hypothesis, Step, Theorem
from . import routine, width_hypothesis
from .ellipsoid import _NONZERO, _SQUARES, _SUMS, _WIDTH, _gen, n_sym, sample_gains

__all__ = ["theorems", "principal_axes", "riechers", "charpoly", "explicit_matrices"]


# ---------------------------------------------- principal axes / Riechers form


def _perp(n, k, name):
    """A vector of ``1^perp`` as a named quantity: ``name_t = q_t - (1/n) sum_k q_k`` (every such vector is one)."""
    import sympy as sp

    q, t = sp.IndexedBase("q", real=True), sp.Symbol("t", positive=True, integer=True)
    f = sp.Function(name)
    return f, (f, sp.Lambda((t,), q[t] - sp.Sum(q[k], (k, 1, n)) / n))


def _inverse_on_h():
    """Routine checks that ``N`` inverts ``M`` on ``H``, entrywise for ``z = A y`` with
    ``y_t = q_t - (1/n) sum_k q_k``: ``w^T z = 0``, ``N z``, ``M N z = z``, ``A^-2 M z`` and
    ``N M z = z``."""
    sp, s, n, i, j, k, a, y = _gen()
    W = sp.Sum(1 / a[k] ** 2, (k, 1, n))
    T = sp.Sum(y(k) / a[k] ** 2, (k, 1, n))

    def Nz(t):  # (N z)_t
        return (y(t) - T / W) / a[t]

    C = sp.Sum(a[k] ** 2 * y(k), (k, 1, n)) / n

    def v(t):  # (A^-2 M z)_t
        return a[t] * y(t) - C / a[t]

    where = r"for $z = A y$, $y_t = q_t - \tfrac{1}{n} \sum_k q_k$"
    return routine(
        Step(
            rf"$w^T z = \sum_j (1/a_j) a_j y_j = \mathbf{{1}}^T y = 0$ {where}, so $P_2 z = z$",
            sp.Sum(a[j] * y(j) / a[j], (j, 1, n)),
            0,
            _SUMS,
        ),
        Step(
            rf"$(N z)_i = (P_2 A^{{-2}} z)_i$ {where}",
            y(i) / a[i] - (1 / a[i]) * sp.Sum((1 / a[j]) * y(j) / a[j], (j, 1, n)) / W,
            Nz(i),
            _SUMS,
        ),
        Step(
            rf"$(M N z)_i = a_i y_i = z_i$ {where}",
            a[i] * (a[i] * Nz(i) - sp.Sum(a[j] * Nz(j), (j, 1, n)) / n),
            a[i] * y(i),
            _SUMS,
        ),
        Step(
            rf"$(A^{{-2}} M z)_i = z_i - C w_i$ with $C = \tfrac{{1}}{{n}} \sum_j a_j^2 y_j$, {where}",
            (a[i] ** 2 * y(i) - sp.Sum(a[j] ** 2 * y(j), (j, 1, n)) / n) / a[i],
            v(i),
            _SUMS,
        ),
        Step(
            rf"$(N M z)_i = (P_2 (z - C w))_i = z_i$ {where}",
            v(i) - (1 / a[i]) * sp.Sum(v(j) / a[j], (j, 1, n)) / W,
            a[i] * y(i),
            _SUMS,
        ),
    )


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
            "the spectral theorem for real symmetric matrices",
            r"a real symmetric $n \times n$ matrix has an orthonormal basis of eigenvectors, and a subspace it maps "
            r"into itself has one made of eigenvectors",
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
    definitions = ()
    if n_value is None:
        _, s, n, i, j, k, a, _ = _gen()
        y = s["y"]
        v, v_def = _perp(n, k, "v")
        z, w, t = sp.Function("z"), sp.Function("w"), sp.Symbol("t", positive=True, integer=True)
        definitions = (v_def, (z, sp.Lambda((t,), a[t] * v(t))), (w, sp.Lambda((t,), 1 / a[t])))
        steps = (
            Step(
                r"For $v \in \mathbf{1}^\perp$, $z = A v$ lies in $H$ (and $A^{-1}$ maps $H$ back into "
                r"$\mathbf{1}^\perp$):",
                sp.Sum(z(j) / a[j], (j, 1, n)),
                0,
                _SUMS,
                why=r"$w^T z = \mathbf{1}^T v$",
            ),
            Step(
                r"So by Theorem ellipsoid.equation the image for $\epsilon = 0$ is "
                r"$b + E$, $E = \{z \in H : z^T A^{-2} z = n\}$: for $z \in E$, $v = A^{-1} z$ has $\|v\|^2 = n$ "
                r"and $g(P v) = v$ (Lemma projection.kernel). $M$ maps into $H$ and $M w = 0$:",
                sp.Sum(a[i] * (sp.KroneckerDelta(i, j) - 1 / n) * a[j] * w(j), (j, 1, n)),
                0,
                _SUMS,
                why=r"$(M w)_i$",
            ),
            Step(
                r"Let $u = A v$ and $u' = A y$ be eigenvectors of $M$ in $H$, $M u' = \lambda' u'$, that is "
                r"$P A^2 y = \lambda' y$. Then $\lambda' v^T y = v^T P A^2 y$ is",
                sp.Sum(v(i) * (a[i] ** 2 * y[i] - sp.Sum(a[j] ** 2 * y[j], (j, 1, n)) / n), (i, 1, n)),
                sp.Sum(a[i] ** 2 * v(i) * y[i], (i, 1, n)),
                _SUMS,
                why=r"$= u^T u'$",
            ),
        )
        axis = (
            dataclasses.replace(
                axis[0],
                description=r"For orthonormal eigenvectors $u_1, \dots, u_{n-1}$ of the symmetric $M$ in $H$ "
                r"(the spectral theorem) this gives $u_k^T A^{-2} u_l = v_k^T v_l = \delta_{kl} / \lambda_l$ with "
                r"$\lambda_l > 0$, so $z = \sum_k t_k u_k$ is in $E$ iff $\sum_k t_k^2/\lambda_k = n$: the semi-axis "
                r"along $u_k$ is the $t > 0$ with",
            ),
        )
        inverse = _inverse_on_h()
        entry = Step(
            "$(A P)(A P)^T = A P P^T A = A P A = M$, entrywise",
            sp.Sum(a[i] * (sp.KroneckerDelta(i, k) - 1 / n) * a[j] * (sp.KroneckerDelta(j, k) - 1 / n), (k, 1, n)),
            a[i] * (sp.KroneckerDelta(i, j) - 1 / n) * a[j],
            _SUMS,
        )
        steps += axis + routine(entry) + inverse[1:]
        concl = axis + steps[2:3] + inverse[2:3] + inverse[4:]
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
        "ellipsoid.principal_axes",
        "Principal axes and semi-axes",
        text,
        latex,
        hyps,
        steps,
        concl,
        n=n_value,
        definitions=definitions,
        uses=("ellipsoid.hyperplane", "ellipsoid.equation", "projection.kernel"),
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
    definitions = ()
    if n_value is None:
        _, s, n, i, j, k, a, _ = _gen()
        v, v_def = _perp(n, k, "v")
        z, u, t = sp.Function("z"), sp.Function("u"), sp.Symbol("t", positive=True, integer=True)
        C, W = sp.Symbol("C", real=True), sp.Symbol(r"\|w\|", positive=True)
        definitions = (
            v_def,
            (z, sp.Lambda((t,), a[t] * v(t))),
            (C, sp.Sum(a[k] ** 2 * v(k), (k, 1, n)) / n),
            (W, sp.sqrt(sp.Sum(1 / a[k] ** 2, (k, 1, n)))),
            (u, sp.Lambda((t,), z(t) - C / a[t])),
        )
        steps = (
            Step(
                r"Let $z = A v \in H$ with $v \in \mathbf{1}^\perp$ (Theorem ellipsoid.principal_axes). Then "
                r"$A z = A^2 v$ and $P A^2 v = A^2 v - C \mathbf{1}$, so $u = A^{-2} M z = A^{-1} P A^2 v$ has",
                (a[i] ** 2 * v(i) - C) / a[i],
                u(i),
                _SUMS,
                why=r"$u = z - C w$",
            ),
            Step(
                r"and $P_2$ fixes $z$ and removes $w$: $N M z = P_2 u$ has the entries",
                u(i) - sp.Sum(u(j) / a[j], (j, 1, n)) / (a[i] * W**2),
                z(i),
                _SUMS,
            ),
            dataclasses.replace(
                same,
                description=r"So $N M = P_2$ (also $M w = 0$), and $M N = (N M)^T = P_2$; an eigenvector $u \in H$ of "
                r"$M$ with eigenvalue $\lambda$ has $N u = u / \lambda$, and",
            ),
        )
        inverse = _inverse_on_h()
        steps += inverse[:3]
        concl = steps[1:3] + inverse[2:3]
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
        "ellipsoid.riechers_form",
        "Agreement with the Riechers form",
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
    """The principal axes and the Riechers form, for general n or width ``n``."""
    return [principal_axes(n), riechers(n)]
