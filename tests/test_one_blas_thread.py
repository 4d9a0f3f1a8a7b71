"""A certification piece holds BLAS to one thread (the files must not depend on how BLAS splits
its sums), from a controller the run's head sets keep: found once, and again after an import."""

import sys

import pytest

threadpoolctl = pytest.importorskip("threadpoolctl")

from lnproofs.models.head_sets import HeadSets  # noqa: E402


def _blas_threads():
    return [info["num_threads"] for info in threadpoolctl.threadpool_info() if info["user_api"] == "blas"]


def test_one_blas_thread_inside_and_the_limits_restored_after():
    import numpy  # noqa: F401  (its BLAS is loaded)

    sets = HeadSets()
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        before = _blas_threads()
        assert before and max(before) == 2
        with sets.one_blas_thread():
            assert set(_blas_threads()) == {1}
        assert _blas_threads() == before
        first = sets.items[("blas",)][1]
        with sets.one_blas_thread():
            assert set(_blas_threads()) == {1}
        assert sets.items[("blas",)][1] is first             # kept while nothing was imported


def test_an_import_makes_the_controller_again(monkeypatch):
    sets = HeadSets()
    with sets.one_blas_thread():
        pass
    first = sets.items[("blas",)][1]
    monkeypatch.setitem(sys.modules, "a_module_imported_since", object())
    with sets.one_blas_thread():
        assert set(_blas_threads()) == {1}
    assert sets.items[("blas",)][1] is not first
