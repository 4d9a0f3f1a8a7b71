"""Loading, extraction and folding on tiny random BERT and GPT-2 models built from configs."""

import json
import subprocess
import sys

import numpy as np
import pytest
from bad_inputs.models import tiny_bert, tiny_gpt2

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from lnproofs.kernel import ModelError  # noqa: E402
from lnproofs.models.extract import capture_layers, parse_selection, prepare_inputs  # noqa: E402
from lnproofs.models.folding import fold_capture_head, fold_layernorm, normalise  # noqa: E402
from lnproofs.models.loading import load_model, load_tokenizer  # noqa: E402

IDS = [np.array([2, 5, 6, 7, 8, 9, 3]), np.array([2, 5, 6, 10, 11, 3])]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Both families saved with save_pretrained, plus the in-memory models (float64)."""
    root = tmp_path_factory.mktemp("models")
    (root / "bert").mkdir()
    (root / "gpt2").mkdir()
    bert = tiny_bert(root / "bert", layers=3, heads=2, width=16)
    gpt2 = tiny_gpt2(root / "gpt2", layers=3, heads=4, width=16)
    return {"root": root, "bert": bert.double().eval(), "gpt2": gpt2.double().eval()}


def _reference(model, family, seq):
    """A plain forward pass with hooks on the LayerNorm and query/key modules."""
    record = {"ln_in": {}, "ln_out": {}, "q": {}, "k": {}}
    handles = []
    n_layers = model.config.num_hidden_layers if family == "bert" else model.config.n_layer
    width = model.config.hidden_size if family == "bert" else model.config.n_embd

    def keep(name, layer, which):
        def hook(_m, args, out):
            if which == "ln":
                record["ln_in"][layer] = args[0][0].detach().numpy().copy()
                record["ln_out"][layer] = out[0].detach().numpy().copy()
            elif which == "qkv":
                out = out[0].detach().numpy()
                record["q"][layer], record["k"][layer] = out[:, :width].copy(), out[:, width : 2 * width].copy()
            else:
                record[which][layer] = out[0].detach().numpy().copy()

        return hook

    for layer in range(n_layers):
        if family == "bert":
            ln = model.embeddings.LayerNorm if layer == 0 else model.encoder.layer[layer - 1].output.LayerNorm
            attn = model.encoder.layer[layer].attention.self
            handles += [
                ln.register_forward_hook(keep("ln", layer, "ln")),
                attn.query.register_forward_hook(keep("q", layer, "q")),
                attn.key.register_forward_hook(keep("k", layer, "k")),
            ]
        else:
            block = model.h[layer]
            handles += [
                block.ln_1.register_forward_hook(keep("ln", layer, "ln")),
                block.attn.c_attn.register_forward_hook(keep("qkv", layer, "qkv")),
            ]
    ids = torch.tensor(seq).reshape(1, -1)
    with torch.no_grad():
        out = model(input_ids=ids, output_hidden_states=True)
    for h in handles:
        h.remove()
    record["hidden_states"] = [h[0].numpy() for h in out.hidden_states]
    return record


@pytest.mark.parametrize("family", ["bert", "gpt2"])
def test_extraction_matches_a_hooked_forward_pass(saved, family):
    loaded = load_model(saved["root"] / family)
    assert loaded.family.name == family and loaded.dtype == "float64"
    layers = list(range(loaded.n_layers))
    caps = capture_layers(loaded, [IDS[0]], layers)
    ref = _reference(saved[family], family, IDS[0])
    for layer in layers:
        cap = caps[layer]
        np.testing.assert_allclose(cap.hidden_in, ref["ln_in"][layer], rtol=0, atol=1e-12)
        np.testing.assert_allclose(cap.ln_out, ref["ln_out"][layer], rtol=0, atol=1e-12)
        # the attention input, seen independently through output_hidden_states
        if family == "bert":
            np.testing.assert_allclose(cap.ln_out, ref["hidden_states"][layer], atol=1e-12)
        else:
            np.testing.assert_allclose(cap.hidden_in, ref["hidden_states"][layer], atol=1e-12)
        # the LayerNorm parameters reproduce its output (convention "torch")
        assert cap.layernorm.convention == "torch"
        np.testing.assert_allclose(cap.layernorm.apply(cap.hidden_in), cap.ln_out, atol=1e-12)
        # per-head W x + b equals the slices of the module outputs
        d = cap.head_dim
        for head in range(cap.n_heads):
            rows = slice(head * d, (head + 1) * d)
            np.testing.assert_allclose(cap.queries(head), ref["q"][layer][:, rows], atol=1e-12)
            np.testing.assert_allclose(cap.keys(head), ref["k"][layer][:, rows], atol=1e-12)
        assert cap.sources.tolist() == [[0, p, t] for p, t in enumerate(IDS[0])]


@pytest.mark.parametrize("family", ["bert", "gpt2"])
@pytest.mark.parametrize("layers", [[0], [1], [0, 2]])
def test_a_capture_stops_after_the_last_layers_norm_with_the_same_bytes(saved, family, layers):
    """The pass stops once the norm feeding the last chosen layer has run: that layer's attention
    never runs, and every record is the same bytes as a whole pass's (one thread both)."""
    from torch_backend.models.forward import one_thread, run_with_hooks

    loaded = load_model(saved["root"] / family)
    blocks = loaded.module.encoder.layer if family == "bert" else loaded.module.h
    ran = []
    handle = (
        blocks[max(layers)].attention.register_forward_pre_hook(lambda *_: ran.append(1))
        if family == "bert"
        else blocks[max(layers)].attn.register_forward_pre_hook(lambda *_: ran.append(1))
    )
    try:
        seen = run_with_hooks(loaded.module, loaded.family, [IDS[0]], layers, "cpu")["norm"]
    finally:
        handle.remove()
    assert ran == []
    with one_thread():
        ref = _reference(loaded.module, family, IDS[0])
    for layer in layers:
        ((given, made),) = seen[layer]
        assert np.array_equal(given, ref["ln_in"][layer]) and np.array_equal(made, ref["ln_out"][layer])


