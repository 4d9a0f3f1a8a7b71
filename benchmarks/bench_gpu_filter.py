"""The self-witness check of an output layer, its float filter's products on numpy, torch on the CPU, and CUDA.

    python benchmarks/bench_gpu_filter.py [--keys 8192] [--dim 4096] [--queries Q]
        [--engines numpy,torch-cpu,cuda] [--chunk C] [--note TEXT] [--out FILE]

The keys are random, Gaussian with standard deviation 0.02 (a model's initialisation), rounded
to float32 as a model's weights are: by default the first 8,192 rows of Llama-3-8B's output layer
shape (128,256 x 4,096); ``--keys 128256`` is the whole shape.  Each token's own witness is
``q = k_i`` (the ``SELF`` evidence of a vocabulary certificate under free queries), checked
against every key by :func:`lnproofs.kernel.check_witnesses` (``N^2 d`` multiply-adds in the float
filter; the pairs it does not accept, none for random keys, in integers).  ``--queries Q`` checks
the first Q witnesses only (each still against every key) and scales the time to all N by Q/N.

Engines: ``numpy`` (the kernel's default product), ``torch-cpu`` and ``cuda``
(:class:`torch_backend.matmul.DeviceMatmul`; ``cuda`` is left out, and says so, where torch sees
no GPU).  Each row: the seconds to build the exact keys, the check's wall and CPU seconds, the
seconds spent inside the product (the engine's share; the rest is the filter's comparisons in
numpy), how many witnesses the kernel held, whether the verdicts equal numpy's, and the load
average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from lnproofs.kernel import ExactKeys, check_witnesses  # noqa: E402

LLAMA3_8B = (128256, 4096)


class Timed:
    """A product that adds up the seconds spent inside it."""

    def __init__(self, product):
        self.product, self.seconds, self.calls = product, 0.0, 0

    def __call__(self, A, B):
        start = time.perf_counter()
        out = self.product(A, B)
        self.seconds += time.perf_counter() - start
        self.calls += 1
        return out


def product_of(engine: str):
    if engine == "numpy":
        return np.matmul
    from torch_backend.matmul import DeviceMatmul

    return DeviceMatmul("cpu" if engine == "torch-cpu" else engine)


def run_engine(engine: str, K: np.ndarray, queries: int, chunk: int | None) -> tuple[dict, list]:
    product = Timed(product_of(engine))
    load_before = os.getloadavg()
    start, cpu = time.perf_counter(), time.process_time()
    ek = ExactKeys(K, product)
    built = time.perf_counter() - start
    items = [(i, ek.array[i]) for i in range(queries)]
    options = {} if chunk is None else {"chunk": chunk}
    got = check_witnesses(ek, items, **options)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    row = {
        "engine": engine,
        "keys": len(K),
        "dim": K.shape[1],
        "queries": queries,
        "build_s": round(built, 3),
        "check_wall_s": round(wall - built, 3),
        "cpu_s": round(cpu, 3),
        "product_s": round(product.seconds, 3),
        "product_calls": product.calls,
        "held": sum(m is None for m in got),
        "all_keys_estimate_s": round((wall - built) * len(K) / queries, 1),
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }
    return row, got


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=8192, help="the first N keys of the shape (default 8192)")
    parser.add_argument("--dim", type=int, default=LLAMA3_8B[1], help="their width (default 4096)")
    parser.add_argument("--queries", type=int, default=None, help="check the first Q self witnesses (default all)")
    parser.add_argument("--engines", default="numpy,torch-cpu,cuda", help="among numpy, torch-cpu, cuda, cuda:N")
    parser.add_argument("--chunk", type=int, default=None, help="scores per block of the check (default: its own)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--note", default="", help="a note kept with the rows (the machine's load, ...)")
    parser.add_argument("--out", default=None, help="append the rows as JSON lines to this file")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    K = (rng.standard_normal((args.keys, args.dim), dtype=np.float32) * np.float32(0.02)).astype(np.float32)
    queries = min(args.queries or args.keys, args.keys)
    machine = {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()}
    try:
        import torch

        machine["torch"] = torch.__version__
        machine["cuda"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
        machine["torch_threads"] = torch.get_num_threads()
    except ImportError:
        torch = None
    reference, rows = None, []
    for engine in [e.strip() for e in args.engines.split(",") if e.strip()]:
        if engine != "numpy" and torch is None:
            print(f"{engine}: skipped, torch is not installed")
            continue
        if engine.startswith("cuda") and not torch.cuda.is_available():
            print(f"{engine}: skipped, torch sees no CUDA GPU on this machine")
            continue
        row, got = run_engine(engine, K, queries, args.chunk)
        reference = got if reference is None else reference
        row.update(same_verdicts_as_first=got == reference, machine=machine, note=args.note)
        rows.append(row)
        print(json.dumps(row))
    if args.out:
        with open(args.out, "a", encoding="utf-8") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in rows)
    return 0 if all(r["same_verdicts_as_first"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
