"""The rows files of a corpus run (``lnproofs.models.table.write_rows``): the columns are made
from their buffers, and read back as pyarrow makes them from the same Python values; and a
corpus run that pyarrow would otherwise lead to import pandas does not."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pa = pytest.importorskip("pyarrow")

from lnproofs.models.table import ROW_SCHEMA, read_rows, write_rows  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
_VALUES = {
    "int64": st.integers(-(2**63), 2**63 - 1),
    "float64": st.floats(allow_nan=False),
    "bool_": st.booleans(),
    "string": st.text(max_size=6),
}  # non-ASCII text included


@st.composite
def _rows(draw):
    """Columns of one length, each of its schema type, with nulls anywhere (or everywhere)."""
    schema = ROW_SCHEMA()
    n = draw(st.integers(0, 12))
    positions = list(range(n))
    rows = {}
    for field in schema:
        if field.name in ("position", "token"):
            continue
        kind = str(field.type).replace("bool", "bool_").replace("double", "float64")
        nulls = draw(st.sampled_from(["none", "some", "all", "absent"]))
        if nulls == "absent":
            continue  # a column not given: all null
        value = _VALUES[kind]
        item = value if nulls == "none" else st.none() if nulls == "all" else st.one_of(st.none(), value)
        rows[field.name] = draw(st.lists(item, min_size=n, max_size=n))
    tokens = draw(st.lists(st.text(max_size=4), min_size=n, max_size=n))
    return dict(rows, position=positions), tokens


@settings(max_examples=60, deadline=None)
@given(_rows())
def test_rows_read_back_as_pyarrow_makes_them(tmp_path_factory, drawn):
    rows, tokens = drawn
    path = tmp_path_factory.mktemp("rows") / "text00000.parquet"
    write_rows(path, rows, tokens)
    n = len(rows["position"])
    expected = pa.Table.from_pydict(
        {name: rows.get(name, [None] * n) if name != "token" else tokens for name in ROW_SCHEMA().names},
        schema=ROW_SCHEMA(),
    )
    got = read_rows(path)
    got.validate(full=True)
    assert got.equals(expected)
    assert got.to_pydict() == expected.to_pydict()


@pytest.mark.parametrize(
    "column, values",
    [("layer", [1.5]), ("layer", ["1"]), ("layer", [2**70]), ("ties_identical_token", [0.5]), ("margin_free", ["0.5"])],
)
def test_a_value_of_another_type_is_refused_not_cut(tmp_path, column, values):
    """As ``pa.array`` refuses them: never a float cut to an integer or a string read as a number."""
    rows = {"position": [0], column: values}
    with pytest.raises((TypeError, OverflowError)):
        write_rows(tmp_path / "text00000.parquet", rows, ["a"])
    assert not (tmp_path / "text00000.parquet").exists()


def test_a_corpus_run_does_not_import_pandas(tmp_path):
    """pyarrow imports pandas, where installed, at its first ``pa.array``, ``to_numpy`` or Python
    number given to a compute function; a run's rows, tables, figures and summary use none."""
    from bad_inputs.models import tiny_bert

    pytest.importorskip("transformers")
    pytest.importorskip("pandas")  # without it there is nothing to show
    tiny_bert(tmp_path / "bert", layers=2, heads=2, width=16)
    probe = (
        "import sys\n"
        "from lnproofs.cli import main\n"
        f"status = main(['certify-model', {str(tmp_path / 'bert')!r}, '--text', 'the cat sat on the mat',\n"
        f"               '--out', {str(tmp_path / 'out')!r}, '--quiet'])\n"
        "print(status, 'pandas' in sys.modules)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1].split() == ["0", "False"]
    assert {"table.parquet", "summary.md", "heatmap_not_selectable.png", "tokens_by_status.png"} <= {
        p.name for p in (tmp_path / "out").iterdir()
    }
