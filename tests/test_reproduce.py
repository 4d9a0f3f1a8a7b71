"""Figure 1 reproduction: certified trial verdicts, determinism, resumable progress."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lnproofs.derive.numeric import layernorm
from lnproofs.experiments import figure1 as R


def test_verdicts_on_known_configurations():
    square = np.array([[1.0, 0, 0], [0, 1, 0], [-1, 0, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]])
    assert R.trial_verdict(square)[0] == "all-selectable"
    with_centre = np.vstack([square, [[0.1, 0.05, -0.02]]])
    assert R.trial_verdict(with_centre)[0] == "nonselectable"
    # a point on an edge is tie-only, which also counts as not selectable
    on_edge = np.vstack([square, [[0.5, 0.5, 0.0]]])
    assert R.trial_verdict(on_edge)[0] == "nonselectable"
    sphere = layernorm(np.random.default_rng(3).standard_normal((40, 4)))
    assert R.trial_verdict(sphere, on_sphere=True)[0] == "all-selectable"


def test_verdicts_agree_with_qhull_vertex_counts():
    """Independent check: a trial has a non-selectable key iff qhull finds fewer vertices
    than keys (Gaussian keys are in general position with probability 1)."""
    from scipy.spatial import ConvexHull

    rng = np.random.default_rng(11)
    for n, d in [(8, 3), (15, 3), (12, 4), (25, 4), (9, 5), (30, 5)]:
        for _ in range(4):
            keys = rng.standard_normal((n, d))
            expected = "nonselectable" if len(ConvexHull(keys).vertices) < n else "all-selectable"
            assert R.trial_verdict(keys)[0] == expected, (n, d)
            # LayerNorm keys are all vertices
            assert R.trial_verdict(layernorm(keys), on_sphere=True)[0] == "all-selectable"


def test_cells_are_seeded_and_paired():
    a = R.run_cell(12, 3, 6, seed=4)
    b = R.run_cell(12, 3, 6, seed=4)
    assert a.without == b.without and a.with_layernorm == b.with_layernorm
    assert sum(a.without.values()) == 6 and sum(a.with_layernorm.values()) == 6
    assert a.with_layernorm["nonselectable"] == 0


def _csv(path):
    return path.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def thread_cluster():
    """A Dask cluster of 2 worker threads in this process, reached by its address as
    ``--scheduler`` would reach a real one (the version check included)."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as cl:
        yield cl.scheduler_address


def test_small_grid_outputs_deterministic_and_resumable(tmp_path, monkeypatch, thread_cluster):
    kwargs = dict(trials=4, seed=2, n_values=range(3, 9), d_values=(3, 4))
    first = R.reproduce_figure1(tmp_path / "a", workers=1, **kwargs)
    assert first["cells"] == 12 and first["undecided_without"] == 0 and first["workers"] == 1
    second = R.reproduce_figure1(tmp_path / "b", scheduler=thread_cluster, **kwargs)
    assert second["workers"] == 2
    for name in (
        "figure1c.csv",
        "figure1d.csv",
        "figure1_counts.csv",
        "figure1c.png",
        "figure1ab.png",
        "figure1.md",
    ):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    header, *rows = _csv(tmp_path / "a" / "figure1c.csv").splitlines()
    assert header == "n,d,fraction" and len(rows) == 12
    assert all(float(r.split(",")[2]) == 0 for r in _csv(tmp_path / "a" / "figure1d.csv").splitlines()[1:])
    # n <= d + 1 Gaussian keys are all vertices
    for row in rows:
        n, d, fraction = row.split(",")
        if int(n) <= int(d) + 1:
            assert float(fraction) == 0
    note = (tmp_path / "a" / "figure1.md").read_text()
    assert "undecided trials: 0 of 48" in note and "Agrees (1d)" in note

    # interrupt: keep the header and 5 cells, cut the sixth line in half
    progress = tmp_path / "a" / "progress.jsonl"
    lines = progress.read_text().splitlines()
    progress.write_text("\n".join(lines[:6]) + "\n" + lines[6][:10])
    calls = []
    real = R.run_cell
    monkeypatch.setattr(R, "run_cell", lambda *a: calls.append(a[:2]) or real(*a))
    resumed = R.reproduce_figure1(tmp_path / "a", resume=True, workers=1, **kwargs)
    assert resumed["cells"] == 12
    assert len(calls) == 12 - 5
    assert _csv(tmp_path / "a" / "figure1c.csv") == _csv(tmp_path / "b" / "figure1c.csv")
    assert _csv(tmp_path / "a" / "figure1_counts.csv") == _csv(tmp_path / "b" / "figure1_counts.csv")


