"""certify-vocab on tiny random models of today's families, built from their transformers configs:
Llama-3 (untied, and 3.2's tied head), Qwen2.5 (tied), Mistral, Phi-3, Gemma-2 (tied, gain
1 + weight, logits soft-capped) and Phi (LayerNorm, output bias).  The output layer read from the
weights is the model's own (its final norm module and head give the same logits), certify-vocab's
statuses through the command line and through Python are the same files, and they agree with
references that share no code with the engine: the vertices of the keys' convex hull (qhull), the
witnesses those vertices give run through the model's own final norm, head and soft cap, and the
tokens the model's forward pass outputs."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
spatial = pytest.importorskip("scipy.spatial")

from lnproofs.models.vocab import read_output_layer  # noqa: E402
from lnproofs.models.vocab_run import certify_vocab  # noqa: E402

V, D = 40, 4  # tokens, width
COMMON = dict(hidden_size=D, intermediate_size=2 * D, num_hidden_layers=1, num_attention_heads=2, vocab_size=V)
COMMON.update(num_key_value_heads=1, pad_token_id=0, bos_token_id=0, eos_token_id=0)
LLAMA3_ROPE = dict(
    rope_type="llama3",
    rope_theta=500000.0,
    factor=8.0,
    low_freq_factor=1.0,
    high_freq_factor=4.0,
    original_max_position_embeddings=8192,
)
#: name -> (config class, model class, config fields, (family, norm, tied, output bias, soft cap))
FAMILIES = {
    "llama3": (
        "LlamaConfig",
        "LlamaForCausalLM",
        dict(rms_norm_eps=1e-5, max_position_embeddings=131072, rope_parameters=LLAMA3_ROPE),
        ("llama", "rmsnorm", False, False, None),
    ),
    "llama3.2-tied": (
        "LlamaConfig",
        "LlamaForCausalLM",
        dict(rms_norm_eps=1e-5, tie_word_embeddings=True, rope_parameters=LLAMA3_ROPE, max_position_embeddings=131072),
        ("llama", "rmsnorm", True, False, None),
    ),
    "qwen2.5": (
        "Qwen2Config",
        "Qwen2ForCausalLM",
        dict(rms_norm_eps=1e-6, tie_word_embeddings=True),
        ("qwen2", "rmsnorm", True, False, None),
    ),
    "mistral": (
        "MistralConfig",
        "MistralForCausalLM",
        dict(rms_norm_eps=1e-5, sliding_window=4),
        ("mistral", "rmsnorm", False, False, None),
    ),
    "phi3": ("Phi3Config", "Phi3ForCausalLM", dict(rms_norm_eps=1e-5), ("phi3", "rmsnorm", False, False, None)),
    "gemma2": (
        "Gemma2Config",
        "Gemma2ForCausalLM",
        dict(head_dim=2, rms_norm_eps=1e-6, final_logit_softcapping=30.0),
        ("gemma2", "rmsnorm", True, False, 30.0),
    ),
    "phi": ("PhiConfig", "PhiForCausalLM", dict(layer_norm_eps=1e-5), ("phi", "layernorm", False, True, None)),
}


def build(name, folder, seed=0, edit=None):
    """A random model of ``name`` with its head, final norm and biases perturbed, saved to ``folder``;
    returns the model in float64 (its own modules are the reference)."""
    import torch

    config_name, model_name, fields, _ = FAMILIES[name]
    torch.manual_seed(seed)
    model = getattr(transformers, model_name)(getattr(transformers, config_name)(**{**COMMON, **fields}))
    gemma = name.startswith("gemma")
    with torch.no_grad():
        for key, p in model.named_parameters():
            if "embed" in key or "lm_head.weight" in key:
                p.normal_(0.0, 1.0)
                p[1:40:8] *= 0.05  # five short rows: inside the hull, never output
            elif key.endswith("bias"):
                p.normal_(0.0, 0.5)
            elif "norm" in key:  # a gain of 0.5 to 1.5 either way it is stored
                p.uniform_(-0.5, 0.5) if gemma else p.uniform_(0.5, 1.5)
        if edit is not None:
            edit(model)
    model.save_pretrained(str(folder))
    return model.double().eval()


def _final_norm(model):
    return model.model.final_layernorm if hasattr(model.model, "final_layernorm") else model.model.norm


def _logits(model, hidden):
    """The model's own logits of final-norm inputs ``hidden`` (its norm, head and soft cap)."""
    import torch

    with torch.no_grad():
        z = model.lm_head(_final_norm(model)(torch.as_tensor(hidden)))
        cap = getattr(model.config, "final_logit_softcapping", None)
        return (cap * torch.tanh(z / cap) if cap else z).numpy()


def _close(a, b):
    """Equal to float32's precision, row by row (the models normalise in float32)."""
    return (np.abs(a - b).max(axis=1) <= 1e-6 * np.abs(b).max(axis=1)).all()


def _hull_selectable(keys, bias=None):
    """Tokens that are the strict argmax of ``k_j . q + b_j`` for some q, from qhull alone: a vertex of
    the keys' hull (with a bias: of the lifted points (k_j, b_j), on a facet facing up), and for each
    a witness, the sum of the outward normals of its facets (inside its normal cone)."""
    points = keys if bias is None else np.hstack([keys, bias[:, None]])
    hull = spatial.ConvexHull(points)
    normals = hull.equations[:, :-1]
    out = {}
    for i in hull.vertices:
        facets = [f for f, simplex in enumerate(hull.simplices) if i in simplex]
        up = [f for f in facets if bias is None or normals[f, -1] > 0]
        if up:
            q = normals[up].sum(axis=0)
            out[int(i)] = q if bias is None else q[:-1] / q[-1]
    return out


