"""``lnproofs check DIR`` says what it skipped: entries it could not read (a sub-folder that
cannot be listed, a link to nothing, a FIFO) and files that look like certificates but are not
readable (a near-miss schema, certificate fields without a schema) are counted, named in the
summary, and make the exit status 2; other JSON is skipped and counted."""

from __future__ import annotations

import json
import os

import numpy as np


def _folder(cli, tmp_path):
    np.save(tmp_path / "k.npy", np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.25, 0.25]]))
    assert cli(["certify", tmp_path / "k.npy", "--out", tmp_path / "a.json"]).status == 0
    return json.loads((tmp_path / "a.json").read_text())


def test_check_folder_names_what_it_could_not_read(cli, tmp_path, monkeypatch):
    good = _folder(cli, tmp_path)
    (tmp_path / "near.json").write_text(json.dumps({**good, "schema": "lnproofs.selectability/2"}))
    (tmp_path / "bare.json").write_text(json.dumps({k: v for k, v in good.items() if k != "schema"}))
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "hidden.json").write_text(json.dumps(good))
    os.symlink(tmp_path / "nowhere.json", tmp_path / "dangling.json")
    os.mkfifo(tmp_path / "pipe.json")  # never opened: it would wait for a writer
    (tmp_path / "config.json").write_text(json.dumps({"schema": "other/1"}))  # not ours: skipped
    real_scandir = os.scandir

    def scandir(path="."):  # a sub-folder without permission (the tests run as root)
        if os.fspath(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    result = cli(["check", tmp_path])
    assert result.status == 2, result.out + result.err
    last = result.out.splitlines()[-1]
    assert "1 held, 0 refuted, 5 unreadable (1 other JSON files skipped)" in last, last
    for name in ("locked", "near.json", "bare.json", "dangling.json", "pipe.json"):
        assert name in last, (name, last)
    assert "is not one this lnproofs reads" in result.out and "Permission denied" in result.out
    report = cli(["check", tmp_path, "--json"]).json()
    assert report["summary"]["unreadable"] == 5
    assert {r["file"].rsplit("/", 1)[-1] for r in report["files"] if r["status"] == "unreadable"} == {
        "locked",
        "near.json",
        "bare.json",
        "dangling.json",
        "pipe.json",
    }


def test_a_folder_reached_by_a_link_is_named_not_followed(cli, tmp_path):
    _folder(cli, tmp_path)
    os.symlink(tmp_path, tmp_path / "loop")  # followed, it would never end
    result = cli(["check", tmp_path])
    assert result.status == 0, result.out + result.err
    assert result.out.splitlines()[-1].endswith(f"not followed: {tmp_path / 'loop'}")


def test_other_lnproofs_files_are_skipped_not_refused(cli, tmp_path):
    _folder(cli, tmp_path)
    (tmp_path / "class.json").write_text(json.dumps({"schema": "lnproofs.homework-class/1"}))
    result = cli(["check", tmp_path])
    assert result.status == 0 and "(1 other JSON files skipped)" in result.out.splitlines()[-1]
