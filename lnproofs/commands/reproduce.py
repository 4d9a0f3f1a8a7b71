"""``lnproofs reproduce figure1 | majority | lm-tables | unargmaxable``: one subcommand per experiment, each
with its own options and help (Figure 1 with certified verdicts here; the two trained
experiments in :mod:`.reproduce_experiments`).

Command lines of the time when the three shared one option list keep working: options may
come before the experiment's name, and ``--jobs`` is still the former name of ``--workers``.
An option that the chosen experiment does not take is an error naming the experiments that do.
"""

from __future__ import annotations

import argparse
import sys

from .execution_options import add_execution_options, execution_from_args

__all__ = ["configure", "run", "EXPERIMENTS", "OPTIONS"]

F1, MAJ, LM, UN = "figure1", "majority", "lm-tables", "unargmaxable"
#: experiment -> its one-line help
EXPERIMENTS = {
    F1: "the paper's Figure 1: fractions of trials with a key no query selects, with and without LayerNorm, "
    "every verdict certified",
    MAJ: "the Majority task (Figures 1a/1b, 2, 3): training with and without the projection",
    LM: "Tables 1 and 2 and Figure 4: unselectable keys of small trained language models, decided exactly",
    UN: "Grivas et al.'s random softmax layers (10,000 classes, d from 2 to 50): unargmaxable classes in the box "
    "[-100, 100]^d, for free inputs and in a LayerNorm ball, certified",
}
FIGURE_NAMES = tuple(EXPERIMENTS)

#: (flags, experiments that take it, argparse keywords); --workers and --scheduler are added
#: by :func:`add_execution_options` for figure1 and majority
OPTIONS = (
    (("--out",), (F1, MAJ, LM, UN), dict(default=None)),
    (("--quiet",), (F1, MAJ, LM, UN), dict(action="store_true", help="only warnings and errors on standard error")),
    (
        ("--progress",),
        (F1, MAJ, LM, UN),
        dict(
            action=argparse.BooleanOptionalAction,
            default=None,
            help="a progress bar on standard error (default: when it is a terminal)",
        ),
    ),
    (("--trials",), (F1,), dict(default="100", help="trials per (n, d) cell (default 100)")),
    (("--seed",), (F1,), dict(default="0", help="base seed (default 0)")),
    (
        ("--jobs",),
        (F1,),
        dict(default=None, metavar="N", help="deprecated: the former name of --workers, same meaning"),
    ),
    (
        ("--resume",),
        (F1,),
        dict(action="store_true", help="continue an interrupted run from OUT/progress.jsonl instead of starting over"),
    ),
    (("--n-range",), (F1,), dict(default="3:60", help="smallest:largest number of keys (default 3:60)")),
    (("--d-range",), (F1,), dict(default="3:15", help="smallest:largest dimension (default 3:15)")),
    (("--classes",), (UN,), dict(default="10000", help="classes per model (default 10000, as in the paper)")),
    (
        ("--dims",),
        (UN,),
        dict(default="2,4,6,8,10,15,20,30,40,50", help="comma-separated widths d (default: the paper's ten)"),
    ),
    (("--inits",), (UN,), dict(default="uniform,normal", help="comma-separated initialisations (default both)")),
    (
        ("--bias",),
        (UN,),
        dict(
            default="both",
            choices=("without", "with", "both"),
            help="certify the models without their bias, with it, or both",
        ),
    ),
    (
        ("--sets",),
        (UN,),
        dict(
            default="box,free,layernorm",
            help="comma-separated query sets among box, free, layernorm (default all three)",
        ),
    ),
    (("--workers",), (F1, MAJ), None),
    (("--scheduler",), (F1, MAJ), None),
    (
        ("--paper",),
        (MAJ, LM),
        dict(
            action="store_true",
            help="the paper's configuration (long; on a GPU when torch sees one) instead of the scaled-down default",
        ),
    ),
    (("--steps",), (MAJ, LM), dict(default=None, help="training steps per run (default: the configuration's)")),
    (("--device",), (MAJ, LM), dict(default="auto", help="auto (a GPU when torch sees one), cpu, cuda or cuda:N")),
    (
        ("--seeds",),
        (MAJ,),
        dict(default=None, help="comma-separated training seeds (default 11,123,42; --paper: the paper's ten)"),
    ),
    (("--samples",), (MAJ,), dict(default=None, help="number of sequences N (default: the configuration's)")),
    (("--no-3d",), (MAJ,), dict(action="store_true", help="skip the 3-D variant")),
    (
        ("--arms",),
        (MAJ,),
        dict(
            default=None,
            help="comma-separated arms: layernorm, no-projection (the two the "
            "findings compare) and none (no norm; default: the two, --paper: "
            "all three)",
        ),
    ),
    (
        ("--corpus",),
        (LM,),
        dict(
            default=None,
            help="a text file or a folder of .txt/.md/.rst files (default: the "
            "docstrings of the Python standard library, offline)",
        ),
    ),
    (("--texts",), (LM,), dict(default=None, help="held-out texts to certify (default 4; --paper 1000)")),
    (
        ("--text-length",),
        (LM,),
        dict(default=None, help="MIN:MAX tokens per held-out text (default 768:1024, as in the paper)"),
    ),
    (
        ("--no-certificates",),
        (LM,),
        dict(action="store_true", help="do not write every certificate and its keys (they are still checked)"),
    ),
)


