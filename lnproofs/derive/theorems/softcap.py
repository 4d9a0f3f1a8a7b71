"""Soft-capped logits: the cap changes no argmax.

Gemma-2 caps its final logits, ``z_j -> c tanh(z_j / c)`` with one ``c > 0`` for every token
(``final_logit_softcapping``).  ``vocab.soft_cap``: the map is strictly increasing (its derivative
is ``1 / cosh(z / c)^2 > 0``, and ``f(x) - f(y) = c sinh((x - y) / c) / (cosh(x / c) cosh(y / c))``
is positive for ``x > y``), and equal logits stay equal; so for every hidden state the capped
logits have the same argmax set as the logits, and a token is the strict argmax of one exactly
when it is of the other.  Every status of a vocabulary certificate (a witness that makes a token
the strict argmax, evidence that none does) is a statement about argmax sets alone, so it holds for
the capped model as it is: :mod:`lnproofs.models.vocab` records the cap and certifies the logits.
"""

from __future__ import annotations

from ..theorem import Hypothesis, Step, Theorem
from . import width_hypothesis

__all__ = ["theorems"]

_WIDTH = "$n \\ge 2$ is an integer, the width of the final hidden state"


def _argmax(n_value):
    import sympy as sp

    x, y, z = sp.Symbol("x", real=True), sp.Symbol("y", real=True), sp.Symbol("z", real=True)
    c, s = sp.Symbol("c", positive=True), sp.Symbol("s", positive=True)

    def f(v):
        return c * sp.tanh(v / c)

    gap = c * sp.sinh((x - y) / c) / (sp.cosh(x / c) * sp.cosh(y / c))
    slope = Step(
        "the capped logit $f(z) = c \\tanh(z / c)$ has derivative $f'(z) = 1 / \\cosh(z / c)^2$",
        f(z),
        1 / sp.cosh(z / c) ** 2,
        "derivative",
        data=(z,),
    )
    rising = Step(
        "which is positive for every real $z$: $f$ is strictly increasing",
        1 / sp.cosh(z / c) ** 2,
        0,
        "sign under assumptions",
        relation=">",
    )
    difference = Step(
        "for two logits $x$ and $y$: $f(x) - f(y) = c \\sinh((x - y) / c) / (\\cosh(x / c) \\cosh(y / c))$",
        f(x) - f(y),
        gap,
        "simplify-to-zero",
    )
    order = Step(
        "with $x = y + s$, $s > 0$: the difference is positive, so $x > y$ gives $f(x) > f(y)$ "
        "(and, with the roles exchanged, $x < y$ gives $f(x) < f(y)$)",
        gap,
        0,
        "sign under assumptions",
        relation=">",
        where=((x, y + s),),
    )
    tie = Step(
        "and with $x = y$ the difference is $0$: equal logits stay equal",
        f(x) - f(y),
        0,
        "simplify-to-zero",
        where=((x, y),),
    )
    text = (
        "Let the logits of a final hidden state be $z_j = k_j \\cdot q + b_j$ and the capped logits "
        "$f(z_j) = c \\tanh(z_j / c)$ with one cap $c > 0$ for every token.  Then $f$ is strictly "
        "increasing: $z_i > z_j$ exactly when $f(z_i) > f(z_j)$, and $z_i = z_j$ exactly when "
        "$f(z_i) = f(z_j)$.  So for every $q$ the capped logits have the same argmax set as the logits, "
        "and token $i$ is the strict argmax of the capped logits exactly when it is of the logits: "
        "which tokens can be output, under any set of hidden states, does not depend on the cap."
    )
    latex = (
        r"c \tanh\frac{x}{c} - c \tanh\frac{y}{c} = \frac{c \sinh\frac{x - y}{c}}{\cosh\frac{x}{c} \cosh\frac{y}{c}}"
        r",\quad \operatorname{argmax}_j c \tanh\frac{z_j}{c} = \operatorname{argmax}_j z_j"
    )
    hyps = (
        width_hypothesis(n_value, _WIDTH),
        Hypothesis("cap", "$c > 0$, the same for every token", r"c > 0"),
        Hypothesis(
            "logits",
            "$z_j = k_j \\cdot q + b_j$ are real numbers, one per token, for the hidden state $q$",
            r"z_j \in \mathbb{R}",
        ),
    )
    return Theorem(
        "vocab.soft_cap",
        "Soft-capping the logits changes no argmax",
        text,
        latex,
        hyps,
        (slope, rising, difference, order, tie),
        (difference, order, tie),
        n=n_value,
    )


def theorems(n: int | None = None, convention: str = "torch") -> list:
    """The soft-cap theorem for general n or width ``n`` (the cap acts on each logit alone)."""
    return [_argmax(n)]
