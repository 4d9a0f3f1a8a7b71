"""``lnproofs reproduce majority``: the paper's Majority task (its Figures 1a/1b, 2 and 3).

Three arms of one model (:mod:`torch_backend.training.majority`): LayerNorm (projection
and scaling), no projection (onto a sphere), and no norm; several seeds each.  Per arm and
seed a CSV of the training loss per step and, every few steps, the test accuracy and the
mean angle between the queries and the all-ones vector.  Then the mean and spread over
seeds, one figure per quantity with the paper's values marked, the 3-D variant with a plot
of its keys and queries, and a section of ``summary.md``.

Runs already finished in OUT are kept and not redone.
"""

from __future__ import annotations

import math
import platform
import time
from pathlib import Path

import numpy as np

from ..certificates.writes import folder_entry, output_folder, write_arrays
from .majority_data import make_majority_data
from .outputs import RowWriter, device_name, finished, read_rows, write_json, write_summary
from .paper import ARM_LABELS, ARMS, PAPER_VALUES, accuracy_step

__all__ = ["DEFAULT", "PAPER", "PAPER_VALUES", "ARMS", "ARM_LABELS", "reproduce_majority", "summarise"]

LOSS_TARGET = 0.2

#: the scaled-down configuration: the paper's model, task, data, batch and schedule, three
#: times its learning rate for 5,000 steps instead of up to 14,000 (see ``docs/experiments.md``)
DEFAULT = {
    "main": {
        "n_samples": 100_000,
        "length": 50,
        "classes": 20,
        "d": 8,
        "min_delta": 6,
        "batch": 6000,
        "steps": 5000,
        "lr": 3e-3,
        "eval_every": 100,
        "decay_steps": math.ceil(100_000 / 6000) * 10_000,
    },
    "three_d": {
        "n_samples": 6_000,
        "length": 30,
        "classes": 10,
        "d": 3,
        "min_delta": 6,
        "batch": 128,
        "steps": 1000,
        "lr": 1e-2,
        "eval_every": 100,
        "decay_steps": None,
    },
    "seeds": (11, 123, 42),
    "arms": ("layernorm", "no-projection"),
    "data_seed": 0,
}
#: why each configuration stands for the paper's (printed in summary.md)
RATIONALE = {
    "default": "Why this stands for the paper's: the same task, model, arms, data (N 100,000), batch (6,000) and "
    "nearly constant schedule, with three times the learning rate (3e-3) for 5,000 steps instead of "
    "up to 14,000. With Adam a parameter moves about the learning rate per step, so 5,000 steps at 3e-3 "
    "cover the paper's 15,000 steps at 1e-3; test accuracy is compared at step 1,667, the same "
    "learning rate x steps as the paper's step 5,000. Among the settings tried (docs/experiments.md), "
    "smaller batches leave the angle with projection stalled near 35-45 degrees and a decaying rate "
    "stops it near 40; this is the cheapest that brings it under 20 degrees for every seed tried. It "
    "does not fit the 10 minutes aimed at: the six runs take three rounds of two parallel runs, about "
    "7 minutes a round on two cores (about 70 ms a step), so about 21 minutes in all; with fewer steps "
    "the slowest seed (11) is still above 20 degrees (22.9 at step 4,000) and the sphere arm has not "
    "reached loss 0.2.",
    "paper": "The paper's configuration (its Figures 2 and 3): 100,000 sequences, batch 6,000, Adam 1e-3, "
    "up to 1,000 epochs, stop at test accuracy 1.0.",
}
#: the paper's configuration (Figures 2/3: 1,000 epochs of 14 steps; 3-D: 10,000 epochs of one step)
PAPER = {
    "main": {
        "n_samples": 100_000,
        "length": 50,
        "classes": 20,
        "d": 8,
        "min_delta": 6,
        "batch": 6000,
        "steps": 14_000,
        "lr": 1e-3,
        "eval_every": 14,
        "decay_steps": math.ceil(100_000 / 6000) * 10_000,
    },
    "three_d": {
        "n_samples": 6_000,
        "length": 30,
        "classes": 10,
        "d": 3,
        "min_delta": 6,
        "batch": 6000,
        "steps": 10_000,
        "lr": 1e-3,
        "eval_every": 200,
        "decay_steps": 10_000,
    },
    "seeds": (11, 123, 42, 9, 456, 4, 5, 6, 7, 8),
    "arms": ARMS,
    "data_seed": 0,
}
#: steps between training checkpoints (a run resumes from the last one)
_CHECKPOINT_EVERY = 500
_FIELDS = ["step", "epoch", "train_loss", "train_angle", "test_accuracy", "query_angle"]


