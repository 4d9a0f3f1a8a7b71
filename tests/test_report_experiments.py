"""The report's Experiments section, read from what ``lnproofs reproduce`` writes."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from lnproofs.report.experiments import experiments_latex, experiments_markdown, read_experiments
from lnproofs.report.latex import escape

_SUMMARY = """# Reproduced experiments

## Experiment 1: the Majority task

Configuration: **default** — N 6,000, steps ≤ 0.2, angle 11–12°, d·x − Σx.

| arm | steps | paper |
|---|---|---|
| with projection | 283 ± 44 | about 3× |
| without projection | 631 | 70–83° |

- first key set: `centred` keys;
- second key set.

Figures: ![loss](majority/majority_loss.png), ![angle](majority/majority_angle.png)

## Experiment 2: keys of trained models

Queries anywhere in R^8; radius divided by sqrt(d).

| | layer 1 | layer 2 |
|---|---|---|
| without scaling (ours) | 55.3 | 57.7 |

Figure 4 (loss of both arms): ![loss](lm_tables/lm_loss.png)
"""


def test_section_blocks_markdown_and_latex(tmp_path):
    folder = tmp_path / "reports" / "experiments"
    folder.mkdir(parents=True)
    (folder / "summary.md").write_text(_SUMMARY, encoding="utf-8")
    assert read_experiments(tmp_path / "elsewhere", tmp_path / "reports") is None
    section = read_experiments(folder, tmp_path / "reports")
    kinds = [b[0] for b in section.blocks]
    # the line of figures is no paragraph of its own: its words go into the captions
    assert kinds == ["heading", "text", "table", "item", "item", "figure", "figure",
                     "heading", "text", "table", "figure"]
    assert section.blocks[2][1][1] == ("with projection", "283 ± 44", "about 3×")
    assert section.blocks[5][1] == "experiments/majority/majority_loss.png"
    # each figure is captioned with its experiment (and its own name where a line has several)
    assert section.blocks[5][2] == "Experiment 1: the Majority task \u2014 loss."
    assert section.blocks[10][2] == "Experiment 2: keys of trained models \u2014 Figure 4 (loss of both arms)."
    md = "\n".join(experiments_markdown(section))
    assert md.startswith("## Experiments") and "![" in md and "| without projection | 631 | 70–83° |" in md
    tex = "\n".join(experiments_latex(section, escape))
    assert r"\section*{Experiments}" in tex and r"\includegraphics" in tex and r"\begin{longtable}" in tex
    assert all(ord(ch) < 128 for ch in tex), [ch for ch in tex if ord(ch) >= 128]
    assert r"\textbf{default}" in tex and r"\texttt{centred}" in tex
    # ASCII mathematics typeset; figures stay in their section (no floats); tables as wide as the line
    assert r"$\mathbb{R}^{8}$" in tex and r"$\sqrt{d}$" in tex and r"\^{}" not in tex
    assert r"\begin{figure}" not in tex and tex.count(r"\begin{figurehere}") == 3
    assert tex.index(r"majority_angle.png") < tex.index("Experiment 2") < tex.index("lm_loss.png")
    specs = re.findall(r"\\begin\{longtable\}\{(.*)\}", tex)
    widths = [[float(w) for w in re.findall(r"p\{([0-9.]+)\\linewidth\}", spec)] for spec in specs]
    assert len(widths) == 2 and all(0.9 < sum(w) <= 1.0 for w in widths), widths
    assert widths[1][0] >= 0.2                       # "without scaling (ours)" fits on a line or two
    assert "$\\mathbb{R}^{8}$" in md


@pytest.mark.slow
def test_report_command_includes_the_experiments(cli, tmp_path):
    folder = tmp_path / "exp"
    folder.mkdir()
    (folder / "summary.md").write_text(_SUMMARY, encoding="utf-8")
    result = cli(["report", "--out", tmp_path / "r", "--no-recheck", "--no-pdf", "--experiments", folder])
    assert result.status == 0, result.err
    md = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    assert "## Experiments" in md and "../exp/majority/majority_loss.png" in md
    assert r"\section*{Experiments}" in (tmp_path / "r" / "report.tex").read_text(encoding="utf-8")
    missing = cli(["report", "--out", tmp_path / "r2", "--no-recheck", "--no-pdf", "--experiments", tmp_path / "no"])
    assert missing.status == 2 and "summary.md" in missing.err


def _png(path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1], [1, 0])
    fig.savefig(path)
    plt.close(fig)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("pdflatex") is None or shutil.which("pdftotext") is None,
                    reason="pdflatex or pdftotext is not installed: the PDF of the report is not built here")
def test_pdf_reads_without_ascii_mathematics(cli, tmp_path):
    """The PDF as a reader sees it (pdftotext): theorems, hypotheses, steps and the Experiments
    section show no ASCII pseudo-mathematics, and each experiment's figures sit in its section."""
    folder = tmp_path / "exp"
    folder.mkdir()
    (folder / "summary.md").write_text(_SUMMARY, encoding="utf-8")
    for name in ("majority/majority_loss.png", "majority/majority_angle.png", "lm_tables/lm_loss.png"):
        _png(folder / name)
    result = cli(["report", "--out", tmp_path / "r", "--no-recheck", "--experiments", folder])
    assert result.status == 0, result.err
    pdf = tmp_path / "r" / "report.pdf"
    assert pdf.is_file(), result.out + result.err
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    assert "Theorems and proofs" in text and "Experiment 2" in text
    for residue in ("sum j", "sum_j", "\u02c6", "^", "^{}", "1^T", "diag(a)^", "sqrt(n)", "mean(x)", "R ^8", "R^8"):
        assert residue not in text, (residue, text[max(0, text.find(residue) - 200):text.find(residue) + 200])
    one, two = text.index("Experiment 1: the Majority task\n"), text.index("Experiment 2: keys of trained models\n")
    assert one < text.index("the Majority task \u2013 angle") < two < text.index("(loss of both arms).")
