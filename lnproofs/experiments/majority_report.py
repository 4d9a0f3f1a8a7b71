"""Figures and the write-up of the Majority experiment, from the result files of its runs.

:func:`majority_blocks` reads each run folder (``config.json``, ``summary.json`` and the
per-step CSVs under ``runs/``) and builds the text once (:mod:`.blocks`): the paper's
setting beside ours, the findings with 95% confidence intervals over seeds, the smoothed
convergence measure, the certificates and the figures.  :func:`write_section` writes a
run folder's own ``summary.md`` from the same blocks; a folder never describes another run.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from ..certificates.writes import replacing, write_text
from .blocks import Figure, Heading, Para, Table, fmt, fmt_ci, fmt_int, mean_ci, to_markdown
from .outputs import read_rows

__all__ = [
    "SMOOTHING",
    "write_figures",
    "write_section",
    "majority_blocks",
    "mean_curve",
    "smoothed",
    "steps_to_smoothed",
    "run_measures",
    "value_at",
]

#: the window (training steps) of the smoothed training loss
SMOOTHING = 100
_COLOURS = {"layernorm": "tab:blue", "no-projection": "tab:orange", "none": "tab:gray"}
_NAMES = {"default": "the default configuration", "paper": "the paper's configuration"}


def smoothed(losses, window: int = SMOOTHING) -> np.ndarray:
    """The trailing mean of the last ``window`` per-step losses, from step ``window`` on."""
    values = np.asarray(losses, dtype=float)
    if len(values) < window:
        return np.array([])
    return np.convolve(values, np.ones(window) / window, mode="valid")


def steps_to_smoothed(rows, target: float, window: int = SMOOTHING):
    """The first step at which the smoothed training loss is at most ``target`` (None if never)."""
    steps = [r["step"] for r in rows if r.get("train_loss") is not None]
    curve = smoothed([r["train_loss"] for r in rows if r.get("train_loss") is not None], window)
    below = np.nonzero(curve <= target)[0]
    return None if not len(below) else int(steps[below[0] + window - 1])


def value_at(rows, key: str, step: float):
    """The last evaluated ``key`` at or before ``step`` (None if none)."""
    found = None
    for row in rows:
        if row["step"] > step:
            break
        if row.get(key) is not None:
            found = row[key]
    return found


def _epoch_angle(rows):
    marked = [r for r in rows if r.get("train_angle") is not None and r.get("epoch") is not None]
    if not marked:
        return None
    last = marked[-1]["epoch"]
    return float(np.mean([r["train_angle"] for r in marked if r["epoch"] == last]))


def run_measures(rows, accuracy_step: int, target: float) -> dict:
    """One run's measures: the paper's angle, test accuracy at ``accuracy_step`` and at the end,
    the step where the smoothed loss first reaches ``target``, and the last step."""
    return {
        "angle": _epoch_angle(rows),
        "accuracy": value_at(rows, "test_accuracy", accuracy_step),
        "final_accuracy": value_at(rows, "test_accuracy", math.inf),
        "smoothed_steps": steps_to_smoothed(rows, target),
        "last_step": int(rows[-1]["step"]),
    }


def mean_curve(runs: list[list[dict]], key: str):
    """Steps and the mean, min and max of ``key`` over runs, at the steps every run evaluated."""
    series = [{row["step"]: row[key] for row in rows if row.get(key) is not None} for rows in runs]
    common = sorted(set.intersection(*(set(s) for s in series))) if series else []
    if not common:
        return np.array([]), np.array([]), np.array([]), np.array([])
    vals = np.array([[s[t] for t in common] for s in series])
    return np.array(common), vals.mean(0), vals.min(0), vals.max(0)


# ----------------------------------------------------------------------- figures
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


# ----------------------------------------------------------------------- the text
def _load(root: Path) -> tuple[dict, dict] | None:
    if not ((root / "summary.json").is_file() and (root / "config.json").is_file()):
        return None
    return tuple(json.loads((root / n).read_text(encoding="utf-8")) for n in ("summary.json", "config.json"))


def _measures(root: Path, summary: dict, config: dict) -> dict:
    """(arm -> seed -> measures) from the run's CSVs."""
    arms = [a for a in config["arms"] if a in summary["arms"]]
    return {
        arm: {
            seed: run_measures(
                read_rows(root / "runs" / f"{arm}_seed{seed}.csv"), summary["accuracy_step"], summary["loss_target"]
            )
            for seed in summary["seeds"]
            if (root / "runs" / f"{arm}_seed{seed}.csv").is_file()
        }
        for arm in arms
    }


