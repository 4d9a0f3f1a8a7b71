"""The statement of each problem: its title, its introduction and the question of each answer field.

Every statement is written once, as text whose mathematics sits between ``$`` signs and uses
only commands of plain LaTeX and amsmath; the same text is valid Markdown for renderers with
maths (Jupyter, GitHub).  :func:`problem_parts` gives the statement of any problem; the sheets
(:mod:`.sheet`) and the notebook (:mod:`.notebook`) lay it out.
"""

from __future__ import annotations

from ..certificates.writers import format_fraction

__all__ = ["TITLES", "latex_escape", "vec_text", "keys_display", "problem_parts"]

TITLES = {
    "projection": "The centring projection",
    "sphere": "Onto the sphere, and inside it",
    "ellipsoid": "The ellipsoid of a LayerNorm",
    "selectability": "Which keys can win?",
    "uniform": "Uniform attention",
    "threshold": "The demo threshold",
    "vocab": "Tokens a model can never output",
    "rmsnorm": "RMSNorm's sphere",
    "interlacing": "The secular equation and interlacing",
    "softmax": "Softmax weights under a query ball",
    "causal": "A causal head's first stops",
    "rotary": "A rotary head's key set",
    "support": "The scores a query gives a LayerNorm's outputs",
    "centred": "Keys under centred queries",
}

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def latex_escape(text: str) -> str:
    """Plain text made safe for LaTeX text mode."""
    return "".join(_LATEX_SPECIAL.get(c, c) for c in str(text))


def vec_text(values) -> str:
    return "(" + ", ".join(format_fraction(v) if not isinstance(v, str) else v for v in values) + ")"


def keys_display(keys, per_line: int = 4) -> str:
    """The keys as display maths, at most ``per_line`` keys per display (so lines fit the page)."""
    items = [f"k_{{{i}}} = {vec_text(k)}" for i, k in enumerate(keys, 1)]
    rows = [items[start : start + per_line] for start in range(0, len(items), per_line)]
    return "\n".join(
        "$$" + ",\\quad ".join(row) + ("." if last else ",") + "$$" for last, row in ((r is rows[-1], r) for r in rows)
    )


def _vocab_parts(problem) -> tuple[list[str], list[tuple[str, str]]]:
    """The ``vocab`` statement: 8 tokens, hidden states in R^3, rows w_j and biases b_j two to a line."""
    count, dim = len(problem.rows), len(problem.rows[0])
    items = [
        f"w_{{{j}}} = {vec_text(row)},\\ b_{{{j}}} = {b}"
        for j, (row, b) in enumerate(zip(problem.rows, problem.bias), 1)
    ]
    display = "\n".join(
        "$$" + ",\\qquad ".join(items[s : s + 2]) + ("." if s + 2 >= len(items) else ",") + "$$"
        for s in range(0, len(items), 2)
    )
    intro = [
        f"A tiny language model has a vocabulary of {count} tokens and final hidden states "
        f"$h \\in \\mathbb R^{{{dim}}}$ (it has no final norm, so $h$ can be any vector). Token $j$ gets the "
        "logit $w_j^\\top h + b_j$ from row $w_j$ of the unembedding and the output bias $b_j$, and the model "
        "outputs the token whose logit is strictly the largest:",
        display,
    ]
    parts = [
        (
            "never",
            f"Which of these {count} tokens can this model never output, whatever $h$ is? Give the list "
            "of their numbers. Justify each never-output token with weights $\\lambda_j \\ge 0$ summing "
            "to 1 over other tokens such that $w_i = \\sum_j \\lambda_j w_j$ and "
            "$\\sum_j \\lambda_j b_j \\ge b_i$, and each other token with a hidden state $h$ that makes "
            "it win.",
        )
    ]
    return intro, parts


def latex_of(text: str) -> str:
    """An expression of the problem data (such as ``"sqrt(2)/2"``) as LaTeX."""
    import sympy as sp

    from .expressions import read_expression

    return sp.latex(read_expression(text))


