"""Reproduce Figure 1 of Brody, Alon and Yahav (2023) with certified verdicts.

Figure 1c/1d: for n = 3..60 keys and d = 3..15 dimensions, the fraction of trials in
which n standard-Gaussian keys in R^d contain at least one key that no query can
select, without LayerNorm (1c) and with it (1d: each key replaced by its LayerNorm,
gain 1, bias 0, eps 0, convention "torch").

Every trial's verdict is a verified statement, never a tolerance:

* *some key is not selectable*: a key and exact rational convex weights over the
  other keys that reproduce it, checked by :func:`lnproofs.kernel.checker.check_combinations`;
* *every key is selectable*: one witness query per key, checked by
  :func:`lnproofs.kernel.checker.check_witnesses` (float filter with a proven error bound,
  exact integers where the filter cannot decide);
* *undecided*: neither could be verified; counted separately and reported.

With LayerNorm the keys lie on a sphere centred at 0 and ``q = k_i`` is a witness for
``k_i``: one exact pass of the checker decides the trial.  Otherwise the certification
engine (:func:`lnproofs.propose.certification.has_unselectable`) decides, stopping at the first key
certified not selectable.

Trials are seeded per cell (``numpy`` generator seeded with ``[seed, n, d]``), and the
same Gaussian keys feed both panels, so the two panels are paired.  Each cell is one
task of :func:`lnproofs.execution.run_tasks` (this process, a local Dask cluster, or an
existing one); each finished cell is appended to ``progress.jsonl`` at once, so an
interrupted run continues where it stopped with ``resume=True``, and the written files
do not depend on how many workers ran the cells or in which order they finished.
"""

from __future__ import annotations

import json
import math
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..certificates.writes import open_append, output_folder, write_text
from ..kernel import OptionError, check_witnesses, require

__all__ = [
    "draw_heatmaps",
    "redraw",
    "N_RANGE",
    "D_RANGE",
    "CellResult",
    "trial_verdict",
    "run_cell",
    "reproduce_figure1",
]

N_RANGE = tuple(range(3, 61))
D_RANGE = tuple(range(3, 16))
_PROGRESS = "progress.jsonl"
VERDICTS = ("nonselectable", "all-selectable", "undecided")


def _layernorm_rows(keys: np.ndarray) -> np.ndarray:
    from ..derive.numeric import layernorm

    return layernorm(keys, eps=0.0, convention="torch")


def trial_verdict(keys: np.ndarray, *, on_sphere: bool = False, seed: int = 0) -> tuple[str, str | None]:
    """("nonselectable" | "all-selectable" | "undecided", reason) for one set of keys.

    Keys on a sphere centred at 0 (LayerNorm outputs) first try the witness q = k_i for
    every key in one exact pass of the checker.  Otherwise (or if that pass leaves a key
    open) the certification engine decides, stopping at the first key certified not
    selectable; it returns a verdict only after the checker accepted its certificate.
    """
    from ..propose.certification import has_unselectable

    if on_sphere:
        failures = check_witnesses(keys, list(enumerate(keys.tolist())), mode="strict")
        if all(f is None for f in failures):
            return "all-selectable", None
    answer = has_unselectable(keys, seed=seed)
    if answer is True:
        return "nonselectable", None
    if answer is False:
        return "all-selectable", None
    return "undecided", "the certification engine could not verify a certificate either way"


@dataclass(frozen=True)
class CellResult:
    """Counts for one (n, d) cell: per panel, trials with each verdict."""

    n: int
    d: int
    trials: int
    without: dict
    with_layernorm: dict
    seconds: float

    def to_json(self) -> dict:
        return {
            "n": self.n,
            "d": self.d,
            "trials": self.trials,
            "without": self.without,
            "with_layernorm": self.with_layernorm,
            "seconds": round(self.seconds, 3),
        }

    @classmethod
    def from_json(cls, data: dict) -> CellResult:
        return cls(
            int(data["n"]),
            int(data["d"]),
            int(data["trials"]),
            dict(data["without"]),
            dict(data["with_layernorm"]),
            float(data.get("seconds", 0.0)),
        )


def run_cell(n: int, d: int, trials: int, seed: int) -> CellResult:
    """All trials of one cell, both panels, from the generator seeded with [seed, n, d]."""
    start = time.perf_counter()
    rng = np.random.default_rng([int(seed), int(n), int(d)])
    counts = {"without": dict.fromkeys(VERDICTS, 0), "with_layernorm": dict.fromkeys(VERDICTS, 0)}
    for _ in range(trials):
        keys = rng.standard_normal((n, d))
        verdict, _ = trial_verdict(keys, on_sphere=False)
        counts["without"][verdict] += 1
        verdict, _ = trial_verdict(_layernorm_rows(keys), on_sphere=True)
        counts["with_layernorm"][verdict] += 1
    return CellResult(n, d, trials, counts["without"], counts["with_layernorm"], time.perf_counter() - start)


