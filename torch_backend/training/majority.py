"""Train the one-layer model of the Majority task, with or without LayerNorm's projection.

Model: ``Embedding(C, d)`` -> one pre-norm Transformer encoder layer (one head, feed-forward
width ``d``, dropout 0, batch first) whose first norm is one of

- ``"layernorm"``: LayerNorm with eps 0 and no gain or bias (projection, then scaling to
  radius sqrt(d));
- ``"no-projection"``: ``x / |x| / sqrt(d)`` (onto a sphere, no projection);
- ``"none"``: the identity;

the attention in-projection has no bias (frozen at 0); logits are the layer's output times
the (tied) embedding matrix.  The second norm (before the feed-forward block) is torch's
default LayerNorm.
"""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["ARMS", "MajorityModel", "train_majority", "checkpoint_step"]

ARMS = ("layernorm", "no-projection", "none")


class _Norm(nn.Module):
    def __init__(self, arm: str, d: int):
        super().__init__()
        self.arm, self.d = arm, d

    def forward(self, x):
        if self.arm == "layernorm":
            return nn.functional.layer_norm(x, (self.d,), eps=0.0)
        if self.arm == "no-projection":
            return x / x.norm(dim=-1, keepdim=True) / math.sqrt(self.d)
        return x


class MajorityModel(nn.Module):
    def __init__(self, classes: int, d: int, arm: str):
        super().__init__()
        if arm not in ARMS:
            raise ValueError(f"arm {arm!r}; accepted: {', '.join(ARMS)}")
        self.embedding = nn.Embedding(classes, d)
        self.layer = nn.TransformerEncoderLayer(
            d, 1, dim_feedforward=d, dropout=0.0, batch_first=True, norm_first=True, layer_norm_eps=0.0
        )
        self.layer.norm1 = _Norm(arm, d)
        with torch.no_grad():
            self.layer.self_attn.in_proj_bias.zero_()
        self.layer.self_attn.in_proj_bias.requires_grad_(False)

    def forward(self, tokens):
        h = self.layer(self.embedding(tokens))
        return h @ self.embedding.weight.T

    def keys_and_queries(self):
        """The C distinct keys (normalised embeddings) and their queries, in the keys' space:
        the score of key k for input x is ``(W_K^T W_Q x) . k``, so the query is W_K^T W_Q x."""
        normed = self.layer.norm1(self.embedding.weight)
        d = normed.shape[1]
        w_q = self.layer.self_attn.in_proj_weight[:d]
        w_k = self.layer.self_attn.in_proj_weight[d : 2 * d]
        return normed, normed @ w_q.T @ w_k, normed @ w_k.T


def train_majority(
    data,
    *,
    arm: str,
    d: int,
    seed: int,
    steps: int,
    batch: int,
    lr: float,
    decay_steps: int,
    eval_every: int,
    device: str = "cpu",
    on_row=None,
    stop_at_perfect: bool = True,
    threads: int | None = 1,
    grouped: bool = True,
    checkpoint=None,
    checkpoint_every: int = 500,
) -> dict:
    """Train one arm with one seed; ``on_row(dict)`` is called once per step with ``step``,
    ``epoch``, ``train_loss`` and ``train_angle`` (the paper's measure: the mean over the
    batch's tokens of the folded angle between ``norm1(x) @ W_Q^T @ W_K`` and the all-ones
    vector, with the parameters of that step's forward pass) and, every ``eval_every`` steps
    (and at the first and last), ``test_accuracy`` and ``query_angle`` (the same angle, mean
    over the test tokens).  Epochs go through a fresh permutation of the training set in
    batches of ``batch`` (the last one smaller), as a shuffling data loader does.  Returns the
    final row, the model's keys and queries (numpy, for plotting) and its ``weights`` (numpy)
    for certification.  ``grouped``: the forward pass over class counts
    (:mod:`.majority_fast`, the same function); False runs the ``nn.TransformerEncoderLayer``
    forward.  ``threads``: torch CPU threads while training (None: leave torch's setting).
    ``checkpoint``: a file the whole training state (model, optimiser, schedule, the data
    order's generator and place) is written to every ``checkpoint_every`` steps; when it exists
    at the start, training continues from it (rows before it are not reported again), with
    the same result as an uninterrupted run."""
    from .threads import cpu_threads

    with cpu_threads(threads if torch.device(device).type == "cpu" else None):
        return _train(
            data,
            arm=arm,
            d=d,
            seed=seed,
            steps=steps,
            batch=batch,
            lr=lr,
            decay_steps=decay_steps,
            eval_every=eval_every,
            device=device,
            on_row=on_row,
            stop_at_perfect=stop_at_perfect,
            grouped=grouped,
            checkpoint=checkpoint,
            checkpoint_every=checkpoint_every,
        )


