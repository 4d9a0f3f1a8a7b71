"""Numeric checks of the vocabulary theorems (:mod:`lnproofs.derive.theorems.vocab`).

Random unembeddings with a few planted rows of largest norm and planted duplicates; every
identity is measured as a residual divided by the magnitudes whose rounding produced it, and a
row the theorem says must win (or must lose) is counted as a failure when it does not, wherever
the float gap is resolvable.
"""

from __future__ import annotations

import torch

from .geometry import divide
from .outcome import Outcome

__all__ = ["CHECKS"]

ROWS = 64  # rows of each random unembedding


def _keys(ctx, width):
    keys = torch.randn((ROWS, width), generator=ctx.gen, dtype=ctx.dtype, device=ctx.device)
    rest = torch.linalg.vector_norm(keys[1:], dim=-1).max()
    keys[0] *= 1.5 * rest / torch.linalg.vector_norm(keys[0])  # a planted row of largest norm
    return keys


def self_witness(ctx):
    outcomes = []
    for width in ctx.widths():
        keys = _keys(ctx, width)
        G = keys @ keys.T
        n2 = G.diagonal()
        diff = keys[:, None, :] - keys[None, :, :]
        half = ((diff * diff).sum(-1) + n2[:, None] - n2[None, :]) / 2
        scale = (keys.abs() @ keys.abs().T) + n2[:, None] + n2[None, :] + (diff * diff).sum(-1)
        err = float(divide((n2[:, None] - G - half).abs(), scale).max())
        fails = []
        if int(G[0].argmax()) != 0:
            fails.append("the row of largest norm does not win at its own direction")
        gap = n2[0] - torch.cat([G[0, 1:]])
        bias = torch.randn(ROWS, generator=ctx.gen, dtype=ctx.dtype, device=ctx.device) * 10
        t = float(((bias[1:] - bias[0]) / gap).max().clamp(min=0)) * 2 + 1
        if int((t * G[0] + bias).argmax()) != 0:
            fails.append("q = t k_i with t above the theorem's bound does not make the row win with the bias")
        outcomes.append(Outcome("random rows", width, ROWS * ROWS, err, tuple(fails)))
    return outcomes


def duplicate_rows(ctx):
    outcomes = []
    for width in ctx.widths():
        keys = _keys(ctx, width)
        keys[5] = keys[4]
        bias = torch.randn(ROWS, generator=ctx.gen, dtype=ctx.dtype, device=ctx.device)
        bias[5] = bias[4] + 1.0
        q = torch.randn((ctx.rows(width), width), generator=ctx.gen, dtype=ctx.dtype, device=ctx.device)
        S = q @ keys.T + bias
        err = divide((S[:, 4] - S[:, 5] - (bias[4] - bias[5])).abs(), q.abs() @ keys[4].abs() + bias[4:6].abs().sum())
        fails = ("the row with the smaller bias won a query",) if bool((S.argmax(-1) == 4).any()) else ()
        outcomes.append(Outcome("equal rows", width, q.shape[0], float(err.max()), fails))
    return outcomes


def bias_lift(ctx):
    outcomes = []
    for width in ctx.widths():
        keys = _keys(ctx, width)
        bias = torch.randn(ROWS, generator=ctx.gen, dtype=ctx.dtype, device=ctx.device)
        rows = ctx.rows(width)
        q = torch.randn((rows, width), generator=ctx.gen, dtype=ctx.dtype, device=ctx.device)
        t = torch.exp(torch.empty((rows, 1), dtype=ctx.dtype, device=ctx.device).uniform_(-5, 5, generator=ctx.gen))
        lifted = torch.cat([q, t], -1) @ torch.cat([keys, bias[:, None]], -1).T
        scale = q.abs() @ keys.abs().T + t * bias.abs()
        err = float(divide((lifted - t * ((q / t) @ keys.T + bias)).abs(), scale).max())
        lam = torch.rand(ROWS - 1, generator=ctx.gen, dtype=ctx.dtype, device=ctx.device)
        lam = lam / lam.sum()
        S = q @ keys.T + bias
        r = keys[0] - lam @ keys[1:]
        avg = (S[:, :1] - S[:, 1:]) @ lam
        err2 = divide((avg - (q @ r + bias[0] - lam @ bias[1:])).abs(), scale.amax(-1) * 2)
        B = 100.0
        box = (2 * torch.rand((rows, width), generator=ctx.gen, dtype=ctx.dtype, device=ctx.device) - 1) * B
        over = box @ r - B * r.abs().sum()
        fails = (
            ("a query in the box has r.q > B ||r||_1",)
            if bool((over > 8 * ctx.tol() * B * r.abs().sum()).any())
            else ()
        )
        outcomes.append(Outcome("lifted scores", width, rows, max(err, float(err2.max())), fails))
    return outcomes


