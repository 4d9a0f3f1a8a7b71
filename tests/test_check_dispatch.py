"""``lnproofs check FILE`` and ``lnproofs check DIR`` run one dispatch by schema: every file kind gets
the same reports either way (a causal record that names its keys is verified in a folder as on its
own), and the answer of ``lnproofs uniform --json`` is a file ``check`` reads."""

from __future__ import annotations

import json

import numpy as np

import lnproofs.commands.check as check_command
from lnproofs.certificates.keyfile import keys_reference

KEYS = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.25, 0.25], [2.0, 2.0]])


def _uniform(cli, tmp_path, keys=KEYS):
    np.save(tmp_path / "k.npy", keys)
    result = cli(["uniform", tmp_path / "k.npy", "--json"])
    assert result.status == 0, result.err
    path = tmp_path / "answer.json"
    path.write_text(result.out)
    return path


def test_an_answer_of_uniform_json_is_checked(cli, tmp_path):
    path = _uniform(cli, tmp_path, KEYS[:2])  # two keys in R^2: a non-zero query ties them
    answer = json.loads(path.read_text())
    assert answer["schema"] == "lnproofs.uniform/1" and answer["status"] == "feasible"
    result = cli(["check", path, tmp_path / "k.npy"])
    assert result.status == 0 and "every claim holds" in result.out, result.out + result.err
    answer["query"] = ["1", "0"]  # q.k_1 - q.k_0 = 1
    path.write_text(json.dumps(answer))
    refuted = cli(["check", path, tmp_path / "k.npy"])
    assert refuted.status == 1 and "q.k_1 - q.k_0 is not 0" in refuted.out
    assert cli(["check", path]).status == 2  # its keys are needed
    np.save(tmp_path / "wide.npy", np.eye(3))
    wrong = cli(["check", path, tmp_path / "wide.npy"])
    assert wrong.status == 2 and "keys have shape (3, 3)" in wrong.err


def test_an_infeasible_answer_is_checked_and_a_false_one_refuted(cli, tmp_path):
    path = _uniform(cli, tmp_path)  # five keys spanning R^2: no non-zero query ties them all
    assert json.loads(path.read_text())["status"] == "infeasible"
    assert cli(["check", path, tmp_path / "k.npy"]).status == 0
    flat = tmp_path / "flat.npy"
    np.save(
        flat, np.array([[0.0, 1.0], [1.0, 1.0], [2.0, 1.0], [3.0, 1.0], [4.0, 1.0]])
    )  # on one line: q = (0, 1) ties them
    assert cli(["check", path, flat]).status == 1


def _causal_record(tmp_path):
    from lnproofs.propose.causal import causal_evidence

    np.save(tmp_path / "k.npy", KEYS)
    record = causal_evidence(KEYS)
    record["keys_file"] = keys_reference(tmp_path / "record.json", tmp_path / "k.npy")
    (tmp_path / "record.json").write_text(json.dumps(record))
    return record


def test_a_causal_record_in_a_folder_is_verified_as_on_its_own(cli, tmp_path):
    record = _causal_record(tmp_path)
    alone = cli(["check", tmp_path / "record.json", "--json"])
    folder = cli(["check", tmp_path, "--json"])
    assert alone.status == folder.status == 0, alone.err + folder.err
    assert folder.json()["files"][0]["checks"] == [alone.json()]
    stopped = next(e for e in record["keys"] if e["stop"] is not None)
    stopped["stop"] = None  # a key that stops, claimed to win at every position
    stopped["cannot_win"] = None
    (tmp_path / "record.json").write_text(json.dumps(record))
    assert cli(["check", tmp_path / "record.json"]).status == 1
    assert cli(["check", tmp_path]).status == 1


def test_a_file_and_a_folder_run_the_same_code_for_every_file(cli, tmp_path, monkeypatch):
    """Each file of a folder goes through check_file, the code that checks one file."""
    _causal_record(tmp_path)
    assert cli(["certify", tmp_path / "k.npy", "--out", tmp_path / "cert.json"]).status == 0
    seen, real = [], check_command.check_file
    monkeypatch.setattr(
        check_command, "check_file", lambda path, *a, **k: seen.append(path.name) or real(path, *a, **k)
    )
    assert cli(["check", tmp_path]).status == 0
    assert sorted(seen) == ["cert.json", "record.json"]
    seen.clear()
    assert cli(["check", tmp_path / "cert.json"]).status == 0 and seen == ["cert.json"]
