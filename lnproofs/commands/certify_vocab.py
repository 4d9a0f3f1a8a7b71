"""``lnproofs certify-vocab MODEL [--sets free,box,realisable] [--box 100] [--out DIR]``.

Which tokens can a locally stored language model ever output?  The unembedding rows (tied or
untied) are the keys, the output bias a per-token offset, and the queries are free, in the box
``|q_l| <= B`` (Grivas et al.'s formulation), or what the final norm can produce (gain, bias and
eps).  Writes certificates that ``lnproofs check`` verifies, ``table.parquet``/``table.csv`` (id,
token, status per query set, margin) and ``summary.md``/``summary.json`` to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import sys

from .execution_options import add_device_option, add_execution_options, execution_from_args, filter_product

__all__ = ["configure", "run"]


def configure(parser) -> None:
    parser.add_argument("model", metavar="MODEL", help="a Hugging Face model folder saved with its output layer")
    parser.add_argument(
        "--sets",
        default="free,box,realisable",
        metavar="LIST",
        help="comma-separated query sets among free, box, realisable (default: all three)",
    )
    parser.add_argument(
        "--box",
        type=float,
        default=100.0,
        metavar="B",
        help="the box |q_l| <= B of the box query set (B > 0; default 100, as in Grivas et al.)",
    )
    parser.add_argument(
        "--out",
        default="vocab-certificates",
        metavar="DIR",
        help="folder for the certificates, table.parquet, table.csv, summary.md, summary.json",
    )
    parser.add_argument("--resume", action="store_true", help="keep the query sets already finished in --out")
    parser.add_argument("--seed", type=int, default=0, help="seed of the engine's random directions (default 0)")
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bars on stderr (default: on a terminal)",
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    add_execution_options(
        parser,
        automatic="for the realisable set of 20000 tokens or more, a local cluster sized "
        "to the machine, one chunk of tokens per task; else this process",
    )
    add_device_option(parser)


def run(args) -> int:
    from ..models.vocab_run import certify_vocab

    workers, scheduler = execution_from_args(args)
    matmul = filter_product(args.device)
    sets = tuple(s.strip() for s in args.sets.split(",") if s.strip())
    progress = sys.stderr.isatty() if args.progress is None else args.progress
    summary = certify_vocab(
        args.model,
        args.out,
        sets=sets,
        bound=args.box,
        resume=args.resume,
        seed=args.seed,
        progress=progress,
        workers=workers,
        scheduler=scheduler,
        matmul=matmul,
    )
    if args.json:
        print(json.dumps(summary))
    else:
        for name, counts in summary["counts"].items():
            print(f"{name}: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
        print(f"wrote {args.out}")
    return 0
