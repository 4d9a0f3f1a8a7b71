"""Importing lnproofs never loads torch; importing torch_backend never loads cvxpy or sympy."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _loaded(code: str) -> set[str]:
    probe = code + "\nimport sys\nprint(' '.join(sorted(m.split('.')[0] for m in sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_import_lnproofs_does_not_import_torch():
    mods = _loaded("import lnproofs, lnproofs.cli, lnproofs.kernel.errors, lnproofs.io.arrays\n"
                   "lnproofs.cli.build_parser('recheck')")
    assert "torch" not in mods and "cvxpy" not in mods


def test_recheck_command_module_imports_torch_only_when_run():
    mods = _loaded("import lnproofs.commands.recheck")
    assert "torch" not in mods and "torch_backend" not in mods


def test_torch_backend_does_not_import_cvxpy_or_sympy():
    pytest.importorskip("torch")
    mods = _loaded("import torch_backend, torch_backend.theorems, torch_backend.certificates, "
                   "torch_backend.layers\ntorch_backend.theorems.registry()")
    assert "torch" in mods
    assert "cvxpy" not in mods and "sympy" not in mods


def test_torch_backend_package_import_is_cheap():
    mods = _loaded("import torch_backend")
    assert "torch" not in mods


def test_model_modules_leave_torch_to_torch_backend():
    """lnproofs.models reads and certifies models; every torch call lives in torch_backend."""
    import pathlib
    import re

    mods = _loaded("import lnproofs.models.loading, lnproofs.models.extract, lnproofs.models.families, "
                   "lnproofs.models.lens, lnproofs.models.head_sets, lnproofs.models.text_heads, lnproofs.models.certify_model, "
                   "lnproofs.kernel.querysets.rmsnorm, lnproofs.propose.querysets.rmsnorm")
    assert "torch" not in mods and "torch_backend" not in mods
    root = pathlib.Path(__file__).resolve().parents[1] / "lnproofs" / "models"
    offenders = [str(p.relative_to(root)) for p in root.rglob("*.py")
                 if re.search(r"^\s*(import torch\b|from torch\b|from torch\.)", p.read_text(), re.M)]
    assert offenders == []


def test_kernel_rmsnorm_imports_only_the_kernel():
    import ast
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[1] / "lnproofs" / "kernel" / "querysets" / "norm.py"
    tree = ast.parse(path.read_text())
    relative = [node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level]
    assert relative and all(node.level == 2 for node in relative)  # from ..<kernel module> import ...
    absolute = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    absolute |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and not node.level}
    assert absolute <= {"__future__", "dataclasses", "fractions", "numpy", "flint"}
