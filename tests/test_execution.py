"""The execution layer: options, order of results, shared data, and a worker killed mid-run."""

from __future__ import annotations

import os
import signal
import time

import pytest

from lnproofs.execution import InOrder, Load, open_client, resolve_workers, run_tasks, share
from lnproofs.kernel import OptionError


def _square_plus(item, shared=None):
    offset = 0 if shared is None else int(shared["offset"])
    return item * item + offset


def _slow_logged(item, shared):
    """Write 'start' and 'end' lines with this process's id, so the test can see a task
    that started on a worker which then died."""
    path = shared["log"]
    with open(path, "a", encoding="utf-8") as log:
        log.write(f"start {item} {os.getpid()}\n")
    time.sleep(0.25)
    with open(path, "a", encoding="utf-8") as log:
        log.write(f"end {item} {os.getpid()}\n")
    return _value(item)


def _value(item):
    return (item, sum(i * i for i in range(item * 1000)))


def _fails_on_three(item):
    if item == 3:
        raise OptionError("item 3 is not accepted")
    return item


@pytest.mark.parametrize(
    "workers, fragment", [(0, "--workers 0"), (-2, "--workers -2"), ("two", "whole number"), (True, "whole number")]
)
def test_bad_worker_counts_are_one_line(workers, fragment):
    with pytest.raises(OptionError, match=fragment):
        resolve_workers(workers)


def test_worker_rules():
    assert resolve_workers(None, worthwhile=False) == 1
    assert resolve_workers(None) >= 1
    assert resolve_workers("3") == 3
    assert resolve_workers(None, "tcp://127.0.0.1:8786") is None
    with pytest.raises(OptionError, match="cannot be combined"):
        resolve_workers(2, "tcp://127.0.0.1:8786")
    with pytest.raises(OptionError, match="--scheduler"):
        resolve_workers(None, "  ")


def test_in_process_results_in_order_and_reported_as_they_come():
    seen = []
    results = run_tasks(
        _square_plus, range(6), workers=1, shared={"offset": 5}, on_result=lambda i, r: seen.append((i, r))
    )
    assert results == [i * i + 5 for i in range(6)]
    assert seen == list(enumerate(results))
    assert run_tasks(_square_plus, range(6), workers=1, shared=Load(dict, {"offset": 5})) == results


def test_one_worker_starts_no_cluster():
    with open_client(1) as ctx:
        assert ctx.in_process and ctx.client is None
    with open_client(None, worthwhile=False) as ctx:
        assert ctx.in_process


def test_a_local_clusters_results_come_from_their_workers_directly():
    """Results are fetched from the worker that holds them: relayed by the scheduler, which runs
    in this process, each crossed this process's loopback twice (a MiniLM corpus on two workers:
    429 MB sent by this process, against 2 MB fetched directly)."""
    with open_client(2) as ctx:
        assert ctx.client.direct_to_workers is True
        assert ctx.client.submit(_square_plus, 3).result() == 9


def test_in_order_holds_early_results():
    seen = []
    hand = InOrder(lambda i, r: seen.append(i))
    for index in (2, 0, 3, 1, 4):
        hand(index, None)
    assert seen == [0, 1, 2, 3, 4]


def test_unreachable_scheduler_is_one_line():
    with pytest.raises(OptionError, match="cannot reach the Dask scheduler at --scheduler tcp://127.0.0.1:9"):
        run_tasks(_square_plus, [1, 2], scheduler="tcp://127.0.0.1:9")


def test_thread_cluster_gives_in_process_results_and_task_errors_propagate():
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as cl,
        distributed.Client(cl, set_as_default=False) as client,
    ):
        from lnproofs.execution import ExecutionContext

        ctx = ExecutionContext(client, 2)
        seen = {}
        results = run_tasks(
            _square_plus, range(20), context=ctx, shared={"offset": 1}, on_result=lambda i, r: seen.setdefault(i, r)
        )
        assert results == run_tasks(_square_plus, range(20), workers=1, shared={"offset": 1})
        assert seen == dict(enumerate(results))
        loaded = run_tasks(_square_plus, range(20), context=ctx, shared=Load(dict, {"offset": 1}))
        assert loaded == results
        once = share(ctx, {"offset": 1})
        assert run_tasks(_square_plus, range(20), context=ctx, shared=once) == results
        assert run_tasks(_square_plus, range(5), context=ctx, shared=once) == results[:5]
        with pytest.raises(OptionError, match="item 3"):
            run_tasks(_fails_on_three, range(8), context=ctx)


