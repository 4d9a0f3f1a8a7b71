"""Checking a certificate the way ``lnproofs check`` does: the kernel's verdict on every claim
(:func:`lnproofs.kernel.check_claims`), then the stated findings measured again
(:func:`lnproofs.certificates.findings.recheck`), as one :class:`CheckReport`."""

from __future__ import annotations

from dataclasses import dataclass

from ..kernel import Certificate as KernelCertificate
from ..kernel import ExactKeys, LayerNormKeys, Verdict, check_claims, thaw
from . import findings
from .certificate import Certificate

__all__ = ["CheckReport", "check_certificate", "check_layernorm_range", "LAYERNORM_RANGE_BITS"]


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
        return {
            "ok": self.ok,
            "n_keys": self.n_keys,
            "dim": self.dim,
            "query_set": self.kind,
            "checked": len(self.verdicts),
            "failures": [{"index": v.index, "status": v.status, "message": v.message} for v in self.failures],
        }

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


#: LayerNorm inputs are accepted while |x_j - mean(x_j)|^2 + n eps lies within 2**-BITS .. 2**BITS
LAYERNORM_RANGE_BITS = 1000


def check_layernorm_range(inputs, eps) -> None:
    """Refuse, in one line, LayerNorm inputs and eps whose M_j = |c_j|^2 + n eps (c_j = x_j - mean x_j)
    leaves [2**-LAYERNORM_RANGE_BITS, 2**LAYERNORM_RANGE_BITS], the float range that the kernel's
    float filter and the proposers work in (M_j = 0, a constant row with eps 0, is reported
    elsewhere).  LayerNorm gives the same outputs for inputs times t and eps times t**2, so a power
    of two brings any such input back, exactly."""
    import math

    import numpy as np

    from ..kernel import InputError

    X = np.asarray(inputs, dtype=np.float64)
    if X.size == 0:
        return
    top = float(np.abs(X).max())
    power = math.frexp(top)[1] if top > 0 else 0
    scaled = np.ldexp(X, -power)  # exact; entries below 1 in size
    centred = scaled - scaled.mean(axis=1, keepdims=True)
    with np.errstate(divide="ignore"):
        c_bits = np.log2((centred * centred).sum(axis=1)) + 2 * power  # log2 |c_j|^2
    eps_bits = math.log2(X.shape[1]) + math.log2(eps) if eps > 0 else -math.inf
    m_bits = np.logaddexp2(c_bits, eps_bits)
    m_bits = m_bits[np.isfinite(m_bits)]
    if m_bits.size and (m_bits.max() >= LAYERNORM_RANGE_BITS or m_bits.min() <= -LAYERNORM_RANGE_BITS):
        far = float(m_bits.max() if m_bits.max() >= LAYERNORM_RANGE_BITS else m_bits.min())
        way = "down" if far > 0 else "up"
        raise InputError(
            f"LayerNorm inputs and eps out of range: |x - mean(x)|^2 + n*eps is about 2^{far:.0f} for "
            f"some row, outside 2^-{LAYERNORM_RANGE_BITS}..2^{LAYERNORM_RANGE_BITS}; LayerNorm gives "
            f"the same outputs for the inputs times 2^k and eps times 2^2k: scale both {way}"
        )


def check_certificate(certificate, keys) -> CheckReport:
    """Re-verify every claim of ``certificate`` (a Certificate or its JSON) against ``keys`` in the
    kernel, and measure its stated findings again."""
    cert = certificate if isinstance(certificate, KernelCertificate) else Certificate.from_json(certificate)
    ek = ExactKeys.of(keys)
    if cert.keys_from is not None:  # read as the kernel reads it, then the range of its inputs
        check_layernorm_range(ek.array, LayerNormKeys.from_json(thaw(cert.keys_from)).eps)
    verdicts = findings.recheck(cert, ek, check_claims(cert, ek))
    kind = cert.query_set.get("kind", "free")
    if cert.keys_from is not None:
        kind = "free queries on the LayerNorm outputs of the inputs; interiors by interval arithmetic"
    return CheckReport(all(v.ok for v in verdicts), tuple(verdicts), ek.n, ek.dim, kind)