def _run_cell_args(args):
    return run_cell(*args)


def _read_progress(path: Path, trials: int, seed: int) -> dict:
    done = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return done
    except OSError as err:
        raise OptionError(f"cannot read {path}: {err.strerror or err}") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError:
            if number == len(lines):
                break  # a line cut short by an interruption
            raise OptionError(f"{path} line {number} is not JSON; delete the file or choose another --out") from None
        if data.get("kind") == "header":
            if data.get("trials") != trials or data.get("seed") != seed:
                raise OptionError(
                    f"{path} was written with --trials {data.get('trials')} --seed {data.get('seed')}, not "
                    f"--trials {trials} --seed {seed}; use the same options to resume, or another --out"
                )
            continue
        cell = CellResult.from_json(data)
        done[(cell.n, cell.d)] = cell
    return done


def _fraction(counts: dict) -> float:
    decided = counts["nonselectable"] + counts["all-selectable"]
    return counts["nonselectable"] / decided if decided else float("nan")


def _write_csv(path: Path, cells: dict, panel: str) -> None:
    lines = ["n,d,fraction"]
    for n in N_RANGE:
        for d in D_RANGE:
            cell = cells.get((n, d))
            if cell is not None:
                lines.append(f"{n},{d},{_fraction(getattr(cell, panel)):.6g}")
    write_text(path, "\n".join(lines) + "\n")


def _write_counts(path: Path, cells: dict) -> None:
    lines = [
        "n,d,trials,without_nonselectable,without_all_selectable,without_undecided,"
        "with_nonselectable,with_all_selectable,with_undecided"
    ]
    for (n, d), cell in sorted(cells.items()):
        w, l = cell.without, cell.with_layernorm
        lines.append(
            f"{n},{d},{cell.trials},{w['nonselectable']},{w['all-selectable']},{w['undecided']},"
            f"{l['nonselectable']},{l['all-selectable']},{l['undecided']}"
        )
    write_text(path, "\n".join(lines) + "\n")


def _grid(cells: dict, panel: str) -> np.ndarray:
    grid = np.full((len(N_RANGE), len(D_RANGE)), np.nan)
    for (n, d), cell in cells.items():
        grid[N_RANGE.index(n), D_RANGE.index(d)] = _fraction(getattr(cell, panel))
    return grid


def draw_heatmaps(out: Path, grids: dict) -> list:
    """``figure1c.png`` (without LayerNorm) and, when some cell is not 0, ``figure1d.png`` (with
    LayerNorm); a panel that is 0 everywhere carries no information and is not drawn (an old
    one is removed).  No title inside: the caption says what a panel shows."""
    from . import key_figures

    drawn = []
    for panel, name in (("without", "figure1c.png"), ("with_layernorm", "figure1d.png")):
        grid = grids[panel]
        if panel == "with_layernorm" and not np.nanmax(grid, initial=0) > 0:
            (out / name).unlink(missing_ok=True)
            continue
        key_figures.heatmap(
            out / name,
            N_RANGE,
            D_RANGE,
            grid,
            xlabel="d (dimension)",
            ylabel="n (number of keys)",
            colorbar="fraction of trials with a key that is not selectable",
        )
        drawn.append(name)
    return drawn


def redraw(out) -> list:
    """Draw the panels again from ``figure1c.csv`` and ``figure1d.csv`` in ``out`` (no trial rerun)."""
    out = Path(out)
    grids = {}
    for panel, name in (("without", "figure1c.csv"), ("with_layernorm", "figure1d.csv")):
        grid = np.full((len(N_RANGE), len(D_RANGE)), np.nan)
        for row in (out / name).read_text(encoding="utf-8").splitlines()[1:]:
            n, d, value = row.split(",")
            if int(n) in N_RANGE and int(d) in D_RANGE:
                grid[N_RANGE.index(int(n)), D_RANGE.index(int(d))] = float(value)
        grids[panel] = grid
    return draw_heatmaps(out, grids)


def _projection_keys(seed: int):
    """Synthetic keys for the Figure 1a/1b-style picture: Gaussian keys with an offset
    along (1,1,1), and their projections (x - mean(x))."""
    from ..derive.numeric import center

    rng = np.random.default_rng([int(seed), 1])
    keys = rng.standard_normal((8, 3)) * 0.9 + 1.2
    return keys, center(keys)


