"""Hostile and ordinary inputs met by the one reader of each file kind, and resumed work met as a
proposal: numbers read as written (0.1 is 1/10, a byte-order mark skipped, a typo named by its
line), files refused from their size or header before a byte of data is read, what an output
folder holds re-checked against the current inputs, and one run at a time on one output."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from lnproofs.certificates.writes import run_lock
from lnproofs.io.arrays import load_token_ids, read_numbers
from lnproofs.io.bounded import ReadLimits, read_npy
from lnproofs.kernel import FileFormatError, LimitError, OptionError


def _statuses(result):
    return [r["status"] for r in result.json()["results"]]


def test_decimals_are_the_rationals_written_and_check_reads_them_so(cli, tmp_path):
    """0, 0.1, 0.3 on a line are collinear as written (1/10 and 3/10); their nearest floats are not."""
    (tmp_path / "k.csv").write_text("0,0\n1,0.1\n3,0.3\n")
    made = cli(["certify", tmp_path / "k.csv", "--out", tmp_path / "c.json", "--json"])
    assert made.status == 0, made.err
    assert _statuses(made) == ["selectable", "unselectable", "selectable"]
    data = json.loads((tmp_path / "c.json").read_text())
    assert data["keys_reading"] == {"reading": "exact", "scale": "10"}
    assert cli(["check", tmp_path / "c.json"]).status == 0  # the keys file found, read the same way
    assert cli(["check", tmp_path / "c.json", tmp_path / "k.csv"]).status == 0
    data["keys_reading"]["scale"] = "7"  # not a multiple of the file's own scale
    (tmp_path / "c.json").write_text(json.dumps(data))
    refused = cli(["check", tmp_path / "c.json"])
    assert refused.status == 2 and "does not divide the scale 7" in refused.err
    rounded = cli(["certify", tmp_path / "k.csv", "--as-float64", "--out", tmp_path / "f.json", "--json"])
    assert _statuses(rounded) == ["selectable"] * 3  # numpy's reading: three points not on a line
    assert json.loads((tmp_path / "f.json").read_text())["keys_reading"] == {"reading": "float64"}
    assert cli(["check", tmp_path / "f.json"]).status == 0


def test_a_key_bias_shares_the_keys_scale(cli, tmp_path):
    """Scores q.k_j + b_j with keys and biases as decimals: both times one common scale, the same query."""
    (tmp_path / "k.csv").write_text("0,0\n1,0\n0,1\n")
    (tmp_path / "b.csv").write_text("0\n0.1\n0.25\n")
    made = cli(["certify", tmp_path / "k.csv", "--key-bias", tmp_path / "b.csv", "--out", tmp_path / "c.json"])
    assert made.status == 0, made.err
    data = json.loads((tmp_path / "c.json").read_text())
    bias = np.load(tmp_path / data["arrays"]["bias"]["path"])
    assert data["keys_reading"]["scale"] == "20" and bias.tolist() == [0.0, 2.0, 5.0]
    assert cli(["check", tmp_path / "c.json"]).status == 0


def test_a_byte_order_mark_is_skipped_and_a_first_line_of_numbers_is_data(tmp_path):
    path = tmp_path / "k.csv"
    path.write_bytes("\ufeffx,y\n0,0\n1,0\n2,0\n1,1\n1,-1\n".encode())  # Excel's "CSV UTF-8"
    assert read_numbers(path).values.shape == (5, 2)
    path.write_bytes("\ufeff0,0\n1,0\n2,0\n1,1\n1,-1\n".encode())
    assert read_numbers(path).values.tolist()[0] == [0.0, 0.0]  # a first line of numbers is a key
    path.write_text("0,0\n1,O\n2,0\n")  # a letter O for a zero
    with pytest.raises(FileFormatError, match="line 2 column 2 holds 'O', a non-number"):
        read_numbers(path)
    path.write_text("1,2x\n3,4\n")  # a typo on the first line is no header: some cells are numbers
    with pytest.raises(FileFormatError, match="line 1 column 2 holds '2x'"):
        read_numbers(path)
    (tmp_path / "t.csv").write_bytes("\ufeffids\n5,6,7\n".encode())
    assert load_token_ids(tmp_path / "t.csv").tolist() == [[5, 6, 7]]
    (tmp_path / "t.csv").write_text("5,6\n7,8,\n")
    with pytest.raises(FileFormatError, match="line 2 column 3"):
        load_token_ids(tmp_path / "t.csv")


def test_a_terabyte_and_a_header_of_a_trillion_entries_are_refused_before_reading(tmp_path, monkeypatch):
    from lnproofs.io import files

    monkeypatch.setattr(files.hashlib, "sha256", lambda *a: pytest.fail("hashed before the size check"))
    sparse = tmp_path / "k.npy"
    with open(sparse, "wb") as handle:
        handle.truncate(1 << 40)  # a sparse file: a terabyte that takes no room
    with pytest.raises(LimitError, match=f"{1 << 40} bytes, past the limit"):
        read_npy(sparse)
    with pytest.raises(LimitError, match="past the limit"):
        files.sha256_input(sparse, max_bytes=8 << 30)
    claims = tmp_path / "h.npy"
    for shape, said in (((10**12,), r"shape \(1000000000000,\), 8000000000000 bytes"), ((10**6, 10**6), "columns")):
        with open(claims, "wb") as handle:  # a header claiming 10^12 entries before 64 bytes of data
            np.lib.format.write_array_header_1_0(handle, {"descr": "<f8", "fortran_order": False, "shape": shape})
            handle.write(b"\0" * 64)
        with pytest.raises(LimitError, match=said):
            read_npy(claims, ReadLimits())


@pytest.mark.skipif(not os.path.exists("/proc/self/mem") or not hasattr(os, "mkfifo"), reason="Linux only")
def test_links_fifos_and_devices_are_refused_in_one_line(cli, tmp_path):
    os.symlink("/proc/self/mem", tmp_path / "k.npy")
    os.mkfifo(tmp_path / "f.npy")  # opened for reading it would wait for a writer
    for name, what in (("k.npy", "a symbolic link (to /proc/self/mem)"), ("f.npy", "a FIFO")):
        result = cli(["certify", tmp_path / name])
        assert result.status == 2 and what in result.err and len(result.err.strip().splitlines()) == 1
    with pytest.raises(FileFormatError, match="a device"):
        read_npy("/dev/zero")


def test_nan_in_a_vocabulary_array_is_one_line(cli, tmp_path):
    from lnproofs.certificates.keyfile import sha256_of
    from lnproofs.propose.vocab import certify_vocab_keys

    keys = np.random.default_rng(0).normal(size=(12, 3))
    np.save(tmp_path / "keys.npy", keys)
    path = certify_vocab_keys(keys).save(tmp_path / "free.json", tmp_path / "keys.npy")
    data = json.loads(path.read_text())
    queries = np.array([[np.nan, 0.0, 0.0]])
    np.save(tmp_path / "free.queries.npy", queries)
    data["arrays"]["queries"] = {"path": "free.queries.npy", "sha256": sha256_of(tmp_path / "free.queries.npy")}
    path.write_text(json.dumps(data))
    result = cli(["check", path])
    assert result.status == 2 and "only finite numbers" in result.err and "Traceback" not in result.err


def test_torch_backend_reads_the_query_set_through_the_kernel(tmp_path):
    """A transposed W_q was accepted by a reader of torch_backend's own; the kernel's schema refuses it."""
    pytest.importorskip("torch")
    from torch_backend.certificates import recheck_certificate

    keys = np.random.default_rng(1).normal(size=(4, 3))
    qs = {"kind": "layernorm", "gamma": [1.0] * 5, "beta": [0.0] * 5, "W_q": np.ones((5, 3)).tolist(), "b_q": [0.0] * 3}
    cert = {"schema": "lnproofs.selectability/1", "n_keys": 4, "dim": 3, "query_set": qs, "results": []}
    with pytest.raises(Exception, match="W_q"):
        recheck_certificate(keys, cert, device="cpu")


# ------------------------------------------------------------------ resumed work, and one run at a time
def _model(folder, seed):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(seed)
    config = transformers.LlamaConfig(
        hidden_size=4, intermediate_size=8, num_hidden_layers=1, num_attention_heads=2, vocab_size=24
    )
    model = transformers.LlamaForCausalLM(config)
    with torch.no_grad():
        model.lm_head.weight.normal_(0.0, 1.0)
    model.save_pretrained(str(folder))
    return folder


def _vocab(cli, model, out, *extra):
    return cli(["certify-vocab", model, "--out", out, "--workers", "1", "--sets", "free,box", *extra])


def test_resume_in_another_models_folder_is_refused(cli, tmp_path):
    a, b, out = _model(tmp_path / "a", 0), _model(tmp_path / "b", 1), tmp_path / "v"
    assert _vocab(cli, a, out).status == 0
    before = (out / "summary.json").read_bytes()
    result = _vocab(cli, b, out, "--resume")
    assert result.status == 2 and "holds the run of other keys" in result.err
    assert (out / "summary.json").read_bytes() == before  # refused before anything was written
    fresh = _vocab(cli, b, tmp_path / "w")
    assert fresh.status == 0 and cli(["check", out / "free.json"]).status == 0


def test_a_planted_or_malformed_finished_set_is_refused_and_another_box_redone(cli, tmp_path):
    from lnproofs.certificates.keyfile import sha256_of

    model, out = _model(tmp_path / "m", 0), tmp_path / "v"
    assert _vocab(cli, model, out).status == 0
    assert _vocab(cli, model, out, "--box", "50", "--resume").status == 0  # another box: that set redone
    summary = json.loads((out / "summary.json").read_text())
    assert summary["box bound"] == 50.0 and summary["how"]["free"].startswith("resumed")
    assert json.loads((out / "box.json").read_text())["query_set"]["bound"] == 50.0  # printed and written agree
    data = json.loads((out / "free.json").read_text())
    data["results"] = [
        {"index": i, "status": "unselectable", "verified": "exact", "combination": None, "witness": None}
        for i in range(data["n_keys"])
    ]
    np.save(out / "free.evidence.npy", np.full(data["n_keys"], 3, dtype=np.int8))
    data["arrays"] = {"evidence": {"path": "free.evidence.npy", "sha256": sha256_of(out / "free.evidence.npy")}}
    (out / "free.json").write_text(json.dumps(data))
    planted = _vocab(cli, model, out, "--box", "50", "--resume")
    assert planted.status == 2 and "does not hold for these keys" in planted.err
    (out / "free.json").write_text("[]")
    listed = _vocab(cli, model, out, "--box", "50", "--resume")
    assert listed.status == 2 and "is not a vocabulary certificate" in listed.err


def test_a_chunk_of_another_model_is_made_again(tmp_path):
    from lnproofs.certificates.writers import query_set_to_json
    from lnproofs.kernel import FreeQueries
    from lnproofs.propose.vocab import _resumed_chunk, certify_vocab_keys

    rng = np.random.default_rng(2)
    mine, other = rng.normal(size=(40, 3)), rng.normal(size=(40, 3))
    question, span = query_set_to_json(FreeQueries()), (0, 20)
    certify_vocab_keys(other, indices=np.arange(*span)).save(tmp_path / "chunk-0-20.json")
    assert _resumed_chunk(tmp_path / "chunk-0-20.json", mine, question, None, span) is None
    certify_vocab_keys(mine, indices=np.arange(*span)).save(tmp_path / "chunk-0-20.json")
    assert _resumed_chunk(tmp_path / "chunk-0-20.json", mine, question, None, span) is not None
    assert _resumed_chunk(tmp_path / "chunk-0-20.json", mine, question, None, (20, 40)) is None  # not its span
    (tmp_path / "chunk-0-20.json").write_text("[1, 2]")
    assert _resumed_chunk(tmp_path / "chunk-0-20.json", mine, question, None, span) is None


def test_a_second_run_on_one_output_is_refused(cli, tmp_path):
    model, out = _model(tmp_path / "m", 0), tmp_path / "v"
    out.mkdir()
    with run_lock(out):  # another run holds the folder
        result = _vocab(cli, model, out)
        assert result.status == 2 and "is being written by another lnproofs run" in result.err
        assert len(result.err.strip().splitlines()) == 1
    assert _vocab(cli, model, out).status == 0 and not (out / ".lnproofs.lock").exists()
    np.save(tmp_path / "k.npy", np.eye(3))
    with run_lock(tmp_path / "c.json", folder=False):
        result = cli(["certify", tmp_path / "k.npy", "--out", tmp_path / "c.json"])
        assert result.status == 2 and "another lnproofs run" in result.err
    with pytest.raises(OptionError, match="another lnproofs run"), run_lock(out), run_lock(out):
        pass


def test_certify_model_resumed_in_another_models_folder_or_on_a_changed_text_is_refused(cli, tmp_path):
    """A text found in the folder is kept only when it was made from these tokens, with these options
    and these weights, and the kernel holds every claim; another model's folder is refused in one line."""
    pytest.importorskip("transformers")
    from bad_inputs.models import tiny_bert

    a, b = tmp_path / "a", tmp_path / "b"
    for folder, seed in ((a, 0), (b, 1)):
        folder.mkdir()
        tiny_bert(folder, layers=1, heads=2, width=8, seed=seed)
    corpus, out = tmp_path / "c.txt", tmp_path / "out"
    corpus.write_text("the cat sat\na dog slept\n")
    argv = ["--corpus", corpus, "--out", out, "--quiet", "--no-causal"]
    assert cli(["certify-model", a, *argv, "--max-texts", "1"]).status == 0
    kept = cli(["certify-model", a, *argv, "--resume"])
    assert kept.status == 0 and "1 kept" in kept.out
    other = cli(["certify-model", b, *argv, "--resume"])
    assert other.status == 2 and "holds other weights" in other.err and len(other.err.strip().splitlines()) == 1
    path = out / "texts" / "text00000.json"
    data = json.loads(path.read_text())
    result = next(r for r in data["layers"][0]["outputs"]["results"] if r["status"] == "selectable")
    result["status"] = "unselectable"  # a planted claim: the kernel refutes it
    path.write_text(json.dumps(data))
    planted = cli(["certify-model", a, *argv, "--resume"])
    assert planted.status == 2 and "does not hold" in planted.err and len(planted.err.strip().splitlines()) == 1