def _lr(value: float) -> str:
    exponent = math.floor(math.log10(value))
    mantissa = value / 10**exponent
    return f"$10^{{{exponent}}}$" if abs(mantissa - 1) < 1e-9 else f"${mantissa:g} \\times 10^{{{exponent}}}$"


def _settings_table(runs) -> Table:
    from .paper import PAPER_MAJORITY as P

    header = ("setting", "the paper") + tuple(_NAMES[c["configuration"]] for _, _, _, c in runs)
    cfgs = [c["main"] for _, _, _, c in runs]
    rows = [
        ("sequences $N$", fmt_int(P["n_samples"]), *(fmt_int(c["n_samples"]) for c in cfgs)),
        (
            "length $L$, classes $C$, width $d$",
            f"{P['length']}, {P['classes']}, {P['d']}",
            *(f"{c['length']}, {c['classes']}, {c['d']}" for c in cfgs),
        ),
        ("batch", fmt_int(P["batch"]), *(fmt_int(c["batch"]) for c in cfgs)),
        ("Adam learning rate", _lr(P["lr"]), *(_lr(c["lr"]) for c in cfgs)),
        (
            "linear decay to 0 at step",
            fmt_int(P["decay_steps"]),
            *(fmt_int(c["decay_steps"] or c["steps"] * 10) for c in cfgs),
        ),
        ("training steps", f"up to {fmt_int(P['steps'])}", *(fmt_int(c["steps"]) for c in cfgs)),
        ("seeds", str(P["seeds"]), *(str(len(s["seeds"])) for _, s, _, _ in runs)),
        ("minimum margin of the majority", str(P["min_delta"]), *(str(c["min_delta"]) for c in cfgs)),
    ]
    return Table(
        "tab:majority-settings",
        "The Majority task: the paper's setting and the configurations run here.",
        header,
        tuple(rows),
    )


def _differences(runs) -> str:
    from .paper import PAPER_ACCURACY_STEP, PAPER_LR
    from .paper import PAPER_MAJORITY as P

    parts = []
    for _, summary, _, config in runs:
        c = config["main"]
        name = _NAMES[config["configuration"]]
        changed = []
        if c["lr"] != P["lr"]:
            changed.append(f"a learning rate {c['lr'] / P['lr']:g} times the paper's")
        if c["steps"] != P["steps"]:
            changed.append(f"{fmt_int(c['steps'])} training steps instead of up to {fmt_int(P['steps'])}")
        changed.append(
            f"{len(summary['seeds'])} seed{'s' if len(summary['seeds']) != 1 else ''} instead of {P['seeds']}"
        )
        text = f"{name[0].upper()}{name[1:]} differs from the paper's setting in " + _join(changed) + "."
        at = summary["accuracy_step"]
        if at != PAPER_ACCURACY_STEP:
            text += (
                f" Adam moves each parameter by about the learning rate per step, so its test accuracy is "
                f"compared at step {fmt_int(at)}, where the learning rate times the steps equals the paper's "
                f"{_lr(PAPER_LR)} times {fmt_int(PAPER_ACCURACY_STEP)}."
            )
        parts.append(text)
    return " ".join(parts)


