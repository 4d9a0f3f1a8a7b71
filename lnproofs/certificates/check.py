"""Checking a certificate the way ``lnproofs check`` does: the kernel's verdict on every claim
(:func:`lnproofs.kernel.verify.check_claims`), then the stated findings measured again
(:func:`lnproofs.certificates.findings.recheck`), as one :class:`CheckReport`."""

from __future__ import annotations

from dataclasses import dataclass

from ..kernel import certificates as schema
from ..kernel.checker import ExactKeys, Verdict
from ..kernel.verify import check_claims
from . import findings
from .certificate import Certificate

__all__ = ["CheckReport", "check_certificate"]


@dataclass(frozen=True)
class CheckReport:
    """The answer for a whole certificate: one verdict per key (and one for a wrong rank finding)."""

    ok: bool
    verdicts: tuple[Verdict, ...]
    n_keys: int
    dim: int
    kind: str

    @property
    def failures(self) -> tuple[Verdict, ...]:
        return tuple(v for v in self.verdicts if not v.ok)

    def to_json(self) -> dict:
        return {"ok": self.ok, "n_keys": self.n_keys, "dim": self.dim, "query_set": self.kind,
                "checked": len(self.verdicts),
                "failures": [{"index": v.index, "status": v.status, "message": v.message} for v in self.failures]}

    def __str__(self) -> str:
        if self.ok:
            kind = self.kind if " " in self.kind else f"{self.kind} queries"
            if len(self.verdicts) == self.n_keys:
                return f"every claim holds: {self.n_keys} keys in R^{self.dim} ({kind}), checked exactly"
            claims = f"{len(self.verdicts)} claim{'s' if len(self.verdicts) != 1 else ''}"
            return f"every claim holds: {claims} about {self.n_keys} keys in R^{self.dim} ({kind}), checked exactly"
        lines = [f"{len(self.failures)} of {len(self.verdicts)} claims refuted:"]
        lines += [f"  {v.message}" for v in self.failures[:20]]
        if len(self.failures) > 20:
            lines.append(f"  ... and {len(self.failures) - 20} more")
        return "\n".join(lines)


def check_certificate(certificate, keys) -> CheckReport:
    """Re-verify every claim of ``certificate`` (a Certificate or its JSON) against ``keys`` in the
    kernel, and measure its stated findings again."""
    cert = certificate if isinstance(certificate, schema.Certificate) else Certificate.from_json(certificate)
    ek = ExactKeys.of(keys)
    verdicts = findings.recheck(cert, ek, check_claims(cert, ek))
    kind = cert.query_set.get("kind", "free")
    if cert.keys_from is not None:
        kind = "free queries on the LayerNorm outputs of the inputs; interiors by interval arithmetic"
    return CheckReport(all(v.ok for v in verdicts), tuple(verdicts), ek.n, ek.dim, kind)