def test_uniform_attention_and_a_subspace_read_decimals_as_written(cli, tmp_path):
    """Equal scores for 0, (1, 0.1), (3, 0.3): a query orthogonal to their line exists as written,
    and none for their nearest floats, which span the plane affinely."""
    (tmp_path / "k.csv").write_text("0,0\n1,0.1\n3,0.3\n")
    exact = cli(["uniform", tmp_path / "k.csv", "--json"])
    rounded = cli(["uniform", tmp_path / "k.csv", "--json", "--as-float64"])
    assert exact.status == rounded.status == 0
    assert (exact.json()["status"], rounded.json()["status"]) == ("feasible", "infeasible")
    for name, answer in (("exact", exact), ("rounded", rounded)):  # check reads KEYS as the answer says
        (tmp_path / f"{name}.json").write_text(answer.out)
        checked = cli(["check", tmp_path / f"{name}.json", tmp_path / "k.csv"])
        assert checked.status == 0 and "every claim holds" in checked.out, checked.out + checked.err
    (tmp_path / "w.csv").write_text("0.1,0.3\n")  # q = z (1, 3) / 10: the same queries as (1, 3)
    (tmp_path / "keys.csv").write_text("0,0\n1,0\n2,1\n")
    result = cli(["certify", tmp_path / "keys.csv", "--query-subspace", tmp_path / "w.csv", "--json"])
    assert result.status == 0 and result.json()["query_set"]["W"] == [[1.0, 3.0]]
    weights = cli(["attention-weight", tmp_path / "k.csv", "--target", "0", "--min-norm", "--weight", "0.5"])
    assert weights.status == 2 and "no float64 equals" in weights.err
