"""Random and adversarial inputs, generated chunk by chunk on the target device.

Every function takes a ``torch.Generator`` living on the target device, so a run is
reproducible from its seed and no large array is ever built on the host first.
Adversarial families: near-constant rows (a constant plus a tiny spread), rows with
magnitudes spread over many decades (1e-30..1e30 in float64; in float32 the range is
cut where squares and width-long sums of squares stay finite and normal), gains with
zeros, with mixed signs, equal, and clustered.
"""

from __future__ import annotations

import math

import torch

from .tolerances import unit_roundoff

__all__ = [
    "make_generator",
    "chunk_sizes",
    "default_chunk_rows",
    "magnitude_exponent_limit",
    "random_rows",
    "near_constant_rows",
    "magnitude_rows",
    "input_families",
    "random_gains",
    "unit_vectors",
    "orthonormal_hyperplane_basis",
]


def make_generator(seed: int, device: torch.device) -> torch.Generator:
    gen = torch.Generator(device=device)
    gen.manual_seed(int(seed))
    return gen


def default_chunk_rows(width: int, dtype: torch.dtype, budget_bytes: int = 1 << 27) -> int:
    """Rows per chunk so that one chunk of inputs takes at most ``budget_bytes`` (128 MiB)."""
    itemsize = torch.finfo(dtype).bits // 8
    return max(1, budget_bytes // (itemsize * max(int(width), 1)))


def chunk_sizes(total: int, chunk_rows: int):
    """Yield the sizes of consecutive chunks covering ``total`` rows."""
    done = 0
    while done < total:
        size = min(chunk_rows, total - done)
        yield size
        done += size


def magnitude_exponent_limit(dtype: torch.dtype, width: int) -> int:
    """Largest k <= 30 with 10**(-k) squaring to a normal number and width * 10**(2k) finite, with headroom."""
    info = torch.finfo(dtype)
    upper = int(math.floor(0.5 * math.log10(info.max / (64.0 * max(width, 1)))))
    lower = int(math.floor(-0.5 * math.log10(info.tiny) - 1))
    return max(0, min(30, upper, lower))


def _uniform(shape, gen, dtype, device, low=0.0, high=1.0):
    return torch.rand(shape, generator=gen, dtype=dtype, device=device) * (high - low) + low


def random_rows(rows: int, width: int, *, gen, dtype, device) -> torch.Tensor:
    """Gaussian rows with a random per-row scale (1e-3..1e3) and offset (up to 10 times the scale)."""
    x = torch.randn((rows, width), generator=gen, dtype=dtype, device=device)
    scale = 10.0 ** _uniform((rows, 1), gen, dtype, device, -3.0, 3.0)
    offset = _uniform((rows, 1), gen, dtype, device, -10.0, 10.0)
    return (x + offset) * scale


def near_constant_rows(rows: int, width: int, *, gen, dtype, device) -> torch.Tensor:
    """A constant c (|c| in 0.1..10, random sign) plus a spread 10**-k * |c|, k up to what the dtype resolves."""
    u = unit_roundoff(dtype)
    deepest = math.log10(1.0 / (1e3 * u))
    c = 10.0 ** _uniform((rows, 1), gen, dtype, device, -1.0, 1.0)
    c = c * torch.where(torch.rand((rows, 1), generator=gen, device=device) < 0.5, -1.0, 1.0).to(dtype)
    spread = 10.0 ** -_uniform((rows, 1), gen, dtype, device, 1.0, deepest)
    noise = torch.randn((rows, width), generator=gen, dtype=dtype, device=device)
    return c + noise * (spread * c.abs())


def magnitude_rows(rows: int, width: int, *, gen, dtype, device) -> torch.Tensor:
    """Gaussian rows scaled by 10**k, k an integer spread over the dtype's safe range (up to +-30)."""
    limit = magnitude_exponent_limit(dtype, width)
    k = torch.randint(-limit, limit + 1, (rows, 1), generator=gen, device=device).to(dtype)
    return torch.randn((rows, width), generator=gen, dtype=dtype, device=device) * 10.0**k


def input_families():
    """(family name, row generator) pairs: the random family first, then the adversarial ones."""
    return [("random", random_rows), ("near-constant", near_constant_rows), ("magnitudes", magnitude_rows)]


def random_gains(width: int, kind: str, *, gen, dtype, device) -> torch.Tensor:
    """A gain vector: ``mixed`` (random signs, magnitudes 0.1..10), ``positive``, ``with-zeros``
    (mixed with about a third zero, at least one zero and two non-zeros), ``equal`` (one random
    non-zero value), ``clustered`` (positive, all within 1e-3 relative of each other)."""
    mags = 10.0 ** _uniform((width,), gen, dtype, device, -1.0, 1.0)
    signs = torch.where(torch.rand((width,), generator=gen, device=device) < 0.5, -1.0, 1.0).to(dtype)
    if kind == "positive":
        return mags
    if kind == "mixed":
        return mags * signs
    if kind == "with-zeros":
        a = mags * signs
        zero = torch.rand((width,), generator=gen, device=device) < 1.0 / 3.0
        zero[torch.randint(0, width, (1,), generator=gen, device=device)] = True
        if int((~zero).sum()) < 2 and width >= 3:
            zero[:] = False
            zero[0] = True
        return torch.where(zero, torch.zeros_like(a), a)
    if kind == "equal":
        return torch.full((width,), float(mags[0] * signs[0]), dtype=dtype, device=device)
    if kind == "clustered":
        return (1.0 + 1e-3 * _uniform((width,), gen, dtype, device)) * mags[0]
    raise ValueError(f"unknown gain kind {kind!r}")


def unit_vectors(rows: int, width: int, *, gen, dtype, device) -> torch.Tensor:
    v = torch.randn((rows, width), generator=gen, dtype=dtype, device=device)
    return v / torch.linalg.vector_norm(v, dim=-1, keepdim=True)


def orthonormal_hyperplane_basis(width: int, count: int, *, gen, dtype, device) -> torch.Tensor:
    """``count`` orthonormal rows (count <= width - 1) orthogonal to the all-ones vector."""
    v = torch.randn((width, count), generator=gen, dtype=dtype, device=device)
    v = v - v.mean(dim=0, keepdim=True)
    q, _ = torch.linalg.qr(v)
    q = q - q.mean(dim=0, keepdim=True)  # remove the rounding residue along the ones vector
    q, _ = torch.linalg.qr(q)
    return q.T.contiguous()
