"""Where tasks run: this process, a local Dask cluster, or an existing one.

:func:`resolve_workers` turns the ``workers`` / ``scheduler`` options into a plan and
rejects bad values with one line; :func:`open_client` opens what the plan asks for,
checks once that every worker imports the same ``lnproofs`` version as this process,
and closes it again.  dask and distributed are imported inside these functions only.
"""

from __future__ import annotations

import contextlib
import logging
import os
from dataclasses import dataclass

from ..kernel import OptionError
from .threads import threads_per_worker, worker_environment

__all__ = [
    "ExecutionContext",
    "machine_workers",
    "resolve_workers",
    "resolve_model_workers",
    "auto_workers",
    "MODEL_RESOURCE",
    "open_client",
    "CONNECT_TIMEOUT_S",
]

#: the Dask worker resource a worker offers when it may hold the model (forward passes)
MODEL_RESOURCE = "MODEL"
#: seconds to wait for an existing scheduler to answer before giving up with one line
CONNECT_TIMEOUT_S = 10


@dataclass(frozen=True)
class ExecutionContext:
    """Where a run's tasks go: ``client`` is None for work in this process.

    ``workers`` is the number of worker processes (threads on an existing cluster), used
    to size how many tasks are kept in flight; ``scheduler`` the address of an existing
    cluster, or None for a local one (or none at all).
    """

    client: object | None
    workers: int
    scheduler: str | None = None

    @property
    def in_process(self) -> bool:
        return self.client is None


