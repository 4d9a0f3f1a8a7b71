"""Figures, CSV tables and the write-up of the language-model experiment, from its result files.

:func:`lm_blocks` reads ``config.json``, ``summary.json``, ``per_text.jsonl`` and the loss
CSVs of one run and builds its text once (:mod:`.blocks`): the paper's setting beside ours,
Tables 1 and 2 with a 95% confidence interval over the measured texts, and the loss figure.
:func:`write_lm_section` writes the run's ``summary.md`` and CSV tables from them.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

from ..certificates.writes import replacing, write_text
from .blocks import Figure, Heading, Para, Table, fmt, fmt_int, mean_ci, to_markdown
from .outputs import read_rows

__all__ = ["write_lm_figures", "write_lm_section", "lm_blocks", "per_text_fractions"]

_ARMS = (("scaling", "tab:blue", "with scaling (LayerNorm)"), ("centering", "tab:orange", "without scaling (centring)"))


def write_lm_figures(root: Path) -> dict[str, str]:
    """lm_loss.png: the loss of both arms (left) and the difference between them (right)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    from .majority_report import smoothed

    curves = {arm: read_rows(root / f"loss_{arm}.csv") for arm, _, _ in _ARMS if (root / f"loss_{arm}.csv").is_file()}
    window = 20
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.6, 3.8), dpi=120)
    for arm, colour, label in _ARMS:
        if arm not in curves:
            continue
        rows = curves[arm]
        train = smoothed([r["train_loss"] for r in rows], window)
        left.plot([r["step"] for r in rows][window - 1 :], train, color=colour, lw=1.0, label=f"{label}, training")
        test = [r for r in rows if r.get("test_loss") is not None]
        left.plot(
            [r["step"] for r in test],
            [r["test_loss"] for r in test],
            color=colour,
            lw=1.4,
            ls="--",
            marker="o",
            ms=3,
            label=f"{label}, held out",
        )
    if len(curves) == 2:
        a, b = curves["centering"], curves["scaling"]
        diff = np.array([x["train_loss"] - y["train_loss"] for x, y in zip(a, b)])
        right.plot(
            [r["step"] for r in a][window - 1 :], smoothed(diff, window), color="black", lw=1.0, label="training"
        )
        held = [(x["step"], x["test_loss"] - y["test_loss"]) for x, y in zip(a, b) if x.get("test_loss") is not None]
        right.plot(
            [s for s, _ in held], [d for _, d in held], color="black", ls="--", marker="o", ms=3, label="held out"
        )
        right.axhline(0, color="grey", lw=0.6)
    left.set_xlabel("training step")
    left.set_ylabel(f"next-token loss (training: mean of {window} steps)", fontsize=8)
    left.legend(fontsize=7)
    right.set_xlabel("training step")
    right.set_ylabel("loss without scaling minus loss with scaling", fontsize=8)
    right.legend(fontsize=7)
    fig.tight_layout()
    with replacing(root / "lm_loss.png", binary=True) as handle:
        fig.savefig(handle, format="png")
    plt.close(fig)
    return {"loss": "lm_loss.png"}


def _write_csv(path: Path, header, rows) -> None:
    with replacing(path) as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)


def per_text_fractions(root: Path, texts: int | None = None) -> dict:
    """key set -> layer -> the percentages of keys certified not selectable, one per text
    (the first ``texts`` texts, the ones the run's summary counts)."""
    out: dict = {}
    path = root / "per_text.jsonl"
    if not path.is_file():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        if texts is not None and record["text"] >= texts:
            continue
        for name, layers in record["counts"].items():
            for i, c in enumerate(layers):
                out.setdefault(name, {}).setdefault(i, []).append(100.0 * (c["unselectable"] + c["tie-only"]) / c["n"])
    return out


def _cell(values) -> str:
    mean, half, n = mean_ci(values)
    if mean is None:
        return "none"
    if half is None or not any(values):
        return f"{mean:.1f}" if any(values) else "0"
    return f"{mean:.1f} ± {half:.1f}"


def _agreement(fractions: dict, paper: dict) -> str:
    """Per table row, the layers where the paper's value lies in our 95% interval and those where not."""
    parts = []
    for name, words in (("without", "without scaling"), ("before", "before LayerNorm")):
        per = fractions.get(name, {})
        inside, outside = [], []
        for i, value in enumerate(paper[name]):
            mean, half, _ = mean_ci(per.get(i, []))
            if mean is None:
                continue
            (inside if half is not None and abs(mean - value) <= half else outside).append((i + 1, mean, half, value))
        if outside:
            parts.append(
                f"{words}, our interval excludes the paper's value in layer"
                + ("s " if len(outside) > 1 else " ")
                + ", ".join(
                    f"{k} ({m:.1f} ± {h:.1f} against {v:g})" if h is not None else f"{k} ({m:.1f} against {v:g})"
                    for k, m, h, v in outside
                )
                + (
                    f" and holds it in layer{'s' if len(inside) > 1 else ''} " + ", ".join(str(k) for k, *_ in inside)
                    if inside
                    else ""
                )
            )
        elif inside:
            parts.append(f"{words}, our interval holds the paper's value in every layer")
    if not parts:
        return ""
    return "but the values differ: " + "; ".join(parts) + "."


