"""The proof report: content, determinism, LaTeX that compiles, the keys section."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

from lnproofs.derive.registry import all_theorems


def _strip_generated(text: str) -> str:
    lines = text.splitlines()
    assert sum(line.startswith("Generated:") or "Generated:" in line for line in lines) == 1
    return "\n".join(line for line in lines if "Generated:" not in line)


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """The same report written twice (no PDF, no numeric re-check: those are tested below)."""
    from conftest import _run

    base = tmp_path_factory.mktemp("reports")
    results = []
    for name in ("a", "b"):
        out = base / name
        result = _run(["report", "--out", out, "--no-recheck", "--no-pdf"])
        assert result.status == 0, result.err
        results.append(out)
    return results


def test_every_theorem_with_its_steps(reports):
    """Each result stated once, numbered, its name only in the index; every step listed."""
    from lnproofs.report.proofs import entries

    md = (reports[0] / "report.md").read_text(encoding="utf-8")
    tex = (reports[0] / "report.tex").read_text(encoding="utf-8")
    theorems = all_theorems(4, "torch")
    assert theorems
    body, index = md.split("## Appendix: Index of result names")
    items = entries([t.prove() for t in theorems])
    assert len(items) == len({t.name for t in theorems})
    for item in items:
        assert f"`{item.name}`" in index and item.name not in body
        assert tex.count(rf"\label{{thm:{item.name}}}") == 1 and rf"\ref{{thm:{item.name}}}" in tex
    assert len(re.findall(r"^\*\*(Theorem|Lemma) \d+\.\d+\*\* \(", body, flags=re.M)) == len(items)
    # every check of every stated proof is one displayed relation, with the rule at its right, and
    # the table of what holds gives the same count
    from lnproofs.report.proofs import hidden_steps, shown_steps

    shown = sum(len(shown_steps(item.general)) for item in items)
    assert len(re.findall(r"^\d+\. .*\$ \(.+\)$", body, flags=re.M)) == shown
    for item in items:
        count, hidden = len(shown_steps(item.general)), len(hidden_steps(item.general))
        row = f"| proved | {count} | {hidden} |"
        assert row in md, (item.name, row)
        if item.instance is not None:
            total = len(item.instance.steps)
            assert f"| proved, {total} check{'s' if total != 1 else ''} |" in md
    # the abstract counts the relations shown and the checks the printed proofs leave out, and both add
    # up to every check of every general proof
    hidden = sum(len(hidden_steps(item.general)) for item in items)
    assert hidden >= 100 and shown + hidden == sum(len(item.general.steps) for item in items)
    abstract = md.split("**Abstract.**", 1)[1].split("\n", 1)[0]
    assert f"({shown} in all)" in abstract and f"so are {hidden} further checks" in abstract
    assert "not complete" not in md and "NOT checked" not in md
    assert "PyTorch convention" in md and "| SymPy |" in md and "| lnproofs |" in md
    assert md.count("$$") % 2 == 0
    assert "numeric re-check was not run" in md
    for part in ("**Abstract.**", "## Contents", "## 1. Introduction", "## References"):
        assert part in md, part
    assert not re.search(r"(Figure|Table|Theorem|Section) \?", md) and "[[" not in md


def test_figures_are_written_and_referenced(reports):
    md = (reports[0] / "report.md").read_text(encoding="utf-8")
    referenced = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert len(referenced) >= 5
    for path in referenced:
        data = (reports[0] / path).read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) > 5000
        assert b"Software" not in data and b"matplotlib" not in data.lower()
        assert path in (reports[0] / "report.tex").read_text(encoding="utf-8")


def test_report_is_deterministic(reports):
    a, b = reports
    for name in ("report.md", "report.tex"):
        assert _strip_generated((a / name).read_text()) == _strip_generated((b / name).read_text())
    pngs = sorted(p.name for p in (a / "figures").glob("*.png"))
    assert pngs == sorted(p.name for p in (b / "figures").glob("*.png"))
    for name in pngs:
        assert (a / "figures" / name).read_bytes() == (b / "figures" / name).read_bytes(), name


KEYS3 = np.array(
    [
        [0.0, 0.0, 0.0],
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [0.0, 0.0, 1.0],
        [0.2, 0.2, 0.2],
        [0.5, 0.5, 0.0],
        [1.2, 1.1, 0.9],
        [0.9, -0.4, 0.3],
    ]
)


def test_keys_section(cli, tmp_path):
    from lnproofs.certificates.certificate import Certificate
    from lnproofs.certificates.check import check_certificate

    np.save(tmp_path / "keys.npy", KEYS3)
    result = cli(
        [
            "report",
            "--out",
            tmp_path / "r",
            "--keys",
            tmp_path / "keys.npy",
            "--no-recheck",
            "--no-pdf",
            "--n",
            "3",
            "--convention",
            "std",
        ]
    )
    assert result.status == 0, result.err
    md = (tmp_path / "r" / "report.md").read_text()
    cert = Certificate.load(tmp_path / "r" / "certificate.json")
    assert check_certificate(cert, KEYS3).ok
    # the table lists exactly the non-selectable keys, each with its status
    rows = re.findall(r"^\| k(\d+) \| ([a-z-]+) \| (.+) \|$", md, flags=re.M)
    expected = {r.index: r.status for r in cert.results if r.status != "selectable"}
    assert {int(i): s for i, s, _ in rows} == expected
    assert expected.get(4) == "unselectable" and expected.get(5) == "tie-only"
    assert "convex weights" in md and "accepted every claim" in md
    assert "| selectable | 6 |" in md
    assert (tmp_path / "r" / "figures" / "keys_margins.png").exists()
    assert (tmp_path / "r" / "figures" / "keys_view.png").exists()
    assert "standard-deviation convention" in md


def _recheck_report(cli, out):
    result = cli(["report", "--out", out, "--samples", "16", "--no-pdf", "--n", "3"])
    assert result.status in (0, 1), result.err  # 1: some numeric re-check failed (the report says which)
    md = (out / "report.md").read_text()
    failed = md.count("| **failed**: largest error")
    assert result.status == (1 if failed else 0)
    return md, failed


def test_numeric_recheck_in_report(cli, tmp_path):
    pytest.importorskip("torch")
    from torch_backend.theorems import check_names

    md, failed = _recheck_report(cli, tmp_path / "r")
    names = set(check_names())
    proved = [t.name for t in all_theorems(3, "torch") if t.name in names]
    assert proved
    assert md.count("| passed: largest error") + failed == len({n for n in proved})
    assert re.search(r"\| passed: largest error [0-9.e+-]+, tolerance [0-9.e+-]+, \d+ samples \|", md)
    assert re.search(r"double precision on (the CPU|a GPU)", md)
    assert "| PyTorch | " in md and "not installed" not in md


@pytest.mark.slow
def test_report_with_recheck_is_deterministic(cli, tmp_path):
    pytest.importorskip("torch")
    first, _ = _recheck_report(cli, tmp_path / "a")
    second, _ = _recheck_report(cli, tmp_path / "b")
    assert _strip_generated(first) == _strip_generated(second)


def test_keys_section_with_pca(cli, tmp_path):
    rng = np.random.default_rng(2)
    keys = rng.standard_normal((30, 6))
    keys[0] = keys[1:6].mean(axis=0)
    np.save(tmp_path / "k6.npy", keys)
    result = cli(["report", "--out", tmp_path / "r", "--keys", tmp_path / "k6.npy", "--no-recheck", "--no-pdf"])
    assert result.status == 0, result.err
    md = (tmp_path / "r" / "report.md").read_text()
    assert "first three principal components" in md
    assert re.search(r"^\| k0 \| unselectable \|", md, flags=re.M)


def test_generated_line_follows_source_date_epoch(monkeypatch):
    from lnproofs.report.build import generated_line

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    assert generated_line() == "Generated: 2023-11-14 22:13:20 UTC"


@pytest.fixture(scope="module")
def compiled(reports, tmp_path_factory):
    """The report compiled to PDF (pdflatex and bibtex), in a copy of the report folder."""
    from lnproofs.report.build import _compile_pdf

    if shutil.which("pdflatex") is None or shutil.which("bibtex") is None:
        pytest.skip("pdflatex or bibtex is not installed")
    folder = tmp_path_factory.mktemp("compiled") / "copy"
    shutil.copytree(reports[0], folder)
    pdf, note = _compile_pdf(folder / "report.tex")
    assert pdf is not None, note
    return pdf


def test_latex_compiles_to_pdf(compiled):
    assert compiled.read_bytes().startswith(b"%PDF") and compiled.stat().st_size > 50_000
    assert not compiled.with_suffix(".aux").exists()


def theorem_pages(pdf) -> tuple[int, int]:
    """The first and the last page of the theorem part (the results and their proofs): from the page
    of the first result's section to the page where the section after the last proof begins."""
    import subprocess

    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    pages = text.split("\f")

    def page_of(heading: str) -> int:
        found = [k for k, page in enumerate(pages, 1) if re.search(rf"^\s*\d+\s+{heading}\s*$", page, flags=re.M)]
        assert found, heading
        return found[0]

    return page_of("The centring projection"), page_of("What was checked")


