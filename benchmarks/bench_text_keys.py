"""Benchmark: one text's key set (1,024 keys in R^8) certified by the batch proposer
(:func:`lnproofs.propose.hull_batch.certify_fast`, the inner loop of
``lnproofs reproduce lm-tables``) versus the general engine (:func:`lnproofs.certify`),
measured in the same run on the same keys, with the exact re-check of both certificates.

Key sets: Gaussian keys with unequal axes (about half unselectable), the same keys centred
exactly (on the hyperplane sum = 0), and their LayerNorm outputs (all selectable).
For the batch proposer the time is also split into its two parts: the float proposals
(:func:`~lnproofs.propose.hull_batch.propose_batch`) and the kernel's exact check of them
(:func:`lnproofs.kernel.querysets.free.check_all`).  Wall-clock and CPU seconds (this
process) are both recorded, with the load average before and after: on a shared machine
the CPU seconds are the steadier figure.

    python benchmarks/bench_text_keys.py [--n 1024] [--repeat 3] [--note "what else ran"]

Results go to benchmarks/results/bench_text_keys.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections import Counter
from pathlib import Path

import numpy as np


def _best(fn, repeat: int):
    """(least wall seconds, least CPU seconds, last result) over ``repeat`` calls."""
    wall, cpu, out = float("inf"), float("inf"), None
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        cpu = min(cpu, time.process_time() - c)
        wall = min(wall, time.perf_counter() - w)
    return wall, cpu, out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--note", default="")
    args = parser.parse_args()
    from lnproofs import certify, check_certificate
    from lnproofs.experiments.lm_keys import exact_centred, layernorm_keys
    from lnproofs.kernel import ExactKeys, FreeQueries
    from lnproofs.propose.hull_batch import certify_fast, propose_batch

    load_before = os.getloadavg()
    rng = np.random.default_rng(0)
    X = (rng.standard_normal((args.n, 8)) * np.array([1, 1, 1, 1, 3, 0.2, 0.5, 2])).astype(np.float32)
    sets = {"gaussian": X.astype(np.float64), "centred": exact_centred(X), "layernorm": layernorm_keys(X, 1e-5)}
    certify_fast(sets["gaussian"][:64])  # imports and first calls out of the timings
    rows = []
    for name, K in sets.items():
        timing = {}
        for label, fn in (("batch", lambda: certify_fast(K)), ("engine", lambda: certify(K, progress=False))):
            wall, cpu, cert = _best(fn, args.repeat)
            ok = check_certificate(cert, K).ok
            timing[label] = {
                "seconds": wall,
                "cpu_seconds": cpu,
                "checker_ok": ok,
                "statuses": dict(Counter(r.status for r in cert.results)),
            }
        _, propose_cpu, proposals = _best(lambda: list(propose_batch(K).values()), args.repeat)
        _, check_cpu, _ = _best(lambda: FreeQueries().check(ExactKeys(K), proposals), args.repeat)
        timing["batch"].update(propose_cpu_seconds=propose_cpu, check_cpu_seconds=check_cpu)
        rows.append(
            {
                "keys": name,
                "n": args.n,
                "d": 8,
                **timing,
                "speedup": timing["engine"]["seconds"] / timing["batch"]["seconds"],
            }
        )
        b = timing["batch"]
        print(
            f"{name}: batch {b['seconds']:.2f} s ({b['cpu_seconds']:.2f} s CPU: propose {propose_cpu:.2f}, "
            f"check {check_cpu:.2f}), engine {timing['engine']['seconds']:.2f} s "
            f"({rows[-1]['speedup']:.1f}x); statuses {b['statuses']}",
            flush=True,
        )
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    meta = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "repeat": args.repeat,
        "cpus": os.cpu_count(),
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "note": args.note,
    }
    (out / "bench_text_keys.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    lines = [
        "| keys | n | batch (s) | batch CPU (s) | propose CPU (s) | check CPU (s) | engine (s) | "
        "engine / batch | statuses |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['keys']} | {r['n']} | {r['batch']['seconds']:.2f} | {r['batch']['cpu_seconds']:.2f} | "
        f"{r['batch']['propose_cpu_seconds']:.2f} | {r['batch']['check_cpu_seconds']:.2f} | "
        f"{r['engine']['seconds']:.2f} | {r['speedup']:.1f}x | {r['batch']['statuses']} |"
        for r in rows
    ]
    lines += [
        "",
        f"Load average (1, 5, 15 min) before {meta['load_before']}, after {meta['load_after']} "
        f"on {meta['cpus']} CPUs; best of {args.repeat}. {args.note}".rstrip(),
    ]
    (out / "bench_text_keys.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
