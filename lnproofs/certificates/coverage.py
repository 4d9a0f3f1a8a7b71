"""Coverage claims as data: the claim that a norm query set covers every direction, with its
exact JSON round-trip (one-line errors naming the field).  The kernel checks the claim's JSON:
:func:`lnproofs.kernel.check_coverage`."""

from __future__ import annotations

from dataclasses import dataclass

from flint import fmpq

from ..kernel import CertificateFormatError, require, to_fraction
from .writers import format_fraction

__all__ = ["Coverage", "COVERAGE_KINDS"]

#: the two cases of a coverage claim: the centre is 0 (b = 0, no u_star), or u_star is its preimage
COVERAGE_KINDS = ("full-rank-centred", "full-rank-interior")


def _canonical(text: str) -> str:
    """``text`` as the lowest-terms ``"p/q"`` (or ``"p"``) that :func:`format_fraction` writes:
    plain ASCII ``[-]digits[/digits]`` through python-flint's own reading (a proposer's 384
    entries per head, a tenth of the time), anything else through :func:`to_fraction`."""
    head, _, tail = text.partition("/")
    digits = head[1:] if head[:1] == "-" else head
    if text.isascii() and digits.isdigit() and (not tail or tail.isdigit()):
        return str(fmpq(text))
    return format_fraction(to_fraction(text))


@dataclass(frozen=True)
class Coverage:
    """The claim that a norm query set covers every direction (see :mod:`lnproofs.kernel.querysets.coverage`)."""

    kind: str
    prime: int
    rows: tuple
    u_star: tuple | None = None

    def __post_init__(self):
        bad = "certificate field coverage"
        require(
            self.kind in COVERAGE_KINDS,
            CertificateFormatError,
            f"{bad}.kind {self.kind!r} is not known; accepted: {', '.join(COVERAGE_KINDS)}",
        )
        require(
            type(self.prime) is int and 2 <= self.prime < 2**63,
            CertificateFormatError,
            f"{bad}.prime {self.prime!r} is not an integer in 2..2^63 - 1",
        )
        require(
            isinstance(self.rows, (list, tuple)) and all(type(r) is int and r >= 0 for r in self.rows),
            CertificateFormatError,
            f"{bad}.rows must be a list of column indices (integers >= 0)",
        )
        require(
            self.u_star is None
            or isinstance(self.u_star, (list, tuple))
            and all(isinstance(x, str) for x in self.u_star),
            CertificateFormatError,
            f"{bad}.u_star must be null or a list of 'p/q' strings",
        )
        object.__setattr__(self, "rows", tuple(self.rows))
        if self.u_star is not None:
            try:
                object.__setattr__(self, "u_star", tuple(_canonical(x) for x in self.u_star))
            except (ValueError, ZeroDivisionError, ArithmeticError) as err:
                raise CertificateFormatError(f"{bad}.u_star holds a value that is not a 'p/q' string ({err})") from None

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "prime": self.prime,
            "rows": list(self.rows),
            "u_star": None if self.u_star is None else list(self.u_star),
        }

    @classmethod
    def from_json(cls, data) -> Coverage:
        require(
            isinstance(data, dict) and {"kind", "prime", "rows"} <= set(data),
            CertificateFormatError,
            "certificate field coverage must be an object with 'kind', 'prime', 'rows' and 'u_star'",
        )
        return cls(data["kind"], data["prime"], data["rows"], data.get("u_star"))
