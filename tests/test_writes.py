"""Outputs touch only what is ours: a device, FIFO or link at an output path is left as it was,
no temporary or partial file survives a failed run, missing folders are created, and an
interrupted run keeps what ``--resume`` needs."""

from __future__ import annotations

import json
import os
import stat

import numpy as np
import pytest

from lnproofs.certificates.writes import folder_entry, open_append, output_file, output_folder, replacing, write_text
from lnproofs.kernel import OptionError


def _keys(tmp_path):
    path = tmp_path / "k.npy"
    np.save(path, np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.25, 0.25]]))
    return path


def test_a_device_stays_a_device(cli, tmp_path):
    before = os.stat("/dev/null")
    result = cli(["certify", _keys(tmp_path), "--out", "/dev/null"])
    assert result.status == 2 and "is a device" in result.err
    after = os.lstat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino
    assert not [p for p in os.listdir("/dev") if p.startswith(".null.")]


def test_a_fifo_and_a_link_are_left_as_they_were(cli, tmp_path):
    os.mkfifo(tmp_path / "fifo.json")
    (tmp_path / "target.json").write_text("theirs")
    os.symlink(tmp_path / "target.json", tmp_path / "link.json")
    for name in ("fifo.json", "link.json"):
        result = cli(["certify", _keys(tmp_path), "--out", tmp_path / name])
        assert result.status == 2, result.err
    assert stat.S_ISFIFO(os.lstat(tmp_path / "fifo.json").st_mode)
    assert os.path.islink(tmp_path / "link.json") and (tmp_path / "target.json").read_text() == "theirs"
    assert sorted(os.listdir(tmp_path)) == ["fifo.json", "k.npy", "link.json", "target.json"]


def test_a_folder_as_out_leaves_nothing_behind(cli, tmp_path):
    (tmp_path / "d").mkdir()
    result = cli(["certify", _keys(tmp_path), "--out", tmp_path / "d"])
    assert result.status == 2 and "is a folder" in result.err
    assert sorted(os.listdir(tmp_path)) == ["d", "k.npy"] and not os.listdir(tmp_path / "d")


def test_missing_parent_folders_are_created(cli, tmp_path):
    out = tmp_path / "a" / "b" / "cert.json"
    result = cli(["certify", _keys(tmp_path), "--out", out])
    assert result.status == 0, result.err
    assert cli(["check", out]).status == 0
    assert sorted(os.listdir(out.parent)) == sorted(
        ["cert.json"] + [ref["path"] for ref in json.loads(out.read_text())["arrays"].values()]
    )  # the manifest and the arrays it names, nothing else


def test_a_regular_output_is_replaced_with_the_usual_permissions(cli, tmp_path):
    out = tmp_path / "cert.json"
    out.write_text("old")
    assert cli(["certify", _keys(tmp_path), "--out", out]).status == 0
    mask = os.umask(0)
    os.umask(mask)
    assert out.read_text().startswith("{") and stat.S_IMODE(out.stat().st_mode) == 0o666 & ~mask


def test_a_failed_run_leaves_no_temporary_or_partial_file(tmp_path, monkeypatch):
    from lnproofs.propose import certification

    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(certification, "certify_results", broken)
    keys = np.load(_keys(tmp_path))
    with pytest.raises(RuntimeError):
        certification.certify(keys, out=tmp_path / "c.json")
    assert os.listdir(tmp_path) == ["k.npy"]


def test_an_interrupted_run_keeps_its_partial_results_for_resume(tmp_path, monkeypatch):
    from lnproofs.propose import certification

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(certification, "certify_results", interrupted)
    keys = np.load(_keys(tmp_path))
    with pytest.raises(KeyboardInterrupt):
        certification.certify(keys, out=tmp_path / "c.json")
    assert sorted(os.listdir(tmp_path)) == ["c.json.partial.jsonl", "k.npy"]
    monkeypatch.undo()
    with pytest.raises(OptionError, match="add --resume"):
        certification.certify(keys, out=tmp_path / "c.json")
    cert = certification.certify(keys, out=tmp_path / "c.json", resume=True)
    assert cert.n_keys == 4 and sorted(os.listdir(tmp_path)) == ["c.json", "k.npy"]


