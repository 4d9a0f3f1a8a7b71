"""Run a list of independent tasks and hand every result back as soon as it is known.

:func:`run_tasks` is the one entry point.  ``fn`` must be a module-level function of an
importable module (workers import that module when the first task arrives, not before);
it is called as ``fn(item)``, or ``fn(item, shared)`` when ``shared`` is given.  Large
data that every task needs (keys, weights) goes in ``shared``: it is sent to each worker
once (``scatter`` with ``broadcast``), never once per task, and a worker that replaces a
dead one copies it from a peer.  Data too large to pass through this process (a model's
weights) is given as ``shared=Load(fn, *args)`` instead: one worker computes
``fn(*args)`` (for instance loads the model from a path every machine can read), the
others copy the result from a worker that holds it, and if every holder dies it is
computed again.

Order and loss: results are returned in the order of ``items`` whatever order workers
finish in; ``on_result(index, result)`` is called in the order tasks finish, meant for
writing resume files at once (wrap it in :class:`InOrder` to see results in item order).
When a worker dies, the Dask scheduler reruns its tasks on the others (up to the
scheduler's ``allowed-failures`` times per task); tasks are pure functions of their
item, so the results do not change.  An exception raised by a task stops the run: the
other tasks are cancelled, results already handed to ``on_result`` stay written, and the
exception is raised here, as it would be in this process.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .cluster import ExecutionContext, open_client

__all__ = ["run_tasks", "share", "InOrder", "Load", "IN_FLIGHT_PER_WORKER"]

#: tasks kept queued per worker thread: enough to hide scheduling latency, few enough
#: that an interruption leaves little half-done work and the client's memory stays small
IN_FLIGHT_PER_WORKER = 8


@dataclass(frozen=True, init=False)
class Load:
    """Shared data made where it is used: ``fn(*args)`` runs once on a worker (once in
    this process when there are no workers) and every task receives its result."""

    fn: Callable
    args: tuple

    def __init__(self, fn: Callable, *args):
        object.__setattr__(self, "fn", fn)
        object.__setattr__(self, "args", args)


@dataclass(frozen=True)
class Shared:
    """Data already on the workers of ``context`` (from :func:`share`), usable as
    ``shared`` by any number of :func:`run_tasks` calls on that context."""

    handle: object


def share(context: ExecutionContext, data) -> Shared:
    """Send ``data`` (or make it, for a :class:`Load`) to the workers of ``context`` once,
    for several :func:`run_tasks` calls; in this process it is kept as it is."""
    if context.in_process:
        return Shared(data.fn(*data.args) if isinstance(data, Load) else data)
    client = context.client
    if isinstance(data, Load):
        return Shared(client.submit(data.fn, *data.args, key=f"shared-{uuid.uuid4().hex[:12]}", pure=False))
    [future] = client.scatter([data], broadcast=True, hash=False)
    return Shared(future)


class InOrder:
    """Wrap ``callback(index, result)`` so it sees results in index order.

    Results that arrive early are held until every earlier index has been delivered.
    """

    def __init__(self, callback: Callable[[int, object], None], start: int = 0):
        self.callback = callback
        self.next = start
        self.held: dict[int, object] = {}

    def __call__(self, index: int, result) -> None:
        self.held[index] = result
        while self.next in self.held:
            self.callback(self.next, self.held.pop(self.next))
            self.next += 1


def _bar(total: int, progress, label: str, unit: str):
    from tqdm import tqdm

    return tqdm(
        total=total, desc=label, unit=unit, file=sys.stderr, disable=not progress, leave=False, dynamic_ncols=True
    )


def _in_process(fn, items, shared, on_result, bar) -> list:
    if isinstance(shared, Shared):
        shared = shared.handle
    elif isinstance(shared, Load) and items:
        shared = shared.fn(*shared.args)
    results = []
    for index, item in enumerate(items):
        result = fn(item) if shared is None else fn(item, shared)
        results.append(result)
        if on_result is not None:
            on_result(index, result)
        bar.update(1)
    return results


def _raise_task_error(future, item):
    """Raise the task's own exception, as in this process; a task given up because the
    workers running it kept dying says so in words."""
    try:
        future.result()
    except Exception as err:
        if type(err).__name__ != "KilledWorker":
            raise
        text = repr(item)
        text = text if len(text) <= 80 else text[:77] + "..."
        raise RuntimeError(
            f"the task for {text} was given up after the workers running it died in turn "
            "(out of memory?); results finished so far are written, rerun with --resume"
        ) from None


def _distributed(ctx: ExecutionContext, fn, items, shared, on_result, bar, label: str) -> list:
    from distributed import as_completed

    client = ctx.client
    token = uuid.uuid4().hex[:12]
    name = getattr(fn, "__name__", "task")
    args = ()
    owned = shared is not None and not isinstance(shared, Shared)
    if isinstance(shared, Shared):
        shared_future = shared.handle
        args = (shared_future,)
    elif isinstance(shared, Load):
        shared_future = client.submit(shared.fn, *shared.args, key=f"{label}-shared-{token}", pure=False)
        args = (shared_future,)
    elif shared is not None:
        [shared_future] = client.scatter([shared], broadcast=True, hash=False)
        args = (shared_future,)
    window = max(16, IN_FLIGHT_PER_WORKER * ctx.workers)
    results: list = [None] * len(items)
    position: dict = {}
    pending = iter(enumerate(items))

    def submit_next():
        for index, item in pending:
            future = client.submit(fn, item, *args, key=f"{label}-{name}-{token}-{index}", pure=False, retries=0)
            position[future.key] = index
            return future
        return None

    first = [f for f in (submit_next() for _ in range(min(window, len(items)))) if f is not None]
    # results are gathered in the background and handed over in batches: no round trip per task
    queue = as_completed(first, with_results=True, raise_errors=False, loop=client.loop)
    outstanding = set(first)
    try:
        for batch in queue.batches():
            for future, result in batch:
                outstanding.discard(future)
                if future.status == "error":
                    _raise_task_error(future, items[position[future.key]])
                index = position.pop(future.key)
                results[index] = result
                future.release()
                if on_result is not None:
                    on_result(index, result)
                bar.update(1)
                new = submit_next()
                if new is not None:
                    outstanding.add(new)
                    queue.add(new)
    finally:
        if outstanding:
            client.cancel(list(outstanding))
        if owned:
            client.cancel([shared_future])
    return results


def run_tasks(
    fn: Callable,
    items: Iterable,
    *,
    workers=None,
    scheduler=None,
    context: ExecutionContext | None = None,
    shared=None,
    on_result: Callable[[int, object], None] | None = None,
    progress: bool = False,
    label: str = "tasks",
    unit: str = "task",
    worthwhile: bool = True,
) -> list:
    """``[fn(item) for item in items]`` (or ``fn(item, shared)``), run in parallel.

    ``workers`` / ``scheduler``: where to run (see :func:`~lnproofs.execution.resolve_workers`:
    None means a local cluster sized to the machine when ``worthwhile`` and there is more
    than one task, 1 means this process); ``context``: an open
    :class:`~lnproofs.execution.ExecutionContext` from
    :func:`~lnproofs.execution.open_client` to reuse instead (then ``workers`` and
    ``scheduler`` are ignored).  ``shared``: data for every task (see the module
    docstring): an object, a :class:`Load`, or what :func:`share` returned for
    ``context``.  ``on_result(index, result)``: called once per task as it
    finishes, in this process.  ``progress``: a tqdm bar on stderr, labelled ``label``.
    Returns the results in the order of ``items``; identical for any number of workers
    when ``fn`` is deterministic.
    """
    items = list(items)
    bar = _bar(len(items), progress, label, unit)
    try:
        if context is not None:
            if context.in_process or not items:
                return _in_process(fn, items, shared, on_result, bar)
            return _distributed(context, fn, items, shared, on_result, bar, label)
        with open_client(workers, scheduler, worthwhile=worthwhile, n_tasks=len(items)) as ctx:
            if ctx.in_process:
                return _in_process(fn, items, shared, on_result, bar)
            return _distributed(ctx, fn, items, shared, on_result, bar, label)
    finally:
        bar.close()