@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="pdftotext is not installed")
def test_the_theorem_part_fits_in_twenty_pages(compiled):
    first, last = theorem_pages(compiled)
    assert 2 <= first < last
    assert last - first + 1 <= 20, (first, last)


def test_relations_are_typeset_in_math_mode():
    from lnproofs.derive.prose import escape_text as _tex_escape
    from lnproofs.report.latex import escape

    for fn in (escape, _tex_escape):
        text = fn("a < b > c | d")
        assert "<" not in text.replace(r"\ensuremath{<}", "")
        assert ">" not in text.replace(r"\ensuremath{>}", "")
        assert "|" not in text.replace(r"\ensuremath{|}", "")


@pytest.mark.skipif(
    shutil.which("pdflatex") is None or shutil.which("pdftotext") is None,
    reason="pdflatex or pdftotext is not installed",
)
def test_pdf_text_has_no_substitute_glyphs(reports, tmp_path):
    """Without the T1 encoding, text-mode <, > and | print as the glyphs checked here."""
    import subprocess

    from lnproofs.report.build import _compile_pdf
    from lnproofs.report.latex import escape

    folder = tmp_path / "copy"
    shutil.copytree(reports[0], folder)
    tex = folder / "report.tex"
    line = escape("Relations in text: a < b, c > d, e | f.")
    tex.write_text(
        tex.read_text(encoding="utf-8").replace(r"\end{document}", line + "\n" + r"\end{document}"), encoding="utf-8"
    )
    pdf, note = _compile_pdf(tex)
    assert pdf is not None, note
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    assert "Relations in text" in text
    for glyph in ("\u00a1", "\u00bf", "\u2014"):
        assert glyph not in text, f"{glyph!r} found in the PDF text"
    assert "\\ref{" not in text and "Theorem 10.4" in text  # references typeset, not escaped


