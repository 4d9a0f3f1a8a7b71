"""Figures and the ``summary.md`` section of the Majority experiment."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .outputs import read_rows
from ..certificates.writes import replacing, write_text

__all__ = ["write_figures", "write_section", "mean_curve"]

_COLOURS = {"layernorm": "tab:blue", "no-projection": "tab:orange", "none": "tab:gray"}


def mean_curve(runs: list[list[dict]], key: str):
    """Steps and the mean, min and max of ``key`` over runs, at the steps every run evaluated."""
    series = []
    for rows in runs:
        series.append({row["step"]: row[key] for row in rows if row.get(key) is not None})
    common = sorted(set.intersection(*(set(s) for s in series))) if series else []
    if not common:
        return np.array([]), np.array([]), np.array([]), np.array([])
    vals = np.array([[s[t] for t in common] for s in series])
    return np.array(common), vals.mean(0), vals.min(0), vals.max(0)


def _plot_quantity(ax, root: Path, seeds, key: str, arms, labels):
    for arm in arms:
        runs = [read_rows(root / "runs" / f"{arm}_seed{s}.csv") for s in seeds]
        steps, mean, lo, hi = mean_curve(runs, key)
        if len(steps) == 0:
            continue
        ax.plot(steps, mean, color=_COLOURS[arm], label=f"{labels[arm]} (mean of {len(seeds)})", lw=1.2)
        ax.fill_between(steps, lo, hi, color=_COLOURS[arm], alpha=0.2, lw=0)


def write_figures(root: Path, seeds, cfg: dict, shapes: dict, arms=None) -> dict[str, str]:
    """majority_loss.png, majority_accuracy.png, majority_angle.png (and majority_3d.png)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    from .paper import ARM_LABELS, ARMS, PAPER_VALUES

    figures = {}
    specs = [("train_loss", "training loss", "majority_loss.png"),
             ("test_accuracy", "test accuracy (per token)", "majority_accuracy.png"),
             ("train_angle", "angle of queries to 1 (degrees)", "majority_angle.png")]
    for key, ylabel, name in specs:
        fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=120)
        _plot_quantity(ax, root, seeds, key, arms or ARMS, ARM_LABELS)
        if key == "train_angle":
            for arm, colour in (("layernorm", _COLOURS["layernorm"]), ("no-projection", _COLOURS["no-projection"])):
                lo, hi = PAPER_VALUES[arm]["angle"]
                ax.axhspan(lo, hi, color=colour, alpha=0.12, hatch="//", lw=0,
                           label=f"paper, {ARM_LABELS[arm]}: {lo:g}-{hi:g} deg")
            ax.set_ylim(0, 90)
        elif key == "test_accuracy":
            from .paper import accuracy_step

            at = accuracy_step(cfg)
            where = "" if at == 5000 else f" (here step {at:,}, the same lr x steps)"
            for arm in ("layernorm", "no-projection"):
                ax.scatter([at], [PAPER_VALUES[arm]["accuracy_at_5000"]], marker="*", s=90,
                           color=_COLOURS[arm], edgecolor="black", zorder=5,
                           label=f"paper at step 5,000{where}, {ARM_LABELS[arm]}")
        else:
            ax.axhline(0.2, color="black", lw=0.6, ls=":", label="loss 0.2 (paper: about 3x fewer steps with projection)")
            ax.set_yscale("log")
        ax.set_xlabel("training step")
        ax.set_ylabel(ylabel)
        ax.set_title(f"Majority task, L={cfg['length']}, C={cfg['classes']}, d={cfg['d']}; band: min-max over seeds",
                     fontsize=9)
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


def _fmt(stat: dict, digits: int = 3) -> str:
    """:func:`_mean` with the smallest and largest value over several seeds."""
    if stat["mean"] is None:
        return "not reached"
    spread = "" if stat["n"] == 1 else f" (min {stat['min']:.{digits}g}, max {stat['max']:.{digits}g})"
    return _mean(stat, digits) + spread


def _mean(stat: dict, digits: int = 3) -> str:
    if stat["mean"] is None:
        return "—"
    if stat["n"] == 1:
        return f"{stat['mean']:.{digits}g}"
    return f"{stat['mean']:.{digits}g} ± {stat['std']:.2g}"


