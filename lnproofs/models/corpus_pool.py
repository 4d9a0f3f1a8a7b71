"""``certify-model --corpus PATH --pool``: which keys can win once the keys of every text are
pooled, per layer and head, under free queries and under the head's LayerNorm-realisable
queries.

A key that cannot win among the keys of its own text cannot win among more keys, and its
text's certificate stays valid evidence (it uses only keys of that text, all in the pool).
So only the *candidates* (keys whose per-text status is not ``unselectable`` /
``not-realisable``) are certified together, one certificate per query set over the
candidates of one head; the per-text certificates settle every other key.  One layer is
read at a time (its candidates for every head), so memory follows the number of
candidates, not the corpus size.

Files (in ``OUT/pooled/``): ``layer{L}_head{H}.json`` (schema ``lnproofs.model-pool/1``:
``members`` lists the ``[text, position]`` of each candidate, per query set, in the order
of the certificate's keys; ``free`` and ``layernorm`` certificates) with the candidates'
keys in ``layer{L}_head{H}.npz`` (``free``, ``layernorm``); ``OUT/pooled.parquet`` and
``pooled.csv``: one row per (text, layer, head, position) with the pooled statuses
(``pooled_free``, ``pooled_realisable``; ``by_text_*`` says the per-text certificate decided it).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..kernel.errors import ModelError

__all__ = ["POOL_SCHEMA", "POOL_COLUMNS", "pool_corpus", "pool_file_certificates"]

POOL_SCHEMA = "lnproofs.model-pool/1"
POOL_COLUMNS = ("text", "layer", "head", "position", "token", "pooled_free", "pooled_realisable", "by_text_free",
                "by_text_realisable")
_COLUMN = {"free": "free", "layernorm": "realisable"}
NOT_WINNING = {"free": ("unselectable",), "layernorm": ("unselectable", "not-realisable")}


_STATUS = {"free": "status_free", "layernorm": "status_realisable"}


def _keys_name(files, layer, head, capture) -> str:
    name = f"keys_l{layer}_kv{capture.key_head(head)}"
    return name if name in files else f"keys_l{layer}_h{head}"


def _text_parts(out: Path) -> list[tuple[Path, Path]]:
    parts = []
    for rows in sorted((out / "rows").glob("text*.parquet")):
        arrays = out / "texts" / (rows.stem + ".npz")
        if (out / "texts" / (rows.stem + ".json")).exists() and arrays.exists():
            parts.append((rows, arrays))
    return parts


def pool_corpus(out_dir, cache, captures, layers, heads, *, progress: bool = True) -> dict:
    """Certify the pooled candidates of every layer and head of a finished corpus run in
    ``out_dir``; ``cache`` a :class:`~lnproofs.models.corpus_heads.HeadCache` and ``captures``
    ``{layer: LayerCapture}`` of any input (for the query sets)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from tqdm import tqdm

    from ..propose.querysets.layernorm_fast import certify_results_fast
    from .corpus_heads import _certificate, _write_json, certificate_from_candidates, layernorm_witness_queries

    out = Path(out_dir)
    (out / "pooled").mkdir(exist_ok=True)
    parts = _text_parts(out)
    table_rows = []
    bar = tqdm(total=len(layers) * len(heads), unit="head", desc="pooled", disable=not progress, dynamic_ncols=True)
    try:
        for layer in layers:
            picked = {(head, kind): ([], []) for head in heads for kind in ("free", "layernorm")}
            layer_rows = []
            for rows_path, arrays_path in parts:
                rows = [r for r in pq.read_table(rows_path).to_pylist() if r["layer"] == layer]
                with np.load(arrays_path) as arrays:
                    keys = {head: arrays[_keys_name(arrays.files, layer, head, captures[layer])] for head in heads}
                for r in rows:
                    for kind in ("free", "layernorm"):
                        if r[_STATUS[kind]] not in NOT_WINNING[kind]:
                            members, vectors = picked[(r["head"], kind)]
                            members.append([r["text"], r["position"]])
                            vectors.append(keys[r["head"]][r["position"]])
                layer_rows.extend(rows)
            pooled = {}
            for head in heads:
                qs, qmap, basis, H = cache.get(captures[layer], head)
                certs, arrays, proposals = {}, {}, []
                for kind in ("layernorm", "free"):
                    members, vectors = picked[(head, kind)]
                    K = np.array(vectors, dtype=np.float64).reshape(len(vectors), qs.dim)
                    arrays[kind] = K
                    if not len(K):
                        certs[kind] = None
                    elif kind == "free":     # the LayerNorm witnesses are tried first as free queries
                        where = {tuple(m): i for i, m in enumerate(members)}
                        items = [(where[m], q) for m, q in proposals if m in where]
                        certs[kind] = certificate_from_candidates(K, items)
                    else:
                        results = certify_results_fast(K, qs, query_map=qmap, basis=basis, compact=True)
                        certs[kind] = _certificate(len(K), qs.dim, {"kind": "layernorm", "layer": layer, "head": head},
                                                   results)
                        proposals = [(tuple(members[i]), q)
                                     for i, q in layernorm_witness_queries(results, H, basis[2])]
                    for (text, pos), r in zip(members, certs[kind]["results"] if certs[kind] else []):
                        pooled[(text, head, pos, kind)] = r["status"]
                record = {"schema": POOL_SCHEMA, "layer": layer, "head": head, "texts": len(parts),
                          "members": {kind: picked[(head, kind)][0] for kind in ("free", "layernorm")},
                          "free": certs["free"], "layernorm": certs["layernorm"]}
                name = out / "pooled" / f"layer{layer}_head{head}"
                tmp = name.with_name(name.name + ".tmp.npz")
                np.savez(tmp, **arrays)
                os.replace(tmp, name.with_suffix(".npz"))
                _write_json(name.with_suffix(".json"), record)
                bar.update(1)
            for r in layer_rows:
                row = {k: r[k] for k in ("text", "layer", "head", "position", "token")}
                for kind in ("free", "layernorm"):
                    key = (r["text"], r["head"], r["position"], kind)
                    row[f"pooled_{_COLUMN[kind]}"] = pooled.get(key, r[_STATUS[kind]])
                    row[f"by_text_{_COLUMN[kind]}"] = key not in pooled
                table_rows.append(row)
    finally:
        bar.close()
    table = pa.Table.from_pylist(table_rows).select(list(POOL_COLUMNS)) if table_rows else None
    if table is not None:
        import pyarrow.csv as pcsv

        pq.write_table(table, out / "pooled.parquet.tmp")
        os.replace(out / "pooled.parquet.tmp", out / "pooled.parquet")
        pcsv.write_csv(table, out / "pooled.csv.tmp")
        os.replace(out / "pooled.csv.tmp", out / "pooled.csv")
    return {"pooled_texts": len(parts), "pooled_rows": len(table_rows), "pooled_table": str(out / "pooled.parquet")}


def pool_file_certificates(path, data) -> list:
    """``(name, Certificate, keys)`` for the certificates of a ``pooled/layer{L}_head{H}.json`` file."""
    from ..certificates.certificate import Certificate
    from ..certificates.writers import query_set_to_json
    from .corpus_heads import layer_query_set

    path = Path(path).resolve()
    arrays_path = path.with_suffix(".npz")
    params_path = path.parent.parent / "params.npz"
    for needed in (arrays_path, params_path):
        if not needed.is_file():
            raise ModelError(f"{path} needs {needed.name} from the same run ({needed})")
    layer, head = int(data["layer"]), int(data["head"])
    out = []
    with np.load(arrays_path) as arrays, np.load(params_path) as params:
        for kind in ("free", "layernorm"):
            cert = data.get(kind)
            if cert is None:
                continue
            if kind == "layernorm":
                cert = dict(cert, query_set=query_set_to_json(layer_query_set(params, layer, head, arrays[kind].shape[1])))
            out.append((f"pooled/layer{layer}/head{head}/{kind}", Certificate.from_json(cert), arrays[kind]))
    return out

