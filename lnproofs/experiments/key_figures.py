"""Figures of keys and their statuses: convex hulls with witnesses, attention weights, margins,
and heatmaps of counts over a grid.

Drawn as :mod:`.figures` draws (matplotlib's Agg canvas, no software or date metadata).  A
figure carries no title of its own: its caption in the report says what it shows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .figures import STATUS_STYLE, _equal_3d, _figure, _rc, save_figure

__all__ = ["keys_hull", "attention_bars", "margin_histogram", "heatmap"]


def _pca(points: np.ndarray, k: int):
    centred = points - points.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    comps = vt[:k]
    for row in comps:  # fix the sign so the picture is reproducible
        j = int(np.argmax(np.abs(row)))
        if row[j] < 0:
            row *= -1
    return comps


def keys_hull(path, keys, statuses, witnesses=None, *, title: str = "", labels: bool | None = None) -> Path:
    """Keys, their convex hull, their statuses and witness queries (2-D or 3-D).

    ``keys`` is (N, d); with d > 3 the picture shows the first three principal
    components (witnesses projected the same way, so their drawn directions are only
    indicative).  ``witnesses[i]`` is a query (or None) drawn as an arrow at key i.
    """
    from scipy.spatial import ConvexHull, QhullError

    keys = np.asarray(keys, dtype=float)
    n, d = keys.shape
    shown, basis, note = keys, None, ""
    if d > 3:
        basis = _pca(keys, 3)
        shown = (keys - keys.mean(axis=0)) @ basis.T
        note = " (first 3 principal components)"
    dim = shown.shape[1]
    if dim == 1:
        shown = np.hstack([shown, np.zeros((n, 1))])
        dim = 2
    labels = (n <= 25) if labels is None else labels
    span = float(np.ptp(shown, axis=0).max()) or 1.0
    with _rc():
        fig = _figure(6.4, 5.6)
        ax = fig.add_subplot(1, 1, 1, projection="3d" if dim == 3 else None)
        try:
            hull = ConvexHull(shown)
            if dim == 2:
                cyc = list(hull.vertices) + [hull.vertices[0]]
                ax.fill(shown[cyc, 0], shown[cyc, 1], color="#4c72b0", alpha=0.10)
                ax.plot(shown[cyc, 0], shown[cyc, 1], color="#4c72b0", lw=1.2, label="convex hull")
            else:
                from mpl_toolkits.mplot3d.art3d import Poly3DCollection

                faces = [shown[s] for s in hull.simplices]
                ax.add_collection3d(
                    Poly3DCollection(faces, facecolor="#4c72b0", alpha=0.08, edgecolor="#4c72b0", linewidth=0.4)
                )
        except (QhullError, ValueError):
            pass  # degenerate (flat) configurations: keys only
        for status, (marker, colour, label) in STATUS_STYLE.items():
            idx = [i for i, s in enumerate(statuses) if s == status]
            if not idx:
                continue
            pts = shown[idx]
            ax.scatter(
                *pts[:, :dim].T,
                marker=marker,
                color=colour,
                s=60 if dim == 2 else 50,
                edgecolor="black",
                linewidth=0.5,
                label=f"{label} ({len(idx)})",
                **({"zorder": 3} if dim == 2 else {"depthshade": False}),
            )
        drawn = False
        for i, w in enumerate(witnesses or []):
            if w is None:
                continue
            vec = np.asarray([float(x) for x in w], dtype=float)
            if basis is not None:
                vec = basis @ vec
            if dim == 2 and vec.shape[0] == 1:
                vec = np.array([vec[0], 0.0])
            norm = np.linalg.norm(vec)
            if norm == 0:
                continue
            vec = vec / norm * 0.18 * span
            lab = None if drawn else "witness query (direction)"
            drawn = True
            if dim == 2:
                ax.annotate(
                    "",
                    xy=shown[i] + vec,
                    xytext=shown[i],
                    arrowprops={"arrowstyle": "->", "color": "#1b7f3b", "lw": 1.3},
                )
                ax.plot([], [], color="#1b7f3b", lw=1.3, label=lab)
                tip = shown[i] + vec * 1.08
                ax.plot([tip[0]], [tip[1]], alpha=0.0)  # keeps the arrow inside the axes
            else:
                ax.quiver(*shown[i], *vec, color="#1b7f3b", lw=1.0, arrow_length_ratio=0.25, label=lab)
        if labels:
            for i, p in enumerate(shown):
                offset = 0.025 * span
                if dim == 2:
                    ax.text(p[0] + offset, p[1] + offset, f"k{i}", fontsize=8.5)
                else:
                    ax.text(p[0] + offset, p[1] + offset, p[2] + offset, f"k{i}", fontsize=8)
        if title or note.strip():
            ax.set_title((title + note).strip())
        if dim == 2:
            ax.set_aspect("equal", adjustable="datalim")
            ax.grid(color="#eeeeee")
            ax.set_xlabel("coordinate 1" if basis is None else "PC 1")
            ax.set_ylabel("coordinate 2" if basis is None else "PC 2")
        else:
            _equal_3d(ax, shown)
            ax.view_init(elev=22, azim=-55)
            for setter, k in ((ax.set_xlabel, 1), (ax.set_ylabel, 2), (ax.set_zlabel, 3)):
                setter(f"coordinate {k}" if basis is None else f"PC {k}")
        if dim == 2:
            ax.legend(loc="best", framealpha=0.85)
            fig.subplots_adjust(left=0.1, right=0.97, bottom=0.08, top=0.92)
        else:
            fig.legend(*ax.get_legend_handles_labels(), loc="lower center", ncol=3, framealpha=0.85)
            fig.subplots_adjust(left=0.0, right=0.95, bottom=0.12, top=0.95)
        return save_figure(fig, path)


def attention_bars(path, weights, *, title: str = "", labels=None, highlight=None) -> Path:
    """The softmax weights of one query as a bar chart (``highlight``: index drawn darker)."""
    weights = np.asarray(weights, dtype=float)
    labels = labels or [f"k{i}" for i in range(len(weights))]
    with _rc():
        fig = _figure(max(6.2, 0.45 * len(weights) + 2), 3.6)
        ax = fig.add_subplot(1, 1, 1)
        colours = ["#c44e52" if i == highlight else "#4c72b0" for i in range(len(weights))]
        bars = ax.bar(range(len(weights)), weights, color=colours, edgecolor="black", linewidth=0.4)
        if len(weights) <= 16:
            for bar, w in zip(bars, weights):
                ax.text(
                    bar.get_x() + bar.get_width() / 2,
                    bar.get_height() + 0.01,
                    f"{w:.3f}",
                    ha="center",
                    va="bottom",
                    fontsize=8,
                )
        ax.set_xticks(range(len(weights)))
        ax.set_xticklabels(labels, rotation=0 if len(weights) <= 16 else 90)
        ax.set_ylim(0, min(1.0, max(weights.max() * 1.2, 0.05)) + 0.02)
        ax.set_ylabel("softmax weight")
        if title:
            ax.set_title(title)
        ax.set_axisbelow(True)
        ax.grid(axis="y", color="#eeeeee")
        fig.subplots_adjust(left=0.12, right=0.98, bottom=0.15, top=0.88)
        return save_figure(fig, path)


def margin_histogram(path, margins, *, title: str = "") -> Path:
    """Histogram of witness margins (log scale when they span several decades)."""
    margins = np.asarray([m for m in margins if m is not None and m > 0], dtype=float)
    with _rc():
        fig = _figure(6.0, 3.6)
        ax = fig.add_subplot(1, 1, 1)
        if margins.size == 0:
            ax.text(0.5, 0.5, "no positive margins to show", ha="center", va="center", transform=ax.transAxes)
        elif margins.max() / margins.min() > 100:
            bins = np.logspace(np.log10(margins.min()), np.log10(margins.max()), 25)
            ax.hist(margins, bins=bins, color="#4c72b0", edgecolor="black", linewidth=0.4)
            ax.set_xscale("log")
        else:
            ax.hist(margins, bins=min(25, max(5, margins.size)), color="#4c72b0", edgecolor="black", linewidth=0.4)
        from matplotlib.ticker import MaxNLocator

        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel(r"margin $\min_j\,(q \cdot k_i - q \cdot k_j) / \|q\|$")
        ax.set_ylabel("keys")
        if title:
            ax.set_title(title)
        fig.subplots_adjust(left=0.12, right=0.97, bottom=0.16, top=0.88)
        return save_figure(fig, path)


def heatmap(path, rows, cols, values, *, title: str = "", xlabel: str, ylabel: str, colorbar: str = "fraction") -> Path:
    """A heatmap with ``values[i][j]`` at row ``rows[i]`` and column ``cols[j]`` (NaN = missing)."""
    values = np.asarray(values, dtype=float)
    with _rc():
        fig = _figure(5.6, 6.4)
        ax = fig.add_subplot(1, 1, 1)
        masked = np.ma.masked_invalid(values)
        image = ax.imshow(
            masked,
            origin="lower",
            aspect="auto",
            cmap="viridis",
            vmin=0.0,
            vmax=1.0,
            interpolation="nearest",
            extent=(cols[0] - 0.5, cols[-1] + 0.5, rows[0] - 0.5, rows[-1] + 0.5),
        )
        cbar = fig.colorbar(image, ax=ax)
        cbar.set_label(colorbar)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if title:
            ax.set_title(title)
        ax.set_xticks(list(cols))
        step = max(1, len(rows) // 12)
        ax.set_yticks(list(rows)[::step])
        fig.subplots_adjust(left=0.12, right=0.95, bottom=0.09, top=0.92)
        return save_figure(fig, path)
