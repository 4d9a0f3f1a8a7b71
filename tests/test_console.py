"""The ``lnproofs`` program (``lnproofs.cli.console``): its collector thresholds, main's exit
status, then an exit that does not walk every object again (the objects are frozen first), and
nothing written is lost."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import numpy as np
import pytest

import lnproofs.cli as cli
from lnproofs.execution.collector import COLLECTOR_THRESHOLDS

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("status", [0, 1, 2, 3])
def test_console_exits_with_mains_status_after_freezing(monkeypatch, status):
    calls = []
    monkeypatch.setattr(cli, "main", lambda argv=None: calls.append(("main", argv, gc.get_threshold())) or status)
    monkeypatch.setattr(gc, "freeze", lambda: calls.append(("freeze",)))
    monkeypatch.setattr(gc, "set_threshold", lambda *t: calls.append(("threshold", t)))
    with pytest.raises(SystemExit) as stop:
        cli.console(["derive"])
    assert stop.value.code == status
    assert calls == [("threshold", COLLECTOR_THRESHOLDS), ("main", ["derive"], gc.get_threshold()), ("freeze",)]


def test_the_program_runs_with_its_collector_thresholds():
    """In a real ``lnproofs`` process, the command runs under :data:`COLLECTOR_THRESHOLDS`."""
    probe = (
        "import gc, sys\n"
        "import lnproofs.cli as cli\n"
        "cli.main = lambda argv=None: print(list(gc.get_threshold())) or 0\n"
        "cli.console([])\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0 and json.loads(out.stdout) == list(COLLECTOR_THRESHOLDS) != list(gc.get_threshold())


def test_the_installed_program_and_python_m_run_console():
    scripts = {e.name: e.value for e in entry_points(group="console_scripts") if e.name == "lnproofs"}
    assert scripts == {"lnproofs": "lnproofs.cli:console"}
    assert "console()" in (ROOT / "lnproofs" / "__main__.py").read_text(encoding="utf-8")


def test_a_real_run_ends_with_its_files_whole(tmp_path):
    """The certificate written just before the frozen exit is complete and checks."""
    keys = tmp_path / "keys.npy"
    np.save(keys, np.random.default_rng(3).standard_normal((40, 5)))
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    run = lambda *argv: subprocess.run(
        [sys.executable, "-m", "lnproofs", *map(str, argv)],
        env=env,  # noqa: E731
        capture_output=True,
        text=True,
        timeout=600,
    )
    made = run("certify", keys, "--out", tmp_path / "c.json")
    assert made.returncode == 0, made.stderr
    certificate = json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))
    assert sum(certificate["counts"].values()) == 40 and certificate["n_keys"] == 40
    checked = run("check", tmp_path / "c.json")
    assert checked.returncode == 0, checked.stderr