def _undecided(summary: dict) -> bool:
    return any(e["undecided_pct"] > 0 for entries in summary["tables"].values() for e in entries)


def lm_blocks(root: Path, prefix: str = "") -> tuple:
    """The write-up of the run in ``root`` (empty when it holds no results)."""
    from .paper import PAPER_LM_SETTING as P
    from .paper import PAPER_TABLES

    root = Path(root)
    if not ((root / "summary.json").is_file() and (root / "config.json").is_file()):
        return ()
    summary = json.loads((root / "summary.json").read_text(encoding="utf-8"))
    config = json.loads((root / "config.json").read_text(encoding="utf-8"))
    fractions = per_text_fractions(root, summary["texts"])
    t = summary["tables"]
    layers = range(len(t["without"]))
    texts = summary["texts"]

    def ours(name):
        per = fractions.get({"without": "without", "before": "before", "with": "with"}[name], {})
        if per:
            return tuple(_cell(per.get(i, [])) for i in layers)
        return tuple(f"{e['unselectable_pct']:.1f}" for e in t[name])

    def paper(name):
        return tuple(f"{v:g}" for v in PAPER_TABLES[name])

    header = ("", *(f"layer {i + 1}" for i in layers))
    interval = (
        f"mean over the {texts} texts $\\pm$ the half-width of its 95% confidence interval (Student's $t$)"
        if texts > 1
        else "one text"
    )
    table1 = Table(
        "tab:lm-table1",
        f"Percentage of keys certified not selectable right before attention (the paper's Table 1). Ours: {interval}.",
        header,
        (
            ("without scaling, ours", *ours("without")),
            ("without scaling, the paper", *paper("without")),
            ("with scaling, ours", *ours("with")),
            ("with scaling, the paper", *paper("with")),
        ),
    )
    table2 = Table(
        "tab:lm-table2",
        f"With scaling: percentage of keys certified not selectable before and after "
        f"LayerNorm (the paper's Table 2). Ours: {interval}.",
        header,
        (
            ("before LayerNorm, ours", *ours("before")),
            ("before LayerNorm, the paper", *paper("before")),
            ("after LayerNorm, ours", *ours("with")),
            ("after LayerNorm, the paper", *paper("after")),
        ),
    )
    settings = Table(
        "tab:lm-settings",
        "Trained language models: the paper's setting and ours.",
        ("setting", "the paper", "ours"),
        (
            (
                "model",
                P["model"],
                f"the same architecture, width 8, 4 heads, 4 layers, $\\epsilon = {_tex_number(config['eps'])}$",
            ),
            ("corpus", P["corpus"], f"{config['corpus']} ({fmt_int(config['tokens_train'])} training tokens)"),
            (
                "tokenizer",
                P["tokenizer"],
                f"byte-level BPE trained on the corpus ({fmt_int(config['vocab_size'])} tokens)",
            ),
            (
                "training",
                f"{fmt_int(P['steps'])} steps of batch {P['batch']}",
                f"{fmt_int(config['steps'])} steps of batch {config['batch']} with blocks of "
                f"{fmt_int(config['block'])} tokens, AdamW at {fmt(config['lr'], 1)} with linear decay",
            ),
            (
                "texts measured",
                P["texts"],
                f"{texts} held-out texts of {fmt_int(config['min_len'])} to {fmt_int(config['max_len'])} tokens",
            ),
            ("decision", P["decision"], "exact certificates"),
        ),
    )
    intro = (
        "[[cite:brody2023]] train two small GPT-2 models from scratch, one with LayerNorm before attention and "
        "one whose norm only centres its input (projection without scaling), and count the keys that no "
        "query can select: all positions of a text form one key set, and the queries range over the whole "
        "space. In both arms the first norm of every block has its gain and bias frozen at 1 and 0. "
        "[[tab:lm-settings]] sets their setting beside ours. Our models are far smaller in training (a few "
        "hundred steps on a small corpus instead of 50,000 steps on Wikipedia) and are measured on a few "
        "texts, so the comparison is of the pattern, not of the values: a large share of unselectable keys "
        "without scaling and none with it."
    )
    method = (
        "Every key is decided exactly: a key counts as not selectable only with a checked certificate (a "
        "convex combination of the other keys, or a proof that it can only tie), and as selectable only with "
        "a witness query under which it wins strictly, checked in exact arithmetic however small its margin. "
        "The keys without scaling are the norm's inputs centred exactly; the keys before LayerNorm are its "
        "inputs as the model computed them; the keys with scaling are the exact LayerNorm outputs, "
        "$\\epsilon$ included, decided from the inputs without rounding the outputs."
        + (" Undecided keys are counted apart." if _undecided(summary) else " No key was left undecided.")
    )
    spread = summary.get("radius_spread") or []
    results = (
        "[[tab:lm-table1]] and [[tab:lm-table2]] give the percentages per layer. Without scaling, and before "
        "LayerNorm, a large share of the keys is not selectable in every layer, as the paper finds; "
        + _agreement(fractions, PAPER_TABLES)
        + f" With scaling none is: {fmt_int(summary.get('after_not_selectable', 0))} of "
        f"{fmt_int(summary.get('after_keys', 0))} keys after LayerNorm are certified not selectable. The "
        f"intervals reflect only the variation between the {texts} texts of one trained model per arm; the "
        "variation between training runs is not measured."
    )
    if spread:
        low = min(s["min"] for s in spread)
        results += (
            f" With $\\epsilon = {_tex_number(config['eps'])}$ the outputs of LayerNorm do not all lie on one "
            f"sphere (their norm divided by $\\sqrt{{d}}$ ranges from {low:.4f} to 1 over the layers), so "
            "the geometry alone does not guarantee that every key is selectable; the certificates decide "
            "it key by key."
        )
    loss = (
        "[[fig:lm-loss]] shows the loss of both arms. The two arms differ by less than one hundredth in held-out loss"
        if _small_gap(root)
        else "[[fig:lm-loss]] shows the loss of both arms"
    )
    loss += "; the paper reports a held-out loss of about 7.33 with scaling and 7.38 without after 50,000 steps."
    figure = Figure(
        "fig:lm-loss",
        f"{prefix}lm_loss.png",
        "Left: training loss (the mean of the last 20 steps) and held-out loss of the two language models. "
        "Right: the loss without scaling minus the loss with scaling; the two curves on the left overlap "
        "because this difference is small.",
    )
    return (
        Heading("Experiment 2: unselectable keys in trained language models", 1, "sec:lm"),
        Para(intro),
        settings,
        Para(method),
        Para(results),
        table1,
        table2,
        Para(loss),
        figure,
    )


