"""Invalid models and inputs for ``certify-model``; also the tiny-model builders the model tests use.

Every model here is built from a config with random weights (no download) and saved
into the test's temporary folder.
"""

import json

import numpy as np

WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "far", "and", "slept", "."]
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def tiny_bert(
    folder, *, layers=2, heads=2, width=16, max_positions=24, dtype=None, seed=0, tokenizer=True, query_bias=None
):
    """A random BERT saved with save_pretrained (plus a word-level tokenizer) into ``folder``;
    ``query_bias``: the scale of random query biases (large ones put the centre of the
    realisable queries outside them: no head then covers every direction)."""
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(seed)
    vocab = SPECIAL + WORDS
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=width,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=2 * width,
        max_position_embeddings=max_positions,
        layer_norm_eps=1e-12,
    )
    model = BertModel(config)
    _perturb_layernorms(model)
    if query_bias:
        import torch

        with torch.no_grad():
            for layer in model.encoder.layer:
                layer.attention.self.query.bias.normal_(0.0, query_bias)
    if dtype is not None:
        model = model.to(getattr(torch, dtype))
    model.save_pretrained(str(folder))
    if tokenizer:
        from transformers import BertTokenizer

        (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
        BertTokenizer(str(folder / "vocab.txt")).save_pretrained(str(folder))
    return model


def tiny_gpt2(
    folder, *, layers=2, heads=2, width=16, positions=24, dtype=None, seed=0, tokenizer=False, query_bias=None
):
    """A random GPT-2 saved with save_pretrained into ``folder`` (plus, with ``tokenizer``,
    a word-level tokenizer over the test words, built offline); ``query_bias`` as for
    :func:`tiny_bert`."""
    import torch
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=40, n_embd=width, n_layer=layers, n_head=heads, n_positions=positions, bos_token_id=0, eos_token_id=0
    )
    model = GPT2Model(config)
    _perturb_layernorms(model)
    if query_bias:
        import torch

        with torch.no_grad():
            for block in model.h:
                block.attn.c_attn.bias[:width].normal_(0.0, query_bias)
    if dtype is not None:
        model = model.to(getattr(torch, dtype))
    model.save_pretrained(str(folder))
    if tokenizer:
        _word_tokenizer(folder)
    return model


