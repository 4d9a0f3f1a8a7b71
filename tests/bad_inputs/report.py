"""Invalid options for report, reproduce and demo."""


def _argv(*args):
    def make(tmp_path):
        return [a.format(tmp=tmp_path) if isinstance(a, str) else a for a in args]

    return make


def _unwritable(command, *extra):
    def make(tmp_path):
        blocker = tmp_path / "a-file"
        blocker.write_text("not a folder")
        return [command, *extra, "--out", str(blocker / "inside")]

    return make


def _unwritable_demo(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    return ["demo", "--out", str(blocker / "demo.html")]


CASES = [
    ("report-n-too-small", _argv("report", "--n", "1", "--out", "{tmp}/r"), "--n"),
    ("report-n-not-integer", _argv("report", "--n", "three", "--out", "{tmp}/r"), "--n"),
    ("report-unknown-convention", _argv("report", "--convention", "pytorch", "--out", "{tmp}/r"), "convention"),
    ("report-unwritable-out", _unwritable("report"), "cannot write"),
    (
        "report-experiments-without-results",
        _argv("report", "--experiments", "{tmp}", "--out", "{tmp}/r", "--no-recheck", "--no-pdf"),
        "holds no experiment results",
    ),
    ("reproduce-zero-trials", _argv("reproduce", "figure1", "--trials", "0", "--out", "{tmp}/f"), "--trials"),
    ("reproduce-negative-trials", _argv("reproduce", "figure1", "--trials", "-5", "--out", "{tmp}/f"), "--trials"),
    ("reproduce-unknown-figure", _argv("reproduce", "figure7", "--out", "{tmp}/f"), "invalid choice: 'figure7'"),
    ("reproduce-no-experiment", _argv("reproduce", "--out", "{tmp}/f"), "give the experiment"),
    (
        "reproduce-option-of-another-experiment",
        _argv("reproduce", "figure1", "--corpus", "{tmp}/c", "--out", "{tmp}/f"),
        "taken by reproduce lm-tables",
    ),
    (
        "reproduce-option-of-two-others",
        _argv("reproduce", "figure1", "--paper", "--out", "{tmp}/f"),
        "taken by reproduce majority and reproduce lm-tables",
    ),
    (
        "reproduce-early-option-of-another",
        _argv("reproduce", "--trials", "3", "majority", "--out", "{tmp}/f"),
        "--trials is not an option of reproduce majority",
    ),
    ("reproduce-bad-jobs", _argv("reproduce", "figure1", "--jobs", "0", "--out", "{tmp}/f"), "--jobs"),
    ("reproduce-zero-workers", _argv("reproduce", "figure1", "--workers", "0", "--out", "{tmp}/f"), "--workers 0"),
    (
        "reproduce-workers-not-a-number",
        _argv("reproduce", "figure1", "--workers", "many", "--out", "{tmp}/f"),
        "--workers",
    ),
    (
        "reproduce-unreachable-scheduler",
        _argv("reproduce", "figure1", "--scheduler", "tcp://127.0.0.1:9", "--out", "{tmp}/f"),
        "cannot reach the Dask scheduler",
    ),
    (
        "reproduce-workers-and-scheduler",
        _argv("reproduce", "figure1", "--workers", "2", "--scheduler", "tcp://127.0.0.1:9", "--out", "{tmp}/f"),
        "cannot be combined",
    ),
    ("reproduce-bad-range", _argv("reproduce", "figure1", "--n-range", "2:70", "--out", "{tmp}/f"), "--n-range"),
    ("reproduce-unwritable-out", _unwritable("reproduce", "figure1", "--trials", "1"), "cannot write"),
    ("demo-unwritable-out", _unwritable_demo, "cannot write"),
]


def _missing_keys(tmp_path):
    return ["report", "--keys", str(tmp_path / "absent.npy"), "--out", str(tmp_path / "r"), "--no-recheck"]


def _one_key(tmp_path):
    import numpy as np

    np.save(tmp_path / "one.npy", np.ones((1, 3)))
    return ["report", "--keys", str(tmp_path / "one.npy"), "--out", str(tmp_path / "r"), "--no-recheck"]


CASES += [
    ("report-missing-keys", _missing_keys, "does not exist"),
    ("report-single-key", _one_key, "at least 2 keys"),
]
