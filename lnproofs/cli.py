"""The ``lnproofs`` command line.

Each subcommand lives in its own module under :mod:`lnproofs.commands` with two
functions: ``configure(parser)`` adds its arguments and ``run(args) -> int`` does the
work and returns the exit status.  Errors raised on purpose
(:class:`~lnproofs.kernel.LnproofsError`) become one line on standard error and exit
status 2; any other exception is a bug of ours: one line saying so, exit status 3 (so it is never
confused with 1, a refuted claim).

One line means one line: the warnings a command raises (its own, or those of numpy, torch,
transformers, the solvers...) are held back while it runs.  A run that succeeds shows them
at its end, as Python would have; a refused run (exit 2) or an internal error (exit 3) shows its
one line alone (``--traceback`` shows the warnings too, with the traceback).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import sys
import warnings

from .kernel import LnproofsError

__all__ = ["main", "console", "build_parser", "COMMANDS", "INTERNAL_ERROR"]

#: the exit status of an internal error (a bug of ours), apart from 0, 1 (refuted) and 2 (bad input)
INTERNAL_ERROR = 3

#: subcommand name -> (module under lnproofs.commands, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "derive": ("derive", "prove every LayerNorm theorem with SymPy (general n, and a concrete n)"),
    "ellipsoid": ("ellipsoid", "centre, normal, principal axes and semi-axes of a LayerNorm's image"),
    "certify": ("certify", "certify, for every key, whether some query makes it win the argmax"),
    "check": ("check", "re-verify a certificate file exactly (and numerically with --numeric)"),
    "attention-weight": ("attention_weight", "largest softmax weight of a key, or smallest query norm for a weight"),
    "uniform": ("uniform", "is there a non-zero query giving every key the same score?"),
    "recheck": ("recheck", "re-check every theorem numerically with PyTorch (GPU or CPU)"),
    "report": ("report", "write the proof report with figures (Markdown, LaTeX, PDF)"),
    "reproduce": ("reproduce", "rerun the paper's experiments: reproduce figure1 | majority | lm-tables"),
    "demo": ("demo", "write the interactive attention demo as one offline HTML file"),
    "certify-model": ("certify_model", "certify every layer and head of a locally stored transformer"),
    "certify-vocab": ("certify_vocab", "which tokens a language model can ever output: its output layer, certified"),
    "homework": ("homework", "generate exercises with solutions, and check answers exactly"),
}


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad options as one line plus the usage, exit status 2."""

    def error(self, message):  # noqa: D401 - argparse API
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; only ``command``'s module is imported and configured (start-up stays fast)."""
    from . import __version__

    parser = _Parser(
        prog="lnproofs",
        description="Exact geometry of LayerNorm and certified attention selectability.",
        epilog="exit status: 0 success, 1 a claim refuted (or an answer wrong), 2 bad input, "
        "3 an internal error (a bug of lnproofs)",
    )
    parser.add_argument("--version", action="version", version=f"lnproofs {__version__}")
    parser.add_argument("--traceback", action="store_true", help="show the full traceback on internal errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, (module_name, help_text) in COMMANDS.items():
        cmd = sub.add_parser(name, help=help_text, description=help_text)
        if name == command:
            module = importlib.import_module(f".commands.{module_name}", __package__)
            module.configure(cmd)
            cmd.set_defaults(_module=module)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if a in COMMANDS), None)
    parser = build_parser(command)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    status, failed, caught = INTERNAL_ERROR, True, []
    try:
        with warnings.catch_warnings(record=True) as caught:
            status, failed = _run(args)
    finally:  # held back while the command ran (module docstring)
        if not failed or args.traceback:
            for warning in caught:
                warnings.showwarning(warning.message, warning.category, warning.filename, warning.lineno)
    return status


def console(argv: list[str] | None = None) -> None:
    """The ``lnproofs`` program: :func:`main`, then the exit.

    The program owns its process, so it sets the cyclic garbage collector for a long run: young
    objects are looked at after 10,000 allocations rather than 700
    (:data:`lnproofs.execution.collector.COLLECTOR_THRESHOLDS`; a run in this process also
    freezes what exists when it starts: :func:`~lnproofs.execution.collector.collector_budget`).
    Each collection of the oldest objects walks every module imported so far (torch,
    transformers, matplotlib: 60,000 to 170,000 objects), and with Python's thresholds a MiniLM
    corpus run made eight of them, a second in all; with these, none, and the collector's whole
    share fell from 1.3 s to 0.3 s.  Before the exit every object is frozen (``gc.freeze``), so
    the interpreter's last collections do not walk the model, torch and the run's results again
    just before the system frees it all (another second after a model run).  Files are closed by
    the commands themselves; standard output and error are flushed by the exit as always."""
    from .execution.collector import COLLECTOR_THRESHOLDS

    gc.set_threshold(*COLLECTOR_THRESHOLDS)
    status = main(argv)
    gc.freeze()
    sys.exit(status)


def _run(args) -> tuple[int, bool]:
    """``(exit status, whether the run failed with its one error line)``."""
    try:
        return int(args._module.run(args) or 0), False
    except LnproofsError as err:
        print(f"lnproofs {args.command}: error: {err}", file=sys.stderr)
        return err.exit_status, True
    except KeyboardInterrupt:
        print(f"lnproofs {args.command}: interrupted; results written so far are kept", file=sys.stderr)
        return 130, False
    except BrokenPipeError:
        return 0, False
    except Exception as err:  # an internal error (MemoryError and RecursionError included): say so plainly
        if args.traceback:
            raise
        text = " ".join(str(err).split())
        text = text if len(text) <= 300 else text[:300] + " ..."
        print(
            f"lnproofs {args.command}: internal error: {type(err).__name__}: {text} "
            "(rerun with 'lnproofs --traceback ...' and report it)",
            file=sys.stderr,
        )
        return INTERNAL_ERROR, True


if __name__ == "__main__":  # pragma: no cover
    console()