def _note(cells: dict, trials: int, seed: int, complete: bool) -> str:
    from .. import __version__

    without, with_ln = _grid(cells, "without"), _grid(cells, "with_layernorm")
    und_c = sum(c.without["undecided"] for c in cells.values())
    und_d = sum(c.with_layernorm["undecided"] for c in cells.values())
    total = sum(c.trials for c in cells.values())
    small_d = without[:, D_RANGE.index(3)] if 3 in D_RANGE else np.array([])
    big_n = N_RANGE.index(60) if 60 in N_RANGE else len(N_RANGE) - 1
    general = [(n, d) for (n, d) in cells if n <= d + 1]
    general_zero = all(cells[c].without["nonselectable"] == 0 for c in general)
    row60 = without[big_n]
    lines = [
        "# Figure 1 of Brody, Alon and Yahav (2023), reproduced with certificates",
        "",
        f"- lnproofs {__version__}, numpy {np.__version__}, Python {platform.python_version()}",
        f"- trials per cell: {trials}; seed: {seed}; "
        f"cells done: {len(cells)} of {len(N_RANGE) * len(D_RANGE)}" + ("" if complete else " (incomplete run)"),
        "- keys: i.i.d. standard Gaussian; with LayerNorm: gain 1, bias 0, eps 0, convention torch "
        "(biased variance), applied to each key of width d; the same keys feed both panels",
        "- a trial counts when it contains at least one key that is not selectable (tie-only or "
        "unselectable); every verdict is an exactly verified certificate",
        f"- undecided trials: {und_c} of {total} without LayerNorm, {und_d} of {total} with it "
        "(fractions are over decided trials)",
        "",
        "| panel | file | smallest fraction | largest fraction |",
        "|---|---|---|---|",
        f"| 1c, without LayerNorm | figure1c.csv, figure1c.png | {np.nanmin(without):.3g} | {np.nanmax(without):.3g} |",
        f"| 1d, with LayerNorm | figure1d.csv, figure1d.png | {np.nanmin(with_ln):.3g} | {np.nanmax(with_ln):.3g} |",
        "",
        "## Agreement with the published figure",
        "",
    ]
    if small_d.size and not np.all(np.isnan(small_d)):
        peak = float(np.nanmax(small_d))
        first, last = row60[0], row60[-1]
        agrees = peak >= 0.9 and not (first < last)
        lines.append(
            f"- **{'Agrees' if agrees else 'Differs'} (1c):** the paper shows that with few dimensions "
            f"and many keys some key is almost always unselectable, less so as d grows. Here at d = 3 "
            f"the fraction reaches {peak:.3g} (first at n = {N_RANGE[int(np.nanargmax(small_d))]}), and "
            f"at n = {N_RANGE[big_n]} it goes from {first:.3g} (d = {D_RANGE[0]}) to {last:.3g} "
            f"(d = {D_RANGE[-1]})."
        )
    peak_ln = float(np.nanmax(with_ln))
    lines.append(
        f"- **Agrees (1d):** with LayerNorm no trial has a non-selectable key (largest fraction "
        f"{peak_ln:.3g}); the keys lie on a sphere centred at 0 and every key of every trial has a "
        "verified witness."
        if peak_ln == 0
        else f"- **Differs (1d):** the largest fraction with LayerNorm is {peak_ln:.3g}, not 0; see figure1_counts.csv."
    )
    lines.append(
        f"- **{'Agrees' if general_zero else 'Differs'} (n <= d + 1):** so few Gaussian keys are affinely "
        "independent with probability 1, so every key is a vertex; "
        + ("every such cell here has fraction 0." if general_zero else "some such cell here is not 0.")
    )
    lines += [
        "- **Cannot be compared cell by cell:** the published panels are images without the underlying "
        "numbers and their exact trial counts and seeds are not given, so the comparison is of the "
        "pattern (where the fraction is near 1, where it is near 0, and the boundary between them), "
        "not of single values; at 100 trials each fraction carries a binomial standard error of up "
        "to 0.05.",
        "",
        "![Figure 1c](figure1c.png) ![Figure 1d](figure1d.png)",
        "",
        "![Keys with and without projection](figure1ab.png)",
        "",
    ]
    return "\n".join(lines)


def _check_out(out: Path) -> Path:
    out = output_folder(out)
    if not os.access(out, os.W_OK):
        raise OptionError(f"cannot write to --out {str(out)!r}: permission denied; give a writable folder")
    return out


