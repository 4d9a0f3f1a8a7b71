"""One check of one head's evidence, for every file kind ``certify-model`` writes.

A text file (``texts/textNNNNN.json``), a head file (``heads/layer{L}_head{H}.json``) and a
pooled file (``pooled/layer{L}_head{H}.json``) hold the same evidence about a set of keys
of one head: the free certificate, the realisable certificate (or the coverage claim that
replaces it), and for decoders the causal records, with per-position realisable answers
for rotary sets that do not cover.  Each reader turns its file into :class:`HeadEvidence`
entries; :func:`evidence_certificates` and :func:`evidence_checks` are the only code that
says what is checked, so the kinds cannot diverge.

The query sets come from a :class:`SetSource`: the head's position-free set and, for rotary
sets, the model's cos/sin table of the text (one row per position), so the set of any
query position is rebuilt exactly, and the rotation of every position can be tested.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..certificates.writers import query_set_to_json

__all__ = ["SetSource", "HeadEvidence", "evidence_certificates", "evidence_checks", "report"]


@dataclass(frozen=True, eq=False)
class SetSource:
    """The query sets of one head: ``base`` (position-free) and, for rotary kinds, the table
    ``cos``/``sin`` (rows per position) in ``style``."""

    base: object
    style: str = "half"
    cos: np.ndarray | None = None
    sin: np.ndarray | None = None

    @property
    def rotary(self) -> bool:
        return self.cos is not None and "rotation" in getattr(self.base, "FIELDS", ())

    def rotation(self, position: int):
        from ..kernel import Rotation

        return Rotation(
            np.asarray(self.cos[position], dtype=np.float64),
            np.asarray(self.sin[position], dtype=np.float64),
            self.style,
            int(position),
        )

    def at(self, position: int | None = None):
        """The query set at ``position`` (the base set without rotary positions or without one)."""
        if position is None or not self.rotary:
            return self.base
        return replace(self.base, rotation=self.rotation(position))


@dataclass(frozen=True, eq=False)
class HeadEvidence:
    """One head's evidence about ``keys``, as any file holds it (every reference resolved).

    ``free``: the free certificate (JSON); ``realisable``: the realisable certificate, whose
    ``query_set`` names the set (and, with rotary positions, its ``position``), or with
    ``coverage`` the claim that replaces it; ``causal``: the causal records (``free`` and
    ``realisable``) or None; ``owns_free``: False where another head of the same file holds
    (and gets checked for) the free certificate and free causal record of the key head."""

    name: str
    layer: int
    head: int
    keys: np.ndarray
    free: dict
    realisable: dict
    sets: SetSource
    causal: dict | None = None
    owns_free: bool = True

    @property
    def position(self):
        return self.realisable.get("query_set", {}).get("position")


def report(verdicts, n, d, kind):
    """A :class:`~lnproofs.certificates.check.CheckReport` of ``verdicts``."""
    from ..certificates.check import CheckReport

    return CheckReport(all(v.ok for v in verdicts), tuple(verdicts), n, d, kind)


def evidence_certificates(ev: HeadEvidence) -> list:
    """``(name, Certificate, keys)`` for every certificate of ``ev`` (query sets put back)."""
    from ..certificates.certificate import Certificate
    from .corpus_heads import _certificate

    keys, d = ev.keys, ev.keys.shape[1]
    out = []
    if ev.owns_free:
        out.append((f"{ev.name}/free", Certificate.from_json(ev.free), keys))
    if "coverage" not in ev.realisable:
        qs = ev.sets.at(ev.position)
        out.append(
            (f"{ev.name}/realisable", Certificate.from_json(dict(ev.realisable, query_set=query_set_to_json(qs))), keys)
        )
    positions = ((ev.causal or {}).get("realisable") or {}).get("positions")
    for t, results in sorted((positions or {}).items(), key=lambda kv: int(kv[0])):
        t = int(t)
        if t == len(keys) - 1:
            continue  # the realisable certificate above
        done = {r["index"] for r in results}
        filled = list(results) + [
            {
                "index": j,
                "status": "undecided",
                "verified": "none",
                "witness": None,
                "combination": None,
                "margin": None,
                "reason": "stopped by the free record",
            }
            for j in range(t + 1)
            if j not in done
        ]
        cert = _certificate(t + 1, d, query_set_to_json(ev.sets.at(t)), sorted(filled, key=lambda r: r["index"]))
        out.append((f"{ev.name}/causal/realisable/t{t}", Certificate.from_json(cert), keys[: t + 1]))
    return out


def evidence_checks(ev: HeadEvidence) -> list:
    """``(name, CheckReport)`` for the coverage and the causal records of ``ev``."""
    from ..kernel import Verdict

    keys, T, d = ev.keys, len(ev.keys), ev.keys.shape[1]
    out = []
    real = ev.realisable
    if "coverage" in real:  # the kernel's check: the set at every query position the answers use
        from ..kernel import ExactQueryMap, check_coverage

        qs = ev.sets.at(ev.position)
        rotations = [ev.sets.rotation(t) for t in range(T - 1)] if ev.causal and ev.sets.rotary else ()
        ok, message = check_coverage(qs, real["coverage"], d, ExactQueryMap(qs), rotations)
        verdicts = [Verdict(T - 1, "coverage", ok, message or "")]
        out.append((f"{ev.name}/coverage", report(verdicts, T, d, "coverage of every direction")))
    if not ev.causal:
        return out
    from ..kernel import check_causal
    from .text_causal import with_free_wins

    if ev.owns_free:
        verdicts = check_causal(keys, with_free_wins(ev.causal["free"], ev.free))
        out.append((f"{ev.name}/causal/free", report(verdicts, T, d, "causal, free queries")))
    record = ev.causal.get("realisable", {})
    if "positions" not in record and "same_as" not in record:
        qs = ev.sets.at(ev.position)
        out.append(
            (f"{ev.name}/causal/realisable", report(check_causal(keys, record, qs), T, d, f"causal, {qs.kind} queries"))
        )
    return out
