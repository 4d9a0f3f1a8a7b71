"""Benchmark: causal prefixes in one pass against one certification of the whole sequence.

For each key sequence (rows in position order) it times, alternating in the same run,
one certification of all T keys (``certify_results``; under a LayerNorm query set
``certify_results_fast``) and ``causal_evidence`` (every key's
first stopping position with its evidence, the exact check of the record included), and
reports the ratio of wall-clock times and of this process's CPU times (less distorted when
other jobs share the machine); the target is at most 3.  Under free queries it also times
``causal_evidence`` given that certificate (``results=``), as ``certify-model`` runs it: the key
head's free certificate is made anyway.  ``--reference-upto T`` also times the per-prefix
reference (``tests/reference_causal.py``: T certifications) on sequences of at most T keys.

    python benchmarks/bench_causal.py                           # the default grid
    python benchmarks/bench_causal.py --cases gaussian:64:32 --repeat 3

Results go to benchmarks/results/bench_causal.{json,md}.
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from bench_certify import gaussian, half_inside  # noqa: E402

GENERATORS = {"gaussian": gaussian, "half-inside": half_inside, "layernorm": gaussian}
DEFAULT = (
    "gaussian:64:32,gaussian:512:32,gaussian:64:64,gaussian:512:64,"
    "half-inside:128:8,half-inside:512:32,half-inside:512:64,layernorm:64:32,layernorm:256:32"
)


def layernorm_set(d, seed):
    """A random LayerNorm query set of width n = 4d whose query bias lies outside the set's
    ellipsoid, so that many keys are not realisable (the ``layernorm`` cases)."""
    from lnproofs.propose.querysets.layernorm import LayerNormQuerySet

    rng = np.random.default_rng(seed)
    n = 4 * d
    return LayerNormQuerySet(
        rng.uniform(0.5, 1.5, n),
        rng.normal(size=n) * 0.3,
        rng.normal(size=(d, n)) / np.sqrt(n),
        rng.normal(size=d) * 24.0,
    )


def _one_certification(keys, query_set):
    if query_set is None:
        from lnproofs.propose.certification import certify_results

        return certify_results(keys)
    from lnproofs.propose.querysets.layernorm_fast import certify_results_fast

    return certify_results_fast(keys, query_set, compact=True)


def _time(fn) -> tuple[float, float]:
    """Wall-clock and CPU seconds of this process (CPU time is less distorted by other jobs)."""
    start, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - start, time.process_time() - cpu


def run_case(name, T, d, args) -> dict:
    from lnproofs.certificates.writers import result_to_json
    from lnproofs.propose.causal import causal_evidence, stops

    keys = GENERATORS[name](T, d, args.seed + T + d)
    qs = layernorm_set(d, args.seed) if name == "layernorm" else None
    full, causal, given = [], [], []
    record, made = {}, {}
    for _ in range(args.repeat):  # alternate: the machine's load hits both alike
        full.append(_time(lambda: made.update(results=_one_certification(keys, qs))))
        causal.append(_time(lambda: record.update(causal_evidence(keys, qs))))
        if qs is None:  # as certify-model runs it: the key head's free certificate is made anyway
            results = [result_to_json(r) for r in made["results"]]
            given.append(_time(lambda: causal_evidence(keys, results=results)))
    found = stops(record)
    wall = min(t for t, _ in full), min(t for t, _ in causal)
    cpu = min(c for _, c in full), min(c for _, c in causal)
    row = {
        "case": name,
        "T": T,
        "d": d,
        "certify_s": wall[0],
        "causal_s": wall[1],
        "ratio": wall[1] / wall[0],
        "certify_cpu_s": cpu[0],
        "causal_cpu_s": cpu[1],
        "cpu_ratio": cpu[1] / cpu[0],
        "causal_given_s": min(t for t, _ in given) if given else None,
        "ratio_given": min(t for t, _ in given) / wall[0] if given else None,
        "stopping": sum(isinstance(s, int) for s in found),
        "never": found.count(None),
        "undecided": found.count("undecided"),
        "record_bytes": len(json.dumps(record)),
    }
    if T <= args.reference_upto:
        from reference_causal import reference_stops

        t0 = time.perf_counter()
        ref = reference_stops(keys, qs)
        row["reference_s"] = time.perf_counter() - t0
        row["reference_agrees"] = ref["first_unselectable"] == found
    return row


def markdown(rows, meta) -> str:
    lines = [
        f"# Causal prefixes in one pass ({meta['when']})",
        "",
        f"{meta['cpus']} CPUs, {meta['platform']}, Python {meta['python']}; load before/after "
        f"{meta['load_before']} / {meta['load_after']}; best of {meta['repeat']}, alternating. {meta['note']}",
        "",
        "| keys | T | d | one certification (s) | causal (s) | ratio | CPU ratio | causal given the certificate "
        "(s) | ratio | stop / never / undecided | record (kB) | per-prefix reference (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ref = (
            f"{r['reference_s']:.2f} ({'agrees' if r['reference_agrees'] else 'DIFFERS'})"
            if "reference_s" in r
            else "-"
        )
        given = (
            f"{r['causal_given_s']:.3f} | {r['ratio_given']:.2f}" if r.get("causal_given_s") is not None else "- | -"
        )
        lines.append(
            f"| {r['case']} | {r['T']} | {r['d']} | {r['certify_s']:.3f} | {r['causal_s']:.3f} | "
            f"{r['ratio']:.2f} | {r['cpu_ratio']:.2f} | {given} | {r['stopping']} / {r['never']} / "
            f"{r['undecided']} | {r['record_bytes'] / 1000:.0f} | {ref} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cases",
        default=DEFAULT,
        help="generator:T:d list (gaussian, half-inside; layernorm: Gaussian keys under a random LayerNorm query set)",
    )
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--reference-upto", type=int, default=0, help="time the per-prefix reference up to this T")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--note", default="")
    parser.add_argument("--out", default=str(HERE / "results"))
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    rows = []
    for case in args.cases.split(","):
        name, T, d = case.split(":")
        row = run_case(name, int(T), int(d), args)
        rows.append(row)
        print(
            f"{name:12s} T={row['T']:5d} d={row['d']:3d}  certify {row['certify_s']:7.3f}s  causal "
            f"{row['causal_s']:7.3f}s  ratio {row['ratio']:5.2f} (CPU {row['cpu_ratio']:5.2f})"
            + (f"  given the certificate {row['ratio_given']:5.2f}" if row["ratio_given"] is not None else "")
            + "  stop/never/undecided "
            f"{row['stopping']}/{row['never']}/{row['undecided']}"
            + (
                f"  reference {row['reference_s']:.2f}s ({'agrees' if row['reference_agrees'] else 'DIFFERS'})"
                if "reference_s" in row
                else ""
            ),
            flush=True,
        )
    meta = {
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "repeat": args.repeat,
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "note": args.note,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_causal.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    (out / "bench_causal.md").write_text(markdown(rows, meta))
    print(f"wrote {out / 'bench_causal.json'} and {out / 'bench_causal.md'}")


if __name__ == "__main__":
    main()
