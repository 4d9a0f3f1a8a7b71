"""The array readers: exact conversions (or a refusal naming the value), limits from headers,
only the wanted members of an archive read, paths inside files checked by one helper."""

from __future__ import annotations

import json
import zipfile
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from lnproofs.certificates import keyfile
from lnproofs.io import bounded
from lnproofs.io.arrays import ReadLimits, load_array, load_token_ids, read_numbers
from lnproofs.io.csv_numbers import parse_number
from lnproofs.kernel import CertificateFormatError, FileFormatError, LimitError, NonFiniteError

BIG = 2**53


def test_integer_keys_past_2_53_are_refused_and_exact_ones_certified(cli, tmp_path):
    np.save(tmp_path / "bad.npy", np.array([[0], [BIG + 4], [BIG + 3]]))
    with pytest.raises(FileFormatError, match=f"{BIG + 3} at index \\(2, 0\\), which no float64 equals"):
        load_array(tmp_path / "bad.npy")
    np.save(tmp_path / "good.npy", np.array([[0], [BIG + 4], [BIG + 2]], dtype=np.int64))
    keys = load_array(tmp_path / "good.npy")
    assert [int(v) for v in keys[:, 0]] == [0, BIG + 4, BIG + 2]  # every value as written
    result = cli(["certify", tmp_path / "good.npy", "--json"])
    assert result.status == 0, result.err
    statuses = [r["status"] for r in result.json()["results"]]
    assert statuses == ["selectable", "selectable", "unselectable"]  # BIG + 2 lies between the others


@pytest.mark.parametrize("dtype", [np.int64, np.uint64, np.int32, np.uint32, np.int16, np.uint8, np.bool_])
def test_every_integer_dtype_is_exact_or_refused(tmp_path, dtype):
    info = np.iinfo(dtype) if dtype is not np.bool_ else None
    values = [0, 1] if info is None else sorted({0, 1, int(info.max), int(info.min), int(info.max) - 1})
    np.save(tmp_path / "k.npy", np.array(values, dtype=dtype).reshape(-1, 1))
    try:
        keys = load_array(tmp_path / "k.npy")
    except FileFormatError as err:
        assert "no float64 equals" in str(err)
        assert any(abs(v) > BIG for v in values)
    else:
        assert [int(v) for v in keys[:, 0]] == [int(v) for v in values]