#: with workers=None, a local cluster starts only for runs of at least this many trials
#: (cells x trials; about 25 s of work in one process).  Starting two workers and sending them
#: one task per cell cost about 14 CPU seconds (the grid at --trials 10: 33 CPU s on two workers,
#: 19 in this process), so smaller runs stay in this process
PARALLEL_MIN_TRIALS = 10000


def reproduce_figure1(
    out="reports/figure1",
    *,
    trials: int = 100,
    seed: int = 0,
    workers: int | None = None,
    scheduler: str | None = None,
    resume: bool = False,
    n_values=N_RANGE,
    d_values=D_RANGE,
    progress=None,
    jobs: int | None = None,
) -> dict:
    """Run (or continue) the Figure 1c/1d grid and write CSVs, heatmaps and a note.

    ``n_values``/``d_values`` restrict the grid (for quick runs); files always use the
    full grid's layout.  ``workers``: 1 runs every cell in this process; N a local Dask
    cluster of N worker processes; None (default) a cluster sized to the machine when the
    run has at least :data:`PARALLEL_MIN_TRIALS` trials, else this process.
    ``scheduler``: the address of an existing Dask cluster instead.  ``jobs``: the former
    name of ``workers``, still accepted.  The files written are the same for any number
    of workers.  Returns a summary dict.
    """
    from ..execution import open_client, run_tasks

    require(
        isinstance(trials, int) and trials > 0,
        OptionError,
        f"--trials {trials!r} is not accepted; give a positive whole number of trials per cell",
    )
    if jobs is not None:
        require(workers is None, OptionError, "give --workers or its former name --jobs, not both")
        workers = jobs
    bad = [v for v in n_values if v not in N_RANGE] + [v for v in d_values if v not in D_RANGE]
    require(not bad, OptionError, f"grid value {bad[:1]} is outside n = 3..60, d = 3..15")
    out = _check_out(Path(out))
    progress_path = out / _PROGRESS
    done = _read_progress(progress_path, trials, seed) if resume else {}
    todo = [(n, d, trials, seed) for n in n_values for d in d_values if (n, d) not in done]
    # large cells first, so the workers finish together
    todo.sort(key=lambda t: -t[0] * t[1])
    cells = dict(done)
    # the cluster is reached (and its workers checked) before any file is touched
    with open_client(
        workers, scheduler, n_tasks=len(todo), worthwhile=len(todo) * trials >= PARALLEL_MIN_TRIALS
    ) as ctx:
        if not resume or not progress_path.exists():
            write_text(progress_path, json.dumps({"kind": "header", "trials": trials, "seed": seed}) + "\n")
        start = time.perf_counter()
        with open_append(progress_path) as log:

            def record(_index, cell: CellResult):
                cells[(cell.n, cell.d)] = cell
                log.write(json.dumps(cell.to_json(), sort_keys=True) + "\n")
                log.flush()
                if progress is not None:
                    progress(len(cells), len(todo) + len(done))

            run_tasks(_run_cell_args, todo, context=ctx, on_result=record, label="figure1")
        seconds = time.perf_counter() - start
        used = ctx.workers
    wanted = {(n, d) for n in n_values for d in d_values}
    cells = {k: v for k, v in cells.items() if k in wanted}
    summary = _write_outputs(out, cells, trials, seed, complete=len(wanted) == len(N_RANGE) * len(D_RANGE))
    return {**summary, "seconds": seconds, "workers": used}


def _write_outputs(out: Path, cells: dict, trials: int, seed: int, complete: bool) -> dict:
    from . import figures

    _write_csv(out / "figure1c.csv", cells, "without")
    _write_csv(out / "figure1d.csv", cells, "with_layernorm")
    _write_counts(out / "figure1_counts.csv", cells)
    draw_heatmaps(out, {panel: _grid(cells, panel) for panel in ("without", "with_layernorm")})
    keys, projected = _projection_keys(seed)
    figures.projection_picture(out / "figure1ab.png", keys, projected, np.ones(3))
    note = _note(cells, trials, seed, complete)
    write_text((out / "figure1.md"), note)
    return {
        "out": str(out),
        "cells": len(cells),
        "trials": trials,
        "undecided_without": sum(c.without["undecided"] for c in cells.values()),
        "undecided_with": sum(c.with_layernorm["undecided"] for c in cells.values()),
        "max_fraction_with": float(np.nanmax(_grid(cells, "with_layernorm"))) if cells else math.nan,
    }