def _dest(flags) -> str:
    return flags[0].lstrip("-").replace("-", "_")


def _hidden(parser, flags, keywords, prefix) -> None:
    """``flags`` accepted but not shown, stored under ``prefix + dest`` only when given."""
    action = (keywords or {}).get("action")
    extra = {"action": action} if action else {}
    parser.add_argument(*flags, dest=prefix + _dest(flags), default=argparse.SUPPRESS, help=argparse.SUPPRESS, **extra)


def configure(parser) -> None:
    for flags, _, keywords in OPTIONS:  # the former place of every option: before the name
        _hidden(parser, flags, keywords, "_early_")
    sub = parser.add_subparsers(dest="figure", metavar="EXPERIMENT", parser_class=type(parser))
    for name, help_text in EXPERIMENTS.items():
        cmd = sub.add_parser(name, help=help_text, description=help_text)
        for flags, takers, keywords in OPTIONS:
            if name not in takers:
                _hidden(cmd, flags, keywords, "_foreign_")
            elif flags == ("--out",):
                cmd.add_argument(
                    *flags,
                    default=None,
                    help="output folder (default " + ("reports/figure1/)" if name == F1 else "reports/experiments/)"),
                )
            elif keywords is not None:
                cmd.add_argument(*flags, **keywords)
        if name == F1:
            add_execution_options(
                cmd,
                automatic="a local cluster sized to the machine when the run has at least "
                "10000 trials in all (cells x trials), else this process",
            )
        elif name == MAJ:
            add_execution_options(
                cmd,
                automatic="one training run per worker: a local cluster sized to the "
                "machine when more than one run is left and --device is the CPU, "
                "else this process",
            )


def _resolve(args) -> None:
    """Refuse options the experiment does not take; apply those given before its name."""
    from ..kernel import OptionError

    if args.figure is None:
        raise OptionError(
            f"give the experiment to reproduce; accepted: {', '.join(FIGURE_NAMES)} "
            "(lnproofs reproduce EXPERIMENT --help lists its options)"
        )
    for flags, takers, keywords in OPTIONS:
        dest = _dest(flags)
        given = [prefix for prefix in ("_early_", "_foreign_") if hasattr(args, prefix + dest)]
        if given and args.figure not in takers:
            raise OptionError(
                f"{flags[0]} is not an option of reproduce {args.figure}; it is taken by "
                + " and ".join(f"reproduce {t}" for t in takers)
            )
        if "_early_" in given:
            default = (keywords or {}).get("default", False if (keywords or {}).get("action") else None)
            if getattr(args, dest) == default:
                setattr(args, dest, getattr(args, "_early_" + dest))