def _findings(summary: dict) -> list[dict]:
    """The paper's three findings (four checks) as measured in one run, each with its verdict."""
    arms = summary["arms"]
    ln, sp = arms["layernorm"], arms["no-projection"]
    angle_ln, angle_sp = ln["epoch_angle"]["mean"], sp["epoch_angle"]["mean"]
    acc_ln, acc_sp = ln["accuracy_at"]["mean"], sp["accuracy_at"]["mean"]
    ratio = summary.get("speedup")
    return [
        {"name": "angle to 1, with projection (°)", "paper": "about 11–12", "ours": _mean(ln["epoch_angle"]),
         "target": "≤ 20", "ok": angle_ln is not None and angle_ln <= 20},
        {"name": "angle to 1, without projection (°)", "paper": "about 70–83", "ours": _mean(sp["epoch_angle"]),
         "target": "≥ 60", "ok": angle_sp is not None and angle_sp >= 60},
        {"name": "steps to loss 0.2, without / with projection", "paper": "about 3×",
         "ours": f"{ratio:.2f}×" if ratio else "not reached", "target": "2–4×",
         "ok": ratio is not None and 2 <= ratio <= 4},
        {"name": "test accuracy at step 5,000 (or the step of the same learning rate x steps), with / without "
                 "projection",
         "paper": "about 0.93 / 0.85 (step 5,000)",
         "ours": f"{_mean(ln['accuracy_at'])} / {_mean(sp['accuracy_at'])} (step {summary['accuracy_step']:,})",
         "target": "with > without",
         "ok": acc_ln is not None and acc_sp is not None and acc_ln > acc_sp},
    ]


def _config_line(config: dict) -> str:
    cfg = config["main"]
    return (f"N {cfg['n_samples']:,}, L {cfg['length']}, C {cfg['classes']}, d {cfg['d']}, batch {cfg['batch']:,}, "
            f"up to {cfg['steps']:,} steps, Adam {cfg['lr']:g} with linear decay to 0 at step "
            f"{(cfg['decay_steps'] or cfg['steps'] * 10):,}, min_delta {cfg['min_delta']}, "
            f"seeds {', '.join(map(str, config['seeds']))}, device {config['device']}")


def _certificate_rows(summary: dict) -> list[str]:
    from .paper import ARM_LABELS

    rows = ["| arm | seed | angle (°) | a query giving every key the same score: any query | "
            "the trained layer's queries | the C keys under the layer's queries |", "|---|---|---|---|---|---|"]
    for name, cert in summary.get("certificates", {}).items():
        arm, seed = name.rsplit("_seed", 1)
        angle = summary["per_run"].get(name, {}).get("epoch_angle")

        def verdict(u):
            if u["status"] == "feasible":
                return "**yes** (checked query)"
            if u["status"] == "infeasible":
                return f"**no** (proof: {u.get('proof')})"
            return f"undecided ({u.get('reason')})"

        keys = ", ".join(f"{v} {k}" for k, v in cert["key_statuses"].items())
        rows.append(f"| {ARM_LABELS[arm]} | {seed} | {'—' if angle is None else f'{angle:.1f}'} | "
                    f"{verdict(cert['uniform_free'])} | {verdict(cert['uniform_realisable'])} | {keys} |")
    return rows