def test_killed_worker_costs_only_a_retry(tmp_path):
    distributed = pytest.importorskip("distributed")
    log = tmp_path / "log.txt"
    items = list(range(12))
    expected = [_value(i) for i in items]
    killed = []
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=50
        ) as cl,
        distributed.Client(cl, set_as_default=False) as client,
    ):
        from lnproofs.execution import ExecutionContext

        pids = client.run(os.getpid)

        def kill_once(index, result):
            if killed:
                return
            # kill the worker that is running some task other than the one just finished
            for line in log.read_text().splitlines():
                state, item, pid = line.split()
                if state == "start" and int(item) != index and int(pid) in pids.values():
                    ends = f"end {item} {pid}"
                    if ends not in log.read_text():
                        os.kill(int(pid), signal.SIGKILL)
                        killed.append(int(pid))
                        return

        results = run_tasks(
            _slow_logged, items, context=ExecutionContext(client, 2), shared={"log": str(log)}, on_result=kill_once
        )
    assert killed, "no worker was running a task when the first result came back"
    assert results == expected
    lines = log.read_text().splitlines()
    started_on_dead = {line.split()[1] for line in lines if line.startswith("start") and line.endswith(f" {killed[0]}")}
    ended_on_dead = {line.split()[1] for line in lines if line.startswith("end") and line.endswith(f" {killed[0]}")}
    lost = started_on_dead - ended_on_dead
    assert lost, "the killed worker had no task in flight"
    ended_elsewhere = {
        line.split()[1] for line in lines if line.startswith("end") and not line.endswith(f" {killed[0]}")
    }
    assert lost <= ended_elsewhere  # the lost task was run again by a living worker


def test_version_probe_runs_where_lnproofs_cannot_be_imported():
    cloudpickle = pytest.importorskip("cloudpickle")
    import subprocess
    import sys

    from lnproofs.execution.cluster import _probe_factory

    payload = cloudpickle.dumps(_probe_factory())
    code = "import sys, pickle; sys.modules['lnproofs'] = None; print(pickle.loads(sys.stdin.buffer.read())()[0])"
    out = subprocess.run([sys.executable, "-c", code], input=payload, capture_output=True, check=True)
    assert out.stdout.decode().strip() == "missing"


class _FakeClient:
    """Stands in for a client whose workers answer the version probe with ``answers``."""

    def __init__(self, answers):
        self.answers = answers

    def scheduler_info(self):
        return {"workers": {address: {"nthreads": 2} for address in self.answers}}

    def run(self, probe):
        return self.answers


@pytest.mark.parametrize(
    "answers, fragment",
    [
        ({}, "has no workers"),
        (
            {"tcp://a:1": ("ok", None), "tcp://b:2": ("missing", "ModuleNotFoundError: no lnproofs")},
            "worker tcp://b:2 .* cannot import lnproofs",
        ),
        ({"tcp://a:1": ("ok", "0.0.1")}, "has lnproofs 0.0.1, this process has"),
    ],
)
def test_workers_without_lnproofs_or_with_another_version_are_refused(answers, fragment):
    import lnproofs
    from lnproofs.execution.cluster import _check_workers

    answers = {a: (s, lnproofs.__version__ if v is None else v) for a, (s, v) in answers.items()}
    with pytest.raises(OptionError, match=fragment):
        _check_workers(_FakeClient(answers), "tcp://x:8786")
    assert _check_workers(_FakeClient({"tcp://a:1": ("ok", lnproofs.__version__)}), "tcp://x:8786") == 2


