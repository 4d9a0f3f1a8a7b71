"""Two kinds of task: forward passes where the weights are, certification anywhere.

A run is a sequence of *groups* (for a corpus: a few texts that go through the model
together).  Each group is one **forward task**, ``forward(item, model) -> [piece, ...]``,
which runs only on workers offering the Dask worker resource :data:`MODEL_RESOURCE`
(``dask worker ADDRESS --resources MODEL=1``); ``model`` is made there once per worker
from a :class:`~lnproofs.execution.Load` (a path every such worker can read) and kept by a
worker plugin for the rest of the run, so the weights never pass through the scheduler or
this process.  Each piece is one **certification task**, ``certify(piece, state)``, which
runs on any worker and receives only that piece (captured arrays), a small per-slot
``state`` (for a corpus: the options and a per-worker cache), held on every worker by a
worker plugin (replacement workers receive it too), and, when the run has them, the
slot's **data** (for a corpus: one layer's weights that the certification needs), made
once per run on a model worker from the model (``slot_data``) and fetched by the workers
that certify that slot: a Dask result with lineage, so a lost copy is made again on a
model worker, and no worker holds the data of every slot unless it certifies every slot.
Certification tasks of one slot prefer one worker (slots are dealt round the certifying
workers, and round every worker when there are no more certifying workers than model
workers, so that a model worker certifies between its forward passes), so what a worker
builds or fetches per slot is built on few workers; tasks move elsewhere when that
worker is busy or gone.

Memory: at most ``waiting`` groups are in flight (forwarded, not yet certified), so a run
never holds the activations of the whole corpus; a model worker holds the weights, every
slot's data and the pieces of the groups it forwarded, a certifying worker one piece at a
time and the data of the slots it certifies.

Results are handed to ``on_result(group_index, piece_index, result)`` in this process as
they finish.  A certifying worker that dies costs a retry of its piece; a model worker
that dies takes its pieces with it, and the scheduler recomputes them (forward pass
included) on a model worker that is left or that replaces it.  Tasks are pure functions
of their inputs, so the results are those of an undisturbed run.

In this process (no cluster) the same two functions run group by group, with the model made
once: the forward task of the next group beside this group's certification (in a second
thread, or in a one-worker Dask cluster forked from this process), results in order.
"""

from __future__ import annotations

import itertools
import operator
import uuid
from collections.abc import Callable, Iterable

from ..kernel import OptionError
from . import forked
from .cluster import MODEL_RESOURCE, ExecutionContext
from .tasks import Load, _raise_task_error

__all__ = ["MODEL_RESOURCE", "WAITING_GROUPS", "run_pipeline", "model_workers", "check_model_workers"]

#: groups in flight per model worker (forwarded or being forwarded, not yet fully certified)
WAITING_GROUPS = 2


def model_workers(client) -> list[str]:
    """Addresses of the workers of ``client``'s cluster that offer :data:`MODEL_RESOURCE`."""
    workers = client.scheduler_info().get("workers", {})
    return sorted(a for a, w in workers.items() if (w.get("resources") or {}).get(MODEL_RESOURCE, 0) > 0)


def check_model_workers(context: ExecutionContext, probe: Callable | None = None, *args) -> list[str]:
    """The model workers of ``context`` (one line, :class:`OptionError`, when there is none);
    ``probe(*args)`` runs on each and returns None or the reason it cannot hold the model
    (a device that is not there)."""
    if context.in_process:
        return []
    client = context.client
    where = context.scheduler or "the local cluster"
    found = model_workers(client)
    if not found:
        raise OptionError(
            f"no worker of the Dask cluster at {where} offers the resource {MODEL_RESOURCE} that "
            f"forward passes need; start model workers with 'dask worker {where} --resources "
            f"{MODEL_RESOURCE}=1'"
        )
    if probe is not None:
        answers = client.run(probe, *args, workers=found)
        for address, reason in sorted(answers.items()):
            if reason is not None:
                raise OptionError(f"model worker {address} of the Dask cluster at {where}: {reason}")
    return found


def _holder_factory(name: str, load: Load):
    """A worker plugin (travels by value) that makes the model on first use and keeps it:
    one per worker, attached to the Dask worker, released when the run unregisters it."""
    from distributed.diagnostics.plugin import WorkerPlugin

    class ModelHolder(WorkerPlugin):
        def __init__(self):
            self.name = name
            self.load = load
            self.model = None
            self.loads = 0

        def setup(self, worker):
            self.model, self.loads = None, 0

        def get(self):
            if self.model is None:
                self.model = self.load.fn(*self.load.args)
                self.loads += 1
            return self.model

        def teardown(self, worker):
            self.model = None

    return ModelHolder()


