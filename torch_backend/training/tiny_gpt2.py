"""Tiny GPT-2 language models for the paper's Tables 1 and 2, trained from scratch.

Both arms: GPT-2 with ``n_embd`` 8, 4 heads, 4 layers, ``layer_norm_epsilon`` 1e-5; in every
block the first LayerNorm (``ln_1``) has its gain frozen at 1 and its bias at 0, and the
attention input projection's bias (``attn.c_attn.bias``) is frozen.  Arm ``"scaling"``
keeps ``ln_1`` a LayerNorm; arm ``"centering"`` replaces it by the centring alone
(``x - mean(x)``, the projection without the scaling).

:func:`capture_ln1` runs a model on one text and returns, per layer, the inputs and the
outputs of ``ln_1`` (float64 numpy, one row per position).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

__all__ = [
    "LM_ARMS",
    "Centering",
    "build_model",
    "frozen_parameters",
    "train_lm",
    "evaluate_lm",
    "capture_ln1",
    "save_weights",
    "load_weights",
]

LM_ARMS = ("centering", "scaling")


class Centering(nn.Module):
    """LayerNorm without the scaling: subtract the mean of the last dimension."""

    def forward(self, x):
        return x - x.mean(dim=-1, keepdim=True)


def build_model(
    arm: str,
    vocab_size: int,
    *,
    n_positions: int = 1024,
    n_embd: int = 8,
    n_layer: int = 4,
    n_head: int = 4,
    eps: float = 1e-5,
    seed: int = 0,
):
    """A fresh GPT2LMHeadModel for ``arm`` with the frozen parameters set up."""
    from transformers import GPT2Config, GPT2LMHeadModel

    if arm not in LM_ARMS:
        raise ValueError(f"arm {arm!r}; accepted: {', '.join(LM_ARMS)}")
    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=vocab_size,
        n_positions=n_positions,
        n_embd=n_embd,
        n_layer=n_layer,
        n_head=n_head,
        layer_norm_epsilon=eps,
        bos_token_id=0,
        eos_token_id=0,
    )
    model = GPT2LMHeadModel(config)
    for block in model.transformer.h:
        if arm == "centering":
            block.ln_1 = Centering()
        else:
            with torch.no_grad():
                block.ln_1.weight.fill_(1.0)
                block.ln_1.bias.zero_()
        for p in frozen_parameters(block):
            p.requires_grad_(False)
    return model


def frozen_parameters(block) -> list:
    """The parameters of one block that training must leave alone."""
    out = [block.attn.c_attn.bias]
    if isinstance(block.ln_1, nn.LayerNorm):
        out += [block.ln_1.weight, block.ln_1.bias]
    return out


def _batches(stream: np.ndarray, block: int, batch: int, gen: torch.Generator):
    starts = torch.randint(0, len(stream) - block, (batch,), generator=gen).numpy()
    idx = starts[:, None] + np.arange(block)[None, :]
    return torch.as_tensor(stream[idx], dtype=torch.long)


def evaluate_lm(model, stream: np.ndarray, *, block: int, max_blocks: int = 8, device="cpu") -> float:
    """Mean next-token loss on consecutive blocks of a held-out token stream."""
    model.eval()
    losses = []
    with torch.no_grad():
        for s in range(0, min(len(stream) - 1, max_blocks * block), block):
            chunk = torch.as_tensor(stream[s : s + block], dtype=torch.long, device=device)[None]
            if chunk.shape[1] < 2:
                break
            losses.append(float(model(chunk, labels=chunk).loss))
    model.train()
    return float(np.mean(losses)) if losses else math.nan


def train_lm(
    model,
    train_stream: np.ndarray,
    test_stream: np.ndarray,
    *,
    steps: int,
    batch: int,
    block: int,
    lr: float,
    seed: int,
    eval_every: int,
    device="cpu",
    on_row=None,
    threads: int | None = 1,
) -> dict:
    """AdamW with linear decay on random blocks of ``block`` tokens, each placed at a random
    offset among the model's positions; ``on_row`` gets ``step, train_loss`` every step and
    ``test_loss`` every ``eval_every`` steps and at the end.  ``threads``: torch CPU
    threads while training (None: leave torch's setting)."""
    from .threads import cpu_threads

    with cpu_threads(threads if torch.device(device).type == "cpu" else None):
        return _train(
            model,
            train_stream,
            test_stream,
            steps=steps,
            batch=batch,
            block=block,
            lr=lr,
            seed=seed,
            eval_every=eval_every,
            device=device,
            on_row=on_row,
        )


def _train(model, train_stream, test_stream, *, steps, batch, block, lr, seed, eval_every, device, on_row):
    dev = torch.device(device)
    model.to(dev).train()
    gen = torch.Generator().manual_seed(seed)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1.0 - s / max(1, steps)))
    row = {}
    n_pos = model.config.n_positions
    for step in range(1, steps + 1):
        data = _batches(train_stream, block, batch, gen).to(dev)
        # blocks shorter than the context sit at random positions, so every position is trained
        offset = torch.randint(0, n_pos - block + 1, (batch, 1), generator=gen)
        positions = (offset + torch.arange(block)[None, :]).to(dev)
        loss = model(data, labels=data, position_ids=positions).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        row = {"step": step, "train_loss": float(loss.detach())}
        if step % eval_every == 0 or step == steps:
            row["test_loss"] = evaluate_lm(model, test_stream, block=block, device=dev)
        if on_row is not None:
            on_row(row)
    model.eval()
    return row


def save_weights(model, path) -> None:
    """The trained weights, as safetensors (tied weights stored once)."""
    from pathlib import Path

    from safetensors.torch import save_model

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    save_model(model, str(path))


def load_weights(model, path, device="cpu"):
    from safetensors.torch import load_model

    load_model(model, str(path), strict=False)
    return model.to(device).eval()


def capture_ln1(model, tokens, *, device="cpu") -> list[tuple[np.ndarray, np.ndarray]]:
    """Per layer, ``(inputs, outputs)`` of ``ln_1`` on one text (seq_len x n_embd, float64)."""
    captured: list = []

    def hook(_module, inputs, output):
        captured.append((inputs[0][0].detach().double().cpu().numpy(), output[0].detach().double().cpu().numpy()))

    handles = [block.ln_1.register_forward_hook(hook) for block in model.transformer.h]
    try:
        model.eval()
        with torch.no_grad():
            model(torch.as_tensor(np.asarray(tokens), dtype=torch.long, device=device)[None])
    finally:
        for h in handles:
            h.remove()
    return captured
