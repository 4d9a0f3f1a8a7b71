"""``lnproofs reproduce lm-tables``: the paper's Tables 1 and 2 and Figure 4, certified.

Two tiny GPT-2 models are trained from scratch on an offline corpus
(:mod:`torch_backend.training.tiny_gpt2`): one with LayerNorm before attention, one with the
centring alone.  On held-out texts of 768-1,024 tokens the inputs and outputs of every
block's ``ln_1`` are captured; for every key set (all positions of one text, queries
anywhere in R^8) every key is certified selectable or not with :func:`lnproofs.certify`,
and each certificate is written next to its keys so that ``lnproofs check CERT KEYS``
re-verifies it.  Which keys are certified is in :mod:`lnproofs.experiments.lm_keys`.

Finished pieces (tokenizer, trained models, loss curves, per-text results) are kept in OUT
and not redone.
"""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path

import numpy as np

from ..certificates.writes import folder_entry, open_append, output_folder, replacing
from .lm_keys import KEY_DESCRIPTIONS, certify_text_keys, keys_for
from .outputs import RowWriter, device_name, finished, write_json, write_summary
from .paper import PAPER_TABLES

__all__ = ["DEFAULT_LM", "PAPER_LM", "PAPER_TABLES", "SETS", "reproduce_lm_tables", "table_rows"]

DEFAULT_LM = {
    "steps": 300,
    "batch": 8,
    "block": 128,
    "lr": 3e-3,
    "texts": 4,
    "vocab_size": 4096,
    "eval_every": 50,
    "min_len": 768,
    "max_len": 1024,
    "seed": 0,
    "eps": 1e-5,
}
PAPER_LM = {
    "steps": 50_000,
    "batch": 16,
    "block": 1024,
    "lr": 1e-3,
    "texts": 1000,
    "vocab_size": 50_257,
    "eval_every": 1000,
    "min_len": 768,
    "max_len": 1024,
    "seed": 0,
    "eps": 1e-5,
}
#: (arm, key kind) measured per layer, and what each is called in the tables
SETS = {"without": ("centering", "centred"), "before": ("scaling", "before"), "with": ("scaling", "after")}
_STATUSES = ("selectable", "unselectable", "tie-only", "undecided")


def _prepare_data(root: Path, corpus_path, cfg: dict):
    from .corpus import load_corpus
    from .lm_data import encode_documents, load_tokenizer, text_windows, train_tokenizer

    corpus = load_corpus(corpus_path)
    tok_path = root / "tokenizer.json"
    tok = load_tokenizer(tok_path) if tok_path.is_file() else train_tokenizer(corpus.train, cfg["vocab_size"], tok_path)
    train = encode_documents(tok, corpus.train)
    held = encode_documents(tok, corpus.held_out)
    texts = text_windows(held, cfg["texts"], min_len=cfg["min_len"], max_len=cfg["max_len"], seed=cfg["seed"])
    info = {
        "corpus": corpus.name,
        "documents_train": len(corpus.train),
        "documents_held_out": len(corpus.held_out),
        "tokens_train": int(len(train)),
        "tokens_held_out": int(len(held)),
        "tokenizer": f"byte-level BPE trained on the corpus with the tokenizers library, "
        f"{tok.get_vocab_size()} tokens ({tok_path.name})",
        "vocab_size": int(tok.get_vocab_size()),
    }
    if len(train) <= cfg["block"] + 1:
        from ..kernel import InputError

        raise InputError(
            f"the corpus is too small to train on blocks of {cfg['block']} tokens: its training part "
            f"has {len(train):,} tokens and more than {cfg['block'] + 1:,} are needed"
        )
    return train, held, texts, info