def final_norm(ctx):
    outcomes = []
    for width in ctx.widths():
        keys = _keys(ctx, width)
        bias = torch.randn(ROWS, generator=ctx.gen, dtype=ctx.dtype, device=ctx.device)
        g = 0.5 + torch.rand(width, generator=ctx.gen, dtype=ctx.dtype, device=ctx.device)
        beta = 0.1 * torch.randn(width, generator=ctx.gen, dtype=ctx.dtype, device=ctx.device)
        x = torch.randn((ctx.rows(width), width), generator=ctx.gen, dtype=ctx.dtype, device=ctx.device) * 3 + 1
        for family, layer in (
            ("layernorm", lambda v, w, b: ctx.layer_norm(v, (width,), w, b, 1e-5)),
            ("rmsnorm", lambda v, w, b: ctx.rms_norm(v, (width,), w, 1e-5) + (0 if b is None else b)),
        ):
            u = layer(x, None, None)
            z = layer(x, g, beta)
            logits = z @ keys.T + bias
            a = keys * g
            offsets = keys @ beta + bias
            scale = z.abs() @ keys.abs().T + u.abs() @ a.abs().T + keys.abs() @ beta.abs() + bias.abs()
            err = float(divide((logits - (u @ a.T + offsets)).abs(), scale).max())
            if family == "layernorm":  # (P a) . u = a . u - mean(a) sum(u), whatever sum(u) is in floats
                mean = a.mean(-1)
                centred = (u @ (a - mean[:, None]).T) - (u @ a.T - u.sum(-1, keepdim=True) * mean)
                cscale = u.abs() @ a.abs().T + u.abs().sum(-1, keepdim=True) * a.abs().mean(-1)
                err = max(err, float(divide(centred.abs(), cscale).max()))
            outcomes.append(Outcome(family, width, x.shape[0], err))
    return outcomes


def no_offset(ctx):
    outcomes = []
    for width in ctx.widths():
        a = _keys(ctx, width)
        rows = ctx.rows(width)
        z = torch.randn((rows, width - 1), generator=ctx.gen, dtype=ctx.dtype, device=ctx.device)
        u = torch.cat([z, -z.sum(-1, keepdim=True)], -1)  # u = L^T z: 1 . u = 0
        La = a[:, :-1] - a[:, -1:]
        scale = u.abs() @ a.abs().T + z.abs() @ La.abs().T
        err = float(divide((u @ a.T - z @ La.T).abs(), scale).max())
        s = torch.exp(torch.empty((rows, 1), dtype=ctx.dtype, device=ctx.device).uniform_(-5, 5, generator=ctx.gen))
        S, Ss = u @ a.T, (s * u) @ a.T
        top2 = S.topk(2, dim=-1).values
        clear = (top2[:, 0] - top2[:, 1]) > 64 * ctx.tol() * (u.abs() @ a.abs().T).amax(-1)
        fails = (
            ("scaling u changed the argmax of a resolvable gap",)
            if bool((S.argmax(-1) != Ss.argmax(-1))[clear].any())
            else ()
        )
        c = torch.randn((rows, 1), generator=ctx.gen, dtype=ctx.dtype, device=ctx.device)
        flat = c.expand(rows, width)  # L v = 0: v = c 1
        err = max(err, float(divide((flat - flat.mean(-1, keepdim=True)).abs(), c.abs()).max()))
        outcomes.append(Outcome("centred coordinates", width, rows, err, fails))
    return outcomes


CHECKS = {
    "vocab.self_witness": self_witness,
    "vocab.duplicate_rows": duplicate_rows,
    "vocab.bias_lift": bias_lift,
    "vocab.final_norm": final_norm,
    "vocab.no_offset": no_offset,
}
