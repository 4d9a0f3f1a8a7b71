"""Bad causal records (schema ``lnproofs.causal/1``) given to ``lnproofs check``."""

import json

import numpy as np


def _record(edit=None):
    def make(tmp_path):
        keys = tmp_path / "k.npy"
        np.save(keys, np.array([[0.0, 0.0], [1.0, 0.0], [0.5, 0.0]]))
        data = {
            "schema": "lnproofs.causal/1",
            "n_keys": 3,
            "dim": 2,
            "query_set": None,
            "keys": [
                {"index": 0, "stop": None, "win": {"status": "selectable", "witness": [-1.0, 0.0]}, "cannot_win": None},
                {"index": 1, "stop": None, "win": {"status": "selectable", "witness": [1.0, 0.0]}, "cannot_win": None},
            ],
            "undecided": [{"index": 2, "reason": "not searched"}],
        }
        extra = edit(data) if edit else ()
        path = tmp_path / "r.json"
        path.write_text(json.dumps(data))
        return ["check", path, keys, *(extra or ())]

    return make


def _set(field, value, where="keys"):
    def edit(data):
        if where == "keys":
            data["keys"][0][field] = value
        else:
            data[field] = value

    return edit


CASES = [
    ("causal-wrong-shape", _record(_set("n_keys", 4, "top")), "shape"),
    ("causal-stop-not-integer", _record(_set("stop", "1")), "stop"),
    ("causal-win-not-object", _record(_set("win", [1.0, 0.0])), "win"),
    ("causal-key-twice", _record(lambda d: d["keys"][1].update(index=0)), "once"),
    ("causal-unknown-field", _record(_set("margin", 1.0)), "no others"),
    ("causal-query-set-reference", _record(_set("query_set", {"head": 3}, "top")), "does not hold"),
    ("causal-numeric", _record(lambda d: ("--numeric",)), "--numeric"),
    ("causal-without-keys", lambda t: _record()(t)[:2], "KEYS"),
]
