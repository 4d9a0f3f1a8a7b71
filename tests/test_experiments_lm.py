"""The language-model tables: corpus, frozen parameters, exact key sets, the batch
certifier, and a tiny run of the command whose certificates pass ``lnproofs check``."""

from __future__ import annotations

import csv
import json
import random

import numpy as np
import pytest

from lnproofs.experiments.corpus import load_corpus
from lnproofs.experiments.lm_keys import exact_centred, layernorm_keys

_WORDS = (
    "the of and a to in is was that for on as with by he at from his an were are which this be or has had "
    "not first one their its new after but who they have her she two been other when there all during into "
    "school time may years more most only over city some world would where later up such used many can"
).split()


def _write_corpus(path, paragraphs=900, seed=0):
    rng = random.Random(seed)
    path.write_text(
        "\n\n".join(" ".join(rng.choice(_WORDS) for _ in range(rng.randint(40, 120))) + "." for _ in range(paragraphs))
    )
    return path


def test_corpus_file_folder_and_held_out_split(tmp_path):
    corpus = load_corpus(_write_corpus(tmp_path / "c.txt"))
    assert len(corpus.train) >= 9 and len(corpus.held_out) >= 1
    assert not set(corpus.train) & set(corpus.held_out)
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(12):
        (folder / f"{i:02d}.md").write_text(f"document {i} " * 50)
    (folder / "skip.bin").write_bytes(b"\0\1")
    from_folder = load_corpus(folder)
    assert len(from_folder.train) + len(from_folder.held_out) == 12
    assert from_folder.held_out == ("document 9 " * 50,)


def test_default_corpus_is_offline_standard_library_docstrings():
    import sysconfig
    from pathlib import Path

    from lnproofs.experiments.corpus import _module_docstrings

    text = _module_docstrings(Path(sysconfig.get_paths()["stdlib"]) / "textwrap.py")
    assert "wrap" in text.lower() and "def " not in text


def test_exact_key_sets_lie_on_the_hyperplane():
    rng = np.random.default_rng(1)
    X = (rng.standard_normal((300, 8)) * np.geomspace(1e-3, 30, 8)).astype(np.float32)
    C = exact_centred(X)
    from fractions import Fraction

    for row, x in zip(C[:20], X[:20]):
        exact = [Fraction(float(v)) for v in x]
        mean = sum(exact) / 8
        assert [Fraction(float(c)) for c in row] == [8 * (v - mean) for v in exact]
    assert all(sum(Fraction(float(v)) for v in row) == 0 for row in C[:50])
    Y = layernorm_keys(X, 1e-5)
    assert all(sum(Fraction(float(v)) for v in row) == 0 for row in Y[:50])
    xc = X.astype(np.float64) - X.astype(np.float64).mean(1, keepdims=True)
    ln = xc / np.sqrt((xc**2).mean(1, keepdims=True) + 1e-5)
    assert np.abs(Y - ln).max() < 1e-12


def test_batch_certifier_agrees_with_the_engine_and_passes_the_checker():
    from lnproofs import certify, check_certificate
    from lnproofs.propose.hull_batch import certify_fast

    rng = np.random.default_rng(3)
    for K in (rng.standard_normal((150, 4)), exact_centred(rng.standard_normal((150, 5)).astype(np.float32))):
        fast, slow = certify_fast(K), certify(K, progress=False)
        assert check_certificate(fast, K).ok
        assert [r.status for r in fast.results] == [r.status for r in slow.results]
        assert {"selectable", "unselectable"} <= {r.status for r in fast.results}
    twins = np.vstack([K, K[:3]])  # duplicates go to the engine
    cert = certify_fast(twins)
    assert check_certificate(cert, twins).ok and cert.results[-1].status == "tie-only"


def test_frozen_parameters_stay_frozen_and_the_arms_differ():
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from torch_backend.training.tiny_gpt2 import Centering, build_model, capture_ln1, frozen_parameters, train_lm

    stream = np.random.default_rng(0).integers(0, 50, 4000).astype(np.int32)
    for arm in ("scaling", "centering"):
        model = build_model(arm, 50, n_positions=64, seed=0)
        frozen = {id(p): p.detach().clone() for b in model.transformer.h for p in frozen_parameters(b)}
        wte = model.transformer.wte.weight.detach().clone()
        train_lm(model, stream, stream, steps=3, batch=2, block=32, lr=1e-2, seed=0, eval_every=2)
        for block in model.transformer.h:
            for p in frozen_parameters(block):
                assert not p.requires_grad and torch.equal(p, frozen[id(p)])
            if arm == "scaling":
                assert torch.all(block.ln_1.weight == 1) and torch.all(block.ln_1.bias == 0)
            else:
                assert isinstance(block.ln_1, Centering)
        assert not torch.equal(wte, model.transformer.wte.weight)
        captured = capture_ln1(model, stream[:40])
        assert len(captured) == 4 and captured[0][0].shape == (40, 8)
        inputs, outputs = captured[1]
        centred = inputs - inputs.mean(1, keepdims=True)
        want = centred if arm == "centering" else centred / np.sqrt((centred**2).mean(1, keepdims=True) + 1e-5)
        assert np.allclose(outputs, want, atol=1e-5)


def test_command_tables_and_certificates_that_check(cli, tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    corpus = _write_corpus(tmp_path / "corpus.txt", paragraphs=700)
    out = tmp_path / "exp"
    result = cli(
        [
            "reproduce",
            "lm-tables",
            "--corpus",
            corpus,
            "--steps",
            "2",
            "--texts",
            "1",
            "--out",
            out,
            "--text-length",
            "60:90",
            "--quiet",
        ]
    )
    assert result.status == 0, result.err
    root = out / "lm_tables"
    with open(root / "table1.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [int(r["layer"]) for r in rows] == [1, 2, 3, 4]
    assert [float(r["paper_without_pct"]) for r in rows] == [51.0, 32.2, 34.7, 36.8]
    assert all(0 <= float(r["without_scaling_pct"]) <= 100 for r in rows)
    assert (root / "table2.csv").is_file() and (root / "lm_loss.png").read_bytes().startswith(b"\x89PNG")
    summary = (out / "summary.md").read_text()
    assert "Table 1" in summary and "Table 2" in summary and "tokenizer" in summary
    certs = sorted((root / "certificates").glob("*/text0000_layer*.json"))
    assert len(certs) == 12
    for cert in certs:
        keys = cert.with_name(cert.stem + "_keys.npy")
        check = cli(["check", cert, keys, "--json"])
        assert check.status == 0, check.out + check.err
        assert check.json()["ok"] is True
        assert json.loads(cert.read_text())["keys_file"]["path"] == keys.name  # found without KEYS
    folder = cli(["check", root / "certificates"])
    assert folder.status == 0, folder.out + folder.err
    assert folder.out.splitlines()[-1].startswith("checked 12 certificate files under ")
    assert folder.out.splitlines()[-1].endswith(": 12 held, 0 refuted, 0 unreadable")
    stamp = (root / "loss_scaling.csv").stat().st_mtime_ns
    assert cli(["reproduce", "lm-tables", "--corpus", tmp_path / "missing", "--out", out]).status == 2
    assert (root / "loss_scaling.csv").stat().st_mtime_ns == stamp
