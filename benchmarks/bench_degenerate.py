"""Benchmark: keys on a hyperplane up to rounding against the same keys made exact.

For each case, Gaussian inputs X (N x d) give three key sets:

* float-centred: X - mean(X) computed in float64 (rows sum to about 1e-16, not 0);
* exactly centred: X rounded to multiples of 2**-20, then centred (exact in float64 for d a
  power of two: the rows sum to exactly 0); the same keys up to 2**-21 per entry;
* LayerNorm inputs: X itself, certified with ``certify_layernorm_outputs`` (eps 0 and
  eps 1e-5), the outputs computed exactly.

Each is certified with ``lnproofs.certify`` (``--min-margin`` 1e-9 for the key sets) and
timed ``--repeat`` times, interleaved, wall clock and process CPU time.  The figure of
merit is the ratio float-centred / exactly centred in the same run.  It also reports
the vertex count within the hyperplane from qhull (d <= 9), the selectable keys and those
selectable only by a margin below 1e-9.

    python benchmarks/bench_degenerate.py [--cases 1024:8,2048:8,1024:16] [--repeat 3] [--note "..."]

Results go to benchmarks/results/bench_degenerate.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np


def key_sets(n: int, d: int, seed: int):
    if d & (d - 1):
        raise SystemExit(f"d = {d}: use a power of two, so that centring the rounded keys is exact")
    x = np.random.default_rng(seed).standard_normal((n, d))
    floaty = x - x.mean(axis=1, keepdims=True)
    grid = np.round(x * 2.0**20) / 2.0**20
    exact = grid - grid.mean(axis=1, keepdims=True)
    assert np.all(exact.sum(axis=1) == 0) and np.any(floaty.sum(axis=1) != 0)
    return x, floaty, exact


def plane_vertices(keys: np.ndarray) -> int | None:
    """qhull's vertex count within the hyperplane (None above 9 dimensions: qhull's cost
    grows exponentially with the dimension)."""
    from scipy.spatial import ConvexHull

    d = keys.shape[1]
    if d > 9:
        return None
    basis = np.linalg.qr(np.eye(d) - 1.0 / d)[0][:, : d - 1]
    return len(ConvexHull(keys @ basis).vertices)


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def run_case(n: int, d: int, repeat: int, seed: int) -> dict:
    from lnproofs import certify, certify_layernorm_outputs

    x, floaty, exact = key_sets(n, d, seed)
    jobs = {
        "float-centred": lambda: certify(floaty, min_margin=1e-9),
        "exactly centred": lambda: certify(exact, min_margin=1e-9),
        "LayerNorm inputs, eps 0": lambda: certify_layernorm_outputs(x, eps=0.0, min_margin=1e-9),
        "LayerNorm inputs, eps 1e-5": lambda: certify_layernorm_outputs(x, eps=1e-5, min_margin=1e-9),
    }
    times = {name: {"wall": [], "cpu": []} for name in jobs}
    certs = {}
    for _ in range(repeat):
        for name, job in jobs.items():
            certs[name], wall, cpu = timed(job)
            times[name]["wall"].append(round(wall, 3))
            times[name]["cpu"].append(round(cpu, 3))
    row = {"n": n, "d": d, "seed": seed, "plane_vertices": plane_vertices(exact), "jobs": {}}
    for name, cert in certs.items():
        row["jobs"][name] = {
            "summary": dict(cert.summary),
            "below_min_margin": len(cert.below_min_margin),
            "rank_warning": cert.rank_warning is not None,
            "wall": times[name]["wall"],
            "cpu": times[name]["cpu"],
            "wall_median": statistics.median(times[name]["wall"]),
            "cpu_median": statistics.median(times[name]["cpu"]),
        }
    f, e = row["jobs"]["float-centred"], row["jobs"]["exactly centred"]
    row["ratio_wall"] = round(f["wall_median"] / e["wall_median"], 2)
    row["ratio_cpu"] = round(f["cpu_median"] / e["cpu_median"], 2)
    return row


def markdown(rows, meta) -> str:
    lines = [
        f"Run of {meta['date']}; {meta['cpus']} CPUs, {meta['platform']}; load average before "
        f"{meta['load_before']}, after {meta['load_after']}; {meta['repeat']} runs each, interleaved, "
        f"medians. {meta['note']}",
        "",
        "| N | d | keys | selectable | below 1e-9 | unselectable | warning | wall (s) | CPU (s) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        for name, job in row["jobs"].items():
            s = job["summary"]
            lines.append(
                f"| {row['n']} | {row['d']} | {name} | {s['selectable']} | {job['below_min_margin']} | "
                f"{s['unselectable']} | {'yes' if job['rank_warning'] else 'no'} | "
                f"{job['wall_median']:.2f} | {job['cpu_median']:.2f} |"
            )
        lines.append(
            f"| {row['n']} | {row['d']} | float / exact | qhull: {row['plane_vertices'] if row['plane_vertices'] is not None else '-'} vertices | | | | "
            f"**{row['ratio_wall']}x** | **{row['ratio_cpu']}x** |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="1024:8,2048:8,1024:16", help="N:d pairs, comma-separated")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--note", default="", help="free text stored with the results (e.g. what else ran)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args(argv)
    from lnproofs import certify

    certify(np.random.default_rng(1).standard_normal((50, 4)))  # imports and solver start-up
    load_before = [round(v, 2) for v in os.getloadavg()]
    rows = []
    for case in args.cases.split(","):
        n, d = (int(v) for v in case.split(":"))
        rows.append(run_case(n, d, args.repeat, args.seed))
        print(json.dumps({k: v for k, v in rows[-1].items() if k != "jobs"}), flush=True)
    meta = {
        "date": time.strftime("%Y-%m-%d"),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "load_before": load_before,
        "load_after": [round(v, 2) for v in os.getloadavg()],
        "repeat": args.repeat,
        "note": args.note,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_degenerate.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    text = markdown(rows, meta)
    (out / "bench_degenerate.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
