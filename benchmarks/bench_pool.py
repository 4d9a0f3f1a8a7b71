"""Benchmark: ``--pool`` against the same texts unpooled, timed in one run.

For a random BERT of MiniLM's width (hidden 384, 12 heads of width 32) and a random Llama of
the same width (12 query heads, 4 key heads, RoPE, RMSNorm), ``--layers`` layers
(default 1), every head: ``--texts`` inputs (default 8) of different lengths, certified
once without and once with ``pool=True`` (each run from scratch into its own folder: the
pooled run does the texts' work and then the pool's), alternating, the least of
``--repeats`` each.  The figure is ``pooled_s / unpooled_s`` (the aim: at most 2).

Two input sets per model:

- ``distinct``: random token ids, so no two texts share a token at the same position;
- ``shared start``: the same, but every text starts with the same token (as ``[CLS]`` or a
  BOS token does): the keys at position 0 are the same input in every text.  Their keys
  should then be equal, bit for bit; a forward pass whose rounding depends on the batch
  gives keys that differ in their last bits instead, and the exact search then has to
  separate near-duplicate keys with exact rational arithmetic.  The count of such pairs
  (pooled keys closer than 1e-9 without being equal) is reported beside the times, with the
  free search over the pooled keys as stored and over the same keys with each near-duplicate
  made equal to its partner (``free_search_duplicates_equal_s``: what keys equal bit for bit
  would cost; equal keys are one key to the search).

    python benchmarks/bench_pool.py [--texts 8] [--layers 1] [--repeats 1] [--note "..."]

Results go to benchmarks/results/bench_pool.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SHAPES = {
    "bert": (
        "BertConfig",
        dict(hidden_size=384, num_attention_heads=12, intermediate_size=1536, max_position_embeddings=512),
    ),
    "llama": (
        "LlamaConfig",
        dict(
            hidden_size=384,
            num_attention_heads=12,
            num_key_value_heads=4,
            head_dim=32,
            intermediate_size=1024,
            max_position_embeddings=512,
        ),
    ),
}


def random_model(name, folder, layers, seed=0):
    import torch
    import transformers

    config_name, shape = SHAPES[name]
    torch.manual_seed(seed)
    config = getattr(transformers, config_name)(vocab_size=1000, num_hidden_layers=layers, **shape)
    transformers.AutoModel.from_config(config).save_pretrained(str(folder))
    return folder


def inputs(n_texts, shared_start, seed=1):
    rng = np.random.default_rng(seed)
    lengths = [10 + 4 * k for k in range(n_texts)]  # 10, 14, 18, ...: all different
    texts = [rng.integers(5, 1000, n) for n in lengths]
    if shared_start:
        for ids in texts:
            ids[0] = 2
    return texts


def near_duplicates(out) -> int:
    """Pairs of pooled keys closer than 1e-9 (largest coordinate difference) without being equal."""
    count = 0
    for path in sorted((out / "pooled").glob("*.npz")):
        K = np.load(path)["keys"]
        gaps = np.abs(K[:, None, :] - K[None, :, :]).max(axis=-1)
        count += int(((gaps > 0) & (gaps < 1e-9)).sum()) // 2
    return count


def free_engine_seconds(out) -> tuple[float, float]:
    """Seconds of the free search over every pooled key set as stored, and over the same keys
    with each near-duplicate made equal to its partner (what keys equal bit for bit cost)."""
    from lnproofs.propose.certification import certify

    stored = snapped = 0.0
    for path in sorted((out / "pooled").glob("*.npz")):
        K = np.load(path)["keys"]
        gaps = np.abs(K[:, None, :] - K[None, :, :]).max(axis=-1)
        same = K.copy()
        for i, j in zip(*np.nonzero((gaps > 0) & (gaps < 1e-9))):
            if i < j:
                same[j] = same[i]
        for keys, add in ((K, 0), (same, 1)):
            start = time.perf_counter()
            certify(keys)
            seconds = time.perf_counter() - start
            stored, snapped = (stored + seconds, snapped) if add == 0 else (stored, snapped + seconds)
    return round(stored, 2), round(snapped, 2)


def time_run(loaded, texts, pool, work, tag):
    from lnproofs.models.certify_model import certify_model

    out = work / tag
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    certify_model(loaded, texts, out, pool=pool)
    seconds = time.perf_counter() - start
    return seconds, out


def main() -> None:
    from lnproofs.models.loading import load_model

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=8)
    parser.add_argument("--layers", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--models", default="bert,llama")
    parser.add_argument("--note", default="")
    args = parser.parse_args()
    load_before = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="bench-pool-"))
    rows = []
    try:
        for name in args.models.split(","):
            loaded = load_model(random_model(name, work / name, args.layers))
            for shared in (False, True):
                texts = inputs(args.texts, shared)
                plain = pooled = float("inf")
                pairs = None
                for _ in range(args.repeats):
                    plain = min(plain, time_run(loaded, texts, False, work, "plain")[0])
                    seconds, out = time_run(loaded, texts, True, work, "pooled")
                    pooled = min(pooled, seconds)
                    pairs = near_duplicates(out)
                stored, snapped = free_engine_seconds(out)
                rows.append(
                    {
                        "model": name,
                        "inputs": "shared start" if shared else "distinct",
                        "texts": len(texts),
                        "tokens": int(sum(len(t) for t in texts)),
                        "layers": args.layers,
                        "heads": loaded.n_heads,
                        "unpooled_s": round(plain, 2),
                        "pooled_s": round(pooled, 2),
                        "ratio": round(pooled / plain, 2),
                        "near_duplicate_pairs": pairs,
                        "free_search_s": stored,
                        "free_search_duplicates_equal_s": snapped,
                    }
                )
                print(rows[-1], flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    figures = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "note": args.note,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "rows": rows,
    }
    results = HERE / "results"
    results.mkdir(exist_ok=True)
    (results / "bench_pool.json").write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    names = list(rows[0]) if rows else []
    lines = [
        f"# bench_pool ({figures['date']}, load {figures['load_average_before']} -> "
        f"{figures['load_average_after']}){' ' + args.note if args.note else ''}",
        "",
        "| " + " | ".join(names) + " |",
        "|" + "---|" * len(names),
    ]
    lines += ["| " + " | ".join(str(r[k]) for k in names) + " |" for r in rows]
    (results / "bench_pool.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
