"""Every bad input gets one clear line on stderr, exit status 2, and no traceback.

Each row runs in a child process whose address space and time are bounded
(``tests/row_sandbox.py``: ``BUDGET`` bytes beyond the preloaded libraries, ``TIMEOUT``
seconds), so a reader that allocates without bound or never ends fails here.  Where the
sandbox cannot run (no ``fork`` or ``/proc``), or with ``LNPROOFS_ROWS_IN_PROCESS=1`` (to debug
a row), rows run in-process through the ``cli`` fixture.
"""

from __future__ import annotations

import importlib
import os
import pkgutil

import bad_inputs
import pytest
import row_sandbox


def _all_cases():
    cases = []
    for info in sorted(pkgutil.iter_modules(bad_inputs.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"bad_inputs.{info.name}")
        ids = [case_id for case_id, _, _ in module.CASES]
        assert len(ids) == len(set(ids)), f"bad_inputs/{info.name}.py repeats a case id"
        for case_id, make_argv, fragment in module.CASES:
            cases.append(pytest.param(info.name, case_id, make_argv, fragment, id=f"{info.name}:{case_id}"))
    return cases


@pytest.fixture(scope="module")
def sandbox():
    if not row_sandbox.available() or os.environ.get("LNPROOFS_ROWS_IN_PROCESS"):
        yield None
        return
    box = row_sandbox.Sandbox()
    yield box
    box.close()


@pytest.mark.parametrize("module, case_id, make_argv, fragment", _all_cases())
def test_bad_input_is_one_clear_line(sandbox, cli, tmp_path, module, case_id, make_argv, fragment):
    if sandbox is None:
        result = cli(make_argv(tmp_path))
        status, out, err = result.status, result.out, result.err
    else:
        status, out, err = sandbox.run(module, case_id, tmp_path)
    assert status == 2, (status, err[-3000:], out[-1000:])
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("usage:")]
    assert len(lines) >= 1
    message = lines[-1]
    assert fragment.lower() in message.lower(), message


def test_the_sandbox_stops_a_row_past_its_memory_or_its_time(sandbox, tmp_path):
    """The bounds are real: a row that allocates past the budget fails, one that sleeps is stopped,
    and the sandbox goes on answering."""
    if sandbox is None:
        pytest.skip("the rows run in-process here (no fork or /proc, or LNPROOFS_ROWS_IN_PROCESS)")
    for name, timeout, expected in (
        ("allocate", row_sandbox.TIMEOUT, None),
        ("sleep", 2, "timeout"),
        ("stdin", 10, 2),
        ("small", row_sandbox.TIMEOUT, 2),
    ):
        (tmp_path / name).mkdir()
        status, _, err = sandbox.run("_probe", name, tmp_path / name, timeout=timeout)
        if expected is None:
            assert status not in (0, 2), (status, err)  # MemoryError while writing the row's files
        else:
            assert status == expected, (status, err)
