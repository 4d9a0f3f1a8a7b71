"""Figures for reports: LayerNorm's geometry, convex hulls of keys, attention weights.

Every function draws one PNG with matplotlib's Agg canvas (no pyplot, so no global
figure state), and writes it deterministically: fixed seeds, no software or date
metadata, so the same inputs give the same bytes.  matplotlib is imported inside the
functions; importing this module is cheap.

Inputs are plain arrays (and certificates); numbers are computed by the library
(:mod:`lnproofs.derive.numeric`) or handed in by the caller.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..certificates.writes import created_parents, replacing
from ..kernel import OptionError

__all__ = [
    "STATUS_STYLE",
    "save_figure",
    "plane_basis",
    "layernorm_geometry",
    "ellipse_axes",
    "keys_hull",
    "attention_bars",
    "margin_histogram",
    "heatmap",
    "projection_picture",
]

#: status -> (marker, colour, label) used in every key picture
STATUS_STYLE = {
    "selectable": ("o", "#1b7f3b", "selectable"),
    "tie-only": ("D", "#d08000", "tie-only"),
    "unselectable": ("X", "#c0272d", "unselectable"),
    "not-realisable": ("s", "#7a3db8", "not realisable"),
    "undecided": ("P", "#777777", "undecided"),
}

_RC = {
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 8.5,
    "svg.hashsalt": "lnproofs",
    "path.simplify": False,
}


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=110)
    FigureCanvasAgg(fig)
    return fig


def save_figure(fig, path) -> Path:
    """Write ``fig`` as PNG without software or date metadata (byte-for-byte reproducible)."""
    path = Path(path)
    try:
        created_parents(path)
        with replacing(path, binary=True) as handle:
            fig.savefig(handle, format="png", dpi=110, metadata={"Software": None})
    except OSError as err:
        raise OptionError(
            f"cannot write the figure {str(path)!r}: {err.strerror or err}; give a writable output folder"
        ) from None
    return path


def _rc():
    import matplotlib

    return matplotlib.rc_context(_RC)


def plane_basis(normal) -> np.ndarray:
    """Two orthonormal vectors spanning the plane orthogonal to ``normal`` (3-D)."""
    normal = np.asarray(normal, dtype=float)
    normal = normal / np.linalg.norm(normal)
    helper = np.array([1.0, 0.0, 0.0]) if abs(normal[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    u = helper - normal * (helper @ normal)
    u /= np.linalg.norm(u)
    v = np.cross(normal, u)
    return np.stack([u, v])


def _equal_3d(ax, points, pad: float = 0.15):
    points = np.asarray(points, dtype=float)
    lo, hi = points.min(axis=0), points.max(axis=0)
    centre, half = (lo + hi) / 2, max((hi - lo).max() / 2, 1e-9) * (1 + pad)
    ax.set_xlim(centre[0] - half, centre[0] + half)
    ax.set_ylim(centre[1] - half, centre[1] + half)
    ax.set_zlim(centre[2] - half, centre[2] + half)
    ax.set_box_aspect((1, 1, 1))


def layernorm_geometry(path, inputs, circle_images, gained_images, gain, bias) -> Path:
    """n = 3: inputs, the plane orthogonal to (1,1,1), the circle of radius sqrt(3) that
    LayerNorm maps onto (gain 1, bias 0), and the ellipse after ``gain``/``bias``.

    ``inputs``, ``circle_images`` and ``gained_images`` are (m, 3) arrays of sample
    inputs and their LayerNorm images without and with the affine step.
    """
    inputs, circle_images, gained_images = (np.asarray(a, dtype=float) for a in (inputs, circle_images, gained_images))
    gain, bias = np.asarray(gain, dtype=float), np.asarray(bias, dtype=float)
    basis = plane_basis([1.0, 1.0, 1.0])
    t = np.linspace(0, 2 * np.pi, 241)
    circle = math.sqrt(3.0) * (np.outer(np.cos(t), basis[0]) + np.outer(np.sin(t), basis[1]))
    ellipse = circle * gain + bias
    with _rc():
        fig = _figure(10.5, 5.2)
        for panel, (title, images, curve, colour, label) in enumerate(
            (
                (
                    "Projection and scaling: the circle of radius $\\sqrt{3}$",
                    circle_images,
                    circle,
                    "#4c72b0",
                    "LN(x), gain 1, bias 0",
                ),
                ("After the gain and bias: an ellipse", gained_images, ellipse, "#c44e52", "LN(x) with gain a, bias b"),
            )
        ):
            ax = fig.add_subplot(1, 2, panel + 1, projection="3d")
            radius = 1.15 * max(np.abs(inputs).max(), np.abs(curve).max())
            s = np.linspace(-radius, radius, 2)
            grid_u, grid_v = np.meshgrid(s, s)
            plane = grid_u[..., None] * basis[0] + grid_v[..., None] * basis[1]
            if panel == 1:
                # the image's plane: normal 1/gain through the bias (all gains non-zero)
                ebasis = plane_basis(1.0 / gain)
                plane = grid_u[..., None] * ebasis[0] + grid_v[..., None] * ebasis[1] + bias
            ax.plot_surface(
                plane[..., 0], plane[..., 1], plane[..., 2], color="#9aa7c7", alpha=0.18, linewidth=0, shade=False
            )
            ax.plot(curve[:, 0], curve[:, 1], curve[:, 2], color=colour, lw=2.2, label=label.split(",")[0] + " image")
            ax.scatter(
                inputs[:, 0],
                inputs[:, 1],
                inputs[:, 2],
                color="#555555",
                s=14,
                depthshade=False,
                label="sample inputs x",
            )
            ax.scatter(
                images[:, 0],
                images[:, 1],
                images[:, 2],
                color=colour,
                s=22,
                depthshade=False,
                edgecolor="black",
                linewidth=0.4,
                label=label,
            )
            for x, y in zip(inputs, images):
                ax.plot([x[0], y[0]], [x[1], y[1]], [x[2], y[2]], color="#888888", lw=0.6, alpha=0.8)
            ones = np.ones(3) / math.sqrt(3.0) * 0.6 * radius
            ax.quiver(0, 0, 0, *ones, color="black", lw=1.2, arrow_length_ratio=0.15)
            ax.text(*(ones * 1.08), "$\\mathbf{1}$", fontsize=10)
            ax.set_title(title)
            ax.set_xlabel("$x_1$")
            ax.set_ylabel("$x_2$")
            ax.set_zlabel("$x_3$")
            ax.view_init(elev=20, azim=5)  # about 40 degrees off the normal (1,1,1): the circle reads as a circle
            _equal_3d(ax, np.vstack([inputs, curve, [np.zeros(3)]]))
            ax.legend(loc="upper left", framealpha=0.85)
        gtxt = ", ".join(f"{g:g}" for g in gain)
        btxt = ", ".join(f"{b:g}" for b in bias)
        fig.suptitle(f"LayerNorm for $n = 3$ ($\\epsilon = 0$): gain $a = ({gtxt})$, bias $b = ({btxt})$")
        fig.subplots_adjust(left=0.0, right=0.98, bottom=0.03, top=0.88, wspace=0.05)
        return save_figure(fig, path)


def _oblique_view(normal, tilt: float = 35.0) -> tuple[float, float]:
    """(elev, azim) for a camera ``tilt`` degrees off ``normal``: a curve in the plane with
    that normal is seen as the ellipse it is, not edge-on."""
    nx, ny, nz = np.asarray(normal, dtype=float) / np.linalg.norm(normal)
    if nz < 0:
        nx, ny, nz = -nx, -ny, -nz
    elev = float(np.degrees(np.arcsin(np.clip(nz, -1.0, 1.0)))) - tilt
    return elev, float(np.degrees(np.arctan2(ny, nx)))


def ellipse_axes(path, centre, normal, axes, semi_axes, gain) -> Path:
    """The n = 3 ellipse with its principal axes: in 3-D and in its own plane.

    ``axes`` are unit vectors (rows) and ``semi_axes`` their lengths, as computed by
    :func:`lnproofs.derive.numeric.ellipsoid`.
    """
    centre = np.asarray(centre, dtype=float)
    axes = np.asarray(axes, dtype=float)
    semi = np.asarray(semi_axes, dtype=float)
    t = np.linspace(0, 2 * np.pi, 241)
    curve = centre + np.outer(semi[0] * np.cos(t), axes[0]) + np.outer(semi[1] * np.sin(t), axes[1])
    colours = ("#c44e52", "#4c72b0")
    with _rc():
        fig = _figure(10.0, 4.8)
        ax = fig.add_subplot(1, 2, 1, projection="3d")
        ax.plot(curve[:, 0], curve[:, 1], curve[:, 2], color="#333333", lw=2)
        for k in range(2):
            end = centre + semi[k] * axes[k]
            ax.plot(
                [centre[0], end[0]],
                [centre[1], end[1]],
                [centre[2], end[2]],
                color=colours[k],
                lw=2.5,
                label=f"semi-axis {k + 1}: {semi[k]:.4f}",
            )
        nrm = np.asarray(normal, dtype=float)
        nrm = nrm / np.linalg.norm(nrm) * 0.5 * semi.max()
        ax.quiver(*centre, *nrm, color="black", lw=1, arrow_length_ratio=0.2)
        ax.text(*(centre + nrm * 1.1), "normal $1/a$", fontsize=9)
        ax.set_title("The image of LayerNorm (n = 3) in $\\mathbb{R}^3$")
        ax.set_xlabel("$z_1$")
        ax.set_ylabel("$z_2$")
        ax.set_zlabel("$z_3$")
        ax.view_init(*_oblique_view(normal))
        _equal_3d(ax, np.vstack([curve, centre + nrm]))
        ax.legend(loc="upper left")
        ax2 = fig.add_subplot(1, 2, 2)
        ax2.plot(semi[0] * np.cos(t), semi[1] * np.sin(t), color="#333333", lw=2)
        for k in range(2):
            end = [semi[0], 0.0] if k == 0 else [0.0, semi[1]]
            ax2.annotate("", xy=end, xytext=(0, 0), arrowprops={"arrowstyle": "->", "color": colours[k], "lw": 2.2})
            ax2.text(
                end[0] * 0.5 + (0.05 if k else 0),
                end[1] * 0.5 + (0 if k else 0.08),
                f"$\\sqrt{{3\\lambda_{k + 1}}}$ = {semi[k]:.3f}",
                color=colours[k],
            )
        ax2.set_aspect("equal")
        ax2.axhline(0, color="#cccccc", lw=0.8)
        ax2.axvline(0, color="#cccccc", lw=0.8)
        ax2.set_title("In the plane of the image (principal-axis coordinates)")
        ax2.set_xlabel("along axis 1")
        ax2.set_ylabel("along axis 2")
        gtxt = ", ".join(f"{g:g}" for g in gain)
        fig.suptitle(
            f"Principal axes for gain $a = ({gtxt})$: eigenvectors of $\\mathrm{{diag}}(a)\\,P\\,\\mathrm{{diag}}(a)$"
        )
        fig.subplots_adjust(left=0.02, right=0.97, bottom=0.12, top=0.86, wspace=0.15)
        return save_figure(fig, path)


def _pca(points: np.ndarray, k: int):
    centred = points - points.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    comps = vt[:k]
    for row in comps:  # fix the sign so the picture is reproducible
        j = int(np.argmax(np.abs(row)))
        if row[j] < 0:
            row *= -1
    return comps


def keys_hull(
    path, keys, statuses, witnesses=None, *, title: str = "Keys and their convex hull", labels: bool | None = None
) -> Path:
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
            if dim == 2:
                ax.scatter(
                    pts[:, 0],
                    pts[:, 1],
                    marker=marker,
                    color=colour,
                    s=60,
                    edgecolor="black",
                    linewidth=0.5,
                    zorder=3,
                    label=f"{label} ({len(idx)})",
                )
            else:
                ax.scatter(
                    pts[:, 0],
                    pts[:, 1],
                    pts[:, 2],
                    marker=marker,
                    color=colour,
                    s=50,
                    edgecolor="black",
                    linewidth=0.5,
                    depthshade=False,
                    label=f"{label} ({len(idx)})",
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
        ax.set_title(title + note)
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


def attention_bars(path, weights, *, title: str = "Attention weights", labels=None, highlight=None) -> Path:
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
        ax.set_title(title)
        ax.set_axisbelow(True)
        ax.grid(axis="y", color="#eeeeee")
        fig.subplots_adjust(left=0.12, right=0.98, bottom=0.15, top=0.88)
        return save_figure(fig, path)


def margin_histogram(path, margins, *, title: str = "Witness margins of selectable keys") -> Path:
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
        ax.set_title(title)
        fig.subplots_adjust(left=0.12, right=0.97, bottom=0.16, top=0.88)
        return save_figure(fig, path)


def heatmap(path, rows, cols, values, *, title: str, xlabel: str, ylabel: str, colorbar: str = "fraction") -> Path:
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
        ax.set_title(title)
        ax.set_xticks(list(cols))
        step = max(1, len(rows) // 12)
        ax.set_yticks(list(rows)[::step])
        fig.subplots_adjust(left=0.12, right=0.95, bottom=0.09, top=0.92)
        return save_figure(fig, path)


def _readable(value: float) -> str:
    """A float for a title: two decimals, or a power of ten (mathtext) when tiny."""
    if value == 0 or abs(value) >= 0.01:
        return f"{value:.2f}"
    mantissa, exponent = f"{value:.1e}".split("e")
    return f"${mantissa} \\times 10^{{{int(exponent)}}}$"


def projection_picture(path, keys, projected, query) -> Path:
    """Figure 1a/1b style: keys before and after mean subtraction, with ``query`` (the
    direction of (1,1,1)) orthogonal to every projected key, so all scores tie."""
    keys, projected, query = (np.asarray(a, dtype=float) for a in (keys, projected, query))
    basis = plane_basis(query)
    with _rc():
        fig = _figure(10.5, 5.0)
        scores_before = keys @ query
        scores_after = projected @ query
        for panel, (pts, title, scores) in enumerate(
            (
                (keys, "Keys without projection", scores_before),
                (projected, r"Keys after projection ($x - \bar{x}\,\mathbf{1}$)", scores_after),
            )
        ):
            ax = fig.add_subplot(1, 2, panel + 1, projection="3d")
            radius = 1.1 * np.abs(np.vstack([keys, projected])).max()
            s = np.linspace(-radius, radius, 2)
            gu, gv = np.meshgrid(s, s)
            plane = gu[..., None] * basis[0] + gv[..., None] * basis[1]
            ax.plot_surface(
                plane[..., 0], plane[..., 1], plane[..., 2], color="#9aa7c7", alpha=0.15, linewidth=0, shade=False
            )
            ax.scatter(
                pts[:, 0],
                pts[:, 1],
                pts[:, 2],
                color="#4c72b0",
                s=28,
                edgecolor="black",
                linewidth=0.4,
                depthshade=False,
                label="keys",
            )
            for p in pts:
                ax.plot([0, p[0]], [0, p[1]], [0, p[2]], color="#4c72b0", lw=0.7, alpha=0.6)
            q = query / np.linalg.norm(query) * 0.8 * radius
            ax.quiver(0, 0, 0, *q, color="#c44e52", lw=2, arrow_length_ratio=0.12, label=r"query $q = \mathbf{1}$")
            spread = float(scores.max() - scores.min())
            ax.set_title(f"{title}\nlargest minus smallest score $q \\cdot k$: {_readable(spread)}")
            ax.view_init(elev=10, azim=-5)  # the plane orthogonal to (1,1,1) seen obliquely, not edge-on
            _equal_3d(ax, np.vstack([keys, projected, [np.zeros(3)]]))
            ax.set_xlabel("$x_1$")
            ax.set_ylabel("$x_2$")
            ax.set_zlabel("$x_3$")
            ax.legend(loc="upper left")
        fig.suptitle(r"The query $\mathbf{1}$ is orthogonal to every projected key: uniform attention")
        fig.subplots_adjust(left=0.0, right=0.98, bottom=0.03, top=0.86, wspace=0.05)
        return save_figure(fig, path)
