"""Bad input to ``lnproofs certify`` and ``lnproofs check`` (file errors are in arrays.py)."""

import json

import numpy as np


def _keys(tmp_path):
    path = tmp_path / "k.npy"
    np.save(path, np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]))
    return path


def _cert(tmp_path, edit=None, text=None):
    path = tmp_path / "c.json"
    data = {
        "schema": "lnproofs.selectability/1",
        "n_keys": 3,
        "dim": 2,
        "query_set": {"kind": "free"},
        "results": [
            {
                "index": i,
                "status": "undecided",
                "witness": None,
                "combination": None,
                "verified": "none",
                "margin": None,
                "reason": "x",
            }
            for i in range(3)
        ],
    }
    if edit:
        edit(data)
    path.write_text(text if text is not None else json.dumps(data))
    return path


def _check(edit=None, text=None):
    return lambda tmp_path: ["check", _cert(tmp_path, edit, text), _keys(tmp_path)]


def _resume_without_out(tmp_path):
    return ["certify", _keys(tmp_path), "--resume"]


def _resume_other_keys(tmp_path):
    (tmp_path / "c.json.partial.jsonl").write_text('{"fingerprint": "feed"}\n')
    # the per-key road (--min-margin) keeps its results in the .partial.jsonl
    return ["certify", _keys(tmp_path), "--out", tmp_path / "c.json", "--resume", "--min-margin", "0"]


def _wrong_shape(tmp_path):
    path = tmp_path / "k.npy"
    np.save(path, np.zeros((4, 2)))
    return ["check", _cert(tmp_path), path]


def _certify(*extra):
    return lambda tmp_path: ["certify", _keys(tmp_path), *extra]


def _ln(*extra):
    return lambda tmp_path: ["certify", _keys(tmp_path), "--keys-from-layernorm-inputs", *extra]


def _ln_bias_file(tmp_path):
    path = tmp_path / "b.npy"
    np.save(path, np.zeros(3))
    return ["certify", _keys(tmp_path), "--keys-from-layernorm-inputs", "--bias", path]


def _ln_constant_row(tmp_path):
    path = tmp_path / "x.npy"
    np.save(path, np.array([[0.0, 1.0, 2.0], [3.0, 3.0, 3.0], [1.0, 0.0, 0.0]]))
    return ["certify", path, "--keys-from-layernorm-inputs"]


CASES = [
    ("min-margin-negative", _certify("--min-margin", "-1e-9"), "--min-margin"),
    ("min-margin-not-a-number", _certify("--min-margin", "tiny"), "--min-margin"),
    ("min-margin-nan", _certify("--min-margin", "nan"), "finite number >= 0"),
    ("layernorm-gain-width", _ln("--gain", "1,2,3"), "gain has length 3"),
    ("layernorm-bias-width", _ln_bias_file, "bias has length 3"),
    ("layernorm-gain-not-numbers", _ln("--gain", "one,two"), "comma-separated numbers"),
    ("layernorm-eps-negative", _ln("--eps", "-0.5"), "eps '-0.5' is not allowed"),
    ("layernorm-eps-not-a-number", _ln("--eps", "small"), "eps 'small'"),
    ("layernorm-with-resume", _ln("--resume"), "--resume is not used"),
    ("layernorm-constant-row-eps-zero", _ln_constant_row, "row 1 is constant and eps is 0"),
    ("eps-without-layernorm-inputs", _certify("--eps", "1e-5"), "--keys-from-layernorm-inputs"),
    ("min-margin-with-query-ball", _certify("--min-margin", "1e-9", "--query-ball", "2"), "free queries only"),
    (
        "check-keys-from-negative-eps",
        _check(lambda d: d.update(keys_from={"kind": "layernorm-inputs", "gain": None, "bias": None, "eps": -1})),
        "keys_from.eps",
    ),
    ("check-min-margin-negative", _check(lambda d: d.update(min_margin=-1)), "min_margin"),
    ("resume-without-out", _resume_without_out, "--out"),
    ("zero-workers", lambda tmp_path: ["certify", _keys(tmp_path), "--workers", "0"], "--workers 0"),
    (
        "unreachable-scheduler",
        lambda tmp_path: ["certify", _keys(tmp_path), "--scheduler", "tcp://127.0.0.1:9"],
        "cannot reach the Dask scheduler at --scheduler tcp://127.0.0.1:9",
    ),
    (
        "scheduler-not-an-address",
        lambda tmp_path: ["certify", _keys(tmp_path), "--scheduler", "tcp://"],
        "cannot reach the Dask scheduler",
    ),
    ("resume-other-keys", _resume_other_keys, "other keys"),
    ("check-not-json", _check(text="{not json"), "not valid JSON"),
    (
        "check-missing-certificate",
        lambda tmp_path: ["check", tmp_path / "none.json", _keys(tmp_path)],
        "does not exist",
    ),
    ("check-missing-status", _check(lambda d: d["results"][1].pop("status")), "results[1].status"),
    (
        "check-bad-weight",
        _check(lambda d: d["results"][0].update(combination={"indices": [1], "weights": ["half"]})),
        "weights[0]",
    ),
    ("check-unknown-kind", _check(lambda d: d.update(query_set={"kind": "cube"})), "unknown"),
    ("check-wrong-schema", _check(lambda d: d.update(schema="v0")), "schema"),
    ("check-duplicate-index", _check(lambda d: d["results"][2].update(index=0)), "twice"),
    ("check-wrong-shape", _wrong_shape, "shape (4, 2)"),
    ("check-without-keys", lambda tmp_path: ["check", _cert(tmp_path)], "holds no keys"),
    (
        "check-bad-device",
        lambda tmp_path: ["check", _cert(tmp_path), _keys(tmp_path), "--numeric", "--device", "tpu"],
        "use auto, cpu, cuda or cuda:N",
    ),
]


