"""``--workers N`` and ``--scheduler ADDRESS``, shared by the commands that run many tasks; ``--device``."""

from __future__ import annotations

__all__ = ["add_execution_options", "execution_from_args", "add_device_option", "filter_product"]


def add_execution_options(parser, *, automatic: str) -> None:
    """Add the two options; ``automatic`` says, for this command, when the default starts a
    local cluster (it goes into the help text)."""
    group = parser.add_argument_group("parallel work (Dask)")
    group.add_argument(
        "--workers",
        metavar="N",
        default=None,
        help=f"worker processes of a local Dask cluster; 1 = everything in this process, with "
        f"identical results (default: {automatic})",
    )
    group.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        default=None,
        help="run on an existing Dask cluster, e.g. tcp://10.0.0.5:8786 (its workers need the same "
        "lnproofs version; checked at start)",
    )


def execution_from_args(args) -> tuple[int | None, str | None]:
    """``(workers, scheduler)`` from the options, validated: workers is None (automatic) or
    a positive integer; bad values and contradictory options raise one-line errors."""
    from ..execution import resolve_workers

    workers = args.workers
    if workers is not None:
        workers = resolve_workers(workers)  # rejects 0, negatives and non-numbers
    resolve_workers(workers, args.scheduler)  # rejects both together, and an empty address
    return workers, args.scheduler


def add_device_option(parser) -> None:
    """``--device``: where the kernel's float filter multiplies (the exact decisions never move)."""
    parser.add_argument(
        "--device",
        default="cpu",
        metavar="DEVICE",
        help="where the float filter's products run: cpu (numpy; the default), cuda, cuda:N, or auto (a CUDA "
        "GPU when torch sees one); the certificates are the same on every device",
    )


def filter_product(device):
    """The float filter's product for ``--device`` (:class:`lnproofs.kernel.ExactKeys`'s ``matmul``):
    None (numpy's) for None or ``cpu``, else torch's on the device; one line when torch is missing or
    does not see the device."""
    if device is None or str(device).strip().lower() == "cpu":
        return None
    from ..kernel import OptionError

    try:
        from torch_backend.matmul import filter_matmul
    except ImportError as exc:
        raise OptionError(f"--device {device} needs torch ({exc}); install torch==2.13.0 or use --device cpu") from None
    return filter_matmul(device)
