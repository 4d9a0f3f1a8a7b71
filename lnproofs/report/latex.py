"""LaTeX writer for :class:`lnproofs.report.build.Report` (compiles with pdflatex and bibtex).

Only packages of Debian's ``texlive-latex-base`` are used: amsmath, amssymb, amsthm,
graphicx, longtable, array, natbib (with plainnat) and hyperref.  The document is an
article: title, abstract, contents, numbered sections, numbered theorems with labels, the
experiments, references, and an index from theorem numbers to the software's names.
"""

from __future__ import annotations

from ..derive import prose
from .frame import concrete_cell, count_cells, frame_instances, general_cell

__all__ = ["to_latex", "escape", "INDEX_TITLE"]

#: the heading of the index, the one place where code names appear
INDEX_TITLE = "Index of result names"

_TABLE = {
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
    # relations in math mode: in text mode without the T1 encoding they print as other glyphs
    "<": r"\ensuremath{<}",
    ">": r"\ensuremath{>}",
    "|": r"\ensuremath{|}",
}


def escape(text) -> str:
    """Plain text -> LaTeX text (special characters escaped)."""
    return "".join(_TABLE.get(ch, ch) for ch in str(text))


def _text(text: str) -> str:
    from .experiments import latex_text

    return latex_text(text, escape)


_PREAMBLE = [
    r"\documentclass[10pt]{article}",
    r"\usepackage[utf8]{inputenc}",
    r"\IfFileExists{lmodern.sty}{\usepackage{lmodern}\usepackage[T1]{fontenc}}{}",
    r"\usepackage{amsmath,amssymb,amsthm,graphicx,longtable,array}",
    r"\usepackage[numbers]{natbib}",
    r"\usepackage[hidelinks]{hyperref}",
    r"\setlength{\textwidth}{6.3in}\setlength{\oddsidemargin}{0.1in}\setlength{\evensidemargin}{0.1in}",
    r"\setlength{\textheight}{8.8in}\setlength{\topmargin}{-0.4in}",
    r"\allowdisplaybreaks",
    r"\setlength{\LTcapwidth}{\linewidth}",
    r"\sloppy",
    r"\newtheorem{theorem}{Theorem}[section]",
    r"\newtheorem{lemma}[theorem]{Lemma}",
    r"\theoremstyle{definition}",
    r"\newtheorem{definition}[theorem]{Definition}",
    r"\newcommand{\proofskips}{\setlength{\abovedisplayskip}{3pt plus 2pt}\setlength{\belowdisplayskip}{3pt plus 2pt}"
    r"\setlength{\abovedisplayshortskip}{0pt plus 2pt}\setlength{\belowdisplayshortskip}{2pt plus 2pt}"
    r"\setlength{\jot}{2pt}}",
    r"\renewcommand{\textfraction}{0.1}\renewcommand{\topfraction}{0.85}\renewcommand{\floatpagefraction}{0.75}",
]


def to_latex(report) -> str:
    from . import frame
    from .proofs import SECTIONS, entries, theorem_latex

    names = [p.name for p in report.proofs]
    out = list(_PREAMBLE) + [
        rf"\title{{{escape(frame.TITLE)}}}",
        rf"\author{{{escape(frame.AUTHOR)}}}",
        r"\date{}",
        r"\hypersetup{pdftitle={" + escape(frame.TITLE) + "}, pdfauthor={" + escape(frame.AUTHOR) + "}, "
        "pdfsubject={" + escape(frame.SUBJECT) + "}, pdfkeywords={" + escape(frame.KEYWORDS) + "}}",
        f"% {report.generated}",
        r"\begin{document}",
        r"\maketitle",
        r"\begin{abstract}",
        _text(frame.abstract(report)),
        r"\end{abstract}",
        r"\tableofcontents",
        r"\clearpage",
        r"\section{Introduction}\label{sec:intro}",
    ]
    for paragraph in frame.introduction(report):
        out += [_text(paragraph), ""]
    out.append(r"\section{Setting and notation}\label{sec:setting}")
    for label, title, text in frame.definitions(report):
        out += [rf"\begin{{definition}}[{escape(title)}]\label{{{label}}}", prose.to_latex(text), r"\end{definition}"]
    out += [_text(frame.proof_convention()), ""]
    items = entries(report.proofs)
    for module, heading, _ in SECTIONS:
        chosen = [e for e in items if e.section == module]
        if not chosen:
            continue
        out.append(rf"\section{{{escape(heading)}}}\label{{sec:{module}}}")
        for entry in chosen:
            out += [theorem_latex(entry, names), ""]
    out += _instances(report, items)
    out += [r"\clearpage", r"\section{The geometry in figures}\label{sec:geometry}", _text(frame.geometry_text()), ""]
    for fig in report.figures:
        out += _figure(fig)
    if report.keys is not None:
        out += _keys_latex(report.keys)
    if report.experiments is not None:
        from .experiments import experiments_latex

        out += experiments_latex(report.experiments, escape)
    out += [
        r"\clearpage",
        r"\section{Software}\label{sec:software}",
        "The report was made with the following software.",
        "",
        r"\begin{center}\begin{tabular}{ll}",
        r"\hline package & version \\ \hline",
    ]
    out += [rf"{escape(name)} & {escape(version)} \\" for name, version in report.versions]
    out += [
        r"\hline",
        r"\end{tabular}\end{center}",
        "",
        r"\bibliographystyle{plainnat}",
        r"\bibliography{report}",
        "",
        r"\appendix",
        rf"\section{{{INDEX_TITLE}}}\label{{sec:index}}",
        "Each result of this report and the name under which the software proves it.",
        "",
        r"{\small\begin{longtable}{>{\raggedright\arraybackslash}p{0.16\linewidth}>{\raggedright\arraybackslash}"
        r"p{0.78\linewidth}}",
        r"\hline result & name \\ \hline \endhead",
    ]
    out += [rf"\ref{{thm:{e.name}}} & \texttt{{{escape(e.name)}}} \\" for e in items]
    out += [r"\hline", r"\end{longtable}}", r"\end{document}"]
    return "\n".join(out) + "\n"


