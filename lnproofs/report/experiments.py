"""The report's "Experiments" section, read from the ``summary.md`` that
``lnproofs reproduce majority`` and ``lnproofs reproduce lm-tables`` write.

The summary is split into blocks (headings, paragraphs, tables, figures) so that both the
Markdown and the LaTeX writer can render it; figure paths are made relative to the
report folder.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ExperimentsSection", "read_experiments", "experiments_markdown", "experiments_latex"]

#: the non-ASCII characters the summaries use, for pdflatex
_UNICODE = {"±": r"\ensuremath{\pm}", "≤": r"\ensuremath{\le}", "≥": r"\ensuremath{\ge}", "×": r"\ensuremath{\times}",
            "°": r"\ensuremath{^\circ}", "−": "-", "–": "--", "—": "--", "·": r"\ensuremath{\cdot}",
            "Σ": r"\ensuremath{\Sigma}", "√": r"\ensuremath{\surd}", "≈": r"\ensuremath{\approx}"}
_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)]+)\)")


@dataclass(frozen=True)
class ExperimentsSection:
    source: str
    blocks: tuple          # ("heading", text) | ("text", text) | ("table", rows) | ("figure", path, caption)


def read_experiments(folder, report_folder) -> ExperimentsSection | None:
    """The section from ``folder/summary.md``, or None when there is none."""
    folder = Path(folder)
    summary = folder / "summary.md"
    if not summary.is_file():
        return None
    rel = Path(os.path.relpath(folder, Path(report_folder)))
    blocks, para, table = [], [], []

    def flush():
        if para:
            blocks.append(("text", " ".join(para)))
            para.clear()
        if table:
            rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in table
                    if not re.fullmatch(r"\|?[-|: ]+\|?", line.strip())]
            blocks.append(("table", tuple(tuple(r) for r in rows)))
            table.clear()

    section = ""
    for line in summary.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            flush()
            if not stripped.startswith("# "):                 # the file's own title is dropped
                section = stripped.lstrip("#").strip()
                blocks.append(("heading", section))
        elif stripped.startswith("|"):
            if para:
                flush()
            table.append(stripped)
        elif not stripped:
            flush()
        elif stripped.startswith("- "):
            flush()
            blocks.append(("item", stripped[2:]))
        else:
            if table:
                flush()
            images = _IMAGE.findall(stripped)
            text = _IMAGE.sub("", stripped).strip(" ,:")
            if images:
                # the line's words name the figures (they become the captions, not a paragraph)
                flush()
                for alt, path in images:
                    blocks.append(("figure", (rel / path).as_posix(), _caption(text, alt, section, len(images))))
            else:
                para.append(stripped)
    flush()
    return ExperimentsSection(str(folder), tuple(blocks))


#: ASCII mathematics the summaries write, and its typeset form
_ASCII_MATH = ((re.compile(r"\bR\^(\w+)"), r"$\\mathbb{R}^{\1}$"),
               (re.compile(r"\bsqrt\((\w+)\)"), r"$\\sqrt{\1}$"))


#: figure names (the images' alt texts) that read better spelled out
_FIGURE_NAMES = {"three_d": "the 3-D variant"}


def _caption(text: str, alt: str, section: str, count: int) -> str:
    """A figure's caption: its experiment, the words of its line, and its own name when a line has several."""
    words = "" if text.lower() in ("figures", "figure", "") else text
    name = _FIGURE_NAMES.get(alt, alt.replace("_", " "))
    detail = ", ".join(p for p in (words, name if count > 1 or not words else "") if p)
    return (f"{section} — {detail}" if section and detail else section or detail) + "."


def experiments_markdown(section: ExperimentsSection) -> list[str]:
    lines = ["## Experiments", ""]
    for block in section.blocks:
        if block[0] == "heading":
            lines += [f"### {block[1]}", ""]
        elif block[0] == "text":
            lines += [_typeset(block[1]), ""]
        elif block[0] == "item":
            lines += [f"- {_typeset(block[1])}", ""]
        elif block[0] == "table":
            rows = block[1]
            lines.append("| " + " | ".join(rows[0]) + " |")
            lines.append("|" + "---|" * len(rows[0]))
            lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
            lines.append("")
        else:
            lines += [f"![{block[2]}]({block[1]})", ""]
    return lines


def _typeset(text: str) -> str:
    """``text`` with its ASCII mathematics as ``$...$``."""
    for pattern, typeset in _ASCII_MATH:
        text = pattern.sub(typeset, text)
    return text


def _plain(text: str, escape) -> str:
    """Markdown emphasis, code and ``$...$`` mathematics -> LaTeX, the rest escaped."""
    text = _typeset(text)
    out, pos = [], 0
    for m in re.finditer(r"\*\*(.+?)\*\*|`(.+?)`|\$([^$]+)\$", text):
        out.append(escape(text[pos:m.start()]))
        if m.group(1):
            out.append(rf"\textbf{{{escape(m.group(1))}}}")
        elif m.group(2):
            out.append(rf"\texttt{{{escape(m.group(2))}}}")
        else:
            out.append(f"${m.group(3)}$")
        pos = m.end()
    out.append(escape(text[pos:]))
    return "".join(_UNICODE.get(ch, ch if ord(ch) < 128 else "?") for ch in "".join(out))


def _table(rows, escape) -> list[str]:
    """A table as wide as the text, in small type, ragged right: the first column (the rows'
    names) is as wide as its longest cell up to a third of the line, so that names do not wrap
    word by word; the other columns share the rest by the length of their longest cells."""
    cols = max(len(r) for r in rows)
    longest = [max((len(r[c]) if c < len(r) else 0) for r in rows) for c in range(cols)]
    line = 100                                          # characters of footnotesize type on a line
    first = min(max(longest[0], 6), line // 3)
    rest = [min(max(n, 6), 60) for n in longest[1:]]
    shares = [first / line] + [(1 - first / line) * w / sum(rest) for w in rest] if rest else [1.0]
    usable = 1.0 - 0.014 * cols                         # what the column gaps leave of the line
    spec = "".join(rf">{{\raggedright\arraybackslash}}p{{{usable * share:.3f}\linewidth}}" for share in shares)
    out = [r"{\footnotesize\setlength{\tabcolsep}{3pt}", rf"\begin{{longtable}}{{{spec}}}",
           r"\hline " + " & ".join(rf"\textbf{{{_plain(c, escape)}}}" if c else "" for c in rows[0])
           + r" \\ \hline \endhead"]
    out += [" & ".join(_plain(c, escape) for c in r) + r" \\" for r in rows[1:]]
    return out + [r"\hline", r"\end{longtable}}", ""]


def experiments_latex(section: ExperimentsSection, escape) -> list[str]:
    out = [r"\section*{Experiments}"]
    for block in section.blocks:
        if block[0] == "heading":
            out.append(rf"\subsection*{{{_plain(block[1], escape)}}}")
        elif block[0] == "text":
            out += [_plain(block[1], escape), ""]
        elif block[0] == "item":
            out += [r"\noindent\textbullet\ " + _plain(block[1], escape), ""]
        elif block[0] == "table":
            out += _table(block[1], escape)
        else:
            out += [r"\begin{figurehere}",
                    rf"\includegraphics[width=0.8\linewidth,height=0.36\textheight,keepaspectratio]{{{block[1]}}}",
                    rf"\caption{{{_plain(block[2], escape)}}}", r"\end{figurehere}", ""]
    return out