def _join(items) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _ratios(m: dict) -> tuple[list, list]:
    """Per seed, the smoothed steps without projection over those with (reached) and the seeds
    where the arm without projection never reached the target (their lower bounds)."""
    reached, bounds = [], []
    for seed, with_p in m.get("layernorm", {}).items():
        without = m.get("no-projection", {}).get(seed)
        if with_p["smoothed_steps"] is None or without is None:
            continue
        if without["smoothed_steps"] is None:
            bounds.append((seed, without["last_step"] / with_p["smoothed_steps"]))
        else:
            reached.append((seed, without["smoothed_steps"] / with_p["smoothed_steps"]))
    return reached, bounds


def _ratio_cell(m: dict) -> str:
    reached, bounds = _ratios(m)
    cells = [f"{r:.2f} (seed {s})" for s, r in reached] + [f"more than {b:.1f} (seed {s})" for s, b in bounds]
    return "; ".join(cells) if cells else "not reached"


def _findings_table(runs, measures) -> Table:
    from .paper import PAPER_VALUES

    def col(arm, key, digits=3, unit=""):
        return [fmt_ci([v[key] for v in measures[i].get(arm, {}).values()], digits, unit) for i in range(len(runs))]

    def steps(arm, i):
        vals = [v["smoothed_steps"] for v in measures[i].get(arm, {}).values()]
        got = [v for v in vals if v is not None]
        text = fmt_ci(got, 3) if got else "not reached"
        missing = len(vals) - len(got)
        return text + (f"; {missing} of {len(vals)} seeds never reached it" if missing and got else "")

    ln, sp = PAPER_VALUES["layernorm"], PAPER_VALUES["no-projection"]
    rows = [
        (
            "angle to $\\mathbf{1}$ with projection (degrees)",
            f"about {ln['angle'][0]:g} to {ln['angle'][1]:g}",
            *col("layernorm", "angle"),
        ),
        (
            "angle to $\\mathbf{1}$ without projection (degrees)",
            f"about {sp['angle'][0]:g} to {sp['angle'][1]:g}",
            *col("no-projection", "angle"),
        ),
        (
            "steps to smoothed loss 0.2, with projection",
            "not given",
            *(steps("layernorm", i) for i in range(len(runs))),
        ),
        (
            "steps to smoothed loss 0.2, without projection",
            "not given",
            *(steps("no-projection", i) for i in range(len(runs))),
        ),
        (
            "ratio of those steps, without over with, per seed",
            "about 3",
            *(_ratio_cell(measures[i]) for i in range(len(runs))),
        ),
        ("test accuracy with projection", f"about {ln['accuracy_at_5000']:g}", *col("layernorm", "accuracy")),
        ("test accuracy without projection", f"about {sp['accuracy_at_5000']:g}", *col("no-projection", "accuracy")),
    ]
    header = ("quantity", "the paper") + tuple(
        f"{_NAMES[c['configuration']]} ({len(s['seeds'])} seed{'s' if len(s['seeds']) != 1 else ''})"
        for _, s, _, c in runs
    )
    steps_at = ", ".join(f"step {fmt_int(s['accuracy_step'])} in {_NAMES[c['configuration']]}" for _, s, _, c in runs)
    return Table(
        "tab:majority-findings",
        "The paper's findings beside ours: mean $\\pm$ the half-width of the 95% confidence interval over "
        "seeds (Student's $t$); a single seed has no interval. Test accuracy is read at step 5,000 in the "
        f"paper and at {steps_at}.",
        header,
        tuple(rows),
    )


