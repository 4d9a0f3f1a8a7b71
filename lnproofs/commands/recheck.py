"""``lnproofs recheck``: re-check every theorem numerically with PyTorch, or a real LayerNorm layer.

torch and torch_backend are imported inside :func:`run`, so ``import lnproofs`` and the
other commands never load torch.
"""

from __future__ import annotations

import json
import os
import sys

from ..kernel import FileFormatError, OptionError
from .execution_options import add_execution_options, execution_from_args

__all__ = ["configure", "run", "PARALLEL_MIN_SAMPLES"]

#: with no --workers, a local cluster starts only from this many samples per family
#: (50 times the default); below it the checks take seconds and run in this process
PARALLEL_MIN_SAMPLES = 100_000


def configure(parser) -> None:
    parser.add_argument("--device", default="auto", help="auto (a CUDA GPU when present), cpu, cuda or cuda:N")
    parser.add_argument("--dtype", default="float64", choices=("float64", "float32"), help="floating-point type")
    parser.add_argument(
        "--width",
        type=int,
        default=None,
        help="vector length n of the main batches (default 32; widths 2 and 3 are always checked too)",
    )
    parser.add_argument("--samples", type=int, default=None, help="samples per family (default 2048)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--chunk-rows", type=int, default=None, help="rows per chunk (default: 128 MiB of inputs)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these checks (theorem names)")
    parser.add_argument("--list", action="store_true", help="list the registered checks and exit")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--out", metavar="RESULTS.jsonl", help="append each result to this file as soon as it is known")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="with --out: keep the results already in the file "
        "(same dtype, width, samples and seed) and run only the missing checks",
    )
    add_execution_options(
        parser,
        automatic="one check per task on a local cluster sized to the machine from "
        f"--samples {PARALLEL_MIN_SAMPLES} on, else this process; "
        "--layer always runs in this process",
    )
    layer = parser.add_argument_group("real LayerNorm layer (instead of the theorem checks)")
    layer.add_argument(
        "--layer", metavar="PARAMS.npz", help="arrays 'gain' (or 'gamma'/'weight'), 'bias' (or 'beta'), optional 'eps'"
    )
    layer.add_argument(
        "--inputs", metavar="X", help="N x n inputs (.npy, .npz array 'inputs', .csv, .pt, .safetensors)"
    )
    layer.add_argument("--outputs", metavar="Z", help="the layer's own outputs for X (default: computed with torch)")
    layer.add_argument("--eps", type=float, default=None, help="eps of the layer (overrides PARAMS; default 1e-5)")
    layer.add_argument("--convention", default="torch", choices=("torch", "std"), help="eps convention")
    layer.add_argument(
        "--spread-tolerance",
        type=float,
        default=1e-3,
        help="largest acceptable relative eps effect for the minimal-spread figure (default 1e-3)",
    )


def _param(path, names, required=True):
    from ..io.arrays import load_array
    from ..io.bounded import npz_names

    try:
        present = npz_names(path)  # from the zip directory: nothing inflated
    except FileFormatError as err:
        raise FileFormatError(f"{err}; give a .npz file with arrays gain, bias (and eps)") from None
    for name in names:
        if name in present:
            return load_array(path, name=name, ndim=None)
    if required:
        raise FileFormatError(
            f"{path} has no array named {names[0]!r} (also accepted: {', '.join(names[1:])}); "
            f"it holds: {', '.join(present) or 'none'}"
        )
    return None


