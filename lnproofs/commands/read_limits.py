"""The options that bound how much an input array file may make a command read (``--max-dim``,
``--max-array-bytes``; see :class:`lnproofs.io.bounded.ReadLimits`), and how its decimals are read
(``--as-float64``; see :mod:`lnproofs.io.csv_numbers`)."""

from __future__ import annotations

__all__ = ["add_read_limit_options", "read_limits_from_args"]


def add_read_limit_options(parser) -> None:
    from ..io.bounded import DEFAULT_READ_LIMITS as D

    group = parser.add_argument_group("limits on the array files read (a file past one is refused, exit 2)")
    group.add_argument(
        "--max-dim",
        type=int,
        default=D.max_dim,
        metavar="N",
        help=f"columns of an array (default {D.max_dim}); a .csv line may hold 1024 characters a column",
    )
    group.add_argument(
        "--max-array-bytes",
        type=int,
        default=D.max_array_bytes,
        metavar="B",
        help=f"one array once read, as float64 (default {D.max_array_bytes}); a file on disk may hold "
        f"{D.file_factor}*B bytes",
    )
    parser.add_argument_group("how decimals are read").add_argument(
        "--as-float64",
        action="store_true",
        help="read each decimal (.csv cells, numbers in options) as its nearest float64, as numpy does, "
        "instead of the rational it denotes (0.1 is 1/10); the certificate says so",
    )


def read_limits_from_args(args):
    from ..io.bounded import ReadLimits
    from ..kernel import OptionError

    for name in ("max_dim", "max_array_bytes"):
        if getattr(args, name) < 1:
            raise OptionError(f"--{name.replace('_', '-')} {getattr(args, name)} is not accepted; give a count >= 1")
    return ReadLimits(max_array_bytes=args.max_array_bytes, max_dim=args.max_dim)