def test_bert_layer_zero_uses_the_embeddings_layernorm_and_gpt2_uses_ln_1(saved):
    bert = capture_layers(load_model(saved["root"] / "bert"), [IDS[0]], [0, 2])
    assert bert[0].layernorm_module == "embeddings.LayerNorm"
    assert bert[2].layernorm_module == "encoder.layer.1.output.LayerNorm"
    np.testing.assert_array_equal(
        bert[2].layernorm.gain, saved["bert"].encoder.layer[1].output.LayerNorm.weight.detach().numpy()
    )
    gpt2 = capture_layers(load_model(saved["root"] / "gpt2"), [IDS[0]], [1])
    assert gpt2[1].layernorm_module == "h.1.ln_1"
    assert gpt2[1].layernorm.eps == saved["gpt2"].h[1].ln_1.eps


@pytest.mark.parametrize("family", ["bert", "gpt2"])
def test_folder_safetensors_and_state_dicts_load_the_same_weights(saved, family, tmp_path):
    folder = saved["root"] / family
    model = saved[family]
    # a plain state dict, and a task model's state dict with its prefix
    torch.save(model.state_dict(), tmp_path / "plain.pt")
    (tmp_path / "config.json").write_text((folder / "config.json").read_text())
    prefix = "bert." if family == "bert" else "transformer."
    torch.save({prefix + k: v for k, v in model.state_dict().items()}, tmp_path / "task.bin")
    reference = capture_layers(load_model(folder), IDS, [1])[1]
    for source, extra in [
        (folder / "model.safetensors", {}),
        (tmp_path / "plain.pt", {}),
        (tmp_path / "task.bin", {"config": folder / "config.json"}),
    ]:
        other = capture_layers(load_model(source, **extra), IDS, [1])[1]
        np.testing.assert_array_equal(other.keys(1), reference.keys(1))
        np.testing.assert_array_equal(other.ln_out, reference.ln_out)


def test_missing_weights_are_named(saved, tmp_path):
    state = {k: v for k, v in saved["gpt2"].state_dict().items() if "h.1.attn.c_attn" not in k}
    torch.save(state, tmp_path / "partial.pt")
    (tmp_path / "config.json").write_text((saved["root"] / "gpt2" / "config.json").read_text())
    with pytest.raises(ModelError, match="lacks 2 weight"):
        load_model(tmp_path / "partial.pt")


def test_float32_compute_and_half_weights_widened_on_request(saved, tmp_path):
    loaded = load_model(saved["root"] / "gpt2", dtype="float32")
    assert loaded.dtype == "float32" and next(loaded.module.parameters()).dtype == torch.float32
    half = tmp_path / "half"
    half.mkdir()
    tiny_gpt2(half, dtype="float16")
    with pytest.raises(ModelError, match="float16"):
        load_model(half)
    widened = load_model(half, allow_half=True)
    assert widened.weights_dtype == "float16" and next(widened.module.parameters()).dtype == torch.float64


