"""The unembedding read in chunks of rows: the same float64 keys as one read, from one safetensors
file or a sharded folder and in bfloat16; certify-vocab's certificates byte for byte the same
whether the keys came in one chunk or many; and a read whose memory grows by the keys and a
chunk, not by the file."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from lnproofs.kernel import OptionError  # noqa: E402
from lnproofs.models import vocab  # noqa: E402
from lnproofs.models.vocab import read_output_layer, unembedding_rows  # noqa: E402


def _llama(folder, *, seed=0, dtype=None, shard=None, tie=False):
    """A tiny random Llama with its head perturbed, saved in one file or in shards of ``shard`` bytes."""
    import torch

    torch.manual_seed(seed)
    config = transformers.LlamaConfig(
        hidden_size=6,
        intermediate_size=12,
        num_hidden_layers=1,
        num_attention_heads=2,
        vocab_size=45,
        tie_word_embeddings=tie,
    )
    model = transformers.LlamaForCausalLM(config)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "embed" in name or "lm_head" in name:
                p.normal_(0.0, 1.0)
            elif "norm" in name:
                p.uniform_(0.5, 1.5)
    if dtype is not None:
        model = model.to(dtype)
    model.save_pretrained(str(folder), **({} if shard is None else {"max_shard_size": shard}))
    return folder, model


def _expected(model):
    import torch

    return model.lm_head.weight.detach().to(torch.float64).numpy()


@pytest.mark.parametrize("rows", [1, 7, 45, 1000, None])
def test_chunks_cover_the_rows_in_order_as_float64(tmp_path, rows):
    folder, model = _llama(tmp_path / "m")
    got = list(unembedding_rows(folder, rows=rows))
    spans = [(a, b) for a, b, _ in got]
    step = 45 if rows is None else min(rows, 45)
    assert spans == [(a, min(a + step, 45)) for a in range(0, 45, step)]
    assert all(chunk.dtype == np.float64 and chunk.shape == (b - a, 6) for a, b, chunk in got)
    assert np.array_equal(np.vstack([chunk for _, _, chunk in got]), _expected(model))
    layer = read_output_layer(folder, rows=rows)
    assert np.array_equal(layer.keys, _expected(model)) and layer.keys.flags.c_contiguous


def test_a_sharded_folder_and_bfloat16_weights_are_read_exactly(tmp_path):
    import torch

    folder, model = _llama(tmp_path / "m", dtype=torch.bfloat16, shard=800)
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    shards = set(index["weight_map"].values())
    assert len(shards) > 1 and index["weight_map"]["lm_head.weight"] != index["weight_map"]["model.norm.weight"]
    keys = read_output_layer(folder, rows=4).keys
    assert np.array_equal(keys, _expected(model))  # bfloat16 widens exactly
    assert not (keys.astype(np.float32).view(np.uint32) & 0xFFFF).any()  # bfloat16: a float32's upper half
    single, _ = _llama(tmp_path / "one", dtype=torch.bfloat16)
    assert np.array_equal(read_output_layer(single).keys, keys)


def test_a_pytorch_pickle_is_read_once_and_cut_into_the_same_chunks(tmp_path, monkeypatch):
    import torch
    from safetensors.torch import load_file

    from torch_backend.models import tensors

    folder, model = _llama(tmp_path / "m")
    state = load_file(str(folder / "model.safetensors"))
    torch.save(state, str(folder / "pytorch_model.bin"))
    (folder / "model.safetensors").unlink()
    loads = []
    real = tensors.torch_state_dict
    monkeypatch.setattr(tensors, "torch_state_dict", lambda path: loads.append(path) or real(path))
    got = list(unembedding_rows(folder, rows=10))
    assert [(a, b) for a, b, _ in got] == [(0, 10), (10, 20), (20, 30), (30, 40), (40, 45)]
    assert np.array_equal(np.vstack([c for _, _, c in got]), _expected(model))
    assert len(loads) <= 3  # the names, the shape and the rows: not once per chunk
    assert np.array_equal(read_output_layer(folder, rows=10).keys, _expected(model))


def test_a_tied_head_is_read_in_chunks_from_the_embedding(tmp_path):
    folder, model = _llama(tmp_path / "m", tie=True)
    layer = read_output_layer(folder, rows=10)
    assert layer.tied and layer.names["unembedding"] == "model.embed_tokens.weight"
    assert np.array_equal(layer.keys, model.model.embed_tokens.weight.detach().double().numpy())


def test_a_non_positive_chunk_is_refused(tmp_path):
    folder, _ = _llama(tmp_path / "m")
    with pytest.raises(OptionError, match="rows = 0 per chunk"):
        list(unembedding_rows(folder, rows=0))


def _outputs(out):
    """Every file certify-vocab wrote but the summary (it names the model folder and the seconds)."""
    return {p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and not p.name.startswith("summary")}


def test_certificates_are_byte_identical_from_one_chunk_and_from_many(cli, tmp_path, monkeypatch):
    folder, _ = _llama(tmp_path / "one", seed=4)
    sharded, _ = _llama(tmp_path / "sharded", seed=4, shard=800)
    argv = ["--workers", "1", "--sets", "free,box,realisable"]
    assert cli(["certify-vocab", folder, "--out", tmp_path / "a", *argv]).status == 0
    monkeypatch.setattr(vocab, "CHUNK_BYTES", 8 * 6 * 7)  # chunks of 7 rows, from the shards
    assert list(unembedding_rows(sharded))[0][:2] == (0, 7)
    assert cli(["certify-vocab", sharded, "--out", tmp_path / "b", *argv]).status == 0
    one, many = _outputs(tmp_path / "a"), _outputs(tmp_path / "b")
    assert {"free.json", "box.json", "realisable.json", "keys.npy", "table.csv"} <= set(one)
    assert one.keys() == many.keys() and all(one[name] == many[name] for name in one)
    assert cli(["check", tmp_path / "b" / "free.json"]).status == 0


_PEAK = """
import json, sys
from pathlib import Path
from lnproofs.models.vocab import read_output_layer
from torch_backend.models.tensors import read_tensor
folder, road = sys.argv[1], sys.argv[2]
read_output_layer(sys.argv[3])  # the modules a read loads, loaded before the baseline
def status(field):
    line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith(field + ":"))
    return int(line.split()[1]) * 1024
