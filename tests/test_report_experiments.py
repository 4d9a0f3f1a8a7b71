"""The report's experiments, built from the result files of each run (fixture results here)."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess

import numpy as np
import pytest

from lnproofs.experiments.blocks import Para, Table, fmt, fmt_ci, mean_ci, to_markdown
from lnproofs.experiments.majority_report import SMOOTHING, majority_blocks, steps_to_smoothed, write_section
from lnproofs.report.experiments import experiments_latex, has_results, read_experiments
from lnproofs.report.latex import escape

SEEDS = (11, 123, 42)


def _curve(steps, speed, seed, dip=None):
    rng = np.random.default_rng(seed)
    loss = 3.0 * np.exp(-speed * np.arange(1, steps + 1)) + 0.15 + 0.03 * rng.standard_normal(steps)
    if dip is not None:
        loss[dip - 1] = 0.05  # one batch far below its trend
    return loss


def _write_run(root, configuration, seeds, lr, steps, speeds=(0.02, 0.008)):
    """A Majority run folder as ``lnproofs reproduce majority`` leaves it: config, summary, CSVs."""
    (root / "runs").mkdir(parents=True)
    at = min(round(5000 * 1e-3 / lr), steps)
    for arm, speed in zip(("layernorm", "no-projection"), speeds):
        for seed in seeds:
            loss = _curve(steps, speed, seed)
            lines = ["step,epoch,train_loss,train_angle,test_accuracy,query_angle"]
            for k in range(1, steps + 1):
                angle = 15.0 + seed % 7 if arm == "layernorm" else 80.0 + seed % 3
                acc = f"{0.9 - (0.05 if arm != 'layernorm' else 0) + 1e-5 * seed:.6f}" if k % 50 == 0 else ""
                lines.append(f"{k},{(k - 1) // 20 + 1},{loss[k - 1]:.6g},{angle},{acc},{angle if acc else ''}")
            (root / "runs" / f"{arm}_seed{seed}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    stat = {"mean": float(steps), "std": 0.0, "min": float(steps), "max": float(steps), "n": len(seeds)}
    certificate = {
        "arm": "layernorm",
        "exact_m": False,
        "key_statuses": {"selectable": 20},
        "keys": 20,
        "uniform_free": {"status": "feasible"},
        "uniform_realisable": {"status": "infeasible", "proof": "every solution in the ball gives q = 0"},
    }
    summary = {
        "accuracy_step": at,
        "loss_target": 0.2,
        "seeds": list(seeds),
        "arms": {arm: {"final_step": stat} for arm in ("layernorm", "no-projection")},
        "certificates": {f"layernorm_seed{s}": certificate for s in seeds},
        "per_run": {},
    }
    config = {
        "configuration": configuration,
        "arms": ["layernorm", "no-projection"],
        "seeds": list(seeds),
        "device": "cpu",
        "three_d": None,
        "main": {
            "n_samples": 100_000,
            "length": 50,
            "classes": 20,
            "d": 8,
            "batch": 6000,
            "lr": lr,
            "decay_steps": 170_000,
            "steps": steps,
            "min_delta": 6,
            "eval_every": 50,
        },
        "note": "load average 4 to 8 on two cores",
        "rationale": "It does not fit the 10 minutes aimed at",
    }
    from lnproofs.experiments.majority import summarise

    made = summarise(root, seeds, config["main"], ("layernorm", "no-projection"))
    summary.update(arms=made["arms"], per_run=made["per_run"], accuracy_step=made["accuracy_step"])
    (root / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    (root / "config.json").write_text(json.dumps(config), encoding="utf-8")
    for name in ("majority_loss.png", "majority_accuracy.png", "majority_angle.png"):
        _png(root / name)
    return summary, config


def _write_lm(root):
    root.mkdir(parents=True)
    layer = {"n": 100, "selectable": 50, "unselectable": 50, "tie-only": 0, "undecided": 0, "seconds": 0.1}
    ok = {"n": 100, "selectable": 100, "unselectable": 0, "tie-only": 0, "undecided": 0, "seconds": 0.1}
    texts = []
    for t in range(3):
        moved = dict(layer, selectable=40 + 5 * t, unselectable=60 - 5 * t)
        texts.append(
            json.dumps(
                {"text": t, "tokens": 100, "counts": {"without": [moved] * 4, "before": [layer] * 4, "with": [ok] * 4}}
            )
        )
    (root / "per_text.jsonl").write_text("\n".join(texts) + "\n", encoding="utf-8")
    entry = {"keys": 300, "layer": 1, "std_pct": 0.0, "undecided_pct": 0.0, "unselectable_pct": 55.0}
    summary = {
        "tables": {k: [entry] * 4 for k in ("without", "before", "with")},
        "texts": 3,
        "after_keys": 1200,
        "after_not_selectable": 0,
        "radius_spread": [{"layer": 1, "min": 0.99, "max": 0.999}],
    }
    config = {
        "configuration": "default",
        "eps": 1e-5,
        "corpus": "a small corpus",
        "tokens_train": 12345,
        "vocab_size": 512,
        "steps": 300,
        "batch": 8,
        "block": 128,
        "lr": 3e-3,
        "min_len": 768,
        "max_len": 1024,
    }
    (root / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    (root / "config.json").write_text(json.dumps(config), encoding="utf-8")
    for arm in ("scaling", "centering"):
        rows = ["step,train_loss,test_loss"] + [
            f"{k},{8 - k / 100:.4f},{8 - k / 100 if k % 50 == 0 else ''}" for k in range(1, 301)
        ]
        (root / f"loss_{arm}.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    _png(root / "lm_loss.png")


def _png(path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1], [1, 0])
    fig.savefig(path)
    plt.close(fig)


@pytest.fixture()
def experiments(tmp_path):
    """An experiments folder with both Majority runs, the language-model run and, as a trap,
    the stale combined summary.md of an older run, which must not reach the report."""
    folder = tmp_path / "reports" / "experiments"
    _write_run(folder / "majority", "default", SEEDS, 3e-3, 600)
    _write_run(folder / "majority_paper", "paper", (11,), 1e-3, 900)
    _write_lm(folder / "lm_tables")
    (folder / "summary.md").write_text(
        "## Experiment 1: the Majority task, the paper's configuration\n\n"
        "- **default**: N 20,000, batch 2,000, 3 seed(s), angle 50.4\n",
        encoding="utf-8",
    )
    return folder


def _paragraphs(blocks):
    return [b.text for b in blocks if isinstance(b, Para)]


def test_one_default_configuration_and_no_repeated_paragraph(experiments, tmp_path):
    section = read_experiments(experiments, tmp_path / "reports")
    md = "\n".join(to_markdown(section.blocks))
    assert md.count("## Experiment 1: the Majority task") == 1
    settings = next(b for b in section.blocks if isinstance(b, Table) and b.label == "tab:majority-settings")
    assert [h for h in settings.header if "default" in h] == ["the default configuration"]
    assert settings.header.count("the paper's configuration") == 1
    paragraphs = _paragraphs(section.blocks)
    assert len(paragraphs) == len(set(paragraphs)), "a paragraph is printed twice"
    # nothing of the stale summary.md, and nothing of the configurations' notebook notes
    for stale in ("20,000", "50.4", "seed(s)", "load average", "10 minutes"):
        assert stale not in md, stale
    # each labelled table and figure once, and every reference points at one of them
    labels = [b.label for b in section.blocks if hasattr(b, "label") and b.label]
    assert len(labels) == len(set(labels))
    for ref in re.findall(r"\[\[((?:fig|tab):[^\]]+)\]\]", " ".join(paragraphs)):
        assert ref in labels, ref


def test_numbers_come_from_the_run_files(experiments, tmp_path):
    """The smoothed steps of the table are those of the fixture's CSVs; a second run's values
    never enter a run folder's own summary.md."""
    from lnproofs.experiments.outputs import read_rows

    section = read_experiments(experiments, tmp_path / "reports")
    findings = next(b for b in section.blocks if isinstance(b, Table) and b.label == "tab:majority-findings")
    steps = [
        steps_to_smoothed(read_rows(experiments / "majority" / "runs" / f"layernorm_seed{s}.csv"), 0.2) for s in SEEDS
    ]
    row = next(r for r in findings.rows if r[0] == "steps to smoothed loss 0.2, with projection")
    assert row[2] == fmt_ci(steps, 3)
    paper_steps = steps_to_smoothed(read_rows(experiments / "majority_paper" / "runs" / "layernorm_seed11.csv"), 0.2)
    assert row[3] == fmt(paper_steps)
    path = write_section(experiments / "majority_paper")
    own = path.read_text(encoding="utf-8")
    assert "the paper's configuration" in own and "the default configuration" not in own
    assert "$3 \\times 10^{-3}$" not in own  # the default run's learning rate


