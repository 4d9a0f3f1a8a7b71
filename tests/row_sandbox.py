"""Run rows of ``tests/bad_inputs/`` in child processes bounded in address space and in time.

A row that makes a reader allocate gigabytes or loop must fail here, in CI, and not pass on a
machine with memory to spare.  Starting a fresh interpreter per row would cost an import of
numpy, torch and the package each time, so one *zygote* process imports them once and forks a
child per row: the child lowers its address-space limit (``RLIMIT_AS``: the zygote's own size
plus ``BUDGET`` bytes), writes the row's files, runs ``lnproofs`` in-process with standard
input at end-of-file and file descriptors 1 and 2 captured (so output of C and Rust code counts
too) and reports its exit status; the zygote kills a child still running after ``TIMEOUT`` seconds.  A child killed by a
signal or past its time gives status ``-signal`` or ``"timeout"``, which no row accepts.

:class:`Sandbox` is the test side: ``Sandbox().run(module, case_id, tmp_path)`` gives
``(status, out, err)``.  It needs ``os.fork`` and ``/proc`` (Linux); elsewhere
:func:`available` is False and the rows run in-process.
"""

from __future__ import annotations

import importlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

BUDGET = 2 << 30  # bytes of address space a row may add to the zygote's
TIMEOUT = 90.0  # seconds of wall-clock time a row may take
_PRELOAD = (
    "numpy",
    "flint",
    "scipy",
    "sympy",
    "cvxpy",
    "torch",
    "safetensors",
    "transformers",
    "tokenizers",
    "pyarrow",
    "pyarrow.parquet",
    "lnproofs.cli",
    "lnproofs.propose.certification",
    "lnproofs.certificates.check",
)
_QUIET = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "MALLOC_ARENA_MAX": "2",
    "TOKENIZERS_PARALLELISM": "false",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_OFFLINE": "1",
}


def available() -> bool:
    return hasattr(os, "fork") and Path("/proc/self/statm").exists() and sys.platform.startswith("linux")


def _address_space() -> int:
    pages = int(Path("/proc/self/statm").read_text().split()[0])
    return pages * os.sysconf("SC_PAGE_SIZE")


def _child(module: str, case_id: str, tmp: str, result: str) -> None:
    """In the forked child: limit, run the row, write ``{"status": ...}`` to ``result``."""
    import resource

    limit = _address_space() + BUDGET
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    out_path, err_path = Path(tmp + ".row") / "out", Path(tmp + ".row") / "err"
    for fd, path in ((1, out_path), (2, err_path)):
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(handle, fd)
        os.close(handle)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)  # never the zygote's requests: a prompt reads end-of-file
    sys.stdin = open(0, encoding="utf-8", closefd=False)
    sys.stdout = open(1, "w", encoding="utf-8", errors="replace", closefd=False, buffering=1)
    sys.stderr = open(2, "w", encoding="utf-8", errors="replace", closefd=False, buffering=1)
    status = 3
    try:
        rows = importlib.import_module(f"bad_inputs.{module}").CASES
        make_argv = next(make for cid, make, _ in rows if cid == case_id)
        argv = [str(a) for a in make_argv(Path(tmp))]
        from lnproofs.cli import main

        try:
            status = main(argv)
        except SystemExit as exc:  # argparse errors and --help
            status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    except BaseException as exc:  # the row's own setup failed: reported as such
        print(f"row setup failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        status = 99
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        Path(result).write_text(json.dumps({"status": status}))
        os._exit(0)


def _wait(pid: int, timeout: float):
    """The child's wait status, or None after killing it at ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    pidfd = os.pidfd_open(pid) if hasattr(os, "pidfd_open") else None
    try:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return status
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return None
            if pidfd is not None:
                select.select([pidfd], [], [], left)
            else:
                time.sleep(min(left, 0.01))
    finally:
        if pidfd is not None:
            os.close(pidfd)


def serve() -> None:
    """The zygote: preload, then answer one JSON request per line on stdin."""
    reply = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # stray prints of the preloaded libraries stay out
    for name in _PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:  # optional packages: the rows that need them are skipped elsewhere
            pass
    import pkgutil

    import bad_inputs

    import lnproofs
    import torch_backend

    for package in (lnproofs, torch_backend, bad_inputs):  # every module once, not once per row
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            if info.name.endswith("__main__"):
                continue
            try:
                importlib.import_module(info.name)
            except Exception:
                pass
    try:  # transformers imports each model class on first use
        import transformers

        from lnproofs.models.families import FAMILIES

        for family in FAMILIES.values():
            getattr(transformers, family.model_class)
            getattr(transformers, family.config_class)
        transformers.AutoTokenizer, transformers.PreTrainedTokenizerFast  # noqa: B018
    except Exception:
        pass
    import gc

    gc.collect()
    gc.freeze()  # the children's collections leave the preloaded objects alone (no copy-on-write)
    reply.write("ready\n")
    for line in sys.stdin:
        request = json.loads(line)
        result = Path(request["tmp"] + ".row") / "result.json"
        pid = os.fork()
        if pid == 0:
            _child(request["module"], request["case"], request["tmp"], str(result))
        started = time.monotonic()
        status = _wait(pid, request.get("timeout", TIMEOUT))
        answer = {"seconds": round(time.monotonic() - started, 3)}
        if status is None:
            answer["status"] = "timeout"
        elif os.WIFSIGNALED(status):
            answer["status"] = -os.WTERMSIG(status)
        else:
            try:
                answer["status"] = json.loads(result.read_text())["status"]
            except (OSError, ValueError):
                answer["status"] = "no result"
        reply.write(json.dumps(answer) + "\n")


class Sandbox:
    """The zygote, started on first use; ``run`` gives ``(status, out, err)`` of one row."""

    def __init__(self):
        env = dict(os.environ, **_QUIET)
        tests = str(Path(__file__).resolve().parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (tests, env.get("PYTHONPATH", "")) if p)
        self._proc = subprocess.Popen(
            [sys.executable, "-c", "import row_sandbox; row_sandbox.serve()"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        ready = self._proc.stdout.readline()
        if ready.strip() != "ready":
            raise RuntimeError(f"the row sandbox did not start ({ready!r})")

    def run(self, module: str, case_id: str, tmp_path: Path, timeout: float = TIMEOUT):
        request = {"module": module, "case": case_id, "tmp": str(tmp_path), "timeout": timeout}
        capture = Path(f"{tmp_path}.row")
        capture.mkdir(exist_ok=True)
        self._proc.stdin.write(json.dumps(request) + "\n")
        self._proc.stdin.flush()
        answer = json.loads(self._proc.stdout.readline() or '{"status": "sandbox died"}')
        read = lambda name: (
            (capture / name).read_text(encoding="utf-8", errors="replace") if (capture / name).exists() else ""
        )  # noqa: E731
        return answer["status"], read("out"), read("err")

    def close(self) -> None:
        self._proc.stdin.close()
        self._proc.wait(timeout=30)
