"""Uniform-attention answers as people read them: the kernel's
:class:`lnproofs.kernel.uniform_check.UniformResult` (schema and JSON; its check is
:func:`lnproofs.kernel.uniform_check.check_uniform`) with a short description."""

from __future__ import annotations

from ..kernel import uniform_check

__all__ = ["UniformResult"]


class UniformResult(uniform_check.UniformResult):
    """A uniform-attention answer: ``feasible`` (a non-zero query with equal scores),
    ``infeasible`` (with a proof) or ``undecided`` (with the reason)."""

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
            return head + f"no non-zero query gives every key the same score ({self.proof.get('kind')}, checked exactly)"
        return head + f"undecided ({self.reason})"
