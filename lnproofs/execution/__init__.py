"""Running independent tasks in parallel on Dask distributed, with nothing lost.

This is the package's one parallel mechanism.  A run is a list of independent tasks
(a Figure 1 cell, a chunk of keys, a text of a corpus, a numeric check); they run in
this process (``workers=1``), on a local cluster of worker processes (``workers=N``),
or on an existing Dask cluster (``scheduler="tcp://host:8786"``).  Whatever runs them,
the results come back in the order of the tasks, and each result is handed to the
caller as soon as its task finishes, so long runs write their resume files as they go.
A worker that dies costs a retry of the tasks it held (the Dask scheduler reruns them
elsewhere); the results are those of an undisturbed run.

Entry points:

* :func:`run_tasks` ``(fn, items, *, workers, scheduler, on_result, shared)``: the one
  call a loop over independent items needs;
* :class:`Load` for shared data made on a worker (a model loaded from its path)
  rather than sent from this process;
* :func:`open_client` for several :func:`run_tasks` calls on one cluster, and
  :func:`share` to send their common data to its workers once;
* :func:`run_pipeline` for work in two stages: forward passes on the workers that hold a
  model (Dask worker resource ``MODEL``), certification of their pieces on any worker;
* :func:`resolve_workers` / :func:`auto_workers` / :func:`resolve_model_workers` for the
  option rules;
* :func:`threads_per_worker`, :func:`limit_threads` and :func:`thread_settings`: each
  worker's libraries (torch, BLAS, OpenMP, HiGHS) keep to its share of the cores
  (:mod:`lnproofs.execution.threads`).

``import lnproofs.execution`` does not import dask: it is loaded inside the functions
that need it, and worker processes import the task's own module only when a task
arrives.
"""

from __future__ import annotations

from .cluster import (
    ExecutionContext,
    auto_workers,
    machine_workers,
    open_client,
    resolve_model_workers,
    resolve_workers,
)
from .pipeline import MODEL_RESOURCE, check_model_workers, model_workers, run_pipeline
from .tasks import InOrder, Load, Shared, run_tasks, share
from .threads import limit_threads, thread_settings, threads_per_worker

__all__ = [
    "limit_threads",
    "thread_settings",
    "threads_per_worker",
    "ExecutionContext",
    "InOrder",
    "Load",
    "MODEL_RESOURCE",
    "check_model_workers",
    "model_workers",
    "resolve_model_workers",
    "run_pipeline",
    "auto_workers",
    "machine_workers",
    "open_client",
    "resolve_workers",
    "run_tasks",
    "share",
    "Shared",
]
