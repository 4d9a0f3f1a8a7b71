"""Benchmark: the LayerNorm geometry re-check against torch.nn.functional.layer_norm.

Both run in the same process on the same float32 tensor: ``layer_norm(x)`` produces z,
then ``fused_recheck(x, z)`` re-checks every output against its input (hyperplane
residual, ellipsoid residual, distance from the surface, strictly-inside count).  The
re-check is memory-bound, so the figure of merit is the ratio of the two times (target:
at most 3).  Batches larger than ``--block-rows`` are processed block by block (each
block generated on the device, timed for both, then freed), so a 10,000,000 x 768 run
needs memory for one block only.

    python benchmarks/bench_recheck.py                       # 1,000,000 x 768 on the default device
    python benchmarks/bench_recheck.py --n 10000000 --device cuda
"""

from __future__ import annotations

import argparse
import json
import time

import torch
import torch.nn.functional as F

from torch_backend.device import device_label, resolve_device
from torch_backend.layers import fused_recheck
from torch_backend.sampling import make_generator


def _sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def _timed(dev, fn):
    _sync(dev)
    start = time.perf_counter()
    out = fn()
    _sync(dev)
    return time.perf_counter() - start, out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="rows (default 1,000,000)")
    parser.add_argument("--width", type=int, default=768, help="row length (default 768)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats per block; the best counts")
    parser.add_argument("--block-rows", type=int, default=1_000_000, help="rows held in memory at once")
    parser.add_argument(
        "--chunk-rows",
        type=int,
        default=None,
        help="rows per re-check chunk (default 8192 on the CPU, 262144 on a GPU)",
    )
    parser.add_argument("--eps", type=float, default=1e-5)
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="CPU threads for torch (default: torch's "
        "choice); on a shared machine 1 avoids stalls in small parallel operations",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    dev = resolve_device(args.device)
    chunk = args.chunk_rows or (262_144 if dev.type == "cuda" else 8192)
    gen = make_generator(0, dev)
    n = args.width
    gain = torch.rand((n,), generator=gen, device=dev) + 0.5
    bias = torch.randn((n,), generator=gen, device=dev)
    t_ln = t_re = t_both = 0.0
    inside, worst_ellipse, worst_plane = 0, 0.0, 0.0
    done = 0
    while done < args.n:
        rows = min(args.block_rows, args.n - done)
        x = torch.randn((rows, n), generator=gen, device=dev)
        x.mul_(torch.rand((rows, 1), generator=gen, device=dev) * 10).add_(
            torch.randn((rows, 1), generator=gen, device=dev)
        )
        best_ln = best_re = best_both = float("inf")
        for _ in range(args.repeats):
            z = None
            dt, z = _timed(dev, lambda: F.layer_norm(x, (n,), gain, bias, args.eps))
            best_ln = min(best_ln, dt)
            dt, res = _timed(dev, lambda: fused_recheck(x, z, gain, bias, args.eps, chunk_rows=chunk))
            best_re = min(best_re, dt)
            del z
            dt, _ = _timed(dev, lambda: fused_recheck(x, None, gain, bias, args.eps, chunk_rows=chunk))
            best_both = min(best_both, dt)
        t_ln, t_re, t_both = t_ln + best_ln, t_re + best_re, t_both + best_both
        inside += res["inside"]
        worst_ellipse = max(worst_ellipse, res["max_ellipse"])
        worst_plane = max(worst_plane, res["max_plane"])
        done += rows
        del x
    gbytes = args.n * n * 4 / 1e9
    report = {
        "device": device_label(dev),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "rows": args.n,
        "width": n,
        "dtype": "float32",
        "chunk_rows": chunk,
        "block_rows": args.block_rows,
        "layer_norm_s": t_ln,
        "recheck_s": t_re,
        "ratio_recheck_over_layer_norm": t_re / t_ln,
        "recheck_with_layer_s": t_both,
        "ratio_recheck_with_layer_over_layer_norm": t_both / t_ln,
        "recheck_GB_per_s_read": 2 * gbytes / t_re,
        "layer_norm_GB_per_s_read": gbytes / t_ln,
        "strictly_inside": inside,
        "max_ellipse_residual": worst_ellipse,
        "max_plane_residual": worst_plane,
        "tolerance": res["tolerance"],
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(
            f"device {report['device']}, torch {report['torch']}, {report['threads']} threads; "
            f"{args.n} x {n} float32 in blocks of {args.block_rows}, re-check chunks of {chunk} rows"
        )
        print(f"  torch.nn.functional.layer_norm:         {t_ln:8.3f} s")
        print(f"  geometry re-check of (x, layer_norm(x)): {t_re:8.3f} s   ratio {t_re / t_ln:5.2f}")
        print(f"  re-check computing the layer itself:     {t_both:8.3f} s   ratio {t_both / t_ln:5.2f}")
        print(
            f"  residuals: ellipsoid {worst_ellipse:.2e}, hyperplane {worst_plane:.2e} "
            f"(tolerance {report['tolerance']:.2e}); strictly inside: {inside}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
