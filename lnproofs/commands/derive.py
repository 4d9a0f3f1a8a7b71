"""``lnproofs derive``: prove every LayerNorm theorem with SymPy and print the results."""

from __future__ import annotations

import json

from ..kernel import OptionError

__all__ = ["configure", "run", "MAX_CONCRETE_N"]

#: the concrete proofs use explicit n x n matrices; general n already covers every width
MAX_CONCRETE_N = 16


def configure(parser) -> None:
    parser.add_argument(
        "--n",
        type=int,
        default=None,
        metavar="N",
        help=f"also prove the explicit versions for width N (2 <= N <= {MAX_CONCRETE_N})",
    )
    parser.add_argument(
        "--convention",
        default="torch",
        choices=("torch", "std"),
        help="epsilon convention of the convention-dependent ellipsoid and attention statements "
        "(the decomposition and interior theorems of both conventions are always proved)",
    )
    parser.add_argument(
        "--name",
        action="append",
        default=None,
        metavar="NAME",
        help="prove only this theorem (repeatable); see the names in the table",
    )
    parser.add_argument("--json", action="store_true", help='print {"theorems": [...]} as JSON')


def _table(results) -> str:
    from ..derive.prose import to_plain

    rows = [("status", "scope", "conv", "steps", "name", "title")]
    for r in results:
        checked = sum(1 for s in r.steps if s.checked)
        rows.append(
            (
                r.status,
                "general n" if r.n is None else f"n = {r.n}",
                r.convention or "-",
                f"{checked}/{len(r.steps)}",
                r.name,
                to_plain(r.title),
            )
        )
    widths = [max(len(row[c]) for row in rows) for c in range(5)]
    lines = ["  ".join(cell.ljust(widths[c]) for c, cell in enumerate(row[:5])) + "  " + row[5] for row in rows]
    lines.insert(1, "-" * len(lines[0]))
    for r in results:
        for s in r.steps:
            if not s.checked:
                lines.append(
                    f"  {r.name} ({'general n' if r.n is None else f'n = {r.n}'}) step {s.index}: "
                    f"{to_plain(s.description)}: {s.detail}"
                )
    return "\n".join(lines)


def run(args) -> int:
    from ..derive.registry import prove_all

    if args.n is not None and args.n > MAX_CONCRETE_N:
        raise OptionError(
            f"--n {args.n} is too large for explicit matrices; use 2 <= N <= {MAX_CONCRETE_N} "
            "(the general-n proofs hold for every width)"
        )
    results = prove_all(n=args.n, convention=args.convention, names=args.name)
    proved = sum(1 for r in results if r.proved)
    if args.json:
        print(
            json.dumps(
                {
                    "theorems": [r.to_json() for r in results],
                    "summary": {
                        "proved": proved,
                        "failed": len(results) - proved,
                        "n": args.n,
                        "convention": args.convention,
                    },
                },
                indent=2,
            )
        )
    else:
        print(_table(results))
        print(f"\n{proved} of {len(results)} theorems proved (every step checked by SymPy).")
    return 0 if proved == len(results) and results else 1
