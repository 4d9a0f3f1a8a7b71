"""The interactive attention demo: definitions shared by the HTML page and Python.

The page (``templates/demo.html``) and this module compute the same numbers from the
same definitions, written once here and once in the page's script:

* Keys.  The four 2-D keys of :mod:`lnproofs.derive.demo_config` (key 3 scaled by the
  magnitude ``m``) are lifted to R^3 as ``(x, y, 0)``.
* Projection.  ``k -> k - mean(k) * (1, 1, 1)``, the mean-subtraction step of
  LayerNorm in R^3.  Projected keys lie in the plane orthogonal to ``(1, 1, 1)``.
* Scaling.  ``k -> sqrt(3) * k / ||k||``, the radial step of LayerNorm (eps = 0, unit
  gain, zero bias).  With projection on as well, keys lie on the circle of radius
  ``sqrt(3)`` in the plane orthogonal to ``(1, 1, 1)``: exactly LayerNorm's image for
  n = 3.
* Display plane.  The keys always lie in a plane through the origin: ``z = 0`` with
  basis ``e1, e2`` when projection is off; the plane orthogonal to ``(1, 1, 1)`` with
  the orthonormal basis ``b1 = (2, -1, -1)/sqrt(6)``, ``b2 = (0, 1, -1)/sqrt(2)`` when
  it is on (``b1, b2`` is Gram-Schmidt applied to the projections of ``e1, e2``, so the
  picture keeps its orientation).  Keys are drawn in these plane coordinates.
* Query.  ``q = L * (cos(theta) * u1 + sin(theta) * u2)`` with ``(u1, u2)`` the basis of
  the current display plane, ``theta`` the query angle and ``L`` the query length.  A
  component of the query orthogonal to the display plane would add the same amount
  (zero) to every score, so restricting the query to the plane loses nothing.
* Weights.  ``softmax(q . k)`` over the four keys.
* Selectability.  A key is *selectable* when it is a vertex of the convex hull of the
  displayed keys (some query makes it win strictly), *tie-only* when it lies on the
  boundary of the hull of the other keys, *unselectable* when it lies strictly inside.
  Python decides this with exact rational orientation predicates on the plane
  coordinates; the page uses the same predicates in floating point.  (The plane
  coordinates are the right place to ask: with projection on, the rounded keys in R^3
  are not exactly coplanar, and a flat tetrahedron's vertices would all count.)

Without scaling, projection alone never changes selectability here: it is an injective
linear map on the plane ``z = 0``, and convex-hull membership is invariant under such
maps.  Scaling puts every key on one circle, where every distinct key is a vertex.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from ..certificates.writes import output_file, write_text
from ..derive import demo_config
from ..kernel import OptionError, require

__all__ = [
    "DEFAULT_QUERY_LENGTH",
    "DemoState",
    "demo_state",
    "lift",
    "project",
    "scale",
    "plane_basis",
    "hull_statuses",
    "render_demo",
    "write_demo",
]

_SQRT3 = math.sqrt(3.0)
#: the page's initial query length
DEFAULT_QUERY_LENGTH = 3.0


def lift(key2d) -> list[float]:
    """A 2-D key ``(x, y)`` as the point ``(x, y, 0)`` of R^3."""
    return [float(key2d[0]), float(key2d[1]), 0.0]


def project(key3d) -> list[float]:
    """Mean subtraction: ``k - mean(k) * (1, 1, 1)``."""
    mean = (key3d[0] + key3d[1] + key3d[2]) / 3.0
    return [key3d[0] - mean, key3d[1] - mean, key3d[2] - mean]


def scale(key3d) -> list[float]:
    """Radial scaling to norm ``sqrt(3)`` (the zero vector stays where it is)."""
    norm = math.sqrt(key3d[0] * key3d[0] + key3d[1] * key3d[1] + key3d[2] * key3d[2])
    if norm == 0.0:
        return list(key3d)
    return [_SQRT3 * key3d[0] / norm, _SQRT3 * key3d[1] / norm, _SQRT3 * key3d[2] / norm]


def plane_basis(projection: bool) -> tuple[list[float], list[float]]:
    """Orthonormal basis of the display plane (see the module text)."""
    if not projection:
        return [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]
    s6, s2 = math.sqrt(6.0), math.sqrt(2.0)
    return [2.0 / s6, -1.0 / s6, -1.0 / s6], [0.0, 1.0 / s2, -1.0 / s2]


def _dot3(a, b) -> float:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _orient(a, b, c) -> Fraction:
    """Twice the signed area of the triangle abc, exactly."""
    return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])


def _on_segment(p, a, b) -> bool:
    """``p`` lies on the closed segment ``ab`` (exact; a == b allowed)."""
    if _orient(a, b, p) != 0:
        return False
    return (min(a[0], b[0]) <= p[0] <= max(a[0], b[0])) and (min(a[1], b[1]) <= p[1] <= max(a[1], b[1]))


def _in_triangle(p, a, b, c) -> bool:
    """``p`` in the closed triangle abc (exact)."""
    d1, d2, d3 = _orient(a, b, p), _orient(b, c, p), _orient(c, a, p)
    return (d1 >= 0 and d2 >= 0 and d3 >= 0) or (d1 <= 0 and d2 <= 0 and d3 <= 0)


def _in_hull(p, others) -> bool:
    """``p`` in the closed convex hull of ``others`` (2-D, exact): some triangle or
    segment of ``others`` contains it (Caratheodory)."""
    pts = list(others)
    for i in range(len(pts)):
        for j in range(i + 1, len(pts)):
            for k in range(j + 1, len(pts)):
                a, b, c = pts[i], pts[j], pts[k]
                if _orient(a, b, c) != 0 and _in_triangle(p, a, b, c):
                    return True
    return any(_on_segment(p, pts[i], pts[j]) for i in range(len(pts)) for j in range(i, len(pts)))


def _in_relative_interior(p, points) -> bool:
    """``p`` in the relative interior of the hull of ``points`` (which contains ``p``)."""
    spans_plane = any(
        _orient(a, b, c) != 0
        for i, a in enumerate(points)
        for j, b in enumerate(points)
        if j > i
        for c in points[j + 1 :]
    )
    if spans_plane:
        return _strictly_inside_polygon(p, points)
    lo, hi = _extremes(points)
    return lo != hi and p != lo and p != hi


def _extremes(points):
    ordered = sorted(points)
    return ordered[0], ordered[-1]


def _hull(points):
    """Convex hull vertices in counter-clockwise order (monotone chain, exact)."""
    pts = sorted(set(points))
    if len(pts) <= 2:
        return pts
    lower, upper = [], []
    for p in pts:
        while len(lower) >= 2 and _orient(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    for p in reversed(pts):
        while len(upper) >= 2 and _orient(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    return lower[:-1] + upper[:-1]


def _strictly_inside_polygon(p, others) -> bool:
    hull = _hull(others)
    if len(hull) < 3:
        return False
    return all(_orient(hull[i], hull[(i + 1) % len(hull)], p) > 0 for i in range(len(hull)))


def hull_statuses(points2d) -> list[str]:
    """Exact status of each 2-D point: "selectable", "tie-only" or "unselectable"."""
    from ..kernel import to_fraction

    pts = [(to_fraction(x), to_fraction(y)) for x, y in points2d]
    statuses = []
    for i, p in enumerate(pts):
        others = pts[:i] + pts[i + 1 :]
        if not _in_hull(p, others):
            statuses.append("selectable")
        elif _in_relative_interior(p, pts):
            statuses.append("unselectable")
        else:
            statuses.append("tie-only")
    return statuses


@dataclass(frozen=True)
class DemoState:
    """Everything the page shows for one setting of its controls."""

    angle_deg: float
    magnitude: float
    query_length: float
    projection: bool
    scaling: bool
    keys3d: tuple[tuple[float, float, float], ...]
    keys2d: tuple[tuple[float, float], ...]
    query3d: tuple[float, float, float]
    scores: tuple[float, ...]
    weights: tuple[float, ...]
    statuses: tuple[str, ...]

    def to_json(self) -> dict:
        return {
            "angle_deg": self.angle_deg,
            "magnitude": self.magnitude,
            "query_length": self.query_length,
            "projection": self.projection,
            "scaling": self.scaling,
            "keys3d": [list(k) for k in self.keys3d],
            "keys2d": [list(k) for k in self.keys2d],
            "query3d": list(self.query3d),
            "scores": list(self.scores),
            "weights": list(self.weights),
            "statuses": list(self.statuses),
        }


def demo_state(
    angle_deg: float = demo_config.DEFAULT_QUERY_ANGLE_DEG,
    magnitude: float = demo_config.DEFAULT_MAGNITUDE,
    *,
    projection: bool = False,
    scaling: bool = False,
    query_length: float = DEFAULT_QUERY_LENGTH,
) -> DemoState:
    """The keys, query, softmax weights and exact statuses for one setting."""
    require(
        math.isfinite(magnitude) and magnitude > 0,
        OptionError,
        f"magnitude {magnitude!r} is not accepted; give a positive finite number",
    )
    require(
        math.isfinite(query_length) and query_length >= 0,
        OptionError,
        f"query length {query_length!r} is not accepted; give a finite number >= 0",
    )
    require(math.isfinite(angle_deg), OptionError, f"query angle {angle_deg!r} is not finite")
    u1, u2 = plane_basis(projection)
    keys3d = []
    for key in demo_config.demo_keys(magnitude):
        k = lift(key)
        if projection:
            k = project(k)
        if scaling:
            k = scale(k)
        keys3d.append(tuple(k))
    keys2d = tuple((_dot3(k, u1), _dot3(k, u2)) for k in keys3d)
    theta = math.radians(angle_deg)
    c, s = query_length * math.cos(theta), query_length * math.sin(theta)
    q3 = tuple(c * u1[i] + s * u2[i] for i in range(3))
    # scores from plane coordinates: q . k = c * (k . u1) + s * (k . u2)
    scores = tuple(c * x + s * y for x, y in keys2d)
    top = max(scores)
    exps = [math.exp(v - top) for v in scores]
    total = sum(exps)
    weights = tuple(e / total for e in exps)
    return DemoState(
        float(angle_deg),
        float(magnitude),
        float(query_length),
        bool(projection),
        bool(scaling),
        tuple(keys3d),
        keys2d,
        q3,
        scores,
        weights,
        tuple(hull_statuses(keys2d)),
    )


def _template() -> str:
    from importlib import resources

    return resources.files("lnproofs").joinpath("experiments/templates/demo.html").read_text(encoding="utf-8")


def render_demo() -> str:
    """The self-contained HTML page (a deterministic string)."""
    config = {
        "keyAnglesDeg": list(demo_config.KEY_ANGLES_DEG),
        "adjustableKey": demo_config.ADJUSTABLE_KEY,
        "watchedKey": demo_config.WATCHED_KEY,
        "defaultAngleDeg": demo_config.DEFAULT_QUERY_ANGLE_DEG,
        "defaultMagnitude": demo_config.DEFAULT_MAGNITUDE,
        "defaultQueryLength": DEFAULT_QUERY_LENGTH,
        "thresholdText": demo_config.THRESHOLD_TEXT,
        "threshold": demo_config.threshold_float(),
    }
    from .. import __version__

    page = _template()
    page = page.replace("__DEMO_CONFIG__", json.dumps(config, sort_keys=True))
    page = page.replace("__LNPROOFS_VERSION__", __version__)
    page = page.replace("__THRESHOLD_TEXT__", demo_config.THRESHOLD_TEXT)
    return page


def write_demo(path) -> Path:
    """Write the page to ``path`` (folders are created); returns the path."""
    path = Path(path)
    try:
        output_file(path)
        write_text(path, render_demo())
    except OSError as err:
        raise OptionError(
            f"cannot write the demo to {str(path)!r}: {err.strerror or err}; give a writable --out path"
        ) from None
    return path