def _verdicts(runs, measures) -> str:
    from .paper import PAPER_VALUES

    out = []
    for i, (_, summary, _, config) in enumerate(runs):
        m = measures[i]
        angle_ln = mean_ci([v["angle"] for v in m.get("layernorm", {}).values()])
        angle_sp = mean_ci([v["angle"] for v in m.get("no-projection", {}).values()])
        acc_ln = mean_ci([v["accuracy"] for v in m.get("layernorm", {}).values()])
        acc_sp = mean_ci([v["accuracy"] for v in m.get("no-projection", {}).values()])
        reached, bounds = _ratios(m)
        found = []
        if angle_ln[0] is not None and angle_sp[0] is not None:
            found.append(
                f"the queries' angle to the all-ones vector is {fmt(angle_ln[0])} degrees with projection "
                f"and {fmt(angle_sp[0])} without (the paper: about {PAPER_VALUES['layernorm']['angle'][1]:g} "
                f"and {PAPER_VALUES['no-projection']['angle'][0]:g} to "
                f"{PAPER_VALUES['no-projection']['angle'][1]:g})"
            )
        if reached or bounds:
            ratios = [r for _, r in reached]
            found.append(
                "the arm without projection needs "
                + (
                    f"{min(ratios):.1f} to {max(ratios):.1f} times"
                    if len(ratios) > 1
                    else f"{ratios[0]:.1f} times"
                    if ratios
                    else ""
                )
                + (" and, for " if ratios and bounds else "")
                + (_join([f"seed {s}, more than {b:.1f} times" for s, b in bounds]) if bounds else "")
                + " as many steps to bring its smoothed loss to 0.2 (the paper: about 3 times)"
            )
        if acc_ln[0] is not None and acc_sp[0] is not None:
            found.append(
                f"test accuracy is higher with projection ({fmt(acc_ln[0])} against {fmt(acc_sp[0])})"
                if acc_ln[0] > acc_sp[0]
                else f"test accuracy is not higher with projection ({fmt(acc_ln[0])} against {fmt(acc_sp[0])})"
            )
        name = _NAMES[config["configuration"]]
        out.append(f"In {name}, " + _join(found) + ".")
    return " ".join(out)


def _certificates(runs) -> list:
    from .paper import ARM_LABELS

    def verdict(u):
        if u["status"] == "feasible":
            return "yes (a checked query)"
        if u["status"] == "infeasible":
            return (
                "no ("
                + {
                    "independent differences": "the key differences are independent",
                    "every solution in the ball gives q = 0": "only the zero query solves it",
                }.get(u.get("proof"), "an exact proof")
                + ")"
            )
        return "undecided"

    rows = []
    for _, summary, _, config in runs:
        for name, cert in summary.get("certificates", {}).items():
            arm, seed = name.rsplit("_seed", 1)
            statuses = cert["key_statuses"]
            keys = _join([f"{count} of {cert['keys']} {status}" for status, count in statuses.items()])
            rows.append(
                (
                    _NAMES[config["configuration"]],
                    ARM_LABELS[arm],
                    seed,
                    verdict(cert["uniform_free"]),
                    verdict(cert["uniform_realisable"]),
                    keys,
                )
            )
    if not rows:
        return []
    table = Table(
        "tab:majority-certificates",
        "Uniform attention and selectability in the trained Majority models, decided exactly: whether "
        "some query gives every one of the $C$ keys the same score, whether one of the trained layer's "
        "own queries does, and the status of each key under the layer's queries.",
        ("configuration", "arm", "seed", "uniform: any query", "uniform: the layer's queries", "keys"),
        tuple(rows),
    )
    text = (
        "The angle measures how close the queries come to uniform attention: a query along the all-ones vector "
        "gives every projected key the same score. [[tab:majority-certificates]] decides this exactly for the "
        "$C$ distinct keys of every trained model. With projection some query gives every key the same score, "
        "because the keys' differences span only the hyperplane orthogonal to $\\mathbf{1}$; without "
        "projection none does, because the differences span the whole space. The trained layer's own queries "
        "are $W_K^T W_Q u$ for $u$ in the closure of the norm's image; an exactly uniform query among them "
        "needs $W_K^T W_Q$ to send a non-zero $u$ orthogonal to $\\mathbf{1}$ onto the all-ones line, a "
        "condition of measure zero that training in floating point does not meet, so a small angle means "
        "nearly uniform attention, not exactly uniform attention. Every key is selectable in every model."
    )
    return [Heading("Uniform attention, certified", 2), Para(text), table]


