"""Affinely independent keys are all selectable, with a witness query and no search.

Keys ``k_0, ..., k_m`` whose matrix ``[K | 1]`` (each key with a 1 appended) has rank ``m + 1``
are the vertices of a simplex: for each ``i`` the differences ``d_j = k_i - k_j`` are the rows of
a full-row-rank ``D``, ``G = D D^T`` is invertible and ``q = D^T G^-1 1`` gives every gap
``q . (k_i - k_j)`` the value 1.  The rank can be certified modulo a prime (float keys are
integers times one power of two).  With at most ``n`` keys uniform attention exists as well.
"""

from __future__ import annotations

from ..theorem import Hypothesis, Step, Theorem, general_symbols
from . import routine, width_hypothesis
from .attention import _SELECT, _WIDTH

__all__ = ["theorems"]

_SUMS = "finite sums and Kronecker deltas"
_SIGN = "sign under assumptions"


def _minor_steps():
    """The row operation and the scaling of the keys on a 3 x 3 instance (three keys in the plane)."""
    import sympy as sp

    a, b, c = (sp.symbols(f"{name}1:3", real=True) for name in "abc")
    s = sp.Symbol("s", positive=True)
    M, Dm = sp.MatrixSymbol("M", 3, 3), sp.MatrixSymbol("D", 2, 2)
    rows = (a, b, c)
    return (
        Step(
            r"Instance ($m = n = 2$, keys $a, b, c$): subtracting row $1$ from the others and expanding along "
            r"the column of ones gives $\det [K \mid \mathbf{1}] = \det D$ with rows $d_j = a - k_j$",
            sp.Matrix([[*k, 1] for k in rows]),
            sp.Determinant(Dm),
            "determinant lemma",
            where=((Dm, sp.Matrix([[a[t] - k[t] for t in range(2)] for k in (b, c)])),),
        ),
        Step(
            r"Keys scaled by $s = 2^e$ (integers from floats): a minor of $[K \mid \mathbf{1}]$ is multiplied by "
            r"$s^m \ne 0$, so the rank is kept",
            sp.Matrix([[s * k[0], s * k[1], 1] for k in rows]),
            s**2 * sp.Determinant(M),
            "determinant lemma",
            where=((M, sp.Matrix([[*k, 1] for k in rows])),),
        ),
    )


