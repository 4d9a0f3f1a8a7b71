"""certify on large key sets: chunks of keys as tasks, the same certificate with any number of workers."""

from __future__ import annotations

import json

import numpy as np
import pytest

import lnproofs.propose.certification as C
from lnproofs.certificates.certificate import Certificate
from lnproofs.certificates.check import check_certificate
from lnproofs.certificates.writers import result_to_json


@pytest.fixture(scope="module")
def scheduler():
    """2 worker threads in this process, reached by address as --scheduler reaches a cluster."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as cl:
        yield cl.scheduler_address


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunked mode from 40 keys on, 16 keys per chunk, so a test-sized key set has several."""
    monkeypatch.setattr(C, "PARALLEL_MIN_KEYS", 40)
    monkeypatch.setattr(C, "CHUNK_KEYS", 16)


def _keys():
    rng = np.random.default_rng(9)
    keys = rng.standard_normal((70, 3))
    keys[[5, 40]] = keys[60]  # twins across chunks
    keys[12] = 0.25 * keys[1] + 0.75 * keys[50]  # a key on a segment between two others
    return keys


def test_chunks_depend_on_the_key_count_only():
    assert C.key_chunks(25, size=10) == [list(range(10)), list(range(10, 20)), list(range(20, 25))]
    assert C.key_chunks(25, known={0, 1, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}, size=10) == [
        list(range(2, 10)),
        list(range(20, 25)),
    ]


def test_same_certificate_with_one_or_two_workers_and_same_statuses_as_one_piece(
    small_chunks, scheduler, tmp_path, monkeypatch
):
    keys = _keys()
    C.certify(keys, workers=1, out=tmp_path / "one.json")
    spread = C.certify(keys, scheduler=scheduler, out=tmp_path / "two.json")
    assert (tmp_path / "one.json").read_bytes() == (tmp_path / "two.json").read_bytes()
    assert check_certificate(spread, keys).ok
    monkeypatch.setattr(C, "PARALLEL_MIN_KEYS", 10**9)  # the one-piece run
    whole = C.certify(keys)
    assert spread.statuses == whole.statuses
    assert "undecided" not in whole.statuses and "unselectable" in whole.statuses


def test_ball_query_set_in_chunks(small_chunks, scheduler):
    from lnproofs import BallQuerySet

    keys = _keys()
    qs = BallQuerySet(radius=1.0)
    spread = C.certify(keys, qs, scheduler=scheduler)
    assert json.dumps(spread.to_json()) == json.dumps(C.certify(keys, qs, workers=1).to_json())
    assert check_certificate(spread, keys).ok


def test_resumed_chunked_run_keeps_what_was_written(small_chunks, scheduler, tmp_path):
    keys = _keys()
    out = tmp_path / "cert.json"
    full = C.certify(keys, workers=1)
    side = C.partial_path(out)
    # a run cut after its first two chunks: header and 32 results
    lines = [json.dumps({"fingerprint": C._fingerprint(keys, {"kind": "free"}), "n_keys": 70, "dim": 3})]
    lines += [json.dumps(result_to_json(r)) for r in full.results[:32]]
    side.write_text("\n".join(lines) + "\n")
    resumed = C.certify(keys, scheduler=scheduler, out=out, resume=True)
    assert resumed.statuses == full.statuses and not side.exists()


def test_unreachable_scheduler_leaves_the_partial_file_alone(small_chunks, cli, tmp_path):
    keys = _keys()
    np.save(tmp_path / "keys.npy", keys)
    out = tmp_path / "cert.json"
    side = C.partial_path(out)
    side.write_text(json.dumps({"fingerprint": "x"}) + "\n" + json.dumps({"index": 0}) + "\n")
    before = side.read_bytes()
    for extra in ([], ["--resume"]):
        result = cli(["certify", tmp_path / "keys.npy", "--out", out, "--scheduler", "tcp://127.0.0.1:9", *extra])
        assert result.status == 2 and "cannot reach the Dask scheduler" in result.err
        assert side.read_bytes() == before and not out.exists()


def test_local_cluster_from_the_command_line_keeps_stdout_for_json(small_chunks, cli, tmp_path, capfd):
    """--workers 2 starts a local cluster of 2 worker processes; whatever they print (solver
    banners) goes to stderr, so --json stays valid JSON on stdout."""
    keys = _keys()
    np.save(tmp_path / "keys.npy", keys)
    expected = C.certify(keys, workers=1)
    capfd.readouterr()  # drop what this process printed itself
    result = cli(["certify", tmp_path / "keys.npy", "--workers", "2", "--json"])
    assert result.status == 0, result.err
    printed = Certificate.from_json(result.out)  # the claims per key, as one process makes them
    assert printed.statuses == expected.statuses and check_certificate(printed, keys).ok
    captured = capfd.readouterr()  # what reached file descriptor 1 from the workers
    assert captured.out.strip() == ""
