"""Uniform-attention answers (schema ``lnproofs.uniform/1``) as data, JSON and a short
description; the kernel checks their JSON (:func:`lnproofs.kernel.check_uniform`), and
:func:`check_answer` gives its verdict as a report."""

from __future__ import annotations

from dataclasses import dataclass, field

from .writers import format_fraction

__all__ = ["UniformResult", "check_answer"]


@dataclass(frozen=True)
class UniformResult:
    """A uniform-attention answer: ``feasible`` (a non-zero query with equal scores),
    ``infeasible`` (with a proof) or ``undecided`` (with the reason)."""

    status: str
    query_set: dict
    n_keys: int
    dim: int
    query: tuple | None = None  # exact rationals
    proof: dict | None = None
    reason: str | None = None
    extras: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        out = {
            "schema": "lnproofs.uniform/1",
            "status": self.status,
            "n_keys": self.n_keys,
            "dim": self.dim,
            "query_set": self.query_set,
            "query": None if self.query is None else [format_fraction(x) for x in self.query],
            "query_float": None if self.query is None else [float(x) for x in self.query],
            "proof": self.proof,
            "reason": self.reason,
        }
        out.update(self.extras)
        return out

    def describe(self) -> str:
        """The answer in a few lines: the status, the query (first entries) or the kind of proof."""
        kind = self.query_set.get("kind", "free")
        head = f"{self.n_keys} keys in R^{self.dim}, {kind} queries: "
        if self.status == "feasible" and self.query is None:
            return head + "a non-zero query gives every key the same score (exact search; query not stored)"
        if self.status == "feasible":
            shown = ", ".join(f"{float(x):.6g}" for x in self.query[:8]) + (", ..." if len(self.query) > 8 else "")
            text = head + f"a non-zero query gives every key the same score (checked exactly)\n  q = [{shown}]"
            if "u" in self.extras:
                text += "\n  realised by u with 1.u = 0 and ||u||^2 <= n (checked exactly)"
            return text
        if self.status == "infeasible":
            return (
                head + f"no non-zero query gives every key the same score ({self.proof.get('kind')}, checked exactly)"
            )
        return head + f"undecided ({self.reason})"


def check_answer(data, keys):
    """The kernel's verdict on a uniform-attention answer (its JSON) for ``keys``, as a
    :class:`~lnproofs.certificates.check.CheckReport` with one verdict."""
    import numpy as np

    from ..kernel import Verdict, check_uniform
    from .check import CheckReport

    keys = np.asarray(keys, dtype=np.float64)
    ok, message = check_uniform(keys, data)
    kind = (data.get("query_set") or {}).get("kind", "free")
    verdict = Verdict(-1, f"uniform attention {data.get('status')}", ok, message)
    return CheckReport(ok, (verdict,), keys.shape[0], keys.shape[1], f"uniform attention, {kind} queries")
