"""Causal records (``lnproofs.causal/1``) for people: the kernel's verdict per key, as a report."""

from __future__ import annotations

from ..kernel import CAUSAL_SCHEMA as SCHEMA
from ..kernel import ExactKeys, check_causal, record_query_set
from .check import CheckReport

__all__ = ["SCHEMA", "check_record", "describe_stops"]


def check_record(record: dict, keys, query_set=None) -> CheckReport:
    """The kernel's verdict on every key of a causal record, as a :class:`CheckReport`."""
    ek = ExactKeys.of(keys)
    verdicts = check_causal(ek, record, query_set)
    qs = record_query_set(record, query_set)
    kind = f"causal prefixes, {qs.kind} queries"
    return CheckReport(all(v.ok for v in verdicts), tuple(verdicts), ek.n, ek.dim, kind)


def describe_stops(report: CheckReport) -> str:
    """One line: how many keys stop, win to the end, or are undecided (from the verdicts' claims)."""
    claims = [v.status for v in report.verdicts]
    stopping = sum(c.startswith("stops at") for c in claims)
    return (
        f"{stopping} keys stop winning at some position, {claims.count('wins to the end')} win at every "
        f"position, {claims.count('undecided')} undecided"
    )
