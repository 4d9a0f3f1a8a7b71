"""``lnproofs reproduce majority`` and ``lnproofs reproduce lm-tables``: the paper's two
experiments (:mod:`lnproofs.experiments.majority`, :mod:`lnproofs.experiments.lm_tables`);
their options are declared with the others in :mod:`.reproduce`."""

from __future__ import annotations

import sys

__all__ = ["run_experiment"]

DEFAULT_OUT = "reports/experiments"


def _lengths(text) -> tuple[int, int]:
    from ..kernel import OptionError

    parts = str(text).split(":")
    try:
        lo, hi = (int(parts[0]), int(parts[-1])) if len(parts) in (1, 2) else (0, 0)
    except ValueError:
        lo = hi = 0
    if not 2 <= lo <= hi <= 1024:
        raise OptionError(f"--text-length {text!r} is not accepted; give MIN:MAX with 2 <= MIN <= MAX <= 1024")
    return lo, hi


def run_experiment(args) -> int:
    """Run majority or lm-tables; their progress is one tqdm status line (the latest step, and
    the time so far) on a terminal or with --progress, nothing with --quiet."""
    from tqdm import tqdm

    show = args.progress if args.progress is not None else (not args.quiet and sys.stderr.isatty())
    with tqdm(
        total=None,
        desc=args.figure,
        bar_format="{desc} [{elapsed}]",
        file=sys.stderr,
        disable=not show,
        dynamic_ncols=True,
    ) as bar:

        def progress(line: str) -> None:
            bar.set_description_str(line)

        return _run(args, progress)


def _run(args, progress) -> int:
    from ..experiments.outputs import parse_seeds, positive_int

    out = args.out or DEFAULT_OUT
    steps = None if args.steps is None else positive_int(args.steps, "--steps", 1)
    if args.figure == "majority":
        seeds = None if args.seeds is None else parse_seeds(args.seeds)
        samples = None if args.samples is None else positive_int(args.samples, "--samples", 10)
        from ..experiments.majority import reproduce_majority
        from .execution_options import execution_from_args

        workers, scheduler = execution_from_args(args)
        summary = reproduce_majority(
            out,
            paper=args.paper,
            seeds=seeds,
            steps=steps,
            n_samples=samples,
            device=args.device,
            three_d=not args.no_3d,
            progress=progress,
            workers=workers,
            scheduler=scheduler,
            arms=None if args.arms is None else [a.strip() for a in str(args.arms).split(",")],
        )
        arms = summary["arms"]
        print(
            f"wrote the Majority experiment to {summary['out']} ({summary['seconds']:.0f} s): final angle "
            f"to 1 with projection {arms['layernorm']['final_query_angle']['mean']:.1f} deg, without "
            f"{arms['no-projection']['final_query_angle']['mean']:.1f} deg; summary.md updated"
        )
        return 0
    texts = None if args.texts is None else positive_int(args.texts, "--texts", 1)
    lengths = None if args.text_length is None else _lengths(args.text_length)
    from ..experiments.lm_tables import reproduce_lm_tables

    summary = reproduce_lm_tables(
        out,
        paper=args.paper,
        corpus=args.corpus,
        steps=steps,
        texts=texts,
        text_length=lengths,
        device=args.device,
        keep_certificates=not args.no_certificates,
        progress=progress,
    )
    t = summary["tables"]
    cells = " / ".join(f"{e['unselectable_pct']:.1f}" for e in t["without"])
    after = " / ".join(f"{e['unselectable_pct']:.1f}" for e in t["with"])
    print(
        f"wrote the trained-model tables to {summary['out']} ({summary['texts']} texts, "
        f"{summary['seconds']:.0f} s): % unselectable without scaling {cells}; with scaling {after}; "
        "summary.md updated"
    )
    return 0
