"""Invalid inputs of the vocabulary road: box bounds, key biases, vocabulary certificates and models."""

import json

import numpy as np


def _keys(tmp_path, n=6):
    path = tmp_path / "k.npy"
    np.save(path, np.random.default_rng(0).normal(size=(n, 3)))
    return path


def _certify(*extra, bias=None):
    def make(tmp_path):
        argv = ["certify", _keys(tmp_path)]
        if bias is not None:
            np.save(tmp_path / "b.npy", np.asarray(bias, dtype=np.float64))
            argv += ["--key-bias", tmp_path / "b.npy"]
        return argv + list(extra)

    return make


def _manifest(change):
    def make(tmp_path):
        data = {
            "schema": "lnproofs.vocab/1",
            "n_keys": 6,
            "dim": 3,
            "query_set": {"kind": "free"},
            "arrays": {"evidence": {"path": "c.evidence.npy", "sha256": "0" * 64}},
            "results": [],
        }
        change(data)
        path = tmp_path / "c.json"
        path.write_text(json.dumps(data))
        return ["check", path, _keys(tmp_path)]

    return make


CASES = [
    ("box-zero", _certify("--box", "0"), "box bound"),
    ("box-negative", _certify("--box", "-5"), "must be > 0"),
    ("box-with-ball", _certify("--box", "1", "--query-ball", "2"), "cannot be combined"),
    ("bias-wrong-length", _certify(bias=[1.0, 2.0]), "one bias per key"),
    ("bias-matrix", _certify(bias=[[1.0, 2.0]] * 6), "one bias per key"),
    ("bias-nan", _certify(bias=[0, 0, 0, np.nan, 0, 0]), "nan"),
    ("vocab-array-missing", _manifest(lambda d: None), "does not exist"),
    (
        "vocab-unknown-array",
        _manifest(lambda d: d["arrays"].update(other={"path": "x.npy", "sha256": "0" * 64})),
        "known",
    ),
    ("vocab-bias-in-json", _manifest(lambda d: d["query_set"].update(bias=[0] * 6)), "arrays.bias"),
    ("vocab-absolute-array", _manifest(lambda d: d["arrays"]["evidence"].update(path="/etc/x.npy")), "relative"),
]


def _model(kind, *extra, edit=None):
    """certify-vocab on a tiny model folder: ``kind`` is (config class, model class, tie)."""

    def make(tmp_path):
        import transformers

        config_name, model_name, tie = kind
        config = getattr(transformers, config_name)(
            hidden_size=4,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=8,
            vocab_size=10,
            tie_word_embeddings=tie,
        )
        getattr(transformers, model_name)(config).save_pretrained(str(tmp_path / "m"))
        if edit is not None:
            edit(tmp_path / "m" / "model.safetensors")
        return ["certify-vocab", tmp_path / "m", "--out", tmp_path / "out", "--workers", "1", *extra]

    return make


def _short_bias(path):
    from safetensors.torch import load_file, save_file

    state = load_file(str(path))
    state["cls.predictions.bias"] = state["cls.predictions.bias"][:7].clone()
    save_file(state, str(path), metadata={"format": "pt"})


def _config(**change):
    """An edit of the saved model's config.json (``change`` merged into it)."""

    def edit(weights):
        config = weights.with_name("config.json")
        config.write_text(json.dumps({**json.loads(config.read_text()), **change}))

    return edit


_LLAMA_LM = ("LlamaConfig", "LlamaForCausalLM", False)
CASES += [
    ("model-no-output-layer", _model(("LlamaConfig", "LlamaModel", False)), "no output layer"),
    ("model-bare-bert", _model(("BertConfig", "BertModel", True)), "no output layer"),
    ("model-box-zero", _model(_LLAMA_LM, "--box", "0"), "box bound"),
    ("model-box-negative", _model(_LLAMA_LM, "--box", "-1"), "must be > 0"),
    ("model-unknown-set", _model(_LLAMA_LM, "--sets", "free,ball"), "not known"),
    ("model-bias-wrong-length", _model(("BertConfig", "BertForMaskedLM", True), edit=_short_bias), "output bias"),
    (
        "model-task-head",
        _model(_LLAMA_LM, edit=_config(architectures=["LlamaForSequenceClassification"])),
        "not the language-modelling head",
    ),
    (
        "model-softcap-negative",
        _model(("Gemma2Config", "Gemma2ForCausalLM", True), edit=_config(final_logit_softcapping=-1)),
        "final_logit_softcapping is -1",
    ),
    ("model-softcap-text", _model(_LLAMA_LM, edit=_config(model_type="gemma2", final_logit_softcapping="30")), "'30'"),
    (
        "model-missing",
        lambda tmp_path: ["certify-vocab", tmp_path / "nothere", "--out", tmp_path / "o"],
        "does not exist",
    ),
]