def test_only_the_execution_layer_imports_dask_and_importing_it_loads_none():
    import re
    import subprocess
    import sys
    from pathlib import Path

    import lnproofs

    root = Path(lnproofs.__file__).parent
    pattern = re.compile(r"^\s*(import|from)\s+(dask|distributed)\b", re.M)
    outside = [
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if p.parent.name != "execution" and pattern.search(p.read_text(encoding="utf-8"))
    ]
    assert outside == []
    probe = (
        "import sys, lnproofs.execution, lnproofs.cli\nlnproofs.cli.build_parser('certify')\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'dask', 'distributed', 'tqdm'}))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _where():
    import os
    import threading

    return os.getpid(), threading.current_thread() is threading.main_thread()


@pytest.mark.parametrize("apart", [False, True])
def test_one_process_pipeline_forwards_the_next_group_beside_and_finishes_before_a_bad_group(apart, monkeypatch):
    """run_pipeline without a cluster: every piece is certified here (this process, its main
    thread), in group order; the forward task of the following group runs meanwhile in another
    thread, or with ``apart`` on two cores (one thread each side, Linux) in a forked worker
    process; when the groups' iterator raises (a bad text), every group before it has been
    certified first."""
    import sys

    from lnproofs.execution import ExecutionContext, cluster, run_pipeline

    monkeypatch.setattr(cluster, "machine_workers", lambda: 2)
    forked = apart and sys.platform.startswith("linux")
    seen, places = [], set()

    def forward(item, model):
        return [(item, k, _where()) for k in range(2)]

    def certify(piece, state):
        places.add(("certify", _where()))
        places.add(("forward", piece[2]))
        return piece[:2]

    def groups():
        for g in range(3):
            yield g, [0, 0]
        raise OptionError("text 6 is not accepted")

    with pytest.raises(OptionError, match="text 6"):
        run_pipeline(
            forward,
            certify,
            groups(),
            context=ExecutionContext(None, 1),
            model=object(),
            states=[None],
            on_result=lambda g, j, result: seen.append((g, j, result)),
            apart=apart,
        )
    assert seen == [(g, j, (g, j)) for g in range(3) for j in range(2)]
    forward_at = {where for side, where in places if side == "forward"}
    assert {where for side, where in places if side == "certify"} == {_where()}
    assert len(forward_at) == 1 and _where() not in forward_at
    assert (next(iter(forward_at))[0] != _where()[0]) == forked


def test_an_error_of_a_forked_forward_task_reaches_the_caller_as_itself(monkeypatch):
    """A forward task that refuses its group in the forked worker (two cores: one thread each
    side) raises that error, its one line intact, after the groups before it are certified."""
    from lnproofs.execution import ExecutionContext, cluster, run_pipeline

    monkeypatch.setattr(cluster, "machine_workers", lambda: 2)
    seen = []

    def forward(item, model):
        if item == 2:
            raise OptionError(f"text {item} is not accepted")
        return [(item, _where()[0])]

    with pytest.raises(OptionError, match="^text 2 is not accepted$"):
        run_pipeline(
            forward,
            lambda piece, state: piece,
            ((g, [0]) for g in range(4)),
            context=ExecutionContext(None, 1),
            model=object(),
            states=[None],
            on_result=lambda g, j, result: seen.append(result),
            apart=True,
        )
    assert [g for g, _ in seen] == [0, 1]
    if __import__("sys").platform.startswith("linux"):
        assert {pid for _, pid in seen} != {_where()[0]}


def test_prepare_runs_once_here_while_the_first_forward_task_runs():
    from lnproofs.execution import ExecutionContext, run_pipeline

    events = []

    def forward(item, model):
        import time

        time.sleep(0.2)
        return [(item, time.monotonic())]

    def prepare():
        import time

        events.append(("prepare", _where(), time.monotonic()))

    def certify(piece, state):
        events.append(("certify", piece[0], piece[1]))
        return piece[0]

    run_pipeline(
        forward,
        certify,
        ((g, [0]) for g in range(3)),
        context=ExecutionContext(None, 1),
        model=object(),
        states=[None],
        on_result=lambda g, j, result: None,
        prepare=prepare,
    )
    assert [e[0] for e in events] == ["prepare", "certify", "certify", "certify"]
    assert events[0][1] == _where() and [e[1] for e in events[1:]] == [0, 1, 2]
    assert events[0][2] < events[1][2]  # before the first forward task had finished


@pytest.mark.parametrize("apart", [False, True])
def test_work_after_the_groups_is_shared_with_a_forked_forward_side(apart, monkeypatch):
    """``idle`` runs once, on a forked forward side (two cores, Linux) after its last forward task
    and once a group is certified here, or else here after the last group; ``finish`` runs here
    last, with idle's result and ``beside``, which runs a function on that side (else here)."""
    import os
    import sys

    from lnproofs.execution import ExecutionContext, cluster, run_pipeline

    monkeypatch.setattr(cluster, "machine_workers", lambda: 2)
    forked = apart and sys.platform.startswith("linux")
    here, events = os.getpid(), []

    def finish(beside, idled):
        events.append(("finish", idled, beside(os.getpid).result() != here))

    run_pipeline(
        lambda item, model: [item],
        lambda piece, state: piece,
        ((g, [0]) for g in range(5)),
        context=ExecutionContext(None, 1),
        model=object(),
        states=[None],
        on_result=lambda g, j, result: events.append(("certified", g)),
        apart=apart,
        idle=lambda: ("idle", os.getpid() != here, len(events)),
        finish=finish,
    )
    idled = events[-1][1]
    assert events[:-1] == [("certified", g) for g in range(5)] and events[-1] == ("finish", idled, forked)
    assert idled[:2] == ("idle", forked) and (1 <= idled[2] <= 5 if forked else idled[2] == 5)


@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="the forward side forks on Linux")
def test_idle_work_on_a_forked_forward_side_waits_for_its_last_forward_task(monkeypatch):
    """Forward tasks go first on a forked forward side: ``idle``, given it once the last forward
    task is, starts after every forward task has ended there, even with tasks still queued."""
    import time

    from lnproofs.execution import ExecutionContext, cluster, run_pipeline

    monkeypatch.setattr(cluster, "machine_workers", lambda: 2)

    def forward(item, model):
        time.sleep(0.3)
        return [(item, time.monotonic())]

    ends, started = [], []
    run_pipeline(
        forward,
        lambda piece, state: piece,
        ((g, [0]) for g in range(6)),
        context=ExecutionContext(None, 1),
        model=object(),
        states=[None],
        on_result=lambda g, j, result: ends.append(result[1]),
        apart=True,
        idle=time.monotonic,
        finish=lambda beside, idled: started.append(idled),
    )
    assert len(ends) == 6 and started[0] >= max(ends)


