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


def _readable(value: float) -> str:
    """A float for a title: two decimals, or a power of ten (mathtext) when tiny."""
    if value == 0 or abs(value) >= 0.01:
        return f"{value:.2f}"
    mantissa, exponent = f"{value:.1e}".split("e")
    return f"${mantissa} \\times 10^{{{int(exponent)}}}$"