def test_interrupted_cluster_run_resumes_to_the_same_files(tmp_path, thread_cluster):
    kwargs = dict(trials=3, seed=5, n_values=range(10, 14), d_values=(3, 4))
    R.reproduce_figure1(tmp_path / "whole", workers=1, **kwargs)

    def interrupt(done, total):
        if done == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        R.reproduce_figure1(tmp_path / "cut", scheduler=thread_cluster, progress=interrupt, **kwargs)
    kept = (tmp_path / "cut" / "progress.jsonl").read_text().splitlines()
    assert len(kept) == 1 + 3  # the header and the cells finished before Ctrl-C
    R.reproduce_figure1(tmp_path / "cut", scheduler=thread_cluster, resume=True, **kwargs)
    for name in ("figure1c.csv", "figure1d.csv", "figure1_counts.csv", "figure1.md"):
        assert (tmp_path / "cut" / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), name


def test_resume_refuses_other_options(tmp_path):
    R.reproduce_figure1(tmp_path, trials=2, seed=0, workers=1, n_values=(3,), d_values=(3,))
    from lnproofs.kernel import OptionError

    with pytest.raises(OptionError, match="--trials 2"):
        R.reproduce_figure1(tmp_path, trials=3, seed=0, workers=1, resume=True, n_values=(3,), d_values=(3,))


def test_unreachable_scheduler_leaves_progress_untouched(cli, tmp_path):
    argv = [
        "reproduce",
        "figure1",
        "--trials",
        "2",
        "--n-range",
        "10:11",
        "--d-range",
        "3:3",
        "--out",
        tmp_path,
        "--quiet",
    ]
    assert cli(argv + ["--workers", "1"]).status == 0
    before = (tmp_path / "progress.jsonl").read_bytes()
    for extra in ([], ["--resume"]):
        result = cli(argv + ["--scheduler", "tcp://127.0.0.1:9", *extra])
        assert result.status == 2 and "cannot reach the Dask scheduler" in result.err
        assert (tmp_path / "progress.jsonl").read_bytes() == before


def test_jobs_is_a_deprecated_alias_of_workers(cli, tmp_path):
    result = cli(
        [
            "reproduce",
            "figure1",
            "--trials",
            "2",
            "--n-range",
            "10:10",
            "--d-range",
            "3:3",
            "--out",
            tmp_path,
            "--quiet",
            "--jobs",
            "1",
        ]
    )
    assert result.status == 0, result.err
    assert "--jobs is deprecated; use --workers" in result.err and "in this process" in result.out


def test_command_line(cli, tmp_path):
    result = cli(
        [
            "reproduce",
            "figure1",
            "--trials",
            "2",
            "--n-range",
            "10:11",
            "--d-range",
            "3:3",
            "--out",
            tmp_path,
            "--quiet",
        ]
    )
    assert result.status == 0, result.err
    assert (tmp_path / "figure1c.png").exists() and (tmp_path / "figure1ab.png").exists()
    counts = (tmp_path / "figure1_counts.csv").read_text().splitlines()
    assert counts[0].startswith("n,d,trials") and len(counts) == 3
    first = json.loads((tmp_path / "progress.jsonl").read_text().splitlines()[0])
    assert first == {"kind": "header", "trials": 2, "seed": 0}


# ------------------------------------------------------------ one subcommand per experiment
def _parsed(argv):
    from lnproofs.cli import build_parser
    from lnproofs.commands.reproduce import _resolve

    args = build_parser("reproduce").parse_args(argv)
    _resolve(args)
    return args


