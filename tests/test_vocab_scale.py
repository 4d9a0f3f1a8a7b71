"""certify-vocab's three roads give one certificate: the whole vocabulary in this process, read in
one piece; chunks of tokens on a Dask cluster of several workers reached by address (``--scheduler``),
with the unembedding streamed from sharded safetensors in small chunks of rows; and the same
streamed read certified in this process.  Every file written (certificates, their arrays, the
keys, the table) is the same byte for byte, for free, box and realisable query sets, for an RMSNorm
head without a bias (the coverage road) and a LayerNorm head with an output bias (the lifted road)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
distributed = pytest.importorskip("distributed")

from lnproofs.models import vocab  # noqa: E402
from lnproofs.models.vocab_run import certify_vocab  # noqa: E402
from lnproofs.propose import vocab as propose_vocab  # noqa: E402

V, D = 120, 4  # in 4 dimensions most of 120 Gaussian keys are inside the hull: every road of the engine runs
SETS = ("free", "box", "realisable")


@pytest.fixture(scope="module")
def scheduler():
    """A local Dask cluster of three workers, reached by address as ``--scheduler`` reaches one."""
    with distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=False, dashboard_address=":0") as cl:
        yield cl.scheduler_address


def _model(folder, family, seed=0):
    """A tiny random model of ``family`` (Llama: RMSNorm, untied, no bias; Phi: LayerNorm, output bias),
    its head spread out and a few rows shortened (inside the hull), saved in shards."""
    import torch

    common = dict(hidden_size=D, intermediate_size=2 * D, num_hidden_layers=1, num_attention_heads=2, vocab_size=V)
    if family == "llama":
        model = transformers.LlamaForCausalLM(transformers.LlamaConfig(tie_word_embeddings=False, **common))
    else:
        model = transformers.PhiForCausalLM(transformers.PhiConfig(**common))
    torch.manual_seed(seed)
    with torch.no_grad():
        for key, p in model.named_parameters():
            if "embed" in key or "lm_head.weight" in key:
                p.normal_(0.0, 1.0)
                p[::9] *= 0.05
            elif key.endswith("bias"):
                p.normal_(0.0, 0.3)
            elif "norm" in key:
                p.uniform_(0.5, 1.5)
    model.save_pretrained(str(folder), max_shard_size=1500)
    return folder


def _files(out):
    """Every file certify-vocab wrote but the summary (it names the model folder and the seconds)."""
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.is_file() and not p.name.startswith("summary")}


@pytest.mark.parametrize("family", ["llama", "phi"])
def test_one_shot_scheduler_and_streamed_runs_write_the_same_certificates(tmp_path, monkeypatch, scheduler, family):
    folder = _model(tmp_path / "model", family)
    monkeypatch.setattr(propose_vocab, "CHUNK_TOKENS", 25)  # 5 chunks of tokens (spread), 5 blocks (one run)
    one = certify_vocab(folder, tmp_path / "one", sets=SETS, bound=1.0, workers=1)
    monkeypatch.setattr(vocab, "CHUNK_BYTES", 8 * D * 17)  # the unembedding read 17 rows at a time
    spread = certify_vocab(folder, tmp_path / "spread", sets=SETS, bound=1.0, scheduler=scheduler)
    streamed = certify_vocab(folder, tmp_path / "streamed", sets=SETS, bound=1.0, workers=1)
    assert one["counts"] == spread["counts"] == streamed["counts"]
    a, b, c = _files(tmp_path / "one"), _files(tmp_path / "spread"), _files(tmp_path / "streamed")
    assert {f"{s}.json" for s in SETS} | {"keys.npy", "table.csv"} <= set(a)
    assert a.keys() == b.keys() == c.keys()
    assert [name for name in a if a[name] != b[name]] == [] and [name for name in a if a[name] != c[name]] == []
    counts = one["counts"]
    for name in SETS:  # tokens the engine settles beside those of their own key or a nudge
        assert counts[name].get("selectable", 0) > 0 and set(counts[name]) - {"selectable", "undecided"}


def test_local_workers_map_one_file_of_the_keys_and_make_the_same_certificate(tmp_path, monkeypatch):
    """With local workers and a folder, the float64 keys are written there once and every worker maps
    that file (the workers of one machine share its pages) instead of receiving a copy; the
    certificate is the one-shot run's."""
    import numpy as np

    K = np.random.default_rng(3).normal(size=(V, D))
    K[::9] *= 0.05
    monkeypatch.setattr(propose_vocab, "CHUNK_TOKENS", 25)
    one = propose_vocab.certify_vocab_chunks(K, workers=1)
    spread = propose_vocab.certify_vocab_chunks(K, workers=2, folder=tmp_path / "chunks")
    assert spread.manifest() == one.manifest() and spread.arrays().keys() == one.arrays().keys()
    assert all(np.array_equal(spread.arrays()[name], one.arrays()[name]) for name in one.arrays())
    assert np.array_equal(np.load(tmp_path / "chunks" / "keys-float64.npy"), K)


def test_a_worker_refuses_a_keys_file_changed_under_it(tmp_path):
    """The file a worker maps must have the SHA-256 the run wrote it with: one changed since is refused."""
    import numpy as np

    from lnproofs.certificates.keyfile import sha256_of
    from lnproofs.kernel import FileFormatError

    K = np.random.default_rng(4).normal(size=(30, 3))
    path = tmp_path / "keys-float64.npy"
    np.save(path, K)
    digest = sha256_of(path)
    task = ((0, 10), ((str(path), digest, K.nbytes), None, 0, 10, None, False))
    assert propose_vocab._chunk_task(*task).check(K).ok
    K[5, 1] += 1e-9
    np.save(path, K)
    with pytest.raises(FileFormatError, match="SHA-256"):
        propose_vocab._chunk_task(*task)
