"""One front door: outside the kernel, code imports ``lnproofs.kernel`` and the names of its
``__all__``, never one of its modules; the scan below (and the ``protected`` contract of
``lint-imports``) catch a planted import of a kernel module."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest
from test_layers import _lint_imports, lint_planted

import lnproofs.kernel as kernel

PROJECT = Path(kernel.__file__).resolve().parents[2]
KERNEL_MODULES = {p.stem for p in (PROJECT / "lnproofs" / "kernel").glob("*.py")} | {"querysets"}
# tests of the kernel's own modules, on purpose (they replace a module's function to see which path ran)
INTERNAL_TESTS = {"tests/test_dyadic.py", "tests/test_vocab_filter.py"}


def kernel_module_imports(
    root: Path, folders=("lnproofs", "torch_backend", "tests", "benchmarks", "scripts", "examples")
):
    """``path:line: statement`` for every import of a kernel module under ``root`` outside the kernel."""
    found = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root)
            if rel.parts[:2] == ("lnproofs", "kernel") or rel.as_posix() in INTERNAL_TESTS:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    modules = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    base = list(rel.parts[:-1])[: len(rel.parts) - node.level] if node.level else []
                    module = ".".join(base + ([node.module] if node.module else []))
                    modules = [module] + [f"{module}.{a.name}" for a in node.names]
                else:
                    continue
                if any(m.startswith("lnproofs.kernel.") and m.split(".")[2] in KERNEL_MODULES for m in modules):
                    found.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_nothing_outside_the_kernel_imports_one_of_its_modules():
    assert kernel_module_imports(PROJECT) == []


def test_a_planted_import_of_a_kernel_module_is_caught(tmp_path):
    for name, line in [
        ("lnproofs/models/planted.py", "from ..kernel.checker import ExactKeys\n"),
        ("lnproofs/propose/querysets/planted.py", "from ...kernel.querysets.norm import ExactLayer\n"),
        ("torch_backend/planted.py", "from lnproofs.kernel import errors\n"),
        ("tests/test_planted.py", "import lnproofs.kernel.verify\n"),
    ]:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"from lnproofs.kernel import ShapeError\n{line}", encoding="utf-8")
    found = kernel_module_imports(tmp_path)
    assert [f.split(":")[0] for f in found] == [
        "lnproofs/models/planted.py",
        "lnproofs/propose/querysets/planted.py",
        "torch_backend/planted.py",
        "tests/test_planted.py",
    ]


def test_the_front_door_declares_every_public_name_once_and_each_resolves():
    assert len(kernel.__all__) == len(set(kernel.__all__))
    for name in kernel.__all__:
        value = getattr(kernel, name)
        home = importlib.import_module(f"lnproofs.kernel.{kernel._HOMES[name]}")
        assert getattr(home, name) is value, name
    with pytest.raises(AttributeError):
        kernel.not_a_public_name  # noqa: B018


def test_importing_the_front_door_loads_no_kernel_module():
    code = "import sys, lnproofs.kernel; print(sorted(m for m in sys.modules if m.startswith('lnproofs.kernel.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.skipif(_lint_imports() is None, reason="import-linter is not installed")
def test_the_protected_contract_catches_a_kernel_module_imported_from_outside(tmp_path):
    bad = lint_planted(tmp_path, "lnproofs/models/table.py", "from ..kernel.checker import ExactKeys")
    assert bad.returncode != 0
    assert "One front door" in bad.stdout and "BROKEN" in bad.stdout
    assert "lnproofs.models.table -> lnproofs.kernel.checker" in bad.stdout
