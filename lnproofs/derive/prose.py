"""Prose with inline mathematics: the one convention of every theorem's words.

``Theorem.statement``, ``Hypothesis.text`` and ``Step.description`` are prose in which
every piece of mathematics is LaTeX between single dollar signs, e.g.
``"the entries of $P x$ are $x_i - \\bar{x}$"``.  The writers treat the two parts
apart: :func:`to_latex` escapes the prose and passes the mathematics through,
Markdown shows the text as it is (``$...$`` renders there), and :func:`to_plain` gives a
readable terminal form (dollar signs and the commonest markup removed).

:func:`problems` is the cheap structural check the tests run on every text: dollar signs
pair up, braces balance inside each piece of mathematics, and the prose holds no ASCII
mathematics (``sum_j``, ``^T``, ``<=``, ``1/n`` and the like belong between dollars; theorem
names such as ``projection.mean_subtraction`` may be cited as they are).
"""

from __future__ import annotations

import re

__all__ = ["split", "to_latex", "to_plain", "problems", "math_pieces", "escape_text"]

_ESCAPE = {
    "\\": r"\textbackslash{}",
    "_": r"\_",
    "%": r"\%",
    "&": r"\&",
    "#": r"\#",
    "$": r"\$",
    "{": r"\{",
    "}": r"\}",
    "^": r"\^{}",
    "~": r"\~{}",
    "<": r"\ensuremath{<}",
    ">": r"\ensuremath{>}",
    "|": r"\ensuremath{|}",
}

#: what marks ASCII mathematics in prose: sub- and superscripts, TeX, relations,
#: products, fractions of symbols and numbers, and words glued to an index
_RESIDUE = (
    (re.compile(r"[_^\\{}|<>=*]"), "a mathematical symbol"),
    (re.compile(r"(?<![\w/])\w{1,3}/\w{1,3}(?![\w/])"), "a fraction"),
    (re.compile(r"\b(sum|prod|sqrt|diag|det|tr)\(", re.IGNORECASE), "a function written in ASCII"),
)

#: a theorem's name (module.name), which prose may cite as it is
_NAME = re.compile(r"\b[a-z]+\.[a-z_]+[a-z]\b")


def split(text: str) -> list[tuple[bool, str]]:
    """``text`` as (is_math, piece) pairs; the dollar signs themselves are dropped."""
    pieces = str(text).split("$")
    return [(k % 2 == 1, piece) for k, piece in enumerate(pieces) if piece]


def math_pieces(text: str) -> list[str]:
    """The LaTeX between dollar signs, in order."""
    return [piece for is_math, piece in split(text) if is_math]


def escape_text(text: str) -> str:
    """Plain text -> LaTeX text (every special character escaped)."""
    return "".join(_ESCAPE.get(ch, ch) for ch in str(text))


def to_latex(text: str) -> str:
    """Prose escaped for LaTeX, its ``$...$`` passed through as inline mathematics."""
    return "".join(f"${piece}$" if is_math else escape_text(piece) for is_math, piece in split(text))


_PLAIN = (
    (r"\left", ""),
    (r"\right", ""),
    (r"\mathbf{1}", "1"),
    (r"\operatorname", ""),
    (r"\mathbb{R}", "R"),
    (r"\tfrac", r"\frac"),
    (r"\dfrac", r"\frac"),
    (r"\,", " "),
    (r"\ ", " "),
    (r"\quad", "  "),
    (r"\|", "||"),
    (r"\cdot", "."),
    (r"\circ", "o"),
    (r"\odot", "*"),
    (r"\times", "x"),
    (r"\epsilon", "eps"),
    (r"\le", "<="),
    (r"\ge", ">="),
    (r"\ne", "!="),
    (r"\to", "->"),
    (r"\in", " in "),
    (r"\perp", "perp"),
    (r"\top", "T"),
    (r"\infty", "oo"),
    (r"\dots", "..."),
    (r"\cdots", "..."),
    (r"\mathrm", ""),
    (r"\text", ""),
)
_PLAIN_PATTERNS = (
    (re.compile(r"\\frac\{([^{}]*)\}\{([^{}]*)\}"), r"(\1)/(\2)"),
    (re.compile(r"\\sqrt\{([^{}]*)\}"), r"sqrt(\1)"),
    (re.compile(r"\\bar\{([^{}]*)\}"), r"mean(\1)"),
)


def to_plain(text: str) -> str:
    """A terminal form: the mathematics without dollar signs and with its commonest markup removed."""
    out = []
    for is_math, piece in split(text):
        if is_math:
            for tex, plain in sorted(_PLAIN, key=lambda pair: -len(pair[0])):  # \infty before \in
                piece = piece.replace(tex, plain)
            for pattern, plain in _PLAIN_PATTERNS:
                piece = pattern.sub(plain, piece)
            piece = re.sub(r"\\([A-Za-z]+)", r"\1", piece)
            piece = re.sub(r"[{}]", "", piece)
            piece = re.sub(r"  +", " ", piece)
        out.append(piece)
    return "".join(out)


def problems(text: str) -> list[str]:
    """What is wrong with ``text`` as prose with inline mathematics (empty when nothing is)."""
    text = str(text)
    found = []
    if text.count("$") % 2:
        found.append("an unpaired dollar sign")
        return found
    for is_math, piece in split(text):
        if is_math:
            depth = 0
            for ch in re.sub(r"\\[{}]", "", piece):
                depth += {"{": 1, "}": -1}.get(ch, 0)
                if depth < 0:
                    break
            if depth:
                found.append(f"unbalanced braces in ${piece}$")
            continue
        bare = _NAME.sub("", piece)  # theorem names, e.g. projection.mean_subtraction
        for pattern, what in _RESIDUE:
            m = pattern.search(bare)
            if m:
                found.append(f"{what} outside $...$: {m.group(0)!r} in {piece.strip()!r}")
    return found
