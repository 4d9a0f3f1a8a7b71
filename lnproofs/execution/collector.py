"""The cyclic garbage collector during a long run in this process.

Each collection of the oldest generation walks every object the process holds: the modules
imported so far (torch, transformers, matplotlib: 60,000 to 170,000 objects), the model, and
the run's results in flight.  With Python's thresholds (700, 10, 10) a corpus run of 100
GPT-NeoX inputs of MiniLM's shape made 14 such collections in the certifying process, 3.3 s
of its 17 s.  :func:`collector_budget` is what a run in this process holds for its length:
young objects looked at after :data:`COLLECTOR_THRESHOLDS`'s 10,000 allocations, and every
object that exists when the run starts moved out of the collector's sight (``gc.freeze``:
the model, the libraries, the caller's own), so that the remaining collections walk the
run's objects only (the same run: one collection of the oldest, 0.02 s).  Objects still
reach zero references and go as always; only cycles among the frozen ones wait for the end
of the block, where everything frozen goes back (``gc.unfreeze``).  A process forked inside
the block inherits this, so its collector does not touch (and copy) the pages of the
frozen objects either.
"""

from __future__ import annotations

import contextlib
import gc

__all__ = ["COLLECTOR_THRESHOLDS", "collector_budget"]

#: the collector thresholds of a long run (Python's are 700, 10, 10); the ``lnproofs``
#: program sets them for its whole process (:func:`lnproofs.cli.console`)
COLLECTOR_THRESHOLDS = (10_000, 10, 10)


@contextlib.contextmanager
def collector_budget():
    """Inside the block: the first threshold at least :data:`COLLECTOR_THRESHOLDS`'s, and every
    object that exists at its start frozen (unless something froze objects before: those are
    left as they are, and nothing more is frozen); both as before after it."""
    before = gc.get_threshold()
    freeze = gc.get_freeze_count() == 0
    gc.set_threshold(max(before[0], COLLECTOR_THRESHOLDS[0]), *before[1:])
    if freeze:
        gc.freeze()
    try:
        yield
    finally:
        if freeze:
            gc.unfreeze()
        gc.set_threshold(*before)
