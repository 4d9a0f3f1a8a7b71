"""The tidy table of a corpus run: one row per (text, layer, head, token position).

Rows are written per text (``rows/textNNNNN.parquet``); :func:`write_tables` joins the
finished texts, in order, into ``table.parquet`` and ``table.csv`` and writes the per
layer x head summary ``summary_heads.csv``.  It streams one text at a time.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from ..certificates.writes import replacing, write_text

__all__ = ["write_tables", "write_rows", "read_rows", "status_counts", "COLUMNS", "ROW_SCHEMA"]

_INT, _STR, _FLOAT, _BOOL = "int64", "string", "float64", "bool_"
_TYPES = (
    ("text", _INT),
    ("layer", _INT),
    ("head", _INT),
    ("position", _INT),
    ("token_id", _INT),
    ("token", _STR),
    ("status_free", _STR),
    ("status_realisable", _STR),
    ("status_outputs", _STR),
    ("margin_free", _FLOAT),
    ("margin_realisable", _FLOAT),
    ("ties_identical_token", _BOOL),
    ("uniform_free", _STR),
    ("uniform_realisable", _STR),
    ("first_stop_free", _INT),
    ("first_stop_realisable", _INT),
    ("realisable_wins", _INT),
    ("realisable_first_win", _INT),
    ("realisable_last_win", _INT),
)
#: the tidy table's columns: ``realisable`` names the queries the layer's norm (LayerNorm or
#: RMSNorm, stated once in ``summary.md``) and ``W_q`` can produce; the last five are the
#: causal answers of decoders (null for encoders)
COLUMNS = tuple(name for name, _ in _TYPES)


def ROW_SCHEMA():
    """The pyarrow schema of the table's rows (fixed, so texts whose causal columns are all
    null join the others)."""
    import pyarrow as pa

    return pa.schema([(name, getattr(pa, kind)()) for name, kind in _TYPES])


def write_rows(path, rows, tokens) -> None:
    """One text's rows file: ``rows`` maps column names to lists of Python values (a column
    not given, such as an encoder's causal ones, is null), ``tokens`` each position's token."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = len(rows.get("position", []))
    columns = dict(rows, token=[tokens[p] for p in rows.get("position", [])])
    arrays = [_column(columns.get(name, [None] * n), kind) for name, kind in _TYPES]
    with replacing(path, binary=True) as handle:  # (a text with no rows: every column empty)
        pq.write_table(pa.Table.from_arrays(arrays, schema=ROW_SCHEMA()), handle)


def _column(values, kind):
    """One pyarrow array of type ``kind`` from Python values (None: null), made from its
    buffers: ``pa.array`` asks pyarrow's pandas shim about its argument first, which imports
    pandas, a third of a second in a run that has no other use for it."""
    import numpy as np
    import pyarrow as pa

    n, arrow_type = len(values), getattr(pa, kind)()
    try:
        return pa.Array.from_buffers(arrow_type, n, [None, *_buffers(values, kind)])
    except TypeError:  # a None among the values (or a value of another type, refused below)
        pass
    nulls = values.count(None)
    if nulls == n:  # an encoder's causal columns, say
        return pa.nulls(n, arrow_type)
    missing = np.array([v is None for v in values], dtype=bool)
    filled = [_EMPTY[kind] if v is None else v for v in values]  # a null's slot holds a zero or ""
    valid = pa.py_buffer(np.packbits(~missing, bitorder="little"))  # Arrow's bit order
    return pa.Array.from_buffers(arrow_type, n, [valid, *_buffers(filled, kind)], null_count=nulls)


_EMPTY = {_INT: 0, _FLOAT: 0.0, _BOOL: False, _STR: ""}


