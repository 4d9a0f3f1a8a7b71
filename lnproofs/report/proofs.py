"""Theorems and their proofs as a paper prints them, from :class:`ProofResult` data.

Each theorem is stated once, for general $n$, in a numbered environment with a label; its
proof is a derivation in ``align*``, one line per step with the step's words and the rule
that checks it, long formulas broken over lines at their top-level relations and signs (never
shrunk).  A conclusion that repeats a step is not printed again: the proof says which steps
are the statement.  Code names of theorems appear only in the report's final index.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..derive import prose

__all__ = [
    "SECTIONS",
    "TheoremEntry",
    "entries",
    "theorem_latex",
    "theorem_markdown",
    "justification",
    "clean_text",
    "split_formula",
    "label",
]

#: the theorem modules as sections of the report: (module, heading, environment)
SECTIONS = (
    ("projection", "The centring projection", "lemma"),
    ("decomposition", "LayerNorm as projection, scaling and an affine map", "theorem"),
    ("sphere", "The sphere and the ball", "theorem"),
    ("ellipsoid", "The image of LayerNorm: an ellipsoid", "theorem"),
    ("rmsnorm", "RMSNorm and rotary embeddings", "theorem"),
    ("attention", "Attention: which keys a query can select", "theorem"),
    ("coverage", "Coverage of directions", "theorem"),
    ("vocab", "The output layer: which tokens can be output", "theorem"),
)
_MODULE_OF = {"rotary": "rmsnorm"}

_JUSTIFY = {
    "finite sums and Kronecker deltas": "evaluating the finite sums and Kronecker deltas",
    "sign under assumptions": "the signs fixed by the hypotheses",
    "simplify-to-zero": "simplifying the difference of the two sides to zero",
    "expand": "expanding both sides",
    "compare squares (both sides nonnegative)": "comparing squares of two non-negative sides",
    "solve": "solving the equation",
    "rewrite J^2 = nJ": r"the rule $J^2 = nJ$",
    "trace (tr I = n, tr J = n)": r"$\operatorname{tr} I = \operatorname{tr} J = n$",
    "apply to 1 (J 1 = n 1)": r"$J\mathbf{1} = n\mathbf{1}$",
    "apply to v orthogonal to 1 (J v = 0)": r"$J v = 0$ for $v \perp \mathbf{1}$",
    "limit": "taking the limit",
    "derivative": "differentiating",
    "eigen (characteristic polynomial)": "the characteristic polynomial",
    "determinant lemma": "the matrix determinant lemma",
    "root isolation (Sturm)": "Sturm's root isolation",
}


def justification(method: str) -> str:
    """The rule a step is checked by, as words (mathematics in $...$)."""
    return _JUSTIFY.get(method, prose.escape_text(method) if "$" not in method else method)


def label(name: str) -> str:
    return "thm:" + name


@dataclass(frozen=True)
class TheoremEntry:
    """One theorem of the report: its general proof, its concrete instance, its section."""

    name: str
    section: str
    environment: str
    general: object  # ProofResult for general n
    instance: object  # ProofResult for the report's n, or None


def entries(proofs) -> list:
    """The report's theorems in order, grouped by section: the general-n result of each name
    with its concrete instance beside it (a name proved only for a concrete n is its own entry)."""
    general = {p.name: p for p in proofs if p.n is None}
    concrete = {p.name: p for p in proofs if p.n is not None}
    names = list(dict.fromkeys(p.name for p in proofs))
    out = []
    for module, _, env in SECTIONS:
        for name in names:
            if _MODULE_OF.get(name.split(".")[0], name.split(".")[0]) == module:
                out.append(
                    TheoremEntry(
                        name,
                        module,
                        env,
                        general.get(name) or concrete[name],
                        concrete.get(name) if name in general else None,
                    )
                )
    return out


# ------------------------------------------------------------------------ prose
_REF = re.compile(
    r"\(?\b(?:theorem )?((?:projection|decomposition|sphere|ellipsoid|rmsnorm|rotary|attention|coverage|vocab)"
    r"\.[a-z_]+)\b\)?"
)


def clean_text(text: str, names, ref) -> str:
    """Prose without code: theorem names become references (``ref(name)``), the conventions
    are named in words."""

    def sub(m):
        target = _resolve(m.group(1), names)
        if target is None:
            return ""
        inner = ref(target)
        whole = m.group(0)
        return f"({inner})" if whole.startswith("(") and whole.endswith(")") else inner

    text = _REF.sub(sub, text)
    text = text.replace("'torch'", "PyTorch").replace("'std'", "standard-deviation")
    text = text.replace("(torch)", "(PyTorch convention)").replace("(std)", "(standard-deviation convention)")
    return re.sub(r"\s+\)", ")", re.sub(r"\(\s*\)", "", text)).strip()


def _resolve(name: str, names):
    if name in names:
        return name
    found = [n for n in names if n.startswith(name)]
    return found[0] if found else None


# --------------------------------------------------------------- formula breaking
_LINE = 56  # display characters that fit a line of the text (10pt, about 6.3 in)
_RELATIONS = ("=", "<", ">", r"\le", r"\ge", r"\leq", r"\geq", r"\ne")


def _top_level(tex: str):
    """(position, token) of top-level relations, signs and separators in ``tex``."""
    depth, i, out = 0, 0, []
    while i < len(tex):
        ch = tex[i]
        if tex.startswith(r"\left", i) and not tex[i + 5 : i + 6].isalpha():
            depth += 1
            i += 5
            continue
        if tex.startswith(r"\right", i) and not tex[i + 6 : i + 7].isalpha():
            depth -= 1
            i += 6
            continue
        if ch == "\\":
            m = re.match(r"\\[A-Za-z]+|\\.", tex[i:])
            token = m.group(0)
            depth += {r"\{": 1, r"\}": -1}.get(token, 0)
            if depth == 0 and token in _RELATIONS + (r"\quad",):
                out.append((i, token))
            i += len(token)
            continue
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        elif depth == 0 and ch in "=<>+-,":
            out.append((i, ch))
        i += 1
    return out


def width(tex: str) -> int:
    """A rough count of the characters ``tex`` shows, operators with their spacing (a fraction
    counts its wider part when it holds no braces, both parts otherwise)."""
    spacing = 2 * len(re.findall(r"(?<![{(^_])[+=<>-]|\\le\b|\\ge\b|\\ne\b", tex)) + 4 * tex.count(r"\quad")
    text = re.sub(r"\\(left|right|mathbf|operatorname|mathrm|text|quad|qquad|,|;|!| )", "", tex)
    text = re.sub(r"\\frac\{([^{}]*)\}\{([^{}]*)\}", lambda m: "x" * max(len(m.group(1)), len(m.group(2))), text)
    text = re.sub(r"\\[A-Za-z]+", "x", text)
    text = re.sub(r"[_^]\{[^{}]*\}", "x", text)
    return len(re.sub(r"[{}_^ ]", "", text)) + spacing


def split_formula(tex: str, limit: int = _LINE) -> list[str]:
    """``tex`` as the lines of an ``align*`` row group: the first relation aligned (``&=``), a
    long side broken before its top-level signs, each later line indented."""
    tex = tex.strip()
    if r"\quad\text{where } " in tex:
        main, where = tex.split(r"\quad\text{where } ", 1)
        lines = split_formula(main, limit)
        if width(main) + width(where) + 6 <= limit and len(lines) == 1:
            return [lines[0] + r"\quad\text{where } " + where]
        return lines + _bindings(where.split(r",\ "), limit)
    marks = _top_level(tex)
    rel = next(((i, t) for i, t in marks if t in _RELATIONS and i > 0), None)
    if rel is None:
        return _break(tex, limit, first="")
    i, token = rel
    lhs, rhs = tex[:i].strip(), tex[i + len(token) :].strip()
    if width(lhs) + width(rhs) <= limit:
        return [f"{lhs} &{token} {rhs}"]
    if width(lhs) > limit * 0.6:
        return _break(lhs, limit, first="") + _break(rhs, limit, first=token)
    return [
        f"{lhs} " + line if k == 0 else line
        for k, line in enumerate(_break(rhs, limit, first=token, offset=width(lhs)))
    ]


def _bindings(parts, limit: int) -> list[str]:
    """The ``where`` bindings of a claim on lines of their own, whole bindings to a line."""
    lines, current = [], ""
    for part in (p.strip() for p in parts if p.strip()):
        if current and width(current) + width(part) > limit:
            lines.append(current + ",")
            current = part
        else:
            current = f"{current},\\ {part}" if current else part
    lines.append(current)
    return [
        (r"&\quad\text{where } " if k == 0 else r"&\quad\phantom{\text{where }}") + line for k, line in enumerate(lines)
    ]


def _break(tex: str, limit: int, first: str, offset: int = 0) -> list[str]:
    """Pieces of ``tex`` split before top-level + and - signs, relations and separators, packed
    into lines of at most ``limit`` (the first ``offset`` less); the first begins ``&first``,
    later ones ``&\\quad``."""
    cuts = [
        i
        for i, t in _top_level(tex)
        if i > 0 and t in ("+", "-", ",", r"\quad") + _RELATIONS and tex[i - 1] not in "{(^_"
    ]
    pieces, start = [], 0
    for cut in cuts:
        pieces.append(tex[start:cut].strip())
        start = cut
    pieces.append(tex[start:].strip())
    if len(pieces) == 1 and width(tex) > limit and _opened(tex) != tex:
        return _break(_opened(tex), limit, first, offset)  # break inside its outer parentheses
    lines, current = [], ""
    for piece in (p for p in pieces if p):
        budget = limit - (offset if not lines else 0)
        if current and width(current) + width(piece) > budget:
            lines.append(current)
            current = piece
        else:
            current = f"{current} {piece}".strip()
    lines.append(current)
    lead = f"&{first} " if first else "&"
    return [
        (lead + line) if k == 0 else (r"&\quad " + (r"{}" if line[:1] in "+-" else "") + line)
        for k, line in enumerate(lines)
    ]


def _opened(tex: str) -> str:
    """``tex`` with its outermost ``\\left( ... \\right)`` pairs made ``\\Bigl( ... \\Bigr)``,
    which may be broken across lines."""
    out, depth, i = [], 0, 0
    while i < len(tex):
        if tex.startswith(r"\left(", i) and depth == 0:
            out.append(r"\Bigl(")
            depth, i = 1, i + 6
            continue
        if tex.startswith(r"\left", i) and not tex[i + 5 : i + 6].isalpha():
            depth += 1
        elif tex.startswith(r"\right)", i) and depth == 1:
            out.append(r"\Bigr)")
            depth, i = 0, i + 7
            continue
        elif tex.startswith(r"\right", i) and not tex[i + 6 : i + 7].isalpha():
            depth -= 1
        out.append(tex[i])
        i += 1
    return "".join(out)


# ---------------------------------------------------------------------- LaTeX
def theorem_latex(entry: TheoremEntry, names) -> str:
    """The theorem environment and its proof."""
    p = entry.general

    targets = []

    def ref(target):  # a mark that escaping the prose leaves alone, made a \ref at the end
        targets.append(target)
        return f"\x00{len(targets) - 1}\x00"

    env = entry.environment
    title = prose.to_latex(clean_text(p.title, names, ref))
    out = [rf"\begin{{{env}}}[{title}]\label{{{label(p.name)}}}", prose.to_latex(clean_text(p.statement, names, ref))]
    if p.statement_latex and not _said(p.statement, p.statement_latex):
        out += [
            r"\begin{align*}",
            _rows([split_formula(part) for part in _statement_parts(p.statement_latex)]),
            r"\end{align*}",
        ]
    if p.hypotheses:
        out.append(r"Hypotheses:")
        out.append(r"\begin{itemize}")
        for h in p.hypotheses:
            math = f" (${h.latex.strip()}$)" if h.has_formula and not prose.math_pieces(h.text) else ""
            out.append(rf"\item {prose.to_latex(clean_text(h.text, names, ref))}{math}.")
        out.append(r"\end{itemize}")
    out.append(rf"\end{{{env}}}")
    out += _proof_latex(p, names, ref)
    return re.sub("\x00([0-9]+)\x00", lambda m: rf"Theorem~\ref{{{label(targets[int(m.group(1))])}}}", "\n".join(out))


def _said(statement: str, display: str) -> bool:
    """Whether the prose statement already holds the displayed formula."""

    def norm(t):
        return re.sub(r"\s+|\\[,;:! ]", "", t)

    pieces = [norm(piece) for piece in prose.math_pieces(statement)]
    return all(any(norm(part) in piece for piece in pieces) for part in _statement_parts(display))


def _statement_parts(tex: str) -> list[str]:
    parts = re.split(r",\s*\\quad\s*|,\\ \\ |;\\quad ", tex)
    return [part.strip().rstrip(",") for part in parts if part.strip()]


def _rows(groups) -> str:
    return " \\\\\n".join(line for g in groups for line in g)


def _proof_latex(p, names, ref) -> list[str]:
    steps = [s for s in p.steps if s.kind == "step"]
    conclusions = [s for s in p.steps if s.kind == "conclusion"]
    shown = {s.claim_latex: s.index for s in steps}
    out = [r"\begin{proof}"]
    if not steps and not conclusions:
        return out + ["No steps.", r"\end{proof}"]
    out.append(r"\begin{align*}")
    rows = []
    for number, s in enumerate(steps, start=1):
        rows.append(_step_intertext(f"({number})", s, names, ref) + "\n" + " \\\\\n".join(split_formula(s.claim_latex)))
    fresh = [s for s in conclusions if s.claim_latex not in shown]
    for s in fresh:
        rows.append(_step_intertext("Hence", s, names, ref) + "\n" + " \\\\\n".join(split_formula(s.claim_latex)))
    out.append(" \\\\\n".join(rows))
    out.append(r"\end{align*}")
    repeated = sorted({_number_of(steps, shown[s.claim_latex]) for s in conclusions if s.claim_latex in shown})
    failed = [s for s in p.steps if not s.checked]
    if repeated:
        which = _and([f"({k})" for k in repeated])
        out.append(
            ("Together with the conclusion above, " if fresh else "")
            + ("step " if fresh else "Step ") * (len(repeated) == 1)
            + ("steps " if fresh else "Steps ") * (len(repeated) > 1)
            + which
            + (" is" if len(repeated) == 1 else " are")
            + " the statement."
        )
    if failed:
        out.append(
            r"\textbf{This proof is not complete:} "
            + "; ".join(prose.escape_text(f"step {s.index} was not checked ({s.detail})") for s in failed)
            + "."
        )
    out.append(r"\end{proof}")
    return out


def _and(items) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _number_of(steps, index: int) -> int:
    return next(k for k, s in enumerate(steps, start=1) if s.index == index)


def _lower_first(text: str) -> str:
    """``Entry i`` -> ``entry i`` after "Hence" (a capital of a name or symbol stays)."""
    return text[0].lower() + text[1:] if re.match(r"[A-Z][a-z]", text) else text


def _step_intertext(mark: str, step, names, ref) -> str:
    text = clean_text(step.description, names, ref)
    words = prose.to_latex(_lower_first(text) if mark == "Hence" else text)
    rule = prose.to_latex(justification(step.method))
    return rf"\intertext{{{mark} {words}; by {rule}:}}"


# -------------------------------------------------------------------- Markdown
def theorem_markdown(entry: TheoremEntry, number: str, names, numbers: dict) -> list[str]:
    p = entry.general

    def ref(target):
        return f"Theorem {numbers.get(target, '?')}"

    env = entry.environment.capitalize()
    lines = [f"**{env} {number}** ({clean_text(p.title, names, ref)}). {clean_text(p.statement, names, ref)}", ""]
    if p.statement_latex and not _said(p.statement, p.statement_latex):
        lines += [f"$$ {p.statement_latex} $$", ""]
    if p.hypotheses:
        lines += ["Hypotheses:", ""]
        lines += [f"- {clean_text(h.text, names, ref)}" for h in p.hypotheses] + [""]
    steps = [s for s in p.steps if s.kind == "step"]
    shown = {s.claim_latex: k for k, s in enumerate(steps, start=1)}
    lines += ["*Proof.*", ""]
    for k, s in enumerate(steps, start=1):
        lines += [
            f"{k}. {clean_text(s.description, names, ref)}; by {justification(s.method)}:",
            "",
            f"   $$ {s.claim_latex} $$",
            "",
        ]
    for s in p.steps:
        if s.kind == "conclusion" and s.claim_latex not in shown:
            lines += [
                f"Hence {_lower_first(clean_text(s.description, names, ref))}; by {justification(s.method)}:",
                "",
                f"$$ {s.claim_latex} $$",
                "",
            ]
    repeated = sorted({shown[s.claim_latex] for s in p.steps if s.kind == "conclusion" and s.claim_latex in shown})
    if repeated:
        lines += [
            ("Step " if len(repeated) == 1 else "Steps ")
            + _and([f"({k})" for k in repeated])
            + (" is" if len(repeated) == 1 else " are")
            + " the statement. ∎",
            "",
        ]
    else:
        lines += ["∎", ""]
    failed = [s for s in p.steps if not s.checked]
    if failed:
        lines += [
            "**This proof is not complete:** "
            + "; ".join(f"step {s.index} was not checked ({s.detail})" for s in failed)
            + ".",
            "",
        ]
    return lines
