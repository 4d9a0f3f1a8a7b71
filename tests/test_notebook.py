"""The example notebook runs top to bottom, headless, with the python3 kernel."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_tour_notebook_runs_top_to_bottom():
    notebook = nbformat.read(EXAMPLES / "lnproofs_tour.ipynb", as_version=4)
    client = NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(EXAMPLES)}}
    )
    client.execute()
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code and all(cell.get("execution_count") for cell in code)
    errors = [o for cell in code for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    # the objects display themselves: rich outputs, not only plain reprs
    rich = [
        o
        for cell in code
        for o in cell.get("outputs", [])
        if o.get("output_type") == "execute_result"
        and {"text/markdown", "text/html", "text/latex"} & set(o.get("data", {}))
    ]
    assert len(rich) >= 4
