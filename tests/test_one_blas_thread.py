"""A certification piece holds BLAS to one thread (the files must not depend on how BLAS splits
its sums), from a controller the run's head sets keep: found once, and again after an import.

Run in a fresh interpreter: threadpoolctl lets only one Python thread at a time set OpenBLAS's
process-wide limit, and a thread of an earlier test in this process may still hold it."""

import subprocess
import sys

import pytest

pytest.importorskip("threadpoolctl")

SCRIPT = r"""
import sys
import numpy
import threadpoolctl
from lnproofs.models.head_sets import HeadSets

def blas():
    return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]

sets = HeadSets()
with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
    before = blas()
    assert before and max(before) == 2, before
    with sets.one_blas_thread():
        assert set(blas()) == {1}, blas()
    assert blas() == before, (blas(), before)
    first = sets.items[("blas",)][1]
    with sets.one_blas_thread():
        assert set(blas()) == {1}
    assert sets.items[("blas",)][1] is first              # kept while nothing was imported
    sys.modules["a_module_imported_since"] = object()
    with sets.one_blas_thread():
        assert set(blas()) == {1}
    assert sets.items[("blas",)][1] is not first          # made again after an import
print("ok")
"""


def test_one_blas_thread_inside_the_limits_restored_after_and_the_controller_kept():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"
