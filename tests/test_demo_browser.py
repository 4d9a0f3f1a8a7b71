"""Drive the demo page in a real headless Chromium and compare it with lnproofs.experiments.demo."""

from __future__ import annotations

import math

import pytest

from lnproofs.derive import demo_config
from lnproofs.experiments.demo import demo_state, write_demo

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    from conftest import chromium_or_skip, headless_chromium

    chromium_or_skip()
    folder = tmp_path_factory.mktemp("demo")
    path = write_demo(folder / "demo.html")
    with headless_chromium(path, folder / "profile") as driver:
        yield driver


def _set_slider(driver, element_id, value):
    element = driver.find_element("id", element_id)
    driver.execute_script(
        "arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('input'));", element, str(value)
    )


def _set_toggle(driver, element_id, wanted):
    element = driver.find_element("id", element_id)
    if element.is_selected() != wanted:
        element.click()
    assert element.is_selected() == wanted


def _read(driver):
    rows = [driver.find_element("id", f"key-row-{i}") for i in range(4)]
    weights = [float(row.get_attribute("data-weight")) for row in rows]
    shown = [float(row.find_element("css selector", "td.weight").text) for row in rows]
    statuses = [row.get_attribute("data-status") for row in rows]
    marks = [row.find_element("css selector", "td.status").text for row in rows]
    return weights, shown, statuses, marks


_BELOW = math.floor(demo_config.threshold_float() * 100) / 100  # 2.41: slider step is 0.01
_ABOVE = math.ceil(demo_config.threshold_float() * 100) / 100  # 2.42

SETTINGS = [
    # angle, magnitude, query length, projection, scaling
    (160.0, 1.0, 3.0, False, False),
    (45.0, _BELOW, 3.0, False, False),
    (45.0, _ABOVE, 3.0, False, False),
    (45.0, _ABOVE, 3.0, True, False),
    (45.0, _ABOVE, 3.0, False, True),
    (45.0, _ABOVE, 3.0, True, True),
    (300.0, 3.5, 7.5, True, True),
    (10.0, 0.5, 1.0, True, False),
]


@pytest.mark.parametrize("angle, magnitude, length, projection, scaling", SETTINGS)
def test_page_matches_python(page, angle, magnitude, length, projection, scaling):
    _set_slider(page, "angle", angle)
    _set_slider(page, "magnitude", magnitude)
    _set_slider(page, "qlength", length)
    _set_toggle(page, "projection", projection)
    _set_toggle(page, "scaling", scaling)
    weights, shown, statuses, marks = _read(page)
    expected = demo_state(angle, magnitude, projection=projection, scaling=scaling, query_length=length)
    assert statuses == list(expected.statuses)
    for got, text, want in zip(weights, shown, expected.weights):
        assert got == pytest.approx(want, rel=1e-12, abs=1e-15)
        assert text == pytest.approx(want, abs=5.01e-5)
    assert math.fsum(weights) == pytest.approx(1.0, abs=1e-12)
    for mark, status in zip(marks, statuses):
        assert status.replace("-", " ") in mark


def test_threshold_behaviour_in_the_page(page):
    _set_slider(page, "angle", 45)
    _set_slider(page, "qlength", 3)
    _set_toggle(page, "projection", False)
    _set_toggle(page, "scaling", False)
    _set_slider(page, "magnitude", _BELOW)
    assert _read(page)[2][demo_config.WATCHED_KEY] == "selectable"
    _set_slider(page, "magnitude", _ABOVE)
    assert _read(page)[2][demo_config.WATCHED_KEY] == "unselectable"
    _set_toggle(page, "projection", True)
    assert _read(page)[2][demo_config.WATCHED_KEY] == "unselectable"
    _set_toggle(page, "scaling", True)
    assert _read(page)[2][demo_config.WATCHED_KEY] == "selectable"
    assert "selectable" in page.find_element("id", "summary").text


def test_page_draws_the_keys_and_the_query(page):
    _set_toggle(page, "scaling", True)
    svg = page.find_element("id", "picture")
    assert len(svg.find_elements("css selector", "polygon")) == 1
    texts = [t.text for t in svg.find_elements("css selector", "text")]
    assert "query" in texts
    assert sum(t.startswith("Key") for t in texts) == 4
    errors = [entry for entry in page.get_log("browser") if entry.get("level") == "SEVERE"]
    assert errors == []