def test_pooled_inputs_stack_rows_with_their_sources(saved):
    loaded = load_model(saved["root"] / "gpt2")
    cap = capture_layers(loaded, IDS, [0])[0]
    assert cap.ln_out.shape[0] == sum(len(s) for s in IDS)
    assert cap.sources[len(IDS[0])].tolist() == [1, 0, IDS[1][0]]
    # causal model: identical prefixes give bit-identical keys in every layer
    deep = capture_layers(loaded, IDS, [2])[2]
    n0 = len(IDS[0])
    for p in range(3):
        np.testing.assert_array_equal(deep.keys(0)[p], deep.keys(0)[n0 + p])


def test_text_goes_through_the_local_tokenizer(saved):
    loaded = load_model(saved["root"] / "bert")
    tok = load_tokenizer(saved["root"] / "bert")
    [ids] = prepare_inputs(loaded, texts=["the cat sat"], tokenizer=tok)
    assert ids.tolist() == [2, 5, 6, 7, 3]  # [CLS] the cat sat [SEP]


def test_selection_parsing():
    assert parse_selection("all", 4, "layer") == [0, 1, 2, 3]
    assert parse_selection("3, 1,1", 4, "layer") == [1, 3]
    with pytest.raises(ModelError, match="layer 4 is out of range.*0..3"):
        parse_selection("4", 4, "layer")
    with pytest.raises(ModelError, match="not an integer"):
        parse_selection("x", 4, "head")


def test_folding_preserves_queries_and_keys(saved):
    cap = capture_layers(load_model(saved["root"] / "bert"), IDS, [1])[1]
    for head in range(cap.n_heads):
        for center in (True, False):
            folded = fold_capture_head(cap, head, center=center)
            np.testing.assert_allclose(folded.keys, cap.keys(head), atol=1e-12)
            np.testing.assert_allclose(folded.queries, cap.queries(head), atol=1e-12)
        # centred: every row of the folded weights is orthogonal to the all-ones vector
        centred = fold_capture_head(cap, head, center=True)
        np.testing.assert_allclose(centred.key.W.sum(axis=1), 0, atol=1e-12)
        np.testing.assert_allclose(centred.query.W.sum(axis=1), 0, atol=1e-12)


def test_fold_layernorm_formula_on_a_small_example():
    rng = np.random.default_rng(3)
    gain, bias = rng.uniform(0.5, 2, 5), rng.normal(size=5)
    W, b = rng.normal(size=(3, 5)), rng.normal(size=3)
    x = rng.normal(size=(4, 5))
    xhat = normalise(x, 1e-5)
    direct = (xhat * gain + bias) @ W.T + b
    for center in (True, False):
        folded = fold_layernorm(gain, bias, W, b, center=center)
        np.testing.assert_allclose(folded(xhat), direct, atol=1e-12)
    np.testing.assert_allclose(fold_layernorm(gain, bias, W, b, center=False).W, W * gain)
    np.testing.assert_allclose(fold_layernorm(gain, bias, W, b).b, W @ bias + b)


def test_import_lnproofs_models_stays_torch_free():
    code = (
        "import sys, lnproofs.models.loading, lnproofs.models.extract, lnproofs.models.folding, "
        "lnproofs.models.certify_model, lnproofs.models.corpus_run, lnproofs.commands.certify_model; "
        "print(json.dumps(['torch' in sys.modules, 'transformers' in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", "import json; " + code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == [False, False]


@pytest.mark.parametrize("family", ["bert", "gpt2"])
def test_task_model_folders_load_their_bare_transformer(saved, family, tmp_path):
    """Checkpoints saved from task models (masked LM, LM head) carry prefixed weight names."""
    from transformers import BertForMaskedLM, GPT2LMHeadModel

    bare = saved[family]
    task = (BertForMaskedLM if family == "bert" else GPT2LMHeadModel)(bare.config)
    getattr(task, "bert" if family == "bert" else "transformer").load_state_dict(bare.state_dict(), strict=False)
    task.save_pretrained(str(tmp_path))
    keys = capture_layers(load_model(tmp_path), [IDS[0]], [2])[2].keys(1)
    reference = capture_layers(load_model(saved["root"] / family), [IDS[0]], [2])[2].keys(1)
    np.testing.assert_array_equal(keys, reference)