def test_smoothed_loss_ignores_a_single_batch():
    rows = [{"step": k + 1, "train_loss": v} for k, v in enumerate(_curve(1000, 0.01, 1, dip=150))]
    first_single = next(r["step"] for r in rows if r["train_loss"] <= 0.2)
    assert first_single == 150
    smoothed = steps_to_smoothed(rows, 0.2)
    assert smoothed is not None and smoothed > first_single + SMOOTHING // 2
    window = [r["train_loss"] for r in rows[smoothed - SMOOTHING : smoothed]]
    assert np.mean(window) <= 0.2 < np.mean([r["train_loss"] for r in rows[smoothed - 1 - SMOOTHING : smoothed - 1]])


def test_confidence_interval_and_number_format():
    mean, half, n = mean_ci([1.0, 2.0, 3.0])
    assert (mean, n) == (2.0, 3) and math.isclose(half, 4.302652729911275 / math.sqrt(3), rel_tol=1e-9)
    assert mean_ci([5.0])[1] is None and fmt_ci([5.0]) == "5.00"
    assert fmt(1292) == "1,292" and fmt(0.00005) == "0.0000500" and "e" not in fmt(123456789.0)


def test_markdown_and_latex_of_the_blocks(experiments, tmp_path):
    section = read_experiments(experiments, tmp_path / "reports")
    md = "\n".join(to_markdown(section.blocks))
    assert "Brody, Alon and Yahav (2023)" in md and "[[" not in md
    assert re.search(r"\*Figure \d+\.\* Training loss in the default configuration", md)
    assert "](experiments/majority/majority_loss.png)" in md
    tex = "\n".join(experiments_latex(section, escape))
    assert all(ord(ch) < 128 for ch in tex), [ch for ch in tex if ord(ch) >= 128]
    assert r"\citet{brody2023}" in tex and r"Table~\ref{tab:majority-settings}" in tex
    assert tex.count(r"\label{fig:majority-default-loss}") == 1 and r"\begin{longtable}" in tex
    assert "[[" not in tex and "`" not in tex


