"""Figures, CSV tables and the ``summary.md`` section of the language-model experiment."""

from __future__ import annotations

import csv
from pathlib import Path

from .outputs import read_rows
from ..certificates.writes import replacing, write_text

__all__ = ["write_lm_figures", "write_lm_section"]


def write_lm_figures(root: Path) -> dict[str, str]:
    """lm_loss.png: training and held-out loss of both arms (the paper's Figure 4)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=120)
    for arm, colour, label in (("scaling", "tab:blue", "with scaling (LayerNorm)"),
                               ("centering", "tab:orange", "without scaling (centring only)")):
        path = root / f"loss_{arm}.csv"
        if not path.is_file():
            continue
        rows = read_rows(path)
        ax.plot([r["step"] for r in rows], [r["train_loss"] for r in rows], color=colour, alpha=0.35, lw=0.8,
                label=f"{label}, train")
        test = [r for r in rows if r.get("test_loss") is not None]
        ax.plot([r["step"] for r in test], [r["test_loss"] for r in test], color=colour, lw=1.6, marker="o", ms=3,
                label=f"{label}, held out")
    ax.set_xlabel("training step")
    ax.set_ylabel("next-token loss")
    ax.set_title("Tiny GPT-2 (n_embd 8, 4 layers): loss of both arms", fontsize=9)
    ax.legend(fontsize=7)
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


def _pct(entry) -> str:
    text = f"{entry['unselectable_pct']:.1f}"
    if entry["undecided_pct"] > 0:
        text += f" (+{entry['undecided_pct']:.1f} undecided)"
    return text


def write_lm_section(root: Path, summary: dict, config: dict, figures: dict) -> Path:
    from .paper import PAPER_TABLES

    t = summary["tables"]
    layers = range(len(t["without"]))
    _write_csv(root / "table1.csv", ["layer", "without_scaling_pct", "with_scaling_pct", "undecided_without_pct",
                                     "undecided_with_pct", "paper_without_pct", "paper_with_pct"],
               [[i + 1, t["without"][i]["unselectable_pct"], t["with"][i]["unselectable_pct"],
                 t["without"][i]["undecided_pct"], t["with"][i]["undecided_pct"], PAPER_TABLES["without"][i],
                 PAPER_TABLES["with"][i]] for i in layers])
    _write_csv(root / "table2.csv", ["layer", "before_pct", "after_pct", "undecided_before_pct", "undecided_after_pct",
                                     "paper_before_pct", "paper_after_pct"],
               [[i + 1, t["before"][i]["unselectable_pct"], t["with"][i]["unselectable_pct"],
                 t["before"][i]["undecided_pct"], t["with"][i]["undecided_pct"], PAPER_TABLES["before"][i],
                 PAPER_TABLES["after"][i]] for i in layers])
    head = "| | " + " | ".join(f"layer {i + 1}" for i in layers) + " |"
    rule = "|---|" + "---|" * len(t["without"])

    def row(label, values):
        return f"| {label} | " + " | ".join(values) + " |"

    keys = config["keys"]
    secs = summary.get("certify_seconds") or {}
    lines = [
        "## Experiment 2: unselectable keys in trained language models",
        "",
        f"Configuration: **{config['configuration']}** — tiny GPT-2 (n_embd 8, 4 heads, 4 layers, eps "
        f"{config['eps']:g}; `ln_1` gain and bias and the attention input bias frozen), {config['steps']:,} steps "
        f"of batch {config['batch']} × {config['block']} tokens (blocks shorter than 1,024 sit at random positions, so "
        f"every position is trained), AdamW {config['lr']:g} with linear decay, device "
        f"{config['device']}. Corpus: {config['corpus']} ({config['tokens_train']:,} training tokens, "
        f"{config['tokens_held_out']:,} held out); tokenizer: {config['tokenizer']}. "
        f"Measured on {summary['texts']} held-out texts of {config['min_len']}–{config['max_len']} tokens "
        f"(the paper: 1,000 SQuAD contexts, 50,000 steps, the GPT-2 tokenizer, English Wikipedia).",
        "",
        "Every key is decided **exactly**: each percentage counts keys with a checked certificate of being "
        "unselectable (a convex combination of the other keys, or tie-only), among all positions of a text "
        "(no causal mask), queries anywhere in R^8; undecided keys, if any, are shown apart. The paper decided "
        "selectability with a floating-point LP search.",
        "",
        "**Table 1.** % of keys unselectable right before attention.",
        "",
        head, rule,
        row("without scaling (ours)", [_pct(e) for e in t["without"]]),
        row("without scaling (paper)", [f"{v:g}" for v in PAPER_TABLES["without"]]),
        row("with scaling (ours)", [_pct(e) for e in t["with"]]),
        row("with scaling (paper)", [f"{v:g}" for v in PAPER_TABLES["with"]]),
        "",
        "**Table 2.** With scaling: % of keys unselectable before and after LayerNorm.",
        "",
        head, rule,
        row("before LayerNorm (ours)", [_pct(e) for e in t["before"]]),
        row("before LayerNorm (paper)", [f"{v:g}" for v in PAPER_TABLES["before"]]),
        row("after LayerNorm (ours)", [_pct(e) for e in t["with"]]),
        row("after LayerNorm (paper)", [f"{v:g}" for v in PAPER_TABLES["after"]]),
        "",
        "Keys certified:",
        "",
        f"- without scaling: {keys['without']};",
        f"- before LayerNorm: {keys['before']};",
        f"- with scaling / after LayerNorm: {keys['with']}.",
        "",
        "No margin threshold is used: a key counts as selectable when a witness query makes it the strict "
        "winner, checked in exact arithmetic, however small the margin.",
        "",
    ]
    spread = summary.get("radius_spread") or []
    if spread:
        ranges = ", ".join(f"layer {s['layer']}: {s['min']:.6f}–{s['max']:.6f}" for s in spread)
        lines += [f"Beyond the paper: with eps = {config['eps']:g} the LayerNorm outputs do not all lie on one "
                  f"sphere; their radius divided by sqrt(d) ranges over {ranges}. So \"0 with scaling\" is not "
                  "guaranteed by the geometry; the certificates decide it key by key: "
                  f"{summary.get('after_not_selectable', 0):,} of {summary.get('after_keys', 0):,} keys after "
                  "LayerNorm are certified not selectable in these texts.", ""]
    if secs:
        lines += [f"Certification time per key set: median {secs['median']:.2f} s, max {secs['max']:.2f} s "
                  f"({secs['count']} key sets, {secs['total']:.0f} s in all).", ""]
    lines += ["Figure 4 (loss of both arms): " + ", ".join(f"![{k}](lm_tables/{v})" for k, v in figures.items()),
              "",
              "Files: `lm_tables/table1.csv`, `lm_tables/table2.csv`, `lm_tables/loss_ARM.csv`, "
              "`lm_tables/per_text.jsonl`, `lm_tables/config.json`; the certificates, when kept, are in "
              "`lm_tables/certificates/SET/textNNNN_layerL.json` next to their keys "
              "(`lnproofs check CERT.json KEYS.npy` re-verifies one).", ""]
    path = root / "summary.md"
    write_text(path, "\n".join(lines))
    return path