def _word_tokenizer(folder):
    """A word-level tokenizer over the test words (ids 1..12, 0 for unknown words), built offline."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {word: i for i, word in enumerate(["<|endoftext|>"] + WORDS)}
    words = Tokenizer(models.WordLevel(vocab, unk_token="<|endoftext|>"))
    words.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(
        tokenizer_object=words, unk_token="<|endoftext|>", eos_token="<|endoftext|>"
    ).save_pretrained(str(folder))


def _perturb_layernorms(model):
    """Random gains and biases, so folding and the layernorm query set are not trivial."""
    import torch

    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.weight.uniform_(0.5, 1.5)
                module.bias.normal_(0.0, 0.1)


def _bert(tmp_path, **kw):
    folder = tmp_path / "bert"
    folder.mkdir(exist_ok=True)
    tiny_bert(folder, **kw)
    return folder


def _gpt2(tmp_path, **kw):
    folder = tmp_path / "gpt2"
    folder.mkdir(exist_ok=True)
    tiny_gpt2(folder, **kw)
    return folder


def _tokens(tmp_path, ids):
    path = tmp_path / "ids.npy"
    np.save(path, np.asarray(ids))
    return path


def _missing(tmp_path):
    return ["certify-model", tmp_path / "no-such-model", "--text", "the cat", "--out", tmp_path / "o"]


def _other_family(tmp_path):
    folder = tmp_path / "t5"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "t5", "d_model": 8}))
    (folder / "model.safetensors").write_bytes(b"")
    return ["certify-model", folder, "--text", "the cat", "--out", tmp_path / "o"]


def _layer_out_of_range(tmp_path):
    return ["certify-model", _bert(tmp_path), "--text", "the cat", "--layers", "0,5", "--out", tmp_path / "o"]


def _layer_not_integer(tmp_path):
    return ["certify-model", _bert(tmp_path), "--text", "the cat", "--layers", "first", "--out", tmp_path / "o"]


def _head_out_of_range(tmp_path):
    return [
        "certify-model",
        _gpt2(tmp_path),
        "--tokens",
        _tokens(tmp_path, [1, 2, 3]),
        "--heads",
        "2",
        "--out",
        tmp_path / "o",
    ]


def _text_too_long(tmp_path):
    return [
        "certify-model",
        _bert(tmp_path, max_positions=8),
        "--text",
        "the cat sat on the mat and the dog ran far",
        "--out",
        tmp_path / "o",
    ]


def _tokens_too_long(tmp_path):
    return [
        "certify-model",
        _gpt2(tmp_path),
        "--tokens",
        _tokens(tmp_path, np.arange(30) % 40),
        "--out",
        tmp_path / "o",
    ]


def _token_out_of_vocab(tmp_path):
    return ["certify-model", _gpt2(tmp_path), "--tokens", _tokens(tmp_path, [1, 2, 99]), "--out", tmp_path / "o"]


def _no_tokenizer(tmp_path):
    return ["certify-model", _gpt2(tmp_path), "--text", "the cat", "--out", tmp_path / "o"]


def _one_token_input(tmp_path):
    return ["certify-model", _gpt2(tmp_path), "--tokens", _tokens(tmp_path, [[1], [2]]), "--out", tmp_path / "o"]


def _text_and_tokens(tmp_path):
    return [
        "certify-model",
        _bert(tmp_path),
        "--text",
        "the cat",
        "--tokens",
        _tokens(tmp_path, [1, 2]),
        "--out",
        tmp_path / "o",
    ]


def _weights_without_config(tmp_path):
    folder = _gpt2(tmp_path)
    lone = tmp_path / "lone"
    lone.mkdir()
    (folder / "model.safetensors").rename(lone / "model.safetensors")
    return ["certify-model", lone / "model.safetensors", "--tokens", _tokens(tmp_path, [1, 2]), "--out", tmp_path / "o"]


def _wrong_config(tmp_path):
    folder = _gpt2(tmp_path)
    config = json.loads((folder / "config.json").read_text())
    config["n_embd"] = 32
    (tmp_path / "other.json").write_text(json.dumps(config))
    return [
        "certify-model",
        folder / "model.safetensors",
        "--config",
        tmp_path / "other.json",
        "--tokens",
        _tokens(tmp_path, [1, 2]),
        "--out",
        tmp_path / "o",
    ]


def _bad_dtype(tmp_path):
    return [
        "certify-model",
        _gpt2(tmp_path),
        "--tokens",
        _tokens(tmp_path, [1, 2]),
        "--dtype",
        "float16",
        "--out",
        tmp_path / "o",
    ]


CASES = [
    ("missing-folder", _missing, "does not exist"),
    ("unsupported-family", _other_family, "accepted model types: bert, gpt2, gpt_neox, opt, llama"),
    ("layer-out-of-range", _layer_out_of_range, "layer 5 is out of range"),
    ("layer-not-integer", _layer_not_integer, "accepted: all"),
    ("head-out-of-range", _head_out_of_range, "head 2 is out of range"),
    ("text-too-long", _text_too_long, "accepts at most 8"),
    ("tokens-too-long", _tokens_too_long, "accepts at most 24"),
    ("token-out-of-vocabulary", _token_out_of_vocab, "accepted ids: 0..39"),
    ("no-tokenizer", _no_tokenizer, "--tokens"),
    ("input-of-one-token", _one_token_input, "give at least 2 tokens per input"),
    ("text-and-tokens", _text_and_tokens, "exactly one of"),
    ("weights-without-config", _weights_without_config, "config.json"),
    ("config-not-matching-weights", _wrong_config, "does not fit the weights"),
    ("bad-compute-dtype", _bad_dtype, "float64, float32"),
]


def _bad_device(tmp_path):
    return [
        "certify-model",
        _gpt2(tmp_path),
        "--tokens",
        _tokens(tmp_path, [1, 2]),
        "--device",
        "gpu0",
        "--out",
        tmp_path / "o",
    ]


CASES.append(("bad-device", _bad_device, "not a torch device"))


def _relative_positions(tmp_path):
    folder = _bert(tmp_path)
    config = json.loads((folder / "config.json").read_text())
    config["position_embedding_type"] = "relative_key"
    (folder / "config.json").write_text(json.dumps(config))
    return ["certify-model", folder, "--text", "the cat", "--out", tmp_path / "o"]


CASES.append(("relative-position-scores", _relative_positions, "accepted: absolute"))


def _model_file_with_keys(tmp_path):
    """A certify-model file holds its keys; giving KEYS as well is refused."""
    path = tmp_path / "layer0_head0.json"
    path.write_text(json.dumps({"schema": "lnproofs.model-head/1"}))
    keys = tmp_path / "keys.npy"
    np.save(keys, np.zeros((2, 2)))
    return ["check", path, keys]


CASES.append(("check-model-file-with-keys", _model_file_with_keys, "leave KEYS out"))


def _decoder(tmp_path, family, **kw):
    from tiny_decoders import tiny_decoder

    folder = tmp_path / family
    folder.mkdir(exist_ok=True)
    tiny_decoder(family, folder, **kw)
    return folder


def _alibi_model_type(tmp_path):
    folder = tmp_path / "bloom"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "bloom", "hidden_size": 8}))
    (folder / "model.safetensors").write_bytes(b"")
    return ["certify-model", folder, "--tokens", _tokens(tmp_path, [1, 2]), "--out", tmp_path / "o"]


def _alibi_flag(tmp_path):
    folder = _gpt2(tmp_path)
    config = json.loads((folder / "config.json").read_text())
    config["alibi"] = True
    (folder / "config.json").write_text(json.dumps(config))
    return ["certify-model", folder, "--tokens", _tokens(tmp_path, [1, 2]), "--out", tmp_path / "o"]


def _sliding_window_exceeded(tmp_path):
    folder = _decoder(tmp_path, "mistral", sliding_window=4)
    return ["certify-model", folder, "--tokens", _tokens(tmp_path, [1, 2, 3, 4, 5, 6]), "--out", tmp_path / "o"]


def _post_norm_opt(tmp_path):
    folder = _decoder(tmp_path, "opt")
    config = json.loads((folder / "config.json").read_text())
    config["do_layer_norm_before"] = False
    (folder / "config.json").write_text(json.dumps(config))
    return ["certify-model", folder, "--tokens", _tokens(tmp_path, [1, 2]), "--out", tmp_path / "o"]


def _fold_rmsnorm(tmp_path):
    return [
        "certify-model",
        _decoder(tmp_path, "llama"),
        "--tokens",
        _tokens(tmp_path, [1, 2]),
        "--fold",
        "--out",
        tmp_path / "o",
    ]


def _unsupported_family_named(tmp_path):
    folder = tmp_path / "mamba"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "mamba", "hidden_size": 8}))
    (folder / "model.safetensors").write_bytes(b"")
    return ["certify-model", folder, "--tokens", _tokens(tmp_path, [1, 2]), "--out", tmp_path / "o"]


CASES += [
    ("alibi-model-type", _alibi_model_type, "ALiBi"),
    ("alibi-config-flag", _alibi_flag, "ALiBi"),
    ("sliding-window-exceeded", _sliding_window_exceeded, "sliding-window attention (window 4)"),
    ("post-norm-opt", _post_norm_opt, "do_layer_norm_before"),
    ("fold-with-rmsnorm", _fold_rmsnorm, "--fold folds a LayerNorm"),
    (
        "unsupported-family-names-the-supported-ones",
        _unsupported_family_named,
        "accepted model types: bert, gpt2, gpt_neox, opt, llama, mistral, qwen2, gemma",
    ),
]


def _earlier_head_file(tmp_path):
    """A head file of the schema before one evidence check (query sets per text, no rotary table)."""
    path = tmp_path / "layer0_head0.json"
    path.write_text(json.dumps({"schema": "lnproofs.model-heads/1", "layer": 0, "head": 0, "texts": []}))
    return ["check", path]


def _earlier_pooled_file(tmp_path):
    path = tmp_path / "layer0_head0.json"
    path.write_text(json.dumps({"schema": "lnproofs.model-pool/1", "layer": 0, "head": 0, "members": {}}))
    return ["check", path]


CASES += [
    (
        "head-file-of-an-earlier-schema",
        _earlier_head_file,
        "accepted schemas: lnproofs.model-text/4, "
        "lnproofs.model-text/3, lnproofs.model-text/2, "
        "lnproofs.model-heads/2, "
        "lnproofs.model-pool/2",
    ),
    ("pooled-file-of-an-earlier-schema", _earlier_pooled_file, "(schema 'lnproofs.model-pool/1')"),
]


def _config_edit(family, **fields):
    """The model of ``family`` with ``fields`` of its config.json replaced (the weights unchanged)."""

    def make(tmp_path):
        if family == "gpt2":
            folder = _gpt2(tmp_path)
        elif family == "bert":
            folder = _bert(tmp_path)
        else:
            folder = _decoder(tmp_path, family)
        config = json.loads((folder / "config.json").read_text())
        config.update(fields)
        (folder / "config.json").write_text(json.dumps(config))
        return ["certify-model", folder, "--tokens", _tokens(tmp_path, [1, 2]), "--out", tmp_path / "o"]

    return make


def _config_beside_weights(**fields):
    """A single weights file with ``--config`` naming an edited copy of its config."""

    def make(tmp_path):
        folder = _gpt2(tmp_path)
        config = json.loads((folder / "config.json").read_text())
        config.update(fields)
        (tmp_path / "edited.json").write_text(json.dumps(config))
        return [
            "certify-model",
            folder / "model.safetensors",
            "--config",
            tmp_path / "edited.json",
            "--tokens",
            _tokens(tmp_path, [1, 2]),
            "--out",
            tmp_path / "o",
        ]

    return make


# config sizes against the weights' shapes, checked before any model is built
CASES += [
    (
        "config-layers-1e9-float",
        _config_edit("llama", num_hidden_layers=1e9),
        "num_hidden_layers 1000000000.0 (layers); accepted: a positive integer",
    ),
    (
        "config-layers-1e9",
        _config_edit("bert", num_hidden_layers=10**9),
        "num_hidden_layers 1000000000 but the weights hold 2 layer(s)",
    ),
    (
        "config-layers-fewer-than-weights",
        _config_beside_weights(n_layer=1),
        "n_layer 1 but the weights hold 2 layer(s)",
    ),
    ("config-heads-zero", _config_edit("bert", num_attention_heads=0), "num_attention_heads 0 (attention heads)"),
    ("config-heads-negative", _config_edit("llama", num_attention_heads=-4), "accepted: a positive integer"),
    ("config-heads-not-a-number", _config_edit("gpt2", n_head="2"), "n_head '2' (attention heads)"),
    ("config-heads-true", _config_edit("gpt2", n_head=True), "n_head True"),
    ("config-heads-not-dividing-width", _config_edit("gpt2", n_head=3), "n_head 3, which does not divide n_embd 16"),
    (
        "config-kv-heads-not-dividing-heads",
        _config_edit("llama", num_key_value_heads=3),
        "num_key_value_heads 3, which does not divide num_attention_heads 4",
    ),
    ("config-absurd-width", _config_edit("bert", hidden_size=10**12), "hidden_size 1000000000000, more than any"),
    ("config-absurd-vocabulary", _config_edit("llama", vocab_size=10**15), "vocab_size 1000000000000000, more than"),
    (
        "config-vocabulary-larger-than-embedding",
        _config_edit("gpt2", vocab_size=41),
        "the configuration (vocab_size 41, n_embd 16) gives (41, 16)",
    ),
    ("config-intermediate-not-matching", _config_edit("llama", intermediate_size=24), "does not fit the weights"),
    ("config-absurd-intermediate", _config_edit("opt", ffn_dim=10**10), "ffn_dim 10000000000, more than any"),
    ("config-head-dim-zero", _config_edit("mistral", head_dim=0), "head_dim 0 (the head dimension)"),
    ("config-positions-not-matching", _config_edit("gpt2", n_positions=10**6), "does not fit the weights"),
    (
        "config-rotary-positions-zero",
        _config_edit("qwen2", max_position_embeddings=0),
        "max_position_embeddings 0 (positions)",
    ),
]


class _Payload:
    """Unpickling this would write ``path``: every reader must refuse it unread."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (exec, (f"open({self.path!r}, 'w').write('ran')",))


