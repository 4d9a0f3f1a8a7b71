"""Numeric checks of the projection theorems: P = I - J/n."""

from __future__ import annotations

import torch

from .geometry import center, divide, projection_matrix
from .outcome import Outcome
from .sampling import chunk_sizes, input_families

__all__ = ["CHECKS"]


def _families(ctx):
    """(family, width, chunk tensor) for every input family at every width, chunk by chunk."""
    for width in ctx.widths():
        for family, make in input_families():
            for rows in chunk_sizes(ctx.rows(width), ctx.chunk(width)):
                yield family, width, make(rows, width, **ctx.opts())


def _collect(ctx, measure):
    """Run ``measure(x, P) -> per-row errors`` over every family; one Outcome per (family, width)."""
    acc: dict = {}
    cache = {}
    for family, width, x in _families(ctx):
        if width not in cache:
            cache[width] = projection_matrix(width, dtype=ctx.dtype, device=ctx.device)
        err = measure(x, cache[width])
        key = (family, width)
        n, m = acc.get(key, (0, 0.0))
        acc[key] = (n + err.numel(), max(m, float(err.max())))
    return [Outcome(f, w, n, m) for (f, w), (n, m) in acc.items()]


def mean_subtraction(ctx):
    def measure(x, P):
        scale = x.abs().amax(dim=-1)
        return divide((center(x) - x @ P).abs().amax(dim=-1), scale)

    return _collect(ctx, measure)


def symmetric(ctx):
    def measure(x, P):
        jitter = torch.rand((x.shape[0], 1), generator=ctx.gen, dtype=x.dtype, device=x.device)
        y = torch.roll(x, 1, dims=0) * (1.0 + jitter)
        lhs = ((x @ P) * y).sum(-1)
        rhs = (x * (y @ P)).sum(-1)
        scale = ((x.abs() @ P.abs()) * y.abs()).sum(-1) + (x.abs() * (y.abs() @ P.abs())).sum(-1)
        return divide((lhs - rhs).abs(), scale)

    outcomes = _collect(ctx, measure)
    for width in ctx.widths():  # the matrix itself, entry by entry
        P = projection_matrix(width, dtype=ctx.dtype, device=ctx.device)
        outcomes.append(Outcome("matrix", width, width * width, float((P - P.T).abs().max())))
    return outcomes


def idempotent(ctx):
    def measure(x, P):
        px = x @ P
        scale = (x.abs() @ P.abs() @ P.abs()).amax(dim=-1)
        return divide(((px @ P) - px).abs().amax(dim=-1), scale)

    outcomes = _collect(ctx, measure)
    for width in ctx.widths():  # J^2 = n J, in floating point (integers, exact)
        J = torch.ones((width, width), dtype=ctx.dtype, device=ctx.device)
        err = float(((J @ J) - width * J).abs().max()) / width
        outcomes.append(Outcome("J^2=nJ", width, width * width, err))
    return outcomes


def _matrix_widths(ctx):
    extra = torch.randint(4, max(5, min(ctx.width, 256)), (4,), generator=ctx.gen, device=ctx.device).tolist()
    return sorted({2, 3, min(ctx.width, 1024), *extra})


def trace(ctx):
    outcomes = []
    for width in _matrix_widths(ctx):
        P = projection_matrix(width, dtype=ctx.dtype, device=ctx.device)
        basis = torch.eye(width, dtype=ctx.dtype, device=ctx.device)
        operator_trace = center(basis).diagonal().sum()  # sum of e_i . (e_i - mean(e_i) 1)
        eig_trace = torch.linalg.eigvalsh(P).sum()
        err = max(abs(float(t) - (width - 1)) for t in (P.diagonal().sum(), operator_trace, eig_trace)) / width
        outcomes.append(Outcome("matrix", width, 3, err))
    return outcomes


def kernel(ctx):
    outcomes = []
    for width in ctx.widths():
        rows = ctx.rows(width)
        # P (c 1) = 0 for c spread over the dtype's magnitudes
        from .sampling import magnitude_rows

        c = magnitude_rows(rows, 1, **ctx.opts())
        ones = c.expand(rows, width)
        err = divide(center(ones).abs().amax(dim=-1), c.abs()[:, 0])
        outcomes.append(Outcome("P1=0", width, rows, float(err.max())))
        # P v = v for v orthogonal to 1 (v = Px computed here; its own rounding residue scales with max|x|)
        for family, make in input_families():
            worst, count = 0.0, 0
            for size in chunk_sizes(rows, ctx.chunk(width)):
                x = make(size, width, **ctx.opts())
                v = center(x)
                e = divide((center(v) - v).abs().amax(dim=-1), x.abs().amax(dim=-1))
                worst, count = max(worst, float(e.max())), count + size
            outcomes.append(Outcome(f"Pv=v:{family}", width, count, worst))
    return outcomes


def eigenvalues(ctx):
    outcomes = []
    for width in _matrix_widths(ctx):
        P = projection_matrix(width, dtype=ctx.dtype, device=ctx.device)
        lam, vec = torch.linalg.eigh(P)
        ones = torch.full((width,), width**-0.5, dtype=ctx.dtype, device=ctx.device)
        err = max(
            float(lam[0].abs()),
            float((lam[1:] - 1).abs().max()) if width > 1 else 0.0,
            1.0 - float((vec[:, 0] @ ones).abs()),
        )
        failures = (
            ()
            if float(lam[1]) > 0.5
            else (f"the eigenvalue 0 appears more than once (second smallest {float(lam[1]):.3e})",)
        )
        outcomes.append(Outcome("matrix", width, width, err, failures))
    return outcomes


CHECKS = {
    "projection.mean_subtraction": mean_subtraction,
    "projection.symmetric": symmetric,
    "projection.idempotent": idempotent,
    "projection.trace": trace,
    "projection.kernel": kernel,
    "projection.eigenvalues": eigenvalues,
}