def _figures(runs, prefix_of) -> list:
    from .paper import ARM_LABELS

    out = []
    for root, summary, _, config in runs:
        tag, name, seeds = config["configuration"], _NAMES[config["configuration"]], len(summary["seeds"])
        band = (
            f"mean over {seeds} seeds; the band spans the seeds' smallest to largest value" if seeds > 1 else "one seed"
        )
        pre = prefix_of(root)
        out += [
            Figure(
                f"fig:majority-{tag}-loss",
                f"{pre}majority_loss.png",
                f"Training loss in {name}, smoothed over the last {SMOOTHING} steps ({band}; logarithmic "
                f"scale). The dotted line is loss 0.2: "
                f"the arm {ARM_LABELS['layernorm']} crosses it first.",
            ),
            Figure(
                f"fig:majority-{tag}-accuracy",
                f"{pre}majority_accuracy.png",
                f"Test accuracy per token in {name} ({band}); the stars are the paper's values at step 5,000, "
                f"drawn at step {fmt_int(summary['accuracy_step'])}, the step compared here. The arm "
                "with projection learns faster" + _final_note(summary) + ".",
            ),
            Figure(
                f"fig:majority-{tag}-angle",
                f"{pre}majority_angle.png",
                f"Angle between the queries and the all-ones vector in {name} ({band}); the hatched bands are "
                "the paper's ranges. With projection the queries turn towards the all-ones vector; without "
                "projection they stay far from it.",
            ),
        ]
        if (root / "majority_3d.png").is_file():
            cfg3 = config.get("three_d") or {}
            out.append(
                Figure(
                    f"fig:majority-{tag}-3d",
                    f"{pre}majority_3d.png",
                    "The three-dimensional variant (as in the paper's Figures 1a and 1b"
                    + (
                        f": $L = {cfg3['length']}$, $C = {cfg3['classes']}$, $d = 3$, {fmt_int(cfg3['steps'])} steps"
                        if cfg3
                        else ""
                    )
                    + "): the keys (the normalised embeddings) and the directions of the trained queries, "
                    "one seed. With projection the keys lie on a circle in the plane orthogonal to the "
                    "all-ones direction (the dashed line); without projection they lie anywhere on a "
                    "sphere.",
                )
            )
    return out


def _final_note(summary: dict) -> str:
    """Where the arm without projection ends ahead, say so (the curves cross)."""
    arms = summary.get("arms", {})
    try:
        with_p = arms["layernorm"]["final_accuracy"]["mean"]
        without = arms["no-projection"]["final_accuracy"]["mean"]
    except (KeyError, TypeError):
        return ""
    if with_p is None or without is None or without <= with_p:
        return ""
    return (
        f"; late in training the arm without projection overtakes it and ends higher ({fmt(without)} against "
        f"{fmt(with_p)})"
    )


