"""Hostile files: each crashed a reader, or could make the checker work without bound, before.

Certificates are mutations of a valid one about 4 keys in R^2 (most crashed ``lnproofs check``
with an internal error); keys files, corpus lines, answers and config files follow.  Every case
gets one line naming the value or the limit, exit status 2.
"""

import hashlib
import io
import json
import struct
import zipfile
import zlib

import numpy as np

_KEYS = [[2.0, 0.0], [0.0, 2.0], [-2.0, 0.0], [0.0, 0.0]]


def _valid():
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
        for i, k in enumerate(_KEYS[:3])
    ]
    results.append(
        {
            "index": 3,
            "status": "undecided",
            "witness": None,
            "combination": None,
            "verified": "none",
            "margin": None,
            "reason": "not tried",
        }
    )
    return {
        "schema": "lnproofs.selectability/1",
        "n_keys": 4,
        "dim": 2,
        "query_set": {"kind": "free"},
        "results": results,
    }


def _keys(tmp_path):
    path = tmp_path / "k.npy"
    np.save(path, np.array(_KEYS))
    return path


def _check(edit=None, text=None, extra=()):
    """``check`` of the valid certificate after ``edit(data)`` (or of ``text(json_text)``)."""

    def make(tmp_path):
        data = _valid()
        if edit:
            edit(data)
        body = json.dumps(data)
        path = tmp_path / "c.json"
        path.write_text(text(body) if text else body, encoding="utf-8")
        return ["check", path, _keys(tmp_path), *extra]

    return make


def _named(reference_edit=None, keys_edit=None, give=None):
    """A certificate naming its keys file, with the reference or the keys file then changed."""

    def make(tmp_path):
        keys = _keys(tmp_path)
        data = _valid()
        data["keys_file"] = {"path": "k.npy", "sha256": hashlib.sha256(keys.read_bytes()).hexdigest()}
        if reference_edit:
            reference_edit(data["keys_file"])
        if keys_edit:
            keys_edit(keys)
        path = tmp_path / "c.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        return ["check", path] + ([give(tmp_path)] if give else [])

    return make


def _other_keys(tmp_path):
    path = tmp_path / "other.npy"
    np.save(path, np.array(_KEYS) * 2)
    return path


def _witness(value):
    return lambda d: d["results"][0].update(witness=[value, 0.0])


def _raw_witness(literal):
    return lambda body: body.replace('"witness": [2.0, 0.0]', f'"witness": [{literal}, 0.0]', 1)


def _keys_file(write, suffix):
    def make(tmp_path):
        path = tmp_path / f"k{suffix}"
        write(path)
        return ["certify", path]

    return make


def _object_npy(path):
    with open(path, "wb") as handle:  # a hand-written header: numpy would pickle the objects
        np.lib.format.write_array_header_1_0(handle, {"descr": "|O", "fortran_order": False, "shape": (2, 2)})
        handle.write(b"\x80\x04N.")


def _lying_safetensors(path):
    header = json.dumps({"keys": {"dtype": "F64", "shape": [1000, 1000], "data_offsets": [0, 8000000]}}).encode()
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 64)


def _wide_csv(path):
    path.write_text(",".join(["1"] * 1_000_000) + "\n")


def _folder(tmp_path):
    (tmp_path / "certs").mkdir()
    (tmp_path / "certs" / "notes.json").write_text("{}")
    return ["check", tmp_path / "certs"]


def _answers(text):
    def make(tmp_path):
        (tmp_path / "problems.json").write_text("{}")
        path = tmp_path / "answers.json"
        path.write_text(text)
        return ["homework", "check", path]

    return make


