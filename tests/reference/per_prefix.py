"""The slow reference the model tests compare with: the per-prefix engine of earlier
versions of ``certify-model --text`` (one file per layer and head, every causal prefix
certified on its own; see :mod:`reference.decoder`).  It is kept beside the tests, not in
the package: the package's one road (:mod:`lnproofs.models.corpus_run`) must give the same
statuses key by key (``tests/test_models_reference.py``).

What it wrote, per layer and head:

For each layer ``l`` (one file ``layer{l}_outputs.json``):

- selectability of the full-width LayerNorm outputs with free queries;
- how far the LayerNorm outputs are from the ellipsoid surface (the effect of eps),
  from the ellipsoid equation ``sum_i ((y_i - beta_i) / gamma_i)^2 = n``.

For each head ``h`` of the layer (one file ``layer{l}_head{h}.json``):

- selectability of the head's keys with free queries;
- selectability with the queries the layer can produce (query set ``layernorm``:
  the gain and bias of the LayerNorm feeding the attention, the head's ``W_q``, ``b_q``);
- uniform-attention feasibility (a non-zero query giving every key the same score);
- exact duplicates among the keys and whether they come from the same token at the same
  position of different inputs (pooled inputs): those keys tie, they are not errors.

Every file holds the arrays it certifies (keys, LayerNorm outputs) as exact floats, so
it can be re-checked on its own (:func:`check_model_file`).  A summary table per layer
(``summary.csv``, ``summary.md``) and per head (``heads.csv``) is rebuilt from the files,
so an interrupted run resumed with ``resume=True`` ends with the same summary.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lnproofs.kernel import ModelError, OptionError
from lnproofs.models.certify_model import _csv_text, _markdown_rows, check_model_file, model_file_certificates

from .model_measures import ellipsoid_gaps, witness_margins

__all__ = [
    "HEAD_SCHEMA",
    "LAYER_SCHEMA",
    "ellipsoid_gaps",
    "duplicate_groups",
    "certify_head",
    "certify_layer_outputs",
    "certify_model",
    "summarize",
    "write_summary",
    "check_model_file",
    "model_file_certificates",
    "inputs_digest",
    "witness_margins",
    "ModelRun",
    "UNIFORM_CHOICES",
]

HEAD_SCHEMA = "lnproofs.model-head/1"
LAYER_SCHEMA = "lnproofs.model-layer/1"


def inputs_digest(inputs) -> str:
    """A short fingerprint of the token ids (resumed runs must use the same inputs)."""
    h = hashlib.sha256()
    for seq in inputs:
        h.update(np.asarray(seq, dtype=np.int64).tobytes())
        h.update(b"|")
    return h.hexdigest()[:16]


# ---- geometry ------------------------------------------------------------------------------
def duplicate_groups(rows) -> list[list[int]]:
    """Groups (size >= 2) of row indices whose float rows are bit-for-bit identical."""
    rows = np.ascontiguousarray(np.asarray(rows, dtype=np.float64))
    groups: dict[bytes, list[int]] = {}
    for index, row in enumerate(rows):
        groups.setdefault((row + 0.0).tobytes(), []).append(index)
    return [g for g in groups.values() if len(g) > 1]


def _tie_report(certificate_json: dict, groups: list[list[int]], sources: np.ndarray) -> dict:
    """Ties among keys, and how many come from identical (position, token) pairs."""
    status = {r["index"]: r["status"] for r in certificate_json["results"]}
    ties = [i for i, s in status.items() if s == "tie-only"]
    in_group = {i: g for g in groups for i in g}
    duplicated = [i for i in ties if i in in_group]
    same_token_position = [
        i
        for i in duplicated
        if any(j != i and sources[j, 1] == sources[i, 1] and sources[j, 2] == sources[i, 2] for j in in_group[i])
    ]
    return {
        "tie_only": len(ties),
        "tie_only_duplicates": len(duplicated),
        "tie_only_same_token_position": len(same_token_position),
        "tie_only_other": len(ties) - len(duplicated),
    }


# ---- engine calls --------------------------------------------------------------------------
def _certify(keys, query_set=None) -> dict:
    from lnproofs.propose.certification import certify

    return certify(keys, query_set=query_set).to_json()


def _uniform(keys, query_set=None) -> dict:
    from lnproofs.propose.uniform import uniform_attention

    return uniform_attention(keys, query_set=query_set).to_json()


def _smallest(margins: dict[int, float]) -> float | None:
    return min(margins.values()) if margins else None


UNIFORM_CHOICES = ("both", "free", "none")


def _uniform_pair(keys, query_set, uniform: str) -> dict:
    skipped = {"status": "skipped", "reason": f"not asked for (uniform={uniform!r})"}
    realisable = skipped
    if uniform == "both":
        kind = getattr(query_set, "kind", None)
        realisable = (
            _uniform(keys, query_set)
            if kind == "layernorm"
            else {
                "status": "skipped",
                "reason": f"uniform attention is decided for layernorm query sets only, not {kind or 'this layer'}",
            }
        )
    return {"free": _uniform(keys) if uniform in ("both", "free") else skipped, "layernorm": realisable}


def _skipped_certificate(keys, reason: str) -> dict:
    """The place of a realisable certificate that was not computed (counts every key undecided)."""
    n, d = np.asarray(keys).shape
    return {
        "status": "skipped",
        "reason": reason,
        "n_keys": n,
        "dim": d,
        "summary": {"selectable": 0, "tie-only": 0, "unselectable": 0, "not-realisable": 0, "undecided": n},
        "results": [],
    }


def certify_head(
    capture,
    head: int,
    *,
    folded: bool = False,
    uniform: str = "both",
    free_cache: dict | None = None,
    causal: bool = True,
) -> dict:
    """The per-head record (see the module docstring) for one :class:`LayerCapture`.

    Decoders (RMSNorm, RoPE, grouped queries, causal masks) are handled by
    :mod:`.decoder`; ``free_cache`` (a dict kept over the heads of one layer) shares the
    free answers of query heads that read the same key head.
    """
    from reference.decoder import causal_report, query_position, realisable_query_set, refuse_folded

    if folded:
        from lnproofs.models.folding import fold_capture_head

        refuse_folded(capture)
        fh = fold_capture_head(capture, head)
        keys, query_set, reason = fh.keys, fh.layernorm_query_set(), None
    else:
        keys = capture.rotated_keys(head)
        query_set, reason = realisable_query_set(capture, head)
    cache = {} if free_cache is None else free_cache
    key_head = capture.key_head(head)
    if ("pooled", key_head, folded) not in cache or folded:
        cache[("pooled", key_head, folded)] = _certify(keys)
    free = cache[("pooled", key_head, folded)]
    realisable = _certify(keys, query_set) if query_set is not None else _skipped_certificate(keys, reason)
    groups = duplicate_groups(keys)
    margins = {
        "free": witness_margins(free, keys),
        "layernorm": witness_margins(realisable, keys) if query_set is not None else {},
    }
    record = {
        "schema": HEAD_SCHEMA,
        "layer": capture.layer,
        "head": head,
        "folded": folded,
        "layernorm_module": capture.layernorm_module,
        "eps": capture.layernorm.eps,
        "norm": capture.norm_kind,
        "key_head": key_head,
        "rotary": bool(capture.rotary),
        "sources": capture.sources.tolist(),
        "keys": keys.tolist(),
        "free": free,
        "layernorm": realisable,
        "uniform": _uniform_pair(keys, query_set, uniform),
        "duplicates": groups,
        "ties": {
            "free": _tie_report(free, groups, capture.sources),
            "layernorm": _tie_report(realisable, groups, capture.sources),
        },
        "margins": {name: {str(i): m for i, m in sorted(v.items())} for name, v in margins.items()},
        "smallest_margin": {name: _smallest(v) for name, v in margins.items()},
    }
    if capture.rotary:
        record["query_position"] = query_position(capture)
    if causal and capture.causal and not folded:
        record["causal"] = causal_report(capture, head, keys, free_cache=cache)
    return record


def certify_layer_outputs(capture, *, uniform: str = "both") -> dict:
    """The per-layer record: LayerNorm outputs certified with free queries, and eps gaps."""
    from lnproofs.derive.numeric import ellipsoid

    ln = capture.layernorm
    outputs = _certify(capture.ln_out)
    groups = duplicate_groups(capture.ln_out)
    if capture.norm_kind == "rmsnorm":
        from reference.decoder import rms_gaps

        gaps = rms_gaps(capture.ln_out, capture.hidden_in, ln.gain, ln.eps)
    else:
        shape = ellipsoid(ln.gain, ln.bias)
        gaps = ellipsoid_gaps(capture.ln_out, capture.hidden_in, ln.gain, ln.bias, ln.eps)
        gaps.update(
            {
                "dimension": int(shape.dimension),
                "largest_semi_axis": float(shape.semi_axes.max()),
                "smallest_semi_axis": float(shape.semi_axes.min()),
            }
        )
    return {
        "schema": LAYER_SCHEMA,
        "layer": capture.layer,
        "layernorm_module": capture.layernorm_module,
        "layernorm": ln.to_json(),
        "sources": capture.sources.tolist(),
        "ln_outputs": capture.ln_out.tolist(),
        "certificate": outputs,
        "duplicates": groups,
        "ties": _tie_report(outputs, groups, capture.sources),
        "smallest_margin": _smallest(witness_margins(outputs, capture.ln_out)),
        "uniform": _uniform(capture.ln_out) if uniform != "none" else {"status": "skipped"},
        "ellipsoid": gaps,
    }


# ---- files -------------------------------------------------------------------------------
def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _finished(path: Path, digest: str, options: dict) -> bool:
    """True when ``path`` holds a complete record for the same inputs and options."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("inputs_digest") == digest and data.get("options") == options


