"""Device and dtype resolution, per call (there is no global default to change)."""

from __future__ import annotations

import torch

from lnproofs.kernel import OptionError

__all__ = ["resolve_device", "resolve_dtype", "device_label", "DTYPES"]

#: accepted dtype names -> torch dtypes
DTYPES = {"float64": torch.float64, "float32": torch.float32}


def resolve_device(device="auto") -> torch.device:
    """``"auto"`` (a CUDA GPU when torch sees one, else the CPU), ``"cpu"``, ``"cuda"`` or ``"cuda:N"``."""
    if isinstance(device, torch.device):
        device = str(device)
    name = str(device).strip().lower()
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cpu":
        return torch.device("cpu")
    if name == "cuda" or name.startswith("cuda:"):
        if not torch.cuda.is_available():
            raise OptionError(
                f"device {device!r} was asked for but torch sees no CUDA GPU on this machine; "
                "use --device cpu or --device auto"
            )
        try:
            dev = torch.device(name)
        except RuntimeError:
            raise OptionError(f"device {device!r} is not a valid CUDA device name; use cuda or cuda:N") from None
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise OptionError(f"device {device!r} does not exist: torch sees {torch.cuda.device_count()} GPU(s)")
        return dev
    raise OptionError(f"device {device!r} is not accepted; use auto, cpu, cuda or cuda:N")


def resolve_dtype(dtype="float64") -> torch.dtype:
    """``"float64"`` or ``"float32"`` (or the torch dtype itself)."""
    if isinstance(dtype, torch.dtype):
        if dtype in DTYPES.values():
            return dtype
        raise OptionError(f"dtype {dtype} is not accepted; use float64 or float32")
    name = str(dtype).strip().lower()
    if name in DTYPES:
        return DTYPES[name]
    raise OptionError(f"dtype {dtype!r} is not accepted; use float64 or float32")


def device_label(device: torch.device) -> str:
    """A readable device name for reports, e.g. ``cpu`` or ``cuda:0 (NVIDIA H100)``."""
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        return f"cuda:{index} ({torch.cuda.get_device_name(index)})"
    return device.type
