"""Hostile certificates and keys files: refutations of any size in one line, exit status 3 for
internal errors only, the limits, certificates that name their keys file, and ``check DIR``."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from lnproofs.certificates.limits import DEFAULT_LIMITS, parse_json
from lnproofs.certificates.vocab import load_vocab
from lnproofs.kernel import LimitError

KEYS = np.array([[2.0, 0.0], [0.0, 2.0], [-2.0, 0.0], [0.0, -2.0], [0.0, 0.0]])


def _certificate(**witness0):
    results = [
        {
            "index": i,
            "status": "selectable",
            "witness": list(k),
            "combination": None,
            "verified": "exact",
            "margin": None,
            "reason": None,
        }
        for i, k in enumerate(KEYS[:4].tolist())
    ]
    results.append(
        {
            "index": 4,
            "status": "unselectable",
            "witness": None,
            "verified": "exact",
            "margin": None,
            "reason": None,
            "combination": {"indices": [0, 1, 2, 3], "weights": ["1/4"] * 4},
        }
    )
    data = {
        "schema": "lnproofs.selectability/1",
        "n_keys": 5,
        "dim": 2,
        "query_set": {"kind": "free"},
        "results": results,
    }
    data["results"][0].update(witness0)
    return data


def _write(tmp_path, data, name="c.json"):
    np.save(tmp_path / "k.npy", KEYS)
    path = tmp_path / name
    path.write_text(json.dumps(data) if isinstance(data, dict) else data, encoding="utf-8")
    return path, tmp_path / "k.npy"


def _one_refutation(result, *fragments):
    assert result.status == 1, (result.status, result.err)
    assert result.err == ""
    lines = result.out.splitlines()
    assert lines[0] == "1 of 5 claims refuted:" and len(lines) == 2
    for fragment in fragments:
        assert fragment in lines[1], lines[1]


def test_the_valid_certificate_holds(cli, tmp_path):
    assert cli(["check", *_write(tmp_path, _certificate())]).status == 0


@pytest.mark.parametrize(
    "entry",
    [
        "-" + "7" * 4999 + "1/" + "3" * 4999 + "2",  # a 5,000-digit rational witness entry
        "-" + "7" * 5000,  # a long integer (Python's 4,300-digit limit on str(int))
        "-1E400",  # a decimal string past the float range
    ],
)
def test_refutations_of_any_size_are_one_line(cli, tmp_path, entry):
    """The verdict states the failing inequality against the best rival (k_2 scores highest at
    q = (-x, 0)), never the numbers (a reason is plain text)."""
    data = _certificate(witness=[entry, "0"])
    _one_refutation(
        cli(["check", *_write(tmp_path, data)]), "key 0: witness gives q.k_0 - q.k_2 < 0 but the claim needs > 0"
    )


def test_a_huge_weight_is_refuted_in_one_line(cli, tmp_path):
    data = _certificate()
    data["results"][4]["combination"]["weights"][0] = "9" * 6000
    _one_refutation(cli(["check", *_write(tmp_path, data)]), "key 4: the weights do not sum to 1")


def test_a_huge_witness_that_holds_has_its_margin_measured(cli, tmp_path):
    """Scaling a witness by 10^400 keeps it a witness; its margin is measured without a float overflow."""
    data = _certificate(witness=["2" + "0" * 400, "0"], margin=2.0)
    path, keys = _write(tmp_path, data)
    assert cli(["check", path, keys]).status == 0
    data["results"][0]["margin"] = 3.0
    path, keys = _write(tmp_path, data)
    result = cli(["check", path, keys])
    assert result.status == 1 and "margin 3.0 but its witness gives 2.0" in result.out


def test_an_internal_error_exits_3_never_1(cli, tmp_path, monkeypatch):
    import lnproofs.certificates.check as check_module

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(check_module, "check_claims", broken)
    result = cli(["check", *_write(tmp_path, _certificate())])
    assert result.status == 3
    assert result.err.count("\n") == 1 and "internal error: ZeroDivisionError: a bug" in result.err


def test_check_help_documents_the_exit_statuses(cli):
    result = cli(["check", "--help"])
    assert result.status == 0
    for line in ("0  every claim holds", "1  some claim is refuted", "2  bad input", "3  an internal error"):
        assert line in result.out


def test_limits_refuse_depth_and_digits_before_arithmetic():
    with pytest.raises(LimitError, match="past the limit of 64"):
        parse_json("[" * 65 + "]" * 65, "f")
    with pytest.raises(LimitError, match="nests"):
        parse_json("[" * 10**5 + "]" * 10**5, "f")
    assert parse_json("[" * 64 + "]" * 64, "f") == parse_json("[" * 64 + "]" * 64, "f")
    DEFAULT_LIMITS.check_tree({"reason": "the corpus had 1234567890 texts of size 1234567890"}, "f")
    DEFAULT_LIMITS.check_tree({"reason": "x" * 30_000, "r": "1/" + "3" * 10_000}, "f")  # long, but no long number
    with pytest.raises(LimitError, match="a number past the limit of 10000 digits"):
        DEFAULT_LIMITS.check_tree(["ab" + "3" * 10_001 + "x"], "f")


def test_the_defaults_pass_a_uniform_query_of_a_wide_layer():
    """The exact least-norm uniform query under LayerNorm queries is among the largest numbers
    the package writes; its answer passes the default limits (numbers, size per key entry)."""
    from lnproofs.kernel import LayerNormQuerySet
    from lnproofs.propose.uniform import uniform_attention

    rng = np.random.default_rng(1)
    d, n = 64, 5
    keys = rng.standard_normal((n, d))
    qs = LayerNormQuerySet(
        gamma=1 + 0.1 * rng.standard_normal(d),
        beta=0.1 * rng.standard_normal(d),
        W_q=rng.standard_normal((d, d)) / 8,
        b_q=0.1 * rng.standard_normal(d),
    )
    answer = json.dumps(uniform_attention(keys, query_set=qs).to_json())
    assert answer.count("/") > d
    DEFAULT_LIMITS.check_tree(parse_json(answer, "answer"), "answer")
    DEFAULT_LIMITS.check_size(len(answer), n, d, "answer")


def test_certify_out_names_its_keys_and_check_finds_them(cli, tmp_path):
    np.save(tmp_path / "k.npy", KEYS)
    (tmp_path / "out").mkdir()
    assert cli(["certify", tmp_path / "k.npy", "--out", tmp_path / "out" / "c.json"]).status == 0
    data = json.loads((tmp_path / "out" / "c.json").read_text())
    digest = hashlib.sha256((tmp_path / "k.npy").read_bytes()).hexdigest()
    assert data["keys_file"] == {"path": "../k.npy", "sha256": digest}
    assert load_vocab(tmp_path / "out" / "c.json", data).keys_file["path"] == "../k.npy"
    assert cli(["check", tmp_path / "out" / "c.json"]).status == 0
    assert cli(["check", tmp_path / "out" / "c.json", tmp_path / "k.npy"]).status == 0
    np.save(tmp_path / "k.npy", KEYS * 2)
    result = cli(["check", tmp_path / "out" / "c.json"])
    assert result.status == 2 and "k.npy does not match certificate" in result.err and "c.json" in result.err


def test_an_old_certificate_without_keys_file_still_checks_with_keys(cli, tmp_path):
    path, keys = _write(tmp_path, _certificate())
    assert "keys_file" not in json.loads(path.read_text())
    assert cli(["check", path, keys]).status == 0


def test_check_folder_counts_and_exit_statuses(cli, tmp_path):
    np.save(tmp_path / "k.npy", KEYS)
    digest = hashlib.sha256((tmp_path / "k.npy").read_bytes()).hexdigest()
    good = {**_certificate(), "keys_file": {"path": "k.npy", "sha256": digest}}
    (tmp_path / "a.json").write_text(json.dumps(good))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.json").write_text(json.dumps({**good, "keys_file": {"path": "../k.npy", "sha256": digest}}))
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2"}))  # not a certificate: skipped
    result = cli(["check", tmp_path])
    assert result.status == 0, result.out
    assert result.out.splitlines()[-1] == (
        f"checked 2 certificate files under {tmp_path}: 2 held, 0 refuted, 0 unreadable (1 other JSON files skipped)"
    )
    assert result.err == ""  # no progress bar when stderr is not a terminal
    (tmp_path / "broken.json").write_text('{"schema": "lnproofs.selectability/1", ')
    assert cli(["check", tmp_path]).status == 2
    bad = json.loads(json.dumps(good))
    bad["results"][0]["witness"] = [-1, 0]
    bad["keys_file"]["path"] = "../k.npy"
    (tmp_path / "sub" / "c.json").write_text(json.dumps(bad))
    result = cli(["check", tmp_path])
    assert result.status == 1  # a refuted claim outranks an unreadable file
    assert "2 held, 1 refuted, 1 unreadable" in result.out.splitlines()[-1]
    summary = cli(["check", tmp_path, "--json"]).json()["summary"]
    assert summary == {"checked": 4, "held": 2, "refuted": 1, "unreadable": 1, "internal": 0, "skipped": 1}


def test_corpus_lines_past_the_limit_are_refused(tmp_path, monkeypatch):
    from lnproofs.io import corpus
    from lnproofs.kernel import InputError

    monkeypatch.setattr(corpus, "MAX_LINE_BYTES", 100)
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"text": "short"}) + "\n" + json.dumps({"text": "x" * 200}) + "\n")
    with pytest.raises(InputError, match="line 2 is longer than 100 bytes"):
        list(corpus.iter_corpus(path))
