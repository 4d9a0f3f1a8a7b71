"""Output paths that are not ours to replace: folders where a file is expected, devices, FIFOs,
sockets, symbolic links, a parent that is a file, an input named as the output, and a run's own
earlier output (resumed or refused).  Each is refused before any work, in one line."""

import json
import os
import socket

import numpy as np


def _keys(tmp_path):
    path = tmp_path / "k.npy"
    np.save(path, np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]))
    return path


def _certify_out(make_target):
    def make(tmp_path):
        return ["certify", _keys(tmp_path), "--out", make_target(tmp_path)]

    return make


def _fifo(tmp_path):
    path = tmp_path / "fifo.json"
    os.mkfifo(path)
    return path


def _socket(tmp_path):
    path = tmp_path / "s.json"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.close()  # the socket file stays behind
    return path


def _link_to(target):
    def make(tmp_path):
        (tmp_path / "elsewhere.json").write_text("{}")
        path = tmp_path / "link.json"
        os.symlink(target if target is not None else tmp_path / "elsewhere.json", path)
        return path

    return make


def _under_a_file(tmp_path):
    (tmp_path / "a-file").write_text("x")
    return tmp_path / "a-file" / "c.json"


def _partial_without_resume(tmp_path):
    (tmp_path / "c.json.partial.jsonl").write_text('{"fingerprint": "feed"}\n')
    return ["certify", _keys(tmp_path), "--out", tmp_path / "c.json", "--min-margin", "0"]  # the per-key road


def _partial_is_a_fifo(tmp_path):
    os.mkfifo(tmp_path / "c.json.partial.jsonl")
    return ["certify", _keys(tmp_path), "--out", tmp_path / "c.json"]


def _ln_out_is_the_gain(tmp_path):
    gain = tmp_path / "g.npy"
    np.save(gain, np.ones(2))
    return ["certify", _keys(tmp_path), "--keys-from-layernorm-inputs", "--gain", gain, "--out", gain]


def _recheck_out(make_target, *extra):
    def make(tmp_path):
        return [
            "recheck",
            "--only",
            "projection.trace",
            "--samples",
            "32",
            "--device",
            "cpu",
            "--out",
            make_target(tmp_path),
            *extra,
        ]

    return make