def test_replacing_keeps_the_old_file_when_writing_fails(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(ValueError):
        with replacing(target) as handle:
            handle.write("half")
            raise ValueError("stop")
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["out.txt"]
    write_text(target, "new")
    assert target.read_text() == "new" and os.listdir(tmp_path) == ["out.txt"]


def test_replacing_refuses_a_target_that_became_a_link_meanwhile(tmp_path):
    target = tmp_path / "out.txt"
    (tmp_path / "theirs").write_text("theirs")
    with pytest.raises(OptionError, match="symbolic link"):
        with replacing(target) as handle:
            handle.write("ours")
            os.symlink(tmp_path / "theirs", target)
    assert (tmp_path / "theirs").read_text() == "theirs" and sorted(os.listdir(tmp_path)) == ["out.txt", "theirs"]


def test_open_append_refuses_a_fifo_without_waiting_for_a_reader(tmp_path):
    os.mkfifo(tmp_path / "f")
    with pytest.raises(OptionError, match="FIFO"):
        open_append(tmp_path / "f")
    with open_append(tmp_path / "r.jsonl") as handle:
        handle.write("a\n")
    with open_append(tmp_path / "r.jsonl") as handle:
        handle.write("b\n")
    assert (tmp_path / "r.jsonl").read_text() == "a\nb\n"


def test_folder_entries_stay_inside_the_output(tmp_path):
    root = output_folder(tmp_path / "out")
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", root / "away")
    with pytest.raises(OptionError, match="out of the output folder"):
        folder_entry(root, "away", folder=True)
    (root / "real").mkdir()
    os.symlink(root / "real", root / "inside")
    assert folder_entry(root, "inside/new.txt") == root / "inside" / "new.txt"
    os.symlink("/dev/null", root / "n.txt")
    with pytest.raises(OptionError, match="symbolic link"):
        folder_entry(root, "n.txt")
    # the output folder itself may be a link to a folder: the user named it
    os.symlink(root, tmp_path / "linked")
    assert output_folder(tmp_path / "linked") == tmp_path / "linked"


def test_an_output_is_never_an_input(tmp_path):
    keys = _keys(tmp_path)
    os.symlink(keys, tmp_path / "alias.npy")
    with pytest.raises(OptionError, match="is the input file"):
        output_file(keys, inputs=[tmp_path / "alias.npy"])


def test_recheck_into_its_own_results_resumes_or_refuses(cli, tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "r.jsonl"
    argv = ["recheck", "--only", "projection.trace", "--samples", "32", "--device", "cpu", "--out", out]
    assert cli(argv).status == 0
    again = cli(argv)
    assert again.status == 2 and "add --resume" in again.err and len(out.read_text().splitlines()) == 1
    assert cli(argv + ["--resume"]).status == 0 and len(out.read_text().splitlines()) == 1


def test_a_class_folder_is_completed_or_refused(cli, tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("id\nada\n")
    argv = ["homework", "new", "--roster", roster, "--topics", "threshold", "--no-pdf", "--out", tmp_path / "o"]
    assert cli(argv).status == 0
    before = (tmp_path / "o" / "solutions" / "ada" / "problems.json").read_bytes()
    roster.write_text("id\nada\nbob\n")
    again = cli(argv)  # the same seed and topics: completed, the same bytes
    assert again.status == 0, again.err
    assert (tmp_path / "o" / "solutions" / "ada" / "problems.json").read_bytes() == before
    assert (tmp_path / "o" / "students" / "bob").is_dir()
    other = cli(argv + ["--seed", "5"])
    assert other.status == 2 and "seed 0" in other.err
