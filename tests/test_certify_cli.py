"""``lnproofs certify`` and ``lnproofs check`` end to end, and resuming an interrupted run."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lnproofs.certificates.certificate import Certificate
from lnproofs.certificates.check import check_certificate
from lnproofs.certificates.writers import result_to_json
from lnproofs.propose.certification import certify, partial_path

KEYS = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [2.0, 2.0], [1.0, 1.0], [1.0, 0.0]])


def test_certify_writes_the_documented_json_and_check_accepts_it(cli, tmp_path):
    np.save(tmp_path / "k.npy", KEYS)
    out = tmp_path / "cert.json"
    result = cli(["certify", tmp_path / "k.npy", "--out", out])
    assert result.status == 0, result.err
    assert "key 4: unselectable" in result.out and "key 5: tie-only" in result.out
    data = json.loads(out.read_text())
    assert data["schema"] == "lnproofs.vocab/1"  # the manifest; its arrays beside it
    assert (data["n_keys"], data["dim"], data["query_set"]) == (6, 2, {"kind": "free"})
    assert data["counts"] == {"selectable": 4, "tie-only": 1, "unselectable": 1}
    assert set(data["arrays"]) >= {"evidence"} and all(
        (tmp_path / a["path"]).is_file() for a in data["arrays"].values()
    )
    row = next(r for r in data["results"] if r["index"] == 4)  # a full result for each key not selectable
    assert set(row) >= {"index", "status", "witness", "combination", "verified", "margin", "reason"}
    assert row["verified"] == "exact" and all(isinstance(w, str) for w in row["combination"]["weights"])
    assert not partial_path(out).exists() and not out.with_name("cert.json.chunks").exists()
    checked = cli(["check", out, tmp_path / "k.npy"])
    assert checked.status == 0, checked.err
    assert "every claim holds" in checked.out


def test_check_reports_a_refuted_claim_with_exit_status_1(cli, tmp_path):
    np.save(tmp_path / "k.npy", KEYS)
    data = certify(KEYS).to_json()
    data["results"][1]["witness"] = [1.0, 0.0]
    (tmp_path / "bad.json").write_text(json.dumps(data))
    result = cli(["check", tmp_path / "bad.json", tmp_path / "k.npy", "--json"])
    assert result.status == 1
    verdict = result.json()
    assert verdict["ok"] is False and verdict["failures"][0]["index"] == 1
    assert "q.k_1 - q.k_3" in verdict["failures"][0]["message"]


def test_certify_json_to_stdout_reads_csv(cli, tmp_path):
    path = tmp_path / "k.csv"
    path.write_text("x,y\n" + "\n".join(",".join(repr(float(v)) for v in row) for row in KEYS))
    result = cli(["certify", path, "--json"])
    assert result.status == 0, result.err
    cert = Certificate.from_json(result.out)
    assert check_certificate(cert, KEYS).ok


def test_an_interrupted_run_resumes_and_loses_nothing(tmp_path, monkeypatch):
    import lnproofs.propose.engine as engine_module

    keys = np.random.default_rng(2).standard_normal((300, 3))
    out = tmp_path / "cert.json"
    calls = {"n": 0}
    original = engine_module._Engine.clarkson

    def interrupted(self, i):
        calls["n"] += 1
        if calls["n"] > 5:
            raise KeyboardInterrupt
        return original(self, i)

    monkeypatch.setattr(engine_module._Engine, "clarkson", interrupted)
    with pytest.raises(KeyboardInterrupt):
        certify(keys, out=out)
    side = partial_path(out)
    assert side.exists() and not out.exists()
    kept = [json.loads(line) for line in side.read_text().splitlines()[1:]]
    assert kept and {r["status"] for r in kept} <= {"selectable", "unselectable"}  # bulk stages were written
    from lnproofs.kernel import FreeQueries, KeyResult

    assert all(v.ok for v in FreeQueries().check(keys, [KeyResult.from_json(r) for r in kept]))

    monkeypatch.setattr(engine_module._Engine, "clarkson", original)
    seen = []
    monkeypatch.setattr(engine_module._Engine, "clarkson", lambda self, i: seen.append(i) or original(self, i))
    cert = certify(keys, out=out, resume=True)
    assert check_certificate(cert, keys).ok and "undecided" not in cert.statuses
    resumed = {r["index"]: r for r in kept}
    for r in cert:
        if r.index in resumed:
            assert result_to_json(r) == resumed[r.index]
    assert out.exists() and not side.exists()
    assert len(seen) <= 300 - len(kept)


def test_resume_refuses_a_partial_file_for_other_keys(tmp_path):
    out = tmp_path / "cert.json"
    partial_path(out).write_text(json.dumps({"fingerprint": "0" * 64}) + "\n")
    from lnproofs.kernel import OptionError

    with pytest.raises(OptionError, match="other keys"):
        certify(KEYS, out=out, resume=True)