def _statuses(out, name):
    import pandas as pd

    return pd.read_parquet(out / "table.parquet")[name].tolist()


def _selectable(statuses):
    return {i for i, s in enumerate(statuses) if s == "selectable"}


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_the_output_layer_is_the_model_s_own(tmp_path, name):
    import torch

    model = build(name, tmp_path / "m")
    family, norm, tied, has_bias, cap = FAMILIES[name][3]
    layer = read_output_layer(tmp_path / "m")
    eps = FAMILIES[name][2].get("rms_norm_eps", FAMILIES[name][2].get("layer_norm_eps"))
    assert (layer.family, layer.norm, layer.tied, layer.bias is not None, layer.softcap, layer.eps) == (
        family,
        norm,
        tied,
        has_bias,
        cap,
        eps,
    )
    assert layer.describe().get("logit soft cap") == cap
    # small inputs, so that eps matters: the norm, gain convention, bias and head as the model computes them
    # (to float32's precision: Gemma-2's norm computes in float32 whatever its input)
    x = np.random.default_rng(1).normal(size=(50, D)) * np.geomspace(1e-4, 10, 50)[:, None]
    if norm == "layernorm":
        c = x - x.mean(axis=1, keepdims=True)
        z = layer.gain * c / np.sqrt((c * c).mean(axis=1, keepdims=True) + layer.eps) + layer.beta
    else:
        z = layer.gain * x / np.sqrt((x * x).mean(axis=1, keepdims=True) + layer.eps)
    with torch.no_grad():
        assert _close(_final_norm(model)(torch.as_tensor(x)).numpy(), z)
    logits = z @ layer.keys.T + (0 if layer.bias is None else layer.bias)
    expected = _logits(model, x)
    assert _close(cap * np.tanh(logits / cap) if cap else logits, expected)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_certify_vocab_matches_the_references(cli, tmp_path, name):
    import torch

    model = build(name, tmp_path / "m", seed=2)
    layer = read_output_layer(tmp_path / "m")
    result = cli(["certify-vocab", tmp_path / "m", "--out", tmp_path / "cli", "--workers", "1"])
    assert result.status == 0, result.err
    for query_set in ("free", "box", "realisable"):
        checked = cli(["check", tmp_path / "cli" / f"{query_set}.json"])
        assert checked.status == 0, (query_set, checked.out)
    summary = certify_vocab(tmp_path / "m", tmp_path / "api", workers=1)
    for f in (tmp_path / "cli").iterdir():  # the same road: the same files, byte for byte
        if f.is_file() and not f.name.startswith("summary"):
            assert f.read_bytes() == (tmp_path / "api" / f.name).read_bytes(), f.name
    assert summary["counts"] == json.loads((tmp_path / "cli" / "summary.json").read_text())["counts"]
    assert summary["output layer"].get("logit soft cap") == FAMILIES[name][3][4]
    capped = "theorem vocab.soft_cap" in (tmp_path / "cli" / "summary.md").read_text()
    assert capped == (FAMILIES[name][3][4] is not None)

    free, realisable = _statuses(tmp_path / "cli", "free"), _statuses(tmp_path / "cli", "realisable")
    assert "undecided" not in free and "undecided" not in realisable
    reference = _hull_selectable(layer.keys, layer.bias)
    assert _selectable(free) == set(reference) and 0 < len(reference) < V
    assert _selectable(realisable) <= _selectable(free)
    if layer.norm == "rmsnorm":  # every direction is realised: the same tokens, each by its hull witness
        assert _selectable(realisable) == set(reference)
        tokens = sorted(reference)
        hidden = np.array([reference[i] / layer.gain for i in tokens])  # the norm maps it to a multiple of q
        got = _logits(model, hidden)
        assert got.argmax(axis=1).tolist() == tokens
        top2 = np.sort(got, axis=1)[:, -2:]
        assert (top2[:, 1] > top2[:, 0]).all()  # strict, after the cap too
    # the model's forward pass outputs only tokens claimed possible
    ids = torch.as_tensor(np.random.default_rng(3).integers(0, V, size=(64, 8)))
    with torch.no_grad():
        winners = set(model(ids).logits.argmax(-1).flatten().tolist())
    assert winners and winners <= _selectable(realisable)


def test_a_zero_gemma_gain_is_read_as_1_plus_weight(cli, tmp_path):
    """Gemma-2's stored weight -1 is a gain of 0: the realisable queries lose that coordinate, and the
    tokens they can output are the vertices of the hull of the keys without it."""

    def zero(model):
        model.model.norm.weight[0] = -1.0

    build("gemma2", tmp_path / "m", seed=4, edit=zero)
    layer = read_output_layer(tmp_path / "m")
    assert layer.gain[0] == 0.0 and (layer.gain[1:] != 0).all()
    assert cli(["certify-vocab", tmp_path / "m", "--out", tmp_path / "o", "--workers", "1"]).status == 0
    assert cli(["check", tmp_path / "o" / "realisable.json"]).status == 0
    free, realisable = _statuses(tmp_path / "o", "free"), _statuses(tmp_path / "o", "realisable")
    projected = set(_hull_selectable(layer.keys[:, 1:] * layer.gain[1:]))
    assert _selectable(realisable) == projected and _selectable(free) == set(_hull_selectable(layer.keys))
    assert _selectable(free) - projected, "the lost coordinate costs some token its win"
