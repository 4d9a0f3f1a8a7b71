"""certify-model --corpus on Dask workers: the same files as in one process."""

from __future__ import annotations

import json

import pytest
from bad_inputs.models import tiny_bert

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("distributed")

TEXTS = [
    "the cat sat on the mat and the dog ran far",
    "a dog slept",
    "the mat sat on the cat . the dog ran",
    "the dog ran and ran",
    "a cat sat",
]


def test_two_workers_write_exactly_what_one_process_writes(cli, tmp_path):
    tiny_bert(tmp_path / "bert", layers=2, heads=2, width=16, max_positions=64)
    corpus = tmp_path / "texts.txt"
    corpus.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    outputs = {}
    for workers in ("1", "2"):
        out = tmp_path / f"out{workers}"
        result = cli(
            ["certify-model", tmp_path / "bert", "--corpus", corpus, "--out", out, "--quiet", "--workers", workers]
        )
        assert result.status == 0, result.err
        outputs[workers] = out
    one, two = outputs["1"], outputs["2"]
    assert (one / "table.csv").read_bytes() == (two / "table.csv").read_bytes()
    assert (one / "summary_heads.csv").read_bytes() == (two / "summary_heads.csv").read_bytes()
    for number in range(len(TEXTS)):
        name = f"texts/text{number:05d}.json"
        assert json.loads((one / name).read_text()) == json.loads((two / name).read_text())
    checked = cli(["check", two / "texts" / "text00002.json", "--json"])
    assert checked.status == 0 and all(r["ok"] for r in checked.json())


@pytest.mark.parametrize("cores,model_workers,cluster", [(2, None, False), (4, None, True), (2, "1", True)])
def test_the_automatic_layout_starts_a_cluster_only_with_cores_to_spare(
    cli, tmp_path, monkeypatch, cores, model_workers, cluster
):
    """Without --workers, a corpus of PARALLEL_MIN_TEXTS texts goes to a local cluster on a
    machine of at least PARALLEL_MIN_CORES cores (or when --model-workers asks for one); on two
    cores it stays in this process, where it is faster."""
    import contextlib

    import lnproofs.execution as execution
    import lnproofs.models.corpus_run as corpus_run

    tiny_bert(tmp_path / "bert", layers=1, heads=2, width=16, max_positions=64)
    corpus = tmp_path / "texts.txt"
    corpus.write_text("\n".join((TEXTS * 4)[: corpus_run.PARALLEL_MIN_TEXTS]) + "\n", encoding="utf-8")
    asked = []

    @contextlib.contextmanager
    def in_process(workers, scheduler, *, worthwhile, **_):
        asked.append(worthwhile)
        yield execution.ExecutionContext(None, 1)

    monkeypatch.setattr(execution, "machine_workers", lambda: cores)
    monkeypatch.setattr(execution, "open_client", in_process)
    args = ["certify-model", tmp_path / "bert", "--corpus", corpus, "--out", tmp_path / "out", "--quiet"]
    result = cli(args + (["--model-workers", model_workers] if model_workers else []))
    assert result.status == 0, result.err
    assert asked == [cluster]