# numbers at the edges: an exact answer or one line, never an internal error
def _keys_of(rows, name="edge.npy"):
    def make(tmp_path):
        path = tmp_path / name
        np.save(path, np.array(rows))
        return path

    return make


def _ln_cert_with_eps(eps):
    def make(tmp_path):
        data = {
            "schema": "lnproofs.selectability/1",
            "n_keys": 3,
            "dim": 2,
            "query_set": {"kind": "free"},
            "keys_from": {"kind": "layernorm-inputs", "gain": None, "bias": None, "eps": eps},
            "results": [
                {
                    "index": i,
                    "status": "undecided",
                    "witness": None,
                    "combination": None,
                    "verified": "none",
                    "margin": None,
                    "reason": "x",
                }
                for i in range(3)
            ],
        }
        path = tmp_path / "ln.json"
        path.write_text(json.dumps(data))
        return ["check", path, _keys(tmp_path)]

    return make


CASES += [
    ("seed-negative", _certify("--seed", "-1"), "--seed -1 is not accepted"),
    ("seed-past-32-bits", _certify("--seed", str(2**32)), "--seed 4294967296 is not accepted"),
    ("layernorm-eps-overflows", _ln("--eps", "1e308"), "out of range"),
    (
        "layernorm-inputs-underflow",
        lambda tmp_path: [
            "certify",
            _keys_of([[1e-300, 0.0, -1e-300], [0.0, 2e-300, 1e-300]])(tmp_path),
            "--keys-from-layernorm-inputs",
        ],
        "scale both up",
    ),
    (
        "layernorm-inputs-overflow",
        lambda tmp_path: [
            "certify",
            _keys_of([[1e300, 0.0, -1e300], [0.0, 2e300, 1e300]])(tmp_path),
            "--keys-from-layernorm-inputs",
        ],
        "scale both down",
    ),
    (
        "keys-beyond-the-float-search",
        lambda tmp_path: [
            "certify",
            _keys_of([[5e-324, 1.7976931348623157e308], [1e-320, 1.0], [3.0, -1e308]])(tmp_path),
            "--min-margin",  # the per-key road's search (the vocabulary road's nudges prove these keys)
            "0",
        ],
        "the floating-point search failed",
    ),
    ("check-layernorm-eps-overflows", _ln_cert_with_eps(1e308), "out of range"),
]


def _folder_with_near_miss(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "c.json").write_text(json.dumps({"schema": "lnproofs.selectability/2", "n_keys": 3}))
    return ["check", tmp_path / "d"]


CASES += [
    ("check-folder-near-miss-schema", _folder_with_near_miss, "is not one this lnproofs reads"),
]
