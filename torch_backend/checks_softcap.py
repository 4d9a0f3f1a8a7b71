"""Numeric check of the soft-cap theorem (:mod:`lnproofs.derive.theorems.softcap`).

Random logits of an unembedding against random hidden states, capped with ``c tanh(z / c)`` for
caps from well below to well above the logits' size: the difference identity is measured as a
residual over the magnitudes whose rounding produced it, and a hidden state whose logits have a
resolvable leading gap but whose capped logits lead with another token (or whose capped gap is not
positive) is a failure.
"""

from __future__ import annotations

import torch

from .geometry import divide
from .outcome import Outcome

__all__ = ["CHECKS", "cap"]

ROWS = 64  # tokens of each random unembedding
CAPS = (0.5, 5.0, 30.0)  # below, near and above the logits' size (Gemma-2's final cap is 30)


def cap(z, c):
    """Gemma-2's soft cap of the logits ``z`` (the map the theorem is about; a test may replace it)."""
    return c * torch.tanh(z / c)


def argmax(ctx):
    outcomes = []
    for width in ctx.widths():
        opts = {"generator": ctx.gen, "dtype": ctx.dtype, "device": ctx.device}
        keys = torch.randn((ROWS, width), **opts)
        bias = torch.randn(ROWS, **opts)
        q = torch.randn((ctx.rows(width), width), **opts) / width**0.5
        logits = q @ keys.T + bias  # a few units at any width: against a cap of 0.5 the tanh saturates
        top2 = logits.topk(2, dim=-1)
        for c in CAPS:
            capped = cap(logits, c)
            x, y = top2.values[:, 0], top2.values[:, 1]
            fx, fy = cap(x, c), cap(y, c)
            gap = c * torch.sinh((x - y) / c) / (torch.cosh(x / c) * torch.cosh(y / c))
            err = float(divide((fx - fy - gap).abs(), fx.abs() + fy.abs() + gap.abs()).max())
            # where the capped gap is resolvable in this dtype, the leader must be the logits' leader
            clear = (fy.abs() + fx.abs()) * 8 * ctx.tol() < gap
            fails = []
            if bool((capped.argmax(-1) != top2.indices[:, 0])[clear].any()):
                fails.append(f"cap {c}: the capped logits lead with another token where the gap is resolvable")
            if bool((gap[clear] <= 0).any()):
                fails.append(f"cap {c}: the capped gap of a leading logit is not positive")
            outcomes.append(Outcome(f"cap {c:g}", width, q.shape[0], err, tuple(fails)))
    return outcomes


CHECKS = {"vocab.soft_cap": argmax}
