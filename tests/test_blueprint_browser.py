"""Open the report's HTML blueprint in a real headless Chromium: the graph, the results, the
MathML and each step's exact check, with no network."""

from __future__ import annotations

import shutil

import pytest

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    from conftest import _run, chromium_or_skip, headless_chromium

    chromium_or_skip()  # before the report is made
    folder = tmp_path_factory.mktemp("blueprint")
    result = _run(["report", "--out", folder / "r", "--no-recheck", "--no-pdf"])
    assert result.status == 0, result.err
    with headless_chromium(folder / "r" / "report.html", folder / "profile") as driver:
        yield driver, folder / "r" / "report.html"


def test_the_page_loads_nothing_from_elsewhere(page):
    driver, path = page
    text = path.read_text(encoding="utf-8")
    assert "http://" not in text.replace("http://www.w3.org/", "") and "https://" not in text
    assert "<script" not in text
    resources = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert [r for r in resources if not r.startswith("file:")] == []


def test_every_result_is_there_with_its_graph_node(page):
    from lnproofs.derive.registry import theorem_names

    driver, _ = page
    for name in theorem_names():
        anchor = "r-" + name.replace(".", "-").replace("_", "-")
        assert driver.find_elements("id", anchor), name
    if shutil.which("dot"):
        nodes = driver.find_elements("css selector", ".graph svg g.node")
        assert len(nodes) >= len(theorem_names())
        edges = driver.find_elements("css selector", ".graph svg g.edge")
        assert edges  # results rest on definitions and on one another


def test_mathematics_is_rendered_as_mathml(page):
    driver, _ = page
    maths = driver.find_elements("css selector", "math")
    assert len(maths) > 200
    # the browser lays the formulas out: a rendered <math> has a width
    widths = driver.execute_script(
        "return Array.from(document.querySelectorAll('math')).slice(0, 50).map(m => m.getBoundingClientRect().width)"
    )
    assert all(w > 0 for w in widths)


def _opened(details):
    """The check folded in ``details``: hidden until its summary is clicked, then shown."""
    assert not details.find_element("css selector", "pre").is_displayed()
    details.find_element("css selector", "summary").click()
    shown = details.find_element("css selector", "pre")
    assert shown.is_displayed()
    return shown


def test_a_step_expands_to_its_exact_check(page):
    driver, _ = page
    result = driver.find_element("id", "r-projection-idempotent")
    details = result.find_elements("css selector", "details")
    assert details
    first = details[0]
    shown = _opened(first)
    # the expressions compared, the entries J_ik = 1 substituted: sum_k J_ik J_kj = n J_ij
    assert shown.text == "Sum(1, (k, 1, n)) = n"
    assert "finite sums and Kronecker deltas" in first.text and "checked" in first.text
    second = details[1]
    second.find_element("css selector", "summary").click()
    compared = second.find_element("css selector", "pre").text
    assert "P" not in compared and "J" in compared  # the name P replaced by I - J/n


def test_a_routine_check_the_paper_does_not_print_expands_to_its_check(page):
    """The expanded square of the idempotence proof is checked but not printed in the paper: the blueprint
    counts it and folds it, and opening it shows the expressions compared and the rule."""
    from lnproofs.derive.registry import get_theorem
    from lnproofs.report.proofs import hidden_steps, shown_steps

    driver, _ = page
    result = driver.find_element("id", "r-projection-idempotent")
    proof = get_theorem("projection.idempotent").prove()
    shown, hidden = len(shown_steps(proof)), len(hidden_steps(proof))
    assert hidden >= 3
    assert f"({shown + hidden} checks: {shown} relations shown, {hidden} not printed in the paper)" in result.text
    routine = [d for d in result.find_elements("css selector", "details.hidden-check") if "routine check" in d.text]
    assert len(routine) >= 2
    first = routine[0]
    assert _opened(first).text == "(I - J/n)**2 = I**2 - 2*I*J/n + J**2/n**2"
    assert "Rule: expand" in first.text and "(checked)" in first.text
