"""reproduce unargmaxable on a small grid: the models drawn as Grivas et al. draw them, every class
certified, the claims stated, resume, and the counts against an independent reference (scipy's
convex hull of the classes, and of the lifted classes with the bias)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.spatial import ConvexHull

from lnproofs.experiments.unargmaxable import random_model


def test_models_are_drawn_as_theirs():
    W, b = random_model("uniform", 3, classes=5)
    rng = np.random.RandomState(13)
    assert np.array_equal(W, rng.uniform(-1, 1, (5, 3))) and np.array_equal(b, rng.uniform(-1, 1, (1, 5))[0])
    W, b = random_model("normal", 2, classes=4)
    rng = np.random.RandomState(13)
    assert np.array_equal(W, rng.normal(0, 1, (4, 2))) and np.array_equal(b, rng.normal(0, 1, (1, 4))[0])


def _upper(P):
    hull = ConvexHull(P)
    return {int(v) for s, eq in zip(hull.simplices, hull.equations) if eq[-2] > 1e-12 for v in s}


def test_small_grid_matches_the_hull_and_states_the_claims(cli, tmp_path):
    result = cli(
        ["reproduce", "unargmaxable", "--classes", "60", "--dims", "2,4", "--sets", "box,free", "--out", tmp_path]
    )
    assert result.status == 0, result.err
    rows = json.loads((tmp_path / "results.json").read_text())["rows"]
    assert len(rows) == 8
    for row in rows:
        W, b = random_model(row["init"], row["d"], classes=60)
        if row["bias"]:
            winners = _upper(np.hstack([W, b[:, None]]))
        else:
            winners = set(ConvexHull(W).vertices.tolist())
        assert row["free unargmaxable"] == 60 - len(winners), row
        assert row["free undecided"] == 0 and row["box undecided"] == 0
        assert row["box unargmaxable"] >= row["free unargmaxable"]
    text = (tmp_path / "README.md").read_text()
    assert "reproduced" in text and "not checked" in text  # no d >= 30 model in this grid
    again = cli(
        ["reproduce", "unargmaxable", "--classes", "60", "--dims", "2", "--sets", "box,free", "--out", tmp_path]
    )
    assert again.status == 0
    assert len(json.loads((tmp_path / "results.json").read_text())["rows"]) == 8  # kept, not redone
    # a set added later is certified alone, beside the sets the model already has (which are not redone)
    seconds = {(r["init"], r["d"], r["bias"]): r["box seconds"] for r in rows}
    more = cli(
        [
            "reproduce",
            "unargmaxable",
            "--classes",
            "60",
            "--dims",
            "4",
            "--sets",
            "box,free,layernorm",
            "--out",
            tmp_path,
        ]
    )
    assert more.status == 0, more.err
    for row in json.loads((tmp_path / "results.json").read_text())["rows"]:
        key = (row["init"], row["d"], row["bias"])
        assert ("layernorm unargmaxable" in row) == (row["d"] == 4) and row["box seconds"] == seconds[key]
        if row["d"] == 4:  # a LayerNorm's queries are free queries too: never fewer
            assert row["layernorm unargmaxable"] >= row["free unargmaxable"] and row["layernorm undecided"] == 0
            if not row["bias"]:  # theorem vocab.no_offset: the hull of the differenced classes
                W, _ = random_model(row["init"], 4, classes=60)
                assert row["layernorm unargmaxable"] == 60 - len(ConvexHull(W[:, :-1] - W[:, -1:]).vertices), row


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--dims", "2,x"], "--dims"),
        (["--inits", "gaussian"], "--inits"),
        (["--sets", "ball"], "--sets"),
        (["--classes", "1"], "--classes"),
    ],
)
def test_bad_options(cli, tmp_path, argv, fragment):
    result = cli(["reproduce", "unargmaxable", "--out", tmp_path, *argv])
    assert result.status == 2 and fragment in result.err


@pytest.mark.parametrize("entry", ["table.csv", "results.jsonl"])
def test_a_link_planted_in_the_output_is_refused_and_nothing_outside_is_written(cli, tmp_path, entry):
    """The reproduction writes through the project's writers: a symbolic link planted under a
    name it writes is refused in one line (exit status 2), and its target is left as it was."""
    import os

    outside = tmp_path / "outside.txt"
    outside.write_text("theirs")
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(outside, out / entry)
    result = cli(["reproduce", "unargmaxable", "--classes", "60", "--dims", "2", "--sets", "free", "--out", out])
    assert result.status == 2 and len(result.err.strip().splitlines()) == 1, result.err
    assert "link" in result.err and outside.read_text() == "theirs"


def test_a_results_file_that_is_not_an_earlier_runs_is_refused_in_one_line(cli, tmp_path):
    (tmp_path / "results.jsonl").write_text('{"init": "normal", "d": 2}\nnot json\n')
    result = cli(["reproduce", "unargmaxable", "--classes", "60", "--dims", "2", "--sets", "free", "--out", tmp_path])
    assert result.status == 2 and "results.jsonl line 1 is not a row of an earlier run" in result.err, result.err
