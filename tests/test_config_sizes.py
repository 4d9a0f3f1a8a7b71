"""A config.json's sizes are checked against the weights' shapes before any model is built."""

from __future__ import annotations

import json
import time

import pytest
from bad_inputs.models import tiny_gpt2

from lnproofs.kernel import ModelError
from lnproofs.models.config_sizes import weight_layers
from lnproofs.models.families import FAMILIES
from lnproofs.models.loading import load_model

# A refused configuration costs a header read and a model built on the meta device; the
# billion-layer file ran for minutes before.  Generous for a loaded machine.
REFUSAL_SECONDS = 30


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gpt2")
    tiny_gpt2(folder)
    return folder


def _edited(gpt2, tmp_path, **fields):
    config = json.loads((gpt2 / "config.json").read_text())
    config.update(fields)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return path


@pytest.mark.parametrize(
    "fields, fragment",
    [
        (dict(n_layer=10**9), "n_layer 1000000000 but the weights hold 2 layer(s) (indices 0..1)"),
        (dict(n_layer=1e9), "n_layer 1000000000.0 (layers); accepted: a positive integer"),
        (dict(n_head=0), "n_head 0 (attention heads)"),
        (dict(n_embd=10**15, n_head=1), "n_embd 1000000000000000, more than any dimension of the weights"),
    ],
)
def test_absurd_sizes_are_refused_quickly_before_any_model_is_built(gpt2, tmp_path, fields, fragment):
    start = time.perf_counter()
    with pytest.raises(ModelError) as info:
        load_model(gpt2 / "model.safetensors", config=_edited(gpt2, tmp_path, **fields))
    assert fragment in str(info.value)
    assert time.perf_counter() - start < REFUSAL_SECONDS


def test_layers_are_read_from_the_tensor_names_under_any_prefix():
    names = [
        "transformer.h.0.attn.c_attn.weight",
        "transformer.h.1.mlp.c_fc.weight",
        "transformer.wte.weight",
        "h.11.ln_1.weight",
        "x.hh.7.attn",
    ]
    assert weight_layers(FAMILIES["gpt2"], names) == {0, 1, 11}
    assert weight_layers(FAMILIES["bert"], ["bert.encoder.layer.3.output.dense.weight"]) == {3}
    assert weight_layers(FAMILIES["llama"], ["model.layers.2.self_attn.q_proj.weight", "lm_head.weight"]) == {2}


def test_a_gap_in_the_stored_layers_is_refused(gpt2, tmp_path):
    from safetensors.numpy import load_file, save_file

    tensors = {k.replace("h.1.", "h.2."): v for k, v in load_file(str(gpt2 / "model.safetensors")).items()}
    save_file(tensors, str(tmp_path / "model.safetensors"))
    (tmp_path / "config.json").write_text((gpt2 / "config.json").read_text())
    with pytest.raises(ModelError, match=r"n_layer 2 but the weights hold 2 layer\(s\) \(indices 0..2\)"):
        load_model(tmp_path / "model.safetensors")
