"""Every theorem is proved by SymPy, for general n and for explicit widths, and renders."""

from __future__ import annotations

import json

import pytest

from lnproofs.derive import registry
from lnproofs.derive.theorem import METHODS, ProofResult, Step, Theorem, check_step

CONTRACT = """
projection.mean_subtraction projection.symmetric projection.idempotent projection.trace projection.kernel
projection.eigenvalues decomposition.torch decomposition.std sphere.radius sphere.interior_torch sphere.interior_std
ellipsoid.hyperplane ellipsoid.equation ellipsoid.principal_axes ellipsoid.riechers_form ellipsoid.secular_equation
ellipsoid.interlacing ellipsoid.zero_gains ellipsoid.equal_gains rmsnorm.sphere rmsnorm.ellipsoid rmsnorm.interior
rmsnorm.ball_image rmsnorm.support rotary.relative
attention.uniform_query attention.sphere_witness attention.ellipsoid_witness attention.selectable_iff_not_in_hull
attention.eps_caveat attention.rank_deficient_caveat attention.duplicate_caveat attention.demo_threshold
attention.simplex_vertices
coverage.argmax_direction coverage.every_direction
vocab.self_witness vocab.duplicate_rows vocab.bias_lift vocab.final_norm vocab.no_offset
vocab.soft_cap
""".split()

# statements whose content depends on the eps convention (the others are proved once per run)
CONVENTION_DEPENDENT = ("ellipsoid.equation", "attention.eps_caveat")


def _failures(results):
    return [
        (r.name, r.n, r.convention, [(s.index, s.detail) for s in r.steps if not s.checked])
        for r in results
        if not r.proved
    ]


def test_names_are_the_contract():
    assert list(registry.theorem_names()) == CONTRACT
    general = registry.all_theorems()
    assert sorted(t.name for t in general) == sorted(CONTRACT)
    assert all(t.n is None for t in general)


@pytest.mark.parametrize("convention", ["torch", "std"])
def test_every_theorem_proved_for_general_n(convention):
    results = registry.prove_all(convention=convention)
    assert len(results) == len(CONTRACT)
    assert _failures(results) == []
    for r in results:
        assert r.steps and all(s.checked for s in r.steps)
        assert any(s.kind == "conclusion" for s in r.steps)


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 7])
def test_every_theorem_proved_for_concrete_n(n):
    concrete = [t for t in registry.all_theorems(n) if t.n == n]
    # every name has an explicit version except the planar demo configuration
    assert sorted({t.name for t in concrete}) == sorted(set(CONTRACT) - {"attention.demo_threshold"})
    results = [t.prove() for t in concrete]
    assert _failures(results) == []
    std = [t for t in registry.all_theorems(n, "std", names=CONVENTION_DEPENDENT) if t.n == n]
    assert {t.convention for t in std} == {"std"}
    assert _failures([t.prove() for t in std]) == []


@pytest.mark.slow
def test_every_theorem_proved_for_n_8_both_conventions():
    for convention in ("torch", "std"):
        assert _failures(registry.prove_all(8, convention)) == []


def test_both_conventions_always_included():
    names = [(t.name, t.convention) for t in registry.all_theorems(convention="std")]
    assert ("decomposition.torch", "torch") in names and ("decomposition.std", "std") in names
    assert ("sphere.interior_torch", "torch") in names and ("sphere.interior_std", "std") in names
    assert ("ellipsoid.equation", "std") in names


def test_demo_threshold_is_derived_from_the_configuration():
    """The exact threshold m* from the demo's angles (SymPy), by solving collinearity."""
    import sympy as sp

    from lnproofs.derive import demo_config
    from lnproofs.derive.theorems.demo import collinearity as _collinearity
    from lnproofs.derive.theorems.demo import demo_keys as _demo_keys

    m = sp.Symbol("m", positive=True)
    (root,) = sp.solveset(_collinearity(_demo_keys(m)), m, sp.Interval.open(0, sp.oo))
    value = sp.nsimplify(sp.radsimp(root))
    assert sp.simplify(value - (1 + sp.sqrt(2))) == 0
    assert sp.simplify(value - sp.sympify(demo_config.THRESHOLD_TEXT)) == 0
    assert abs(float(value) - demo_config.threshold_float()) < 1e-12