def _model(root: Path, arm: str, vocab: int, train, held, cfg: dict, device: str, progress):
    """The trained model of ``arm``: loaded if OUT holds it, else trained (loss CSV as it goes)."""
    from torch_backend.training.tiny_gpt2 import build_model, load_weights, save_weights, train_lm

    weights = root / "models" / f"{arm}.safetensors"
    loss_csv = root / f"loss_{arm}.csv"
    model = build_model(arm, vocab, eps=cfg["eps"], seed=cfg["seed"])
    if weights.is_file() and finished(loss_csv):
        return load_weights(model, weights, device)
    writer = RowWriter(loss_csv, ["step", "train_loss", "test_loss"])

    def on_row(row):
        writer(row)
        if progress and "test_loss" in row:
            progress(f"lm-tables: {arm} step {row['step']}/{cfg['steps']} test loss {row['test_loss']:.3f}")

    try:
        train_lm(
            model,
            train,
            held,
            steps=cfg["steps"],
            batch=cfg["batch"],
            block=cfg["block"],
            lr=cfg["lr"],
            seed=cfg["seed"],
            eval_every=cfg["eval_every"],
            device=device,
            on_row=on_row,
        )
    except BaseException:
        writer.abandon()
        raise
    save_weights(model, weights)
    writer.finish()
    return model


def _certify_text(root: Path, t: int, captures: dict, cfg: dict, keep: bool) -> dict:
    """Certify every key set of text ``t``; returns the per-set, per-layer counts."""
    counts = {}
    for name, (arm, kind) in SETS.items():
        per_layer = []
        for layer, (inputs, _outputs) in enumerate(captures[arm], start=1):
            keys = keys_for(kind, inputs, cfg["eps"])
            if keys is None:  # not exactly representable
                per_layer.append(
                    {"n": len(inputs), **{s: 0 for s in _STATUSES}, "undecided": len(inputs), "seconds": 0.0}
                )
                continue
            t0 = time.perf_counter()
            cert = certify_text_keys(kind, keys, eps=cfg["eps"], seed=cfg["seed"])
            seconds = time.perf_counter() - t0
            tally = {s: 0 for s in _STATUSES}
            for r in cert.results:
                tally[r.status] += 1
            per_layer.append({"n": len(keys), **tally, "seconds": seconds})
            if keep:
                folder = root / "certificates" / name
                folder = folder_entry(root, Path("certificates") / name, folder=True)
                stem = f"text{t:04d}_layer{layer}"
                with replacing(folder / f"{stem}_keys.npy", binary=True) as handle:
                    np.save(handle, keys)  # named, with its SHA-256, by the certificate
                cert.with_keys_file(folder / f"{stem}.json", folder / f"{stem}_keys.npy").save(folder / f"{stem}.json")
        counts[name] = per_layer
    return counts