#: the computer-algebra notation and software words a reader once found in the theorems, each quoted
#: as found: a sentence naming the checker's routine, SymPy's function and Lambda notation, a zero
#: times a vector, a vector times one, the names of query sets, of the software and of the demo
_SOFTWARE_OR_CAS = (
    "evaluating the finite sums",  # "by evaluating the finite sums and Kronecker deltas"
    "Kronecker deltas",
    r"\mapsto",  # "J = ((r,c) -> 1)"
    r"0 \mathbf{1}",  # "(I - J/n)1 = 0 1"
    r"\left(0\right)\mathbf{1}",
    r"= 1 v",  # "= 1v"
    r"\left(1\right)v",
    "dual bound",  # "the dual bound of the rmsnorm query set"
    "rmsnorm query set",
    "lnproofs",  # "so lnproofs applies the table's own entries"
    "own entries",
    "seed demo",  # "the exact threshold of the seed demo"
    "torch convention",
    "std convention",
    "'torch'",
    "'std'",
    "(explicit)",
    "Lemma Lemma",
    "Theorem Theorem",
    "<unrenderable",
)

#: SymPy's notation for an applied function, J(j, i) printed as J{\left(j,i \right)}, and its identity
_CAS_PATTERNS = (r"(?<![\\A-Za-z])[A-Za-z]\{\\left\(", r"\\mathbb\{I\}")


