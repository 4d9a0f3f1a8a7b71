"""Importing lnproofs never loads torch; importing torch_backend never loads cvxpy or sympy; the kernel
imports only what an allow-list names; scipy.optimize stays inside the proposers."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _loaded(code: str) -> set[str]:
    probe = code + "\nimport sys\nprint(' '.join(sorted(m.split('.')[0] for m in sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_import_lnproofs_does_not_import_torch():
    mods = _loaded(
        "import lnproofs, lnproofs.cli, lnproofs.kernel, lnproofs.io.arrays\nlnproofs.cli.build_parser('recheck')"
    )
    assert "torch" not in mods and "cvxpy" not in mods


def test_recheck_command_module_imports_torch_only_when_run():
    mods = _loaded("import lnproofs.commands.recheck")
    assert "torch" not in mods and "torch_backend" not in mods


def test_torch_backend_does_not_import_cvxpy_or_sympy():
    pytest.importorskip("torch")
    mods = _loaded(
        "import torch_backend, torch_backend.theorems, torch_backend.certificates, "
        "torch_backend.layers\ntorch_backend.theorems.registry()"
    )
    assert "torch" in mods
    assert "cvxpy" not in mods and "sympy" not in mods


def test_torch_backend_package_import_is_cheap():
    mods = _loaded("import torch_backend")
    assert "torch" not in mods


def test_model_modules_leave_torch_to_torch_backend():
    """lnproofs.models reads and certifies models; every torch call lives in torch_backend."""
    import pathlib
    import re

    mods = _loaded(
        "import lnproofs.models.loading, lnproofs.models.extract, lnproofs.models.families, "
        "lnproofs.models.lens, lnproofs.models.head_sets, lnproofs.models.text_heads, lnproofs.models.certify_model, "
        "lnproofs.propose.querysets.rmsnorm, lnproofs.kernel\nlnproofs.kernel.RMSNormQuerySet"
    )
    assert "torch" not in mods and "torch_backend" not in mods
    root = pathlib.Path(__file__).resolve().parents[1] / "lnproofs" / "models"
    offenders = [
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if re.search(r"^\s*(import torch\b|from torch\b|from torch\.)", p.read_text(), re.M)
    ]
    assert offenders == []


# ---- contracts that allow: the kernel's imports, scipy.optimize, start-up without torch ----

import ast  # noqa: E402
import pathlib  # noqa: E402
import shutil  # noqa: E402

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "lnproofs"
#: what the trusted kernel may import, besides itself: the standard library, numpy and python-flint
KERNEL_ALLOWED = frozenset(sys.stdlib_module_names) | {"numpy", "flint"}


def _imports(path: pathlib.Path):
    """``(level, module)`` of every import in a file, at any depth (``from . import x`` gives ``(1, "x")``)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((0, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.module:
                yield node.level, node.module
            else:
                yield from ((node.level, alias.name) for alias in node.names)


def kernel_imports_outside_the_allow_list(kernel: pathlib.Path) -> list[str]:
    """Every import of a module under ``kernel`` that is neither the kernel itself (relative, not
    climbing out of it, or absolute ``lnproofs.kernel``) nor in :data:`KERNEL_ALLOWED`."""
    bad = []
    for path in sorted(kernel.rglob("*.py")):
        depth = len(path.relative_to(kernel).parts) - 1  # 0: kernel/x.py, 1: kernel/querysets/x.py
        for level, module in _imports(path):
            inside = (
                level - 1 <= depth if level else module == "lnproofs.kernel" or module.startswith("lnproofs.kernel.")
            )
            if not inside and (level or module.split(".")[0] not in KERNEL_ALLOWED):
                bad.append(f"{path.relative_to(kernel)}: {'.' * level}{module}")
    return bad


def test_the_kernel_imports_only_the_standard_library_numpy_flint_and_itself():
    assert kernel_imports_outside_the_allow_list(PACKAGE / "kernel") == []


def test_the_kernel_allow_list_catches_a_kernel_that_imports_pyarrow_or_matplotlib(tmp_path):
    kernel = tmp_path / "kernel"
    shutil.copytree(PACKAGE / "kernel", kernel, ignore=shutil.ignore_patterns("__pycache__"))
    exact = kernel / "exact.py"
    exact.write_text(exact.read_text(encoding="utf-8") + "\nimport pyarrow  # noqa\n", encoding="utf-8")
    norm = kernel / "querysets" / "norm.py"
    norm.write_text(
        norm.read_text(encoding="utf-8") + "\n\ndef _plot():\n    from matplotlib import pyplot\n"
        "    from ...models import loading\n    return pyplot, loading\n",
        encoding="utf-8",
    )
    assert kernel_imports_outside_the_allow_list(kernel) == [
        "exact.py: pyarrow",
        "querysets/norm.py: matplotlib",
        "querysets/norm.py: ...models",
    ]


def scipy_optimize_outside_the_proposers(root: pathlib.Path) -> list[str]:
    """Imports of ``scipy.optimize`` (``import scipy.optimize``, ``from scipy.optimize import ...``,
    ``from scipy import optimize``) in ``root/lnproofs`` outside ``propose/``, or in ``root/torch_backend``."""
    bad = []
    for path in sorted([*(root / "lnproofs").rglob("*.py"), *(root / "torch_backend").rglob("*.py")]):
        if path.is_relative_to(root / "lnproofs" / "propose"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            if any(n == "scipy.optimize" or n.startswith("scipy.optimize.") for n in names):
                bad.append(str(path.relative_to(root)))
    return bad


def test_scipy_optimize_is_imported_only_by_the_proposers(tmp_path):
    root = PACKAGE.parent
    assert scipy_optimize_outside_the_proposers(root) == []
    for name in ("lnproofs", "torch_backend"):
        shutil.copytree(root / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    table = tmp_path / "lnproofs" / "models" / "table.py"
    table.write_text(
        table.read_text(encoding="utf-8") + "\n\ndef _fit():\n    from scipy import optimize\n    return optimize\n",
        encoding="utf-8",
    )
    assert scipy_optimize_outside_the_proposers(tmp_path) == ["lnproofs/models/table.py"]


@pytest.mark.parametrize("argv", [["--help"], ["check", "--help"], ["certify-model", "--help"], []])
def test_starting_the_command_line_loads_no_torch_and_no_solver(argv):
    """What ``lnproofs`` loads to start and show its help: never torch or torch_backend (they load
    when a command runs a model), and no solver."""
    code = (
        f"import lnproofs.cli\ntry:\n    lnproofs.cli.main({argv!r})\nexcept SystemExit:\n    pass\n"
        "import sys\nprint('\\n' + ' '.join(sorted(sys.modules)))"
    )
    loaded = set(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        .stdout.splitlines()[-1]
        .split()
    )
    assert "lnproofs.cli" in loaded
    assert {m.split(".")[0] for m in loaded} & {"torch", "torch_backend", "cvxpy", "highspy", "sympy"} == set()
