"""Figures of a corpus run: a layer x head heatmap of the keys that cannot be selected, and
one text's tokens coloured by status in every head.  Matplotlib's object API only (no
global pyplot state); PNG files beside the table."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

__all__ = ["write_figures", "STATUS_COLOURS"]

STATUS_COLOURS = {"selectable": "#4c9a5f", "tie-only": "#e0a030", "unselectable": "#c0392b",
                  "not-realisable": "#8e44ad", "undecided": "#9e9e9e"}


def _heatmap(out: Path) -> Path | None:
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
    for ax, column, title in ((axes[0], "fraction_not_selectable_free", "free queries"),
                              (axes[1], "fraction_not_selectable_realisable", "realisable queries")):
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
    fig.savefig(target, dpi=120)
    return target


def _tokens(out: Path) -> Path | None:
    import pyarrow.parquet as pq
    from matplotlib.colors import ListedColormap
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    parts = sorted((out / "rows").glob("text*.parquet"))
    if not parts:
        return None
    table = pq.read_table(parts[0]).to_pylist()
    pairs = sorted({(r["layer"], r["head"]) for r in table})
    positions = sorted({r["position"] for r in table})
    tokens = {r["position"]: r["token"] for r in table}
    names = list(STATUS_COLOURS)
    grid = np.zeros((len(pairs), len(positions)))
    for r in table:
        grid[pairs.index((r["layer"], r["head"])), positions.index(r["position"])] = names.index(r["status_realisable"])
    fig = Figure(figsize=(2 + 0.28 * len(positions), 1.5 + 0.12 * len(pairs)))
    ax = fig.subplots()
    ax.imshow(grid, cmap=ListedColormap([STATUS_COLOURS[n] for n in names]), vmin=-0.5, vmax=len(names) - 0.5,
              aspect="auto", interpolation="nearest")
    ax.set_xticks(range(len(positions)), [tokens[p] for p in positions], rotation=90, fontsize=7)
    step = max(1, len(pairs) // 24)
    ax.set_yticks(range(0, len(pairs), step), [f"L{l} H{h}" for l, h in pairs[::step]], fontsize=6)
    ax.set_title(f"{parts[0].stem}: status of each token's key under LayerNorm-realisable queries", fontsize=9)
    ax.legend(handles=[Patch(color=STATUS_COLOURS[n], label=n) for n in names], fontsize=7,
              bbox_to_anchor=(1.01, 1), loc="upper left")
    fig.tight_layout()
    target = out / "tokens_by_status.png"
    fig.savefig(target, dpi=120)
    return target


def write_figures(out_dir) -> list[Path]:
    """Both figures (those that have data); returns the files written."""
    out = Path(out_dir)
    return [p for p in (_heatmap(out), _tokens(out)) if p is not None]
