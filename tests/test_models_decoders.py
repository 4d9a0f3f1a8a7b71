"""Decoder families (GPT-NeoX, OPT, Llama, Mistral, Qwen2, Gemma) on tiny random models built
from configs: extraction equals the model's own queries, keys and attention, and
certification (RMSNorm query sets, RoPE, grouped queries, causal answers) runs end to end."""

import importlib
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from tiny_decoders import DECODER_FAMILIES, attention_probabilities, tiny_decoder  # noqa: E402

from lnproofs import certify  # noqa: E402
from lnproofs.models.certify_model import certify_model, check_model_file  # noqa: E402
from lnproofs.models.extract import capture_layers  # noqa: E402
from lnproofs.models.families import FAMILIES  # noqa: E402
from lnproofs.models.loading import load_model  # noqa: E402

IDS = np.array([3, 7, 1, 9, 12, 5, 7, 2])
# The extraction runs in float64 from the same float32 weights; what differs is only where
# the model itself rounds: its RMSNorm and softmax run in float32 (transformers' code).
EXACT = 1e-12
FLOAT32_STEPS = 1e-6


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    out = {}
    for family in DECODER_FAMILIES:
        folder = tmp_path_factory.mktemp(family)
        model = tiny_decoder(family, folder)
        out[family] = (folder, model.double().eval())
    return out


def _reference(model, family, seq):
    """Queries and keys from hooks on the model's own projections, rotated by the model's
    own rotary function and table, and its attention probabilities (output_attentions)."""
    loaded_family = FAMILIES[family]
    config = model.config
    heads = config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    record = {"q": {}, "k": {}}
    handles = []

    def keep(layer, which):
        def hook(_m, _args, out):
            record[which][layer] = out[0].detach().numpy().copy()

        return hook

    from torch_backend.models.forward import module_at

    for layer in range(config.num_hidden_layers):
        q_path, k_path = loaded_family.weight_paths(layer)
        if loaded_family.qk == "fused-per-head":
            handles.append(module_at(model, q_path).register_forward_hook(_fused(record, layer, heads, head_dim)))
        else:
            handles += [
                module_at(model, q_path).register_forward_hook(keep(layer, "q")),
                module_at(model, k_path).register_forward_hook(keep(layer, "k")),
            ]
    ids = torch.tensor(seq).reshape(1, -1)
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=torch.ones_like(ids), output_attentions=True, use_cache=False)
        table = None
        if loaded_family.positions == "rotary":
            positions = torch.arange(len(seq)).reshape(1, -1)
            table = model.rotary_emb(torch.zeros(1, len(seq), config.hidden_size, dtype=torch.float64), positions)
    for h in handles:
        h.remove()
    record["attentions"] = [a[0].numpy() for a in out.attentions]
    record["table"] = table
    return record


def _fused(record, layer, heads, head_dim):
    def hook(_m, _args, out):
        qkv = out[0].detach().reshape(out.shape[1], heads, 3 * head_dim)
        record["q"][layer] = qkv[..., :head_dim].reshape(out.shape[1], -1).numpy().copy()
        record["k"][layer] = qkv[..., head_dim : 2 * head_dim].reshape(out.shape[1], -1).numpy().copy()

    return hook


def _rotate_like_the_model(family, table, rows_per_head, head_dim):
    """The model's own apply_rotary_pos_emb on (T x heads*d) rows."""
    module = importlib.import_module(f"transformers.models.{family}.modeling_{family}")
    cos, sin = table
    T = rows_per_head.shape[0]
    x = torch.tensor(rows_per_head).reshape(1, T, -1, head_dim).transpose(1, 2)
    rotated, _ = module.apply_rotary_pos_emb(x, x, cos, sin)
    return rotated.transpose(1, 2).reshape(T, -1).numpy()


