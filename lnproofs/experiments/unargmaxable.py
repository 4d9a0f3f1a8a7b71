"""``lnproofs reproduce unargmaxable``: the random-model grid of Grivas et al. (2022), certified.

Their ``experiments/create_random_models`` draws, with NumPy's legacy generator seeded 13, a
softmax layer of 10,000 classes for every ``d`` in {2, 4, 6, 8, 10, 15, 20, 30, 40, 50}:
``W`` (classes x d) then ``b`` (classes), uniform on [-1, 1] or standard normal.  Their search
asks, per class, whether some input in the box [-100, 100]^d makes it the argmax of ``W x + b``
(a heuristic, then a floating-point LP).  Here every class is certified both ways (without and
with the bias) under three query sets: the box [-100, 100]^d, free inputs (all of R^d), and a
LayerNorm ball (``x`` a LayerNorm output with unit gain, no bias and eps 1e-5, PyTorch's default:
``1 . u = 0``, ``||u|| < sqrt(d)``, the open ball its outputs fill; a strict argmax on the closed
ball is one just inside it), each answer checked by the kernel.  A class is *unargmaxable* when it is
certified never to be the strict argmax (``unselectable``, ``tie-only`` or ``not-realisable``).
"""

from __future__ import annotations

import json
import time

import numpy as np

from ..certificates.writes import folder_entry, open_append, output_folder, write_text
from ..kernel import InputError

__all__ = ["DIMS", "INITS", "SETS", "random_model", "reproduce_unargmaxable", "CLAIMS"]

DIMS = (2, 4, 6, 8, 10, 15, 20, 30, 40, 50)
INITS = ("uniform", "normal")
SETS = ("box", "free", "layernorm")
NEVER = ("unselectable", "tie-only", "not-realisable")
EPS = 1e-5  # the LayerNorm's eps: its outputs fill the open ball

#: the published statements about this grid that the run checks (from the repository's README and
#: the paper's title; the paper's own figures are not in the repository and are not compared)
CLAIMS = (
    (
        "low",
        'Random softmax layers can have unargmaxable classes ("in theory"): some class of some model with '
        "d <= 10 is unargmaxable in the box",
    ),
    (
        "high",
        '"In high dimensions unargmaxable tokens are not expected to exist if we randomly initialise the '
        'weight vectors": no class of any model with d >= 30, with its bias as their search uses it, is '
        "unargmaxable in the box",
    ),
)


def random_model(init: str, d: int, classes: int = 10000, seed: int = 13) -> tuple[np.ndarray, np.ndarray]:
    """``(W, b)`` drawn as their ``create_model.py`` draws them: seed 13, ``W`` first, then ``b``."""
    rng = np.random.RandomState(seed)
    if init == "uniform":
        return rng.uniform(-1, 1, (classes, d)), rng.uniform(-1, 1, (1, classes)).reshape(-1)
    return rng.normal(0, 1, (classes, d)), rng.normal(0, 1, (1, classes)).reshape(-1)


def _layernorm_set(d: int, bias):
    from ..kernel import LayerNormQuerySet

    if bias is None:
        return LayerNormQuerySet(tuple(np.ones(d)), tuple(np.zeros(d)), np.eye(d), tuple(np.zeros(d)), EPS)
    W = np.vstack([np.eye(d), np.zeros((1, d))])  # (x, 1) . (w_j, b_j): theorem vocab.bias_lift
    return LayerNormQuerySet(tuple(np.ones(d)), tuple(np.zeros(d)), W, tuple(np.r_[np.zeros(d), 1.0]), EPS)


def _certify(name, W, bias, *, seed):
    """Statuses of every class under one query set (each claim checked by the kernel)."""
    from ..kernel import BoxQuerySet
    from ..propose.vocab import certify_vocab_keys

    b = None if bias is None else tuple(bias.tolist())
    if name == "layernorm":  # the vocabulary road of a final norm's set
        keys = W if bias is None else np.hstack([W, bias[:, None]])
        return certify_vocab_keys(keys, _layernorm_set(W.shape[1], bias), seed=seed).statuses()
    qs = BoxQuerySet(100.0 if name == "box" else None, b) if (name == "box" or b is not None) else None
    return certify_vocab_keys(W, qs, seed=seed).statuses()