def problem_parts(problem) -> tuple[list[str], list[tuple[str, str]]]:
    """(introduction paragraphs, [(answer field, question text)]) for a problem; maths in ``$...$``."""
    t = problem.topic
    if hasattr(problem, "statement"):
        return problem.statement()
    if t == "projection":
        n = problem.n
        intro = [
            f"Let $n = {n}$, $J = \\mathbf 1\\mathbf 1^\\top$ the ${n}\\times{n}$ matrix of ones and "
            f"$P = I - \\tfrac1{{{n}}}J$, so that $x - \\operatorname{{mean}}(x)\\mathbf 1 = Px$. "
            f"Let $x = {vec_text(problem.x)}$."
        ]
        parts = [
            ("P", "Write down $P$ with exact entries."),
            ("P_squared", "Compute $P^2$ entry by entry."),
            ("Px", "Compute $Px$."),
        ]
    elif t == "sphere":
        n = problem.n
        intro = [
            f"LayerNorm first centres, $y = Px$, then scales radially: with $\\varepsilon = 0$, "
            f"$g(y) = \\sqrt n\\, y/\\|y\\|$; with $\\varepsilon > 0$ (torch convention) "
            f"$g(y) = \\sqrt n\\, y/\\sqrt{{\\|y\\|^2 + n\\varepsilon}}$. Let $n = {n}$ and $x = {vec_text(problem.x)}$."
        ]
        parts = [
            ("Px", "Compute $Px$."),
            ("norm_Px", "Compute $\\|Px\\|$ exactly."),
            (
                "g",
                "With $\\varepsilon = 0$, compute $g(Px)$ and check that it lies on the sphere of radius "
                "$\\sqrt n$ in the hyperplane $\\mathbf 1^\\top z = 0$.",
            ),
            (
                "norm_g_eps",
                f"With $\\varepsilon = {format_fraction(problem.eps)}$, compute $\\|g(Px)\\|$ "
                "and compare it with $\\sqrt n$.",
            ),
        ]
    elif t == "ellipsoid":
        intro = [
            f"A LayerNorm on $\\mathbb R^{{{problem.n}}}$ with $\\varepsilon = 0$ has gain $a = {vec_text(problem.gain)}$ "
            f"and bias $b = {vec_text(problem.bias)}$. Its outputs $z = \\operatorname{{diag}}(a)\\,g(Px) + b$ fill an "
            f"ellipsoid of dimension ${problem.n - 1}$."
        ]
        parts = [
            ("center", "Give the centre of the ellipsoid."),
            ("normal", "Give a normal vector of the hyperplane that contains every output."),
            ("semi_axes", "Find the semi-axes exactly (for example with square roots)."),
        ]
    elif t == "selectability":
        intro = [
            f"Attention scores key $k_j$ with $q^\\top k_j$. Key $i$ is selectable if some query $q$ gives "
            f"$q^\\top k_i > q^\\top k_j$ for every $j \\ne i$. Consider the {len(problem.keys)} keys",
            keys_display(problem.keys),
        ]
        parts = [
            (
                "keys",
                "For each key decide whether it is selectable, tie-only (it can tie for the maximum but "
                "never win) or unselectable (strictly inside the convex hull of the keys). Justify "
                "'selectable' with a query $q$, and the other two with convex weights over the other "
                "keys that reproduce the key.",
            )
        ]
    elif t == "uniform":
        intro = [
            f"A LayerNorm with $\\varepsilon > 0$, gain $a = {vec_text(problem.gain)}$ and bias "
            f"$b = {vec_text(problem.bias)}$ produced the keys",
            keys_display(problem.keys),
        ]
        parts = [
            (
                "query",
                "Find a non-zero query $q$ that gives every output of this LayerNorm the same score "
                "(uniform attention), these keys among them.",
            )
        ]
    elif t == "threshold":
        mags = ", ".join(f"$m = {format_fraction(m)}$" for m in problem.magnitudes)
        c, s = (latex_of(v) for v in problem.key2)
        intro = [
            "In the attention demo the keys are $k_1 = (1, 0)$, the unit vector "
            f"$k_2 = ({c}, {s})$, $k_3 = (0, m)$ and $k_4 = (-1, 0)$: key 3 is scaled by a magnitude $m > 0$."
        ]
        parts = [
            ("threshold", "Find the exact magnitude $m$ at which key 2 stops being selectable."),
            ("status_at", f"Is key 2 selectable, tie-only or unselectable at {mags}?"),
        ]
    elif t == "vocab":
        intro, parts = _vocab_parts(problem)
    else:  # pragma: no cover - the problem classes are closed
        raise ValueError(t)
    return intro, parts
