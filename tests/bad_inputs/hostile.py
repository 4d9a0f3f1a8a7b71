"""Hostile files: each crashed a reader, or could make the checker work without bound, before.

Certificates are mutations of a valid one about 4 keys in R^2 (most crashed ``lnproofs check``
with an internal error); keys files, corpus lines, answers and config files follow.  Every case
gets one line naming the value or the limit, exit status 2.
"""

import hashlib
import json
import struct

import numpy as np

_KEYS = [[2.0, 0.0], [0.0, 2.0], [-2.0, 0.0], [0.0, 0.0]]


def _valid():
    results = [{"index": i, "status": "selectable", "witness": list(k), "combination": None,
                "verified": "exact", "margin": None, "reason": None} for i, k in enumerate(_KEYS[:3])]
    results.append({"index": 3, "status": "undecided", "witness": None, "combination": None,
                    "verified": "none", "margin": None, "reason": "not tried"})
    return {"schema": "lnproofs.selectability/1", "n_keys": 4, "dim": 2, "query_set": {"kind": "free"},
            "results": results}


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
    with open(path, "wb") as handle:       # a hand-written header: numpy would pickle the objects
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


CASES = [
    # the three crashes of the report, past the limits or refused by the schema
    ("float-literal-beyond-range", _check(text=_raw_witness("1E400")), "only finite numbers"),
    ("deeply-nested-extra-field", _check(text=lambda b: b[:-1] + ', "x": ' + "[" * 100000 + "]" * 100000 + "}"),
     "nests arrays and objects"),
    ("json-integer-past-python-digit-limit", _check(text=_raw_witness("7" * 5000)), "not valid json"),
    # bounded work
    ("number-past-digit-limit", _check(_witness("7" * 10001)), "past the limit of 10000 digits"),
    ("rational-past-digit-limit", _check(_witness("1/" + "3" * 10001)), "--max-digits"),
    ("decimal-exponent-past-limit", _check(_witness("1e999999999")), "decimal exponent"),
    ("underscored-exponent", _check(_witness("1e1_000_000_000")), "decimal exponent"),
    ("digit-limit-lowered", _check(_witness("12345/7"), extra=("--max-digits", "3")), "past the limit of 3 digits"),
    ("size-past-limit", _check(lambda d: d.update(padding="x" * 100_000), extra=("--max-bytes-per-entry", "1")),
     "--max-bytes-per-entry"),
    ("nesting-past-limit", _check(lambda d: d.update(x=_nested(70))), "past the limit of 64"),
    ("dim-past-limit", _check(extra=("--max-dim", "1")), "--max-dim"),
    ("max-digits-zero", _check(extra=("--max-digits", "0")), "--max-digits 0"),
    ("csv-with-a-million-columns", lambda tmp_path: ["check", _check()(tmp_path)[1], _wide(tmp_path)], "--max-dim"),
    # fields that reached arithmetic or a float before
    ("rank-singular-value-huge", _check(lambda d: d.update(rank={
        "exact_affine_dimension": 2, "numerical_affine_dimension": 2, "singular_values": [10 ** 400, 1.0]})),
     "singular_values"),
    ("margin-beyond-float-range", _check(lambda d: d["results"][0].update(margin="1e400")), "results[0].margin"),
    ("min-margin-beyond-float-range", _check(lambda d: d.update(min_margin="-1e400")), "min_margin"),
    ("ball-radius-huge-integer", _check(lambda d: d.update(query_set={"kind": "ball", "radius": 2 * 10 ** 400})),
     "query-ball radius"),
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


def _nested(depth):
    value = 1
    for _ in range(depth):
        value = [value]
    return value


def _wide(tmp_path):
    path = tmp_path / "wide.csv"
    _wide_csv(path)
    return path
