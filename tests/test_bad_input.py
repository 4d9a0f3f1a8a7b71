"""Every bad input gets one clear line on stderr, exit status 2, and no traceback."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import bad_inputs


def _all_cases():
    cases = []
    for info in sorted(pkgutil.iter_modules(bad_inputs.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"bad_inputs.{info.name}")
        for case_id, make_argv, fragment in module.CASES:
            cases.append(pytest.param(make_argv, fragment, id=f"{info.name}:{case_id}"))
    return cases


@pytest.mark.parametrize("make_argv, fragment", _all_cases())
def test_bad_input_is_one_clear_line(cli, tmp_path, make_argv, fragment):
    result = cli(make_argv(tmp_path))
    assert result.status == 2, (result.status, result.err, result.out)
    assert "Traceback" not in result.err
    lines = [line for line in result.err.splitlines() if line.strip() and not line.startswith("usage:")]
    assert len(lines) >= 1
    message = lines[-1]
    assert fragment.lower() in message.lower(), message