def reproduce_lm_tables(
    out,
    *,
    paper: bool = False,
    corpus=None,
    steps: int | None = None,
    texts: int | None = None,
    text_length: tuple[int, int] | None = None,
    device: str = "auto",
    keep_certificates: bool = True,
    progress=None,
) -> dict:
    """Run (or finish) the experiment into ``OUT/lm_tables``; returns the summary dict."""
    cfg = dict(PAPER_LM if paper else DEFAULT_LM)
    if steps is not None:
        cfg["steps"] = steps
    if texts is not None:
        cfg["texts"] = texts
    if text_length is not None:
        cfg["min_len"], cfg["max_len"] = text_length
        cfg["block"] = min(cfg["block"], text_length[1])
    out = Path(out)
    root = out / "lm_tables"
    root = folder_entry(output_folder(out), "lm_tables", folder=True)
    started = time.monotonic()
    dev = device_name(device)
    train, held, windows, info = _prepare_data(root, corpus, cfg)
    config = {
        "configuration": "paper" if paper else "default",
        **cfg,
        "device": dev,
        **info,
        "keys": {name: KEY_DESCRIPTIONS[kind] for name, (_, kind) in SETS.items()},
        "python": platform.python_version(),
        "corpus_path": None if corpus is None else Path(corpus).name,
    }
    write_json(root / "config.json", config)
    models = {
        arm: _model(root, arm, info["vocab_size"], train, held, cfg, dev, progress) for arm in ("centering", "scaling")
    }
    from torch_backend.training.tiny_gpt2 import capture_ln1

    results_path = root / "per_text.jsonl"
    done = {}
    if results_path.is_file():
        for line in results_path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
                done[row["text"]] = row
            except (ValueError, KeyError):
                break  # a line cut short
    radii = []
    with open_append(results_path) as handle:
        for t, tokens in enumerate(windows):
            captures = {arm: capture_ln1(m, tokens, device=dev) for arm, m in models.items()}
            radii.append(_radius_spread(captures["scaling"], cfg["eps"]))
            if t in done:
                continue
            row = {
                "text": t,
                "tokens": int(len(tokens)),
                "counts": _certify_text(root, t, captures, cfg, keep_certificates),
            }
            handle.write(json.dumps(row) + "\n")
            handle.flush()
            done[t] = row
            if progress:
                progress(f"lm-tables: certified text {t + 1}/{len(windows)}")
    rows = [done[t] for t in sorted(done) if t < len(windows)]
    summary = {
        "tables": table_rows(rows),
        "texts": len(rows),
        "seconds": time.monotonic() - started,
        "radius_spread": _merge_radii(radii),
        "certify_seconds": _certify_seconds(rows),
        "after_not_selectable": sum(
            layer["unselectable"] + layer["tie-only"] for r in rows for layer in r["counts"]["with"]
        ),
        "after_keys": sum(layer["n"] for r in rows for layer in r["counts"]["with"]),
    }
    from .lm_report import write_lm_figures, write_lm_section

    figures = write_lm_figures(root)
    write_lm_section(root, summary, config, figures)
    write_json(root / "summary.json", summary)
    write_summary(out)
    summary["out"] = str(root)
    return summary


def _radius_spread(captured, eps: float) -> list[tuple[float, float]]:
    """Per layer: the smallest and largest |output| / sqrt(d) of ln_1 (1 for every key only when eps = 0)."""
    out = []
    for inputs, _ in captured:
        c = inputs - inputs.mean(axis=1, keepdims=True)
        var = (c * c).mean(axis=1)
        r = np.sqrt(var / (var + eps))
        out.append((float(r.min()), float(r.max())))
    return out


def _merge_radii(radii) -> list[dict]:
    if not radii:
        return []
    layers = len(radii[0])
    return [
        {"layer": i + 1, "min": min(r[i][0] for r in radii), "max": max(r[i][1] for r in radii)} for i in range(layers)
    ]


def _certify_seconds(rows) -> dict:
    secs = [layer["seconds"] for row in rows for per in row["counts"].values() for layer in per]
    if not secs:
        return {}
    return {
        "count": len(secs),
        "median": float(np.median(secs)),
        "max": float(np.max(secs)),
        "total": float(np.sum(secs)),
    }


def table_rows(rows) -> dict:
    """Per set and layer: the mean over texts of the percentage of keys certified
    unselectable (unselectable or tie-only), and of the keys left undecided."""
    tables = {}
    for name in SETS:
        per_layer = []
        layers = len(rows[0]["counts"][name]) if rows else 0
        for i in range(layers):
            fr = [
                (r["counts"][name][i]["unselectable"] + r["counts"][name][i]["tie-only"]) / r["counts"][name][i]["n"]
                for r in rows
            ]
            und = [r["counts"][name][i]["undecided"] / r["counts"][name][i]["n"] for r in rows]
            per_layer.append(
                {
                    "layer": i + 1,
                    "unselectable_pct": 100 * float(np.mean(fr)),
                    "std_pct": 100 * float(np.std(fr)),
                    "undecided_pct": 100 * float(np.mean(und)),
                    "keys": int(sum(r["counts"][name][i]["n"] for r in rows)),
                }
            )
        tables[name] = per_layer
    return tables
