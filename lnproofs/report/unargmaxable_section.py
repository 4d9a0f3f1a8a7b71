"""The report's section on the unargmaxable classes of random softmax layers (Grivas et al.), from
the ``results.json`` that ``lnproofs reproduce unargmaxable`` wrote: every count and every verdict
is read from that file."""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..experiments.blocks import Heading, Items, Para, Table, fmt_int

__all__ = ["unargmaxable_blocks", "unargmaxable_finding"]


def _load(folder: Path):
    path = Path(folder) / "results.json"
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return data if data.get("rows") else None


def _written(text: str) -> str:
    """A claim or verdict of the result file as the report prints it: ``d <= 10`` as $d \\le 10$,
    ``normal d=30`` as normal $d = 30$, counts with thousands separators."""
    relation = {"<=": r"\le", ">=": r"\ge", "=": "="}
    text = re.sub(r"\bd\s*(<=|>=|=)\s*(\d+)", lambda m: f"$d {relation[m.group(1)]} {m.group(2)}$", text)
    return re.sub(r"(?<![\d,.$])(\d{5,})(?![\d,.])", lambda m: fmt_int(int(m.group(1))), text)


def _count(row: dict, column: str) -> str:
    value = row.get(column)
    if value is None:
        return "not run"
    undecided = row.get(column.replace("unargmaxable", "undecided")) or 0
    return fmt_int(int(value)) + (f" ({fmt_int(int(undecided))} undecided)" if undecided else "")


def unargmaxable_finding(folder) -> str:
    """The one-sentence finding for the abstract (empty without results)."""
    data = _load(folder)
    if data is None:
        return ""
    behind = [c for c in data["claims"] if c["claim"].startswith("Behind a LayerNorm")]
    if not behind or not behind[0]["verdict"].startswith("not so"):
        return ""
    return (
        "the high-dimensional statement of [[cite:grivas2022]], that randomly initialised softmax layers have "
        "no unargmaxable class, holds in their box of queries but fails behind a LayerNorm ("
        + _written(behind[0]["verdict"][len("not so: ") :])
        + ")."
    )


def unargmaxable_blocks(folder) -> tuple:
    """The section, or nothing when ``folder`` holds no ``results.json``."""
    data = _load(folder)
    if data is None:
        return ()
    sets = data["sets"]
    columns = [(s, b) for s in sets for b in (False, True)]
    by_model = {}
    for row in data["rows"]:
        by_model.setdefault((row["init"], row["d"]), {})[row["bias"]] = row
    names = {"box": "box", "free": "free", "layernorm": "LayerNorm"}
    header = ("init", "$d$") + tuple(f"{names[s]}, {'bias' if b else 'no bias'}" for s, b in columns)
    rows = tuple(
        (init, str(d))
        + tuple(_count(models.get(b, {}), f"{s} unargmaxable") if b in models else "not run" for s, b in columns)
        for (init, d), models in by_model.items()
    )
    intro = (
        "[[cite:grivas2022]] ask which classes of a softmax layer can never be the strict argmax of "
        "$W x + b$ (they call them unargmaxable) and search random layers for them: for each width $d$ "
        f"a layer of {fmt_int(data['classes'])} classes, $W$ then $b$ drawn uniformly on $[-1, 1]$ or from "
        "the standard normal distribution with their seed, inputs $x$ in the box $[-100, 100]^d$. We decide "
        "every class exactly, with and without the bias, for three sets of inputs: their box, all of "
        "$\\mathbb{R}^d$ (free), and the outputs of a LayerNorm (unit gain, no bias, $\\epsilon = 10^{-5}$: "
        "the open ball of radius $\\sqrt{d}$ in the hyperplane orthogonal to $\\mathbf{1}$). A class counts "
        "as unargmaxable only with a certificate checked in exact arithmetic."
    )
    verdicts = [f"{_written(c['claim'])}: **{_written(c['verdict'])}**." for c in data["claims"]]
    finding = unargmaxable_finding(folder)
    text = "[[tab:unargmaxable]] gives the counts. " + (
        "The finding: " + finding[0].upper() + finding[1:] + " A LayerNorm restricts the inputs to a ball in "
        "a hyperplane, so a class may lose behind it that wins for some input of the box."
        if finding
        else "Their statements are checked below."
    )
    table = Table(
        "tab:unargmaxable",
        f"Unargmaxable classes out of {fmt_int(data['classes'])} per random softmax layer, by initialisation, "
        "width $d$, set of inputs and whether the bias is used, each certified exactly.",
        header,
        rows,
    )
    return (
        Heading("Unargmaxable classes of random softmax layers", 1, "sec:unargmaxable"),
        Para(intro),
        Para(text),
        table,
        Para("The published statements, and what the certificates say:"),
        Items(tuple(verdicts)),
    )
