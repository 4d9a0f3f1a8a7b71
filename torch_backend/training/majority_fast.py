"""The Majority model's forward pass written for its shape: attention over class counts.

The model (:class:`torch_backend.training.majority.MajorityModel`) has no positional
encoding and its input is one of ``C`` tokens per position, so every quantity inside its one
encoder layer depends on a position only through (its token, the sequence's class counts):

- the normalised input, the query, key and value of token ``a`` are rows of ``C x d``
  matrices computed once per step;
- the attention scores of a query of class ``a`` over the ``L`` positions take ``C`` values,
  ``A[a, c] = q_a . k_c / sqrt(d)``, the score of class ``c`` repeated ``n_c`` times, so the
  softmax over positions is the softmax over classes of ``A[a, c] + log n_c`` (``-inf`` for
  absent classes) and the attention output is its product with the ``C`` values;
- everything after (output projection, residual, second norm, feed-forward, tied logits) is
  per (sequence, class): ``B x C`` rows instead of ``B x L``.

The loss is the per-token cross entropy, each (sequence, class) row weighted by how many
positions hold that class; accuracy likewise.  This is the same function of the same
parameters as the reference (``nn.TransformerEncoderLayer``) forward, only computed on
``B x C x C`` attention entries instead of ``B x L x L``; ``tests/test_experiments_majority.py``
checks outputs and gradients against the reference.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch.nn import functional as F

#: largest spread of one query's scores for which exp(score - max) cannot underflow in float32
#: for a present class (exp(-80) is a normal float32)
_SAFE_SPREAD = 80.0

__all__ = [
    "GroupedBatch",
    "class_counts",
    "grouped_batch",
    "grouped_logits",
    "grouped_loss",
    "grouped_correct",
    "class_query_angles",
]


def class_counts(tokens: torch.Tensor, classes: int) -> torch.Tensor:
    """``B x L`` integer tokens -> ``B x C`` float32 counts of each class per sequence."""
    counts = torch.zeros(tokens.shape[0], classes, dtype=torch.float32, device=tokens.device)
    return counts.scatter_add_(1, tokens, torch.ones(tokens.shape, dtype=torch.float32, device=tokens.device))


@dataclass(frozen=True)
class GroupedBatch:
    """A batch of sequences as class counts, and the (sequence, class) rows that occur:
    ``rows`` are flat indices ``b * C + a`` with ``counts[b, a] > 0``, ``weights`` their counts
    and ``labels`` the label of their sequence."""

    counts: torch.Tensor
    rows: torch.Tensor
    weights: torch.Tensor
    labels: torch.Tensor

    @property
    def tokens(self) -> float:
        return float(self.weights.sum())


def grouped_batch(counts: torch.Tensor, labels: torch.Tensor) -> GroupedBatch:
    """The :class:`GroupedBatch` of ``B x C`` counts and ``B`` labels."""
    classes = counts.shape[1]
    flat = counts.reshape(-1)
    rows = torch.nonzero(flat).squeeze(1)
    return GroupedBatch(counts, rows, flat[rows], labels[torch.div(rows, classes, rounding_mode="floor")])


def grouped_logits(model, batch: GroupedBatch) -> torch.Tensor:
    """``P x C`` logits, one row per occurring (sequence, class) pair of ``batch``: the output
    at every position of class ``a`` in sequence ``b``."""
    layer, emb = model.layer, model.embedding.weight
    classes, d = emb.shape
    normed = model.layer.norm1(emb)  # C x d
    qkv = normed @ layer.self_attn.in_proj_weight.T  # C x 3d (in-projection bias is 0)
    q, k, v = qkv[:, :d], qkv[:, d : 2 * d], qkv[:, 2 * d :]
    scores = (q @ k.T) / math.sqrt(d)  # C x C
    mixed = _attend(scores, v, batch.counts).reshape(-1, d)[batch.rows]  # P x d
    out_proj = layer.self_attn.out_proj
    h = emb[batch.rows % classes] + F.linear(mixed, out_proj.weight, out_proj.bias)
    n2 = layer.norm2
    z = F.layer_norm(h, (d,), n2.weight, n2.bias, n2.eps)
    h = h + layer.linear2(F.relu(layer.linear1(z)))
    return h @ emb.T


def _attend(scores, v, counts):
    """Softmax attention of each class's query over the sequence's positions, from counts.

    With ``E = exp(scores - rowmax)`` the output for (b, a) is
    ``sum_c n_bc E_ac v_c / sum_c n_bc E_ac``: two matrix products with the ``B x C`` counts.
    When a row's scores spread so far that ``E`` could underflow for every present class,
    the ``B x C x C`` softmax over ``scores + log n`` is used instead (the same function)."""
    b, c = counts.shape
    if float((scores.amax(1) - scores.amin(1)).max().detach()) > _SAFE_SPREAD:
        attn = torch.softmax(scores.unsqueeze(0) + counts.log().unsqueeze(1), dim=-1)
        return attn @ v
    e = torch.exp(scores - scores.amax(1, keepdim=True).detach())  # C x C, entries in (0, 1]
    weighted = (e.unsqueeze(2) * v.unsqueeze(0)).transpose(0, 1).reshape(c, -1)  # [c, (a, j)]
    num = (counts @ weighted).reshape(b, c, -1)  # B x C x d
    den = counts @ e.T  # B x C
    return num / den.unsqueeze(2)


def grouped_loss(logits: torch.Tensor, batch: GroupedBatch) -> torch.Tensor:
    """The mean per-token cross entropy of the reference model, from grouped logits."""
    top = logits.amax(1, keepdim=True).detach()
    lse = (logits - top).exp().sum(1).log() + top.squeeze(1)
    target = logits.gather(1, batch.labels.unsqueeze(1)).squeeze(1)
    return ((lse - target) * batch.weights).sum() / batch.weights.sum()


def grouped_correct(logits: torch.Tensor, batch: GroupedBatch) -> int:
    """How many tokens are predicted correctly (the argmax of the logits is the label)."""
    hit = logits.argmax(1) == batch.labels
    return int(batch.weights[hit].sum().round())


def class_query_angles(model) -> torch.Tensor:
    """Per class ``a``, the folded angle (degrees, in [0, 90]) between the all-ones vector and
    the query in the keys' space, ``norm1(e_a) @ W_Q^T @ W_K``."""
    _, queries, _ = model.keys_and_queries()
    cos = queries.sum(1) / (queries.norm(dim=1) * math.sqrt(queries.shape[1])).clamp_min(1e-30)
    ang = torch.rad2deg(torch.arccos(cos.clamp(-1, 1)))
    return 90.0 - (ang - 90.0).abs()