def test_without_results_there_is_no_section(tmp_path):
    assert read_experiments(tmp_path / "nothing", tmp_path) is None
    assert not has_results(tmp_path / "nothing")
    assert majority_blocks([tmp_path / "nothing"]) == ()


def _pdf_text(pdf):
    return subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout


@pytest.mark.slow
@pytest.mark.skipif(
    any(shutil.which(tool) is None for tool in ("pdflatex", "bibtex", "pdftotext")),
    reason="pdflatex, bibtex or pdftotext is not installed: the PDF of the report is not built here",
)
def test_pdf_reads_as_a_paper(cli, experiments, tmp_path):
    """The PDF as a reader sees it (pdftotext): an abstract, contents, numbered results and
    references; no code name of a result, no notebook phrase and no ASCII mathematics before
    the index at the end."""
    from lnproofs.derive.registry import theorem_names

    result = cli(["report", "--out", tmp_path / "r", "--no-recheck", "--experiments", experiments])
    assert result.status == 0, result.err
    text = _pdf_text(tmp_path / "r" / "report.pdf")
    for heading in ("Abstract", "Contents", "1 Introduction", "References", "Index of result names"):
        assert heading in text, heading
    assert re.search(r"Lemma 3\.1 \(", text) and re.search(r"Theorem 4\.1 \(", text)
    assert "Brody" in text.split("References")[1]
    body, index = text.split("Index of result names\n")[0], text.rsplit("Index of result names", 1)[1]
    for name in theorem_names():  # pdftotext reads a typewriter underscore as a space
        for form in (name, name.replace("_", " ")):
            assert form not in body, form
            assert form in index or name.replace("_", " ") in index, name
    notebook = (
        "(s)",
        "load average",
        "two cores",
        "ARM_seed",
        "norm1",
        "min_delta",
        "ln_1",
        "W_Q^T",
        "@",
        "e+0",
        "e-0",
        "sum_j",
        "sqrt(",
        "R^8",
        "\u02c6",
        "--no-recheck",
        "summary.md",
        "`",
    )
    for phrase in notebook:
        assert phrase not in body, (phrase, body[max(0, body.find(phrase) - 200) : body.find(phrase) + 200])
    assert "Experiment 1: the Majority task" in text and "Experiment 2" in text
    assert text.count("Figure 1: ") == 1 and "Table 1: " in text
    # the whole report, as Markdown: one Experiment 1, one default configuration, no paragraph twice
    md = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    assert len(re.findall(r"^## \d+\. Experiment 1: the Majority task$", md, flags=re.M)) == 1
    assert (
        len(
            re.findall(
                r"^\| setting \| the paper \| the default configuration \| the paper's configuration \|$",
                md,
                flags=re.M,
            )
        )
        == 1
    )
    paragraphs = [
        p.strip()
        for p in md.split("\n\n")
        if len(p.strip()) > 80 and not re.match(r"(\||- |\s*\$\$|!\[|\d+\. |Hence |\*\*(Theorem|Lemma))", p.strip())
    ]
    assert len(paragraphs) == len(set(paragraphs)), [p[:80] for p in paragraphs if paragraphs.count(p) > 1]