def _zip_bomb_member(name, shape, inflated_to=None, declared=None):
    """``(zip name, local header and data, central entry)`` of an ``.npy`` member of ``shape``
    (float64) whose zeros deflate about 1000:1; with ``inflated_to``, the deflated stream stops
    short of the ``.npy`` header's promise; with ``declared``, the zip headers state that size.  CRCs are not computed: a reader that
    checks the headers refuses the member before inflating, one that does not runs out of memory."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": shape})
    total = header.tell() + 8 * int(np.prod(shape))
    squeeze = zlib.compressobj(1, zlib.DEFLATED, -15)
    parts = [squeeze.compress(header.getvalue()), squeeze.flush(zlib.Z_FULL_FLUSH)]
    chunk = 1 << 24  # 16 MiB of zeros, deflated once, repeated
    block = squeeze.compress(bytes(chunk)) + squeeze.flush(zlib.Z_FULL_FLUSH)
    zeros = (total - header.tell()) if inflated_to is None else inflated_to
    parts += [block] * (zeros // chunk)
    parts += [squeeze.compress(bytes(zeros % chunk)), squeeze.flush(zlib.Z_FINISH)]
    data = b"".join(parts)
    name = name.encode()
    crc = 0 if declared is None else zlib.crc32(header.getvalue() + bytes(declared - header.tell()))
    total = total if declared is None else declared
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0x21, crc, len(data), total, len(name), 0) + name
    central = (
        struct.pack(
            "<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0x21, crc, len(data), total, len(name), 0, 0, 0, 0, 0, 0
        )
        + name
    )
    return local + data, central


def _npz_of(members):
    """An ``.npz`` file: ``members`` is a list of ``(local bytes, central entry)``."""
    body, directory = b"", b""
    for local, central in members:
        directory += central[:42] + struct.pack("<I", len(body)) + central[46:]
        body += local
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(directory), len(body), 0)
    return body + directory + end


def _honest_npz_member(name, array):
    """A valid member, written by zipfile itself, as ``(local bytes, central entry)``."""
    raw = io.BytesIO()
    with zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open(name, "w") as handle:
            np.lib.format.write_array(handle, np.asarray(array))
    data = raw.getvalue()
    start = data.index(struct.pack("<I", 0x02014B50))
    end = data.index(struct.pack("<I", 0x06054B50))
    return data[:start], data[start:end]


def _npz_keys(*members):
    def make(tmp_path):
        path = tmp_path / "k.npz"
        path.write_bytes(_npz_of([m() for m in members]))
        return ["certify", path]

    return make


_BOMB = (7 << 26, 1)  # 3.5 GiB of float64 zeros, about 3.6 MB deflated


def _pt_expanded(path):
    import torch

    torch.save(torch.zeros(1, 768).expand(1 << 20, 768), path)  # 6 GiB as float64, 3 KB on disk


def _sparse_keys_named(tmp_path):
    """A certificate naming a 200 GB keys file that is all holes: hashing it would take an hour."""
    keys = tmp_path / "k.npy"
    with open(keys, "wb") as handle:
        handle.truncate(200 << 30)
    data = _valid()
    data["keys_file"] = {"path": "k.npy", "sha256": "0" * 64}
    (tmp_path / "c.json").write_text(json.dumps(data), encoding="utf-8")
    return ["check", tmp_path / "c.json"]


def _sparse_certificate(tmp_path):
    path = tmp_path / "c.json"
    with open(path, "wb") as handle:
        handle.write(b'{"schema": "lnproofs.selectability/1", "x": "')
        handle.truncate(4 << 30)
    return ["check", path]


def _text_file(arrays):
    """A certify-model text file whose ``arrays`` field is ``arrays``, beside a params.npz."""

    def make(tmp_path):
        (tmp_path / "texts").mkdir()
        np.savez(tmp_path / "params.npz", folded=np.array(False))
        np.savez(tmp_path / "texts" / "a.npz", keys_l0_h0=np.zeros((2, 2)))
        data = {"schema": "lnproofs.model-text/2", "arrays": arrays, "layers": [], "heads": []}
        (tmp_path / "texts" / "text00000.json").write_text(json.dumps(data))
        return ["check", tmp_path / "texts" / "text00000.json"]

    return make


CASES = [
    # readers bounded before they read: sizes from headers, only the wanted members
    ("npz-member-inflating-past-limit", _npz_keys(lambda: _zip_bomb_member("keys.npy", _BOMB)), "--max-array-bytes"),
    (
        "npz-unwanted-member-never-inflated",
        _npz_keys(
            lambda: _zip_bomb_member("other.npy", _BOMB), lambda: _honest_npz_member("keys.npy", [[np.nan, 1.0]])
        ),
        "nan",
    ),
    (
        "npz-npy-header-past-limit-data-missing",
        _npz_keys(lambda: _zip_bomb_member("keys.npy", _BOMB, inflated_to=64)),
        "--max-array-bytes",
    ),
    (
        "npz-npy-header-promising-more-than-the-zip",
        _npz_keys(lambda: _zip_bomb_member("keys.npy", (1 << 20, 4), inflated_to=64, declared=192)),
        "header promises",
    ),
    (
        "npz-limit-lowered",
        lambda tmp_path: (
            _npz_keys(lambda: _honest_npz_member("keys.npy", np.ones((64, 4))))(tmp_path)
            + ["--max-array-bytes", "1000"]
        ),
        "--max-array-bytes",
    ),
    (
        "npy-header-past-limit",
        _keys_file(lambda p: p.write_bytes(_npy_header_only((1 << 30, 8))), ".npy"),
        "--max-array-bytes",
    ),
    (
        "npy-shorter-than-its-header",
        _keys_file(lambda p: p.write_bytes(_npy_header_only((1000, 2)) + b"\0" * 16), ".npy"),
        "header promises",
    ),
    ("pt-stride-zero-expanded-tensor", _keys_file(_pt_expanded, ".pt"), "storage"),
    ("keys-file-sparse-200GB-named", _sparse_keys_named, "--max-array-bytes"),
    ("certificate-sparse-4GB", _sparse_certificate, "for a file read whole"),
    (
        "csv-line-past-limit",
        lambda tmp_path: _keys_file(lambda p: p.write_text("1" * 5000 + "\n"), ".csv")(tmp_path) + ["--max-dim", "2"],
        "longer than 2048 characters",
    ),
    ("csv-columns-past-limit-for-certify", _keys_file(_wide_csv, ".csv"), "--max-dim"),
    ("text-file-arrays-absolute", _text_file("/etc/hostname"), "relative"),
    ("text-file-arrays-missing", _text_file("b.npz"), "does not exist"),
    # exact inputs, or a refusal
    (
        "int64-keys-past-2^53",
        _keys_file(lambda p: np.save(p, np.array([[0], [2**53 + 4], [2**53 + 3]])), ".npy"),
        "9007199254740995 at index (2, 0), which no float64 equals",
    ),
    (
        "uint64-keys-past-2^64-float",
        _keys_file(lambda p: np.save(p, np.array([[1], [2**64 - 1]], dtype=np.uint64)), ".npy"),
        "18446744073709551615",
    ),
    (
        "long-double-keys",
        _keys_file(lambda p: np.save(p, np.array([[np.longdouble(1) / 3], [0]])), ".npy"),
        "no float64 equals",
    ),
    (  # 0.1 is 1/10, read exactly; but 1e-400 beside 1 needs the scale 10^400, past every float64
        "csv-decimals-no-common-scale",
        _keys_file(lambda p: p.write_text("0,1e-400\n1,0\n"), ".csv"),
        "has no float64",
    ),
    (
        "gain-decimals-no-common-scale",
        lambda tmp_path: (
            _keys_file(lambda p: np.save(p, np.eye(3)), ".npy")(tmp_path)
            + ["--keys-from-layernorm-inputs", "--gain", "1,1e-400,1"]
        ),
        "has no float64",
    ),
    (  # LayerNorm with eps > 0 changes when its inputs are scaled: the exact reading is refused there
        "layernorm-inputs-decimals-with-eps",
        lambda tmp_path: (
            _keys_file(lambda p: p.write_text("1,0.1,0\n0,1,0.3\n"), ".csv")(tmp_path)
            + ["--keys-from-layernorm-inputs", "--eps", "1e-5"]
        ),
        "not supported here yet",
    ),
    # the three crashes of the report, past the limits or refused by the schema
    ("float-literal-beyond-range", _check(text=_raw_witness("1E400")), "only finite numbers"),
    (
        "deeply-nested-extra-field",
        _check(text=lambda b: b[:-1] + ', "x": ' + "[" * 100000 + "]" * 100000 + "}"),
        "nests arrays and objects",
    ),
    ("json-integer-past-python-digit-limit", _check(text=_raw_witness("7" * 5000)), "not valid json"),
    # bounded work
    ("number-past-digit-limit", _check(_witness("7" * 10001)), "past the limit of 10000 digits"),
    ("rational-past-digit-limit", _check(_witness("1/" + "3" * 10001)), "--max-digits"),
    ("decimal-exponent-past-limit", _check(_witness("1e999999999")), "decimal exponent"),
    ("underscored-exponent", _check(_witness("1e1_000_000_000")), "decimal exponent"),
    ("digit-limit-lowered", _check(_witness("12345/7"), extra=("--max-digits", "3")), "past the limit of 3 digits"),
    (
        "size-past-limit",
        _check(lambda d: d.update(padding="x" * 100_000), extra=("--max-bytes-per-entry", "1")),
        "--max-bytes-per-entry",
    ),
    ("nesting-past-limit", _check(lambda d: d.update(x=_nested(70))), "past the limit of 64"),
    ("dim-past-limit", _check(extra=("--max-dim", "1")), "--max-dim"),
    ("max-digits-zero", _check(extra=("--max-digits", "0")), "--max-digits 0"),
    ("csv-with-a-million-columns", lambda tmp_path: ["check", _check()(tmp_path)[1], _wide(tmp_path)], "--max-dim"),
    # fields that reached arithmetic or a float before
    (
        "rank-singular-value-huge",
        _check(
            lambda d: d.update(
                rank={"exact_affine_dimension": 2, "numerical_affine_dimension": 2, "singular_values": [10**400, 1.0]}
            )
        ),
        "singular_values",
    ),
    ("margin-beyond-float-range", _check(lambda d: d["results"][0].update(margin="1e400")), "results[0].margin"),
    ("min-margin-beyond-float-range", _check(lambda d: d.update(min_margin="-1e400")), "min_margin"),
    (
        "ball-radius-huge-integer",
        _check(lambda d: d.update(query_set={"kind": "ball", "radius": 2 * 10**400})),
        "query-ball radius",
    ),
    ("bom-and-garbage", _check(text=lambda b: "\ufeff" + b[:40]), "not valid json"),
    # keys files named by the certificate
    ("keys-file-edited", _named(keys_edit=lambda p: np.save(p, np.array(_KEYS) * 3)), "does not match"),
    ("keys-file-truncated", _named(keys_edit=lambda p: p.write_bytes(p.read_bytes()[:50])), "does not match"),
    ("keys-file-wrong-given", _named(give=_other_keys), "does not match certificate"),
    ("keys-file-missing", _named(keys_edit=lambda p: p.unlink()), "does not exist"),
    ("keys-file-absolute", _named(reference_edit=lambda r: r.update(path="/etc/hosts")), "relative"),
    ("keys-file-bad-hash", _named(reference_edit=lambda r: r.update(sha256="abc")), "keys_file.sha256"),
    ("keys-file-not-an-object", _named(reference_edit=lambda r: r.update(extra=1)), "exactly 'path' and 'sha256'"),
    # folders
    ("folder-without-certificates", _folder, "holds no certificate"),
    ("folder-with-keys", lambda tmp_path: _folder(tmp_path) + [_keys(tmp_path)], "leave keys out"),
    # keys files of every kind
    ("npy-object-dtype", _keys_file(_object_npy, ".npy"), "python objects"),
    ("safetensors-lying-header", _keys_file(_lying_safetensors, ".safetensors"), "do not match its shape"),
    # answers files
    ("answers-deeply-nested", _answers('{"answers": ' + "[" * 100000 + "]" * 100000 + "}"), "nested too deep"),
    ("answers-integer-past-digit-limit", _answers('{"answers": {"x": ' + "9" * 5000 + "}}"), "not valid json"),
]


def _npy_header_only(shape):
    out = io.BytesIO()
    np.lib.format.write_array_header_1_0(out, {"descr": "<f8", "fortran_order": False, "shape": shape})
    return out.getvalue()


def _nested(depth):
    value = 1
    for _ in range(depth):
        value = [value]
    return value


def _wide(tmp_path):
    path = tmp_path / "wide.csv"
    _wide_csv(path)
    return path
