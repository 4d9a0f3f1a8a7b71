"""``--head-files``: the evidence of a finished run regrouped per head, one file each.

``heads/layer{L}_head{H}.json`` (schema ``lnproofs.model-heads/2``) holds the head's query
set without rotary positions (``query_set``) and, for every text of the run, that head's
keys, its free and realisable certificates, its coverage, its causal records and, with
rotary positions, the text's cos/sin table: everything the check needs, with no other
file.  The files are written from the text files' :class:`~.evidence.HeadEvidence` (which
stay the run's record, so the files can be rebuilt at any time), and read back into the
same entries: a head file is checked by the code that checks a text file
(:mod:`.evidence`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..certificates.writers import query_set_to_json
from ..certificates.writes import folder_entry
from ..kernel import CertificateFormatError
from .evidence import HeadEvidence, SetSource, evidence_certificates, evidence_checks

__all__ = ["HEADS_SCHEMA", "write_head_files", "head_evidence", "head_file_certificates", "head_file_checks"]

HEADS_SCHEMA = "lnproofs.model-heads/2"


def write_head_files(out_dir) -> list[Path]:
    """Write ``heads/layer{L}_head{H}.json`` for every head of the finished texts of ``out_dir``."""
    from ..certificates.limits import read_json_file
    from .corpus_heads import _write_json
    from .text_check import run_params, text_evidence

    out = Path(out_dir)
    per_head: dict[tuple, dict] = {}
    params = None
    for path in sorted((out / "texts").glob("text*.json")):
        data = read_json_file(path)
        params = run_params(path) if params is None else params
        for ev in text_evidence(path, data, params):
            entry = {"text": data["text_index"], "keys": ev.keys.tolist(), "free": ev.free, "realisable": ev.realisable}
            if ev.causal is not None:
                entry["causal"] = ev.causal
            if ev.sets.rotary:
                entry["rotary"] = {"style": ev.sets.style, "cos": ev.sets.cos.tolist(), "sin": ev.sets.sin.tolist()}
            head = per_head.setdefault(
                (ev.layer, ev.head),
                {
                    "schema": HEADS_SCHEMA,
                    "layer": ev.layer,
                    "head": ev.head,
                    "query_set": query_set_to_json(ev.sets.base),
                    "texts": [],
                },
            )
            head["texts"].append(entry)
    folder_entry(out, "heads", folder=True)
    written = []
    for (layer, head), record in sorted(per_head.items()):
        path = out / "heads" / f"layer{layer}_head{head}.json"
        _write_json(path, record)
        written.append(path)
    return written


def head_evidence(path, data) -> list[HeadEvidence]:
    """Every text of a head file as :class:`~.evidence.HeadEvidence` (name ``text{N}``)."""
    from ..kernel import query_set_from_json

    try:
        base = query_set_from_json(data["query_set"])
        layer, head = int(data["layer"]), int(data["head"])
        out = []
        for entry in data["texts"]:
            rotary = entry.get("rotary") or {}
            cos, sin = (np.asarray(rotary[k], dtype=np.float64) for k in ("cos", "sin")) if rotary else (None, None)
            sets = SetSource(base, str(rotary.get("style", "half")), cos, sin)
            out.append(
                HeadEvidence(
                    f"text{entry['text']}",
                    layer,
                    head,
                    np.asarray(entry["keys"], dtype=np.float64),
                    entry["free"],
                    entry["realisable"],
                    sets,
                    entry.get("causal"),
                )
            )
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise CertificateFormatError(f"{path} is malformed ({exc!r})") from None
    return out


def _each(path, data, what) -> list:
    try:
        return [item for ev in head_evidence(path, data) for item in what(ev)]
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise CertificateFormatError(f"{path} is malformed ({exc!r})") from None


def head_file_certificates(path, data) -> list:
    """``(name, Certificate, keys)`` for every certificate of a head file."""
    return _each(path, data, evidence_certificates)


def head_file_checks(path, data) -> list:
    """``(name, CheckReport)`` for the coverage and the causal records of a head file."""
    return _each(path, data, evidence_checks)
