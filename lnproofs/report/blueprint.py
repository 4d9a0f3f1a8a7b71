"""The report as a blueprint: one HTML page, readable without a network.

Every result with its statement and its proof, each displayed relation with its justification
and, under a ``<details>`` element, its exact check: the expressions the checker compared
(every named quantity substituted), the rule and the checker's verdict; the proof for the
concrete width beside it.  Mathematics is MathML (converted from the LaTeX by latex2mathml,
rendered by the browser itself); the dependency graph of definitions and results is an SVG drawn
by Graphviz's ``dot``, each node coloured by what holds: proved for general $n$, for the
concrete width too, re-checked numerically.  Nothing is loaded from elsewhere.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess

from ..derive import prose
from .proofs import clean_text, dependencies, entries, hidden_steps, justification, lead_in, shown_steps

__all__ = ["to_html", "graph_dot", "COLOURS"]

#: node colours of the dependency graph, by what holds
COLOURS = {
    "definition": "#e8e8e8",
    "general, width and numeric": "#1b9e4b",
    "general and width": "#7fc97f",
    "general only": "#c7e9c0",
    "not proved": "#f4a6a6",
}

_STYLE = """
body { font-family: Georgia, serif; max-width: 60em; margin: 2em auto; padding: 0 1em; line-height: 1.45; }
h1 { font-size: 1.5em; } h2 { margin-top: 2em; border-bottom: 1px solid #ccc; }
.result { margin: 1.2em 0; padding: 0.6em 1em; border-left: 4px solid #7fc97f; background: #fafafa; }
.result.failed { border-color: #d62728; }
.tags span { display: inline-block; font-size: 0.8em; padding: 0 0.5em; margin-right: 0.4em; border-radius: 3px;
  background: #e6f0e6; }
.step { display: flex; align-items: baseline; gap: 1em; margin: 0.2em 0 0.2em 1.5em; }
.step .rel { flex: 1; } .step .why { color: #555; font-size: 0.9em; }
details { margin: 0 0 0.4em 2.5em; font-size: 0.85em; } summary { cursor: pointer; color: #1f5fa8; }
pre { white-space: pre-wrap; background: #f0f0f0; padding: 0.4em; }
.graph svg { max-width: 100%; height: auto; } .legend span { padding: 0 0.6em; margin-right: 0.5em; }
"""


def _math(tex: str, display: bool = False) -> str:
    """LaTeX -> MathML (the source itself, escaped, where the converter cannot read it)."""
    from latex2mathml.converter import convert

    tex = tex.replace(r"\tfrac", r"\frac").replace(r"\dfrac", r"\frac")
    try:
        return convert(tex, display="block" if display else "inline")
    except Exception:
        return f"<code>{html.escape(tex)}</code>"


def _prose(text: str) -> str:
    """Prose with $...$ -> HTML with MathML."""
    return "".join(_math(piece) if is_math else html.escape(piece) for is_math, piece in prose.split(text))


def _status(entry, rechecks) -> str:
    if not entry.general.proved or (entry.instance is not None and not entry.instance.proved):
        return "not proved"
    check = rechecks.get(entry.name)
    if entry.instance is not None and check is not None and check.passed:
        return "general, width and numeric"
    if entry.instance is not None:
        return "general and width"
    return "general only"


def graph_dot(items, rechecks, numbers: dict, definitions) -> str:
    """The dependency graph in Graphviz's language: definitions and results, an edge from each
    thing a result rests on to the result; the connected parts laid out apart and packed side by
    side (results that rest on nothing drawn would otherwise stack in one tall column)."""
    names = [e.name for e in items]
    lines = [
        "digraph blueprint {",
        '  graph [rankdir=LR, pack=true, packmode="array_u6", bgcolor="white", fontname="Helvetica"];',
        '  node [shape=box, style="filled,rounded", fontname="Helvetica", fontsize=10];',
    ]
    for label, title, _ in definitions:
        lines.append(f'  "{label}" [label="Def. {numbers[label]}\\n{title}", fillcolor="{COLOURS["definition"]}"];')
    for e in items:
        colour = COLOURS[_status(e, rechecks)]
        lines.append(f'  "{e.name}" [label="{numbers[e.name]}", fillcolor="{colour}", href="#{_anchor(e.name)}"];')
    for e in items:
        for dep in dependencies(e.general, names):
            if dep in numbers:
                lines.append(f'  "{dep}" -> "{e.name}";')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _svg(dot_text: str) -> str:
    exe = shutil.which("dot")
    if exe is None:
        return "<p>Graphviz (dot) is not installed: the dependency graph was not drawn.</p>"
    proc = subprocess.run([exe, "-Tsvg"], input=dot_text, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        return f"<p>dot could not draw the graph: {html.escape(proc.stderr[:200])}</p>"
    svg = proc.stdout
    return svg[svg.index("<svg") :] if "<svg" in svg else svg


def _anchor(name: str) -> str:
    return "r-" + re.sub(r"[^a-z0-9]+", "-", name.lower())


def _check_html(s) -> list[str]:
    verdict = "checked" if s.checked else "NOT checked"
    return [
        f"<p>Rule: <code>{html.escape(s.method)}</code>. Compared, every named quantity substituted:</p>",
        f"<pre>{html.escape(s.checked_claim or s.claim)}</pre>",
        f"<p>Checker: {html.escape(s.detail)} ({html.escape(verdict)}).</p>",
    ]


def _hidden_html(s, names, ref, shown_keys) -> list[str]:
    """A check the paper does not print, folded: what it is, then its exact check."""
    if getattr(s, "bookkeeping", False):
        what = "routine check"
    elif (s.claim_latex, s.method) in shown_keys:
        what = "the statement, the same relation as above, checked again"
    else:
        what = "the statement, the chain's ends compared directly"
    lead = clean_text(s.description, names, ref) if s.description else ""
    verdict = html.escape("checked" if s.checked else "NOT checked")
    short = len(s.claim_latex) <= 160  # a long claim (explicit matrices) is shown when the check is opened
    return [
        f'<details class="hidden-check"><summary>{html.escape(what)}'
        + (f": {_math(s.claim_latex)}" if short else "")
        + f" ({verdict})</summary>",
        *([f"<p>{_prose(lead)}</p>"] if lead else []),
        *([] if short else [f"<p>{_math(s.claim_latex, display=True)}</p>"]),
        *_check_html(s),
        "</details>",
    ]


def _steps_html(p, names, ref) -> list[str]:
    """Every check of the proof in order: the displayed relations with their justification and, folded,
    their exact check; the checks the paper does not print (:func:`hidden_steps`) folded whole."""
    out = []
    if p.definitions:
        out.append("<p>Write " + ", ".join(_math(d) for d in p.definitions) + ".</p>")
    shown = {s.index for s in shown_steps(p)}
    shown_keys = {(s.claim_latex, s.method) for s in p.steps if s.index in shown}
    for s in p.steps:
        if s.index not in shown:
            out += _hidden_html(s, names, ref, shown_keys)
            continue
        lead = clean_text(s.description, names, ref) if s.description else ""
        if s.kind == "conclusion":
            lead = "Hence " + lead if lead else "Hence"
        if lead:
            out.append(f"<p>{_prose(lead_in(lead))}</p>")
        if s.chained and s.lhs_latex:
            rel = {"<=": r"\le", ">=": r"\ge"}.get(s.relation, s.relation)
            claim = rf"\quad {rel} {s.rhs_latex}"
        else:
            claim = s.claim_latex
        verdict = "checked" if s.checked else "NOT checked"
        out += [
            '<div class="step">',
            f'<span class="rel">{_math(claim, display=False)}</span>',
            f'<span class="why">{_prose(clean_text(justification(s), names, ref))}</span>',
            "</div>",
            f"<details><summary>exact check ({html.escape(verdict)})</summary>",
            *_check_html(s),
            "</details>",
        ]
    return out


def _count(p) -> str:
    hidden = len(hidden_steps(p))
    return f"{len(p.steps)} checks: {len(p.steps) - hidden} relations shown, {hidden} not printed in the paper"


def to_html(report) -> str:
    """The whole blueprint page."""
    from . import frame

    items = entries(report.proofs)
    names = [p.name for p in report.proofs]
    definitions = frame.definitions(report)
    numbers = {label: f"2.{k}" for k, (label, _, _) in enumerate(definitions, start=1)}
    counter = {}
    sections = []
    for e in items:
        if e.section not in sections:
            sections.append(e.section)
        s = 3 + sections.index(e.section)
        counter[s] = counter.get(s, 0) + 1
        numbers[e.name] = f"{s}.{counter[s]}"

    def ref(target):
        return f"{'Lemma' if target.startswith('projection.') else 'Theorem'} {numbers.get(target, '?')}"

    legend = " ".join(f'<span style="background:{c}">{html.escape(k)}</span>' for k, c in COLOURS.items())
    body = [
        f"<h1>{html.escape(frame.TITLE)}</h1>",
        f"<p><em>{html.escape(frame.AUTHOR)}</em>: the blueprint of the report, every proof step with its exact "
        "check.</p>",
        "<h2>Dependency graph</h2>",
        f'<p class="legend">{legend}</p>',
        f'<div class="graph">{_svg(graph_dot(items, report.rechecks, numbers, definitions))}</div>',
        "<h2>Definitions</h2>",
    ]
    for label, title, text in definitions:
        body.append(f'<div class="result" id="{label}"><b>Definition {numbers[label]}</b> ({html.escape(title)}). ')
        body.append(f"{_prose(text)}</div>")
    from .proofs import SECTIONS

    for module, heading, env in SECTIONS:
        chosen = [e for e in items if e.section == module]
        if not chosen:
            continue
        body.append(f"<h2>{html.escape(heading)}</h2>")
        for e in chosen:
            p = e.general
            status = _status(e, report.rechecks)
            kind = env.capitalize()
            uses = [
                ref(d) if not d.startswith("def:") else f"Definition {numbers.get(d, '?')}"
                for d in dependencies(p, names)
            ]
            tags = [f"<span>{html.escape(status)}</span>"] + (
                [f"<span>uses {html.escape(', '.join(uses))}</span>"] if uses else []
            )
            body += [
                f'<div class="result{" failed" if status == "not proved" else ""}" id="{_anchor(e.name)}">',
                f"<p><b>{kind} {numbers[e.name]}</b> ({_prose(clean_text(p.title, names, ref))}). "
                f"{_prose(clean_text(p.statement, names, ref))}</p>",
                f'<p class="tags">{"".join(tags)} <code>{html.escape(e.name)}</code></p>',
            ]
            for h in p.hypotheses:
                cited = f" (cited: {html.escape(h.source)})" if h.cited else ""
                body.append(f"<p>Hypothesis {html.escape(h.name)}: {_prose(clean_text(h.text, names, ref))}{cited}</p>")
            body += [f"<p><i>Proof</i> ({html.escape(_count(p))}).</p>", *_steps_html(p, names, ref)]
            if e.instance is not None:
                body += [
                    f"<details><summary>The proof for n = {e.instance.n} ({html.escape(_count(e.instance))})</summary>",
                    *_steps_html(e.instance, names, ref),
                    "</details>",
                ]
            body.append("</div>")
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(frame.TITLE)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )
