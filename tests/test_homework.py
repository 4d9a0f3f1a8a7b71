"""Generating problem sets: determinism, every topic, solutions that agree with independent
computations, valid-by-construction LaTeX, and the command line round trip."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from lnproofs.homework import TOPICS, ProblemSet, check_answers, generate, write_homework
from lnproofs.homework.problems import PROBLEM_CLASSES

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hw") / "seed3"
    write_homework(generate(3), folder, pdf=False)
    return folder


def _files(folder):
    return {p.name: p.read_bytes() for p in sorted(Path(folder).iterdir())}


def test_same_seed_same_bytes_across_processes(written, tmp_path):
    # another interpreter with another hash seed must write identical files
    env = dict(os.environ, PYTHONHASHSEED="12345")
    code = (
        "import sys; from lnproofs.homework import generate, write_homework; "
        "write_homework(generate(3), sys.argv[1], pdf=False)"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "again")], check=True, env=env, timeout=300)
    assert _files(written) == _files(tmp_path / "again")


def test_same_seed_same_problems_and_different_seeds_differ():
    assert generate(5).to_json() == generate(5).to_json()
    sets = {json.dumps(generate(s).to_json()["problems"]) for s in range(6)}
    assert len(sets) == 6


def test_output_has_no_timestamp_or_absolute_path(written):
    for name, data in _files(written).items():
        text = data.decode("utf-8")
        assert not re.search(r"20\d\d-\d\d-\d\d", text), name
        assert str(written) not in text, name


@pytest.mark.parametrize("topic", TOPICS)
def test_each_topic_alone(topic):
    problem_set = generate(11, topic)
    (problem,) = problem_set.problems
    assert isinstance(problem, PROBLEM_CLASSES[topic]) and problem.id == topic
    # a topic's problem does not depend on which other topics are asked for
    assert generate(11).by_id()[topic] == problem
    assert type(problem).from_json(json.loads(json.dumps(problem.to_json()))) == problem
    # the library's own solution is accepted by the checker
    solution = problem.solve()
    result = check_answers(problem_set, {"answers": {topic: solution.answers}})
    assert result.ok, result.to_text()


def test_the_gain_1_2_2_has_semi_axes_2_sqrt_3_and_sqrt_6():
    from lnproofs.homework.problems import EllipsoidProblem

    problem = EllipsoidProblem(gain=(1, 2, 2), bias=(0, 1, -1))
    problem_set = ProblemSet(seed=0, problems=(problem,))
    answers = {"ellipsoid": {"center": list(problem.bias), "normal": [2, 1, 1], "semi_axes": ["sqrt(6)", "2*sqrt(3)"]}}
    assert check_answers(problem_set, {"answers": answers}).ok


@pytest.mark.parametrize("seed", range(4))
def test_semi_axes_agree_with_a_numeric_eigen_decomposition(seed):
    problem = generate(seed, "ellipsoid").problems[0]
    a = np.array(problem.gain, dtype=float)
    n = len(a)
    M = np.diag(a) @ (np.eye(n) - np.ones((n, n)) / n) @ np.diag(a)
    numeric = np.sqrt(n * np.sort(np.linalg.eigvalsh(M))[::-1][: n - 1])
    exact = [float(e) for e in problem.semi_axes()]
    assert np.allclose(exact, numeric, rtol=1e-12, atol=1e-12)
    from lnproofs.derive.numeric import ellipsoid

    assert np.allclose(exact, ellipsoid(a, np.array(problem.bias, float)).semi_axes, rtol=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_selectability_statuses_agree_with_scipy_hull(seed):
    from scipy.spatial import ConvexHull, Delaunay

    problem = generate(seed, "selectability").problems[0]
    keys = np.array(problem.keys, dtype=float)
    solution = problem.solve()
    hull = ConvexHull(keys)
    vertices = set(int(v) + 1 for v in hull.vertices)
    selectable = {int(k) for k, s in solution.statuses.items() if s == "selectable"}
    assert selectable == vertices
    # the others: on an edge (tie-only) or strictly inside (unselectable)
    for k, status in solution.statuses.items():
        if int(k) in vertices:
            continue
        p = keys[int(k) - 1]
        on_edge = np.any(np.isclose(hull.equations[:, :2] @ p + hull.equations[:, 2], 0.0, atol=1e-12))
        assert Delaunay(keys[hull.vertices]).find_simplex(p) >= 0
        assert status == ("tie-only" if on_edge else "unselectable")
    assert "tie-only" in solution.statuses.values() and "unselectable" in solution.statuses.values()


def test_threshold_is_the_demo_threshold():
    import sympy as sp

    from lnproofs.derive import demo_config
    from lnproofs.homework.problems import ThresholdProblem

    t = ThresholdProblem(magnitudes=(Fraction(1),)).threshold()  # key 2 at 45 degrees, as in the demo
    assert sp.simplify(t - sp.sympify(demo_config.THRESHOLD_TEXT)) == 0
    assert abs(float(t) - demo_config.threshold_float()) < 1e-12
    problem = ThresholdProblem(magnitudes=(Fraction(12, 5), Fraction(5, 2)))
    assert [problem.status(m) for m in problem.magnitudes] == ["selectable", "unselectable"]


def test_latex_is_well_formed(written):
    for name in ("problems.tex", "solutions.tex"):
        text = (written / name).read_text()
        assert text.startswith("\\documentclass") and text.rstrip().endswith("\\end{document}")
        packages = re.findall(r"\\usepackage(?:\[[^]]*\])?\{([^}]*)\}", text)
        assert set(",".join(packages).split(",")) <= {"amsmath", "amssymb", "geometry"}
        body = re.sub(r"\\begin\{verbatim\}.*?\\end\{verbatim\}", "", text, flags=re.S)
        body = body.replace("\\\\", " ").replace("\\{", "").replace("\\}", "").replace("\\$", "")
        depth = 0
        for ch in body:
            depth += {"{": 1, "}": -1}.get(ch, 0)
            assert depth >= 0, name
        assert depth == 0, name
        assert re.findall(r"\\begin\{(\w+)\}", body) and sorted(re.findall(r"\\begin\{(\w+)\}", body)) == sorted(
            re.findall(r"\\end\{(\w+)\}", body)
        )
        for paragraph in body.split("\n\n"):
            assert paragraph.count("$") % 2 == 0, paragraph[:200]


def test_solutions_carry_library_values_and_certificate(written):
    text = (written / "solutions.md").read_text()
    problem_set = generate(3)
    for problem in problem_set.problems:
        assert f"(id `{problem.id}`)" in text
    assert "verified exactly by its checker" in text
    cert = json.loads((written / "selectability_certificate.json").read_text())
    from lnproofs.certificates.check import check_certificate

    keys = np.loadtxt(written / "selectability_keys.csv", delimiter=",")
    assert check_certificate(cert, keys).ok
    for status in ("selectable", "tie-only", "unselectable"):
        assert f"| {status} |" in text


def test_importing_homework_stays_light():
    code = (
        "import sys, lnproofs.homework, lnproofs.commands.homework; "
        "print([m for m in ('sympy', 'numpy', 'cvxpy', 'torch') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "[]"


def test_problem_objects_display_themselves():
    problem_set = generate(2)
    for problem in problem_set.problems:
        assert problem.id in problem._repr_markdown_()
        latex = problem._repr_latex_()
        assert latex.startswith("$") and latex.endswith("$")
    assert "Problem 6" in problem_set._repr_markdown_()
    from lnproofs.homework.problems import ThresholdProblem

    solution = ThresholdProblem(magnitudes=(Fraction(1),)).solve()
    assert "1 + sqrt(2)" in solution._repr_markdown_()


def test_cli_new_then_check_the_example_answers(cli, tmp_path):
    out = tmp_path / "hw"
    result = cli(["homework", "new", "--seed", "1", "--out", out, "--json"])
    assert result.status == 0, result.err
    files = result.json()["files"]
    assert {"problems.json", "problems.md", "problems.tex", "solutions.md", "solutions.tex"} <= set(files)
    result = cli(["homework", "check", EXAMPLES / "answers_example.json", "--problems", out])
    assert result.status == 0, result.out + result.err
    assert "59 of 59 parts correct" in result.out


def test_cli_check_reports_wrong_answers_with_exit_status_1(cli, tmp_path):
    out = tmp_path / "hw"
    assert cli(["homework", "new", "--seed", "1", "--topics", "uniform,threshold", "--out", out]).status == 0
    problems = {p["id"]: p for p in json.loads((out / "problems.json").read_text())["problems"]}
    threshold = ProblemSet.from_json(json.loads((out / "problems.json").read_text())).by_id()["threshold"]
    answers = {
        "answers": {
            "uniform": {"query": [1] * len(problems["uniform"]["gain"])},
            "threshold": {
                "threshold": threshold.solve().answers["threshold"],
                "status_at": {m: "selectable" for m in problems["threshold"]["magnitudes"]},
            },
        }
    }
    path = out / "answers.json"
    path.write_text(json.dumps(answers))
    result = cli(["homework", "check", path, "--json"])  # --problems defaults to the answers' folder
    assert result.status == 1
    report = result.json()
    assert report["ok"] is False and report["correct"] == 1 and report["parts"] == 3
    messages = [p["message"] for prob in report["problems"] for p in prob["parts"] if not p["ok"]]
    assert any("off by" in m or "not every output" in m for m in messages)
    assert any("key 2 is unselectable, not selectable" in m for m in messages)


def test_cli_topics_subset_and_pdf_note(cli, tmp_path):
    result = cli(["homework", "new", "--seed", "4", "--topics", "threshold,projection", "--out", tmp_path / "x"])
    assert result.status == 0
    data = json.loads((tmp_path / "x" / "problems.json").read_text())
    assert [p["id"] for p in data["problems"]] == ["projection", "threshold"]
    assert ProblemSet.from_json(data).seed == 4


def test_solutions_include_the_library_proofs(tmp_path):
    write_homework(generate(0, "projection"), tmp_path, pdf=False)
    markdown = (tmp_path / "solutions.md").read_text()
    latex = (tmp_path / "solutions.tex").read_text()
    assert "`projection.idempotent`" in markdown and "(n = 4)" in markdown
    assert "**FAILED**" not in markdown and "- **proved**" in markdown
    assert "projection.idempotent" in latex and "checked by SymPy" in latex


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex is not installed")
def test_pdflatex_compiles_both_documents_reproducibly(tmp_path):
    written = write_homework(generate(2), tmp_path)
    assert {"problems.pdf", "solutions.pdf"} <= set(written), sorted(written)
    for name in ("problems.pdf", "solutions.pdf"):
        assert (tmp_path / name).read_bytes().startswith(b"%PDF")
    assert not list(tmp_path.glob("*.log")) and not list(tmp_path.glob("*.aux"))
    again = write_homework(generate(2), tmp_path / "again")
    for name in ("problems.pdf", "solutions.pdf"):
        assert again[name].read_bytes() == written[name].read_bytes()
