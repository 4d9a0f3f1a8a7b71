"""Benchmark: what "same input, same key" costs, against the earlier arithmetic, in one run.

Two changes made a row's keys, queries and norm outputs independent of the other rows:

- every input goes through the model alone and unpadded (before: right-padded batches of
  ``--batch-size`` texts, 8 by default, in the corpus road);
- keys and queries are exact slice products (``lnproofs.models.row_products``), where
  they were one float64 BLAS product ``ln_out @ W.T + b`` over a text's rows.

Timed on random models built from transformers configs, in the dtype the command line
uses (float64): MiniLM's shape (BERT, 6 layers, 12 heads, hidden 384) over ``--texts``
inputs of 10 to 50 random token ids, and TinyLlama's shape (Llama, 32 query and 4 key heads
of width 64, hidden 2048, ``--tinyllama-layers`` of its 22 layers, float32 to bound memory)
over 4 inputs of 128 ids.  For each: the bare forward pass (no hooks) alone and in padded
batches of 8; the keys, and apart the queries, of every head of every layer both ways (the
certification computes keys only; queries serve the Python API and the tests), with one
BLAS thread, as every certification task of the corpus road runs.  The figures
are wall-clock seconds on whatever else runs on the machine: the load average is printed
beside them.

    python benchmarks/bench_same_key.py [--texts 100] [--tinyllama-layers 4] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def _model(kind: str, layers: int):
    import torch
    import transformers

    torch.manual_seed(0)
    if kind == "minilm":
        config = transformers.BertConfig(
            vocab_size=30522, hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536
        )
        return transformers.BertModel(config).eval().double(), "bert"
    config = transformers.LlamaConfig(
        vocab_size=32000,
        hidden_size=2048,
        num_hidden_layers=layers,
        num_attention_heads=32,
        num_key_value_heads=4,
        intermediate_size=5632,
        max_position_embeddings=2048,
    )
    return transformers.LlamaModel(config).eval(), "llama"


def _forward(model, name, inputs, batch: int) -> None:
    import torch

    with torch.no_grad():
        for first in range(0, len(inputs), batch):
            group = inputs[first : first + batch]
            longest = max(len(seq) for seq in group)
            ids = torch.zeros((len(group), longest), dtype=torch.long)
            mask = torch.zeros_like(ids)
            for b, seq in enumerate(group):
                ids[b, : len(seq)], mask[b, : len(seq)] = torch.as_tensor(seq), 1
            kwargs = {"input_ids": ids, "attention_mask": mask}
            if name == "bert":
                kwargs["token_type_ids"] = torch.zeros_like(ids)
            model(**kwargs)


def _best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def _rows(model, name, inputs) -> tuple[list[np.ndarray], list[tuple[np.ndarray, np.ndarray]]]:
    """Each input's norm outputs feeding every layer's attention and each layer's (W, b) of
    queries and keys, float64, from hooks on the model."""

    outs: list[np.ndarray] = []
    norms = (
        [model.embeddings.LayerNorm] + [layer.output.LayerNorm for layer in model.encoder.layer[:-1]]
        if name == "bert"
        else [layer.input_layernorm for layer in model.layers]
    )
    handles = [n.register_forward_hook(lambda _m, _a, o: outs.append(o[0].double().numpy())) for n in norms]
    try:
        _forward(model, name, inputs, 1)
    finally:
        for h in handles:
            h.remove()
    weights = []
    blocks = model.encoder.layer if name == "bert" else model.layers
    for block in blocks:
        attn = block.attention.self if name == "bert" else block.self_attn
        for lin in (attn.query, attn.key) if name == "bert" else (attn.q_proj, attn.k_proj):
            W = lin.weight.detach().double().numpy()
            b = lin.bias.detach().double().numpy() if lin.bias is not None else np.zeros(W.shape[0])
            weights.append((W, b))
    return outs, weights


def _products(outs, weights, heads_dim: int, exact: bool, which: str) -> None:
    """The keys (``which="keys"``) or queries of every head of every input and layer: exact
    as ``LayerCapture`` computes them (every key head's keys in one product, queries per
    head), or one BLAS product per head as before."""
    from lnproofs.models.row_products import row_products

    per_layer = len(weights) // 2
    for k, Y in enumerate(outs):
        W, b = weights[2 * (k % per_layer) + (1 if which == "keys" else 0)]
        if exact and which == "keys":
            every = row_products(Y, W, b)
        for h in range(W.shape[0] // heads_dim):
            rows = slice(h * heads_dim, (h + 1) * heads_dim)
            if not exact:
                Y @ W[rows].T + b[rows]
            elif which == "keys":
                np.ascontiguousarray(every[:, rows])
            else:
                row_products(Y, W[rows], b[rows])


def main(argv=None) -> None:
    from threadpoolctl import threadpool_limits

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=100)
    parser.add_argument("--tinyllama-layers", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    cases = [
        ("minilm", [rng.integers(1000, 30000, size=rng.integers(10, 51)) for _ in range(args.texts)], 32),
        ("tinyllama", [rng.integers(1000, 30000, size=128) for _ in range(4)], 64),
    ]
    print(f"load average before: {os.getloadavg()}")
    for kind, inputs, head_dim in cases:
        model, name = _model(kind, args.tinyllama_layers)
        alone = _best(lambda m=model: _forward(m, name, inputs, 1), args.repeats)
        batched = _best(lambda m=model: _forward(m, name, inputs, 8), args.repeats)
        outs, weights = _rows(model, name, inputs)
        tokens = sum(len(s) for s in inputs)
        line = (
            f"{kind}: {len(inputs)} inputs, {tokens} tokens, {len(outs) // len(inputs)} layers | forward alone "
            f"{alone:.2f} s, padded batches of 8 {batched:.2f} s ({alone / batched:.2f}x)"
        )
        for which in ("keys", "queries"):
            with threadpool_limits(limits=1, user_api="blas"):  # as the corpus road certifies
                blas = _best(lambda: _products(outs, weights, head_dim, False, which), args.repeats)
                exact = _best(lambda: _products(outs, weights, head_dim, True, which), args.repeats)
            line += f" | {which} of every head: exact {exact:.2f} s, BLAS per head {blas:.2f} s ({exact / blas:.1f}x)"
        print(line + f" | load {os.getloadavg()[0]:.1f}")
        del model


if __name__ == "__main__":
    main()