def _custom_code(config_file, **fields):
    """A BERT folder whose ``config_file`` names code in the folder (tests/test_remote_code.py runs
    such folders in a process with 'y' on standard input)."""

    def make(tmp_path):
        folder = _bert(tmp_path)
        (folder / "custom.py").write_text(f"open({str(tmp_path / 'MARKER')!r}, 'w').write('ran')\n")
        data = json.loads((folder / config_file).read_text())
        data.update(fields)
        (folder / config_file).write_text(json.dumps(data))
        return ["certify-model", folder, "--text", "the cat", "--out", tmp_path / "o"]

    return make


def _pickled_weights(tmp_path):
    folder = tmp_path / "weights"
    folder.mkdir()
    (folder / "config.json").write_text((_gpt2(tmp_path) / "config.json").read_text())
    import pickle

    with (folder / "pytorch_model.bin").open("wb") as handle:
        pickle.dump({"wte.weight": _Payload(tmp_path / "MARKER")}, handle)
    return ["certify-model", folder, "--tokens", _tokens(tmp_path, [1, 2]), "--out", tmp_path / "o"]


def write_pickled_tokens(path, marker):
    """A token file at ``path`` (``.npy``, ``.npz`` or ``.pt``, by its suffix) whose unpickling would
    write ``marker`` (tests/test_remote_code.py runs it with 'y' on standard input too)."""
    hostile = np.array([_Payload(marker), 1], dtype=object)
    if path.suffix == ".npy":
        np.save(path, hostile, allow_pickle=True)
    elif path.suffix == ".npz":
        np.savez(path, tokens=hostile)
    else:
        import pickle

        with path.open("wb") as handle:
            pickle.dump({"tokens": _Payload(marker)}, handle)
    return path


