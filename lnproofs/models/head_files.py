"""``--head-files``: the evidence of a finished run regrouped per head, one file each.

``heads/layer{L}_head{H}.json`` (schema ``lnproofs.model-heads/1``) lists, for every text of
the run, that head's keys, its free and realisable certificates with their query sets
written out, its coverage and its causal records: everything :func:`head_file_certificates`
and :func:`head_file_checks` need, with no other file.  The files are made from the text
files (which stay the run's record), so they can be rebuilt at any time.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..kernel.errors import CertificateFormatError

__all__ = ["HEADS_SCHEMA", "write_head_files", "head_file_certificates", "head_file_checks"]

HEADS_SCHEMA = "lnproofs.model-heads/1"


def write_head_files(out_dir) -> list[Path]:
    """Write ``heads/layer{L}_head{H}.json`` for every head of the finished texts of ``out_dir``."""
    from ..certificates.writers import query_set_to_json
    from .corpus_heads import _write_json
    from .text_check import _heads, _keys, _load, _query_set

    out = Path(out_dir)
    per_head: dict[tuple, list] = {}
    for path in sorted((out / "texts").glob("text*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        params, arrays = _load(path, data)
        for h, free in _heads(data):
            keys = _keys(arrays, h)
            real = dict(h["realisable"])
            qs = _query_set(params, arrays, h, keys.shape[1])
            real["query_set"] = query_set_to_json(qs)
            entry = {"text": data["text_index"], "keys": keys.tolist(), "free": free, "realisable": real}
            causal = h.get("causal")
            if causal is not None:
                causal = dict(causal)
                if "same_as_head" in causal["free"]:
                    holder = next(o for o in data["heads"] if o["layer"] == h["layer"]
                                  and o["head"] == causal["free"]["same_as_head"])
                    causal["free"] = holder["causal"]["free"]
                entry["causal"] = causal
            per_head.setdefault((h["layer"], h["head"]), []).append(entry)
    (out / "heads").mkdir(exist_ok=True)
    written = []
    for (layer, head), texts in sorted(per_head.items()):
        path = out / "heads" / f"layer{layer}_head{head}.json"
        _write_json(path, {"schema": HEADS_SCHEMA, "layer": layer, "head": head, "texts": texts})
        written.append(path)
    return written


def head_file_certificates(path, data) -> list:
    """``(name, Certificate, keys)`` for every certificate of a head file."""
    from ..certificates.certificate import Certificate

    out = []
    try:
        for entry in data["texts"]:
            keys = np.asarray(entry["keys"], dtype=np.float64)
            out.append((f"text{entry['text']}/free", Certificate.from_json(entry["free"]), keys))
            if "coverage" not in entry["realisable"]:
                out.append((f"text{entry['text']}/realisable", Certificate.from_json(entry["realisable"]), keys))
    except (KeyError, TypeError, ValueError) as exc:
        raise CertificateFormatError(f"{path} is malformed ({exc!r})") from None
    return out


def head_file_checks(path, data) -> list:
    """``(name, CheckReport)`` for the coverage and the causal records of a head file (the
    per-position answers of rotary sets that do not cover stay in the text files)."""
    from ..kernel.querysets import query_set_from_json
    from .text_check import _report

    out = []
    try:
        for entry in data["texts"]:
            keys = np.asarray(entry["keys"], dtype=np.float64)
            real = entry["realisable"]
            qs = query_set_from_json(real["query_set"])
            name = f"text{entry['text']}"
            if "coverage" in real:
                from ..kernel.checker import Verdict
                from ..certificates.coverage import Coverage
                from ..kernel.querysets.coverage import check_coverage

                ok, message = check_coverage(qs, Coverage.from_json(real["coverage"]))
                out.append((f"{name}/coverage", _report([Verdict(-1, "coverage", ok, message or "")], len(keys),
                                                        keys.shape[1], "coverage of every direction")))
            causal = entry.get("causal")
            if not causal:
                continue
            from ..kernel.causal import check_causal
            from .text_causal import with_free_wins

            free_record = with_free_wins(causal["free"], entry["free"])
            out.append((f"{name}/causal/free", _report(check_causal(keys, free_record), len(keys), keys.shape[1],
                                                       "causal, free queries")))
            record = causal.get("realisable", {})
            if "positions" not in record and "same_as" not in record:
                out.append((f"{name}/causal/realisable", _report(check_causal(keys, record, qs), len(keys),
                                                                 keys.shape[1], f"causal, {qs.kind} queries")))
    except (KeyError, TypeError, ValueError) as exc:
        raise CertificateFormatError(f"{path} is malformed ({exc!r})") from None
    return out