def _layer(args) -> int:
    from ..io.arrays import load_array

    if not args.inputs:
        raise OptionError("--layer needs --inputs X (the batch of layer inputs)")
    if not str(args.layer).lower().endswith(".npz"):
        raise FileFormatError(f"{args.layer} is not a .npz file; --layer takes PARAMS.npz with arrays gain, bias, eps")
    gain = _param(args.layer, ("gain", "gamma", "weight"))
    bias = _param(args.layer, ("bias", "beta"))
    eps = args.eps
    if eps is None:
        stored = _param(args.layer, ("eps",), required=False)
        eps = float(stored.reshape(-1)[0]) if stored is not None and stored.size == 1 else 1e-5
    inputs = load_array(args.inputs, name="inputs", ndim=2)
    outputs = load_array(args.outputs, name="outputs", ndim=2) if args.outputs else None
    from torch_backend.layers import layer_report

    report = layer_report(
        gain.reshape(-1) if gain.ndim != 1 else gain,
        bias.reshape(-1) if bias.ndim != 1 else bias,
        eps,
        inputs,
        outputs=outputs,
        device=args.device,
        dtype=args.dtype,
        convention=args.convention,
        spread_tolerance=args.spread_tolerance,
        chunk_rows=args.chunk_rows,
    )
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        r = report
        print(
            f"LayerNorm layer: width {r['width']}, eps {r['eps']:g} ({r['convention']} convention), "
            f"{r['n_inputs']} inputs on {r['device']} in {r['dtype']}"
        )
        print(
            f"  distance from the ellipsoid surface: max {r['distance_from_surface']['max']:.3e}, "
            f"mean {r['distance_from_surface']['mean']:.3e}"
        )
        print(
            f"  relative pull inside (1 - ||g(Px)||/sqrt(n)): max {r['relative_deficit']['max']:.3e}, "
            f"mean {r['relative_deficit']['mean']:.3e}"
        )
        print(
            f"  strictly inside (resolvably): {r['strictly_inside']} of {r['n_inputs']}"
            + (f"; constant inputs skipped: {r['constant_inputs']}" if r["constant_inputs"] else "")
        )
        if r["hyperplane_residual"] is not None:
            print(
                f"  hyperplane residual {r['hyperplane_residual']:.3e}, ellipsoid residual "
                f"{r['ellipsoid_residual']:.3e} (tolerance {r['tolerance']:.3e})"
            )
        else:
            print(
                f"  {r['zero_gains']} zero gains: those outputs deviate from the bias by at most "
                f"{r['zero_gain_deviation']:.3e}"
            )
        m = r["min_spread"]
        print(
            f"  eps effect <= {m['tolerance']:g} needs input std >= {m['std']:.6g} (centred norm >= "
            f"{m['centred_norm']:.6g}); {m['inputs_below']} inputs are below; measured at the bound: "
            f"{m['measured_deficit']:.6g}"
        )
        print("  PASS" if r["passed"] else "  FAIL: the layer's outputs do not satisfy the geometry of its inputs")
    return 0 if report["passed"] else 1


def _previous(args, samples) -> dict:
    """Results already written to ``args.out`` by a run with the same settings (and version of
    lnproofs), read as a regular file within the file limit; they are kept as they are, since a
    numeric check can only be run again, not checked from its result."""
    from pathlib import Path

    from torch_backend.theorems import DEFAULT_WIDTH, CheckResult

    from .. import __version__

    path = Path(args.out)
    if not path.exists():
        return {}
    width = DEFAULT_WIDTH if args.width is None else args.width
    done = {}
    from ..io.bounded import DEFAULT_READ_LIMITS as limit
    from ..io.files import read_input

    text = read_input(path, f"--out {path}", limit.max_file_bytes, limit.file_note).decode("utf-8", "replace")
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            result = CheckResult.from_json(data)
        except (ValueError, KeyError, TypeError):
            raise FileFormatError(
                f"{path} line {number} is not a recheck result; remove it or use a new --out file"
            ) from None
        if (
            result.dtype == args.dtype
            and result.width == width
            and data.get("seed") == args.seed
            and data.get("samples_per_family") == samples
            and data.get("chunk_rows") == args.chunk_rows
            and data.get("version") == __version__
        ):  # made with these settings by this version; any other result is run again
            done[result.name] = result
    return done


def _check_task(name: str, settings: dict):
    """One task: the numeric check ``name`` (torch is imported here, on the worker)."""
    from torch_backend.theorems import run_checks

    [result] = run_checks(names=[name], **settings)
    return result


def run(args) -> int:

    from ..certificates.writes import output_file, run_lock

    if not getattr(args, "out", None):
        return _run(args)
    output_file(args.out)  # before the lock beside it: a regular file of ours, or nothing
    with run_lock(args.out, folder=False):  # one run at a time appends to the results file
        return _run(args)


