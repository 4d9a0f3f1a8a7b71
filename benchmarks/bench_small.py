"""Benchmark: small certifications, where the cost of one call is what matters.

Times, per call, :func:`lnproofs.certify` (every key, margins and checks included) and
:func:`lnproofs.has_unselectable` (stops at the first key certified not selectable: what
``reproduce figure1`` runs thousands of times) on Gaussian keys of 8, 32 and 64 keys, and
the whole ``lnproofs reproduce figure1 --trials T`` command (wall seconds, its counts'
SHA-256 so that two runs can be compared).  Every call is timed in wall and CPU seconds,
with the load average beside it: on a shared machine, compare runs taken at the same
moment, alternating.

    python benchmarks/bench_small.py                        # sizes 8 32 64, d 3 and 8, figure1 --trials 10
    python benchmarks/bench_small.py --calls 50 --figure1-trials 0   # no figure1 run

Results go to benchmarks/results/bench_small.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def per_call(fn, inputs) -> dict:
    """Wall and CPU milliseconds per call of ``fn`` over ``inputs`` (one warm-up call first)."""
    fn(inputs[0])
    wall, cpu = time.perf_counter(), time.process_time()
    for x in inputs:
        fn(x)
    count = len(inputs)
    return {
        "wall_ms": round(1000 * (time.perf_counter() - wall) / count, 3),
        "cpu_ms": round(1000 * (time.process_time() - cpu) / count, 3),
        "calls": count,
        "load": os.getloadavg()[0],
    }


def figure1(trials: int) -> dict:
    """``lnproofs reproduce figure1 --trials T`` as a user runs it (its default workers), with the
    lnproofs this script imported (run from a fresh folder, with that package first on the path:
    ``python -m`` would otherwise take a checkout in the current folder first)."""
    import lnproofs

    env = dict(os.environ)
    home = str(Path(lnproofs.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([home] + [p for p in [env.get("PYTHONPATH")] if p])
    with tempfile.TemporaryDirectory() as out:
        load = os.getloadavg()[0]
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "lnproofs", "reproduce", "figure1", "--trials", str(trials), "--out", out],
            check=True,
            stdout=subprocess.DEVNULL,
            cwd=out,
            env=env,
        )
        wall = time.perf_counter() - start
        counts = (Path(out) / "figure1_counts.csv").read_bytes()
    return {
        "trials": trials,
        "wall_s": round(wall, 1),
        "load_before": load,
        "load_after": os.getloadavg()[0],
        "counts_sha256": hashlib.sha256(counts).hexdigest(),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 32, 64])
    parser.add_argument("--dims", type=int, nargs="+", default=[3, 8])
    parser.add_argument("--calls", type=int, default=30, help="key sets per size (default 30)")
    parser.add_argument("--figure1-trials", type=int, default=10, help="0: no figure1 run (default 10)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "bench_small.json"))
    args = parser.parse_args(argv)

    import lnproofs
    from lnproofs import certify, has_unselectable

    rows = []
    for d in args.dims:
        for n in args.sizes:
            rng = np.random.default_rng([n, d])
            keys = [rng.standard_normal((n, d)) for _ in range(args.calls)]
            row = {"n": n, "d": d}
            row["certify"] = per_call(certify, keys)
            row["has_unselectable"] = per_call(has_unselectable, keys)
            rows.append(row)
            print(
                f"n={n:3d} d={d:2d}  certify {row['certify']['wall_ms']:8.2f} ms "
                f"(cpu {row['certify']['cpu_ms']:.2f})  has_unselectable {row['has_unselectable']['wall_ms']:8.2f} ms "
                f"(cpu {row['has_unselectable']['cpu_ms']:.2f})  load {row['certify']['load']:.1f}"
            )
    result = {"lnproofs": lnproofs.__version__, "cores": os.cpu_count(), "per_call": rows}
    if args.figure1_trials > 0:
        result["figure1"] = figure1(args.figure1_trials)
        f = result["figure1"]
        print(
            f"reproduce figure1 --trials {f['trials']}: {f['wall_s']} s (load {f['load_before']:.1f} -> "
            f"{f['load_after']:.1f}), counts sha256 {f['counts_sha256'][:16]}"
        )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
