"""The run's JSON writer (orjson) reads back to what json.dumps wrote: every float the same
float, and what orjson refuses (integers past 64 bits, non-string keys) through json.dumps."""

import json

import numpy as np
import pytest

pytest.importorskip("orjson")

from lnproofs.models.corpus_heads import json_bytes  # noqa: E402


def test_floats_read_back_to_the_same_floats_as_json_dumps_wrote_them():
    rng = np.random.default_rng(0)
    floats = [float(x) for x in rng.standard_normal(20000)]
    floats += [float(m) * 10.0 ** int(e) for m, e in zip(rng.uniform(-1, 1, 20000), rng.integers(-300, 300, 20000))]
    floats += [5e-324, -5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, -0.0, 0.0, 1e-05, 1e16, 0.1]
    data = {"schema": "x", "witness": floats, "text": "naïve café", "nested": [{"margin": None, "ok": True}]}
    written = json_bytes(data)
    assert written.endswith(b"\n") and written.count(b"\n") == 1
    back = json.loads(written.decode("utf-8"))
    assert back == json.loads(json.dumps(data)) == data
    assert [repr(x) for x in back["witness"]] == [repr(x) for x in floats]  # -0.0 stays -0.0


def test_what_orjson_refuses_goes_through_json_dumps():
    for data in ({"big": 2**70}, {1: "int key"}):
        assert json_bytes(data) == (json.dumps(data) + "\n").encode("utf-8")