def _pickled_tokens(suffix):
    def make(tmp_path):
        path = write_pickled_tokens(tmp_path / f"ids{suffix}", tmp_path / "MARKER")
        return ["certify-model", _gpt2(tmp_path), "--tokens", path, "--out", tmp_path / "o"]

    return make


def _second_tokens_file_bad(tmp_path):
    good = _tokens(tmp_path, [1, 2, 3])
    bad = tmp_path / "bad.npy"
    np.save(bad, np.array([1, 99]))
    return ["certify-model", _gpt2(tmp_path), "--tokens", good, "--tokens", bad, "--out", tmp_path / "o"]


CASES += [
    (
        "tokenizer-config-names-custom-code",
        _custom_code(
            "tokenizer_config.json",
            tokenizer_class="CustomTokenizer",
            auto_map={"AutoTokenizer": ["custom.CustomTokenizer", None]},
        ),
        "names custom code ('auto_map')",
    ),
    (
        "config-names-custom-code",
        _custom_code("config.json", auto_map={"AutoModel": "custom.CustomModel"}),
        "names custom code ('auto_map')",
    ),
    (
        "config-names-custom-pipelines",
        _custom_code("config.json", custom_pipelines={"p": {"impl": "custom.P"}}),
        "names custom code ('custom_pipelines')",
    ),
    ("pickled-weights", _pickled_weights, "could not be read as a PyTorch state dict"),
    ("pickled-tokens-npy", _pickled_tokens(".npy"), "never unpickled"),
    ("pickled-tokens-npz", _pickled_tokens(".npz"), "never unpickled"),
    ("pickled-tokens-pt", _pickled_tokens(".pt"), "is not a PyTorch zip archive"),
    ("second-tokens-file-bad", _second_tokens_file_bad, "bad.npy: input 0 holds token id 99"),
]
