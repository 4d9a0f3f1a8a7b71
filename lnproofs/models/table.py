"""The tidy table of a corpus run: one row per (text, layer, head, token position).

Rows are written per text (``rows/textNNNNN.parquet``); :func:`write_tables` joins the
finished texts, in order, into ``table.parquet`` and ``table.csv`` and writes the per
layer x head summary ``summary_heads.csv``.  It streams one text at a time.
"""

from __future__ import annotations

import contextlib

from ..certificates.writes import replacing, write_text

import os
from pathlib import Path

__all__ = ["write_tables", "read_rows", "COLUMNS", "ROW_SCHEMA"]

_INT, _STR, _FLOAT, _BOOL = "int64", "string", "float64", "bool_"
_TYPES = (("text", _INT), ("layer", _INT), ("head", _INT), ("position", _INT), ("token_id", _INT), ("token", _STR),
          ("status_free", _STR), ("status_realisable", _STR), ("status_outputs", _STR), ("margin_free", _FLOAT),
          ("margin_realisable", _FLOAT), ("ties_identical_token", _BOOL), ("uniform_free", _STR),
          ("uniform_realisable", _STR), ("first_stop_free", _INT), ("first_stop_realisable", _INT),
          ("realisable_wins", _INT), ("realisable_first_win", _INT), ("realisable_last_win", _INT))
#: the tidy table's columns: ``realisable`` names the queries the layer's norm (LayerNorm or
#: RMSNorm, stated once in ``summary.md``) and ``W_q`` can produce; the last five are the
#: causal answers of decoders (null for encoders)
COLUMNS = tuple(name for name, _ in _TYPES)


def ROW_SCHEMA():
    """The pyarrow schema of the table's rows (fixed, so texts whose causal columns are all
    null join the others)."""
    import pyarrow as pa

    return pa.schema([(name, getattr(pa, kind)()) for name, kind in _TYPES])


def read_rows(path, columns=None):
    """One parquet file of rows as a pyarrow table, through ``ParquetFile``: ``pq.read_table``
    imports ``pyarrow.dataset`` (a quarter of a second, once) and sets up a dataset per file."""
    import pyarrow.parquet as pq

    with pq.ParquetFile(path) as handle:
        return handle.read(columns=columns)


def _status_counts(table, name):
    """``(layer, head, status, rows)`` for each status of the column ``name`` in each head of
    ``table``, counted in numpy over the statuses' dictionary codes, not row by row (pyarrow's
    ``group_by`` imports its query engine and ``pyarrow.dataset``, a third of a second)."""
    import numpy as np

    status = table[name].combine_chunks().dictionary_encode(null_encoding="encode")   # a null: a status of its own
    values = status.dictionary.to_pylist()
    heads = int(table["head"].to_numpy().max(initial=0)) + 1
    keys, n = np.unique((table["layer"].to_numpy() * heads + table["head"].to_numpy()) * len(values)
                        + status.indices.to_numpy(), return_counts=True)      # one integer per (layer, head, status)
    return [(key // len(values) // heads, key // len(values) % heads, values[key % len(values)], k)
            for key, k in zip(keys.tolist(), n.tolist())]


def write_tables(out_dir, ready=None) -> dict:
    """``summary_heads.csv`` from the statuses of every finished text, then ``ready()`` when
    given (a figure drawn from the summary elsewhere meanwhile), then ``table.parquet`` and
    ``table.csv``; one text at a time, each read twice."""
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    out = Path(out_dir)
    parts = sorted((out / "rows").glob("text*.parquet"))
    counts: dict[tuple, dict] = {}
    for part in parts:
        table = read_rows(part, columns=["layer", "head", "status_free", "status_realisable"])
        for name in ("status_free", "status_realisable"):
            for layer, head, status, n in _status_counts(table, name):
                c = counts.setdefault((layer, head), {})
                c[f"{name[7:]}_{status}"] = c.get(f"{name[7:]}_{status}", 0) + n
                if name == "status_free":
                    c["keys"] = c.get("keys", 0) + n
    names = sorted({k for c in counts.values() for k in c if k != "keys"})
    lines = ["layer,head,keys," + ",".join(names) + ",fraction_not_selectable_free,fraction_not_selectable_realisable"]
    for (layer, head), c in sorted(counts.items()):
        free_not = sum(c.get(f"free_{s}", 0) for s in ("unselectable", "tie-only")) / c["keys"]
        ln_not = c.get("realisable_not-realisable", 0) / c["keys"]
        lines.append(f"{layer},{head},{c['keys']}," + ",".join(str(c.get(k, 0)) for k in names)
                     + f",{free_not:.6g},{ln_not:.6g}")
    write_text(out / "summary_heads.csv", "\n".join(lines) + "\n")
    if ready is not None:
        ready()
    writer = csv_writer = None
    rows = 0
    with contextlib.ExitStack() as files:
        for part in parts:
            table = read_rows(part).select(list(COLUMNS))
            if writer is None:
                writer = files.enter_context(pq.ParquetWriter(files.enter_context(
                    replacing(out / "table.parquet", binary=True)), table.schema))
                csv_writer = files.enter_context(pcsv.CSVWriter(files.enter_context(
                    replacing(out / "table.csv", binary=True)), table.schema))
            writer.write_table(table)
            csv_writer.write_table(table)
            rows += table.num_rows
    return {"rows": rows, "table": str(out / "table.parquet")}