def reproduce_unargmaxable(
    out, *, classes: int = 10000, dims=DIMS, inits=INITS, biases=(False, True), sets=SETS, seed: int = 0, progress=None
) -> dict:
    """Certify the grid, write ``table.csv``, ``results.json`` and ``README.md`` to ``out``; return the summary.
    Models already in ``out/results.jsonl`` with these sets are kept, and the table lists every model
    of ``classes`` classes certified there (so runs of different cells accumulate)."""
    import pandas as pd

    out = output_folder(out)
    rows = []
    done_path = folder_entry(out, "results.jsonl")  # a link planted there is refused, not read
    done = {}
    if done_path.is_file():  # finished models are kept (resume)
        for number, line in enumerate(done_path.read_text().splitlines(), 1):
            try:
                row = json.loads(line)
                done[(row["init"], row["d"], row["bias"], row["classes"])] = row
            except (ValueError, KeyError, TypeError):
                raise InputError(
                    f"{done_path} line {number} is not a row of an earlier run; move the file away to start over"
                ) from None
    cells = [(i, d, b) for i in inits for d in dims for b in biases]
    for n, (init, d, with_bias) in enumerate(cells):
        key = (init, d, with_bias, classes)
        if key in done and all(f"{s} unargmaxable" in done[key] for s in sets):
            rows.append(done[key])
            continue
        W, b = random_model(init, d, classes)
        row = dict(done.get(key, {"init": init, "d": d, "bias": with_bias, "classes": classes}))
        for name in sets:
            if f"{name} unargmaxable" in row:  # a set this model already has is kept
                continue
            start = time.perf_counter()
            statuses = _certify(name, W, b if with_bias else None, seed=seed)
            row[f"{name} unargmaxable"] = sum(s in NEVER for s in statuses)
            row[f"{name} undecided"] = statuses.count("undecided")
            row[f"{name} seconds"] = round(time.perf_counter() - start, 2)
        rows.append(row)
        with open_append(done_path) as handle:
            handle.write(json.dumps(row) + "\n")
        if progress is not None:
            progress(n + 1, len(cells))
    kept = {(r["init"], r["d"], r["bias"]): r for r in list(done.values()) + rows if r["classes"] == classes}
    order = {
        (i, d, b): n
        for n, (i, d, b) in enumerate((i, d, b) for i in INITS for d in sorted({*DIMS, *dims}) for b in (False, True))
    }
    rows = [kept[k] for k in sorted(kept, key=lambda k: order.get(k, len(order)))]
    table = pd.DataFrame(rows)
    write_text(out / "table.csv", table.to_csv(index=False))
    verdicts = _claims(table, sets)
    summary = {
        "classes": classes,
        "dims": list(dims),
        "inits": list(inits),
        "biases": list(biases),
        "sets": list(sets),
        "claims": verdicts,
        "rows": rows,
    }
    write_text(out / "results.json", json.dumps(summary, indent=1))
    _write_readme(out, table, verdicts, summary)
    return summary


def _claims(table, sets) -> list[dict]:
    out = []
    if "box" not in sets:
        return [{"claim": text, "verdict": "not checked (the box was not run)"} for _, text in CLAIMS]
    for name, text in CLAIMS:
        part = table[table["d"] <= 10] if name == "low" else table[(table["d"] >= 30) & table["bias"]]
        if part.empty or part["box undecided"].sum():
            verdict = "not checked (no model of those widths in this run, or undecided classes)"
        elif name == "low":
            verdict = "reproduced" if part["box unargmaxable"].sum() > 0 else "not reproduced"
        else:
            verdict = "reproduced" if part["box unargmaxable"].sum() == 0 else "not reproduced"
        out.append({"claim": text, "verdict": verdict})
    ln = "layernorm unargmaxable"
    if ln in table and table[ln].notna().all() and not table["layernorm undecided"].sum():
        high = table[table["d"] >= 30]
        cells = ", ".join(
            f"{r['init']} d={r['d']} {'with' if r['bias'] else 'without'} bias: {int(r[ln])}"
            for _, r in high.iterrows()
            if r[ln]
        )
        out.append(
            {
                "claim": "Behind a LayerNorm (not their setting), the statement about high dimensions stands: no class "
                "of any model with d >= 30 is unargmaxable in the LayerNorm ball",
                "verdict": f"not so: {cells} of {table['classes'].iloc[0]} classes"
                if cells
                else ("holds" if len(high) else "not checked (no model with d >= 30 in this run)"),
            }
        )
    wide = table[(table["d"] >= 30) & ~table["bias"]] if "box unargmaxable" in table else table.iloc[:0]
    if len(wide) and wide["box unargmaxable"].sum():
        cells = ", ".join(
            f"{r['init']} d={r['d']}: {r['box unargmaxable']}" for _, r in wide.iterrows() if r["box unargmaxable"]
        )
        out.append(
            {
                "claim": "Without the bias (not their setting), the same models with d >= 30 have no "
                "unargmaxable class",
                "verdict": f"not so: {cells} of {table['classes'].iloc[0]} classes",
            }
        )
    return out


def _write_readme(out, table, verdicts, summary) -> None:
    cols = ["init", "d", "bias"] + [c for s in summary["sets"] for c in (f"{s} unargmaxable", f"{s} undecided")]
    lines = [
        "# Unargmaxable classes of random softmax layers, certified",
        "",
        "Grivas et al. (2022), *Low-Rank Softmax Can Have Unargmaxable Classes in Theory but Rarely in "
        "Practice*: the random-model grid of their `experiments/create_random_models` (NumPy seed 13, "
        f"{summary['classes']} classes, `W` then `b` uniform on [-1, 1] or standard normal), every class "
        "certified by lnproofs and checked by its kernel.  Columns: the box [-100, 100]^d (their query set), "
        "free inputs (all of R^d) and a LayerNorm ball (the outputs of a LayerNorm with unit gain, no bias and "
        "eps 1e-5: the open ball of radius sqrt(d) in the hyperplane 1 . u = 0); a class counts as "
        "unargmaxable when it is certified never to be the strict argmax.  Made with "
        "`lnproofs reproduce unargmaxable`.",
        "",
        "| " + " | ".join(cols) + " |",
        "|" + "---|" * len(cols),
    ]

    def cell(row, c):  # a set a model has not been certified under: "not run"
        value = row[c] if c in row else None
        if value is None or value != value:
            return "not run"
        return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)

    for _, row in table.iterrows():
        lines.append("| " + " | ".join(cell(row, c) for c in cols) + " |")
    missing = [
        f"{i} d={d} {'with' if b else 'without'} bias"
        for i in INITS
        for d in DIMS
        for b in (False, True)
        if not ((table["init"] == i) & (table["d"] == d) & (table["bias"] == b)).any()
    ]
    if missing:
        lines += [
            "",
            f"Not run here ({len(missing)} of the {2 * len(INITS) * len(DIMS)} models of the full grid): "
            + ", ".join(missing)
            + ".",
        ]
    lines += ["", "## The published claims", ""]
    lines += [f"- {v['claim']}: **{v['verdict']}**." for v in verdicts]
    write_text(out / "README.md", "\n".join(lines) + "\n")