def checkpoint_step(path) -> int:
    """The last step saved in a training checkpoint (0 when there is none)."""
    from pathlib import Path

    if path is None or not Path(path).is_file():
        return 0
    return int(torch.load(path, map_location="cpu", weights_only=True)["step"])


def _save_checkpoint(path, state: dict) -> None:
    from pathlib import Path

    tmp = Path(str(path) + ".tmp")
    torch.save(state, tmp)
    tmp.replace(path)


def _train(
    data,
    *,
    arm,
    d,
    seed,
    steps,
    batch,
    lr,
    decay_steps,
    eval_every,
    device,
    on_row,
    stop_at_perfect,
    grouped,
    checkpoint,
    checkpoint_every,
):
    from .majority_fast import (
        class_counts,
        class_query_angles,
        grouped_batch,
        grouped_correct,
        grouped_logits,
        grouped_loss,
    )

    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    dev = torch.device(device)
    model = MajorityModel(data.classes, d, arm).to(dev)
    x_tr = torch.as_tensor(data.x_train, device=dev)
    y_tr = torch.as_tensor(data.y_train, device=dev)
    c_tr = class_counts(x_tr, data.classes)
    test = grouped_batch(
        class_counts(torch.as_tensor(data.x_test, device=dev), data.classes), torch.as_tensor(data.y_test, device=dev)
    )
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1.0 - s / max(1, decay_steps)))
    loss_fn = nn.CrossEntropyLoss()

    def evaluate(row):
        with torch.no_grad():
            logits = grouped_logits(model, test)
            row["test_accuracy"] = grouped_correct(logits, test) / test.tokens
            angles = class_query_angles(model)
            row["query_angle"] = float((test.counts.sum(0) @ angles) / test.tokens)

    n = len(x_tr)
    order = {"epoch": 0, "perm": torch.zeros(0, dtype=torch.int64), "pos": n}
    start = 1
    if checkpoint_step(checkpoint):
        saved = torch.load(checkpoint, map_location="cpu", weights_only=True)
        model.load_state_dict(saved["model"])
        opt.load_state_dict(saved["opt"])
        sched.load_state_dict(saved["sched"])
        gen.set_state(saved["gen"])
        order = {"epoch": saved["epoch"], "perm": saved["perm"], "pos": saved["pos"]}
        start = saved["step"] + 1
    row = {}
    for step in range(start, steps + 1):
        if order["pos"] >= n:  # a new epoch: a fresh permutation, the last batch smaller
            order = {"epoch": order["epoch"] + 1, "perm": torch.randperm(n, generator=gen), "pos": 0}
        epoch, idx = order["epoch"], order["perm"][order["pos"] : order["pos"] + batch]
        order["pos"] += batch
        idx = idx.to(dev)
        counts = c_tr[idx]
        with torch.no_grad():
            train_angle = float((counts.sum(0) @ class_query_angles(model)) / counts.sum())
        if grouped:
            b = grouped_batch(counts, y_tr[idx])
            loss = grouped_loss(grouped_logits(model, b), b)
        else:
            xb, yb = x_tr[idx], y_tr[idx]
            loss = loss_fn(model(xb).reshape(-1, data.classes), yb[:, None].expand_as(xb).reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        row = {"step": step, "epoch": epoch, "train_loss": float(loss.detach()), "train_angle": train_angle}
        if step % eval_every == 0 or step == steps or step == 1:
            evaluate(row)
        if on_row is not None:
            on_row(row)
        if checkpoint is not None and step % checkpoint_every == 0:
            _save_checkpoint(
                checkpoint,
                {
                    "step": step,
                    "model": model.state_dict(),
                    "opt": opt.state_dict(),
                    "sched": sched.state_dict(),
                    "gen": gen.get_state(),
                    **order,
                },
            )
        if stop_at_perfect and row.get("test_accuracy") == 1.0:
            break
    if "test_accuracy" not in row:
        evaluate(row)
    with torch.no_grad():
        keys, queries, projected_keys = model.keys_and_queries()
    weights = {name: p.detach().cpu().numpy() for name, p in model.state_dict().items()}
    return {
        **row,
        "keys": keys.detach().cpu().numpy(),
        "queries": queries.detach().cpu().numpy(),
        "projected_keys": projected_keys.detach().cpu().numpy(),
        "weights": weights,
    }
