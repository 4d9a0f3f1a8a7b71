"""Every ``--json`` output of every command is valid JSON on standard output alone.

The commands run in a child process so that anything written straight to file
descriptor 1 (a solver's banner printed by compiled code) is caught too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(args, cwd):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run(
        [sys.executable, "-m", "lnproofs.cli", *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return done


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("json-outputs")
    np.save(root / "keys.npy", np.random.default_rng(0).normal(size=(30, 4)))
    np.save(root / "gain.npy", np.array([1.0, 2.0, 3.0]))
    (root / "answers.json").write_text('{"answers": {}}', encoding="utf-8")
    return root


CASES = {
    "certify": lambda r: ["certify", r / "keys.npy", "--json", "--out", r / "cert.json"],
    "check": lambda r: ["check", r / "cert.json", r / "keys.npy", "--json"],
    "uniform": lambda r: ["uniform", r / "keys.npy", "--json"],
    "attention-weight": lambda r: [
        "attention-weight",
        r / "keys.npy",
        "--target",
        "0",
        "--max-weight",
        "--query-ball",
        "2",
        "--json",
    ],
    "ellipsoid": lambda r: ["ellipsoid", "--gain", r / "gain.npy", "--json"],
    "derive": lambda r: ["derive", "--n", "3", "--name", "attention.demo_threshold", "--json"],
    "recheck": lambda r: [
        "recheck",
        "--only",
        "attention.demo_threshold",
        "--samples",
        "16",
        "--device",
        "cpu",
        "--json",
    ],
    "homework new": lambda r: ["homework", "new", "--out", r / "hw", "--no-pdf", "--json"],
    "homework check": lambda r: ["homework", "check", "--problems", r / "hw", r / "answers.json", "--json"],
}


@pytest.mark.parametrize("name", list(CASES))
def test_json_output_parses(files, name):
    if name == "check" and not (files / "cert.json").exists():
        _run(CASES["certify"](files), files)
    if name == "homework check" and not (files / "hw").exists():
        _run(CASES["homework new"](files), files)
    done = _run(CASES[name](files), files)
    assert done.returncode == 0, done.stderr
    json.loads(done.stdout)  # the whole of stdout, nothing before or after the JSON
