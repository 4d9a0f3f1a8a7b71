"""Markdown writer for :class:`lnproofs.report.build.Report`: the same document as the LaTeX.

Math is written as ``$...$`` and ``$$...$$`` so it renders on GitHub, GitLab, Jupyter
and most Markdown viewers with MathJax/KaTeX.  Sections, results, tables and figures carry
the numbers the PDF gives them.
"""

from __future__ import annotations

__all__ = ["to_markdown"]


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def to_markdown(report) -> str:
    from dataclasses import replace

    from ..experiments.blocks import REF, Heading, numbering
    from ..experiments.blocks import to_markdown as blocks_markdown
    from . import frame
    from .bibliography import markdown_references
    from .latex import INDEX_TITLE
    from .proofs import SECTIONS, entries, theorem_markdown

    items = entries(report.proofs)
    names = [p.name for p in report.proofs]
    modules = [m for m, _, _ in SECTIONS if any(e.section == m for e in items)]
    # section numbers: 1 introduction, 2 setting, then the results' sections, then the rest
    section_of = {m: 3 + k for k, m in enumerate(modules)}
    numbers, counter = {}, {}
    for e in items:
        s = section_of[e.section]
        counter[s] = counter.get(s, 0) + 1
        numbers[e.name] = f"{s}.{counter[s]}"
    after = 3 + len(modules)
    numbers["sec:setting"], numbers["sec:instances"], numbers["sec:geometry"] = 2, after, after + 1
    fig_numbers = {f.label: k for k, f in enumerate(report.figures, start=1)}
    exp_blocks = report.experiments.blocks if report.experiments is not None else ()
    key_figs = len(report.keys.figures) if report.keys is not None else 0
    exp_numbers = numbering(exp_blocks, {"fig": len(report.figures) + key_figs, "tab": 1})
    refs = {"tab:instances": 1, **numbers, **{f"thm:{k}": v for k, v in numbers.items()}, **fig_numbers, **exp_numbers}

    def text(t: str) -> str:
        def sub(m):
            label, kind = m.group(1), m.group(2)
            if kind == "cite":  # authors for the papers, a number for the rest
                from ..experiments.paper import CITE
                from .bibliography import SOURCES

                key = label[5:]
                if key in CITE:
                    return CITE[key]
                return f"[{next((k for k, s in enumerate(SOURCES, start=1) if s.key == key), '?')}]"
            if kind == "thm":
                return f"Theorem {numbers.get(label[4:], '?')}"
            word = {"fig": "Figure", "tab": "Table", "sec": "Section"}[kind]
            return f"{word} {refs.get(label, '?')}"

        return REF.sub(sub, t)

    lines = [
        f"# {frame.TITLE}",
        "",
        f"*{frame.AUTHOR}*",
        "",
        f"<!-- {report.generated} -->",
        "",
        "**Abstract.** " + text(frame.abstract(report)),
        "",
        "## Contents",
        "",
    ]
    heads = ["Introduction", "Setting and notation"] + [h for m, h, _ in SECTIONS if m in modules]
    heads += ["What was checked", "The geometry in figures"]
    if report.keys is not None:
        heads.append("Certification of the given keys")
    numbered = []  # the experiments' sections, numbered as in the PDF
    for block in exp_blocks:
        if isinstance(block, Heading) and block.level == 1:
            heads.append(block.text)
            block = replace(block, text=f"{len(heads)}. {block.text}")
        numbered.append(block)
    exp_blocks = tuple(numbered)
    heads.append("Software")
    lines += [f"{k}. {h}" for k, h in enumerate(heads, start=1)] + ["", f"References; Appendix: {INDEX_TITLE}.", ""]
    lines += ["## 1. Introduction", ""]
    lines += [p for paragraph in frame.introduction(report) for p in (text(paragraph), "")]
    lines += ["## 2. Setting and notation", ""]
    for k, (_, title, body) in enumerate(frame.definitions(report), start=1):
        lines += [f"**Definition 2.{k}** ({title}). {body}", ""]
    lines += [text(frame.proof_convention()), ""]
    for module, heading, _ in SECTIONS:
        if module not in modules:
            continue
        lines += [f"## {section_of[module]}. {heading}", ""]
        for e in (e for e in items if e.section == module):
            lines += theorem_markdown(e, numbers[e.name], names, numbers)
    lines += [
        f"## {after}. What was checked",
        "",
        text(frame.frame_instances(report, items)),
        "",
        report.recheck_note,
        "",
        f"| result | general n | shown | not printed | n = {report.n} | numeric re-check |",
        "|---|---|---|---|---|---|",
    ]
    for e in items:
        shown, hidden = frame.count_cells(e)
        lines.append(
            f"| Theorem {numbers[e.name]} | {frame.general_cell(e)} | {shown} | {hidden} | {frame.concrete_cell(e)} | "
            f"{_cell(_recheck(report.rechecks.get(e.name)))} |"
        )
    lines += ["", f"## {after + 1}. The geometry in figures", "", text(frame.geometry_text()), ""]
    for k, fig in enumerate(report.figures, start=1):
        lines += [f"![Figure {k}]({fig.path})", "", f"*Figure {k}.* {text(fig.caption)}", ""]
    if report.keys is not None:
        lines += _keys_markdown(report.keys, len(report.figures), after + 2)
    if exp_blocks:
        md = blocks_markdown(exp_blocks, refs, level=2)
        lines += [text(line) for line in md]
    lines += [f"## {len(heads)}. Software", "", "| package | version |", "|---|---|"]
    lines += [f"| {name} | {version} |" for name, version in report.versions]
    lines += (
        ["", "## References", ""]
        + markdown_references()
        + ["", f"## Appendix: {INDEX_TITLE}", "", "| result | name |", "|---|---|"]
    )
    lines += [f"| Theorem {numbers[e.name]} | `{e.name}` |" for e in items]
    return "\n".join(lines).rstrip() + "\n"


def _recheck(check) -> str:
    if check is None:
        return "not run"
    return (
        f"{'passed' if check.passed else '**failed**'}: largest error {check.max_error:.1e}, tolerance "
        f"{check.tolerance:.1e}, {check.samples} samples"
    )


def _keys_markdown(section, offset: int, number: int) -> list:
    lines = [
        f"## {number}. Certification of the given keys",
        "",
        f"{section.n_keys} keys in $\\mathbb{{R}}^{{{section.dim}}}$, every query allowed. "
        f"The certificate is in `{section.certificate_file}`; the exact checker "
        f"{'accepted every claim' if section.check_ok else 'REJECTED a claim'}.",
        "",
        "| status | keys |",
        "|---|---|",
    ]
    lines += [f"| {status} | {count} |" for status, count in section.summary.items()]
    lines += [""]
    if section.rows:
        lines += [
            "Keys that are not selectable, with their certificates:",
            "",
            "| key | status | certificate |",
            "|---|---|---|",
        ]
        lines += [f"| k{i} | {status} | {_cell(text)} |" for i, status, text in section.rows]
    else:
        lines.append("Every key is selectable: each has a witness query, checked exactly.")
    lines.append("")
    if section.figures:
        lines += [
            "The figures show "
            + " and ".join(
                f"{what} (Figure {k})"
                for k, what in enumerate(
                    ("the witness margins of the selectable keys", "the keys with their statuses")[
                        : len(section.figures)
                    ],
                    start=offset + 1,
                )
            )
            + ".",
            "",
        ]
    for k, fig in enumerate(section.figures, start=offset + 1):
        lines += [f"![Figure {k}]({fig.path})", "", f"*Figure {k}.* {fig.caption}", ""]
    return lines