@pytest.mark.parametrize("family", DECODER_FAMILIES)
def test_queries_keys_and_attention_equal_the_models_own(models, family):
    folder, model = models[family]
    loaded = load_model(folder)
    assert loaded.family.name == family
    caps = capture_layers(loaded, [IDS], [0, 1])
    ref = _reference(model, family, IDS)
    for layer, cap in caps.items():
        d = cap.head_dim
        assert cap.norm_kind == FAMILIES[family].norm
        # the norm's parameters reproduce its output
        tol = FLOAT32_STEPS if cap.norm_kind == "rmsnorm" else EXACT
        np.testing.assert_allclose(cap.layernorm.apply(cap.hidden_in), cap.ln_out, rtol=0, atol=tol)
        for head in range(cap.n_heads):
            g = cap.key_head(head)
            np.testing.assert_allclose(cap.queries(head), ref["q"][layer][:, head * d : (head + 1) * d], atol=EXACT)
            np.testing.assert_allclose(cap.keys(head), ref["k"][layer][:, g * d : (g + 1) * d], atol=EXACT)
            if ref["table"] is not None:
                rq = _rotate_like_the_model(family, ref["table"], ref["q"][layer], d)
                rk = _rotate_like_the_model(family, ref["table"], ref["k"][layer], d)
                np.testing.assert_allclose(cap.rotated_queries(head), rq[:, head * d : (head + 1) * d], atol=EXACT)
                np.testing.assert_allclose(cap.rotated_keys(head), rk[:, g * d : (g + 1) * d], atol=EXACT)
            # the attention the model computes (its softmax runs in float32)
            probs = attention_probabilities(cap, head, np.arange(len(IDS)))
            np.testing.assert_allclose(probs, ref["attentions"][layer][head], atol=FLOAT32_STEPS)
    if family in ("llama", "mistral", "qwen2", "gemma"):
        assert caps[0].key_heads == 2 and caps[0].n_heads == 4 and caps[0].key_head(3) == 1
    if family == "gemma":  # gain 1 + weight
        weight = model.layers[1].input_layernorm.weight.detach().numpy()
        np.testing.assert_array_equal(caps[1].layernorm.gain, 1.0 + weight)


def _table(out):
    import pyarrow.parquet as pq

    return pq.read_table(out / "table.parquet").to_pylist()


@pytest.mark.parametrize("family", DECODER_FAMILIES)
def test_certification_runs_end_to_end_and_rechecks(models, family, tmp_path):
    folder, _ = models[family]
    loaded = load_model(folder)
    run = certify_model(loaded, [IDS], tmp_path, layers=[1], heads=[0, 1], uniform="free")
    assert run.certified == 1
    path = tmp_path / "texts" / "text00000.json"
    data = json.loads(path.read_text())
    assert [l["norm"] for l in data["layers"]] == [FAMILIES[family].norm]
    reports = check_model_file(path)
    assert reports and all(r.ok for r in reports.values())
    rotary = FAMILIES[family].positions == "rotary"
    kind = ("rmsnorm" if FAMILIES[family].norm == "rmsnorm" else "layernorm_rotary") if rotary else "layernorm"
    rows = _table(tmp_path)
    for head in (0, 1):
        entry = next(h for h in data["heads"] if h["head"] == head)
        assert entry["kind"] == kind and entry["realisable"]["query_set"]["kind"] == kind
        if rotary:
            assert entry["realisable"]["query_set"]["position"] == len(IDS) - 1
        mine = sorted((r for r in rows if r["head"] == head), key=lambda r: r["position"])
        assert len(mine) == len(IDS)
        first = [r["first_stop_free"] for r in mine]
        assert all(t is None or j <= t < len(IDS) for j, t in enumerate(first))
        for j, r in enumerate(mine):
            if r["realisable_wins"]:
                assert j <= r["realisable_first_win"] <= r["realisable_last_win"] < len(IDS)
    if family in ("llama", "mistral", "qwen2", "gemma"):  # heads 0 and 1 share key head 0: one free answer
        a, b = (next(h for h in data["heads"] if h["head"] == head) for head in (0, 1))
        assert a["key_head"] == b["key_head"] == 0
        assert b["free"] == {"same_as_head": 0} and "results" in a["free"]
        with np.load(tmp_path / "texts" / "text00000.npz") as arrays:
            assert [n for n in arrays.files if n.startswith("keys_")] == ["keys_l1_kv0"]


def test_causal_first_positions_match_prefix_certification(models, tmp_path):
    """Without RoPE (OPT): the reported first position is where the prefix 0..t stops the
    key, the key is selectable in the prefix just before, and it stays stopped (brute force
    over every prefix)."""
    folder, _ = models["opt"]
    loaded = load_model(folder)
    certify_model(loaded, [IDS], tmp_path, layers=[1], heads=[0], uniform="none")
    with np.load(tmp_path / "texts" / "text00000.npz") as arrays:
        keys = arrays["keys_l1_kv0"]
    rows = sorted(_table(tmp_path), key=lambda r: r["position"])
    for j, r in enumerate(rows):
        t = r["first_stop_free"]
        statuses = [certify(keys[: s + 1])[j].status for s in range(j, len(IDS))]
        expected = ["selectable"] * ((t if t is not None else len(IDS)) - j)
        assert statuses[: len(expected)] == expected and "selectable" not in statuses[len(expected) :]