def _states_factory(name: str, states: list):
    """A worker plugin (travels by value) holding the per-slot states on every worker, those
    that join later (replacements) included: the scheduler keeps registered plugins, while
    scattered data can lose its last replica to a dead worker (Dask keeps few replicas)."""
    from distributed.diagnostics.plugin import WorkerPlugin

    class StatesHolder(WorkerPlugin):
        def __init__(self):
            self.name = name
            self.states = states

    return StatesHolder()


def _certify_task(piece, certify, name, slot, data=None, with_data=False):
    from distributed import get_worker

    state = get_worker().plugins[name].states[slot]
    return certify(piece, state, data) if with_data else certify(piece, state)


def _slot_data_task(slot_data, name):
    from distributed import get_worker

    return slot_data.fn(get_worker().plugins[name].get(), *slot_data.args)


def _forward_task(item, forward, name):
    from distributed import get_worker

    return forward(item, get_worker().plugins[name].get())


def _loads_record(name, dask_worker=None):
    holder = dask_worker.plugins.get(name)
    resources = getattr(dask_worker.state, "total_resources", {}) or {}
    return {"model_worker": resources.get(MODEL_RESOURCE, 0) > 0, "loads": getattr(holder, "loads", 0)}


#: forward tasks a forked forward side may run ahead of the group being certified here: it banks
#: the time it has to spare, and so is idle before the last groups are certified (``idle``)
FORKED_AHEAD = 3


def _in_process(
    forward,
    certify,
    groups,
    model,
    states,
    on_result,
    slot_data=None,
    prepare=None,
    apart=False,
    idle=None,
    finish=None,
    lend=None,
) -> dict:
    """Every group in this process, in order: the forward tasks of the next groups run beside
    this group's certification (:func:`.forked.forward_side`); at most two groups are held, or
    ``1 + FORKED_AHEAD`` with a forked forward side.  The two sides share the cores: from the
    model's loading to the end, torch and BLAS get half of them each (:func:`.threads.thread_budget`;
    one each on two cores), as two workers would; the collector leaves out the objects that exist
    then (:func:`.collector.collector_budget`).  ``prepare()`` runs once, here, while the first
    forward task runs.  A group the iterator cannot give (bad input) is raised after the groups
    before it are finished.  ``idle``, ``finish`` and ``lend``: see :func:`run_pipeline`."""
    from collections import deque
    from contextlib import ExitStack

    from .cluster import machine_workers
    from .collector import collector_budget
    from .threads import thread_budget, threads_per_worker

    made, data, submit, beside, early, ahead = None, None, None, None, None, 1
    it = iter(groups)
    held: deque = deque()  # (group number, slots, its forward task), oldest first
    lent: dict = {}  # (group, piece) -> (lend task, place in its answer)
    answers: dict = {}  # lend task's key -> its answer, fetched once

    def before(g, j, piece):
        """When the forked side has nothing to do, lend it the newest group's last pieces not lent
        yet; then ``piece`` with its help if that is back (else it is certified here alone)."""
        if (
            beside is not None
            and beside.lend is not None
            and all(t.done() for *_, t in held)
            and all(f.done() for f, _ in lent.values())
            and (early is None or early.done())
        ):
            for h, slots, task in reversed(held):
                if rest := [i for i in range(len(slots)) if (h, i) not in lent]:
                    future = beside.lend(task, rest[-lend[2] :])
                    lent.update({(h, i): (future, k) for k, i in enumerate(rest[-lend[2] :])})
                    break
        future, k = lent.pop((g, j), (None, 0))
        if future is None or future.status != "finished":
            if future is not None and not future.done():
                future.cancel()
            return piece
        answer = answers.pop(future.key, None) or future.result()
        if any(f.key == future.key for f, _ in lent.values()):
            answers[future.key] = answer  # for the next pieces it answers
        return lend[1](piece, answer[k])

    with ExitStack() as budget:
        for g in itertools.count():
            try:
                following = next(it, None)
            except BaseException:
                while held:
                    _certify_group(held.popleft(), certify, states, data, on_result, before)
                raise
            if following is not None:
                item, slots = following
                if made is None:
                    made = model.fn(*model.args) if isinstance(model, Load) else model
                    budget.enter_context(collector_budget())
                    budget.enter_context(thread_budget(threads_per_worker(machine_workers(), 2)))
                    submit, beside = forked.forward_side(
                        budget, forward, made, apart and forked.forward_forks(), None if lend is None else lend[0]
                    )
                    ahead = FORKED_AHEAD if beside.forked else 1
                    if slot_data is not None:
                        data = slot_data.fn(made, *slot_data.args) if isinstance(slot_data, Load) else slot_data
                held.append((g, slots, submit(item)))
                if prepare is not None and g == 0:
                    prepare()
            if following is None and idle is not None and beside is not None and beside.forked:
                if g == len(held):  # no group certified yet: the first one first
                    _certify_group(held.popleft(), certify, states, data, on_result, before)
                # over there, after its last forward task: a task that waits for it (Dask ran a task
                # given after the last forward task before it, whatever its priority)
                early = beside(forked.after, held[-1][2], idle) if held else beside(idle)
            while held and (len(held) > ahead or following is None):
                _certify_group(held.popleft(), certify, states, data, on_result, before)
            if following is None:
                if finish is not None and beside is not None:
                    finish(beside, early.result() if early is not None else idle() if idle is not None else None)
                return {}


