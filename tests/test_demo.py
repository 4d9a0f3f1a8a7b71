"""The demo's Python definitions: LayerNorm-faithful toggles, exact statuses, offline page."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from lnproofs.derive import demo_config
from lnproofs.experiments.demo import demo_state, hull_statuses, render_demo

T = demo_config.threshold_float()


def _layernorm3(x):
    x = np.asarray(x, dtype=float)
    centred = x - x.mean()
    return centred / math.sqrt((centred**2).mean())


def test_projection_and_scaling_together_are_layernorm():
    state = demo_state(30.0, 2.0, projection=True, scaling=True)
    for key2d, key3d in zip(demo_config.demo_keys(2.0), state.keys3d):
        expected = _layernorm3([key2d[0], key2d[1], 0.0])
        assert np.allclose(key3d, expected, atol=1e-14)
        assert abs(sum(key3d)) < 1e-14
        assert math.hypot(*key3d) == pytest.approx(math.sqrt(3.0))


def test_query_lies_in_the_display_plane_and_scores_are_dot_products():
    for projection in (False, True):
        state = demo_state(123.0, 1.7, projection=projection, scaling=False, query_length=2.5)
        q = np.array(state.query3d)
        assert np.linalg.norm(q) == pytest.approx(2.5)
        if projection:
            assert abs(q.sum()) < 1e-14
        else:
            assert q[2] == 0.0
        assert np.allclose(np.array(state.keys3d) @ q, state.scores, atol=1e-13)
        weights = np.exp(np.array(state.scores) - max(state.scores))
        assert np.allclose(weights / weights.sum(), state.weights, atol=1e-15)


@pytest.mark.parametrize("projection", [False, True])
def test_key_two_changes_status_at_the_symbolic_threshold(projection):
    below = demo_state(0.0, T - 1e-9, projection=projection)
    above = demo_state(0.0, T + 1e-9, projection=projection)
    scaled = demo_state(0.0, T + 1.0, projection=projection, scaling=True)
    assert below.statuses[demo_config.WATCHED_KEY] == "selectable"
    assert above.statuses[demo_config.WATCHED_KEY] == "unselectable"
    assert scaled.statuses == ("selectable",) * 4


def test_exact_statuses_on_small_configurations():
    # collinear: the middle point is in the relative interior of the segment
    assert hull_statuses([(0, 0), (1, 0), (2, 0)]) == ["selectable", "unselectable", "selectable"]
    # a point on an edge of the triangle is tie-only; one strictly inside is unselectable
    assert hull_statuses([(0, 0), (2, 0), (0, 2), (1, 1), (0.5, 0.5)]) == [
        "selectable",
        "selectable",
        "selectable",
        "tie-only",
        "unselectable",
    ]


def test_statuses_agree_with_a_brute_force_query_search():
    """A key found winning strictly by some sampled query must be called selectable."""
    rng = np.random.default_rng(5)
    angles = np.linspace(0, 2 * np.pi, 20000, endpoint=False)
    queries = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    for magnitude in (0.3, 1.0, 2.0, 2.6, 3.9):
        for projection in (False, True):
            for scaling in (False, True):
                state = demo_state(float(rng.uniform(0, 360)), magnitude, projection=projection, scaling=scaling)
                scores = queries @ np.array(state.keys2d).T
                order = np.sort(scores, axis=1)
                strict_winner = np.where(order[:, -1] > order[:, -2] + 1e-9, scores.argmax(axis=1), -1)
                for index, status in enumerate(state.statuses):
                    if np.any(strict_winner == index):
                        assert status == "selectable", (magnitude, projection, scaling, index)
                    if status == "unselectable":
                        assert not np.any(scores[:, index] >= order[:, -1] - 1e-12)


def test_page_is_self_contained_and_deterministic():
    page = render_demo()
    assert page == render_demo()
    assert "__DEMO_CONFIG__" not in page and "__LNPROOFS_VERSION__" not in page
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", page)
    assert "@import" not in page and "url(http" not in page
    # the only URL is the SVG namespace identifier, which is never fetched
    assert re.findall(r"https?://[^\"' ]+", page) == ["http://www.w3.org/2000/svg"]
    assert demo_config.THRESHOLD_TEXT in page


def test_demo_command_writes_the_page(cli, tmp_path):
    out = tmp_path / "sub" / "demo.html"
    result = cli(["demo", "--out", out])
    assert result.status == 0, result.err
    assert out.read_text(encoding="utf-8") == render_demo()


@pytest.mark.parametrize("magnitude", [0.5, 1.0, T - 1e-6, T + 1e-6, 3.7])
@pytest.mark.parametrize("projection, scaling", [(False, False), (True, False), (False, True), (True, True)])
def test_statuses_agree_with_the_certification_engine(magnitude, projection, scaling):
    """The page's predicate and the engine agree on the displayed plane coordinates.

    (With projection on, the rounded keys in R^3 are not exactly coplanar, so the exact
    question is asked in the plane coordinates the page shows; without projection the
    keys in R^3 have z = 0 exactly and are compared too.)"""
    from lnproofs.propose.certification import certify

    state = demo_state(77.0, magnitude, projection=projection, scaling=scaling)
    assert certify(np.array(state.keys2d)).statuses == state.statuses
    if not projection:
        assert certify(np.array(state.keys3d)).statuses == state.statuses
