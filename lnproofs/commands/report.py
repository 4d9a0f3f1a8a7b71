"""``lnproofs report``: the proof report with figures (Markdown, LaTeX, PDF)."""

from __future__ import annotations

__all__ = ["configure", "run"]


def configure(parser) -> None:
    parser.add_argument("--n", default="4", help="the concrete width proved next to general n (default 4)")
    parser.add_argument(
        "--convention",
        default="torch",
        help="epsilon convention of the convention-dependent theorems: torch (default) or std",
    )
    parser.add_argument("--out", default="reports", help="output folder (default reports/)")
    parser.add_argument(
        "--keys", default=None, help="also certify these keys (.npy, .npz, .csv, .pt, .safetensors; rows are keys)"
    )
    parser.add_argument("--no-recheck", action="store_true", help="skip the numeric re-check with PyTorch")
    parser.add_argument("--samples", default="512", help="samples per numeric re-check family (default 512)")
    parser.add_argument("--device", default="auto", help="device of the numeric re-check (default auto)")
    parser.add_argument("--no-pdf", action="store_true", help="do not run pdflatex even where it is installed")
    parser.add_argument(
        "--experiments",
        default=None,
        help="folder written by 'lnproofs reproduce majority / lm-tables' to include as the "
        "Experiments section (default: OUT/experiments when it holds a summary.md)",
    )


def _integer(text, option: str) -> int:
    from ..kernel import OptionError

    try:
        return int(str(text).strip())
    except ValueError:
        raise OptionError(f"{option} {text!r} is not an integer") from None


def run(args) -> int:
    from ..kernel import OptionError
    from ..report.build import CONVENTIONS, build_report, write_report

    n = _integer(args.n, "--n")
    if n < 2:
        raise OptionError(f"--n {n} is too small; give a width n >= 2")
    if args.convention not in CONVENTIONS:
        raise OptionError(f"--convention {args.convention!r} is not known; accepted: {', '.join(CONVENTIONS)}")
    samples = _integer(args.samples, "--samples")
    report = build_report(
        args.out,
        n=n,
        convention=args.convention,
        keys=args.keys,
        recheck=not args.no_recheck,
        samples=samples,
        device=args.device,
        experiments=args.experiments,
    )
    written = write_report(report, args.out, pdf=not args.no_pdf)
    failed = len(report.proofs) - report.proved
    print(
        f"wrote {written['markdown']}, {written['html']} and {written['latex']}"
        + (f" and {written['pdf']}" if written["pdf"] else f" ({written['pdf_note']})")
    )
    print(
        f"{report.proved} of {len(report.proofs)} theorems proved"
        + (
            ""
            if not report.rechecks
            else f"; numeric re-checks passed: {sum(c.passed for c in report.rechecks.values())}"
            f" of {len(report.rechecks)}"
        )
        + ("" if report.keys is None else f"; keys: {report.keys.summary}")
    )
    return 0 if failed == 0 and all(c.passed for c in report.rechecks.values()) else 1