def _certify_group(held, certify, states, data, on_result, before) -> None:
    g, slots, task = held
    for j, (piece, slot) in enumerate(zip(task.result(), slots)):
        on_result(g, j, certify(before(g, j, piece), states[slot], *(() if data is None else (data[slot],))))


def _distributed(ctx, forward, certify, groups, model, states, on_result, waiting, slot_data=None) -> dict:
    from distributed import as_completed

    client = ctx.client
    token = uuid.uuid4().hex[:12]
    name = f"lnproofs-model-{token}"
    check_model_workers(ctx)
    if not isinstance(model, Load):
        raise TypeError("on a cluster the model is given as Load(fn, *args), made on each model worker")
    client.register_plugin(_holder_factory(name, model), name=name)
    # on every worker, replacements included, through a plugin: scattered data has no lineage,
    # and its last replica can die with a worker
    states_name = f"lnproofs-states-{token}"
    client.register_plugin(_states_factory(states_name, list(states)), name=states_name)
    need = {MODEL_RESOURCE: 1}
    data: list = []
    if slot_data is not None:
        if not isinstance(slot_data, Load):
            raise TypeError(
                "on a cluster the slots' data is given as Load(fn, *args), made as fn(model, *args) on a model worker"
            )
        # made on a model worker from the model (lineage: remade there if every copy is lost);
        # each certifying worker fetches the slots it certifies
        made = client.submit(_slot_data_task, slot_data, name, key=f"slots-{token}", resources=need, pure=False)
        data = [
            client.submit(operator.getitem, made, s, key=f"slot-{token}-{s}", resources=need)
            for s in range(len(states))
        ]
    # each slot (a layer) prefers one certifying worker, so a worker builds the per-slot caches
    # of its own slots rather than of every slot; others take (steal) its tasks when it is
    # busy or gone.  With no more certifying workers than model workers, the model workers
    # take slots too: they certify while no forward pass is waiting
    holders = set(model_workers(client))
    everyone = sorted(client.scheduler_info().get("workers", {}))
    certifiers = [a for a in everyone if a not in holders]
    home = certifiers if len(certifiers) > len(holders) else everyone
    limit = max(1, waiting * len(model_workers(client)))
    source = iter(enumerate(groups))
    remaining: dict[int, int] = {}
    held: dict[int, list] = {}
    where: dict = {}
    items: dict = {}
    outstanding: set = set()
    queue = as_completed([], with_results=True, raise_errors=False, loop=client.loop)
    stopped: list = []

    def submit_group() -> bool:
        try:
            g, (item, slots) = next(source)
        except StopIteration:
            return False
        except Exception as err:  # a bad group: finish the ones in flight, then raise it
            stopped.append(err)
            return False
        fwd = client.submit(_forward_task, item, forward, name, key=f"forward-{token}-{g}", resources=need, pure=False)
        lineage = [fwd]
        for j, slot in enumerate(slots):
            piece = client.submit(operator.getitem, fwd, j, key=f"piece-{token}-{g}-{j}", resources=need)
            lineage.append(piece)
            extra = (data[slot], True) if data else ()
            done = client.submit(
                _certify_task,
                piece,
                certify,
                states_name,
                slot,
                *extra,
                key=f"certify-{token}-{g}-{j}",
                pure=False,
                workers=[home[slot % len(home)]],
                allow_other_workers=True,
            )
            where[done.key] = (g, j)
            items[done.key] = (g, j)
            outstanding.add(done)
            queue.add(done)
        # the group's forward pass and pieces stay wanted until the group is certified: if a
        # model worker dies, the scheduler recomputes them from this lineage
        held[g] = lineage
        remaining[g] = len(slots)
        if not slots:
            del remaining[g], held[g]
        return True

    try:
        while len(remaining) < limit and not stopped and submit_group():
            pass
        for batch in queue.batches():
            for future, result in batch:
                outstanding.discard(future)
                if future.status == "error":
                    _raise_task_error(future, items[future.key])
                if future.status != "finished":  # cancelled: never expected, said plainly
                    raise RuntimeError(
                        f"the result of {future.key} was lost ({result}); results finished so far "
                        "are written, rerun with --resume"
                    )
                g, j = where.pop(future.key)
                future.release()
                on_result(g, j, result)
                remaining[g] -= 1
                if remaining[g] == 0:
                    del remaining[g]
                    held.pop(g)  # released: no longer wanted
                    while len(remaining) < limit and not stopped and submit_group():
                        pass
        if stopped:
            raise stopped[0]
        record = client.run(_loads_record, name)
    finally:
        if outstanding:
            client.cancel(list(outstanding))
        if data:
            client.cancel(data)
        for plugin in (name, states_name):
            try:
                client.unregister_worker_plugin(plugin)
            except Exception:  # noqa: BLE001 - a closing cluster may have forgotten it already
                pass
    return record