@dataclass(frozen=True)
class ModelRun:
    """What :func:`certify_model` did: files written, files skipped (resumed), summary rows."""

    out_dir: Path
    written: tuple[Path, ...]
    skipped: tuple[Path, ...]
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
    folded: bool = False,
    uniform: str = "both",
    progress=None,
    causal: bool = True,
) -> ModelRun:
    """Certify ``layers`` x ``heads`` of ``loaded`` on token id sequences ``inputs`` (pooled).

    Files go to ``out_dir`` as they are finished; with ``resume=True`` files already there
    for the same inputs are kept.  ``folded``: certify the folded form (see
    :mod:`.folding`).  ``uniform``: uniform attention with free and layernorm queries
    (``"both"``), free only (``"free"``, faster for wide layers) or ``"none"``.
    ``progress(message)`` is called once per file.  ``causal``: for decoders, also certify
    every prefix of each input (see :mod:`.decoder`; ``T`` certifications per head).
    """
    from lnproofs.models.extract import capture_layers

    if uniform not in UNIFORM_CHOICES:
        raise OptionError(f"uniform={uniform!r} is not accepted; use one of {', '.join(UNIFORM_CHOICES)}")
    if folded and loaded.family.norm != "layernorm":
        raise OptionError(
            f"--fold folds a LayerNorm; this {loaded.family.name} model normalises with "
            f"{loaded.family.norm}: certify it without --fold"
        )
    out_dir = Path(out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ModelError(f"output folder {out_dir} cannot be created ({exc.strerror}); give a writable --out") from None
    layers = list(range(loaded.n_layers)) if layers is None else list(layers)
    heads = list(range(loaded.n_heads)) if heads is None else list(heads)
    for head in heads:
        if not 0 <= head < loaded.n_heads:
            raise ModelError(
                f"head {head} is out of range; the model has {loaded.n_heads} heads: "
                f"accepted 0..{loaded.n_heads - 1} or all"
            )
    digest = inputs_digest(inputs)
    options = {"folded": bool(folded), "uniform": uniform}
    if not causal:
        options["causal"] = False
    meta = {"model": loaded.describe(), "inputs_digest": digest, "n_inputs": len(inputs), "options": options}
    written, skipped = [], []
    for layer in layers:
        todo_heads = [
            h for h in heads if not (resume and _finished(out_dir / f"layer{layer}_head{h}.json", digest, options))
        ]
        layer_path = out_dir / f"layer{layer}_outputs.json"
        layer_done = resume and _finished(layer_path, digest, options)
        skipped += [out_dir / f"layer{layer}_head{h}.json" for h in heads if h not in todo_heads]
        if layer_done:
            skipped.append(layer_path)
        if not todo_heads and layer_done:
            continue
        capture = capture_layers(loaded, inputs, [layer])[layer]
        if not layer_done:
            _write_json(layer_path, {**certify_layer_outputs(capture, uniform=uniform), **meta})
            written.append(layer_path)
            if progress:
                progress(f"layer {layer}: LayerNorm outputs -> {layer_path.name}")
        free_cache: dict = {}
        for head in todo_heads:
            path = out_dir / f"layer{layer}_head{head}.json"
            _write_json(
                path,
                {
                    **certify_head(capture, head, folded=folded, uniform=uniform, free_cache=free_cache, causal=causal),
                    **meta,
                },
            )
            written.append(path)
            if progress:
                progress(f"layer {layer} head {head} -> {path.name}")
    layer_rows, head_rows = summarize(out_dir, layers=layers, heads=heads, digest=digest)
    write_summary(out_dir, layer_rows, head_rows)
    return ModelRun(out_dir, tuple(written), tuple(skipped), tuple(layer_rows), tuple(head_rows))


# ---- summary -------------------------------------------------------------------------------
def _fraction(count: int, total: int):
    return round(count / total, 6) if total else None


def _min(values):
    values = [v for v in values if v is not None]
    return min(values) if values else None


def _count_feasible(statuses):
    """Heads with a feasible uniform query; None when the question was not asked."""
    statuses = list(statuses)
    if statuses and all(s == "skipped" for s in statuses):
        return None
    return sum(s == "feasible" for s in statuses)


def summarize(out_dir, *, layers, heads, digest=None) -> tuple[list[dict], list[dict]]:
    """Per-layer and per-head rows, read back from the files in ``out_dir``."""
    out_dir = Path(out_dir)
    layer_rows, head_rows = [], []
    for layer in layers:
        heads_data = []
        for head in heads:
            data = json.loads((out_dir / f"layer{layer}_head{head}.json").read_text(encoding="utf-8"))
            if digest is not None and data.get("inputs_digest") != digest:
                raise ModelError(
                    f"{out_dir}/layer{layer}_head{head}.json was made from other inputs; remove it or use another --out"
                )
            heads_data.append(data)
            free, ln = data["free"]["summary"], data["layernorm"]["summary"]
            head_rows.append(
                {
                    "layer": layer,
                    "head": head,
                    "keys": data["free"]["n_keys"],
                    "dim": data["free"]["dim"],
                    "free_selectable": free["selectable"],
                    "free_tie_only": free["tie-only"],
                    "free_unselectable": free["unselectable"],
                    "free_undecided": free["undecided"],
                    "ln_selectable": ln["selectable"],
                    "ln_not_realisable": ln.get("not-realisable", 0),
                    "ln_undecided": ln["undecided"],
                    "uniform_free": data["uniform"]["free"].get("status"),
                    "uniform_layernorm": data["uniform"]["layernorm"].get("status"),
                    "min_margin_free": data["smallest_margin"]["free"],
                    "min_margin_layernorm": data["smallest_margin"]["layernorm"],
                    "ties_same_token_position": data["ties"]["free"]["tie_only_same_token_position"],
                }
            )
        outputs = json.loads((out_dir / f"layer{layer}_outputs.json").read_text(encoding="utf-8"))
        rows = [r for r in head_rows if r["layer"] == layer]
        total = sum(r["keys"] for r in rows)
        out_summary = outputs["certificate"]["summary"]
        layer_rows.append(
            {
                "layer": layer,
                "heads": len(rows),
                "keys_per_head": rows[0]["keys"] if rows else 0,
                "free_selectable": _fraction(sum(r["free_selectable"] for r in rows), total),
                "free_tie_only": _fraction(sum(r["free_tie_only"] for r in rows), total),
                "free_unselectable": _fraction(sum(r["free_unselectable"] for r in rows), total),
                "free_undecided": _fraction(sum(r["free_undecided"] for r in rows), total),
                "ln_selectable": _fraction(sum(r["ln_selectable"] for r in rows), total),
                "ln_not_realisable": _fraction(sum(r["ln_not_realisable"] for r in rows), total),
                "ln_undecided": _fraction(sum(r["ln_undecided"] for r in rows), total),
                "outputs_selectable": _fraction(out_summary["selectable"], outputs["certificate"]["n_keys"]),
                "outputs_uniform": outputs["uniform"].get("status"),
                "uniform_free_heads": _count_feasible(r["uniform_free"] for r in rows),
                "uniform_layernorm_heads": _count_feasible(r["uniform_layernorm"] for r in rows),
                "min_margin_free": _min(r["min_margin_free"] for r in rows),
                "min_margin_layernorm": _min(r["min_margin_layernorm"] for r in rows),
                "min_margin_outputs": outputs["smallest_margin"],
                "ties_same_token_position": sum(r["ties_same_token_position"] for r in rows),
                "outputs_ties_same_token_position": outputs["ties"]["tie_only_same_token_position"],
                "max_ellipsoid_gap": outputs["ellipsoid"]["max_gap"],
            }
        )
    return layer_rows, head_rows


def write_summary(out_dir, layer_rows: list[dict], head_rows: list[dict]) -> tuple[Path, Path, Path]:
    """``summary.csv`` and ``summary.md`` (per layer) and ``heads.csv`` (per head)."""
    out_dir = Path(out_dir)
    paths = out_dir / "summary.csv", out_dir / "summary.md", out_dir / "heads.csv"
    paths[0].write_text(_csv_text(layer_rows), encoding="utf-8")
    paths[2].write_text(_csv_text(head_rows), encoding="utf-8")
    lines = [
        "# Certified selectability per layer",
        "",
        "Fractions are over all keys of all chosen heads of the layer.  `free`: any query; "
        "`ln`: queries the layer's LayerNorm and W_q can produce (`not_realisable`: no such query makes "
        "the key win, by an exactly checked dual certificate); `outputs`: the full-width "
        "LayerNorm outputs with free queries.  Margins: the smallest (q.k_i - max_j q.k_j)/|q| over "
        "the witnesses of selectable keys (informative floats; statuses are proved exactly).  `uniform`: heads with a non-zero query giving every "
        "key the same score.  Ties from identical tokens at identical positions appear when inputs "
        "are pooled.",
        "",
    ]
    lines += _markdown_rows(layer_rows)
    paths[1].write_text("\n".join(lines) + "\n", encoding="utf-8")
    return paths
