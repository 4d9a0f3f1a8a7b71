"""Benchmark: the operating system's share of the parallel commands, each in a fresh process timed
from the outside over its whole process tree (target: system time under 10 % of user time).

The commands, in turn, ``--repeats`` times (default 3), each run's rusage read with ``os.wait4``
(what ``/usr/bin/time`` reads: the process and every worker it waited for):

- ``load``: a fresh process that does what ``certify-model`` does before its first text
  (importing torch, transformers and the program, loading all-MiniLM-L6-v2 and its tokenizer)
  and nothing else: what every run of the model commands pays before any work of its own;
- ``certify-model`` of all-MiniLM-L6-v2 over the 100 sentences of ``data/sentences.txt``,
  ``--workers 1`` (this process and its forked forward worker) and ``--workers 2`` (a local
  cluster of two worker processes, each loading the model again);
- ``certify KEYS --workers 2``: 40,000 Gaussian keys in 8 dimensions (seed 0);
- ``reproduce majority --seeds 11 --steps 400 --no-3d --workers 2`` (two training runs);
  with ``--majority-default`` also the default ``reproduce majority``, in the first turn only
  (about 7 to 10 minutes a run).

Each of the last four has a small twin, run beside it in every turn: the same command, taking the
same road (same workers, same loading, same cluster) over a tenth of the sentences, half the keys
(20,000: the least that ``certify`` spreads over workers) or a tenth of the training steps.  The
twin measures what the command costs before and around its work (imports, loading, the cluster's
start and close, the report); the difference between the two runs of a turn is the system's share
of the work itself, the part that grows with the input.

For each run: wall, user and system seconds, the share, minor page faults and involuntary
context switches (a process preempted while it still had work: what oversubscribed threads
cause).

    python benchmarks/bench_system.py [--repeats 3] [--cases load,model1,model2,certify,majority]
        [--majority-default] [--note "..."]

Results: benchmarks/results/bench_system.{json,md}, with the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_cli import compile_package, minilm_folder, run_header, texts_file  # noqa: E402

# runs in a fresh interpreter: what certify-model does before its first text, and nothing else
LOAD = """
import sys
import torch
import lnproofs.cli
from lnproofs.models.loading import load_model, load_tokenizer
load_model(sys.argv[1])
load_tokenizer(sys.argv[1])
"""


def commands(work: Path, cases: list[str], majority_default: bool) -> dict[str, list[str]]:
    """Case name -> argv (of this interpreter: ``python -m lnproofs`` is the installed program)."""
    import numpy as np

    program = [sys.executable, "-m", "lnproofs"]
    model = str(minilm_folder())
    corpus, few = str(texts_file(100, work)), str(texts_file(10, work))
    gauss = np.random.default_rng(0).standard_normal((40_000, 8))
    np.save(work / "keys.npy", gauss)
    np.save(work / "keys-small.npy", gauss[:20_000])

    def model_run(texts: str, workers: str, out: str) -> list[str]:
        return program + [
            "certify-model",
            model,
            "--corpus",
            texts,
            "--workers",
            workers,
            "--quiet",
            "--out",
            str(work / out),
        ]

    def certify(keys: str) -> list[str]:
        return program + [
            "certify",
            str(work / keys),
            "--workers",
            "2",
            "--no-progress",
            "--out",
            str(work / "cert.json"),
        ]

    def majority(steps: str) -> list[str]:
        return program + [
            "reproduce",
            "majority",
            "--seeds",
            "11",
            "--steps",
            steps,
            "--no-3d",
            "--workers",
            "2",
            "--quiet",
            "--no-progress",
            "--out",
            str(work / "majority"),
        ]

    table = {
        "load": [[sys.executable, "-c", LOAD, model]],
        "model1": [model_run(corpus, "1", "model1"), model_run(few, "1", "model1")],
        "model2": [model_run(corpus, "2", "model2"), model_run(few, "2", "model2")],
        "certify": [certify("keys.npy"), certify("keys-small.npy")],
        "majority": [majority("400"), majority("40")],
    }
    chosen = {}
    for name in cases:
        chosen[name] = table[name][0]
        if len(table[name]) > 1:
            chosen[f"{name}-small"] = table[name][1]
    if majority_default:
        chosen["majority-default"] = program + [
            "reproduce",
            "majority",
            "--quiet",
            "--no-progress",
            "--out",
            str(work / "majority-default"),
        ]
    return chosen


def timed(argv: list[str], work: Path) -> dict:
    """One run in a fresh process: wall time from here, the tree's rusage from ``os.wait4``."""
    for folder in ("model1", "model2", "majority", "majority-default"):  # every run starts afresh
        shutil.rmtree(work / folder, ignore_errors=True)
    for file in ("cert.json", "cert.json.partial.jsonl"):
        (work / file).unlink(missing_ok=True)
    start = time.perf_counter()
    with subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=work) as process:
        stderr = process.stderr.read()
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        process.returncode = code = os.waitstatus_to_exitcode(status)  # reaped here, not again by Popen
    if code != 0:
        raise SystemExit(f"{' '.join(argv[:4])} ... exited {code}: {stderr.decode()[-400:]}")
    return {
        "wall_s": round(wall, 2),
        "user_s": round(usage.ru_utime, 2),
        "system_s": round(usage.ru_stime, 2),
        "share": round(usage.ru_stime / usage.ru_utime, 3),
        "minor_faults": usage.ru_minflt,
        "involuntary_switches": usage.ru_nivcsw,
    }


