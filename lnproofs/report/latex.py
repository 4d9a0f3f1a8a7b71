"""LaTeX writer for :class:`lnproofs.report.build.Report` (compiles with pdflatex).

Only packages of a basic TeX installation are used: amsmath, amssymb, graphicx, longtable
and array.
"""

from __future__ import annotations

from ..derive import prose

__all__ = ["to_latex", "escape"]

_TABLE = {"\\": r"\textbackslash{}", "_": r"\_", "%": r"\%", "&": r"\&", "#": r"\#", "$": r"\$",
          "{": r"\{", "}": r"\}", "^": r"\^{}", "~": r"\~{}",
          # relations in math mode: in text mode without the T1 encoding they print as other glyphs
          "<": r"\ensuremath{<}", ">": r"\ensuremath{>}", "|": r"\ensuremath{|}"}


def escape(text) -> str:
    """Plain text -> LaTeX text (special characters escaped)."""
    return "".join(_TABLE.get(ch, ch) for ch in str(text))


def to_latex(report) -> str:
    from .model import CONVENTIONS, recheck_cell

    out = [
        r"\documentclass[10pt]{article}",
        r"\usepackage[utf8]{inputenc}",
        # T1 (with Latin Modern, where installed) so that text-mode symbols print as themselves
        r"\IfFileExists{lmodern.sty}{\usepackage{lmodern}\usepackage[T1]{fontenc}}{}",
        r"\usepackage{amsmath,amssymb,graphicx,longtable,array}",
        # figures that stay where they are written, in their own section (no floats), with a caption
        r"\makeatletter\newenvironment{figurehere}{\par\medskip\noindent\begin{minipage}{\linewidth}\centering"
        r"\def\@captype{figure}}{\end{minipage}\par\medskip}\makeatother",
        r"\setlength{\textwidth}{6.3in}\setlength{\oddsidemargin}{0.1in}\setlength{\evensidemargin}{0.1in}",
        r"\setlength{\textheight}{8.8in}\setlength{\topmargin}{-0.4in}",
        r"\allowdisplaybreaks",
        r"\sloppy",
        rf"\title{{LayerNorm and attention: proof report ($n = {report.n}$, convention {escape(report.convention)})}}",
        r"\author{lnproofs}",
        rf"\date{{{escape(report.generated)}}}",
        r"\begin{document}",
        r"\maketitle",
        r"\section*{What this report contains}",
        r"\begin{itemize}",
        rf"\item {len(report.proofs)} theorems, for general $n$ and for $n = {report.n}$; {report.proved} proved, "
        rf"{len(report.proofs) - report.proved} not proved. Every proof step was checked by SymPy when this "
        r"report was made.",
        r"\item Each theorem's numeric re-check with PyTorch, when PyTorch is installed.",
        r"\item Figures of LayerNorm's geometry and of attention selectability.",
    ]
    if report.keys is not None:
        out.append(rf"\item A certification of the keys in \texttt{{{escape(report.keys.source)}}}.")
    out += [r"\end{itemize}", r"\section*{Conventions}", r"\begin{itemize}",
            rf"\item Convention of the convention-dependent statements: \textbf{{{escape(report.convention)}}}: "
            rf"{prose.to_latex(CONVENTIONS[report.convention])}.",
            r"\item Both conventions' decomposition and interior theorems are always included.",
            r"\item $P = I - \tfrac{1}{n}\mathbf{1}\mathbf{1}^T$ projects onto the hyperplane orthogonal to "
            r"$\mathbf{1}$; $a$ is the gain, $b$ the bias, $\varepsilon$ the epsilon.",
            r"\end{itemize}",
            r"\section*{Versions}", r"\begin{tabular}{ll}", r"\hline package & version \\ \hline"]
    out += [rf"{escape(name)} & {escape(version)} \\" for name, version in report.versions]
    out += [r"\hline", r"\end{tabular}", r"\section*{Summary}", r"{\small",
            r"\begin{longtable}{p{5.2cm}lll p{4.6cm}}",
            r"\hline theorem & scope & status & steps & numeric re-check \\ \hline \endhead"]
    for p in report.proofs:
        scope = "general $n$" if p.n is None else f"$n = {p.n}$"
        checked = sum(1 for s in p.steps if s.checked)
        status = "proved" if p.proved else r"\textbf{FAILED}"
        out.append(rf"\texttt{{{escape(p.name)}}} & {scope} & {status} & {checked}/{len(p.steps)} & "
                   rf"{escape(recheck_cell(report.rechecks.get(p.name)))} \\")
    out += [r"\hline", r"\end{longtable}}", "", escape(report.recheck_note), "",
            r"\section*{Theorems and proofs}"]
    for p in report.proofs:
        out.append(p.to_latex())
        check = report.rechecks.get(p.name)
        if check is not None:
            out.append(rf"\noindent\textit{{Numeric re-check}} ({'passed' if check.passed else 'FAILED'}): "
                       rf"{check.samples} samples, largest error {escape(f'{check.max_error:.3e}')}, "
                       rf"tolerance {escape(f'{check.tolerance:.3e}')}, device {escape(check.device)}, "
                       rf"{escape(check.dtype)}.")
        out.append("")
    out.append(r"\section*{Figures}")
    for fig in report.figures:
        out += _figure(fig)
    if report.keys is not None:
        out += _keys_latex(report.keys)
    if report.experiments is not None:
        from .experiments import experiments_latex

        out += experiments_latex(report.experiments, escape)
    out.append(r"\end{document}")
    return "\n".join(out) + "\n"


def _figure(fig) -> list:
    return [r"\begin{figurehere}",
            rf"\includegraphics[width=0.92\linewidth,height=0.42\textheight,keepaspectratio]{{{fig.path}}}",
            rf"\caption{{{prose.to_latex(fig.caption)}}}", r"\end{figurehere}", ""]


def _keys_latex(section) -> list:
    out = [rf"\section*{{Certification of \texttt{{{escape(section.source)}}}}}",
           rf"{section.n_keys} keys in $\mathbb{{R}}^{{{section.dim}}}$, every query allowed. The certificate is in "
           rf"\texttt{{{escape(section.certificate_file)}}}; the exact checker "
           rf"{'accepted every claim' if section.check_ok else 'REJECTED a claim'}.", "",
           r"\begin{tabular}{lr}", r"\hline status & keys \\ \hline"]
    out += [rf"{escape(status)} & {count} \\" for status, count in section.summary.items()]
    out += [r"\hline", r"\end{tabular}", ""]
    if section.rows:
        out += [r"{\small", r"\begin{longtable}{lp{2cm}p{11cm}}", r"\hline key & status & certificate \\ \hline \endhead"]
        out += [rf"$k_{{{i}}}$ & {escape(status)} & {escape(text)} \\" for i, status, text in section.rows]
        out += [r"\hline", r"\end{longtable}}"]
    else:
        out.append("Every key is selectable: each has a witness query, checked exactly.")
    for fig in section.figures:
        out += _figure(fig)
    return out