def _run_arm(data, cfg: dict, arm: str, seed: int, path: Path, device: str) -> dict | None:
    """Train one run into ``path`` (CSV rows as they come); a long run keeps a checkpoint
    beside it and continues from it when interrupted."""
    from torch_backend.training.majority import checkpoint_step, train_majority

    ckpt = path.with_name(path.stem + ".checkpoint.pt")
    writer = RowWriter(path, _FIELDS, keep_until=checkpoint_step(ckpt))
    try:
        decay = cfg["decay_steps"] or cfg["steps"] * 10
        result = train_majority(
            data,
            arm=arm,
            d=cfg["d"],
            seed=seed,
            steps=cfg["steps"],
            batch=cfg["batch"],
            lr=cfg["lr"],
            decay_steps=decay,
            eval_every=cfg["eval_every"],
            device=device,
            on_row=writer,
            checkpoint=ckpt,
            checkpoint_every=_CHECKPOINT_EVERY,
        )
    except BaseException:
        writer.abandon()
        raise
    write_arrays(_weights_path(path), {**result["weights"], "norm1_keys": result["keys"]})
    writer.finish()
    ckpt.unlink(missing_ok=True)
    return result


def _same_configuration(path: Path, config: dict) -> dict:
    """``config``, after making sure the runs already in its folder were made with the same
    training settings (else one line, nothing touched: they would be kept as if they were
    this configuration's); a 3-D configuration not run now is carried over from the file."""
    import json

    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return config
    from ..kernel import OptionError

    for key in ("main", "three_d", "data_seed"):
        if key in old and old[key] is not None and config[key] is not None and old[key] != config[key]:
            theirs, ours = old[key], config[key]
            changed = (
                [
                    f"{k} {theirs.get(k)} (now {ours.get(k)})"
                    for k in sorted(set(theirs) | set(ours))
                    if theirs.get(k) != ours.get(k)
                ]
                if isinstance(ours, dict)
                else [f"{theirs} (now {ours})"]
            )
            raise OptionError(
                f"{path.parent} holds runs made with other settings ({key}: {', '.join(changed)}); "
                "give another --out, or remove that folder to start over"
            )
    if config["three_d"] is None and old.get("three_d") is not None:
        config = {**config, "three_d": old["three_d"]}
    return config


def _kept(run) -> bool:
    """Whether a run of :func:`reproduce_majority`'s list is finished, its weights (or
    points) kept."""
    _, _, _, path, points = run
    return finished(path) and (points.is_file() if points else _weights_path(path).is_file())


def _data(n_samples, length, classes, min_delta, seed):
    return make_majority_data(n_samples, length, classes, min_delta=min_delta, seed=seed)


def _train_task(item, data) -> str:
    """One training run on a worker (or in this process): ``item`` is ``(cfg, arm, seed,
    csv path, points path or None, device)``; ``data`` the run's data set."""
    cfg, arm, seed, path, points, device = item
    result = _run_arm(data, cfg, arm, seed, Path(path), device)
    if points:
        write_arrays(points, {"keys": result["keys"], "queries": result["queries"]})
    return f"{arm} seed {seed}" + (" (3-D)" if points else "")


def _weights_path(path: Path) -> Path:
    return path.with_name(path.stem + "_weights.npz")


def reproduce_majority(
    out,
    *,
    paper: bool = False,
    seeds=None,
    steps: int | None = None,
    n_samples: int | None = None,
    device: str = "auto",
    three_d: bool = True,
    progress=None,
    arms=None,
    train: bool = True,
    note: str | None = None,
    workers=None,
    scheduler=None,
) -> dict:
    """Run (or finish) the experiment into ``OUT/majority`` (``OUT/majority_paper`` with
    ``paper``); returns the summary dict.  ``arms``: a subset of :data:`ARMS`.
    ``train=False`` trains nothing and summarises the runs' CSVs as they are (certificates
    only for runs whose weights were kept); ``note`` is printed under the configuration
    (e.g. that runs were stopped before their last step).  The runs are independent tasks of
    :func:`lnproofs.execution.run_tasks`: ``workers`` / ``scheduler`` as there (default: a
    local cluster sized to the machine when more than one run is left, on the CPU; runs on a
    GPU take turns in this process); each run trains on one thread and gives the same numbers
    wherever it runs."""
    base = PAPER if paper else DEFAULT
    cfg = {**base["main"]}
    if steps is not None:
        cfg["steps"] = steps
    if n_samples is not None:
        cfg["n_samples"] = n_samples
    cfg3 = {**base["three_d"], **({"steps": steps} if steps is not None else {})}
    seeds = tuple(seeds or base["seeds"])
    arms = tuple(dict.fromkeys(arms or base["arms"]))
    if not {"layernorm", "no-projection"} <= set(arms) <= set(ARMS):
        from ..kernel import OptionError

        raise OptionError(
            f"--arms {','.join(arms)!r} is not accepted; give layernorm,no-projection (the two the "
            f"findings compare), optionally with none"
        )
    out = output_folder(out)
    root = folder_entry(out, "majority_paper" if paper else "majority", folder=True)
    dev = device_name(device)
    started = time.monotonic()
    config = {
        "configuration": "paper" if paper else "default",
        "main": cfg,
        "three_d": cfg3 if three_d else None,
        "seeds": list(seeds),
        "data_seed": base["data_seed"],
        "arms": list(arms),
        "device": dev,
        "python": platform.python_version(),
        "rationale": RATIONALE["paper" if paper else "default"],
        **({"note": note} if note else {}),
    }
    config = _same_configuration(root / "config.json", config)
    write_json(root / "config.json", config)
    main = [(cfg, arm, seed, root / "runs" / f"{arm}_seed{seed}.csv", None) for arm in arms for seed in seeds]
    small = (
        [
            (
                cfg3,
                arm,
                seeds[0],
                root / "runs3d" / f"{arm}_seed{seeds[0]}.csv",
                root / "runs3d" / f"{arm}_seed{seeds[0]}_points.npz",
            )
            for arm in ("layernorm", "no-projection")
        ]
        if three_d
        else []
    )
    todo = [[r for r in runs if train and not _kept(r)] for runs in (main, small)]
    left = len(todo[0]) + len(todo[1])
    total = len(main) + len(small)
    done = total - left
    if left:
        from ..execution import Load, open_client, run_tasks

        if workers is None and scheduler is None and dev != "cpu":
            workers = 1  # one device: the runs take turns on it
        with open_client(workers, scheduler, worthwhile=left > 1, n_tasks=left) as ctx:
            for runs, c in zip(todo, (cfg, cfg3)):
                if not runs:
                    continue
                data = Load(_data, c["n_samples"], c["length"], c["classes"], c["min_delta"], base["data_seed"])

                def finished_one(index, name):
                    nonlocal done
                    done += 1
                    if progress:
                        progress(f"majority: {name} ({done}/{total})")

                run_tasks(
                    _train_task,
                    [(c, arm, seed, str(path), points and str(points), dev) for c, arm, seed, path, points in runs],
                    context=ctx,
                    shared=data,
                    on_result=finished_one,
                )
    shapes = {}
    for _, arm, _, _, points in small:
        if not points.is_file():
            continue  # train=False and the 3-D runs never trained
        with np.load(points) as z:
            shapes[arm] = {"keys": z["keys"], "queries": z["queries"]}
    certificates = _certify_runs(root, arms, seeds, progress)
    summary = summarise(root, seeds, cfg, arms)
    summary["certificates"] = certificates
    summary["seconds"] = time.monotonic() - started
    from .majority_figures import write_figures
    from .majority_report import write_section

    write_figures(root, seeds, cfg, shapes, arms)
    write_json(root / "summary.json", {k: v for k, v in summary.items() if k != "curves"})
    write_section(root)  # from the result files of this run alone
    write_summary(out)
    summary["out"] = str(root)
    return summary


