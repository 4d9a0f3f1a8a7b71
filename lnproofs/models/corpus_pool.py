"""``certify-model --pool``: which keys can win once the keys of every text are pooled, per
layer and head, under free queries and under the head's realisable queries, for every
family, through the text road's per-head sets and certificates
(:class:`~lnproofs.models.head_sets.HeadSets`,
:func:`~lnproofs.models.text_heads.head_certificates`).

A pooled key set is one attention over the keys of all texts: each key as its text's run
stored it (with rotary positions, rotated by its own position), every query seeing every
key.  Free queries are the same at every position.  Realisable queries: the head's set; with
rotary positions the set at the last position of the longest text ``P`` (every pooled key
is at a position ``<= P``), whose rotation comes from that text's table.  Causal answers
stay per text (a query of one text never sees another text's keys); a pooled file holds none.

A key that is ``unselectable`` among the keys of its own text lies in the relative interior
of their hull: whatever the query, a key of its text that can win (a *candidate*: any other
status) scores at least as much, so no pooled query makes it win, freely or realisably.  When
its text's keys span R^d affinely (exact rank), that interior is inside the pooled hull, and
its text's certificate shows it ``unselectable`` in the pool too; otherwise it is certified
with the candidates (it may tie in the pool).  The candidates of every text are certified
together, one free and one realisable certificate per head over the same keys; the
per-text statuses settle every other key.

Files (in ``OUT/pooled/``): ``layer{L}_head{H}.json`` (schema :data:`POOL_SCHEMA`:
``members`` lists the ``[text, position]`` of each candidate in the order of the
certificates' keys, ``free`` and ``realisable`` certificates, the realisable one with its
coverage claim when the set covers every direction), the candidates' keys (and the
longest text's rotary table) in ``layer{L}_kv{G}.npz`` of the key head ``G``;
``OUT/pooled.parquet`` and ``pooled.csv``: one row per (text, layer, head, position) with the
pooled statuses (``pooled_free``, ``pooled_realisable``; ``by_text_*`` says the per-text
certificate decided it).  A pooled file is checked by the code that checks a text file
(:mod:`.evidence`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..certificates.writes import folder_entry, replacing, write_arrays
from ..kernel import CertificateFormatError, LayerNormQuerySet
from .evidence import HeadEvidence, evidence_certificates, evidence_checks

__all__ = ["POOL_SCHEMA", "POOL_COLUMNS", "pool_corpus", "pool_evidence", "pool_file_certificates", "pool_file_checks"]

POOL_SCHEMA = "lnproofs.model-pool/2"
POOL_COLUMNS = (
    "text",
    "layer",
    "head",
    "position",
    "token",
    "pooled_free",
    "pooled_realisable",
    "by_text_free",
    "by_text_realisable",
)
_READ = ["text", "layer", "head", "position", "token", "status_free", "status_realisable"]


def _text_parts(out: Path) -> list[tuple[Path, Path]]:
    parts = []
    for rows in sorted((out / "rows").glob("text*.parquet")):
        arrays = out / "texts" / (rows.stem + ".npz")
        if (out / "texts" / (rows.stem + ".json")).exists() and arrays.exists():
            parts.append((rows, arrays))
    return parts


def _spans_the_space(keys) -> bool:
    """Whether the affine hull of one text's keys is all of R^d (exact rank): then a key in the
    relative interior of their hull is inside the pooled hull too, and stays ``unselectable``
    with its text's certificate."""
    from ..kernel import ExactKeys

    return ExactKeys(keys).affine_rank() == keys.shape[1]


def _gather(parts, layer: int, cap, heads) -> tuple[list, dict, tuple | None]:
    """The layer's table rows of every text, the candidates per key head ``(members, keys)``
    and the rotary table of the longest text (or None)."""
    import pyarrow.parquet as pq

    from ..io.bounded import read_npz

    readers = {}
    for head in heads:  # the first chosen query head of each key head
        readers.setdefault(cap.key_head(head), head)
    picked = {g: ([], []) for g in readers}
    rows, table = [], None
    for rows_path, arrays_path in parts:
        mine = pq.read_table(rows_path, columns=_READ, filters=[("layer", "=", layer)]).to_pylist()
        arrays = read_npz(arrays_path, [f"keys_l{layer}_kv{g}" for g in readers] + ["rotary_cos", "rotary_sin"])
        keys = {g: arrays[f"keys_l{layer}_kv{g}"] for g in readers}
        if cap.rotary and (table is None or len(arrays["rotary_cos"]) > len(table[0])):
            table = (arrays["rotary_cos"], arrays["rotary_sin"])
        spans = {}
        for r in mine:
            g = cap.key_head(r["head"])
            if readers.get(g) != r["head"]:
                continue
            if r["status_free"] == "unselectable":
                if g not in spans:
                    spans[g] = _spans_the_space(keys[g])
                if spans[g]:
                    continue
            picked[g][0].append([r["text"], r["position"]])
            picked[g][1].append(keys[g][r["position"]])
        rows += mine
    return (
        rows,
        {g: (m, np.asarray(v, dtype=np.float64).reshape(len(v), cap.head_dim)) for g, (m, v) in picked.items()},
        table,
    )