def _theorem_part(tex: str) -> str:
    return tex[tex.index(r"\section{The centring projection}") : tex.index(r"\section{What was checked}")]


def test_no_software_words_or_cas_notation_in_the_theorems(reports):
    part = _theorem_part((reports[0] / "report.tex").read_text(encoding="utf-8"))
    for phrase in _SOFTWARE_OR_CAS:
        assert phrase not in part, phrase
    for pattern in _CAS_PATTERNS:
        assert re.search(pattern, part) is None, pattern


def test_no_display_line_starts_with_a_comma_or_breaks_inside_parentheses(reports):
    part = _theorem_part((reports[0] / "report.tex").read_text(encoding="utf-8"))
    displays = re.findall(r"\\begin\{align\*\}(.*?)\\end\{align\*\}", part, flags=re.S)
    assert displays
    for display in displays:
        for line in re.split(r"\\\\\n", display):
            body = re.sub(r"\\intertext\{.*\}\n?", "", line).strip()
            assert not re.match(r"&\s*(\\quad\s*)?,", body), line
        assert r"\Bigl(" not in display, display


def _canonical(expr):
    """``expr`` with every summation index renamed to one symbol: sum_j p_j^2 and sum_k p_k^2 agree."""
    import sympy as sp

    if not isinstance(expr, sp.Basic):
        return expr
    dummy = sp.Symbol("iota", positive=True, integer=True)
    return expr.replace(
        lambda e: isinstance(e, sp.Sum) and len(e.limits) == 1,
        lambda e: sp.Sum(e.function.xreplace({e.limits[0][0]: dummy}), (dummy, *e.limits[0][1:])),
    )


def test_a_shown_step_is_never_a_tautology():
    """Neither as printed (b_i - b_j = b_i - b_j) nor up to the name of a summation index
    (sum_j p_j^2 = sum_k p_k^2), nor once its named quantities are written out."""
    import sympy as sp

    from lnproofs.report.proofs import shown_steps

    checked = 0
    for theorem in all_theorems() + [t for t in all_theorems(convention="std") if t.convention == "std"]:
        result = theorem.prove()
        steps = {k: s for k, s in enumerate(theorem.steps + theorem.conclusion, start=1)}
        for s in shown_steps(result):
            if not s.lhs_latex:
                continue
            checked += 1
            assert s.lhs_latex != s.rhs_latex, (theorem.name, s.index, s.claim_latex)
            step = steps[s.index]
            if isinstance(step.lhs, sp.Basic) and isinstance(step.rhs, sp.Basic) and s.relation == "=":
                assert _canonical(step.lhs) != _canonical(step.rhs), (theorem.name, s.index, s.claim_latex)
    assert checked > 50


def test_the_tautology_test_finds_a_renamed_index():
    import sympy as sp

    n, j, k = sp.Symbol("n"), sp.Symbol("j"), sp.Symbol("k")
    p = sp.IndexedBase("p")
    assert _canonical(sp.Sum(p[j] ** 2, (j, 1, n))) == _canonical(sp.Sum(p[k] ** 2, (k, 1, n)))
    assert _canonical(sp.Sum(p[j] ** 2, (j, 1, n))) != _canonical(sp.Sum(p[k] ** 3, (k, 1, n)))


def test_every_library_and_cited_fact_has_a_complete_reference():
    from lnproofs.derive.registry import all_theorems as every
    from lnproofs.report.bibliography import SOURCES

    keys = {s.key for s in SOURCES}
    for source in SOURCES:
        fields = dict(source.fields)
        assert fields.get("author") and fields.get("year") and fields.get("title"), source.key
        assert {"journal", "booktitle", "publisher", "howpublished"} & set(fields), source.key
    cited = {h.source for t in every() for h in t.hypotheses if h.source}
    assert cited and cited <= keys
    assert {"sympy", "numpy", "scipy", "cvxpy", "highs", "clarabel", "flint", "pytorch", "matplotlib"} <= keys
