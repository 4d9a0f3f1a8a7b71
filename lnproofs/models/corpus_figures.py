"""Figures of a corpus run: a layer x head heatmap of the keys that cannot be selected, and
one text's tokens coloured by status in every head.  Matplotlib's object API only (no
global pyplot state); PNG files beside the table."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from ..certificates.writes import replacing

__all__ = ["tables_and_figures", "heatmap_figure", "tokens_figure", "STATUS_COLOURS"]

STATUS_COLOURS = {
    "selectable": "#4c9a5f",
    "tie-only": "#e0a030",
    "unselectable": "#c0392b",
    "not-realisable": "#8e44ad",
    "undecided": "#9e9e9e",
}


def heatmap_figure(out: Path) -> Path | None:
    """``heatmap_not_selectable.png`` from ``summary_heads.csv`` (None without rows)."""
    from matplotlib.figure import Figure

    path = out / "summary_heads.csv"
    if not path.exists():
        return None
    rows = list(csv.DictReader(path.open(encoding="utf-8")))
    if not rows:
        return None
    layers = sorted({int(r["layer"]) for r in rows})
    heads = sorted({int(r["head"]) for r in rows})
    fig = Figure(figsize=(2 + 0.5 * len(heads) * 2, 1.5 + 0.45 * len(layers)))
    axes = fig.subplots(1, 2, squeeze=False)[0]
    for ax, column, title in (
        (axes[0], "fraction_not_selectable_free", "free queries"),
        (axes[1], "fraction_not_selectable_realisable", "realisable queries"),
    ):
        grid = np.full((len(layers), len(heads)), np.nan)
        for r in rows:
            grid[layers.index(int(r["layer"])), heads.index(int(r["head"]))] = float(r[column])
        image = ax.imshow(grid, vmin=0, vmax=max(1e-9, float(np.nanmax(grid))), cmap="magma_r", aspect="auto")
        ax.set_xticks(range(len(heads)), [str(h) for h in heads])
        ax.set_yticks(range(len(layers)), [str(l) for l in layers])
        ax.set_xlabel("head")
        ax.set_ylabel("layer")
        ax.set_title(f"keys not selectable, {title}", fontsize=9)
        fig.colorbar(image, ax=ax, fraction=0.046)
    fig.tight_layout()
    target = out / "heatmap_not_selectable.png"
    with replacing(target, binary=True) as handle:
        fig.savefig(handle, dpi=120, format="png")
    return target


#: the tokens figure shows at most this many positions (the first ones) and names each token
#: on the axis up to :data:`NAMED_TOKENS`; longer texts are in the table
TOKEN_POSITIONS, NAMED_TOKENS = 256, 96


def tokens_figure(out: Path) -> Path | None:
    """``tokens_by_status.png`` from the first text's rows (None without texts)."""
    from matplotlib.colors import ListedColormap
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    from .table import read_rows

    parts = sorted((out / "rows").glob("text*.parquet"))
    if not parts:
        return None
    table = read_rows(parts[0], columns=["layer", "head", "position", "token", "status_realisable"]).to_pydict()
    length = max(table["position"]) + 1  # in Python: a number given to pyarrow's compute functions imports pandas
    table = {
        name: [v for v, p in zip(values, table["position"]) if p < TOKEN_POSITIONS] for name, values in table.items()
    }
    pairs = sorted(set(zip(table["layer"], table["head"])))
    positions = sorted(set(table["position"]))
    tokens = dict(zip(table["position"], table["token"]))
    names = list(STATUS_COLOURS)
    row_of, column_of = {p: k for k, p in enumerate(pairs)}, {p: k for k, p in enumerate(positions)}
    grid = np.zeros((len(pairs), len(positions)))
    grid[[row_of[p] for p in zip(table["layer"], table["head"])], [column_of[p] for p in table["position"]]] = [
        names.index(s) for s in table["status_realisable"]
    ]
    named = len(positions) <= NAMED_TOKENS
    fig = Figure(
        figsize=(
            2 + min(0.28 if named else 0.06, 24 / len(positions)) * len(positions),
            1.5 + min(0.12, 12 / len(pairs)) * len(pairs),
        )
    )
    ax = fig.subplots()
    ax.imshow(
        grid,
        cmap=ListedColormap([STATUS_COLOURS[n] for n in names]),
        vmin=-0.5,
        vmax=len(names) - 0.5,
        aspect="auto",
        interpolation="nearest",
    )
    if named:
        ax.set_xticks(range(len(positions)), [tokens[p] for p in positions], rotation=90, fontsize=7)
    else:
        ax.set_xlabel("position")
    step = max(1, len(pairs) // 24)
    ax.set_yticks(range(0, len(pairs), step), [f"L{l} H{h}" for l, h in pairs[::step]], fontsize=6)
    shown = f" (the first {len(positions)} of {length} positions)" if length > len(positions) else ""
    ax.set_title(f"{parts[0].stem}{shown}: status of each token's key under realisable queries", fontsize=9)
    ax.legend(
        handles=[Patch(color=STATUS_COLOURS[n], label=n) for n in names],
        fontsize=7,
        bbox_to_anchor=(1.01, 1),
        loc="upper left",
    )
    fig.tight_layout()
    target = out / "tokens_by_status.png"
    with replacing(target, binary=True) as handle:
        fig.savefig(handle, dpi=120, format="png")
    return target


def tables_and_figures(out_dir, beside=None, drawn: tuple | None = None) -> dict:
    """The run's tables (:func:`~lnproofs.models.table.write_tables`) and its figures: the
    heatmap through ``beside(fn, *args) -> future`` when given (a forked forward side, idle by
    then), while the table's files are written, else here after them; ``drawn``: ``(path or
    None,)``, the tokens figure drawn already (it needs the first text's rows only).  Returns
    the tables' record with ``figures``."""
    from .table import write_tables

    out = Path(out_dir)
    drawing: list = []  # the heatmap, beside, from the summary on
    tables = write_tables(out, None if beside is None else lambda: drawing.append(beside(heatmap_figure, out)))
    heatmap = drawing[0].result() if drawing else heatmap_figure(out)
    tokens = drawn[0] if drawn is not None else tokens_figure(out)
    return dict(tables, figures=[str(p) for p in (heatmap, tokens) if p is not None])
