"""Certify every chosen layer and head of a model on a few inputs, and read back any file a
``certify-model`` run writes.

:func:`certify_model` is the Python form of ``certify-model --text/--tokens``: the inputs
are a corpus of one or a few texts and go through the same road as ``--corpus``
(:func:`lnproofs.models.corpus_run.certify_corpus`, one per-head code for every family);
it adds the per-layer summary (:func:`write_summary`: ``summary.csv`` and ``summary.md``,
columns named ``free_*``, ``realisable_*`` and ``outputs_*``, the norm kind stated once).

:func:`model_file_certificates` and :func:`check_model_file` read every schema a run
writes (text files, pooled files, and the per-head and per-layer files of earlier
versions), so ``lnproofs check`` needs no KEYS argument for them.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..certificates.writes import write_text
from ..kernel import ModelError, OptionError

__all__ = [
    "HEAD_SCHEMA",
    "LAYER_SCHEMA",
    "UNIFORM_CHOICES",
    "ModelRun",
    "certify_model",
    "summarize",
    "write_summary",
    "model_file_certificates",
    "model_file_checks",
    "check_model_file",
]

#: schemas of the per-head and per-layer files of earlier versions (still read and checked)
HEAD_SCHEMA = "lnproofs.model-head/1"
LAYER_SCHEMA = "lnproofs.model-layer/1"
UNIFORM_CHOICES = ("both", "free", "none")


@dataclass(frozen=True)
class ModelRun:
    """What :func:`certify_model` did: texts certified and kept (resumed), summary rows."""

    out_dir: Path
    certified: int
    kept: int
    layer_rows: tuple[dict, ...]
    head_rows: tuple[dict, ...]


def certify_model(
    loaded,
    inputs,
    out_dir,
    *,
    layers=None,
    heads=None,
    resume: bool = False,
    uniform: str = "both",
    progress: bool = False,
    causal: bool = True,
    texts=None,
    tokenizer=None,
    pool: bool = False,
    warn=None,
    folded: bool = False,
    head_files: bool = False,
) -> ModelRun:
    """Certify ``layers`` x ``heads`` of ``loaded`` on token id sequences ``inputs`` (one text
    each; ``texts`` their strings when known) into ``out_dir``, through the corpus road.
    ``uniform``: uniform attention with free and realisable queries (``"both"``), free only
    or ``"none"``; ``causal``: the causal answers of decoders; ``pool``: the keys of all
    inputs also certified together (:mod:`.corpus_pool`); ``folded``: the folded form of
    LayerNorm layers (same statuses); ``head_files``: also one file per head
    (:mod:`.head_files`)."""
    from ..certificates.writes import run_lock
    from .corpus_run import certify_corpus

    if uniform not in UNIFORM_CHOICES:
        raise OptionError(f"uniform={uniform!r} is not accepted; use one of {', '.join(UNIFORM_CHOICES)}")
    texts = [None] * len(inputs) if texts is None else list(texts)
    corpus = [(text, np.asarray(ids, dtype=np.int64)) for text, ids in zip(texts, inputs)]
    with run_lock(out_dir, None):  # a second run on this folder is refused meanwhile
        result = certify_corpus(
            loaded,
            tokenizer,
            corpus,
            out_dir,
            layers=layers,
            heads=heads,
            resume=resume,
            uniform=uniform,
            progress=progress,
            warn=warn,
            causal=causal,
            pool=pool,
            fold=folded,
        )
        layer_rows, head_rows = summarize(out_dir)
        write_summary(out_dir, layer_rows, norm=loaded.family.norm)
        if head_files:
            from .head_files import write_head_files

            write_head_files(out_dir)
        return ModelRun(Path(out_dir), result["certified"], result["kept"], tuple(layer_rows), tuple(head_rows))


# ---- summary -------------------------------------------------------------------------------
def summarize(out_dir) -> tuple[list[dict], list[dict]]:
    """Per-layer and per-head rows from ``summary_heads.csv`` and the table of a run."""
    out = Path(out_dir)
    path = out / "summary_heads.csv"
    head_rows = list(csv.DictReader(path.open(encoding="utf-8"))) if path.exists() else []
    outputs = _outputs_statuses(out / "table.parquet")
    layer_rows = []
    for layer in sorted({int(r["layer"]) for r in head_rows}):
        rows = [r for r in head_rows if int(r["layer"]) == layer]
        total = sum(int(r["keys"]) for r in rows)

        def share(column, rows=rows, total=total):
            return round(sum(int(r.get(column) or 0) for r in rows) / total, 6) if total else None

        out_total = sum(outputs.get(layer, {}).values())
        out_selectable = outputs.get(layer, {}).get("selectable", 0)
        layer_rows.append(
            {
                "layer": layer,
                "heads": len(rows),
                "keys": total,
                "free_selectable": share("free_selectable"),
                "free_tie_only": share("free_tie-only"),
                "free_unselectable": share("free_unselectable"),
                "free_undecided": share("free_undecided"),
                "realisable_selectable": share("realisable_selectable"),
                "realisable_not_realisable": share("realisable_not-realisable"),
                "realisable_undecided": share("realisable_undecided"),
                "outputs_selectable": round(out_selectable / out_total, 6) if out_total else None,
            }
        )
    return layer_rows, head_rows


def _outputs_statuses(table_path) -> dict[int, dict]:
    """layer -> status -> how many norm outputs (text x position) have it, from the table's
    rows of one head per layer (every head of a layer repeats its outputs' statuses)."""
    if not table_path.exists():
        return {}
    from .table import read_rows, status_counts

    table = read_rows(table_path, columns=["layer", "head", "status_outputs"])
    counted = status_counts(table, "status_outputs")  # counted in numpy: pyarrow's group_by imports pandas
    first: dict = {}
    for layer, head, _, _ in counted:
        first[layer] = min(head, first.get(layer, head))
    counts: dict[int, dict] = {}
    for layer, head, status, n in counted:
        if head == first[layer]:
            counts.setdefault(int(layer), {})[status] = n
    return counts


def _csv_text(rows: list[dict]) -> str:
    buffer = io.StringIO()
    if rows:
        writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return buffer.getvalue()


def _markdown_rows(rows) -> list[str]:
    """The lines of a Markdown table of ``rows`` (dicts with the same keys; none: no lines)."""
    if not rows:
        return []
    names = list(rows[0])
    return [
        "| " + " | ".join(names) + " |",
        "|" + "---|" * len(names),
        *("| " + " | ".join(_cell(row[k]) for k in names) + " |" for row in rows),
    ]


def _cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


NORM_NAMES = {"layernorm": "LayerNorm", "rmsnorm": "RMSNorm"}


def write_summary(out_dir, layer_rows: list[dict], *, norm: str = "layernorm") -> tuple[Path, Path]:
    """``summary.csv`` and ``summary.md`` (one row per layer)."""
    out_dir = Path(out_dir)
    paths = out_dir / "summary.csv", out_dir / "summary.md"
    write_text(paths[0], _csv_text(layer_rows))
    name = NORM_NAMES.get(norm, norm)
    lines = [
        "# Certified selectability per layer",
        "",
        f"Norm feeding attention: {name}.  Fractions are over all keys of all chosen heads of the layer and all "
        "texts.  `free`: any query; `realisable`: the queries the layer's "
        f"{name} and W_q can produce (`not_realisable`: no such query makes the key win, by an exactly checked "
        "certificate); `outputs`: the full-width norm outputs with free queries.  Per-key answers, margins, "
        "uniform attention and the causal answers of decoders are in `table.csv`.",
        "",
    ]
    lines += _markdown_rows(layer_rows)
    write_text(paths[1], "\n".join(lines) + "\n")
    return paths


# ---- reading files back ----------------------------------------------------------------------
def _read(path) -> dict:
    from ..certificates.limits import read_json_file

    data = read_json_file(path)  # a regular file within the limits, as every JSON file lnproofs reads
    return data if isinstance(data, dict) else {}


def model_file_certificates(path) -> list:
    """The certificates a ``certify-model`` file holds, each with the arrays it is about: a
    list of ``(name, Certificate, keys)``."""
    from ..certificates.certificate import Certificate
    from ..io.exact import exact_json_array
    from ..kernel import CertificateFormatError
    from .corpus_pool import POOL_SCHEMA, pool_file_certificates
    from .head_files import HEADS_SCHEMA, head_file_certificates
    from .text_check import text_file_certificates
    from .text_heads import TEXT_SCHEMAS

    data = _read(path)
    schema = data.get("schema")
    if schema in TEXT_SCHEMAS:
        return text_file_certificates(path, data)
    if schema == HEADS_SCHEMA:
        return head_file_certificates(path, data)
    if schema == POOL_SCHEMA:
        return pool_file_certificates(path, data)
    if schema not in (HEAD_SCHEMA, LAYER_SCHEMA):
        raise ModelError(
            f"{path} is not a certify-model file (schema {schema!r}); "
            f"accepted schemas: {', '.join(TEXT_SCHEMAS)}, {HEADS_SCHEMA}, {POOL_SCHEMA}, "
            f"{HEAD_SCHEMA}, {LAYER_SCHEMA}"
        )
    fields = (("certificate", "ln_outputs"),) if schema == LAYER_SCHEMA else (("free", "keys"), ("layernorm", "keys"))
    out = []
    for name, array in fields:
        if name not in data or array not in data:
            raise CertificateFormatError(f"{path} ({schema}) has no field {name if name not in data else array!r}")
        if isinstance(data[name], dict) and data[name].get("status") == "skipped":
            continue
        out.append((name, Certificate.from_json(data[name]), exact_json_array(data[array], f"{path} {array}")))
    if schema == HEAD_SCHEMA:
        out += _prefix_certificates(data, exact_json_array(data["keys"], f"{path} keys"))
    return out


def _prefix_certificates(data: dict, keys: np.ndarray) -> list:
    """The per-prefix certificates of an earlier version's head file."""
    from ..certificates.certificate import Certificate
    from ..kernel import CertificateFormatError

    out = []
    try:
        for entry in (data.get("causal") or {}).get("inputs", []):
            seq = keys[np.asarray(entry["rows"], dtype=np.int64)]
            for part in ("free", "realisable"):
                for t, cert in sorted(entry[part].get("certificates", {}).items(), key=lambda kv: int(kv[0])):
                    out.append(
                        (f"causal/input{entry['input']}/{part}/t{t}", Certificate.from_json(cert), seq[: int(t) + 1])
                    )
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise CertificateFormatError(f"the causal section of the file is malformed ({exc})") from None
    return out


def model_file_checks(path) -> list:
    """``(name, CheckReport)`` for the evidence of a file that is not a certificate (coverage,
    causal records); empty for files without any."""
    from .corpus_pool import POOL_SCHEMA, pool_file_checks
    from .head_files import HEADS_SCHEMA, head_file_checks
    from .text_check import text_file_checks
    from .text_heads import TEXT_SCHEMAS

    data = _read(path)
    checks = {
        HEADS_SCHEMA: head_file_checks,
        POOL_SCHEMA: pool_file_checks,
        **{schema: text_file_checks for schema in TEXT_SCHEMAS},
    }
    return checks[data["schema"]](path, data) if data.get("schema") in checks else []


def check_model_file(path) -> dict:
    """Re-verify everything a certify-model file holds exactly, against the arrays it is about;
    returns name -> :class:`~lnproofs.certificates.check.CheckReport`."""
    from ..certificates.check import check_certificate

    reports = {name: check_certificate(cert, keys) for name, cert, keys in model_file_certificates(path)}
    reports.update(dict(model_file_checks(path)))
    return reports
