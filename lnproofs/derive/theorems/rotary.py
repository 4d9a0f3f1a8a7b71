"""Rotary positions (RoPE): with exact rotations the score of positions i and j depends on j - i only."""

from __future__ import annotations

from ..theorem import Hypothesis, Step, Theorem
from .rmsnorm import _hyps

__all__ = ["theorems"]


def _rotary(n_value):
    """RoPE: R(a)^T R(b) = R(b - a) for every 2 x 2 block, so (R_i q) . (R_j k) = q . R_{j-i} k."""
    import sympy as sp

    def block(angle):
        return sp.Matrix([[sp.cos(angle), -sp.sin(angle)], [sp.sin(angle), sp.cos(angle)]])

    hyps = (
        _hyps(n_value)[0],
        Hypothesis(
            "rotary",
            r"$R_p = \operatorname{diag}(R(p\theta_1), \dots, R(p\theta_{n/2}))$ "
            r"(identity on an odd last coordinate) with $R(\theta) = \left(\begin{smallmatrix} \cos \theta & "
            r"-\sin \theta \\ \sin \theta & \cos \theta \end{smallmatrix}\right)$",
            r"R_p = \oplus_i R(p\theta_i)",
        ),
    )
    a, b = sp.symbols("a b", real=True)
    Ra, Rb, Rba = (sp.MatrixSymbol(name, 2, 2) for name in ("R(a)", "R(b)", "R(b - a)"))
    blocks = ((Ra, block(a)), (Rb, block(b)), (Rba, block(b - a)))
    steps = (
        Step(
            r"For one block and angles $a, b$ (then $a = p\theta_l$, $b = p'\theta_l$):",
            Ra.T * Rb,
            Rba,
            "simplify-to-zero",
            why=r"$\cos a \cos b + \sin a \sin b = \cos(b - a)$",
        ),
        Step("", Ra.T * Ra, sp.Identity(2), "simplify-to-zero", why=r"$\cos^2 a + \sin^2 a = 1$"),
    )
    if n_value is None:
        concl = steps
    else:
        theta = sp.symbols(f"theta1:{n_value // 2 + 1}", real=True)
        i, jj = sp.symbols("i j", real=True)

        def full(p):
            return sp.diag(*[block(p * th) for th in theta], *([1] if n_value % 2 else []))

        concl = (
            Step(
                f"$R_i^T R_j = R_{{j - i}}$ for width ${n_value}$ (explicit)",
                full(i).T * full(jj),
                full(jj - i),
                "simplify-to-zero",
            ),
        )
    return Theorem(
        "rotary.relative",
        "Rotary positions: the score of positions $i, j$ depends on $j - i$ only",
        r"With exact rotations, $(R_i q) \cdot (R_j k) = q \cdot R_i^T R_j k = q \cdot R_{j-i} k$. Tables of "
        r"$\cos$ and $\sin$ rounded to floating point are not exact rotations; Theorem coverage.argmax_direction "
        "treats such tables.",
        r"(R_i q)\cdot(R_j k) = q \cdot R_{j-i}\, k",
        hyps,
        steps,
        concl,
        n=n_value,
        definitions=blocks,
    )


def theorems(n: int | None = None, convention: str = "torch") -> list:
    """The rotary theorem for general n or width ``n``."""
    return [_rotary(n)]