def _certify_runs(root: Path, arms, seeds, progress) -> dict:
    """Per arm and seed, the certificates of :mod:`.majority_certify` (kept in
    ``runs/ARM_seedSEED_certificates.json``, made once per trained model)."""
    import json

    from .majority_certify import certify_majority_model

    found = {}
    for arm in arms:
        for seed in seeds:
            path = root / "runs" / f"{arm}_seed{seed}_certificates.json"
            if not path.is_file():
                if not _weights_path(root / "runs" / f"{arm}_seed{seed}.csv").is_file():
                    continue  # a run summarised as it stopped: no weights kept
                with np.load(_weights_path(root / "runs" / f"{arm}_seed{seed}.csv")) as z:
                    weights = {k: z[k] for k in z.files}
                write_json(path, certify_majority_model(arm, weights))
                if progress:
                    progress(f"majority: certified {arm} seed {seed}")
            found[f"{arm}_seed{seed}"] = json.loads(path.read_text(encoding="utf-8"))
    return found


def _stats(values) -> dict:
    vals = [v for v in values if v is not None]
    if not vals:
        return {"mean": None, "std": None, "min": None, "max": None, "n": 0}
    a = np.asarray(vals, dtype=float)
    return {
        "mean": float(a.mean()),
        "std": float(a.std()),
        "min": float(a.min()),
        "max": float(a.max()),
        "n": len(vals),
    }


def summarise(root: Path, seeds, cfg: dict, arms=ARMS) -> dict:
    """Per run, the measures of :func:`lnproofs.experiments.majority_report.run_measures` (under
    ``per_run``, ``ARM_seedSEED``), and per arm their mean, std, min and max over seeds under the
    same names (``steps_to_smoothed_loss``: the first step where the training loss, smoothed over
    the last 100 steps, is at most 0.2; ``reached_smoothed_loss``: how many seeds reached it).
    The 3-D variant's measures, when its runs are there, are under ``three_d``."""
    from .majority_report import MEASURES, run_measures, three_d_measures

    at = accuracy_step(cfg)
    per_run = {
        f"{arm}_seed{s}": run_measures(read_rows(root / "runs" / f"{arm}_seed{s}.csv"), at, LOSS_TARGET)
        for arm in arms
        for s in seeds
    }
    table = {}
    for arm in arms:
        runs = [per_run[f"{arm}_seed{s}"] for s in seeds]
        table[arm] = {key: _stats(r[key] for r in runs) for key in MEASURES}
        table[arm]["reached_smoothed_loss"] = sum(r["steps_to_smoothed_loss"] is not None for r in runs)
    summary = {"arms": table, "per_run": per_run, "accuracy_step": at, "loss_target": LOSS_TARGET, "seeds": list(seeds)}
    variant = three_d_measures(root, summary)
    if variant:
        summary["three_d"] = variant
    return summary
