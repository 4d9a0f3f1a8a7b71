"""Every theorem's words are prose with their mathematics in ``$...$``, and every typeset
form compiles: a structural check that always runs, and one pdflatex run of all forms."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from lnproofs.derive import prose
from lnproofs.derive.registry import all_theorems
from lnproofs.derive.theorem import method_prose


@pytest.fixture(scope="module")
def theorems():
    # general n, the explicit n = 4, and both conventions' convention-dependent statements
    return all_theorems(n=4, convention="torch") + [
        t for t in all_theorems(n=4, convention="std") if t.convention == "std"
    ]


def _texts(theorem):
    """(where, prose) for every piece of prose of ``theorem``."""
    where = f"{theorem.name} (n={theorem.n}, {theorem.convention})"
    yield f"{where} title", theorem.title
    yield f"{where} statement", theorem.statement
    for h in theorem.hypotheses:
        yield f"{where} hypothesis {h.name}", h.text
    for k, step in enumerate(theorem.steps + theorem.conclusion, start=1):
        yield f"{where} step {k}", step.description
        yield f"{where} step {k} method", method_prose(step.method)


def _formulas(theorem):
    """(where, LaTeX) for every display formula of ``theorem``."""
    where = f"{theorem.name} (n={theorem.n}, {theorem.convention})"
    yield f"{where} statement", theorem.statement_latex
    for h in theorem.hypotheses:
        if h.has_formula:  # the others are their prose, checked above
            yield f"{where} hypothesis {h.name}", h.latex
    for k, step in enumerate(theorem.steps + theorem.conclusion, start=1):
        yield f"{where} claim {k}", step.claim_latex()


def typeset_problems(theorems) -> list[str]:
    """Every structural problem of the theorems' prose and formulas (empty: none)."""
    found = []
    for theorem in theorems:
        for where, text in _texts(theorem):
            found += [f"{where}: {p}" for p in prose.problems(text)]
        for where, latex in _formulas(theorem):
            found += [f"{where}: {p}" for p in prose.problems(f"${latex}$")]
    return found


def test_every_text_is_prose_with_math_in_dollars(theorems):
    assert len(theorems) > 40
    problems = typeset_problems(theorems)
    assert not problems, "\n".join(problems[:40]) + f"\n({len(problems)} in all)"


@pytest.mark.parametrize(
    "description",
    [
        "Entry i of P x is x_i - sum_j x_j / n",
        "(z - b)^T diag(a)^-2 (z - b) = n",
        "the mean is 1/n times the sum",
        "the margin is $q.(k_i - k_j)$ and |P x|^2 grows",
        "an unpaired $x",
        "unbalanced $\\frac{1}{n$ braces",
    ],
)
def test_math_outside_dollars_is_caught(theorems, description):
    """A theorem whose description has mathematics outside ``$...$`` fails the check above."""
    from lnproofs.derive.theorem import mutate_step

    bad = mutate_step(theorems[0], 0, description=description)
    assert typeset_problems([bad])
    assert not typeset_problems(
        [
            mutate_step(
                theorems[0],
                0,
                description="Entry $i$ of $P x$ is "
                r"$x_i - \frac{1}{n}\sum_j x_j$",
            )
        ]
    )


def test_prose_writers():
    text = r"The sum $\sum_j x_j$ is 0 & the rest_of it"
    assert prose.to_latex(text) == r"The sum $\sum_j x_j$ is 0 \& the rest\_of it"
    assert (
        prose.to_plain(r"$|P x|^2 = \tfrac{1}{n}\sum_j x_j$ for $x \in \mathbb{R}^n$")
        == "|P x|^2 = (1)/(n)sum_j x_j for x in R^n"
    )
    assert (
        prose.to_plain(r"$\|x\| \le \sqrt{n}$ as $\lambda \to \infty$, $e_1, \cdots, e_n$ in $\mathbf{1}^\top$")
        == "||x|| <= sqrt(n) as lambda -> oo, e_1, ..., e_n in 1^T"
    )


def _document(theorems) -> tuple[str, list[str]]:
    """One LaTeX document with every typeset form, one per line of the body, and the forms' places."""
    body, places = [], []
    for theorem in theorems:
        for where, text in _texts(theorem):
            body.append(prose.to_latex(text) + r"\par")
            places.append(where)
        for where, latex in _formulas(theorem):
            body.append(rf"\[ {latex} \]")
            places.append(where)
    # then each theorem as the report writes it (displays shrunk to the line need graphicx)
    whole = [theorem.to_latex() for theorem in theorems]
    head = [r"\documentclass{article}", r"\usepackage{amsmath,amssymb,graphicx}", r"\begin{document}"]
    return "\n".join(head + body + whole + [r"\end{document}", ""]), places


@pytest.mark.skipif(
    shutil.which("pdflatex") is None,
    reason="pdflatex is not installed: the typeset forms are only checked structurally",
)
def test_every_typeset_form_compiles(theorems, tmp_path):
    source, places = _document(theorems)
    (tmp_path / "forms.tex").write_text(source, encoding="utf-8")
    run = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "forms.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    log = run.stdout
    if run.returncode != 0:
        # name the form: pdflatex reports "l.NNN" for the line of the error
        import re

        m = re.search(r"^l\.(\d+)", log, re.MULTILINE)
        line = int(m.group(1)) - 4 if m else -1
        place = places[line] if 0 <= line < len(places) else "a theorem's to_latex()"
        pytest.fail(f"pdflatex failed at {place}:\n" + log[-1500:])
    assert (tmp_path / "forms.pdf").is_file()
