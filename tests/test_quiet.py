"""No solver banner ever reaches the terminal, and --quiet leaves only warnings and errors.

HiGHS prints its banner from C code, once per process, when its first solver is created;
so these tests run ``lnproofs`` in a fresh process and read what reaches its file
descriptors 1 and 2.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
BANNER = ("HiGHS", "Copyright", "Running", "THIRD_PARTY")


def _lnproofs(*argv, cwd):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run(
        [sys.executable, "-m", "lnproofs", *map(str, argv)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _no_banner(result):
    for word in BANNER:
        assert word not in result.stderr and word not in result.stdout, (word, result.stderr[-2000:])


def _lp_keys(path):
    """Keys whose certification goes through HiGHS rounds: many keys inside the hull in d = 6."""
    rng = np.random.default_rng(5)
    np.save(path, rng.standard_normal((400, 6)))
    return path


def test_the_lp_proposer_is_used_here(tmp_path):
    """The test below could fail: certifying these keys creates a HiGHS solver."""
    from lnproofs.propose import lp_rounds

    made = []
    original = lp_rounds.LP.__init__

    def spy(self):
        made.append(1)
        original(self)

    keys = np.load(_lp_keys(tmp_path / "keys.npy"))
    from lnproofs import certify

    lp_rounds.LP.__init__ = spy
    try:
        certify(keys)
    finally:
        lp_rounds.LP.__init__ = original
    assert made


def test_certify_prints_no_solver_banner(tmp_path):
    keys = _lp_keys(tmp_path / "keys.npy")
    result = _lnproofs("certify", keys, "--out", tmp_path / "c.json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    _no_banner(result)
    assert result.stderr == ""  # not a terminal, no --progress: no bar either
    shown = _lnproofs("certify", keys, "--out", tmp_path / "d.json", "--progress", cwd=tmp_path)
    _no_banner(shown)
    assert "certify" in shown.stderr and "key" in shown.stderr  # asked for: the tqdm bar


@pytest.mark.slow
def test_certify_model_quiet_on_a_tiny_gpt2(tmp_path):
    from bad_inputs.models import tiny_gpt2

    tiny_gpt2(tmp_path / "gpt2", layers=2, heads=2, width=16)
    np.save(tmp_path / "ids.npy", np.random.default_rng(0).integers(0, 40, size=(1, 20)))
    quiet = _lnproofs(
        "certify-model",
        tmp_path / "gpt2",
        "--tokens",
        tmp_path / "ids.npy",
        "--out",
        tmp_path / "o",
        "--quiet",
        cwd=tmp_path,
    )
    assert quiet.returncode == 0, quiet.stderr
    _no_banner(quiet)
    assert quiet.stderr.strip() == "", quiet.stderr
    shown = _lnproofs(
        "certify-model",
        tmp_path / "gpt2",
        "--tokens",
        tmp_path / "ids.npy",
        "--out",
        tmp_path / "p",
        "--progress",
        cwd=tmp_path,
    )
    assert shown.returncode == 0, shown.stderr
    _no_banner(shown)
    assert "certify-model" in shown.stderr
