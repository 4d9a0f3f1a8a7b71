"""One line means one line: library warnings never add lines to a refused run's error.

Each case is a real ``lnproofs`` process (warnings reach stderr as they would for a user),
whose command raises warnings the way numpy, torch and transformers do, then fails or succeeds.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

# runs `lnproofs derive` with its run() replaced: library warnings first, then `ENDING`
_SCRIPT = """
import sys, warnings
import numpy as np
import lnproofs.commands.derive as command
from lnproofs.cli import main
from lnproofs.kernel import OptionError

def run(args):
    warnings.warn("a library's user warning", UserWarning)
    np.float64(1.0) / np.float64(0.0)                      # numpy: RuntimeWarning, divide by zero
    warnings.warn("a library's deprecation", FutureWarning)
    {ending}

command.run = run
sys.exit(main(["derive"]))
"""


def _lnproofs_with(ending: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-c", _SCRIPT.format(ending=ending)], capture_output=True, text=True, env=env, timeout=300
    )


def test_a_refused_run_is_one_line_whatever_the_libraries_warned():
    result = _lnproofs_with('raise OptionError("--n 0 is not accepted; give n >= 2")')
    assert result.returncode == 2
    assert result.stderr == "lnproofs derive: error: --n 0 is not accepted; give n >= 2\n"


def test_an_internal_error_is_one_line_too():
    result = _lnproofs_with("raise KeyError('oops')")
    assert result.returncode == 3
    assert len(result.stderr.splitlines()) == 1 and "internal error: KeyError" in result.stderr


def test_a_run_that_succeeds_still_shows_its_warnings():
    result = _lnproofs_with("return 0")
    assert result.returncode == 0
    for text in (
        "UserWarning: a library's user warning",
        "RuntimeWarning: divide by zero",
        "FutureWarning: a library's deprecation",
    ):
        assert text in result.stderr, result.stderr


def test_a_torch_warning_reading_a_refused_file_stays_out_of_the_line(tmp_path):
    """torch warns about the pickle protocol of this .pt file, then it is refused."""
    import pickle

    path = tmp_path / "keys.pt"
    with path.open("wb") as handle:
        pickle.dump({"keys": np.zeros((2, 2))}, handle, protocol=4)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, "-m", "lnproofs", "certify", str(path), "--out", str(tmp_path / "c.json")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr
