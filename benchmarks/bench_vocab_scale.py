"""Vocabulary scale: chunks of a model-sized vocabulary, timed on a local Dask cluster.

    python benchmarks/bench_vocab_scale.py [--shapes qwen2,llama3,gemma] [--chunks 1] [--chunk-size 10000]
        [--keys N] [--workers W | --scheduler ADDR] [--sets free,box,realisable] [--note TEXT] [--out FILE]

Shapes: ``qwen2`` (151,936 x 896, Qwen2-0.5B's unembedding), ``llama3`` (128,256 x 4,096,
Llama-3-8B's), ``gemma`` (256,000 x 2,048, Gemma-2B's), or ``NxD``.  The keys are random,
Gaussian with standard deviation ``--std`` (0.02, a model's initialisation), rounded to float32 as
a model's weights are; every worker makes them itself from the seed (nothing of their size passes
through this process).

Query sets: ``free``, ``box`` (``--box``) and ``realisable``: the final RMSNorm without a bias of
Llama-3 and Qwen2 (gain ``1 + 0.1 N(0, 1)``, random), whose certificate is the free one plus the
coverage claim (theorems ``coverage.every_direction`` and ``coverage.argmax_direction``): its chunk
is the free chunk, and ``coverage_s`` the seconds of proposing the claim and of the kernel's check.

A task is one chunk of ``--chunk-size`` tokens (the size :func:`lnproofs.propose.certification.
key_chunks` cuts): ``certify_vocab_keys(keys, query_set, indices=chunk)``, the road of
``lnproofs certify-vocab`` restricted to those tokens, each against every key (every own key
decided by the kernel's self filter, the engine on the residue), then the
kernel's check of that certificate (``VocabCertificate.check``, what ``lnproofs check`` runs).
The first ``--chunks`` chunks run through :func:`lnproofs.execution.run_tasks`; each task
reports its wall and CPU seconds for making and for checking, the seconds of one ``ExactKeys``
of the keys (built once when making and once when checking), its peak memory and its threads.
``--keys N`` takes the first N keys of the shape instead of all of them (a chunk's cost is
linear in the number of keys; the estimate scales it back and says so).

The estimate (``estimate`` in each row): the vocabulary's chunks times the measured seconds per
chunk over the workers here; and for a machine of ``--target-cores`` cores, the CPU seconds per
chunk (what the chunk cost in core-seconds, which a loaded machine inflates less than wall time)
times the chunks, over the cores times ``--efficiency`` (an assumption, not a measurement),
with at most as many workers as ``--target-memory-gb`` holds at the measured peak per worker.
The load average and the memory available are recorded before and after.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from lnproofs.execution import Load, machine_workers, open_client, run_tasks  # noqa: E402
from lnproofs.propose.certification import CHUNK_KEYS, key_chunks  # noqa: E402

SHAPES = {
    "qwen2": (151936, 896, "Qwen2-0.5B"),
    "llama3": (128256, 4096, "Llama-3-8B"),
    "gemma": (256000, 2048, "Gemma-2B"),
}


def shape_of(name: str) -> tuple[int, int, str]:
    """``(vocabulary, width, label)`` of a named shape or of ``NxD``."""
    if name in SHAPES:
        return SHAPES[name]
    try:
        n, d = (int(x) for x in name.lower().split("x"))
    except ValueError:
        raise SystemExit(f"shape {name!r} is not known; give {', '.join(SHAPES)} or NxD (such as 20000x64)") from None
    if n < 2 or d < 1:
        raise SystemExit(f"shape {name!r} needs at least 2 keys and width 1")
    return n, d, name


def make_keys(n: int, d: int, std: float, seed: int) -> np.ndarray:
    """``n x d`` Gaussian keys of standard deviation ``std``, rounded to float32, as float64."""
    rng = np.random.default_rng(seed)
    K = rng.standard_normal((n, d), dtype=np.float32)
    K *= np.float32(std)
    return K.astype(np.float64)


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _available_gb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _blas() -> list:
    from threadpoolctl import threadpool_info

    return [
        {k: p.get(k) for k in ("internal_api", "version", "architecture", "num_threads")}
        for p in threadpool_info()
        if p["user_api"] == "blas"
    ]


def coverage_seconds(d: int, seed: int) -> float:
    """Seconds to propose the coverage claim of a random final RMSNorm of width ``d`` and to check it
    with the kernel (what the realisable set adds to the free one for Llama-3 and Qwen2)."""
    from lnproofs.kernel import RMSNormQuerySet, check_coverage
    from lnproofs.propose.querysets.coverage import propose_coverage

    gain = 1 + 0.1 * np.random.default_rng(seed).standard_normal(d)
    wall = time.perf_counter()
    qs = RMSNormQuerySet(tuple(gain), np.eye(d), tuple(np.zeros(d)), 1e-6)
    claim = propose_coverage(qs)
    if claim is None or not check_coverage(qs, claim.to_json(), d)[0]:
        raise SystemExit(f"the coverage claim of a random RMSNorm of width {d} was not proved")
    return time.perf_counter() - wall


def chunk_task(item, keys) -> dict:
    """One chunk: make its certificate through the vocabulary road, then check it with the kernel."""
    from lnproofs.execution import thread_settings
    from lnproofs.kernel import BoxQuerySet, ExactKeys
    from lnproofs.propose.vocab import certify_vocab_keys

    set_name, bound, indices = item
    qs = BoxQuerySet(bound) if set_name == "box" else None
    load = _load()
    coverage_s = coverage_seconds(keys.shape[1], 0) if set_name == "realisable" else None
    wall = time.perf_counter()
    ExactKeys(keys)
    exact_keys_s = time.perf_counter() - wall
    wall, cpu = time.perf_counter(), _cpu_s()
    cert = certify_vocab_keys(keys, qs, indices=indices)
    make_s, make_cpu = time.perf_counter() - wall, _cpu_s() - cpu
    wall, cpu = time.perf_counter(), _cpu_s()
    report = cert.check(keys)
    check_s, check_cpu = time.perf_counter() - wall, _cpu_s() - cpu
    statuses = cert.statuses()
    mine = Counter(statuses[i] for i in indices)
    return {
        "tokens": len(indices),
        "first": int(indices[0]),
        "make_s": round(make_s, 2),
        "make_cpu_s": round(make_cpu, 2),
        "check_s": round(check_s, 2),
        "check_cpu_s": round(check_cpu, 2),
        "exact_keys_s": round(exact_keys_s, 2),
        "coverage_s": None if coverage_s is None else round(coverage_s, 2),
        "load_before": load,
        "load_after": _load(),
        "ok": bool(report.ok),
        "counts": dict(sorted(mine.items())),
        "undecided_outside": sum(1 for s in statuses if s == "undecided") - mine.get("undecided", 0),
        "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
        "pid": os.getpid(),
        "threads": thread_settings(),
        "blas": _blas(),
    }


def estimate(chunks: list, full_n: int, measured_n: int, size: int, workers: int, args) -> dict:
    """Whole-vocabulary wall time here and on ``args.target_cores`` cores (see the module docstring)."""
    total = math.ceil(full_n / size)
    scale = full_n / measured_n  # each chunk meets every key: linear in N
    per = scale * float(np.mean([c["make_s"] + c["check_s"] for c in chunks]))
    per_cpu = scale * float(np.mean([c["make_cpu_s"] + c["check_cpu_s"] for c in chunks]))
    make_cpu = scale * float(np.mean([c["make_cpu_s"] for c in chunks]))
    peak = scale * max(c["peak_rss_gb"] for c in chunks)
    fit = max(1, int(args.target_memory_gb * 0.8 // peak)) if peak > 0 else args.target_cores
    target_workers = min(args.target_cores, fit)
    return {
        "chunks_in_vocabulary": total,
        "keys_scale": round(scale, 3),
        "per_chunk_s": round(per, 1),
        "per_chunk_cpu_s": round(per_cpu, 1),
        "peak_gb_per_worker": round(peak, 1),
        "here_workers": workers,
        "here_hours": round(total * per / workers / 3600, 2),
        "target_cores": args.target_cores,
        "target_memory_gb": args.target_memory_gb,
        "target_workers": target_workers,
        "target_threads_per_worker": max(1, args.target_cores // target_workers),
        "efficiency_assumed": args.efficiency,
        "target_hours": round(total * per_cpu / (args.target_cores * args.efficiency) / 3600, 2),
        "per_chunk_make_cpu_s": round(make_cpu, 1),
        "target_minutes_make": round(total * make_cpu / (args.target_cores * args.efficiency) / 60, 1),
        "how": "chunks x CPU seconds per chunk / (cores x efficiency) (target_minutes_make: making the "
        "certificates alone, as certify-vocab does, without the check); workers limited to 80% of the "
        "memory at the measured peak per worker, the rest of the cores as BLAS threads in them",
    }


def run_shape(name: str, args, context, rows: list) -> None:
    full_n, d, label = shape_of(name)
    n = min(full_n, args.keys) if args.keys else full_n
    chunks = key_chunks(n, size=args.chunk_size)[: args.chunks]
    keys = Load(make_keys, n, d, args.std, args.seed)
    for set_name in args.sets.split(","):
        before, free_before = _load(), _available_gb()
        start = time.perf_counter()
        done = run_tasks(
            chunk_task,
            [(set_name, args.box, c) for c in chunks],
            context=context,
            shared=keys,
            label=f"{name} {set_name}",
            unit="chunk",
        )
        row = {
            "shape": name,
            "model": label,
            "vocabulary": full_n,
            "keys_measured": n,
            "d": d,
            "set": set_name,
            "box_bound": args.box if set_name == "box" else None,
            "chunk_size": args.chunk_size,
            "chunks_run": len(done),
            "wall_s": round(time.perf_counter() - start, 1),
            "all_ok": all(c["ok"] for c in done),
            "per_chunk": done,
            "load_before": before,
            "load_after": _load(),
            "available_gb_before": free_before,
            "available_gb_after": _available_gb(),
            "estimate": estimate(done, full_n, n, args.chunk_size, context.workers, args),
        }
        print(json.dumps({k: v for k, v in row.items() if k != "per_chunk"}), flush=True)
        rows.append(row)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="qwen2,gemma")
    parser.add_argument("--chunks", type=int, default=1, help="the first N chunks of the vocabulary (default 1)")
    parser.add_argument("--chunk-size", type=int, default=CHUNK_KEYS, help=f"tokens per chunk (default {CHUNK_KEYS})")
    parser.add_argument("--keys", type=int, default=None, help="only the first N keys of each shape")
    parser.add_argument("--sets", default="free", help="free, box, realisable (comma-separated)")
    parser.add_argument("--box", type=float, default=100.0, help="the box bound B (default 100)")
    parser.add_argument("--std", type=float, default=0.02)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=1, help="local Dask workers (1: this process)")
    parser.add_argument("--scheduler", default=None, help="an existing Dask scheduler instead")
    parser.add_argument("--target-cores", type=int, default=16)
    parser.add_argument("--target-memory-gb", type=float, default=128.0)
    parser.add_argument("--efficiency", type=float, default=0.7, help="assumed parallel efficiency on the target")
    parser.add_argument("--note", default="")
    parser.add_argument("--out", default=str(ROOT / "results" / "bench_vocab_scale.json"))
    args = parser.parse_args(argv)
    if args.chunks < 1 or args.chunk_size < 1 or set(args.sets.split(",")) - {"free", "box", "realisable"}:
        raise SystemExit("--chunks and --chunk-size must be at least 1; --sets takes free, box and realisable")
    import numpy

    machine = {
        "cores": machine_workers(),
        "cpu": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "blas": _blas(),
        "memory_available_gb": _available_gb(),
        "load": _load(),
    }
    rows: list = []
    workers = None if args.scheduler else args.workers
    with open_client(workers, args.scheduler) as context:
        for name in args.shapes.split(","):
            run_shape(name, args, context, rows)
    result = {
        "note": args.note,
        "machine": machine,
        "workers": context.workers,
        "scheduler": args.scheduler,
        "std": args.std,
        "seed": args.seed,
        "rows": rows,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
