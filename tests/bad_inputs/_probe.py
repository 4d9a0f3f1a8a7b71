"""Rows that test the sandbox itself (``tests/test_bad_input.py``), not lnproofs: a leading
underscore keeps this module out of the table of bad inputs."""

import time


def _allocate(tmp_path):
    import row_sandbox

    block = bytearray(row_sandbox.BUDGET + (1 << 30))  # past the budget: MemoryError in the sandbox
    return ["certify", tmp_path / f"nothere{len(block)}.npy"]


def _sleep(tmp_path):
    time.sleep(60)
    return ["certify", tmp_path / "nothere.npy"]


CASES = [
    ("allocate", _allocate, "does not exist"),
    ("sleep", _sleep, "does not exist"),
    ("small", lambda tmp_path: ["certify", tmp_path / "nothere.npy"], "does not exist"),
]


def _read_stdin(tmp_path):
    import sys

    assert sys.stdin.read() == ""  # end-of-file at once, not the sandbox's requests
    return ["certify", tmp_path / "nothere.npy"]


CASES.append(("stdin", _read_stdin, "does not exist"))