def machine_workers() -> int:
    """The number of cores this process may use: the size of the default local cluster."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def resolve_workers(workers=None, scheduler=None, *, worthwhile: bool = True) -> int | None:
    """The number of local worker processes to use, or None when ``scheduler`` is given.

    ``workers``: None (automatic), or a positive whole number; 1 means plain work in this
    process.  Automatic means a local cluster sized to the machine when ``worthwhile`` (the
    caller's rule for a run big enough to pay for starting a cluster), else 1.
    ``scheduler``: the address of an existing Dask scheduler (then ``workers`` must be None).
    """
    if scheduler is not None:
        if not isinstance(scheduler, str) or not scheduler.strip():
            raise OptionError(
                f"--scheduler {scheduler!r} is not accepted; give the address of a running Dask "
                "scheduler, such as tcp://10.0.0.5:8786"
            )
        if workers is not None:
            raise OptionError(
                f"--workers {workers} and --scheduler {scheduler} cannot be combined: the cluster "
                "at the scheduler brings its own workers; give one of them"
            )
        return None
    if workers is None:
        return machine_workers() if worthwhile else 1
    if isinstance(workers, bool) or not isinstance(workers, int):
        try:
            text = str(workers).strip()
            workers = int(text)
        except (TypeError, ValueError):
            raise OptionError(
                f"--workers {workers!r} is not a whole number; give 1 (work in this process) "
                "or more (a local cluster of that many worker processes)"
            ) from None
    if workers < 1:
        raise OptionError(
            f"--workers {workers} is not accepted; give 1 (work in this process) or more "
            "(a local cluster of that many worker processes)"
        )
    return workers


def resolve_model_workers(model_workers, workers, scheduler=None) -> int | None:
    """The number of local workers that hold the model (``--model-workers``): a whole number
    from 1 to the number of local workers ``workers`` (already resolved); None gives 1.
    Not with ``scheduler``: there the workers started with ``--resources MODEL=1`` are the
    model workers."""
    if model_workers is None:
        return None if scheduler is not None else 1
    if scheduler is not None:
        raise OptionError(
            f"--model-workers {model_workers} and --scheduler {scheduler} cannot be combined: on an "
            "existing cluster the model workers are those started with --resources MODEL=1"
        )
    try:
        if isinstance(model_workers, bool):
            raise ValueError
        count = int(str(model_workers).strip())
    except ValueError:
        raise OptionError(
            f"--model-workers {model_workers!r} is not a whole number; give 1 or more, at most --workers"
        ) from None
    if count < 1:
        raise OptionError(f"--model-workers {count} is not accepted; give 1 or more, at most --workers")
    if workers is not None and count > workers:
        raise OptionError(
            f"--model-workers {count} is more than --workers {workers}; give at most {workers} "
            "(the other workers certify)"
        )
    return count


def auto_workers(workers, scheduler, n_tasks: int, *, worthwhile: bool = True) -> int | None:
    """:func:`resolve_workers`, and never more local workers than tasks."""
    resolved = resolve_workers(workers, scheduler, worthwhile=worthwhile and n_tasks > 1)
    if resolved is None:
        return None
    return max(1, min(resolved, n_tasks)) if n_tasks > 0 else 1


def _probe_factory():
    """A probe defined inside a function, so that cloudpickle ships it by value: it runs
    on workers that cannot import lnproofs at all, and says so."""

    def probe():
        try:
            import lnproofs
        except Exception as err:  # noqa: BLE001 - any failure is the answer
            return ("missing", f"{type(err).__name__}: {err}")
        return ("ok", getattr(lnproofs, "__version__", "unknown"))

    return probe


def _local_worker_plugin(threads: int):
    """A worker plugin (defined here so that it travels by value) for the worker processes
    of a local cluster, which share this process's terminal: their standard output goes to
    standard error, since what libraries print there (solver banners) must never reach
    stdout, which belongs to the command's own output (``--json``); they ignore Ctrl-C,
    which this process handles by cancelling the tasks and closing the cluster; and their
    libraries keep to ``threads`` threads each (:mod:`lnproofs.execution.threads`).  Workers
    that replace dead ones get it too."""
    from distributed.diagnostics.plugin import WorkerPlugin

    class LocalWorker(WorkerPlugin):
        name = "lnproofs-local-worker"

        def setup(self, worker):
            import os
            import signal
            import sys
            import threading

            from lnproofs.execution.threads import limit_threads

            sys.stdout.flush()
            os.dup2(2, 1)
            if threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGINT, signal.SIG_IGN)
            limit_threads(threads)

    return LocalWorker()


def _host_threads_plugin(per_host: dict):
    """A worker plugin for an existing cluster: each worker divides its host's cores among
    the worker threads the scheduler lists on that host (``per_host``: host -> threads)."""
    from distributed.diagnostics.plugin import WorkerPlugin

    class HostThreads(WorkerPlugin):
        name = "lnproofs-host-threads"

        def setup(self, worker):
            from lnproofs.execution.cluster import machine_workers
            from lnproofs.execution.threads import limit_threads, threads_per_worker

            sharing = per_host.get(worker.ip, worker.state.nthreads)
            limit_threads(threads_per_worker(machine_workers(), sharing))

    return HostThreads()


def _threads_per_host(client) -> dict:
    per_host: dict = {}
    for info in client.scheduler_info().get("workers", {}).values():
        per_host[info.get("host")] = per_host.get(info.get("host"), 0) + int(info.get("nthreads", 1))
    return per_host


def _check_workers(client, where: str) -> int:
    """Every worker imports lnproofs at this process's version; returns the thread count."""
    from .. import __version__

    info = client.scheduler_info()
    workers = info.get("workers", {})
    if not workers:
        raise OptionError(f"the Dask cluster at {where} has no workers; start some (dask worker {where}) and run again")
    answers = client.run(_probe_factory())
    for address, (state, detail) in sorted(answers.items()):
        if state == "missing":
            raise OptionError(
                f"worker {address} of the Dask cluster at {where} cannot import lnproofs "
                f"({detail}); install lnproofs {__version__} on every worker"
            )
        if detail != __version__:
            raise OptionError(
                f"worker {address} of the Dask cluster at {where} has lnproofs {detail}, "
                f"this process has {__version__}; install the same version on every worker"
            )
    return max(1, sum(int(w.get("nthreads", 1)) for w in workers.values()))


def _refused(address: str) -> str | None:
    """Why a plain TCP connection to a tcp:// address fails at once (refused, no such
    host), or None: the quick answer before Dask's own retries until its time-out."""
    import socket
    from urllib.parse import urlsplit

    if not address.startswith("tcp://"):
        return None
    try:
        parts = urlsplit(address)
        host, port = parts.hostname, parts.port
    except ValueError:
        return "not a valid address"
    if not host or port is None:
        return "no host:port in the address"
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
            return None
    except socket.gaierror:
        return f"no host named {host}"
    except ConnectionRefusedError:
        return "connection refused"
    except OSError:
        return None  # let Dask try, and time out


def _connect(address: str):
    from distributed import Client

    reason = _refused(address)
    if reason is not None:
        raise OptionError(
            f"cannot reach the Dask scheduler at --scheduler {address} ({reason}); start one "
            "with 'dask scheduler' or leave out --scheduler for a local cluster"
        )
    try:
        return Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as err:
        reason = " ".join(str(err).split()) or type(err).__name__
        if len(reason) > 160:
            reason = reason[:157] + "..."
        raise OptionError(
            f"cannot reach the Dask scheduler at --scheduler {address} ({reason}); start one "
            "with 'dask scheduler' or leave out --scheduler for a local cluster"
        ) from None


@contextlib.contextmanager
def open_client(
    workers=None,
    scheduler=None,
    *,
    worthwhile: bool = True,
    n_tasks: int | None = None,
    processes: bool = True,
    model_workers: int | None = None,
):
    """Yield an :class:`ExecutionContext` for ``workers`` / ``scheduler`` and close it after.

    One worker (the rule of :func:`resolve_workers`) gives ``client=None``: work in this
    process, no cluster started.  Otherwise a local cluster of that many single-threaded
    worker processes is started (``processes=False``: threads, for tests of the
    machinery), or the existing scheduler is reached; either way every worker must import
    lnproofs at this process's version, checked once here.  Errors are one line.

    ``model_workers`` K (local clusters only): the first K workers offer the worker
    resource ``MODEL`` (:mod:`lnproofs.execution.pipeline`), the others do not.
    """
    count = (
        resolve_workers(workers, scheduler, worthwhile=worthwhile)
        if n_tasks is None
        else auto_workers(workers, scheduler, n_tasks, worthwhile=worthwhile)
    )
    if count == 1:
        yield ExecutionContext(None, 1)
        return
    if scheduler is not None:
        client = _connect(scheduler)
        try:
            threads = _check_workers(client, scheduler)
            client.register_plugin(_host_threads_plugin(_threads_per_host(client)))
            yield ExecutionContext(client, threads, scheduler)
        finally:
            client.close()
        return
    import dask
    from distributed import Client, LocalCluster

    keep = max(0, count - (model_workers or 0))
    budget = threads_per_worker(machine_workers(), count)
    # read when each nanny is made, which happens on the cluster's event loop (the model
    # workers' after scale() returns): held for the cluster's life; a nanny restarts a dead
    # worker with the environment it was made with
    with dask.config.set({"distributed.nanny.pre-spawn-environ": worker_environment(budget)}):
        cluster = LocalCluster(
            n_workers=keep,
            threads_per_worker=1,
            processes=processes,
            dashboard_address=":0",
            silence_logs=logging.CRITICAL,
        )
        try:
            if model_workers:
                spec = cluster.new_spec
                for i in range(count - keep):
                    options = dict(spec["options"], resources={MODEL_RESOURCE: 1})
                    cluster.worker_spec[f"model-{i}"] = {"cls": spec["cls"], "options": options}
                cluster.scale(count)
            # results fetched from their workers: relayed by the scheduler, which runs here, each
            # crossed this process's loopback twice
            client = Client(cluster, set_as_default=False, direct_to_workers=True)
            try:
                client.wait_for_workers(count)
                if processes:
                    client.register_plugin(_local_worker_plugin(budget))
                _check_workers(client, "the local cluster")
                yield ExecutionContext(client, count)
            finally:
                client.close()
        finally:
            cluster.close()