def majority_blocks(roots, prefix_of=None) -> tuple:
    """The Majority experiment's write-up from its run folders (``majority``, ``majority_paper``):
    the ones holding results, in the order given.  ``prefix_of(root)`` gives the path prefix of
    a folder's figures (default: the folder's name and a slash)."""
    prefix_of = prefix_of or (lambda root: f"{Path(root).name}/")
    runs = []
    for root in roots:
        loaded = _load(Path(root))
        if loaded is not None:
            runs.append((Path(root), loaded[0], None, loaded[1]))
    if not runs:
        return ()
    runs.sort(key=lambda r: r[3]["configuration"] != "default")
    measures = [_measures(root, summary, config) for root, summary, _, config in runs]
    figs = _figures(runs, prefix_of)
    refs = {
        f.label.rsplit("-", 1)[1]: [g.label for g in figs if g.label.endswith("-" + f.label.rsplit("-", 1)[1])]
        for f in figs
    }

    def cite(kind):
        return _join([f"[[{label}]]" for label in refs.get(kind, [])])

    intro = (
        "[[cite:brody2023]] train a one-layer Transformer encoder to label every position of a sequence with "
        "its majority class, and compare three arms: LayerNorm before attention (projection and scaling), a "
        "normalisation onto a sphere without the projection, and no normalisation. Their model embeds $C$ "
        "classes in width $d$, applies one pre-norm encoder layer with one head and reads the logits against "
        "the tied embedding; since the keys are normalised embeddings, there are only $C$ distinct keys. "
        "[[tab:majority-settings]] sets the paper's training setting beside the configurations run here; the "
        "model, the task, the data and the arms are the paper's."
    )
    finished = []
    for _, summary, _, config in runs:
        m = _measures_last(summary)
        finished.append(f"every run of {_NAMES[config['configuration']]} ran its {fmt_int(m)} steps")
    convergence = (
        f"**Convergence.** The paper reports that without projection the model needs about three times "
        f"as many steps to reach a training loss of about 0.2. The loss of a single batch fluctuates "
        f"around its trend, and a first crossing of 0.2 by one batch says little, so we measure "
        f"convergence by the smoothed loss $\\bar{{\\ell}}_t = \\frac{{1}}{{{SMOOTHING}}}\\sum_{{s = t - "
        f"{SMOOTHING - 1}}}^{{t}} \\ell_s$, the mean training loss of the last {SMOOTHING} steps, and "
        f"report the first step $t$ at which $\\bar{{\\ell}}_t \\le 0.2$. The ratio of these steps "
        f"(without projection over with) is taken per seed, since both arms of a seed see the same data."
    )
    blocks = [
        Heading("Experiment 1: the Majority task", 1, "sec:majority"),
        Para(intro),
        _settings_table(runs),
        Para(_differences(runs) + " " + _join(finished).capitalize() + "."),
        Heading("Findings", 2),
        Para(convergence),
        Para(
            "[[tab:majority-findings]] sets our measurements beside the paper's. "
            + _verdicts(runs, measures)
            + f" The curves are in {cite('loss')} (smoothed training loss), {cite('accuracy')} (test "
            f"accuracy) and {cite('angle')} (the angle)."
            + (f" {cite('3d')} shows the three-dimensional variant." if refs.get("3d") else "")
        ),
        _findings_table(runs, measures),
    ]
    blocks += _certificates(runs)
    blocks += [Heading("Figures", 2), *figs]
    return tuple(blocks)


def _measures_last(summary: dict) -> int:
    steps = [a["final_step"]["max"] for a in summary["arms"].values() if a["final_step"]["max"] is not None]
    return int(max(steps)) if steps else 0


def write_section(root: Path, summary: dict | None = None, config: dict | None = None, figures=None) -> Path:
    """``root/summary.md`` from this run's own result files (``summary.json``, ``config.json``,
    ``runs/*.csv``); ``summary`` and ``config``, when given, are written first as those files."""
    root = Path(root)
    if summary is not None:
        write_text(
            root / "summary.json",
            json.dumps({k: v for k, v in summary.items() if k != "curves"}, indent=2, sort_keys=True) + "\n",
        )
    if config is not None:
        write_text(root / "config.json", json.dumps(config, indent=2, sort_keys=True) + "\n")
    blocks = majority_blocks([root], prefix_of=lambda r: f"{r.name}/")
    path = root / "summary.md"
    write_text(path, "\n".join(to_markdown(blocks)).rstrip() + "\n")
    loaded = _load(root)
    if loaded is not None:
        write_text(root / "summary_table.json", json.dumps(loaded[0]["arms"], indent=2))
    return path
