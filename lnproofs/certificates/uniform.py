"""Uniform-attention answers (schema ``lnproofs.uniform/1``) as data, JSON and a short
description; the kernel checks their JSON (:func:`lnproofs.kernel.uniform_check.check_uniform`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .writers import format_fraction

__all__ = ["UniformResult"]


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
