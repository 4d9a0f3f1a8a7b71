"""Threads per worker process, so that the workers' threads together fit the cores.

Every library that runs threads of its own gets the same budget per process: torch's
intra-op threads (``torch.set_num_threads``; its inter-op pool serves only
``torch.jit.fork``, which nothing here calls), the BLAS and OpenMP pools that numpy, scipy
and torch load (through threadpoolctl, and the environment variables those libraries read
when they load later), and HiGHS (its ``threads`` option, read by
:mod:`lnproofs.propose.lp_rounds` through :func:`highs_threads`).  One task runs at
a time in a worker thread, and these libraries run one after another inside it, so a
worker is busy on at most its budget of cores.

The budget: the cores of the machine (this process's CPU affinity) divided among the
worker threads that share them, at least 1.  A local cluster of ``N`` single-threaded
workers on ``C`` cores gives each ``C // N``; on an existing cluster each worker divides
its own host's cores among the worker threads the scheduler lists on that host.  HiGHS
always gets one thread: the linear programs proposed here are small and dense, and HiGHS's
parallel dual simplex only pays on large sparse ones.

The environment of local worker processes (:func:`worker_environment`) also leaves glibc's
memory trimming as it is: Dask's default trims after every 64 KiB freed, which turned
most of a training worker's time into system time.
"""

from __future__ import annotations

import contextlib
import os
import sys

__all__ = [
    "BUDGET_ENV",
    "LIBRARY_ENVS",
    "threads_per_worker",
    "worker_environment",
    "limit_threads",
    "thread_budget",
    "highs_threads",
    "thread_settings",
]

#: the environment variable holding this process's budget (set by :func:`limit_threads`)
BUDGET_ENV = "LNPROOFS_THREADS"
#: what OpenMP, MKL, OpenBLAS and numexpr read when they load after the budget is set
LIBRARY_ENVS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS")


def threads_per_worker(cores: int, worker_threads: int) -> int:
    """The budget of one worker thread when ``worker_threads`` share ``cores``: at least 1."""
    return max(1, int(cores) // max(1, int(worker_threads)))


def worker_environment(threads: int) -> dict:
    """The environment a local worker process starts with (Dask's ``distributed.nanny.
    pre-spawn-environ``): the libraries' thread variables at the budget, and
    ``MALLOC_TRIM_THRESHOLD_`` unset (None).  Dask sets that one to 64 KiB, which also fixes
    glibc's mmap threshold at 128 KiB: every tensor or array above it is then mapped and
    unmapped on each use, and the kernel zeroes its pages again each time.  Training a
    Majority model in such a worker spent 9.6 s of system time against 15 s of user time;
    with glibc's own adaptive thresholds, 0.7 s (``docs/scaling.md``)."""
    return {"MALLOC_TRIM_THRESHOLD_": None, **{name: str(max(1, int(threads))) for name in LIBRARY_ENVS}}


def limit_threads(count: int) -> None:
    """Hold this process's libraries to ``count`` threads each (see the module docstring)."""
    count = max(1, int(count))
    os.environ[BUDGET_ENV] = str(count)
    for name in LIBRARY_ENVS:
        os.environ[name] = str(count)
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=count)  # the pools loaded now; kept for the process
    torch = sys.modules.get("torch")
    if torch is not None:  # else torch reads OMP_NUM_THREADS when imported
        torch.set_num_threads(count)


@contextlib.contextmanager
def thread_budget(count: int):
    """Hold torch's intra-op threads and the BLAS and OpenMP pools to ``count`` inside the block,
    and give back what they had after it: for a process whose own threads share the cores (the
    forward thread of an in-process run beside the certifying one), where :func:`limit_threads`
    is for a worker process's whole life.  A pool loaded inside the block (scipy's OpenBLAS on a
    solver's first import, say) starts at ``count`` too, through the variables it reads when it
    loads, and leaves the block at the count those variables gave before (the cores when unset)."""
    from threadpoolctl import ThreadpoolController, threadpool_limits

    count = max(1, int(count))
    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else None
    saved = {name: os.environ.get(name) for name in LIBRARY_ENVS}
    loaded = {lib.filepath for lib in ThreadpoolController().lib_controllers}
    os.environ.update({name: str(count) for name in LIBRARY_ENVS})
    try:
        with threadpool_limits(limits=count):
            if torch is not None:
                torch.set_num_threads(count)
            try:
                yield
            finally:
                if torch is not None:
                    torch.set_num_threads(before)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name)
            else:
                os.environ[name] = value
        for lib in ThreadpoolController().lib_controllers:
            if lib.filepath not in loaded:
                env = saved["OMP_NUM_THREADS" if lib.user_api == "openmp" else "OPENBLAS_NUM_THREADS"]
                lib.set_num_threads(int(env) if env else os.cpu_count() or 1)


def highs_threads() -> int:
    """The ``threads`` option for HiGHS solvers: 1 (see the module docstring)."""
    return 1


def thread_settings() -> dict:
    """What this process's libraries use now: ``{"budget", "torch", "blas", "openmp", "highs"}``
    (``torch`` None when torch is not imported; ``blas``/``openmp`` the largest pool of that
    kind loaded, 0 when none is)."""
    from threadpoolctl import threadpool_info

    pools = threadpool_info()
    torch = sys.modules.get("torch")
    budget = os.environ.get(BUDGET_ENV)
    return {
        "budget": int(budget) if budget else None,
        "torch": torch.get_num_threads() if torch is not None else None,
        "blas": max((p["num_threads"] for p in pools if p["user_api"] == "blas"), default=0),
        "openmp": max((p["num_threads"] for p in pools if p["user_api"] == "openmp"), default=0),
        "highs": highs_threads(),
    }