def test_demo_threshold_numbers_agree_with_the_keys():
    # just below the threshold the witness q = (m, 1) separates key 2; just above it does not
    import numpy as np

    from lnproofs.derive import demo_config

    for m, selectable in ((demo_config.threshold_float() - 1e-3, True), (demo_config.threshold_float() + 1e-3, False)):
        keys = np.array(demo_config.demo_keys(m))
        q = np.array([m, 1.0])
        scores = keys @ q
        others = np.delete(scores, demo_config.WATCHED_KEY)
        assert (scores[demo_config.WATCHED_KEY] > others.max()) == selectable


def test_rendering_markdown_latex_json():
    theorem = registry.get_theorem("projection.idempotent")
    md = theorem.to_markdown()
    assert "$$" in md and "projection.idempotent" in md and "J^2" in md
    assert theorem._repr_markdown_() == md
    assert theorem._repr_latex_().startswith("$$")
    result = theorem.prove()
    md = result.to_markdown()
    assert md.count("checked by SymPy") == len(result.steps)
    assert "**proved**" in md
    tex = result.to_latex()
    assert "\\begin{enumerate}" in tex and "\\item" in tex
    assert result._repr_latex_().startswith("$$")
    data = result.to_json()
    assert {"name", "statement", "status", "steps"} <= set(data)
    assert data["status"] == "proved"
    again = ProofResult.from_json(json.loads(json.dumps(data)))
    assert again == result


