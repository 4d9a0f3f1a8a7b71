"""certify-vocab on tiny language models of every family: the output layer read from the weights
(tied and untied heads, output biases, LayerNorm and RMSNorm), certificates that 'lnproofs check'
verifies, the table and summary, resume, and tampered certificates refuted."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from lnproofs.models.vocab import read_output_layer  # noqa: E402

COMMON = dict(num_hidden_layers=1, num_attention_heads=2, vocab_size=30)
MODELS = {
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", dict(n_embd=6, n_layer=1, n_head=2, vocab_size=30)),
    "gpt_neox": ("GPTNeoXConfig", "GPTNeoXForCausalLM", dict(hidden_size=6, intermediate_size=12, **COMMON)),
    "opt": ("OPTConfig", "OPTForCausalLM", dict(hidden_size=6, ffn_dim=12, word_embed_proj_dim=6, **COMMON)),
    "llama": ("LlamaConfig", "LlamaForCausalLM", dict(hidden_size=6, intermediate_size=12, **COMMON)),
    "mistral": ("MistralConfig", "MistralForCausalLM", dict(hidden_size=6, intermediate_size=12, **COMMON)),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", dict(hidden_size=6, intermediate_size=12, **COMMON)),
    "gemma": (
        "GemmaConfig",
        "GemmaForCausalLM",
        dict(hidden_size=6, intermediate_size=12, head_dim=3, num_key_value_heads=1, **COMMON),
    ),
    "bert": ("BertConfig", "BertForMaskedLM", dict(hidden_size=6, intermediate_size=12, **COMMON)),
}


def build(family, folder, seed=0, **overrides):
    """A random language model of ``family`` with its output layer, norms and biases perturbed."""
    import torch

    config_name, model_name, kwargs = MODELS[family]
    torch.manual_seed(seed)
    model = getattr(transformers, model_name)(getattr(transformers, config_name)(**{**kwargs, **overrides}))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "norm" in name.lower() or "ln_f" in name:
                p.normal_(0.0, 0.1) if p.ndim == 1 and name.endswith("bias") else p.uniform_(0.5, 1.5)
            if "embed" in name or "wte" in name or "lm_head" in name:
                p.normal_(0.0, 1.0)
    model.save_pretrained(str(folder))
    return folder


def _run(cli, folder, out, *extra):
    result = cli(["certify-vocab", folder, "--out", out, "--workers", "1", *extra])
    assert result.status == 0, result.err
    return json.loads((out / "summary.json").read_text())


@pytest.mark.parametrize("family", sorted(MODELS))
def test_every_family_certified_and_checked(cli, tmp_path, family):
    folder = build(family, tmp_path / family)
    layer = read_output_layer(folder)
    summary = _run(cli, folder, tmp_path / "out")
    import pandas as pd

    table = pd.read_parquet(tmp_path / "out" / "table.parquet")
    assert list(table.columns) == ["id", "token", "free", "box", "realisable", "margin"]
    assert len(table) == layer.vocab_size == 30
    assert (pd.read_csv(tmp_path / "out" / "table.csv")["free"] == table["free"]).all()
    for name in ("free", "box", "realisable"):
        result = cli(["check", tmp_path / "out" / f"{name}.json"])
        assert result.status == 0, (name, result.out, result.err)
    assert "undecided" not in summary["counts"]["free"]
    wins = {"selectable"}
    # the realisable queries are some of the free ones: a realisable winner is a free winner
    assert set(table.index[table["realisable"].isin(wins)]) <= set(table.index[table["free"].isin(wins)])
    if layer.norm == "rmsnorm" and layer.beta is None and layer.bias is None:
        # coverage: every direction, so the same tokens win (a loser is "unselectable" under free
        # queries and "not-realisable" under the norm's set: both say never)
        assert (table["realisable"].isin(wins) == table["free"].isin(wins)).all()
    assert (tmp_path / "out" / "summary.md").read_text().startswith("# Which tokens")


def _sampled_winners(layer, samples=20000, seed=1):
    """Tokens that win for some sampled output of the final norm (a numeric lower bound)."""
    rng = np.random.default_rng(seed)
    d = layer.keys.shape[1]
    u = rng.normal(size=(samples, d))
    if layer.norm == "layernorm":
        u -= u.mean(axis=1, keepdims=True)
    u *= np.sqrt(d) * rng.uniform(0.0, 1.0, size=(samples, 1)) ** 0.1 / np.linalg.norm(u, axis=1, keepdims=True)
    z = u * layer.gain + (0 if layer.beta is None else layer.beta)
    logits = z @ layer.keys.T + (0 if layer.bias is None else layer.bias)
    return set(np.unique(logits.argmax(axis=1)).tolist())


@pytest.mark.parametrize("family", ["gpt2", "llama", "bert"])
def test_sampled_winners_are_never_claimed_impossible(cli, tmp_path, family):
    folder = build(family, tmp_path / family, seed=3)
    _run(cli, folder, tmp_path / "out", "--sets", "realisable")
    import pandas as pd

    table = pd.read_parquet(tmp_path / "out" / "table.parquet")
    seen = _sampled_winners(read_output_layer(folder))
    impossible = set(table.index[table["realisable"].isin(["not-realisable", "unselectable", "tie-only"])])
    assert seen and not (seen & impossible)


def test_resume_keeps_finished_sets(cli, tmp_path):
    folder = build("gpt2", tmp_path / "m")
    _run(cli, folder, tmp_path / "out", "--sets", "free,box")
    stamp = (tmp_path / "out" / "free.json").stat().st_mtime_ns
    summary = _run(cli, folder, tmp_path / "out", "--sets", "free,box", "--resume")
    assert (tmp_path / "out" / "free.json").stat().st_mtime_ns == stamp
    assert summary["how"]["free"].startswith("resumed")


def _tamper_evidence(path, index, code=1):
    from lnproofs.certificates.keyfile import sha256_of

    data = json.loads(path.read_text())
    target = path.with_name(data["arrays"]["evidence"]["path"])
    ev = np.load(target)
    ev[index] = code
    np.save(target, ev)
    data["arrays"]["evidence"]["sha256"] = sha256_of(target)
    data["results"] = [r for r in data["results"] if r["index"] != index]
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("family, tied", [("gpt2", True), ("llama", False)])
def test_tampered_vocabulary_certificate_is_refuted(cli, tmp_path, family, tied):
    folder = (
        build(family, tmp_path / "m", seed=5, hidden_size=4)
        if family == "llama"
        else build(family, tmp_path / "m", seed=5, n_embd=4)
    )
    layer = read_output_layer(folder)
    assert layer.tied is tied
    _run(cli, folder, tmp_path / "out", "--sets", "free")
    import pandas as pd

    table = pd.read_parquet(tmp_path / "out" / "table.parquet")
    losers = table.index[table["free"] != "selectable"].tolist()
    assert losers, "a 4-wide head of 30 tokens has tokens inside the hull"
    _tamper_evidence(tmp_path / "out" / "free.json", losers[0])
    result = cli(["check", tmp_path / "out" / "free.json"])
    assert result.status == 1 and f"key {losers[0]}" in result.out


def _tamper_scale(path, index, factor):
    from lnproofs.certificates.keyfile import sha256_of

    data = json.loads(path.read_text())
    target = path.with_name(data["arrays"]["scale"]["path"])
    scale = np.load(target)
    scale[index] *= factor
    np.save(target, scale)
    data["arrays"]["scale"]["sha256"] = sha256_of(target)
    path.write_text(json.dumps(data))


def test_layernorm_realisable_tokens_are_their_own_directions_and_tampering_is_refuted(cli, tmp_path):
    """A LayerNorm head's realisable certificate names each token's own direction u_i = t_i J_i;
    a token whose direction loses, claimed anyway, and a scale that leaves the ball are refuted."""
    folder = build("gpt2", tmp_path / "m", seed=5, n_embd=4)
    _run(cli, folder, tmp_path / "out", "--sets", "realisable")
    path = tmp_path / "out" / "realisable.json"
    data = json.loads(path.read_text())
    assert data["schema"] == "lnproofs.vocab/1" and data["query_set"]["kind"] == "layernorm"
    assert data["evidence"]["own key"] > 0 and cli(["check", path]).status == 0
    import pandas as pd

    table = pd.read_parquet(tmp_path / "out" / "table.parquet")
    losers = table.index[table["realisable"] != "selectable"].tolist()
    own = np.flatnonzero(np.load(path.with_name(data["arrays"]["evidence"]["path"])) == 1)
    assert losers, "a 4-wide head of 30 tokens has tokens it never outputs"
    _tamper_evidence(path, losers[0])
    result = cli(["check", path])
    assert result.status == 1 and f"key {losers[0]}" in result.out
    _tamper_evidence(path, losers[0], code=0)  # back to undecided: the certificate holds again
    assert cli(["check", path]).status == 0
    _tamper_scale(path, int(own[0]), 2.0)  # ||u||^2 about 4 n > n
    result = cli(["check", path])
    assert result.status == 1 and f"key {own[0]}: ||u||^2 exceeds n" in result.out  # the exact path refutes it


def test_tampered_rmsnorm_coverage_claim_is_refuted(cli, tmp_path):
    folder = build("llama", tmp_path / "m", seed=7)
    _run(cli, folder, tmp_path / "out", "--sets", "realisable")
    path = tmp_path / "out" / "realisable.json"
    data = json.loads(path.read_text())
    assert data["coverage"]["kind"] == "full-rank-centred"
    data["coverage"]["rows"] = [0] * len(data["coverage"]["rows"])  # not distinct columns: rank not shown
    path.write_text(json.dumps(data))
    result = cli(["check", path])
    assert result.status == 1 and "coverage" in result.out


def test_a_zero_gain_loses_coverage(tmp_path):
    from lnproofs.models.vocab_run import _coverage

    layer = read_output_layer(build("llama", tmp_path / "m", seed=8))
    gain = layer.gain.copy()
    gain[0] = 0.0
    from dataclasses import replace

    assert _coverage(replace(layer, gain=gain), layer.keys)[0] is None
    assert _coverage(layer, layer.keys)[0] is not None


def test_a_folder_check_covers_every_vocabulary_certificate(cli, tmp_path):
    folder = build("bert", tmp_path / "m", seed=9)
    _run(cli, folder, tmp_path / "out")
    result = cli(["check", tmp_path / "out"])
    assert result.status == 0 and "3 held, 0 refuted, 0 unreadable" in result.out


@pytest.mark.parametrize("entry", ["keys.npy", "free.chunks", "table.parquet", "summary.json"])
def test_a_link_planted_in_the_output_is_refused_and_nothing_outside_is_written(cli, tmp_path, entry):
    """Every file of a vocabulary run goes through the project's writers: a symbolic link planted
    in the output folder under a name the run writes is refused in one line (exit status 2),
    and what it points to is left as it was."""
    import os

    folder = build("gpt2", tmp_path / "m")
    out = tmp_path / "out"
    out.mkdir()
    outside = tmp_path / "outside"
    if entry.endswith(".chunks"):
        outside.mkdir()
    else:
        outside.write_text("theirs")
    os.symlink(outside, out / entry)
    result = cli(["certify-vocab", folder, "--out", out, "--workers", "1", "--sets", "free"])
    assert result.status == 2 and len(result.err.strip().splitlines()) == 1, result.err
    assert "link" in result.err and "Traceback" not in result.err
    assert os.listdir(outside) == [] if outside.is_dir() else outside.read_text() == "theirs"