def _buffers(values, kind) -> list:
    """The value buffers of an Arrow array of ``values`` (TypeError for a None, or for values a
    column of ``kind`` cannot hold exactly)."""
    import numpy as np
    import pyarrow as pa

    if kind == _STR:
        joined = "".join(values)  # one encoding; each value's size from its length
        sizes = list(map(len, values)) if joined.isascii() else [len(v.encode()) for v in values]
        offsets = np.zeros(len(values) + 1, dtype=np.int64)
        offsets[1:] = np.cumsum(sizes)
        return [pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(joined.encode())]
    dtype = {_INT: np.int64, _FLOAT: np.float64, _BOOL: np.bool_}[kind]
    given = np.array(values) if len(values) else np.zeros(0, dtype=dtype)
    if given.dtype.kind not in {_INT: "iub", _FLOAT: "fiub", _BOOL: "b"}[kind]:  # never a float cut to an integer
        raise TypeError(f"a {kind} column cannot hold values of {given.dtype}")
    array = given.astype(dtype).reshape(len(values))
    return [pa.py_buffer(np.packbits(array, bitorder="little") if kind == _BOOL else array)]


def read_rows(path, columns=None):
    """One parquet file of rows as a pyarrow table, through ``ParquetFile``: ``pq.read_table``
    imports ``pyarrow.dataset`` (a quarter of a second, once) and sets up a dataset per file."""
    import pyarrow.parquet as pq

    with pq.ParquetFile(path) as handle:
        return handle.read(columns=columns)


def status_counts(table, name):
    """``(layer, head, status, rows)`` for each status of the column ``name`` in each head of
    ``table``, counted in numpy over the statuses' dictionary codes, not row by row (pyarrow's
    ``group_by`` imports its query engine and ``pyarrow.dataset``, a third of a second; and
    pyarrow's ``to_numpy`` imports pandas: the columns are taken over by DLPack)."""
    import numpy as np

    status = table[name].combine_chunks().dictionary_encode(null_encoding="encode")  # a null: a status of its own
    values = status.dictionary.to_pylist()
    layer, head = (np.from_dlpack(table[column].combine_chunks()) for column in ("layer", "head"))
    heads = int(head.max(initial=0)) + 1
    keys, n = np.unique(
        (layer * heads + head) * len(values) + np.from_dlpack(status.indices), return_counts=True
    )  # one integer per (layer, head, status)
    return [
        (key // len(values) // heads, key // len(values) % heads, values[key % len(values)], k)
        for key, k in zip(keys.tolist(), n.tolist())
    ]


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
            for layer, head, status, n in status_counts(table, name):
                c = counts.setdefault((layer, head), {})
                c[f"{name[7:]}_{status}"] = c.get(f"{name[7:]}_{status}", 0) + n
                if name == "status_free":
                    c["keys"] = c.get("keys", 0) + n
    names = sorted({k for c in counts.values() for k in c if k != "keys"})
    lines = ["layer,head,keys," + ",".join(names) + ",fraction_not_selectable_free,fraction_not_selectable_realisable"]
    for (layer, head), c in sorted(counts.items()):
        free_not = sum(c.get(f"free_{s}", 0) for s in ("unselectable", "tie-only")) / c["keys"]
        ln_not = c.get("realisable_not-realisable", 0) / c["keys"]
        lines.append(
            f"{layer},{head},{c['keys']}," + ",".join(str(c.get(k, 0)) for k in names) + f",{free_not:.6g},{ln_not:.6g}"
        )
    write_text(out / "summary_heads.csv", "\n".join(lines) + "\n")
    if ready is not None:
        ready()
    writer = csv_writer = None
    rows = 0
    with contextlib.ExitStack() as files:
        for part in parts:
            table = read_rows(part).select(list(COLUMNS))
            if writer is None:
                writer = files.enter_context(
                    pq.ParquetWriter(files.enter_context(replacing(out / "table.parquet", binary=True)), table.schema)
                )
                csv_writer = files.enter_context(
                    pcsv.CSVWriter(files.enter_context(replacing(out / "table.csv", binary=True)), table.schema)
                )
            writer.write_table(table)
            csv_writer.write_table(table)
            rows += table.num_rows
    return {"rows": rows, "table": str(out / "table.parquet")}
