"""The registry of numeric checks, one per theorem name, and the runner.

Each check is a function ``check(ctx) -> iterable of Outcome``: it draws random and
adversarial batches from ``ctx`` (chunk by chunk, on ``ctx.device``), measures a
normalised error for every sample, and reports per family the largest error and any
failure it saw (a key that should lose but wins, a strict inequality that fails
where it is resolvable).  The tolerance comes from :mod:`torch_backend.tolerances`.

``run_checks`` returns a list of frozen :class:`CheckResult`; ``to_json()`` gives::

    {"name", "samples", "max_error", "tolerance", "passed", "device", "dtype",
     "width", "seconds", "throughput", "families": [{"family", "width", "samples",
     "max_error", "tolerance"}], "messages": [...]}
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import torch

from lnproofs.kernel import OptionError

from .device import device_label, resolve_device, resolve_dtype
from .outcome import Outcome
from .sampling import default_chunk_rows, make_generator
from .tolerances import tolerance, unit_roundoff

__all__ = [
    "CheckResult",
    "Context",
    "Outcome",
    "registry",
    "check_names",
    "run_checks",
    "run_seeded_checks",
    "DEFAULT_WIDTH",
    "DEFAULT_SAMPLES",
]

DEFAULT_WIDTH = 32
DEFAULT_SAMPLES = 2048


@dataclass(frozen=True)
class CheckResult:
    name: str
    samples: int
    max_error: float
    tolerance: float
    passed: bool
    device: str
    dtype: str
    width: int
    seconds: float
    throughput: float
    families: tuple[dict, ...] = ()
    messages: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, data: dict) -> CheckResult:
        fields = {
            k: data[k]
            for k in (
                "name",
                "samples",
                "max_error",
                "tolerance",
                "passed",
                "device",
                "dtype",
                "width",
                "seconds",
                "throughput",
            )
        }
        return cls(
            **fields,
            families=tuple(dict(f) for f in data.get("families", ())),
            messages=tuple(data.get("messages", ())),
        )

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "samples": self.samples,
            "max_error": self.max_error,
            "tolerance": self.tolerance,
            "passed": self.passed,
            "device": self.device,
            "dtype": self.dtype,
            "width": self.width,
            "seconds": self.seconds,
            "throughput": self.throughput,
            "families": [dict(f) for f in self.families],
            "messages": list(self.messages),
        }


@dataclass(frozen=True)
class Context:
    """Everything a check needs; the implementations under test are fields so a suspect layer can be re-checked."""

    name: str
    width: int
    samples: int
    dtype: torch.dtype
    device: torch.device
    gen: torch.Generator
    chunk_rows: int | None = None
    layer_norm: Callable = field(default=None)
    layer_norm_std: Callable = field(default=None)
    rms_norm: Callable = field(default=None)

    @property
    def u(self) -> float:
        return unit_roundoff(self.dtype)

    def tol(self, width: int | None = None) -> float:
        return tolerance(self.name, self.dtype, self.width if width is None else width)

    def widths(self) -> tuple[int, ...]:
        """The requested width, then the adversarial widths 2 and 3."""
        out = [self.width]
        for w in (2, 3):
            if w not in out:
                out.append(w)
        return tuple(out)

    def rows(self, width: int) -> int:
        """Samples per family at ``width`` (the small adversarial widths get a smaller share)."""
        return self.samples if width == self.width else max(16, min(self.samples, 1024))

    def chunk(self, width: int) -> int:
        return self.chunk_rows or default_chunk_rows(width, self.dtype)

    def opts(self) -> dict:
        return {"gen": self.gen, "dtype": self.dtype, "device": self.device}


def registry() -> dict[str, Callable[[Context], Iterable[Outcome]]]:
    """theorem name -> check function (a fresh dict on every call)."""
    from . import (
        checks_attention,
        checks_coverage,
        checks_ellipsoid,
        checks_layernorm,
        checks_projection,
        checks_rmsnorm,
        checks_softcap,
        checks_vocab,
    )

    table: dict = {}
    for module in (
        checks_projection,
        checks_layernorm,
        checks_ellipsoid,
        checks_attention,
        checks_rmsnorm,
        checks_coverage,
        checks_vocab,
        checks_softcap,
    ):
        table.update(module.CHECKS)
    return table


def check_names() -> list[str]:
    return sorted(registry())


def _summarise(name, outcomes, ctx, label, seconds) -> CheckResult:
    samples = sum(o.samples for o in outcomes)
    families, messages = [], []
    worst_ratio, worst = -1.0, (0.0, ctx.tol())
    passed = bool(outcomes)
    for o in outcomes:
        tol = ctx.tol(o.width)
        ok = (o.max_error <= tol) and not o.failures
        passed = passed and ok
        ratio = o.max_error / tol if tol > 0 else float("inf")
        if ratio > worst_ratio:
            worst_ratio, worst = ratio, (o.max_error, tol)
        families.append(
            {
                "family": o.family,
                "width": o.width,
                "samples": o.samples,
                "max_error": o.max_error,
                "tolerance": tol,
                "passed": ok,
            }
        )
        if o.max_error > tol:
            messages.append(
                f"{name} [{o.family}, width {o.width}]: largest error {o.max_error:.3e} exceeds the tolerance {tol:.3e}"
            )
        messages.extend(f"{name} [{o.family}, width {o.width}]: {f}" for f in o.failures)
    if not outcomes:
        messages.append(f"{name}: no samples were checked")
    return CheckResult(
        name=name,
        samples=samples,
        max_error=float(worst[0]),
        tolerance=float(worst[1]),
        passed=passed,
        device=label,
        dtype=str(ctx.dtype).replace("torch.", ""),
        width=ctx.width,
        seconds=seconds,
        throughput=samples / seconds if seconds > 0 else 0.0,
        families=tuple(families),
        messages=tuple(messages),
    )


def run_checks(
    *,
    width: int | None = None,
    samples: int = DEFAULT_SAMPLES,
    device="auto",
    dtype="float64",
    names: Iterable[str] | None = None,
    seed: int = 0,
    chunk_rows: int | None = None,
    layer_norm: Callable | None = None,
    layer_norm_std: Callable | None = None,
    rms_norm: Callable | None = None,
    on_result: Callable[[CheckResult], None] | None = None,
) -> list[CheckResult]:
    """Run the registered checks (all, or ``names``) and return one :class:`CheckResult` each.

    ``width`` is the vector length of the main batches (default 32; widths 2 and 3 are always
    checked as well); ``samples`` the number of rows drawn per input family at that width (the
    reported ``samples`` counts every checked row, pair or matrix entry); ``device`` "auto",
    "cpu", "cuda" or "cuda:N"; ``dtype`` "float64" or "float32"; inputs are generated chunk by
    chunk (``chunk_rows``, default 128 MiB of inputs) with a generator seeded from ``seed`` and
    the check's name, so a check gives the same numbers whether run alone or with the others.

    ``layer_norm`` / ``layer_norm_std`` / ``rms_norm`` replace the implementations under test
    (default: ``torch.nn.functional.layer_norm``, the textbook std-convention formula and
    ``torch.nn.functional.rms_norm``), with the signatures of the torch functions.
    ``on_result`` is called with each result as soon as it is known.
    """
    import torch.nn.functional as F

    from .geometry import layer_norm_std as textbook_std

    dev = resolve_device(device)
    dt = resolve_dtype(dtype)
    width = DEFAULT_WIDTH if width is None else width
    if not isinstance(width, int) or isinstance(width, bool) or width < 4:
        raise OptionError(f"width {width!r} is not accepted; give an integer >= 4 (widths 2 and 3 are always checked)")
    if not isinstance(samples, int) or isinstance(samples, bool) or samples < 16:
        raise OptionError(f"samples {samples!r} is not accepted; give an integer >= 16")
    if chunk_rows is not None and (not isinstance(chunk_rows, int) or chunk_rows < 1):
        raise OptionError(f"chunk_rows {chunk_rows!r} is not accepted; give a positive integer")
    table = registry()
    chosen = sorted(table) if names is None else list(dict.fromkeys(names))
    unknown = [n for n in chosen if n not in table]
    if unknown:
        raise OptionError(f"no numeric check is named {unknown[0]!r}; known names: {', '.join(sorted(table))}")
    label = device_label(dev)
    results = []
    for name in chosen:
        ctx = Context(
            name=name,
            width=width,
            samples=samples,
            dtype=dt,
            device=dev,
            gen=make_generator(seed * 1_000_003 + zlib.crc32(name.encode()), dev),
            chunk_rows=chunk_rows,
            layer_norm=layer_norm or F.layer_norm,
            layer_norm_std=layer_norm_std or textbook_std,
            rms_norm=rms_norm or F.rms_norm,
        )
        start = time.perf_counter()
        outcomes = list(table[name](ctx))
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        result = _summarise(name, outcomes, ctx, label, time.perf_counter() - start)
        results.append(result)
        if on_result is not None:
            on_result(result)
    return results


def run_seeded_checks(*, width: int, samples: int, device: str, seed: int) -> tuple[list, str]:
    """:func:`run_checks` in float64 with torch's global generator pinned to ``seed`` (and restored
    afterwards), so that no draw from it can make two runs differ; returns the results and
    torch's version."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        results = run_checks(width=width, samples=samples, device=device, dtype="float64", seed=seed)
    return results, torch.__version__