def run_pipeline(
    forward: Callable,
    certify: Callable,
    groups: Iterable,
    *,
    context: ExecutionContext,
    model,
    states=(),
    on_result: Callable[[int, int, object], None],
    waiting: int = WAITING_GROUPS,
    slot_data=None,
    prepare: Callable[[], None] | None = None,
    apart: bool = False,
    idle: Callable[[], None] | None = None,
    finish: Callable | None = None,
    lend: tuple | None = None,
) -> dict:
    """Run ``groups`` through the two stages (see the module docstring).

    ``groups`` yields ``(item, slots)``: ``forward(item, model)`` returns one piece per
    entry of ``slots``, and piece ``j`` is certified as ``certify(piece, states[slots[j]])``.
    Both are module-level functions of importable modules.  ``slot_data``: None, or a
    :class:`Load` ``(fn, *args)`` with ``fn(model, *args)`` the list of every slot's data
    (made once, on a model worker, or here); then piece ``j`` is certified as
    ``certify(piece, states[slot], data[slot])``.  ``model``: a :class:`Load`
    (made on each model worker once) or, in this process, the model itself.  An exception
    raised while drawing the next group stops the drawing; the groups in flight are
    finished and handed over first, then it is raised.  Returns, for a cluster,
    ``{worker address: {"model_worker": bool, "loads": n}}`` (how often each worker made
    the model in this run); in this process ``{}``.  ``prepare``: in this process, a function
    called once while the first forward task runs (what certification will need first, made
    while this process would otherwise wait); a cluster does not call it.  ``apart``: in this
    process, whether the forward tasks may run in a forked worker process (:func:`.forked.forward_side`:
    for runs of several groups, where it pays for its start).  In this process too, work after
    the groups, shared by both sides: ``idle()`` runs once, on a forked forward side after its
    last forward task and once the first group is certified here (while this process certifies
    the last groups), or else here after the last group; then ``finish(beside, idle's result)``
    runs here, where ``beside(fn, *args) -> future`` runs ``fn(*args)`` on the forked forward
    side, or here at once without one.  ``lend``: ``(help_with, attach, batch)``, for a forked
    forward side with time to spare: whenever it has nothing to do, it is handed ``batch`` pieces
    of the newest forwarded group, last first, and computes ``help_with(piece)`` for each (the
    function travels by the fork, not by pickling); a piece whose help came back in time is
    certified as ``attach(piece, help)``, any other as it is.  Which side computed what depends
    on timing, so the help must be what certification would compute itself.
    """
    if context.in_process:
        return _in_process(
            forward, certify, groups, model, list(states), on_result, slot_data, prepare, apart, idle, finish, lend
        )
    return _distributed(context, forward, certify, groups, model, list(states), on_result, waiting, slot_data)
