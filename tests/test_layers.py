"""The package's shape: the trusted kernel stands alone and stays small, the layers hold,
and the layer contracts really catch a wrong import."""

from __future__ import annotations

import ast
import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import lnproofs
import lnproofs.kernel

ROOT = Path(lnproofs.__file__).resolve().parent
# The kernel stays within 1,700 code lines as `ruff format` lays them out (docs/trust.md): small
# enough to audit in one sitting; growth needs a removal.
KERNEL_CODE_LINES = 1700


def _kernel_modules() -> list[str]:
    return ["lnproofs.kernel"] + [m.name for m in pkgutil.walk_packages(lnproofs.kernel.__path__, "lnproofs.kernel.")]


def _code_lines(path: Path) -> int:
    """Lines that are neither blank, comments, nor docstrings."""
    text = path.read_text(encoding="utf-8")
    docs: set[int] = set()
    for node in ast.walk(ast.parse(text)):
        body = getattr(node, "body", None)
        if (
            isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(getattr(body[0], "value", None), ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            docs.update(range(body[0].lineno, body[0].end_lineno + 1))
    return sum(
        1
        for number, line in enumerate(text.splitlines(), 1)
        if line.strip() and not line.strip().startswith("#") and number not in docs
    )


def test_importing_the_whole_kernel_loads_nothing_else_of_the_package_and_no_solver():
    code = "import sys\n" + "".join(f"import {m}\n" for m in _kernel_modules()) + "print(' '.join(sorted(sys.modules)))"
    loaded = set(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    )
    ours = {m for m in loaded if m.startswith("lnproofs.") and not m.startswith("lnproofs.kernel")}
    assert ours == set()
    solvers = {m.split(".")[0] for m in loaded} & {
        "cvxpy",
        "clarabel",
        "highspy",
        "scipy",
        "torch",
        "sympy",
        "torch_backend",
        "mpmath",
    }
    assert solvers == set()


def test_the_kernel_is_small_enough_to_audit():
    files = sorted((ROOT / "kernel").rglob("*.py"))
    total = sum(_code_lines(f) for f in files)
    assert 0 < total <= KERNEL_CODE_LINES, f"the kernel has {total} code lines"


def test_the_top_of_the_package_holds_only_the_api_and_the_command_line():
    top = sorted(p.name for p in ROOT.glob("*.py"))
    assert top == ["__init__.py", "__main__.py", "cli.py"]


def test_no_module_is_longer_than_500_lines():
    long = [
        f"{p.relative_to(ROOT.parent)} ({n} lines)"
        for base in (ROOT, ROOT.parent / "torch_backend")
        for p in base.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 500
    ]
    assert long == []


def _lint_imports() -> str | None:
    exe = Path(sys.executable).with_name("lint-imports")
    return str(exe) if exe.exists() else shutil.which("lint-imports")


@pytest.mark.skipif(_lint_imports() is None, reason="import-linter is not installed")
def test_the_layer_contracts_hold_and_catch_a_kernel_that_imports_the_search_code(tmp_path):
    project = ROOT.parent
    assert (project / "pyproject.toml").exists()
    good = subprocess.run(
        [_lint_imports(), "--config", str(project / "pyproject.toml")], cwd=project, capture_output=True, text=True
    )
    assert good.returncode == 0, good.stdout[-2000:]

    # The same tree with one wrong import in the kernel must fail the contracts.
    bad = lint_planted(tmp_path, "lnproofs/kernel/exact.py", "from ..propose import certification")
    assert bad.returncode != 0
    assert "lnproofs.kernel.exact -> lnproofs.propose.certification" in bad.stdout


def lint_planted(tmp_path, module: str, line: str):
    """``lint-imports`` on a copy of the package with ``line`` added to ``module``."""
    project = ROOT.parent
    for name in ("lnproofs", "torch_backend"):
        shutil.copytree(project / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(project / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / module
    target.write_text(target.read_text(encoding="utf-8") + f"\n{line}  # noqa\n", encoding="utf-8")
    env = {"PYTHONPATH": str(tmp_path), "PATH": str(Path(sys.executable).parent)}
    return subprocess.run(
        [_lint_imports(), "--config", str(tmp_path / "pyproject.toml"), "--no-cache"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
    )


def test_no_module_imports_itself_back_through_others():
    """No import cycle, counting imports made inside functions: dependencies point one way."""
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("lnproofs", "torch_backend")
    cycles = []
    for module in sorted(graph.modules):
        for other in graph.find_modules_directly_imported_by(module):
            if other > module and graph.chain_exists(importer=other, imported=module):
                cycles.append(f"{module} <-> {other}")
    assert cycles == []


def test_the_public_names_are_the_lazy_exports():
    assert set(lnproofs.__all__) == {"__version__", *lnproofs._EXPORTS}
    assert len(lnproofs.__all__) == len(set(lnproofs.__all__))