def _small_gap(root: Path) -> bool:
    try:
        a, b = read_rows(root / "loss_centering.csv"), read_rows(root / "loss_scaling.csv")
    except OSError:
        return False
    gaps = [abs(x["test_loss"] - y["test_loss"]) for x, y in zip(a, b) if x.get("test_loss") is not None]
    return bool(gaps) and max(gaps) < 0.01


def _tex_number(value: float) -> str:
    mantissa, exponent = f"{value:e}".split("e")
    mantissa = f"{float(mantissa):g}"
    exponent = int(exponent)
    if exponent == 0:
        return mantissa
    return f"10^{{{exponent}}}" if mantissa == "1" else f"{mantissa} \\times 10^{{{exponent}}}"


def write_lm_section(root: Path, summary: dict, config: dict, figures=None) -> Path:
    """``root/summary.md`` and the CSV tables (``table1.csv``, ``table2.csv``) of this run."""
    from .paper import PAPER_TABLES

    root = Path(root)
    t = summary["tables"]
    layers = range(len(t["without"]))
    _write_csv(
        root / "table1.csv",
        [
            "layer",
            "without_scaling_pct",
            "with_scaling_pct",
            "undecided_without_pct",
            "undecided_with_pct",
            "paper_without_pct",
            "paper_with_pct",
        ],
        [
            [
                i + 1,
                t["without"][i]["unselectable_pct"],
                t["with"][i]["unselectable_pct"],
                t["without"][i]["undecided_pct"],
                t["with"][i]["undecided_pct"],
                PAPER_TABLES["without"][i],
                PAPER_TABLES["with"][i],
            ]
            for i in layers
        ],
    )
    _write_csv(
        root / "table2.csv",
        [
            "layer",
            "before_pct",
            "after_pct",
            "undecided_before_pct",
            "undecided_after_pct",
            "paper_before_pct",
            "paper_after_pct",
        ],
        [
            [
                i + 1,
                t["before"][i]["unselectable_pct"],
                t["with"][i]["unselectable_pct"],
                t["before"][i]["undecided_pct"],
                t["with"][i]["undecided_pct"],
                PAPER_TABLES["before"][i],
                PAPER_TABLES["after"][i],
            ]
            for i in layers
        ],
    )
    for name, data in (("summary.json", summary), ("config.json", config)):
        if data is not None:
            write_text(root / name, json.dumps(data, indent=2, sort_keys=True) + "\n")
    blocks = lm_blocks(root, prefix=f"{root.name}/")
    path = root / "summary.md"
    write_text(path, "\n".join(to_markdown(blocks)).rstrip() + "\n")
    return path
