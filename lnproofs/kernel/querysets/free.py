"""Free queries: every q in R^d is allowed (the query set of the plain argmax question).

Certificates are made by :mod:`lnproofs.propose.certification`; they are checked here with the exact
primitives of :mod:`lnproofs.kernel.checker`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..checker import ExactKeys, Verdict, check_combination, check_witnesses
from ..errors import CertificateFormatError

__all__ = ["KIND", "FreeQueries", "QUERY_SET", "check", "check_all"]


KIND = "free"


@dataclass(frozen=True)
class FreeQueries:
    """All of R^d."""

    kind: str = KIND

    def to_json(self) -> dict:
        return {"kind": KIND}

    @classmethod
    def from_json(cls, data) -> "FreeQueries":
        if not isinstance(data, dict) or data.get("kind") != KIND:
            raise CertificateFormatError("query_set must be {\"kind\": \"free\"} for free queries")
        extra = sorted(set(data) - {"kind"})
        if extra:
            raise CertificateFormatError(f"query_set field {extra[0]!r} is not used by free queries; remove it")
        return cls()


QUERY_SET = FreeQueries


def check(keys, query_set, result) -> Verdict:
    return check_all(keys, query_set, [result])[0]


def check_all(keys, query_set, results) -> list[Verdict]:
    """Exact verdicts for many results at once (witness inequalities in bulk)."""
    ek = ExactKeys.of(keys)
    messages: dict[int, str | None] = {}
    strict_items, tie_items, strict_pos, tie_pos = [], [], [], []
    for pos, r in enumerate(results):
        status = r.status
        if status == "undecided":
            messages[pos] = None
        elif status == "not-realisable":
            messages[pos] = f"key {r.index}: 'not-realisable' is not a status for free queries"
        elif status == "selectable" or status == "tie-only":
            if r.witness is None or len(r.witness) != ek.dim:
                got = "none" if r.witness is None else f"{len(r.witness)} entries"
                messages[pos] = f"key {r.index}: a {status} claim needs a witness query with {ek.dim} entries (got {got})"
                continue
            if status == "tie-only":
                bad = check_combination(ek, r.index, r.combination, strict=False)
                if bad:
                    messages[pos] = bad
                    continue
                tie_items.append((r.index, r.witness))
                tie_pos.append(pos)
            else:
                strict_items.append((r.index, r.witness))
                strict_pos.append(pos)
        else:  # unselectable
            messages[pos] = check_combination(ek, r.index, r.combination, strict=True)
    for pos, msg in zip(strict_pos, check_witnesses(ek, strict_items, mode="strict")):
        messages[pos] = msg
    for pos, msg in zip(tie_pos, check_witnesses(ek, tie_items, mode="tie")):
        messages[pos] = msg
    return [Verdict(r.index, r.status, messages[pos] is None, messages[pos] or "") for pos, r in enumerate(results)]
