"""The forward side of a run in this process: a thread, or a worker process forked from this one.

:func:`forward_side` gives a run's forward tasks a place beside this process's certification.
Forked (:func:`forward_forks` says when), the worker inherits the model by the fork, so only the
pieces it returns travel; it runs one torch thread.  Otherwise a second thread here.  The
pipeline (:mod:`.pipeline`) decides what runs where; this module only makes the side.
"""

from __future__ import annotations

__all__ = ["forward_side", "forward_forks", "after"]


def after(_done, fn):
    """``fn()``, in a task that Dask starts once the future passed as ``_done`` has finished."""
    return fn()


#: ``{token: (forward, model, lend)}``: filled in this process just before a forward worker is
#: forked from it (:func:`forward_side`), which so inherits the model; emptied when that run ends
_FORKED: dict = {}


def _forked_forward(item, token):
    """A forward task in a forked forward worker: the run's forward function and model, inherited."""
    if token not in _FORKED:
        raise RuntimeError(
            "the forward worker was started again without the model (it had died); the texts "
            "finished so far are written: rerun with --resume"
        )
    forward, model, _ = _FORKED[token]
    return forward(item, model)


def _forked_lend(pieces, chosen, token):
    """A lend task in a forked forward worker: the run's ``lend`` function (inherited) on the
    pieces ``chosen`` of a group that worker forwarded (``pieces``: still held there)."""
    return [_FORKED[token][2](pieces[i]) for i in chosen]


def forward_forks() -> bool:
    """Whether a run of several groups in this process puts its forward passes in a forked worker
    process (see :func:`forward_side`): when they get one thread (two or three cores), on Linux,
    with CUDA not started here."""
    import sys

    from .cluster import machine_workers
    from .threads import threads_per_worker

    torch = sys.modules.get("torch")
    return (
        threads_per_worker(machine_workers(), 2) == 1
        and sys.platform.startswith("linux")
        and not (torch is not None and torch.cuda.is_initialized())
    )


def _forked_worker_plugin():
    """A worker plugin (travels by value) for a worker forked from this process: it gives the
    worker a new thread for Dask's offloading of large messages.  The fork copies this process's
    offload executor, thread gone but counted, so a result over Dask's offload threshold (10 MiB)
    waited for a thread that never came: the second forked run of a process hung there."""
    from distributed.diagnostics.plugin import WorkerPlugin

    class ForkedWorker(WorkerPlugin):
        name = "lnproofs-forked-worker"

        def setup(self, worker):
            from concurrent.futures import ThreadPoolExecutor

            import distributed.utils

            distributed.utils._offload_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="Dask-Offload")

    return ForkedWorker()


def forward_side(stack, forward, model, forked: bool, lend=None):
    """``(submit, beside)``: ``submit(item) -> future`` of ``forward(item, model)``, run beside
    this thread's certification; ``beside(fn, *args) -> future`` runs ``fn(*args)`` on the same
    side when it is a forked worker (``beside.forked``), else here, now.

    ``forked``: a one-worker local Dask cluster whose worker process is forked from this one
    after the model is made, so it inherits the model (only the pieces it returns travel, fetched
    from it directly), and runs one torch thread.  A second thread here would share the
    interpreter's lock with certification, and each small torch call of a forward pass waits for
    it (MiniLM's 100 texts on two cores: 4 s of forward passes took 9 s beside certification).  One
    thread is also what makes the fork safe: GNU OpenMP, which torch uses, hangs in a forked
    child that starts a team of threads after its parent ran one.  Otherwise a second thread.
    ``beside.lend(task, chosen) -> future``: ``lend(piece)`` there for the pieces ``chosen`` of a
    forward task's group (None without ``lend`` or a fork)."""
    if forked:
        import logging
        import uuid

        import dask
        from distributed import Client, LocalCluster

        from .cluster import _local_worker_plugin
        from .threads import worker_environment

        token = uuid.uuid4().hex
        _FORKED[token] = (forward, model, lend)
        stack.callback(_FORKED.pop, token, None)
        # no dashboard, so no use for the worker's profiler: it samples the task's stack every 10 ms
        with dask.config.set(
            {
                "distributed.worker.multiprocessing-method": "fork",
                "distributed.nanny.pre-spawn-environ": worker_environment(1),
                "distributed.worker.profile.enabled": False,
            }
        ):
            cluster = stack.enter_context(
                LocalCluster(
                    n_workers=1,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=None,
                    silence_logs=logging.CRITICAL,
                )
            )
        client = stack.enter_context(Client(cluster, set_as_default=False, direct_to_workers=True))
        client.register_plugin(_local_worker_plugin(1))
        client.register_plugin(_forked_worker_plugin())

        def beside(fn, *args):
            return client.submit(fn, *args, pure=False)

        beside.forked = True
        beside.lend = lend and (lambda task, chosen: client.submit(_forked_lend, task, chosen, token, pure=False))
        return (lambda item: client.submit(_forked_forward, item, token, pure=False)), beside
    from concurrent.futures import Future, ThreadPoolExecutor

    pool = stack.enter_context(ThreadPoolExecutor(max_workers=1, thread_name_prefix="lnproofs-forward"))

    def here(fn, *args):
        done = Future()
        done.set_result(fn(*args))
        return done

    here.forked, here.lend = False, None
    return (lambda item: pool.submit(forward, item, model)), here