def _range(text: str, option: str, full) -> range:
    from ..kernel import OptionError

    parts = str(text).split(":")
    try:
        lo, hi = (int(parts[0]), int(parts[-1])) if len(parts) in (1, 2) else (None, None)
    except ValueError:
        lo = hi = None
    if lo is None or not (full[0] <= lo <= hi <= full[-1]):
        raise OptionError(f"{option} {text!r} is not accepted; give A:B with {full[0]} <= A <= B <= {full[-1]}")
    return range(lo, hi + 1)


def run(args) -> int:
    _resolve(args)
    if args.figure == UN:
        return _unargmaxable(args)
    if args.figure != F1:
        from .reproduce_experiments import run_experiment

        return run_experiment(args)
    return _figure1(args)


def _unargmaxable(args) -> int:
    from ..experiments.outputs import positive_int
    from ..experiments.unargmaxable import INITS, SETS, reproduce_unargmaxable
    from ..kernel import OptionError

    def listed(text, option, allowed, cast=str):
        try:
            values = [cast(x) for x in str(text).split(",") if x.strip()]
        except ValueError:
            values = [None]
        bad = [v for v in values if v not in allowed] or ([] if values else ["(none)"])
        if bad:
            raise OptionError(f"{option} {text!r} is not accepted; choose from {', '.join(map(str, allowed))}")
        return tuple(values)

    classes = positive_int(args.classes, "--classes", 2)
    dims = listed(args.dims, "--dims", tuple(range(1, 1025)), int)
    inits, sets = listed(args.inits, "--inits", INITS), listed(args.sets, "--sets", SETS)
    biases = {"without": (False,), "with": (True,), "both": (False, True)}[args.bias]
    summary = reproduce_unargmaxable(
        args.out or "reports/unargmaxable", classes=classes, dims=dims, inits=inits, biases=biases, sets=sets
    )
    for claim in summary["claims"]:
        print(f"{claim['verdict']}: {claim['claim']}")
    print(f"wrote table.csv, results.json and README.md to {args.out or 'reports/unargmaxable'}")
    return 0


def _figure1(args) -> int:
    from ..experiments.outputs import positive_int
    from ..kernel import OptionError

    args.out = args.out or "reports/figure1"
    trials = positive_int(args.trials, "--trials", 1)
    seed = positive_int(args.seed, "--seed", 0)
    workers, scheduler = execution_from_args(args)
    if args.jobs is not None:
        jobs = positive_int(args.jobs, "--jobs", 1)
        if workers is not None or scheduler is not None:
            raise OptionError("--jobs is the former name of --workers; give --workers (or --scheduler) alone")
        print("lnproofs reproduce: --jobs is deprecated; use --workers N (same meaning)", file=sys.stderr)
        workers = jobs
    from ..experiments.figure1 import D_RANGE, N_RANGE, reproduce_figure1

    n_values = _range(args.n_range, "--n-range", N_RANGE)
    d_values = _range(args.d_range, "--d-range", D_RANGE)
    show = args.progress if args.progress is not None else (not args.quiet and sys.stderr.isatty())
    from tqdm import tqdm

    with tqdm(
        total=len(n_values) * len(d_values),
        desc="figure1",
        unit="cell",
        file=sys.stderr,
        disable=not show,
        dynamic_ncols=True,
    ) as bar:

        def progress(done, total):
            bar.total = total
            bar.update(done - bar.n)

        summary = reproduce_figure1(
            args.out,
            trials=trials,
            seed=seed,
            workers=workers,
            scheduler=scheduler,
            resume=args.resume,
            n_values=n_values,
            d_values=d_values,
            progress=progress,
        )
    where = "in this process" if summary["workers"] == 1 else f"on {summary['workers']} Dask workers"
    print(
        f"wrote figure1c.csv, figure1d.csv, figure1c.png, figure1d.png, figure1ab.png and figure1.md "
        f"to {summary['out']} ({summary['cells']} cells, {summary['seconds']:.1f} s {where}; undecided trials: "
        f"{summary['undecided_without']} without LayerNorm, {summary['undecided_with']} with)"
    )
    return 0