def test_support_matrix_names_every_family():
    rows = {r["family"]: r for r in (f.describe() for f in FAMILIES.values())}
    assert set(rows) == set(FAMILIES)
    assert rows["gemma"]["norm"] == "rmsnorm (1 + weight)" and rows["llama"]["positions"] == "rotary"
    assert rows["bert"]["attention"] == "bidirectional" and "grouped" in rows["mistral"]["attention"]


def test_half_weights_are_widened_with_one_warning_line(cli, tmp_path):
    folder = tmp_path / "llama"
    folder.mkdir()
    tiny_decoder("llama", folder, dtype="bfloat16")
    np.save(tmp_path / "ids.npy", IDS[:5])
    result = cli(
        [
            "certify-model",
            folder,
            "--tokens",
            tmp_path / "ids.npy",
            "--layers",
            "0",
            "--heads",
            "0",
            "--uniform",
            "none",
            "--quiet",
            "--no-causal",
            "--out",
            tmp_path / "o",
        ]
    )
    assert result.status == 0, result.err
    warnings = [line for line in result.err.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "bfloat16" in warnings[0] and "widened" in warnings[0]
    assert "llama model, 1 text(s): 1 certified" in result.out


def test_no_causal_skips_the_causal_answers(cli, models, tmp_path):
    folder, _ = models["qwen2"]
    np.save(tmp_path / "ids.npy", IDS)
    base = [
        "certify-model",
        folder,
        "--tokens",
        tmp_path / "ids.npy",
        "--layers",
        "0",
        "--heads",
        "0",
        "--uniform",
        "none",
        "--quiet",
    ]
    assert cli(base + ["--no-causal", "--out", tmp_path / "a"]).status == 0
    assert cli(base + ["--out", tmp_path / "b"]).status == 0
    a = json.loads((tmp_path / "a" / "texts" / "text00000.json").read_text())
    b = json.loads((tmp_path / "b" / "texts" / "text00000.json").read_text())
    assert "causal" not in a["heads"][0] and all(r["first_stop_free"] is None for r in _table(tmp_path / "a"))
    assert "causal" in b["heads"][0]
    assert any(r["first_stop_free"] is not None or r["realisable_wins"] for r in _table(tmp_path / "b"))
    assert a["heads"][0]["free"] == b["heads"][0]["free"]
    assert a["heads"][0]["realisable"] == b["heads"][0]["realisable"]


@pytest.mark.parametrize("kind", ["bert-float16-folder", "gpt2-float16-state-dict"])
def test_half_weights_of_the_older_families_are_widened_too(cli, tmp_path, kind):
    from bad_inputs.models import tiny_bert, tiny_gpt2

    np.save(tmp_path / "ids.npy", np.array([1, 2, 3]))
    if kind.startswith("bert"):
        model = tiny_bert(tmp_path / "m", dtype="float16")
        path = tmp_path / "m"
    else:
        model = tiny_gpt2(tmp_path / "m", dtype="float16")
        path = tmp_path / "m" / "weights.bin"
        torch.save(model.state_dict(), path)
    result = cli(
        [
            "certify-model",
            path,
            "--tokens",
            tmp_path / "ids.npy",
            "--layers",
            "0",
            "--heads",
            "0",
            "--uniform",
            "none",
            "--quiet",
            "--no-causal",
            "--out",
            tmp_path / "o",
        ]
    )
    assert result.status == 0, result.err
    warnings = [line for line in result.err.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "float16" in warnings[0]


@pytest.mark.parametrize("family", DECODER_FAMILIES)
def test_inputs_of_one_call_give_each_what_it_gets_alone(models, family):
    """Every input runs alone, unpadded: its records, keys and rotary table are the same
    bytes as a call with that input alone (tests/test_same_key.py at MiniLM's width)."""
    folder, _ = models[family]
    loaded = load_model(folder)
    inputs = [IDS, IDS[:3], np.array([4, 4, 8, 1, 2])]
    together = capture_layers(loaded, inputs, [0, 1])
    for number, seq in enumerate(inputs):
        alone = capture_layers(loaded, [seq], [0, 1])
        for layer in (0, 1):
            mine = together[layer].of_input(number)
            np.testing.assert_array_equal(mine.sources, alone[layer].sources)
            np.testing.assert_array_equal(mine.ln_out, alone[layer].ln_out)
            np.testing.assert_array_equal(mine.rotated_keys(0), alone[layer].rotated_keys(0))
            if alone[layer].rotary:
                np.testing.assert_array_equal(mine.rotary_cos, alone[layer].rotary_cos)


@pytest.mark.parametrize("family", ["opt", "llama"])
def test_a_heads_evidence_grows_with_its_keys_not_their_square(models, family, tmp_path):
    """Bytes of one head's evidence for a text of T and of 3T tokens: about three times as
    many, far from nine (the causal answers come from one pass, not a certificate per prefix)."""
    folder, _ = models[family]
    loaded = load_model(folder)
    rng = np.random.default_rng(5)
    sizes = {}
    for T in (10, 30):
        out = tmp_path / f"t{T}"
        certify_model(loaded, [rng.integers(0, 40, T)], out, layers=[1], heads=[0], uniform="none")
        data = json.loads((out / "texts" / "text00000.json").read_text())
        sizes[T] = len(json.dumps(data["heads"][0]))
        assert "causal" in data["heads"][0]
    assert sizes[30] < 4.5 * sizes[10], sizes


def test_tampered_causal_evidence_is_refuted(cli, models, tmp_path):
    """lnproofs check re-verifies the causal records of a text: a weight moved onto a key after
    the stop, or a witness that loses to an earlier key, is refuted."""
    from fractions import Fraction

    folder, _ = models["opt"]
    np.save(tmp_path / "ids.npy", np.array([3, 7, 1, 9, 12, 5, 7, 2, 30, 4, 11, 19, 25, 6, 14, 8]))
    out = tmp_path / "out"
    assert (
        cli(
            [
                "certify-model",
                folder,
                "--tokens",
                tmp_path / "ids.npy",
                "--layers",
                "1",
                "--heads",
                "0",
                "--uniform",
                "none",
                "--out",
                out,
                "--quiet",
            ]
        ).status
        == 0
    )
    path = out / "texts" / "text00000.json"
    data = json.loads(path.read_text())
    assert cli(["check", path]).status == 0
    record = data["heads"][0]["causal"]["free"]
    T = record["n_keys"]
    stopped = next(e for e in record["keys"] if e["stop"] is not None and e["stop"] < T - 1)
    later = json.loads(json.dumps(data))
    entry = next(e for e in later["heads"][0]["causal"]["free"]["keys"] if e["index"] == stopped["index"])
    entry["cannot_win"]["combination"]["indices"][-1] = T - 1  # a weight on a key after the stop
    path.write_text(json.dumps(later))
    refuted = cli(["check", path])
    assert refuted.status == 1 and "layer1/head0/causal/free" in refuted.out
    winner = next(e for e in record["keys"] if e["win"] is not None and "witness" in e["win"] and e["index"] > 0)
    losing = json.loads(json.dumps(data))
    entry = next(e for e in losing["heads"][0]["causal"]["free"]["keys"] if e["index"] == winner["index"])
    entry["win"]["witness"] = [str(-Fraction(str(w))) for w in entry["win"]["witness"]]  # now it points away
    path.write_text(json.dumps(losing))
    refuted = cli(["check", path])
    assert refuted.status == 1 and "layer1/head0/causal/free" in refuted.out
    # a key that wins at every position shares the free certificate's witness: turning that one
    # around refutes both the certificate and the causal record
    shared = next(e for e in record["keys"] if e["win"] == {"same_as": "free"} and e["index"] > 0)
    turned = json.loads(json.dumps(data))
    result = turned["heads"][0]["free"]["results"][shared["index"]]
    result["witness"] = [-w for w in result["witness"]]
    path.write_text(json.dumps(turned))
    refuted = cli(["check", path])
    assert refuted.status == 1
    assert "layer1/head0/free" in refuted.out and "layer1/head0/causal/free" in refuted.out


def test_a_singular_rotation_at_one_position_is_refuted(cli, models, tmp_path):
    """A covering rotary head's causal answers use its coverage at every query position: the
    check tests the rotation of each position, so a table made singular at one is refuted there."""
    folder, _ = models["llama"]
    np.save(tmp_path / "ids.npy", np.array([3, 7, 1, 9, 12, 5, 7, 2]))
    out = tmp_path / "out"
    assert (
        cli(
            [
                "certify-model",
                folder,
                "--tokens",
                tmp_path / "ids.npy",
                "--layers",
                "1",
                "--heads",
                "0",
                "--uniform",
                "none",
                "--out",
                out,
                "--quiet",
            ]
        ).status
        == 0
    )
    path = out / "texts" / "text00000.json"
    assert "coverage" in json.loads(path.read_text())["heads"][0]["realisable"]
    assert cli(["check", path]).status == 0
    arrays_path = path.with_suffix(".npz")
    with np.load(arrays_path) as a:
        arrays = {k: a[k] for k in a.files}
    arrays["rotary_cos"][3, 0] = arrays["rotary_sin"][3, 0] = 0.0  # a 2 x 2 block with determinant 0
    np.savez(arrays_path, **arrays)
    refuted = cli(["check", path])
    assert refuted.status == 1 and "position 3" in refuted.out
