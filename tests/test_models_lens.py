"""TransformerLens models held in Python: load_model(bridge) extracts the queries, keys and
attention the model computes itself, with and without LayerNorm folded, and certifies."""

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformer_lens")

from tiny_decoders import attention_probabilities  # noqa: E402

from lnproofs import load_model  # noqa: E402
from lnproofs.kernel import ModelError  # noqa: E402
from lnproofs.models.certify_model import certify_model, check_model_file, model_file_certificates  # noqa: E402
from lnproofs.models.extract import capture_layers  # noqa: E402

IDS = np.array([1, 5, 3, 9, 2, 7])
# TransformerLens runs these models in float32: its hooks hold float32 values.
FLOAT32 = 2e-6


def _bridge(norm, positions, kv=None, *, fold=False, seed=0):
    from transformer_lens import TransformerBridgeConfig
    from transformer_lens.model_bridge.sources.native import boot

    torch.manual_seed(seed)
    cfg = TransformerBridgeConfig(
        d_model=16,
        d_head=4,
        n_layers=2,
        n_ctx=32,
        n_heads=4,
        d_mlp=32,
        d_vocab=40,
        positional_embedding_type=positions,
        n_key_value_heads=kv,
        normalization_type=norm,
        act_fn="gelu",
    )
    bridge = boot(cfg)
    with torch.no_grad():
        for block in bridge.blocks:
            block.ln1.w.uniform_(0.5, 1.5)
            if getattr(block.ln1, "b", None) is not None:
                block.ln1.b.normal_(0.0, 0.1)
    if fold:
        bridge.enable_compatibility_mode()
    return bridge


CASES = [
    ("LN", "standard", None, False),
    ("LN", "standard", None, True),
    ("RMS", "rotary", 2, False),
    ("LN", "rotary", None, True),
]


@pytest.mark.parametrize("norm, positions, kv, fold", CASES)
def test_extraction_equals_the_lens_hooks(norm, positions, kv, fold):
    bridge = _bridge(norm, positions, kv, fold=fold)
    loaded = load_model(bridge)
    assert loaded.family.name == "transformer_lens"
    assert loaded.family.norm == ("rmsnorm" if norm == "RMS" else "layernorm")
    caps = capture_layers(loaded, [IDS], [0, 1])
    _, cache = bridge.run_with_cache(torch.tensor(IDS)[None])
    for layer, cap in caps.items():
        if fold:  # folded: the norm in front has gain 1 and bias 0
            assert np.all(cap.layernorm.gain == 1.0)
        else:
            assert not np.all(cap.layernorm.gain == 1.0)
        np.testing.assert_allclose(cap.layernorm.apply(cap.hidden_in), cap.ln_out, atol=FLOAT32)
        q_ref = cache[f"blocks.{layer}.attn.hook_q"][0].double().numpy()
        k_ref = cache[f"blocks.{layer}.attn.hook_k"][0].double().numpy()
        pattern = cache[f"blocks.{layer}.attn.hook_pattern"][0].double().numpy()
        for head in range(cap.n_heads):
            np.testing.assert_allclose(cap.queries(head), q_ref[:, head], atol=FLOAT32)
            np.testing.assert_allclose(cap.keys(head), k_ref[:, cap.key_head(head)], atol=FLOAT32)
            probs = attention_probabilities(cap, head, np.arange(len(IDS)))
            np.testing.assert_allclose(probs, pattern[head], atol=FLOAT32)


def entry_dim(arrays):
    return next(arrays[n] for n in arrays.files if n.startswith("keys_")).shape[1]


def test_lens_models_certify_end_to_end(tmp_path):
    from lnproofs.models.head_sets import params_query_set

    bridge = _bridge("RMS", "rotary", 2)
    run = certify_model(load_model(bridge), [IDS], tmp_path, layers=[1], heads=[2, 3], uniform="free")
    assert run.certified == 1
    path = tmp_path / "texts" / "text00000.json"
    data = json.loads(path.read_text())
    reports = check_model_file(path)
    assert all(r.ok for r in reports.values())
    for head in (2, 3):
        entry = next(h for h in data["heads"] if h["head"] == head)
        assert entry["key_head"] == 1 and entry["kind"] == "rmsnorm"
        with np.load(tmp_path / "params.npz") as p, np.load(tmp_path / "texts" / "text00000.npz") as a:
            qs = params_query_set(p, 1, head, entry_dim(a), (a["rotary_cos"], a["rotary_sin"]), len(IDS) - 1)
        assert qs.rotation.style == "interleaved" and qs.rotation.position == len(IDS) - 1
        names = {name for name, _, _ in model_file_certificates(path)} | set(reports)
        assert {f"layer1/head{head}/realisable", f"layer1/head{head}/coverage"} & names


def test_folding_leaves_free_statuses_alone(tmp_path):
    """Folding the LayerNorm changes no query or key beyond float32 rounding: the free
    statuses of the keys agree."""
    plain, folded = _bridge("LN", "standard"), _bridge("LN", "standard", fold=True)
    a = certify_model(load_model(plain), [IDS], tmp_path / "a", layers=[0], heads=[0], uniform="none")
    b = certify_model(load_model(folded), [IDS], tmp_path / "b", layers=[0], heads=[0], uniform="none")
    statuses = [
        [
            r["status"]
            for r in json.loads((run.out_dir / "texts" / "text00000.json").read_text())["heads"][0]["free"]["results"]
        ]
        for run in (a, b)
    ]
    assert statuses[0] == statuses[1]


def test_objects_that_are_not_lens_models_are_refused():
    with pytest.raises(ModelError, match="not a TransformerLens model"):
        load_model(object())
