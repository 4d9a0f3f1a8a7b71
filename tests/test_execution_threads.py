"""Worker processes keep their libraries' threads within their share of the cores."""

import os
import time

import pytest

from lnproofs.execution import cluster, run_tasks
from lnproofs.execution.threads import LIBRARY_ENVS, threads_per_worker, worker_environment


def _threads_used(item):
    """What a worker's libraries use, after torch, numpy's BLAS and a HiGHS solver ran."""
    import numpy as np
    import torch

    from lnproofs.execution.threads import thread_settings
    from lnproofs.propose.lp_rounds import LP

    torch.ones(64, 64) @ torch.ones(64, 64)
    np.ones((64, 64)) @ np.ones((64, 64))
    solver = LP()
    solver.solve(np.ones(2), np.ones((1, 2)), np.ones(1), np.full(1, np.inf), np.zeros(2), np.full(2, 9.0))
    settings = thread_settings()
    settings["highs"] = solver.solver.getOptionValue("threads")[1]
    settings["pid"] = os.getpid()
    settings["malloc_trim"] = os.environ.get("MALLOC_TRIM_THRESHOLD_")
    time.sleep(0.3)  # long enough that both workers take tasks
    return settings


def test_the_budget_divides_the_cores_among_the_workers():
    assert threads_per_worker(2, 2) == 1 and threads_per_worker(16, 2) == 8 and threads_per_worker(16, 3) == 5
    assert threads_per_worker(2, 8) == 1 and threads_per_worker(1, 1) == 1
    env = worker_environment(4)
    assert env["MALLOC_TRIM_THRESHOLD_"] is None and all(env[name] == "4" for name in LIBRARY_ENVS)


def test_two_workers_on_two_cores_use_one_thread_per_library(monkeypatch):
    pytest.importorskip("torch")
    cores = 2
    monkeypatch.setattr(cluster, "machine_workers", lambda: cores)
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    results = run_tasks(_threads_used, range(6), workers=2)
    by_worker = {r["pid"]: r for r in results}
    assert len(by_worker) == 2
    for settings in by_worker.values():
        assert settings["budget"] == 1
        assert settings["highs"] == 1  # 0 would be HiGHS's own choice: half the machine
        product = settings["torch"] * max(1, settings["blas"]) * max(1, settings["openmp"]) * settings["highs"]
        assert product * len(by_worker) <= cores, settings
        assert settings["malloc_trim"] is None  # glibc's own trimming, not Dask's 64 KiB


@pytest.mark.parametrize("road", ["process", "thread"])
def test_one_process_gives_its_forward_side_and_its_certifying_thread_half_the_cores_each(road):
    """An in-process run has two busy sides (forward passes, certification): from the model's
    loading to the end, torch and BLAS get half the cores each, on both sides, and after the
    run the settings are what they were.  Half is one thread (two or three cores): with several
    groups the forward side is then a forked worker process (Linux); more: a second thread.
    In a fresh interpreter: inside the whole suite's process, OpenBLAS was seen to ignore every
    new limit (threadpoolctl's own included) after earlier tests."""
    import json
    import subprocess
    import sys

    pytest.importorskip("torch")
    if road == "process" and not sys.platform.startswith("linux"):
        pytest.skip("the forward worker is forked on Linux only")
    probe = """
import json, os, sys, threading, numpy as np, torch
from lnproofs.execution import ExecutionContext, cluster, run_pipeline
from lnproofs.execution.threads import thread_settings
np.ones((64, 64)) @ np.ones((64, 64))
before = thread_settings()
# a share the libraries do not have already: one, or one more than they have
share = 1 if sys.argv[1] == "process" else max(2, before["torch"] + 1)
cluster.machine_workers = lambda: 2 * share
seen = []
def where():
    return ("this process" if os.getpid() == PARENT else "another process",
            "main thread" if threading.current_thread() is threading.main_thread() else "another thread")
def forward(item, model):
    np.ones((64, 64)) @ np.ones((64, 64))
    torch.ones(64, 64) @ torch.ones(64, 64)
    return [("forward", thread_settings()["torch"], thread_settings()["blas"]) + where()]
def certify(piece, state):
    seen.append(tuple(piece))
    seen.append(("certify", thread_settings()["torch"], thread_settings()["blas"]) + where())
    return piece
PARENT = os.getpid()
run_pipeline(forward, certify, ((g, [0]) for g in range(3)), context=ExecutionContext(None, 1), model=object(),
             states=[None], on_result=lambda g, j, result: None, apart=True)
print(json.dumps([share, sorted(set(seen)), thread_settings() == before]))
"""
    env = {k: v for k, v in os.environ.items() if k not in LIBRARY_ENVS}
    out = subprocess.run([sys.executable, "-c", probe, road], capture_output=True, text=True, check=True, env=env)
    share, seen, restored = json.loads(out.stdout)
    forward_at = ["another process", "another thread"] if road == "process" else ["this process", "another thread"]
    assert (
        seen == [["certify", share, share, "this process", "main thread"], ["forward", share, share, *forward_at]]
        and restored
    )


def test_a_pool_loaded_inside_the_budget_starts_at_the_budget_and_leaves_at_its_default():
    """scipy's OpenBLAS, loaded for the first time inside thread_budget, runs at the budget there
    (through the variables it reads when it loads) and at its own default after the block."""
    import json
    import subprocess
    import sys

    pytest.importorskip("scipy")
    probe = (
        "import os, json, numpy\n"
        "from threadpoolctl import threadpool_info\n"
        "from lnproofs.execution.threads import thread_budget\n"
        "def scipy_blas():\n"
        "    return [p['num_threads'] for p in threadpool_info() if 'scipy.libs' in p['filepath']]\n"
        "with thread_budget(1):\n"
        "    import scipy.linalg\n"
        "    inside = scipy_blas()\n"
        "print(json.dumps([inside, scipy_blas(), os.environ.get('OPENBLAS_NUM_THREADS'), os.cpu_count()]))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env)
    inside, after, variable, cores = json.loads(out.stdout)
    assert inside == [1] and after == [cores] and variable is None


def test_a_run_in_this_process_holds_the_collector_budget():
    """Inside a run in this process the collector's first threshold is at least 10,000 and the
    objects that existed at its start are frozen; after it, both are as before; a freeze made
    before the run is left as it was."""
    import gc

    from lnproofs.execution import ExecutionContext, run_pipeline
    from lnproofs.execution.collector import COLLECTOR_THRESHOLDS, collector_budget

    if gc.get_freeze_count():
        pytest.skip("objects of this process are frozen already")
    before, seen = gc.get_threshold(), []
    run_pipeline(
        lambda item, model: [item],
        lambda piece, state: (gc.get_threshold(), gc.get_freeze_count() > 0),
        ((g, [0]) for g in range(2)),
        context=ExecutionContext(None, 1),
        model=object(),
        states=[None],
        on_result=lambda g, j, result: seen.append(result),
    )
    inside = (max(before[0], COLLECTOR_THRESHOLDS[0]), *before[1:])
    assert seen == [(inside, True)] * 2 and gc.get_threshold() == before and gc.get_freeze_count() == 0
    gc.freeze()
    try:
        frozen, made = gc.get_freeze_count(), [{} for _ in range(1000)]  # tracked, not frozen
        with collector_budget():  # frozen objects only leave the count when they are freed
            assert gc.get_freeze_count() <= frozen and gc.get_threshold() == inside
        assert 0 < gc.get_freeze_count() <= frozen and gc.get_threshold() == before and len(made) == 1000
    finally:
        gc.unfreeze()
