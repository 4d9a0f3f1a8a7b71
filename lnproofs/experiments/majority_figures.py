"""The figures of the Majority experiment, drawn from the per-step CSVs of its runs.

One figure per quantity (smoothed training loss, test accuracy, the queries' angle to the
all-ones vector) with the spread over seeds and the paper's values marked, and the keys and
query directions of the three-dimensional variant.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..certificates.writes import replacing
from .majority_report import SMOOTHING, mean_curve, smoothed
from .outputs import read_rows

__all__ = ["write_figures"]

_COLOURS = {"layernorm": "tab:blue", "no-projection": "tab:orange", "none": "tab:gray"}


def write_figures(root: Path, seeds, cfg: dict, shapes: dict, arms=None) -> dict[str, str]:
    """majority_loss.png, majority_accuracy.png, majority_angle.png (and majority_3d.png)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    from .paper import ARM_LABELS, ARMS, PAPER_VALUES, accuracy_step

    figures = {}
    for key, ylabel, name in (
        ("train_loss", f"training loss, mean of the last {SMOOTHING} steps", "majority_loss.png"),
        ("test_accuracy", "test accuracy (per token)", "majority_accuracy.png"),
        ("train_angle", "angle of the queries to the all-ones vector (degrees)", "majority_angle.png"),
    ):
        fig, ax = plt.subplots(figsize=(6.4, 3.8), dpi=120)
        for arm in arms or ARMS:
            runs = [read_rows(root / "runs" / f"{arm}_seed{s}.csv") for s in seeds]
            if key == "train_loss":
                curves = [smoothed([r["train_loss"] for r in rows]) for rows in runs]
                size = min(len(c) for c in curves)
                if not size:
                    continue
                vals = np.array([c[:size] for c in curves])
                steps = np.arange(SMOOTHING, SMOOTHING + size)
                mean, lo, hi = vals.mean(0), vals.min(0), vals.max(0)
            else:
                steps, mean, lo, hi = mean_curve(runs, key)
                if not len(steps):
                    continue
            ax.plot(steps, mean, color=_COLOURS[arm], lw=1.2, label=ARM_LABELS[arm])
            ax.fill_between(steps, lo, hi, color=_COLOURS[arm], alpha=0.2, lw=0)
        if key == "train_angle":
            for arm in ("layernorm", "no-projection"):
                lo, hi = PAPER_VALUES[arm]["angle"]
                ax.axhspan(
                    lo, hi, color=_COLOURS[arm], alpha=0.12, hatch="//", lw=0, label=f"the paper, {ARM_LABELS[arm]}"
                )
            ax.set_ylim(0, 90)
        elif key == "test_accuracy":
            at = accuracy_step(cfg)
            for arm in ("layernorm", "no-projection"):
                ax.scatter(
                    [at],
                    [PAPER_VALUES[arm]["accuracy_at_5000"]],
                    marker="*",
                    s=90,
                    color=_COLOURS[arm],
                    edgecolor="black",
                    zorder=5,
                    label=f"the paper, {ARM_LABELS[arm]}",
                )
        else:
            from matplotlib.ticker import FuncFormatter

            ax.axhline(0.2, color="black", lw=0.6, ls=":", label="loss 0.2")
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if f"{v:.0e}"[0] in "235" else ""))
        ax.set_xlabel("training step")
        ax.set_ylabel(ylabel, fontsize=8)
        ax.legend(fontsize=7, loc="best")
        fig.tight_layout()
        with replacing(root / name, binary=True) as handle:
            fig.savefig(handle, format="png")
        plt.close(fig)
        figures[key] = name
    if shapes:
        figures["three_d"] = _plot_3d(root, shapes, plt)
    return figures


def _plot_3d(root: Path, shapes: dict, plt) -> str:
    from .paper import ARM_LABELS

    fig = plt.figure(figsize=(10, 4.8), dpi=120)
    for i, (arm, pts) in enumerate(shapes.items(), start=1):
        ax = fig.add_subplot(1, len(shapes), i, projection="3d")
        k, q = pts["keys"], pts["queries"]
        q = 2.0 * q / np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-30)
        ax.scatter(*k.T, color="tab:blue", label="keys (normalised embeddings)", s=25)
        ax.scatter(*q.T, color="tab:red", marker="^", label="query directions (length 2)", s=25)
        ax.plot([-3, 3], [-3, 3], [-3, 3], color="black", lw=0.8, ls="--", label="all-ones direction")
        for lim in (ax.set_xlim, ax.set_ylim, ax.set_zlim):
            lim(-3, 3)
        ax.set_title(ARM_LABELS[arm], fontsize=9)
        ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    with replacing(root / "majority_3d.png", binary=True) as handle:
        fig.savefig(handle, format="png")
    plt.close(fig)
    return "majority_3d.png"