def test_importing_the_api_stays_cheap():
    import subprocess
    import sys

    code = (
        "import sys, lnproofs, lnproofs.derive.registry, lnproofs.derive.theorem, lnproofs.derive.numeric; "
        "print(sorted(m for m in ('sympy', 'torch', 'cvxpy', 'scipy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_markdown_inline_math_has_no_inner_spaces():
    """Markdown viewers render $x$ but not $ x $: no inline piece starts or ends with a space."""
    from lnproofs.derive.prose import math_pieces

    for theorem in (registry.get_theorem("projection.kernel"), registry.get_theorem("ellipsoid.equation")):
        for line in theorem.to_markdown().splitlines():
            if "$" not in line or line.strip().startswith("$$"):
                continue
            pieces = math_pieces(line)
            assert pieces and all(p == p.strip() for p in pieces), line


def test_every_theorem_renders():
    for theorem in registry.all_theorems(3):
        assert theorem.statement and theorem.statement_latex and theorem.hypotheses
        text = theorem.to_markdown() + theorem.to_latex()
        assert "unrenderable" not in text, theorem.name


def test_unknown_method_and_exceptions_fail():
    import sympy as sp

    x = sp.Symbol("x")
    assert check_step(Step("?", x, x, "no such method"))[0] is False
    assert check_step(Step("shape", sp.eye(2), sp.eye(3)))[0] is False
    assert set(METHODS) >= {
        "simplify-to-zero",
        "rewrite J^2 = nJ",
        "eigen (characteristic polynomial)",
        "determinant lemma",
        "finite sums and Kronecker deltas",
    }


def test_a_theorem_without_steps_is_not_proved():
    empty = Theorem("x", "x", "x", "x")
    assert empty.prove().status == "failed"


def test_get_theorem_and_bad_options():
    from lnproofs.kernel import OptionError

    assert registry.get_theorem("sphere.radius", n=4).n == 4
    with pytest.raises(OptionError):
        registry.all_theorems(n=1)
    with pytest.raises(OptionError):
        registry.all_theorems(convention="numpy")
    with pytest.raises(OptionError):
        registry.all_theorems(names=["projection.nonsense"])
    with pytest.raises(OptionError):
        registry.all_theorems(n=2.5)


# --------------------------------------------------------------------------- CLI


def test_cli_derive_json(cli):
    result = cli(["derive", "--n", "3", "--json"])
    assert result.status == 0, result.err
    data = result.json()
    names = [t["name"] for t in data["theorems"]]
    assert set(names) == set(CONTRACT)
    assert all(t["status"] == "proved" for t in data["theorems"])
    assert {t["n"] for t in data["theorems"]} == {None, 3}
    step = data["theorems"][0]["steps"][0]
    assert step["checked"] is True and step["method"] and step["claim"]


def test_cli_derive_table_and_filter(cli):
    result = cli(["derive", "--convention", "std", "--name", "ellipsoid.equation", "--name", "sphere.radius"])
    assert result.status == 0, result.err
    assert "ellipsoid.equation" in result.out and "sphere.radius" in result.out
    assert "2 of 2 theorems proved" in result.out
    assert "std" in result.out


def test_cli_derive_exit_status_reflects_failures(cli, monkeypatch):
    import dataclasses

    from lnproofs.derive.theorems import projection

    original = projection.theorems

    def broken(n=None, convention="torch"):
        found = original(n, convention)
        bad = found[2]
        return (
            [dataclasses.replace(bad, conclusion=(dataclasses.replace(bad.conclusion[0], rhs=-bad.conclusion[0].rhs),))]
            + found[:2]
            + found[3:]
        )

    monkeypatch.setattr(projection, "theorems", broken)
    result = cli(["derive", "--name", "projection.idempotent"])
    assert result.status == 1
    assert "failed" in result.out


def test_cli_ellipsoid_json_matches_numeric(cli, tmp_path):
    import numpy as np

    from lnproofs.derive.numeric import ellipsoid

    rng = np.random.default_rng(7)
    gain, bias = rng.normal(size=6), rng.normal(size=6)
    np.save(tmp_path / "g.npy", gain)
    np.save(tmp_path / "b.npy", bias)
    result = cli(["ellipsoid", "--gain", tmp_path / "g.npy", "--bias", tmp_path / "b.npy", "--json"])
    assert result.status == 0, result.err
    data = result.json()
    assert {"center", "normal", "semi_axes", "axes", "dimension"} <= set(data)
    expected = ellipsoid(gain, bias)
    assert data["dimension"] == 5
    assert np.allclose(data["semi_axes"], expected.semi_axes)
    assert np.allclose(data["center"], bias)
    assert list(data["semi_axes"]) == sorted(data["semi_axes"], reverse=True)
    assert np.array(data["axes"]).shape == (5, 6)


def test_cli_ellipsoid_zero_and_equal_gains(cli, tmp_path):
    import numpy as np

    np.save(tmp_path / "z.npy", np.array([2.0, 0.0, 1.0, 0.0, 3.0]))
    result = cli(["ellipsoid", "--gain", tmp_path / "z.npy"])
    assert result.status == 0
    assert "constant coordinates" in result.out and "1, 3" in result.out
    data = cli(["ellipsoid", "--gain", tmp_path / "z.npy", "--json"]).json()
    assert data["dimension"] == 3 and data["constant_coordinates"] == [1, 3] and data["normal"] is None
    np.savez(tmp_path / "e.npz", gain=np.full(4, -2.0), other=np.zeros(3))
    data = cli(["ellipsoid", "--gain", tmp_path / "e.npz", "--json"]).json()
    assert data["is_sphere"] is True
    assert np.allclose(data["semi_axes"], 2.0 * np.sqrt(4))
    assert "sphere" in cli(["ellipsoid", "--gain", tmp_path / "e.npz"]).out


def test_the_printer_keeps_every_sign_and_factor():
    """The notation of the proofs: a negative multiple of a sum keeps its minus sign (it was once
    printed as 1/n - sum), entries are subscripts, scalars come before parentheses and matrices."""
    import sympy as sp

    from lnproofs.derive.claims import latex

    n, k, i, j = sp.Symbol("n", positive=True, integer=True), *sp.symbols("k i j", positive=True, integer=True)
    a, x = sp.IndexedBase("a"), sp.IndexedBase("x")
    total = sp.Sum(a[k], (k, 1, n))
    assert latex(-total / n) == r"- \tfrac{1}{n} \sum\nolimits_{k} {a}_{k}"
    assert latex(1 - total / n) == r"1 - \tfrac{1}{n} \sum\nolimits_{k} {a}_{k}"
    assert latex(-2 * total / n) == r"- \tfrac{2}{n} \sum\nolimits_{k} {a}_{k}"
    assert latex(sp.Sum(a[k], (k, 1, sp.Symbol("m")))).startswith(r"\sum_{k=1}^{m}")
    assert latex(sp.Function("P")(i, j)) == "P_{ij}" and latex(sp.Function("f")(sp.Symbol("lambda"))) == r"f(\lambda)"
    xbar = sp.Symbol("xbar")
    assert latex(a[i] * (x[i] - xbar)) == r"{a}_{i} \left({x}_{i} - \bar{x}\right)"
    assert latex(sp.Symbol("c") ** 2 * sp.Symbol("P")) == "c^{2} P"