def _run(args) -> int:
    workers, scheduler = execution_from_args(args)
    try:
        from torch_backend.device import resolve_device
    except ImportError:
        raise OptionError("recheck needs torch; install torch==2.13.0 (see the README)") from None

    resolve_device(args.device)  # a missing GPU is one clear line, before any work
    if args.layer or args.inputs or args.outputs:
        if not args.layer:
            raise OptionError("--inputs/--outputs need --layer PARAMS.npz")
        return _layer(args)
    from torch_backend.theorems import DEFAULT_SAMPLES, check_names

    if args.list:
        print("\n".join(check_names()))
        return 0
    for name, value in (("--width", args.width), ("--samples", args.samples), ("--chunk-rows", args.chunk_rows)):
        if value is not None and value < 1:
            raise OptionError(f"{name} {value} is not accepted; give a positive integer")
    if args.resume and not args.out:
        raise OptionError("--resume needs --out RESULTS.jsonl (the file to continue)")
    if args.out:
        from ..certificates.writes import output_file

        out = output_file(args.out)
        if not args.resume and out.is_file() and out.stat().st_size:
            raise OptionError(
                f"--out {args.out!r} already holds results: add --resume to keep them and run the "
                "rest, or give a new file"
            )
    samples = args.samples or DEFAULT_SAMPLES
    wanted = list(dict.fromkeys(args.only)) if args.only else check_names()
    done = _previous(args, samples) if args.resume else {}
    rows = []
    header = f"{'theorem':40s} {'samples':>9s} {'max error':>10s} {'tolerance':>10s} {'result':>6s}  {'device':8s} {'samples/s':>10s}"

    def show(result):
        if args.json:
            return
        if not rows:
            print(header)
        rows.append(result)
        print(
            f"{result.name:40s} {result.samples:9d} {result.max_error:10.3e} {result.tolerance:10.3e} "
            f"{'pass' if result.passed else 'FAIL':>6s}  {result.device:8s} {result.throughput:10.3g}",
            flush=True,
        )
        for message in result.messages[:5]:
            print(f"    {message}")

    from torch_backend.theorems import DEFAULT_WIDTH

    width = DEFAULT_WIDTH if args.width is None else args.width
    todo = [name for name in wanted if name not in done]
    unknown = [n for n in todo if n not in check_names()]
    if unknown:
        raise OptionError(f"no numeric check is named {unknown[0]!r}; known names: {', '.join(check_names())}")
    settings = dict(
        width=width, samples=samples, device=args.device, dtype=args.dtype, seed=args.seed, chunk_rows=args.chunk_rows
    )
    if workers is None and scheduler is None and samples < PARALLEL_MIN_SAMPLES:
        workers = 1
    from .. import __version__
    from ..execution import InOrder, open_client, run_tasks

    fresh = {}
    # the cluster is reached (and its workers checked) before the results file is opened
    with open_client(workers, scheduler, n_tasks=len(todo)) as context:
        from ..certificates.writes import open_append, remove_quietly

        created = bool(args.out) and not os.path.lexists(args.out)
        sink = open_append(args.out, "--out") if args.out else None
        try:
            for name in wanted:
                if name in done:
                    show(done[name])
            in_order = InOrder(lambda _i, result: show(result))

            def record(index, result):
                if sink is not None:  # written as soon as known, in the order checks finish
                    line = {**result.to_json(), "seed": args.seed, "samples_per_family": samples}
                    line.update(chunk_rows=args.chunk_rows, version=__version__)
                    sink.write(json.dumps(line) + "\n")
                    sink.flush()
                fresh[result.name] = result
                in_order(index, result)  # shown in the order of the checks

            run_tasks(
                _check_task, todo, context=context, shared=settings, on_result=record, label="recheck", unit="check"
            )
        except Exception:
            if created and not fresh:  # a failed run leaves no empty results file behind
                sink.close()
                remove_quietly(args.out)
            raise
        finally:
            if sink is not None:
                sink.close()
    by_name = dict(fresh)
    by_name.update({k: v for k, v in done.items() if k not in by_name})
    results = [by_name[name] for name in wanted]
    failed = [r.name for r in results if not r.passed]
    if args.json:
        print(json.dumps({"passed": not failed, "results": [r.to_json() for r in results]}, indent=2))
    else:
        print(
            f"{len(results) - len(failed)} of {len(results)} checks pass"
            + (f"; FAILED: {', '.join(failed)}" if failed else "")
        )
    if failed:
        print(f"lnproofs recheck: {len(failed)} numeric check(s) failed", file=sys.stderr)
    return 0 if not failed else 1
