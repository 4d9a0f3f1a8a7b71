"""Plain renderings of one theorem or one proof result, for a notebook or a terminal.

Each step is listed with its words, the method that checks it and, for a result, the
checker's verdict.  The report writes proofs as a paper prints them
(:mod:`lnproofs.report.proofs`); these are the simple forms of ``_repr_markdown_`` and
``to_latex``.
"""

from __future__ import annotations

from . import prose

__all__ = ["method_prose", "result_markdown", "result_latex", "theorem_markdown", "theorem_latex"]


def _scope(n) -> str:
    return "general n" if n is None else f"n = {n}"


def result_markdown(result) -> str:
    mark = "proved" if result.proved else "FAILED"
    items = [
        (
            s.index,
            _label(s.kind, getattr(s, "bookkeeping", False)),
            s.description,
            f"{method_prose(s.method)}; {_tick(s.checked, s.detail)}",
            s.claim_latex,
        )
        for s in result.steps
    ]
    return _markdown(
        f"`{result.name}`: {result.title} ({_scope(result.n)}{_conv(result.convention)}) - **{mark}**",
        result,
        "**Proof.**",
        items,
    )


def result_latex(result) -> str:
    mark = "proved" if result.proved else "FAILED"
    items = [
        (
            _label(s.kind, getattr(s, "bookkeeping", False)),
            prose.to_latex(s.description),
            f"{prose.to_latex(method_prose(s.method))}; {_tick(s.checked, _tex_escape(s.detail))}",
            s.claim_latex,
        )
        for s in result.steps
    ]
    return _latex(
        f"{_tex_escape(result.name)}: {prose.to_latex(result.title)} "
        f"({_tex_escape(_scope(result.n))}{_tex_escape(_conv(result.convention))}): {mark}.",
        result,
        items,
    )


def _numbered(theorem):
    everything = theorem.steps + theorem.conclusion
    return [
        (k, _label("conclusion" if k > len(theorem.steps) else "step", step.bookkeeping), step)
        for k, step in enumerate(everything, 1)
    ]


def theorem_markdown(theorem) -> str:
    items = [
        (k, label, step.description, method_prose(step.method), theorem._shown(step))
        for k, label, step in _numbered(theorem)
    ]
    return _markdown(
        f"`{theorem.name}`: {theorem.title} ({_scope(theorem.n)}{_conv(theorem.convention)})",
        theorem,
        "**Proof** (each step is checked by SymPy when the theorem is proved).",
        items,
    )


def theorem_latex(theorem) -> str:
    items = [
        (label, prose.to_latex(step.description), prose.to_latex(method_prose(step.method)), theorem._shown(step))
        for _, label, step in _numbered(theorem)
    ]
    return _latex(
        f"{_tex_escape(theorem.name)}: {prose.to_latex(theorem.title)} "
        f"({_tex_escape(_scope(theorem.n))}{_tex_escape(_conv(theorem.convention))}).",
        theorem,
        items,
    )


def _conv(convention) -> str:
    return "" if convention is None else f", convention {convention!r}"


def _label(kind: str, bookkeeping: bool = False) -> str:
    label = "Conclusion" if kind == "conclusion" else "Step"
    return f"{label} (routine check)" if bookkeeping else label


#: how the checking methods read in prose (their names are the keys of METHODS)
_METHOD_PROSE = {
    "rewrite J^2 = nJ": r"rewrite $J^2 = nJ$",
    "trace (tr I = n, tr J = n)": r"trace ($\operatorname{tr} I = n$, $\operatorname{tr} J = n$)",
    "apply to 1 (J 1 = n 1)": r"apply to $\mathbf{1}$ ($J\mathbf{1} = n\mathbf{1}$)",
    "apply to v orthogonal to 1 (J v = 0)": r"apply to $v \perp \mathbf{1}$ ($J v = 0$)",
}


def method_prose(method: str) -> str:
    """The checking method's name as prose with inline mathematics."""
    return _METHOD_PROSE.get(method, method)


def _tick(checked: bool, detail: str) -> str:
    return "checked by SymPy" if checked else f"NOT checked: {detail}"


def _markdown(heading: str, item, proof_title: str, steps) -> str:
    """One theorem or proof result in Markdown; ``steps`` are (number, label, description, note, LaTeX)."""
    lines = [f"### {heading}", "", f"**Statement.** {item.statement}", "", f"$$ {item.statement_latex} $$", ""]
    lines += _hyp_markdown(item.hypotheses)
    lines += [proof_title, ""]
    for number, label, description, note, claim in steps:
        lines += [f"{number}. *{label}.* {description} ({note})", "", f"   $$ {claim} $$", ""]
    return "\n".join(lines)


def _latex(heading: str, item, steps) -> str:
    """One theorem or proof result in LaTeX; ``steps`` are (label, description, note, LaTeX), escaped."""
    out = [f"\\paragraph{{{heading}}}", prose.to_latex(item.statement), f"\\[ {item.statement_latex} \\]"]
    out += _hyp_latex(item.hypotheses)
    out.append("\\begin{enumerate}")
    for label, description, note, claim in steps:
        out.append(f"\\item \\emph{{{label}.}} {description} ({note}) {_display(claim)}")
    out.append("\\end{enumerate}")
    return "\n".join(out)


def _display(claim: str) -> str:
    """A displayed claim; a long one (explicit matrices) shrunk to the line's width where the
    document loads graphicx (as the report does), shown as it is elsewhere."""
    if len(claim) < 160:
        return f"\\[ {claim} \\]"
    return (
        r"\[ \ifdefined\resizebox\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}"
        r"{$\displaystyle " + claim + r"$}\else " + claim + r" \fi \]"
    )


def _hyp_markdown(hyps) -> list:
    if not hyps:
        return []
    lines = ["**Hypotheses.**", ""]
    for h in hyps:
        math = f" (${h.latex.strip()}$)" if _formula_adds(h) else ""
        lines.append(f"- *{h.name}*: {h.text}{math}")
    return lines + [""]


def _formula_adds(h) -> bool:
    """Whether to show a hypothesis's formula beside its prose: only for prose without mathematics."""
    return h.has_formula and not prose.math_pieces(h.text)


def _hyp_latex(hyps) -> list:
    if not hyps:
        return []
    out = ["Hypotheses:", "\\begin{itemize}"]
    for h in hyps:
        math = f" (${h.latex.strip()}$)" if _formula_adds(h) else ""
        out.append(f"\\item \\emph{{{_tex_escape(h.name)}}}: {prose.to_latex(h.text)}{math}")
    return out + ["\\end{itemize}"]


def _tex_escape(text: str) -> str:
    return prose.escape_text(text)