def write_section(root: Path, summary: dict, config: dict, figures: dict, other: dict | None = None) -> Path:
    """``root/summary.md``: the findings (paper, this run and, when ``other`` holds the other
    configuration's summary and config, that one), the per-arm table and the certificates."""
    from .paper import ARM_LABELS, ARMS, PAPER_VALUES

    arms = summary["arms"]
    at = summary["accuracy_step"]
    title = "the paper's configuration" if config["configuration"] == "paper" else "the default configuration"
    runs = {config["configuration"]: (summary, config)}
    if other:
        runs[other[1]["configuration"]] = other
    order = [k for k in ("default", "paper") if k in runs]
    found = {k: _findings(runs[k][0]) for k in order}
    heading = "## Experiment 1: the Majority task" + (", the paper's configuration" if config["configuration"] == "paper"
                                                       else "")
    lines = [heading, "",
             *(f"- **{k}**: {_config_line(runs[k][1])}." for k in order),
             *(["", config["rationale"]] if config.get("rationale") else []),
             *(["", f"**Note.** {config['note']}"] if config.get("note") else []), "",
             "**The paper's findings, reproduced?** The angle is the paper's measure: on the training batches, "
             "per token, between `norm1(x) @ W_Q^T @ W_K` and the all-ones vector, folded into [0°, 90°], "
             "averaged over the last epoch. A finding is met when ours lies within the target. "
             + ". ".join(f"The {k} configuration meets {sum(f['ok'] for f in found[k])} of {len(found[k])}"
                         for k in order) + ".", "",
             "| finding | paper | target | " + " | ".join(f"{k} configuration" for k in order) + " |",
             "|---|---|---|" + "---|" * len(order)]
    for i, row in enumerate(found[order[0]]):
        cells = []
        for k in order:
            f = found[k][i]
            cells.append(f"{f['ours']} ({'met' if f['ok'] else 'not met'})")
        lines.append(f"| {row['name']} | {row['paper']} | {row['target']} | " + " | ".join(cells) + " |")
    for k in order:
        s = runs[k][0]
        lines.append("")
        lines.append(f"The {k} configuration: {len(s['seeds'])} seed(s), training steps run "
                     f"{_mean(s['arms']['layernorm']['final_step'], 5)} with projection and "
                     f"{_mean(s['arms']['no-projection']['final_step'], 5)} without (a run stops at test "
                     "accuracy 1.0).")
    lines += ["", f"### Per arm ({title}; mean ± standard deviation over seeds)", "",
              f"| arm | steps to training loss ≤ {summary['loss_target']} | test accuracy at step {at:,} | "
              "final test accuracy | angle (°): last epoch, training batches | angle (°): test tokens, last step |",
              "|---|---|---|---|---|---|"]
    for arm in [a for a in ARMS if a in arms]:
        a = arms[arm]
        reached = f" ({a['reached_loss']}/{len(summary['seeds'])} seeds)"
        lines.append(f"| {ARM_LABELS[arm]} | {_fmt(a['steps_to_loss'], 4)}{reached} | {_fmt(a['accuracy_at'])} | "
                     f"{_fmt(a['final_accuracy'])} | {_fmt(a['epoch_angle'])} | {_fmt(a['final_angle'])} |")
    lines += ["", f"Paper: angle {PAPER_VALUES['layernorm']['angle'][0]:g}–{PAPER_VALUES['layernorm']['angle'][1]:g}° "
              f"with projection, {PAPER_VALUES['no-projection']['angle'][0]:g}–"
              f"{PAPER_VALUES['no-projection']['angle'][1]:g}° without; accuracy "
              f"{PAPER_VALUES['layernorm']['accuracy_at_5000']} / {PAPER_VALUES['no-projection']['accuracy_at_5000']} "
              "at step 5,000; the no-norm arm is not reported."]
    if summary.get("certificates"):
        lines += ["", f"### Certificates ({title})", "",
                  "Uniform attention is what the angle is about: a query along the all-ones vector gives every "
                  "projected key the same score. Decided exactly (`lnproofs.uniform_attention`, "
                  "`lnproofs.certify`; every answer re-checked by the exact checker) for the C distinct keys "
                  "in the space of `norm1`'s outputs, where the trained layer's queries are `W_K^T W_Q u` for "
                  "`u` in the closure of `norm1`'s image (the LayerNorm query set with projection, the RMSNorm "
                  "query set of radius 1/√d without, the column space of `W_K^T W_Q` with no norm).", "",
                  *_certificate_rows(summary), "",
                  "Reading: with projection some query gives every key the same score (the all-ones direction; "
                  "the keys' differences span only the hyperplane), without projection none does (the "
                  "differences span the whole space): the paper's claim, certified. An exactly uniform query "
                  "among the trained layer's own queries needs `W_K^T W_Q` to send a non-zero `u` with "
                  "`1 . u = 0` onto the all-ones line (or onto 0), a measure-zero condition that training "
                  "in floating point does not meet; a small angle is uniform attention approximately, "
                  "not exactly."]
    lines += ["", "Figures (the paper's values marked): " + ", ".join(f"![{k}]({root.name}/{v})" for k, v in figures.items()),
              "", f"Per-run CSVs: `{root.name}/runs/ARM_seedSEED.csv` (step, epoch, train_loss, train_angle, "
              "test_accuracy, query_angle); trained weights `ARM_seedSEED_weights.npz`; certificates "
              "`ARM_seedSEED_certificates.json`; configuration: `" + root.name + "/config.json`.", ""]
    path = root / "summary.md"
    write_text(path, "\n".join(lines))
    write_text((root / "summary_table.json"), json.dumps(arms, indent=2))
    return path