def pool_corpus(out_dir, sets, captures, layers, heads, *, progress: bool = True) -> dict:
    """Certify the pooled candidates of every layer and head of a finished corpus run in
    ``out_dir``; ``sets`` the run's :class:`~lnproofs.models.head_sets.HeadSets` and
    ``captures`` ``{layer: LayerCapture}`` of any input (the templates the texts were
    certified with: their weights make the query sets)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from tqdm import tqdm

    from .corpus_heads import _write_json
    from .evidence import SetSource
    from .text_heads import head_certificates

    out = Path(out_dir)
    folder_entry(out, "pooled", folder=True)
    parts = _text_parts(out)
    table_rows = []
    bar = tqdm(total=len(layers) * len(heads), unit="head", desc="pooled", disable=not progress, dynamic_ncols=True)
    try:
        for layer in layers:
            cap = captures[layer]
            rows, picked, table = _gather(parts, layer, cap, heads)
            for g, (members, keys) in picked.items():
                extra = {"rotary_cos": table[0], "rotary_sin": table[1]} if table is not None else {}
                write_arrays(out / "pooled" / f"layer{layer}_kv{g}.npz", {"keys": keys, **extra})
            pooled, shared = {}, {}
            for head in heads:
                g = cap.key_head(head)
                members, keys = picked[g]
                head_set = sets.get(cap, head)
                kind, qs = head_set[:2]
                ref = {"kind": kind.kind, "layer": layer, "head": head}
                last = qs
                if kind is not LayerNormQuerySet and table is not None:
                    ref["position"] = len(table[0]) - 1
                    last = SetSource(qs, cap.rotary_style, *table).at(ref["position"])
                free, realisable = head_certificates(keys, head_set, ref, sets.coverage(cap, head), last, shared.get(g))
                shared.setdefault(g, {"free": free})
                for (text, pos), fr, rr in zip(members, free["results"], realisable["results"]):
                    pooled[(text, head, pos)] = (fr["status"], rr["status"])
                record = {
                    "schema": POOL_SCHEMA,
                    "layer": layer,
                    "head": head,
                    "key_head": g,
                    "texts": len(parts),
                    "arrays": f"layer{layer}_kv{g}.npz",
                    "members": members,
                    "free": free,
                    "realisable": realisable,
                }
                _write_json(out / "pooled" / f"layer{layer}_head{head}.json", record)
                bar.update(1)
            for r in rows:
                row = {k: r[k] for k in ("text", "layer", "head", "position", "token")}
                found = pooled.get((r["text"], r["head"], r["position"]))
                row["pooled_free"], row["pooled_realisable"] = found or (r["status_free"], r["status_realisable"])
                row["by_text_free"] = row["by_text_realisable"] = found is None
                table_rows.append(row)
    finally:
        bar.close()
    table = pa.Table.from_pylist(table_rows).select(list(POOL_COLUMNS)) if table_rows else None
    if table is not None:
        import pyarrow.csv as pcsv

        with replacing(out / "pooled.parquet", binary=True) as handle:
            pq.write_table(table, handle)
        with replacing(out / "pooled.csv", binary=True) as handle:
            pcsv.write_csv(table, handle)
    return {"pooled_texts": len(parts), "pooled_rows": len(table_rows), "pooled_table": str(out / "pooled.parquet")}


def pool_evidence(path, data) -> list[HeadEvidence]:
    """A pooled file as one :class:`~.evidence.HeadEvidence` (name ``pooled/layer{L}/head{H}``)."""
    from .text_check import params_sets, run_arrays, run_params

    params = run_params(path)
    try:
        arrays = run_arrays(path, data)
        layer, head, keys = int(data["layer"]), int(data["head"]), arrays["keys"]
        return [
            HeadEvidence(
                f"pooled/layer{layer}/head{head}",
                layer,
                head,
                keys,
                data["free"],
                data["realisable"],
                params_sets(params, arrays, layer, head, keys.shape[1]),
            )
        ]
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise CertificateFormatError(f"{path} is malformed ({exc!r})") from None


def _each(path, data, what) -> list:
    try:
        return [item for ev in pool_evidence(path, data) for item in what(ev)]
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise CertificateFormatError(f"{path} is malformed ({exc!r})") from None


def pool_file_certificates(path, data) -> list:
    """``(name, Certificate, keys)`` for the certificates of a ``pooled/layer{L}_head{H}.json`` file."""
    return _each(path, data, evidence_certificates)


def pool_file_checks(path, data) -> list:
    """``(name, CheckReport)`` for the coverage claim of a pooled file."""
    return _each(path, data, evidence_checks)
