"""The report's experiments, built from the result files of each run.

The Majority runs (``majority/``, ``majority_paper/``) and the language-model run
(``lm_tables/``) under the experiments folder, and the Figure 1 counts (``figure1/`` beside
the report), each give their own blocks (:mod:`lnproofs.experiments.blocks`); nothing is read
from a previously written ``summary.md``, so no section outlives its run.  The blocks are
rendered here as LaTeX; Markdown uses :func:`lnproofs.experiments.blocks.to_markdown`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..experiments.blocks import REF, Figure, Heading, Items, Para, Table

__all__ = ["ExperimentsSection", "read_experiments", "has_results", "experiments_latex", "latex_text", "RUN_FOLDERS"]

#: the run folders under the experiments folder, in the order of the report
RUN_FOLDERS = ("majority", "majority_paper", "lm_tables")

#: the non-ASCII characters of the write-ups, for pdflatex
_UNICODE = {
    "±": r"\ensuremath{\pm}",
    "≤": r"\ensuremath{\le}",
    "≥": r"\ensuremath{\ge}",
    "×": r"\ensuremath{\times}",
    "°": r"\ensuremath{^\circ}",
    "−": "-",
    "–": "--",
    "—": "---",
    "·": r"\ensuremath{\cdot}",
    "∎": "",
    "“": "``",
    "”": "''",
    "≈": r"\ensuremath{\approx}",
}


@dataclass(frozen=True)
class ExperimentsSection:
    source: str
    blocks: tuple
    findings: tuple = ()  # one sentence per experiment's main finding, for the abstract


def has_results(folder) -> bool:
    """Whether ``folder`` holds the results of at least one run."""
    folder = Path(folder)
    return any((folder / name / "summary.json").is_file() for name in RUN_FOLDERS)


def read_experiments(folder, report_folder, figure1=None) -> ExperimentsSection | None:
    """The section from the runs in ``folder`` and the Figure 1 counts in ``figure1`` (default
    ``report_folder/figure1``); None when there are none."""
    from ..experiments.lm_report import lm_blocks
    from ..experiments.majority_report import majority_blocks, majority_finding
    from .figure1_section import figure1_blocks

    folder, report_folder = Path(folder), Path(report_folder)
    figure1 = Path(figure1) if figure1 is not None else report_folder / "figure1"

    def rel(path: Path) -> str:
        return Path(os.path.relpath(path, report_folder)).as_posix() + "/"

    blocks = list(majority_blocks([folder / "majority", folder / "majority_paper"], prefix_of=rel))
    blocks += lm_blocks(folder / "lm_tables", prefix=rel(folder / "lm_tables"))
    blocks += figure1_blocks(figure1, prefix=rel(figure1))
    from .unargmaxable_section import unargmaxable_blocks, unargmaxable_finding

    blocks += unargmaxable_blocks(report_folder / "unargmaxable")
    findings = tuple(f for f in (majority_finding([folder / "majority", folder / "majority_paper"]),) if f)
    findings += tuple(f for f in (unargmaxable_finding(report_folder / "unargmaxable"),) if f)
    return ExperimentsSection(str(folder), tuple(blocks), findings) if blocks else None


def latex_text(text: str, escape) -> str:
    """Block text -> LaTeX: references, ``**bold**`` and ``$...$`` kept, the rest escaped."""
    out, pos = [], 0
    pattern = re.compile(r"\*\*(.+?)\*\*|\$([^$]+)\$|" + REF.pattern)
    for m in pattern.finditer(text):
        out.append(escape(text[pos : m.start()]))
        if m.group(1):
            out.append(rf"\textbf{{{latex_text(m.group(1), escape)}}}")
        elif m.group(2):
            out.append(f"${m.group(2)}$")
        else:
            label, kind = m.group(3), m.group(4)
            if kind == "cite":
                key = label[5:]
                out.append(
                    rf"\citet{{{key}}}" if key in ("brody2023", "riechers2024", "grivas2022") else rf"\citep{{{key}}}"
                )
            else:
                word = {"fig": "Figure", "tab": "Table", "sec": "Section", "thm": "Theorem"}[kind]
                out.append(rf"{word}~\ref{{{label}}}")
        pos = m.end()
    out.append(escape(text[pos:]))
    return "".join(_UNICODE.get(ch, ch if ord(ch) < 128 else "?") for ch in "".join(out))


def _table(block: Table, escape) -> list[str]:
    """A table as wide as the text, in small type, its columns sized by their longest cells."""
    rows = [block.header] + list(block.rows)
    cols = len(block.header)
    longest = [max(len(r[c]) if c < len(r) else 0 for r in rows) for c in range(cols)]
    sizes = [min(max(n, 12), 60) for n in longest]
    usable = 1.0 - 0.018 * cols
    spec = "".join(rf">{{\raggedright\arraybackslash}}p{{{usable * s / sum(sizes):.3f}\linewidth}}" for s in sizes)
    head = r"\hline " + " & ".join(latex_text(c, escape) for c in block.header) + r" \\ \hline"
    out = [
        r"{\small\setlength{\tabcolsep}{3pt}",
        rf"\begin{{longtable}}{{{spec}}}",
        rf"\caption{{{latex_text(block.caption, escape)}}}\label{{{block.label}}}\\",
        head + r" \endfirsthead",
        head + r" \endhead",
    ]
    out += [" & ".join(latex_text(c, escape) for c in r) + r" \\" for r in block.rows]
    return out + [r"\hline", r"\end{longtable}}", ""]


def figure_latex(path: str, caption: str, label: str, width: str = "0.85") -> list[str]:
    return [
        r"\begin{figure}[!htbp]",
        r"\centering",
        rf"\includegraphics[width={width}\linewidth,height=0.4\textheight,keepaspectratio]{{{path}}}",
        rf"\caption{{{caption}}}\label{{{label}}}",
        r"\end{figure}",
        "",
    ]


def experiments_latex(section: ExperimentsSection, escape) -> list[str]:
    out = []
    for block in section.blocks:
        if isinstance(block, Heading):
            command = "section" if block.level == 1 else "subsection"
            if block.level == 1:
                out.append(r"\clearpage")  # the figures of the part before stay there
            out.append(
                rf"\{command}{{{latex_text(block.text, escape)}}}"
                + (rf"\label{{{block.label}}}" if block.label else "")
            )
        elif isinstance(block, Para):
            out += [latex_text(block.text, escape), ""]
        elif isinstance(block, Items):
            out += [r"\begin{itemize}"] + [rf"\item {latex_text(i, escape)}" for i in block.items] + [r"\end{itemize}"]
        elif isinstance(block, Table):
            out += _table(block, escape)
        elif isinstance(block, Figure):
            wide = any(part in block.path for part in ("lm_loss", "_3d", "figure1ab"))  # panels side by side
            out += figure_latex(block.path, latex_text(block.caption, escape), block.label, "1.0" if wide else "0.8")
    return out