def test_float16_and_bfloat16_widen_exactly(tmp_path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file

    every16 = np.arange(1 << 16, dtype=np.uint16)
    halves = every16.view(np.float16)
    halves = halves[np.isfinite(halves)].reshape(-1, 1)
    np.save(tmp_path / "h.npy", halves)
    assert np.array_equal(load_array(tmp_path / "h.npy"), halves.astype(np.float64))
    brain = torch.from_numpy(every16.astype(np.int16)).view(torch.bfloat16)
    brain = brain[torch.isfinite(brain)].reshape(-1, 1)
    save_file({"keys": brain}, tmp_path / "b.safetensors")
    torch.save({"keys": brain}, tmp_path / "b.pt")
    want = brain.to(torch.float64).numpy()
    for name in ("b.safetensors", "b.pt"):
        assert np.array_equal(load_array(tmp_path / name), want), name
    for value in want[::997, 0]:  # each widened value is the bfloat16 exactly: upper half of a float32
        assert float(np.float32(value)) == value


def test_csv_decimals_are_the_rationals_they_denote(tmp_path):
    assert parse_number("0.5", "x") == Fraction(1, 2) and parse_number("-3e2", "x") == -300
    assert parse_number("0.1", "x") == Fraction(1, 10) and parse_number(" 1/3 ", "x") == Fraction(1, 3)
    assert parse_number("1e-400", "x") == Fraction(1, 10**400) and parse_number(".5", "x") == Fraction(1, 2)
    assert parse_number(str(BIG + 3), "x") == BIG + 3
    for text in ("x", "", "1.2.3", "0x10", "1_000", "\u0661"):
        with pytest.raises(ValueError):
            parse_number(text, "x")
    with pytest.raises(NonFiniteError, match="nan"):
        parse_number("nan", "x")
    with pytest.raises(LimitError, match="exponent"):
        parse_number("1e999999999", "x")  # a billion digits, never expanded
    exact = str(Decimal(0.1))
    (tmp_path / "k.csv").write_text(f"a,b\n{exact},1\n0.25,-2\n")
    assert load_array(tmp_path / "k.csv").tolist() == [[0.1, 1.0], [0.25, -2.0]]  # floats as written: scale 1
    (tmp_path / "d.csv").write_text("0,0\n1,0.1\n3,0.3\n")
    keys, scale, rounded = read_numbers(tmp_path / "d.csv")
    assert scale == 10 and not rounded and keys.tolist() == [[0, 0], [10, 1], [30, 3]]  # the rationals times 10
    near, one, rounded = read_numbers(tmp_path / "d.csv", as_float64=True)
    assert one == 1 and rounded and near.tolist() == [[0, 0], [1, 0.1], [3, 0.3]]  # numpy's reading
    assert near.tolist() == np.loadtxt(tmp_path / "d.csv", delimiter=",").tolist()
    with pytest.raises(FileFormatError, match="no float64 equals"):
        load_array(tmp_path / "d.csv")  # an input read as floats refuses what would need a scale
    (tmp_path / "big.csv").write_text(f"1,{BIG + 3}\n")
    with pytest.raises(FileFormatError, match="has no float64"):
        read_numbers(tmp_path / "big.csv")


def test_token_ids_are_integers_read_exactly(tmp_path):
    np.save(tmp_path / "t.npy", np.array([[1, 2], [3, BIG + 1]], dtype=np.int64))
    assert load_token_ids(tmp_path / "t.npy").tolist() == [[1, 2], [3, BIG + 1]]  # never through float64
    np.save(tmp_path / "f.npy", np.array([1.0, 2.0]))
    assert load_token_ids(tmp_path / "f.npy").dtype == np.int64
    np.save(tmp_path / "h.npy", np.array([1.0, 2.5]))
    with pytest.raises(FileFormatError, match=r"hold 2.5 at index \(1,\); token ids are integers"):
        load_token_ids(tmp_path / "h.npy")
    np.save(tmp_path / "n.npy", np.array([1, -4]))
    with pytest.raises(FileFormatError, match="hold -4"):
        load_token_ids(tmp_path / "n.npy")
    np.save(tmp_path / "u.npy", np.array([2**64 - 1], dtype=np.uint64))
    with pytest.raises(FileFormatError, match="18446744073709551615"):
        load_token_ids(tmp_path / "u.npy")


def test_an_npz_gives_only_the_members_asked_for(tmp_path, monkeypatch):
    np.savez(tmp_path / "k.npz", keys=np.eye(2), other=np.zeros((3, 3)), third=np.ones(4))
    opened = []
    real = zipfile.ZipFile.open
    monkeypatch.setattr(
        zipfile.ZipFile,
        "open",
        lambda self, name, *a, **k: opened.append(getattr(name, "filename", name)) or real(self, name, *a, **k),
    )
    assert load_array(tmp_path / "k.npz").tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert set(opened) == {"keys.npy"}
    opened.clear()
    assert set(bounded.read_npz(tmp_path / "k.npz", ["third", "absent"])) == {"third"}
    assert set(opened) == {"third.npy"}
    assert sorted(bounded.npz_names(tmp_path / "k.npz")) == ["keys", "other", "third"]


def test_limits_are_checked_from_the_headers(tmp_path):
    small = ReadLimits(max_array_bytes=64, max_dim=3)
    np.save(tmp_path / "k.npy", np.zeros((3, 3)))  # 72 bytes as float64
    np.savez_compressed(tmp_path / "k.npz", keys=np.zeros((3, 3)))
    np.save(tmp_path / "w.npy", np.zeros((1, 4)))
    for name in ("k.npy", "k.npz"):
        with pytest.raises(LimitError, match="--max-array-bytes"):
            load_array(tmp_path / name, limits=small)
    with pytest.raises(LimitError, match="--max-dim"):
        load_array(tmp_path / "w.npy", limits=small)
    np.save(tmp_path / "f.npy", np.zeros((2, 2), dtype=np.float32))  # 4 bytes stored, 8 once read
    with pytest.raises(LimitError, match="32 bytes as float64"):
        load_array(tmp_path / "f.npy", limits=ReadLimits(max_array_bytes=31))
    assert load_array(tmp_path / "f.npy", limits=ReadLimits(max_array_bytes=32)).shape == (2, 2)


def test_pt_tensors_past_their_storage_are_refused_and_views_within_it_read(tmp_path):
    torch = pytest.importorskip("torch")
    torch.save(torch.arange(6.0).reshape(2, 3).T, tmp_path / "t.pt")  # a transposed view: fine
    assert load_array(tmp_path / "t.pt").tolist() == [[0, 3], [1, 4], [2, 5]]
    torch.save(torch.arange(8.0)[2:6].reshape(2, 2), tmp_path / "s.pt")  # a slice of a larger storage
    assert load_array(tmp_path / "s.pt").tolist() == [[2, 3], [4, 5]]
    torch.save(torch.ones(1, 3).expand(5, 3), tmp_path / "e.pt")
    with pytest.raises(LimitError, match="made from a storage of 3 elements"):
        load_array(tmp_path / "e.pt")
    torch.save(torch.tensor([[0], [BIG + 3]]), tmp_path / "i.pt")
    with pytest.raises(FileFormatError, match="no float64 equals"):
        load_array(tmp_path / "i.pt")


def test_a_keys_file_past_the_limit_is_refused_before_it_is_hashed(tmp_path, monkeypatch):
    (tmp_path / "k.npy").write_bytes(b"x" * 1000)
    from lnproofs.io import files

    monkeypatch.setattr(files.hashlib, "sha256", lambda *a: pytest.fail("hashed before the size check"))
    reference = {"path": "k.npy", "sha256": "0" * 64}
    with pytest.raises(LimitError, match="1000 bytes, past the limit of 999"):
        keyfile.resolve_keys(tmp_path / "c.json", reference, None, max_bytes=999)


@pytest.mark.parametrize("path", ["/etc/passwd", "\\\\server\\share", "C:keys.npy", "", "a\x00b", 7, "x" * 5000])
def test_every_path_inside_a_file_is_checked_by_one_helper(tmp_path, path):
    with pytest.raises(CertificateFormatError, match="expected a path relative"):
        keyfile.validate_inner_path(path, "arrays file")
    with pytest.raises(CertificateFormatError, match="keys_file.path"):
        keyfile.validate_reference({"path": path, "sha256": "0" * 64})
    with pytest.raises(CertificateFormatError, match="arrays file"):
        keyfile.inner_file(tmp_path / "text.json", path, "arrays file")


def test_a_text_files_arrays_path_is_validated(cli, tmp_path):
    (tmp_path / "texts").mkdir()
    np.savez(tmp_path / "params.npz", folded=np.array(False))
    data = {"schema": "lnproofs.model-text/2", "arrays": "../params.npz", "layers": [], "heads": []}
    (tmp_path / "texts" / "t.json").write_text(json.dumps(data))
    result = cli(["check", tmp_path / "texts" / "t.json"])  # a relative path may leave the folder
    assert "relative" not in result.err
    data["arrays"] = str(tmp_path / "params.npz")
    (tmp_path / "texts" / "t.json").write_text(json.dumps(data))
    result = cli(["check", tmp_path / "texts" / "t.json"])
    assert result.status == 2 and "expected a path relative" in result.err, result.err


def test_the_python_entry_points_refuse_integers_no_float_holds():
    from lnproofs import certify
    from lnproofs.propose.uniform import uniform_attention

    for call in (lambda k: certify(k), lambda k: uniform_attention(k)):
        with pytest.raises(FileFormatError, match=f"{BIG + 3} at index \\(2, 0\\)"):
            call([[0, 1], [BIG + 4, 1], [BIG + 3, 1]])
    assert [r.status for r in certify([[0], [BIG + 4], [BIG + 2]]).results] == [
        "selectable",
        "selectable",
        "unselectable",
    ]


def test_json_keys_of_a_head_file_refuse_integers_no_float_holds():
    from lnproofs.io.exact import exact_json_array

    assert exact_json_array([[0.5, BIG + 4], [1, 2]], "keys").tolist() == [[0.5, BIG + 4], [1, 2]]
    for bad in ([[0.5, BIG + 3]], [[BIG + 3, 1]], [[2**2000]]):
        with pytest.raises(FileFormatError, match="which no float64 equals"):
            exact_json_array(bad, "keys")


def test_tokens_repeat_like_texts_and_are_never_truncated(cli, tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from bad_inputs.models import tiny_gpt2

    tiny_gpt2(tmp_path / "m", layers=1, heads=2, width=8)
    np.save(tmp_path / "a.npy", np.array([3, 1, 4, 1]))
    np.save(tmp_path / "b.npy", np.array([[5, 9, 2], [6, 5, 3]]))
    result = cli(
        [
            "certify-model",
            tmp_path / "m",
            "--tokens",
            tmp_path / "a.npy",
            "--tokens",
            tmp_path / "b.npy",
            "--uniform",
            "none",
            "--out",
            tmp_path / "o",
            "--quiet",
        ]
    )
    assert result.status in (0, 1), result.err
    texts = sorted((tmp_path / "o" / "texts").glob("text*.json"))
    assert [json.loads(t.read_text())["tokens"] for t in texts] == [[3, 1, 4, 1], [5, 9, 2], [6, 5, 3]]
    np.save(tmp_path / "c.npy", np.array([3.0, 1.5]))
    result = cli(["certify-model", tmp_path / "m", "--tokens", tmp_path / "c.npy", "--out", tmp_path / "p"])
    assert result.status == 2 and "hold 1.5 at index (1,); token ids are integers" in result.err, result.err