def _results_file(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text('{"name": "projection.trace"}\n')
    return path


def _folder_command(*argv):
    def make(tmp_path):
        return [a.format(tmp=tmp_path) if isinstance(a, str) else a for a in argv]

    return make


def _report_figures_link(tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", tmp_path / "r" / "figures")
    return ["report", "--out", tmp_path / "r", "--no-recheck", "--no-pdf"]


def _class_students_link(tmp_path):
    (tmp_path / "roster.csv").write_text("id\nada\n")
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "class.json").write_text("{}")
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", tmp_path / "o" / "students")
    return [
        "homework",
        "new",
        "--roster",
        tmp_path / "roster.csv",
        "--topics",
        "threshold",
        "--no-pdf",
        "--out",
        tmp_path / "o",
    ]


def _homework_file_link(tmp_path):
    (tmp_path / "hw").mkdir()
    os.symlink("/dev/null", tmp_path / "hw" / "problems.md")
    return ["homework", "new", "--topics", "threshold", "--no-pdf", "--out", tmp_path / "hw"]


def _graded(*extra):
    def make(tmp_path):
        (tmp_path / "hw").mkdir()
        data = {
            "schema": "lnproofs.homework/1",
            "seed": 0,
            "problems": [{"id": "threshold", "topic": "threshold", "magnitudes": ["2", "3"]}],
        }
        (tmp_path / "hw" / "problems.json").write_text(json.dumps(data))
        (tmp_path / "subs").mkdir()
        (tmp_path / "a-file").write_text("x")
        return [
            "homework",
            "grade",
            tmp_path / "subs",
            "--problems",
            tmp_path / "hw",
            *[a.format(tmp=tmp_path) for a in extra],
        ]

    return make


CASES = [
    ("certify-out-folder", _certify_out(lambda t: t), "is a folder"),
    ("certify-out-trailing-slash", _certify_out(lambda t: f"{t}/new/"), "names a folder"),
    ("certify-out-device", _certify_out(lambda t: "/dev/null"), "is a device"),
    ("certify-out-fifo", _certify_out(_fifo), "FIFO"),
    ("certify-out-socket", _certify_out(_socket), "socket"),
    ("certify-out-symlink-to-file", _certify_out(_link_to(None)), "symbolic link"),
    ("certify-out-symlink-to-device", _certify_out(_link_to("/dev/null")), "symbolic link"),
    ("certify-out-dangling-symlink", _certify_out(_link_to("nowhere")), "symbolic link"),
    ("certify-out-under-a-file", _certify_out(_under_a_file), "not a folder"),
    ("certify-out-is-the-keys", lambda t: ["certify", _keys(t), "--out", t / "k.npy"], "is the input file"),
    ("certify-out-is-the-gain", _ln_out_is_the_gain, "is the input file"),
    ("certify-partial-without-resume", _partial_without_resume, "add --resume"),
    ("certify-partial-is-a-fifo", _partial_is_a_fifo, "FIFO"),
    ("recheck-out-device", _recheck_out(lambda t: "/dev/null"), "is a device"),
    ("recheck-out-folder", _recheck_out(lambda t: t), "is a folder"),
    ("recheck-out-holds-results", _recheck_out(_results_file), "add --resume"),
    ("report-out-device", _folder_command("report", "--out", "/dev/null", "--no-recheck"), "is not a folder"),
    ("report-figures-link-outside", _report_figures_link, "out of the output folder"),
    ("reproduce-figure1-out-device", _folder_command("reproduce", "figure1", "--out", "/dev/null"), "not a folder"),
    ("reproduce-majority-out-device", _folder_command("reproduce", "majority", "--out", "/dev/null"), "not a folder"),
    ("reproduce-lm-out-file", _folder_command("reproduce", "lm-tables", "--out", "/dev/null"), "not a folder"),
    ("demo-out-device", _folder_command("demo", "--out", "/dev/null"), "is a device"),
    ("demo-out-folder", _folder_command("demo", "--out", "{tmp}"), "is a folder"),
    ("homework-new-out-device", _folder_command("homework", "new", "--out", "/dev/null", "--no-pdf"), "not a folder"),
    ("homework-new-file-is-a-link", _homework_file_link, "symbolic link"),
    ("homework-class-students-link", _class_students_link, "out of the output folder"),
    ("homework-grade-out-device", _graded("--out", "/dev/null"), "is a device"),
    ("homework-grade-out-folder", _graded("--out", "{tmp}"), "is a folder"),
    ("homework-grade-feedback-file", _graded("--out", "{tmp}/g.csv", "--feedback", "{tmp}/a-file"), "not a folder"),
    ("homework-gradescope-out-device", _graded("--format", "gradescope", "--out", "/dev/null"), "is a device"),
]


def _certify_model_out(make_target):
    """certify-model's output folder: checked before the model is loaded (a tiny GPT-2, two tokens)."""

    def make(tmp_path):
        from bad_inputs.models import _gpt2, _tokens

        return ["certify-model", _gpt2(tmp_path), "--tokens", _tokens(tmp_path, [1, 2]), "--out", make_target(tmp_path)]

    return make


def _dangling(tmp_path):
    path = tmp_path / "gone"
    path.symlink_to(tmp_path / "nowhere")
    return path


def _regular_file(tmp_path):
    path = tmp_path / "taken.txt"
    path.write_text("someone's notes\n")
    return path


CASES += [
    ("certify-model-out-device", _certify_model_out(lambda tmp_path: "/dev/null"), "which is not a folder"),
    ("certify-model-out-fifo", _certify_model_out(_fifo), "which is not a folder"),
    ("certify-model-out-regular-file", _certify_model_out(_regular_file), "which is not a folder"),
    ("certify-model-out-dangling-link", _certify_model_out(_dangling), "symbolic link to nothing"),
]