def _instances(report, items) -> list[str]:
    from .proofs import label

    out = [
        r"\section{What was checked}\label{sec:instances}",
        _text(frame_instances(report, items)),
        "",
        _text(report.recheck_note),
        "",
        r"{\small\begin{longtable}{>{\raggedright\arraybackslash}p{0.09\linewidth}>{\raggedright\arraybackslash}"
        r"p{0.1\linewidth}>{\raggedleft\arraybackslash}p{0.07\linewidth}>{\raggedleft\arraybackslash}"
        r"p{0.09\linewidth}>{\raggedright\arraybackslash}p{0.17\linewidth}>{\raggedright\arraybackslash}"
        r"p{0.28\linewidth}}",
        rf"\caption{{What holds for each result: proved for general $n$, with the relations its printed proof "
        r"shows (each one check) and the checks it makes without printing them (the statement a chain proves, "
        r"routine checks; the HTML version lists each), proved for "
        rf"$n = {report.n}$ with explicit matrices (every check of that proof), and the numeric re-check.}}"
        r"\label{tab:instances}\\",
        *(
            rf"\hline result & general $n$ & shown & not printed & $n = {report.n}$ & numeric re-check \\ \hline " + end
            for end in (r"\endfirsthead", r"\endhead")
        ),
    ]
    for e in items:
        shown, hidden = count_cells(e)
        out.append(
            rf"\ref{{{label(e.name)}}} & {_text(general_cell(e))} & {shown} & {hidden} & {_text(concrete_cell(e))} & "
            rf"{_recheck(report.rechecks.get(e.name))} \\"
        )
    return out + [r"\hline", r"\end{longtable}}", ""]


def _recheck(check) -> str:
    if check is None:
        return "not run"
    verdict = "passed" if check.passed else r"\textbf{failed}"
    return (
        rf"{verdict}: error ${_sci(check.max_error)}$, tolerance ${_sci(check.tolerance)}$, "
        rf"{check.samples} samples"
    )


def _sci(value: float) -> str:
    if value == 0:
        return "0"
    mantissa, exponent = f"{value:.1e}".split("e")
    return rf"{mantissa} \times 10^{{{int(exponent)}}}"


def _figure(fig) -> list:
    from .experiments import figure_latex

    return figure_latex(fig.path, _text(fig.caption), fig.label or "fig:" + fig.path.rsplit("/", 1)[-1][:-4])


def _keys_latex(section) -> list:
    out = [
        r"\section{Certification of the given keys}\label{sec:keys}",
        rf"{section.n_keys} keys in $\mathbb{{R}}^{{{section.dim}}}$, every query allowed. The exact checker "
        rf"{'accepted every claim' if section.check_ok else 'rejected a claim'}.",
        "",
        r"\begin{center}\begin{tabular}{lr}",
        r"\hline status & keys \\ \hline",
    ]
    out += [rf"{escape(status)} & {count} \\" for status, count in section.summary.items()]
    out += [r"\hline", r"\end{tabular}\end{center}", ""]
    if section.rows:
        out += [
            r"{\small",
            r"\begin{longtable}{lp{2cm}p{11cm}}",
            r"\hline key & status & certificate \\ \hline \endhead",
        ]
        out += [rf"$k_{{{i}}}$ & {escape(status)} & {escape(text)} \\" for i, status, text in section.rows]
        out += [r"\hline", r"\end{longtable}}"]
    else:
        out.append("Every key is selectable: each has a witness query, checked exactly.")
    if section.figures:
        out += [
            "",
            "The figures show "
            + " and ".join(
                rf"{what} (Figure~\ref{{{fig.label}}})"
                for what, fig in zip(
                    ("the witness margins of the selectable keys", "the keys with their statuses"), section.figures
                )
            )
            + ".",
        ]
    for fig in section.figures:
        out += _figure(fig)
    return out
