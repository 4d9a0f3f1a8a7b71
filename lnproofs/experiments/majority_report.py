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

from ..certificates.writes import write_text
from .blocks import Figure, Heading, Para, Table, fmt, fmt_int, to_markdown
from .outputs import read_rows

__all__ = [
    "SMOOTHING",
    "write_section",
    "majority_blocks",
    "mean_curve",
    "smoothed",
    "steps_to_smoothed",
    "run_measures",
    "three_d_measures",
    "value_at",
]

#: the window (training steps) of the smoothed training loss
SMOOTHING = 100
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


#: the per-run measures, under the names ``summary.json`` gives them (one meaning each)
MEASURES = (
    "epoch_angle",
    "accuracy_at",
    "final_accuracy",
    "final_loss",
    "final_query_angle",
    "steps_to_smoothed_loss",
    "final_step",
)


def run_measures(rows, accuracy_step: int, target: float) -> dict:
    """One run's measures: ``epoch_angle`` the paper's angle (mean over the last epoch's batches),
    ``accuracy_at`` test accuracy at ``accuracy_step``, ``final_accuracy`` at the last evaluation,
    ``final_loss`` the smoothed training loss at the last step, ``final_query_angle`` the last
    evaluated angle of the test queries, ``steps_to_smoothed_loss`` the first step where the
    smoothed loss is at most ``target`` (None if never), ``final_step`` the last step."""
    curve = smoothed([r["train_loss"] for r in rows if r.get("train_loss") is not None])
    return {
        "epoch_angle": _epoch_angle(rows),
        "accuracy_at": value_at(rows, "test_accuracy", accuracy_step),
        "final_accuracy": value_at(rows, "test_accuracy", math.inf),
        "final_loss": float(curve[-1]) if len(curve) else None,
        "final_query_angle": value_at(rows, "query_angle", math.inf),
        "steps_to_smoothed_loss": steps_to_smoothed(rows, target),
        "final_step": int(rows[-1]["step"]),
    }


def mean_curve(runs: list[list[dict]], key: str):
    """Steps and the mean, min and max of ``key`` over runs, at the steps every run evaluated."""
    series = [{row["step"]: row[key] for row in rows if row.get(key) is not None} for rows in runs]
    common = sorted(set.intersection(*(set(s) for s in series))) if series else []
    if not common:
        return np.array([]), np.array([]), np.array([]), np.array([])
    vals = np.array([[s[t] for t in common] for s in series])
    return np.array(common), vals.mean(0), vals.min(0), vals.max(0)


# ----------------------------------------------------------------------- the text
def _load(root: Path) -> tuple[dict, dict] | None:
    if not ((root / "summary.json").is_file() and (root / "config.json").is_file()):
        return None
    return tuple(json.loads((root / n).read_text(encoding="utf-8")) for n in ("summary.json", "config.json"))


def _measures(root: Path, summary: dict, config: dict) -> dict:
    """(arm -> seed -> measures) as ``summary.json`` records them: the numbers of the text are
    those of the result file, made by the same computation (:func:`run_measures`)."""
    per_run = summary.get("per_run", {})
    return {
        arm: {seed: per_run[f"{arm}_seed{seed}"] for seed in summary["seeds"] if f"{arm}_seed{seed}" in per_run}
        for arm in config["arms"]
        if arm in summary["arms"]
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
    from .majority_findings import angle_note, arms_note, findings_table, verdicts

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
            + verdicts(runs, measures)
            + f" The curves are in {cite('loss')} (smoothed training loss), {cite('accuracy')} (test "
            f"accuracy) and {cite('angle')} (the angle)."
            + (f" {cite('3d')} shows the three-dimensional variant." if refs.get("3d") else "")
        ),
        findings_table(runs, measures),
    ]
    note = angle_note(runs, measures)
    if note:
        blocks.append(Para(note))
    blocks.append(Para(arms_note(runs)))
    from .majority_tables import certificates_blocks, three_d_blocks

    blocks += three_d_blocks(runs)
    blocks += certificates_blocks(runs)
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


def majority_finding(roots) -> str:
    """The Majority experiment's finding in one sentence, for an abstract (empty without results)."""
    for root in roots:
        loaded = _load(Path(root))
        if loaded is None or loaded[1]["configuration"] != "default":
            continue
        arms = loaded[0]["arms"]
        if "epoch_angle" not in arms.get("layernorm", {}) or "epoch_angle" not in arms.get("no-projection", {}):
            continue
        with_p, without = arms["layernorm"]["epoch_angle"]["mean"], arms["no-projection"]["epoch_angle"]["mean"]
        three_d = loaded[0].get("three_d", {}).get("layernorm", {})
        text = (
            f"on their Majority task projection turns the queries towards the all-ones vector ({fmt(with_p)} "
            f"against {fmt(without)} degrees, less close than the paper's 11 to 12) and speeds up training"
        )
        if three_d.get("query_angle_max", 0) >= 20:
            text += ", but its three-dimensional variant does not reproduce the paper's picture"
        return text + ";"
    return ""


def three_d_measures(root, summary: dict) -> dict:
    """Per arm of the three-dimensional variant: its run's measures and the angles (degrees,
    folded into [0, 90]) between the all-ones vector and its trained queries (``runs3d/``)."""
    out = {}
    for arm in ("layernorm", "no-projection"):
        found = sorted((root / "runs3d").glob(f"{arm}_seed*.csv")) if (root / "runs3d").is_dir() else []
        if not found:
            continue
        rows = read_rows(found[0])
        measures = run_measures(rows, summary["accuracy_step"], summary["loss_target"])
        points = found[0].with_name(found[0].stem + "_points.npz")
        if points.is_file():
            with np.load(points) as z:
                q = z["queries"]
            cos = np.abs(q @ np.ones(3)) / (np.linalg.norm(q, axis=1) * math.sqrt(3))
            angles = np.degrees(np.arccos(np.clip(cos, 0.0, 1.0)))
            measures["query_angle_min"], measures["query_angle_max"] = float(angles.min()), float(angles.max())
        out[arm] = measures
    return out
