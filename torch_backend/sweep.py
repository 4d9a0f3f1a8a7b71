"""The sampling loop shared by the per-row checks: widths x input families x parameter sets x chunks."""

from __future__ import annotations

from collections import Counter

import torch

from .outcome import Outcome
from .sampling import chunk_sizes, input_families, random_gains

__all__ = ["sweep", "layer_params"]


def layer_params(ctx, width: int, gain_kind: str | None, eps: float) -> dict:
    """Gain (None for no gain), bias (None when there is no gain) and eps for one parameter set."""
    if gain_kind is None:
        return {"a": None, "b": None, "eps": eps}
    a = random_gains(width, gain_kind, **ctx.opts())
    b = torch.randn((width,), generator=ctx.gen, dtype=ctx.dtype, device=ctx.device)
    b = b * 10.0 ** (2.0 * float(torch.rand((), generator=ctx.gen, device=ctx.device)) - 1.0)
    return {"a": a, "b": b, "eps": eps}


def sweep(ctx, settings, measure, *, widths=None, families=None) -> list[Outcome]:
    """For every width, input family and setting ``(gain_kind, eps)``: draw rows chunk by chunk and call
    ``measure(x, a=..., b=..., eps=...) -> (per-row errors, {failure message: count})``."""
    acc: dict = {}
    for width in widths or ctx.widths():
        for family, make in families or input_families():
            per = max(8, ctx.rows(width) // len(settings))
            for gain_kind, eps in settings:
                params = layer_params(ctx, width, gain_kind, eps)
                for rows in chunk_sizes(per, ctx.chunk(width)):
                    x = make(rows, width, **ctx.opts())
                    err, fails = measure(x, **params)
                    count, worst, failures = acc.get((family, width), (0, 0.0, Counter()))
                    if err.numel():
                        worst = max(worst, float(err.max()))
                    failures.update(fails)
                    acc[(family, width)] = (count + int(err.numel()), worst, failures)
    return [
        Outcome(f, w, n, m, tuple(f"{msg} ({k} samples)" for msg, k in fails.items()))
        for (f, w), (n, m, fails) in acc.items()
    ]