@pytest.mark.parametrize(
    "argv, expected",
    [
        (
            ["reproduce", "figure1", "--trials", "5", "--n-range", "3:4"],
            {"figure": "figure1", "trials": "5", "n_range": "3:4"},
        ),
        # the former single option list: options before the experiment's name
        (
            ["reproduce", "--trials", "5", "--resume", "figure1", "--seed", "3"],
            {"trials": "5", "resume": True, "seed": "3"},
        ),
        (["reproduce", "--out", "o", "figure1", "--jobs", "2"], {"out": "o", "jobs": "2"}),
        (
            ["reproduce", "majority", "--steps", "4", "--seeds", "3,4", "--no-3d"],
            {"steps": "4", "seeds": "3,4", "no_3d": True},
        ),
        (
            ["reproduce", "--paper", "lm-tables", "--texts", "2", "--text-length", "8:16"],
            {"paper": True, "texts": "2", "text_length": "8:16"},
        ),
        (["reproduce", "--quiet", "majority"], {"quiet": True, "device": "auto"}),
    ],
)
def test_former_command_lines_still_parse(argv, expected):
    args = _parsed(argv)
    for key, value in expected.items():
        assert getattr(args, key) == value, key


def test_each_experiment_has_its_own_help(cli):
    for name, own, foreign in (
        ("figure1", "--n-range", "--corpus"),
        ("majority", "--seeds", "--trials"),
        ("lm-tables", "--corpus", "--no-3d"),
    ):
        result = cli(["reproduce", name, "--help"])
        assert result.status == 0 and own in result.out and foreign not in result.out, name
    listing = cli(["reproduce", "--help"])
    assert all(name in listing.out for name in ("figure1", "majority", "lm-tables"))
    assert "--corpus" not in listing.out and "--trials" not in listing.out


def test_option_of_another_experiment_names_its_takers(cli, tmp_path):
    result = cli(["reproduce", "majority", "--corpus", tmp_path, "--out", tmp_path / "o"])
    assert result.status == 2 and "Traceback" not in result.err
    assert "--corpus is not an option of reproduce majority; it is taken by reproduce lm-tables" in result.err
    assert not (tmp_path / "o").exists()


def test_former_order_runs_figure1(cli, tmp_path):
    """Options before the name, as the single option list allowed, run the experiment."""
    out = tmp_path / "f"
    result = cli(
        [
            "reproduce",
            "--trials",
            "2",
            "--n-range",
            "3:4",
            "figure1",
            "--d-range",
            "3:3",
            "--out",
            out,
            "--workers",
            "1",
        ]
    )
    assert result.status == 0, result.err
    assert "2 cells" in result.out and (out / "figure1c.csv").is_file()
    assert result.err == ""  # not a terminal, no --progress: nothing on stderr
    again = cli(
        [
            "reproduce",
            "figure1",
            "--trials",
            "2",
            "--n-range",
            "3:4",
            "--d-range",
            "3:3",
            "--out",
            tmp_path / "g",
            "--workers",
            "1",
            "--progress",
        ]
    )
    assert again.status == 0 and "figure1" in again.err and "2/2" in again.err


def test_experiment_progress_is_one_tqdm_line(cli, tmp_path, monkeypatch):
    """majority and lm-tables report progress on a tqdm status line when asked (--progress),
    and print nothing on stderr otherwise when it is not a terminal."""
    from lnproofs.experiments import majority

    def fake(out, *, progress=None, **kwargs):
        for k in (1, 2):
            progress(f"majority: layernorm seed 3 ({k}/2)")
        return {
            "out": str(out),
            "seconds": 0.0,
            "arms": {
                "layernorm": {"final_query_angle": {"mean": 1.0}},
                "no-projection": {"final_query_angle": {"mean": 2.0}},
            },
        }

    monkeypatch.setattr(majority, "reproduce_majority", fake)
    shown = cli(["reproduce", "majority", "--out", tmp_path / "a", "--progress"])
    assert shown.status == 0, shown.err
    assert "majority: layernorm seed 3 (2/2)" in shown.err and "\n" not in shown.err.strip("\n")
    silent = cli(["reproduce", "majority", "--out", tmp_path / "b"])
    assert silent.status == 0 and silent.err == ""