def test_figure1_section_from_its_counts(tmp_path):
    """Every number of the Figure 1 section is read from figure1_counts.csv."""
    from lnproofs.report.figure1_section import figure1_blocks

    folder = tmp_path / "figure1"
    folder.mkdir()
    rows = [
        "n,d,trials,without_nonselectable,without_all_selectable,without_undecided,with_nonselectable,"
        "with_all_selectable,with_undecided"
    ]
    counts = {(3, 3): 0, (3, 4): 0, (6, 3): 20, (6, 4): 4, (9, 3): 20, (9, 4): 7}
    rows += [f"{n},{d},20,{k},{20 - k},0,0,20,0" for (n, d), k in counts.items()]
    (folder / "figure1_counts.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert figure1_blocks(tmp_path / "absent") == ()
    blocks = figure1_blocks(folder, prefix="figure1/")
    text = " ".join(b.text for b in blocks if isinstance(b, Para))
    assert "reaches 1 at $n = 6$" in text and "from 1 at $d = 3$ to 0.35 at $d = 4$" in text
    assert "No trial was left undecided." in text and "20 trials per cell" in text and "0.11." in text
    # the panel with LayerNorm is 0 in every cell: it carries no information and is not drawn
    assert [b.path for b in blocks if hasattr(b, "path")] == ["figure1/figure1c.png"]


_NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.])\d+\.\d+|(?<![\w.,])\d{2,}(?![\w,])")


def _numbers(text: str) -> set[str]:
    """The numbers a reader sees in ``text``: 1,407, 0.954, 55.3, 14,612 (single digits left out)."""
    return set(_NUMBER.findall(re.sub(r"\$[^$]*\$", lambda m: m.group(0).replace("{,}", ","), text)))


@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="pdftotext is not installed")
def test_every_number_of_the_experiments_in_the_committed_pdf_comes_from_the_result_files():
    """The experiments' tables and paragraphs, computed afresh from the committed result files
    (summary.json of each run, the Figure 1 counts, the unargmaxable counts), show only numbers the
    committed PDF shows: one computation for the result files and the report."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "reports"
    pdf = root / "report.pdf"
    if not pdf.is_file() or not has_results(root / "experiments"):
        pytest.skip("no committed report with experiments")
    shown = re.sub(r"\s+", " ", _pdf_text(pdf))
    section = read_experiments(root / "experiments", root)
    texts = []
    for block in section.blocks:
        if isinstance(block, Table):
            texts += [cell for row in block.rows for cell in row] + [block.caption]
        elif isinstance(block, Para):
            texts.append(block.text)
    numbers = set().union(*(_numbers(t) for t in texts))
    assert len(numbers) > 50
    in_pdf = _numbers(shown)
    assert numbers <= in_pdf, sorted(numbers - in_pdf)[:20]
    # and the headline numbers of each result file, read directly
    majority = json.loads((root / "experiments" / "majority" / "summary.json").read_text())
    for arm in ("layernorm", "no-projection"):
        assert fmt_int(majority["arms"][arm]["steps_to_smoothed_loss"]["mean"]) in in_pdf
    lm = json.loads((root / "experiments" / "lm_tables" / "summary.json").read_text())
    for row in lm["tables"]["without"]:
        assert f"{row['unselectable_pct']:.1f}" in in_pdf, row
    assert fmt_int(lm["after_keys"]) in in_pdf


def fmt_int(value) -> str:
    return f"{round(value):,}"