def same_run_files(out: Path) -> dict:
    """The default Majority run's run files (losses, certificates, weights) against those committed
    in ``reports/experiments/majority``: the findings are unchanged when every one is the same bytes."""
    committed = HERE.parent / "reports" / "experiments" / "majority"
    names = sorted(str(p.relative_to(committed)) for p in committed.glob("runs*/*") if p.is_file())
    differ = [
        name
        for name in names
        if not (out / "majority" / name).is_file()
        or (out / "majority" / name).read_bytes() != (committed / name).read_bytes()
    ]
    return {"files": len(names), "differ": differ}


def summary(runs: list[dict], small: list[dict] | None) -> dict:
    """Medians of ``runs``; with ``small`` (the small twin's runs, turn by turn), also the share
    of the difference, run by run and of the medians."""
    med = {key: round(statistics.median(run[key] for run in runs), 2) for key in ("wall_s", "user_s", "system_s")}
    med.update(
        {key: round(statistics.median(run[key] for run in runs)) for key in ("minor_faults", "involuntary_switches")}
    )
    out = dict(med, share=round(med["system_s"] / med["user_s"], 3), shares=[run["share"] for run in runs])
    if small:
        user = [run["user_s"] - twin["user_s"] for run, twin in zip(runs, small)]
        system = [run["system_s"] - twin["system_s"] for run, twin in zip(runs, small)]
        out["beyond_small"] = {
            "user_s": round(statistics.median(user), 2),
            "system_s": round(statistics.median(system), 2),
            "share": round(statistics.median(system) / statistics.median(user), 3),
            "shares": [round(s / u, 3) for s, u in zip(system, user)],
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cases", default="load,model1,model2,certify,majority")
    parser.add_argument(
        "--majority-default",
        action="store_true",
        help="also the default 'reproduce majority', in the first turn (about 7 to 10 minutes)",
    )
    parser.add_argument("--note", default="")
    args = parser.parse_args()
    compile_package()
    cases = args.cases.split(",")
    figures = dict(run_header(args.note), repeats=args.repeats)
    work = Path(tempfile.mkdtemp(prefix="bench-system-"))
    runs: dict[str, list[dict]] = {}
    try:
        argvs = commands(work, cases, args.majority_default)
        for turn in range(args.repeats):  # in turn: the machine's state moves between runs
            for name, argv in argvs.items():
                if name == "majority-default" and turn:
                    continue  # minutes a run: the first turn only
                runs.setdefault(name, []).append(timed(argv, work))
                if name == "majority-default":
                    runs[name][-1]["run_files"] = same_run_files(work / name)
                print(name, turn, json.dumps(runs[name][-1]), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    figures["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    figures["cases"] = {
        name: {"runs": case_runs, "median": summary(case_runs, runs.get(f"{name}-small"))}
        for name, case_runs in runs.items()
    }
    results = HERE / "results"
    results.mkdir(exist_ok=True)
    (results / "bench_system.json").write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    labels = {
        "load": "import and load MiniLM only",
        "model1": "`certify-model` MiniLM, 100 sentences, `--workers 1`",
        "model1-small": "the same, 10 sentences",
        "model2": "`certify-model` MiniLM, 100 sentences, `--workers 2`",
        "model2-small": "the same, 10 sentences",
        "certify": "`certify KEYS --workers 2` (40,000 Gaussian keys, d = 8)",
        "certify-small": "the same, 20,000 keys",
        "majority": "`reproduce majority --seeds 11 --steps 400 --no-3d --workers 2`",
        "majority-small": "the same, `--steps 40`",
        "majority-default": "`reproduce majority` (the default)",
    }
    lines = [
        f"Load average {figures['load_average_before']} before, {figures['load_average_after']} after "
        f"({figures['cpus']} CPUs); medians of {args.repeats} runs, each run's share in brackets.",
        "",
        "| command | wall (s) | user (s) | system (s) | system / user | beyond the small run | minor faults "
        "| involuntary switches |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, case in figures["cases"].items():
        m = case["median"]
        beyond = m.get("beyond_small")
        extra = (
            f"{beyond['system_s']} / {beyond['user_s']} s: {beyond['share']:.1%} "
            f"({', '.join(f'{s:.1%}' for s in beyond['shares'])})"
            if beyond
            else ""
        )
        lines.append(
            f"| {labels[name]} | {m['wall_s']} | {m['user_s']} | {m['system_s']} | {m['share']:.1%} "
            f"({', '.join(f'{s:.1%}' for s in m['shares'])}) | {extra} | {m['minor_faults']:,} "
            f"| {m['involuntary_switches']:,} |"
        )
    for run in runs.get("majority-default", []):
        files, differ = run["run_files"]["files"], run["run_files"]["differ"]
        lines.append(
            f"\nThe default Majority run's {files} run files against those in `reports/experiments/majority/`: "
            + (f"{len(differ)} differ (first: {', '.join(differ[:5])})." if differ else "all the same bytes.")
        )
    (results / "bench_system.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
