"""``lnproofs demo``: write the interactive attention demo as one offline HTML file."""

from __future__ import annotations

__all__ = ["configure", "run"]


def configure(parser) -> None:
    parser.add_argument(
        "--out", default="reports/demo.html", help="where to write the page (default: reports/demo.html)"
    )


def run(args) -> int:
    from ..experiments.demo import write_demo

    path = write_demo(args.out)
    print(f"wrote {path} (open it in any browser; it needs no network)")
    return 0
