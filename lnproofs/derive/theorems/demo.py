"""The interactive demonstration of Brody, Alon and Yahav: the exact threshold of its key scale.

Four keys in the plane, the third scaled by ``m``; the second key is selectable exactly when ``m``
is below the root of a collinearity determinant.
"""

from __future__ import annotations

from ..theorem import Hypothesis, Step, Theorem
from . import routine
from .attention import _SELECT, _SIGN

__all__ = ["theorems", "demo_keys", "collinearity"]


# ------------------------------------------------------------------- the demo


def demo_keys(m):
    import sympy as sp

    from .. import demo_config as cfg

    keys = []
    for index, angle in enumerate(cfg.KEY_ANGLES_DEG):
        theta = sp.pi * sp.Rational(str(angle)) / 180
        scale = m if index == cfg.ADJUSTABLE_KEY else 1
        keys.append(sp.Matrix([scale * sp.cos(theta), scale * sp.sin(theta)]))
    return keys


def collinearity(keys):
    """det[k_adj - k_left, k_watched - k_left]: zero when the watched key is on the segment's line."""
    import sympy as sp

    from .. import demo_config as cfg

    left, adj, watched = keys[cfg.WATCHED_KEY - 1], keys[cfg.ADJUSTABLE_KEY], keys[cfg.WATCHED_KEY]
    return sp.expand(sp.Matrix.hstack(adj - left, watched - left).det())


def _demo():
    import sympy as sp

    from .. import demo_config as cfg

    m = sp.Symbol("m", positive=True)
    keys = demo_keys(m)
    k1, k2, k3, k4 = keys
    D = collinearity(keys)
    mstar = sp.sympify(cfg.THRESHOLD_TEXT)
    half = sp.sqrt(2) / 2
    q = sp.Matrix([m, 1])  # normal to k3 - k1 = (-1, m), pointing away from the origin
    s = sp.Symbol("s", positive=True)  # m = m* + s above the threshold, or m = 1 + s in general
    beta = half / m
    alpha = (1 - beta + half) / 2
    gamma = (1 - beta - half) / 2
    angles = ", ".join(f"{angle:g}" for angle in cfg.KEY_ANGLES_DEG)
    text = (
        f"In the demonstration of Brody, Alon and Yahav (keys at angles {angles} degrees, key 3 scaled by $m > 0$), key 2 is "
        rf"selectable iff $m < m^* = {sp.latex(mstar)}$: the threshold solves the collinearity of keys 1, 2 and $m$ "
        r"times key 3; below it $q = (m, 1)$ is a witness, at it keys 1, 2, 3 tie, above it key 2 is a convex "
        "combination of keys 1, 3 and 4."
    )
    latex = r"\text{key 2 selectable} \iff m < m^* = " + sp.latex(mstar)
    hyps = (
        _SELECT,
        Hypothesis(
            "demo",
            r"$k_1 = (1, 0)$, $k_2 = \tfrac{\sqrt{2}}{2} (1, 1)$, $k_3 = (0, m)$, $k_4 = (-1, 0)$ with $m > 0$, and "
            r"$D(m) = \det[k_3 - k_1, k_2 - k_1]$",
            "",
        ),
    )
    Q = sp.MatrixSymbol("q", 2, 1)
    K = [sp.MatrixSymbol(f"k_{t + 1}", 2, 1) for t in range(4)]
    Ds = sp.Symbol("D(m)")
    al, be, ga = sp.symbols("alpha beta gamma")
    bind = ((Q, q),) + tuple(zip(K, keys)) + ((Ds, D),)
    wts = ((al, alpha), (be, beta), (ga, gamma))
    zero = sp.ZeroMatrix(1, 1)
    steps = (
        Step(
            r"Below the threshold the witness $q = (m, 1)$ has gaps",
            Q.T * (K[1] - K[0]),
            -Ds * sp.Identity(1),
            "simplify-to-zero",
        ),
        Step("", Q.T * (K[1] - K[2]), -Ds * sp.Identity(1), "simplify-to-zero"),
        Step(r"and $q^T (k_2 - k_4)$ is", (q.T * (k2 - k4))[0], 0, _SIGN, relation=">"),
        Step(
            r"and $-D(m) > 0$ exactly for",
            -D > 0,
            sp.Interval.open(0, mstar),
            "solve",
            data=(m, sp.Interval.open(0, sp.oo)),
        ),
        Step(
            r"At $m = m^*$ the witness ties, $D(m^*) = 0$. For $m \ge m^*$ the weights $\alpha, \beta, \gamma$ give",
            al * K[0] + be * K[2] + ga * K[3],
            K[1],
            "simplify-to-zero",
        ),
        Step("", al + be + ga, 1, "simplify-to-zero"),
        Step(
            r"with $\gamma$, $\beta$ and, as $m^* > 1$, $\alpha$ positive above the threshold:",
            ga,
            Ds / (2 * m),
            "simplify-to-zero",
        ),
        Step("", ga, 0, _SIGN, relation=">", where=((m, mstar + s),), why=r"$m = m^* + s$, $s > 0$"),
        Step("", al, 0, _SIGN, relation=">", where=((m, 1 + s),), why=r"$m = 1 + s$"),
        Step("", be, 0, _SIGN, relation=">"),
        Step("", Q.T * (K[1] - K[0]), zero, "simplify-to-zero", where=((m, mstar),), why="the tie at $m^*$"),
    )
    root = Step(
        r"The collinearity $D(m) = 0$ of $k_1, k_2, k_3$ has the single positive root $m^*$",
        D,
        sp.FiniteSet(mstar),
        "solve",
        data=(m, sp.Interval.open(0, sp.oo)),
    )
    steps += routine(
        root,
        Step(r"$D(m) = (1 - \sqrt{2}/2)(m - m^*)$", D, (1 - half) * (m - mstar), "simplify-to-zero"),
        Step(r"the factor $1 - \sqrt{2}/2$ of $D(m)$ is positive", 1 - half, 0, _SIGN, relation=">"),
    )
    concl = (steps[3], steps[7], steps[10], *routine(root))
    definitions = bind + wts
    return Theorem(
        "attention.demo_threshold",
        "The exact threshold of the demonstration's key scale",
        text,
        latex,
        hyps,
        steps,
        concl,
        definitions=definitions,
    )


def theorems(n: int | None = None, convention: str = "torch") -> list:
    """The demonstration's threshold: a planar configuration, with no width to make concrete."""
    return [_demo()] if n is None else []