def _simplex(n_value):
    import sympy as sp

    text = (
        r"Let the keys $k_0, \dots, k_m \in \mathbb{R}^n$ be affinely independent, and let $D$ have the rows "
        r"$d_j = k_0 - k_j$ ($j = 1, \dots, m$). Then $G = D D^T$ is invertible and $q = D^T G^{-1} \mathbf{1}$ "
        r"has $q \cdot k_0 - q \cdot k_j = 1$ for every $j$: every key is selectable, with no search. With at most "
        r"$n$ keys ($m < n$) some $q \ne 0$ gives all keys the same score (uniform attention); with $n + 1$ keys "
        r"$D$ is square and invertible, and none does. For keys with integer coordinates (floats times one power "
        r"of two) a minor of $[K \mid \mathbf{1}]$ that is non-zero modulo a prime is a non-zero integer, so rank "
        r"$m + 1$ modulo a prime proves affine independence."
    )
    latex = (
        r"\operatorname{rank}[K \mid \mathbf{1}] = m + 1 \Rightarrow q = D^T (D D^T)^{-1} \mathbf{1}:\ "
        r"q^T k_i - q^T k_j = 1 > 0\ (j \ne i)"
    )
    hyps = (
        width_hypothesis(n_value, _WIDTH),
        _SELECT,
        Hypothesis(
            "affinely independent",
            r"$[K \mid \mathbf{1}]$, the keys as rows with a $1$ appended, has rank $m + 1$",
            "",
        ),
        Hypothesis(
            "the invariance of rank under invertible row and column operations",
            r"subtracting the first row of $[K \mid \mathbf{1}]$ from the others and clearing its last column keeps "
            r"the rank, which is then $1 + \operatorname{rank} D$: $D$ has rank $m$ and $D^T c = 0$ only for $c = 0$",
            "",
            source="hornjohnson2013",
        ),
    )
    if n_value is None:
        n, m = general_symbols()["n"], sp.Symbol("m", positive=True, integer=True)
        j, l, t = (sp.Symbol(name, positive=True, integer=True) for name in "jlt")
        q, k, d, c, v, h = (sp.IndexedBase(name, real=True) for name in ("q", "k", "d", "c", "v", "h"))
        r = sp.Symbol("r", positive=True, integer=True)

        def dq(f):  # sum_t f(t) (D^T c)_t
            return sp.Sum(f * sp.Sum(d[l, t] * c[l], (l, 1, m)), (t, 1, n))

        gram = sp.Sum(c[l] * sp.Sum(d[j, t] * d[l, t], (t, 1, n)), (l, 1, m))
        steps = [
            Step(
                r"Let $d_{jt}$ be the coordinates of $d_j$. The gap of $q$ is",
                sp.Sum(q[t] * k[0, t], (t, 1, n)) - sp.Sum(q[t] * k[j, t], (t, 1, n)),
                sp.Sum((k[0, t] - k[j, t]) * q[t], (t, 1, n)),
                _SUMS,
                why=r"$= (D q)_j$",
            ),
            Step(
                r"and for $q = D^T c$, with $G_{jl} = d_j \cdot d_l$ the entries of $G = D D^T$,",
                dq(d[j, t]),
                gram,
                _SUMS,
                why=r"$(D q)_j = (G c)_j$",
            ),
            Step(
                r"$G$ is invertible: $G c = 0$ gives $\|q\|^2 = c^T G c = 0$ for $q = D^T c$, as",
                dq(q[t]),
                sp.Sum(c[l] * sp.Sum(d[l, t] * q[t], (t, 1, n)), (l, 1, m)),
                _SUMS,
                why=r"$\|q\|^2 = c \cdot D q$",
            ),
            Step(
                r"so $q = D^T c = 0$ and $c = 0$ ($D$ has rank $m$). With $c = G^{-1} \mathbf{1}$ every gap is $1$. "
                r"For uniform attention, $q = v - D^T c$ has",
                sp.Sum(d[j, t] * (v[t] - sp.Sum(d[l, t] * c[l], (l, 1, m))), (t, 1, n)),
                sp.Sum(d[j, t] * v[t], (t, 1, n)) - gram,
                _SUMS,
                why=r"$(D q)_j = (D v)_j - (G c)_j$",
            ),
            Step(
                r"which is $0$ for $c = G^{-1} D v$. With $H = G^{-1} = (h_{jl})$, the $j$-th term of "
                r"$\operatorname{tr}(D^T H D)$ is",
                sp.Sum(d[j, t] * sp.Sum(h[j, l] * d[l, t], (l, 1, m)), (t, 1, n)),
                sp.Sum(h[j, l] * sp.Sum(d[j, t] * d[l, t], (t, 1, n)), (l, 1, m)),
                _SUMS,
                why=r"$= (H G)_{jj} = 1$",
            ),
            Step(
                r"so $\operatorname{tr}(I_n - D^T H D) = n - m$, positive for $m < n$ ($m = n - r$, $r \ge 1$): some "
                r"column $q = e_t - D^T H D e_t$ is non-zero, and $D q = 0$.",
                n - m,
                0,
                _SIGN,
                relation=">",
                where=((m, n - r),),
            ),
        ]
        gc = sp.Symbol("(G c)_j", real=True)
        gap_one = Step(
            r"$c = G^{-1} \mathbf{1}$ solves $G c = \mathbf{1}$, so every gap $(D q)_j = (G c)_j$ is $1 > 0$",
            gc,
            0,
            _SIGN,
            relation=">",
            where=((gc, 1),),
        )
        concl = (steps[0], steps[1], steps[3], steps[5], *routine(gap_one))
        steps += routine(gap_one, *_minor_steps())
    else:
        N = n_value
        x = sp.symbols(f"x1:{N + 1}", real=True)
        D = sp.Matrix(2, N, lambda a, b: sp.Symbol(f"d_{a + 1},{b + 1}", real=True))
        g11, g12, g22 = sp.symbols("g_11 g_12 g_22", real=True)
        dl = sp.Symbol("delta", real=True)
        E, M, F = sp.MatrixSymbol("E", 3, 3), sp.MatrixSymbol("M", 3, N + 1), sp.MatrixSymbol("F", N + 1, N + 1)
        Ds, Q, V = sp.MatrixSymbol("D", 2, N), sp.MatrixSymbol("q", N, 1), sp.MatrixSymbol("v", N, 1)
        A, H, one = sp.MatrixSymbol("A", 2, 2), sp.MatrixSymbol("H", 2, 2), sp.MatrixSymbol("1", 2, 1)
        Ev = sp.Matrix([[1, 0, 0], [-1, 1, 0], [-1, 0, 1]])
        Fv = sp.eye(N + 1)
        Fv[N, :N] = -sp.Matrix([x])
        Mv = sp.Matrix([[*x, 1]] + [[x[t] - D[r, t] for t in range(N)] + [1] for r in range(2)])
        G = D * D.T
        inv = (
            (H, A / dl),
            (A, sp.Matrix([[g22, -g12], [-g12, g11]])),
            (dl, g11 * g22 - g12**2),
            (g11, G[0, 0]),
            (g12, G[0, 1]),
            (g22, G[1, 1]),
            (Ds, D),
        )
        minors = sum(
            ((D[0, a] * D[1, b] - D[0, b] * D[1, a]) ** 2 for a in range(N) for b in range(a + 1, N)), sp.Integer(0)
        )
        steps = [
            Step(
                r"Rows $1, 2$ minus row $0$ ($E$), then column $t$ minus $x_t$ times the last ($F$): "
                r"$E M F = \begin{pmatrix} 0 & 1 \\ -D & 0 \end{pmatrix}$, so "
                r"$\operatorname{rank} M = 1 + \operatorname{rank} D$",
                E * M * F,
                sp.Matrix([[0] * N + [1]] + [[-D[r, t] for t in range(N)] + [0] for r in range(2)]),
                "expand",
                where=((E, Ev), (M, Mv), (F, Fv)),
            ),
            Step("$E$ is invertible", Ev, 1, "determinant lemma"),
            Step("$F$ is invertible", Fv, 1, "determinant lemma"),
            Step(
                r"$\delta = \det G$ is the sum of the squared $2 \times 2$ minors of $D$: positive exactly when $D$ "
                "has rank $2$",
                dl,
                minors,
                "expand",
                where=inv[2:],
            ),
            Step(
                r"$A$, the adjugate of $G = D D^T$, has $G A = \delta I$: $H = A / \delta$ is $G^{-1}$",
                Ds * Ds.T * A,
                dl * sp.eye(2),
                "expand",
                where=inv[1:],
            ),
            Step(
                r"Witness: $q = D^T A \mathbf{1} = \delta\, D^T G^{-1} \mathbf{1}$ has $D q = \delta \mathbf{1}$, "
                r"every gap $q \cdot (k_0 - k_j) = \delta > 0$ ($1$ for $q / \delta$)",
                Ds * Q,
                dl * sp.ones(2, 1),
                "expand",
                where=((Q, Ds.T * A * one),) + inv[1:] + ((one, sp.ones(2, 1)),),
            ),
        ]
        if N > 2:
            steps += [
                Step(
                    r"Uniform attention ($m = 2 < n$): $q = \delta v - D^T A D v$ has $D q = 0$",
                    Ds * Q,
                    sp.zeros(2, 1),
                    "expand",
                    where=((Q, dl * V - Ds.T * A * Ds * V),)
                    + inv[1:]
                    + ((V, sp.Matrix(sp.symbols(f"v1:{N + 1}", real=True))),),
                ),
                Step(
                    rf"and $\operatorname{{tr}}(\delta I - D^T A D) = ({N} - 2) \delta > 0$: some such $q$ "
                    "(with $v = e_t$) is non-zero",
                    sp.Trace(dl * sp.Identity(N) - Ds.T * A * Ds),
                    (N - 2) * dl,
                    "expand",
                    where=inv[1:],
                ),
            ]
        else:
            steps.append(
                Step(
                    r"With $n + 1 = 3$ keys $D$ is square and $D^T H D = I$: $D q = 0$ forces "
                    r"$q = D^T H (D q) = 0$, no uniform attention",
                    Ds.T * H * Ds,
                    sp.eye(2),
                    "simplify-to-zero",
                    where=inv,
                )
            )
        steps.append(_minor_steps()[1])
        # an explicit simplex: e_1, ..., e_n and 0; the vertex e_1 has q = e_1
        e1 = sp.Matrix([1] + [0] * (N - 1))
        D0 = sp.Matrix([(e1 - sp.eye(N)[:, r]).T for r in range(1, N)] + [e1.T])
        Ds0, G0, one0 = sp.MatrixSymbol("D", N, N), sp.MatrixSymbol("G", N, N), sp.MatrixSymbol("1", N, 1)
        steps += [
            Step(
                rf"Instance: the keys $e_1, \dots, e_{{{N}}}, 0$ have $\det [K \mid \mathbf{{1}}] = 1$",
                sp.Matrix([[*sp.eye(N)[r, :], 1] for r in range(N)] + [[0] * N + [1]]),
                1,
                "determinant lemma",
            ),
            Step(
                r"for the vertex $e_1$, $q = D^T G^{-1} \mathbf{1} = e_1$ with $G = D D^T$",
                Ds0.T * G0.I * one0,
                e1,
                "expand",
                where=((G0, Ds0 * Ds0.T), (Ds0, D0), (one0, sp.ones(N, 1))),
            ),
            Step(
                r"and $q = e_1$ beats every other key by $1$: $D e_1 = \mathbf{1}$",
                Ds0 * e1,
                sp.ones(N, 1),
                "expand",
                where=((Ds0, D0),),
            ),
        ]
        concl = (steps[0], steps[5], steps[6], steps[-1])
    hyps += (
        ()
        if n_value is None
        else (
            Hypothesis(
                "instance",
                r"$m = 2$: the keys $k_0 = x$, $k_1 = x - d_1$, $k_2 = x - d_2$ with symbolic "
                r"entries, the rows of $M = [K \mid \mathbf{1}]$",
                "",
            ),
        )
    )
    return Theorem(
        "attention.simplex_vertices",
        "Affinely independent keys are all selectable",
        text,
        latex,
        hyps,
        tuple(steps),
        concl,
        n=n_value,
    )


def theorems(n: int | None = None, convention: str = "torch") -> list:
    """The simplex theorem for general n, or its explicit version for width ``n``."""
    return [_simplex(n)]