@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="the forward side forks on Linux")
def test_a_forked_forward_side_with_nothing_to_do_is_lent_pieces_of_later_groups(monkeypatch):
    """``lend=(help_with, attach, batch)``: while its forward tasks are done and certification here
    is slow, the forked side computes ``help_with`` for pieces of groups not yet certified, ``batch``
    at a time; those pieces are certified here as ``attach(piece, help)``, the others as they are,
    every piece once and in order; without a fork ``help_with`` never runs."""
    import os
    import time

    from lnproofs.execution import ExecutionContext, cluster, run_pipeline

    monkeypatch.setattr(cluster, "machine_workers", lambda: 2)
    here = os.getpid()

    def certify(piece, state):
        time.sleep(0.04)
        return piece

    for apart in (True, False):
        seen = []
        run_pipeline(
            lambda item, model: [(item, j) for j in range(4)],
            certify,
            ((g, [0] * 4) for g in range(6)),
            context=ExecutionContext(None, 1),
            model=object(),
            states=[None],
            on_result=lambda g, j, result: seen.append((g, j, result)),
            apart=apart,
            lend=(lambda piece: (os.getpid(), 10 * piece[0] + piece[1]), lambda piece, help: (piece, help), 3),
        )
        assert [(g, j) for g, j, _ in seen] == [(g, j) for g in range(6) for j in range(4)]
        helped = [(g, j, r[1]) for g, j, r in seen if r != (g, j)]
        assert all(r == (g, j) or r[0] == (g, j) for g, j, r in seen)
        assert all(pid != here and value == 10 * g + j for g, j, (pid, value) in helped)
        assert bool(helped) == apart and all(g > 0 for g, _, _ in helped)


@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="the forward side forks on Linux")
def test_a_forked_forward_side_samples_no_profile(monkeypatch):
    """Its worker has no dashboard to show a profile in, so it does not sample its tasks' stacks
    every 10 ms (Dask's default)."""
    from lnproofs.execution import ExecutionContext, cluster, run_pipeline

    monkeypatch.setattr(cluster, "machine_workers", lambda: 2)

    def callbacks():
        from distributed import get_worker

        return sorted(get_worker().periodic_callbacks)

    seen = []
    run_pipeline(
        lambda item, model: [item],
        lambda piece, state: piece,
        ((g, [0]) for g in range(3)),
        context=ExecutionContext(None, 1),
        model=object(),
        states=[None],
        on_result=lambda *_: None,
        apart=True,
        finish=lambda beside, idled: seen.append(beside(callbacks).result()),
    )
    assert "heartbeat" in seen[0] and not {"profile", "profile-cycle"} & set(seen[0])


def test_a_process_runs_forked_forward_sides_one_after_another_with_large_pieces():
    """Two runs in one process, each with a forked forward side whose pieces are over Dask's
    offload threshold (10 MiB): the second fork copies the first run's offload thread pool, thread
    gone, and its first large piece waited for that thread for ever before the forked worker got
    a pool of its own.  In a fresh interpreter, with a time limit."""
    import json
    import subprocess
    import sys

    if not sys.platform.startswith("linux"):
        pytest.skip("the forward worker is forked on Linux only")
    probe = """
import json, os, numpy as np
from lnproofs.execution import ExecutionContext, cluster, run_pipeline
cluster.machine_workers = lambda: 2
seen = []
for run in range(2):
    run_pipeline(lambda item, model: [(os.getpid(), np.full(2_000_000, float(item)))], lambda piece, state: piece,
                 ((g, [0]) for g in range(3)), context=ExecutionContext(None, 1), model=object(), states=[None],
                 on_result=lambda g, j, r: seen.append((run, g, r[0] != os.getpid(), float(r[1][-1]))), apart=True)
print(json.dumps(seen))
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    assert json.loads(out.stdout) == [[run, g, True, float(g)] for run in range(2) for g in range(3)]