Path("/proc/self/clear_refs").write_text("5")  # the peak (VmHWM) starts again from the resident size now
before = status("VmRSS")
if road == "chunks":
    keys = read_output_layer(folder, rows=256).keys
else:  # the whole tensor at once, as the reader did before it read in chunks
    keys = read_tensor(Path(folder) / "model.safetensors", "lm_head.weight")
print(json.dumps({"grown": status("VmHWM") - before, "keys": keys.nbytes}))
"""


def _head_folder(folder, n, d):
    import torch
    from safetensors.torch import save_file

    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "tie_word_embeddings": False}))
    weights = {"lm_head.weight": torch.randn(n, d, generator=torch.Generator().manual_seed(0)) * 0.02}
    save_file({**weights, "model.norm.weight": torch.ones(d)}, str(folder / "model.safetensors"))
    return folder


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the peak resident size from /proc (Linux)")
def test_a_chunked_read_grows_by_the_keys_and_a_chunk_not_by_the_file(tmp_path):
    """Peak memory in a fresh process: reading 16,384 x 256 float32 rows (16 MiB in the file, 32 MiB
    as float64) in chunks of 256 rows grows by the float64 keys and a few MiB; reading the tensor whole
    (the control, to show the measurement tells them apart) grows by the file's rows as well."""
    big, small = _head_folder(tmp_path / "big", 16384, 256), _head_folder(tmp_path / "small", 64, 256)
    grown = {}
    for road in ("chunks", "whole"):
        done = subprocess.run(
            [sys.executable, "-c", _PEAK, str(big), road, str(small)], capture_output=True, text=True, check=True
        )
        grown[road] = json.loads(done.stdout.strip().splitlines()[-1])
    keys, file_rows = grown["chunks"]["keys"], 16384 * 256 * 4
    assert grown["chunks"]["grown"] <= keys + file_rows // 4, grown
    assert grown["whole"]["grown"] >= keys + file_rows * 3 // 4, grown
