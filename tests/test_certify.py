"""Known answers for the certification engine, degenerate inputs included.

Expected statuses come from the construction of each key set (corners, edge points,
centres of lattice polytopes) or from scipy's ConvexHull, never from the engine."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lnproofs.certificates.check import check_certificate
from lnproofs.propose.certification import certify, certify_results, has_unselectable


def _statuses(keys):
    cert = certify(keys)
    report = check_certificate(cert, keys)
    assert report.ok, str(report)
    assert all(r.verified == "exact" for r in cert if r.status != "undecided")
    return list(cert.statuses)


SQUARE = [[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [2.0, 2.0]]


def test_square_with_centre_and_edge_point():
    keys = np.array(SQUARE + [[1.0, 1.0], [1.0, 0.0]])
    assert _statuses(keys) == ["selectable"] * 4 + ["unselectable", "tie-only"]


def test_duplicates_of_a_vertex_and_of_an_interior_point():
    keys = np.array(SQUARE + [[2.0, 2.0], [0.5, 0.5], [0.5, 0.5]])
    assert _statuses(keys) == ["selectable"] * 3 + ["tie-only", "tie-only", "unselectable", "unselectable"]


def test_collinear_points_are_judged_within_their_line():
    keys = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [3.0, 3.0], [0.5, 0.5]])
    assert _statuses(keys) == ["selectable", "unselectable", "unselectable", "selectable", "unselectable"]


def test_lattice_cube_corners_edges_faces_centre():
    points = list(itertools.product((0.0, 1.0, 2.0), repeat=3))
    keys = np.array(points)
    expected = []
    for p in points:
        ones = sum(1 for x in p if x == 1.0)  # coordinates strictly between the faces
        expected.append("selectable" if ones == 0 else "unselectable" if ones == 3 else "tie-only")
    assert _statuses(keys) == expected


def test_lattice_octahedron_with_points_on_edges_and_faces():
    verts = [[2, 0, 0], [-2, 0, 0], [0, 2, 0], [0, -2, 0], [0, 0, 2], [0, 0, -2]]
    edge = [[1, 1, 0], [0, -1, 1]]  # midpoints of edges
    face = [[1, 1, 0.0], [0.5, 0.5, 1.0]]  # (1,1,0) repeated: an edge point twice; a face point
    inner = [[0, 0, 0], [0.5, 0.25, 0.25]]
    keys = np.array(verts + edge + face + inner, dtype=float)
    assert _statuses(keys) == ["selectable"] * 6 + ["tie-only"] * 4 + ["unselectable"] * 2


def test_exact_rank_deficient_layernorm_like_keys():
    # rows sum to zero exactly: the keys span a hyperplane (affine rank d - 1)
    rng = np.random.default_rng(3)
    head = rng.integers(-4, 5, size=(40, 4)).astype(float)
    keys = np.hstack([head, -head.sum(axis=1, keepdims=True)])
    from scipy.spatial import ConvexHull

    hull = ConvexHull(head)  # the same polytope, full-dimensional
    statuses = _statuses(keys)
    uniq, counts = np.unique(head, axis=0, return_counts=True)
    dup = {tuple(u) for u, c in zip(uniq, counts) if c > 1}
    for i, s in enumerate(statuses):
        is_vertex = i in set(hull.vertices) or any(np.array_equal(head[i], head[v]) for v in hull.vertices)
        if is_vertex and tuple(head[i]) not in dup:
            assert s == "selectable", i
        else:
            assert s in ("tie-only", "unselectable"), i


@pytest.mark.parametrize("scale", [1e150, 1e-150, 2.0**900, 2.0**-900])
def test_extreme_scales_keep_their_answers(scale):
    keys = np.array(SQUARE + [[1.0, 1.0], [1.0, 0.0]]) * scale
    assert _statuses(keys) == ["selectable"] * 4 + ["unselectable", "tie-only"]


def test_points_two_to_the_minus_40_inside_and_outside_a_facet():
    eps = 2.0**-40
    simplex = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    outside = [0.25 + eps, 0.25 + eps, 0.5 + eps]  # x+y+z = 1 + 3 eps: beyond the facet x+y+z = 1
    inside = [0.25, 0.25, 0.5 - eps]  # x+y+z = 1 - eps, all > 0: strictly inside
    keys = np.array(simplex + [outside, inside])
    assert sum(map(Fraction, outside)) > 1 > sum(map(Fraction, inside))
    statuses = _statuses(keys)
    assert statuses[4] == "selectable"
    assert statuses[5] == "unselectable"
    assert statuses[:4] == ["selectable"] * 4


def test_single_key_and_identical_keys():
    assert _statuses(np.array([[1.0, 2.0, 3.0]])) == ["selectable"]
    assert _statuses(np.ones((4, 3))) == ["unselectable"] * 4
    assert _statuses(np.array([[1.0, 2.0], [3.0, -1.0]])) == ["selectable", "selectable"]


def test_gaussian_keys_all_decided_and_checked():
    keys = np.random.default_rng(0).standard_normal((400, 5))
    from scipy.spatial import ConvexHull

    statuses = _statuses(keys)
    vertices = set(ConvexHull(keys).vertices.tolist())
    assert [i for i, s in enumerate(statuses) if s == "selectable"] == sorted(vertices)
    assert all(s == "unselectable" for i, s in enumerate(statuses) if i not in vertices)


def test_has_unselectable_and_partial_runs():
    assert has_unselectable(np.array(SQUARE)) is False
    assert has_unselectable(np.array(SQUARE + [[1.0, 1.0]])) is True
    results = certify_results(np.array(SQUARE + [[1.0, 1.0]]), indices=[4])
    assert results[4].status == "unselectable"
    assert [r.status for r in results[:4]] == ["undecided"] * 4


def test_certificate_round_trips_and_renders(tmp_path):
    keys = np.array(SQUARE + [[1.0, 1.0], [1.0, 0.0]])
    cert = certify(keys)
    path = cert.save(tmp_path / "c.json")
    again = type(cert).load(path)
    assert again == cert
    assert again.to_json()["summary"] == {"selectable": 4, "tie-only": 1, "unselectable": 1, "undecided": 0}
    assert "unselectable" in cert._repr_markdown_() and "<table>" in cert._repr_html_()


@st.composite
def _integer_points(draw):
    d = draw(st.integers(2, 3))
    n = draw(st.integers(1, 12))
    coords = draw(st.lists(st.lists(st.integers(-3, 3), min_size=d, max_size=d), min_size=n, max_size=n))
    return np.array(coords, dtype=float)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_integer_points())
def test_every_certificate_checks_and_agrees_with_convexhull(keys):
    from scipy.spatial import ConvexHull

    cert = certify(keys)
    assert check_certificate(cert, keys).ok
    assert "undecided" not in cert.statuses
    n, d = keys.shape
    if n < d + 1 or np.linalg.matrix_rank(keys[1:] - keys[0]) < d:
        return  # ConvexHull needs full dimension
    hull = ConvexHull(keys)
    _, counts = np.unique(keys, axis=0, return_inverse=False, return_counts=True)
    for i, status in enumerate(cert.statuses):
        duplicated = int(np.sum(np.all(keys == keys[i], axis=1))) > 1
        slack = hull.equations[:, :-1] @ keys[i] + hull.equations[:, -1]
        if i in set(hull.vertices.tolist()) and not duplicated:
            assert status == "selectable"
        elif np.all(slack < -1e-9):
            assert status == "unselectable"
        else:
            assert status == "tie-only"


def test_progress_bar_goes_to_stderr(capsys):
    certify(np.random.default_rng(4).standard_normal((50, 3)), progress=True)
    err = capsys.readouterr().err
    assert "certify" in err and "50/50" in err and "key" in err  # a tqdm bar, counting keys


@pytest.mark.slow
def test_thousands_of_gaussian_keys_in_64_dimensions():
    keys = np.random.default_rng(7).standard_normal((5000, 64))
    cert = certify(keys)
    assert "undecided" not in cert.statuses
    assert check_certificate(cert, keys).ok


def test_thin_key_sets_below_float_resolution_are_decided_exactly():
    # the last coordinate is scaled by 1e-17: floats cannot see the thickness, the
    # exact answers are those of the unscaled points (an affine bijection)
    from scipy.spatial import ConvexHull

    base = np.random.default_rng(11).standard_normal((80, 3))
    keys = base.copy()
    keys[:, -1] *= 1e-17
    statuses = _statuses(keys)
    vertices = sorted(ConvexHull(base).vertices.tolist())
    assert [i for i, s in enumerate(statuses) if s == "selectable"] == vertices
    assert all(s == "unselectable" for i, s in enumerate(statuses) if i not in vertices)
