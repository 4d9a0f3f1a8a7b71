"""A coverage claim is checked against the keys it is used for: a vocabulary certificate whose norm set
keeps one row of W_q (queries in R^1) and claims coverage with rows [0] for keys in R^32 is refused,
whatever its free evidence (with one-dimensional queries at most two tokens can ever win)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from lnproofs.certificates.vocab import load_vocab
from lnproofs.certificates.writers import query_set_to_json
from lnproofs.kernel import RMSNormQuerySet, ShapeError, check_coverage
from lnproofs.propose.querysets.coverage import propose_coverage
from lnproofs.propose.vocab import certify_vocab_keys


def _output_layer(n=100, d=32, seed=7):
    """A small output layer under RMSNorm without an output bias: float32 keys, W_q = I, b_q = 0."""
    rng = np.random.default_rng(seed)
    keys = rng.normal(size=(n, d)).astype(np.float32).astype(np.float64)
    gain = (1 + 0.2 * rng.normal(size=d)).astype(np.float32).astype(np.float64)
    return keys, RMSNormQuerySet(tuple(gain), np.eye(d), tuple(np.zeros(d)), 1e-6)


def _saved(tmp_path, keys, qs):
    np.save(tmp_path / "keys.npy", keys)
    claim = propose_coverage(qs)
    assert claim is not None and check_coverage(qs, claim.to_json(), keys.shape[1])[0]
    # the free evidence under the norm set with its coverage claim, as certify-vocab writes it
    cert = replace(certify_vocab_keys(keys), query_set=query_set_to_json(qs), coverage=claim.to_json())
    return cert.save(tmp_path / "realisable.json", tmp_path / "keys.npy")


def test_a_true_coverage_claim_holds(tmp_path, cli):
    keys, qs = _output_layer()
    path = _saved(tmp_path, keys, qs)
    result = cli(["check", path])
    assert result.status == 0 and "every claim holds" in result.out


def test_a_one_row_query_map_claiming_coverage_of_keys_in_r32_is_refused(tmp_path, cli):
    keys, qs = _output_layer()
    path = _saved(tmp_path, keys, qs)
    data = json.loads(path.read_text())
    data["query_set"]["W_q"] = data["query_set"]["W_q"][:1]  # queries in R^1
    data["query_set"]["b_q"] = data["query_set"]["b_q"][:1]
    data["coverage"]["rows"] = [0]
    path.write_text(json.dumps(data))
    result = cli(["check", path])
    assert result.status == 2 and "dimension 1" in result.err and "dimension 32" in result.err
    assert "every claim holds" not in result.out
    with pytest.raises(ShapeError, match="dimension 1 but the keys have dimension 32"):
        load_vocab(path, data).check(keys)


def test_the_coverage_check_compares_the_query_map_with_the_keys_width():
    keys, qs = _output_layer()
    narrow = RMSNormQuerySet(qs.gain, qs.W_q[:1], qs.b_q[:1], qs.eps)
    claim = {"kind": "full-rank-centred", "prime": 2**31 - 1, "rows": [0], "u_star": None}
    with pytest.raises(ShapeError, match="W_q produces queries of dimension 1"):
        check_coverage(narrow, claim, keys.shape[1])
    assert check_coverage(narrow, claim, 1) == (True, "")  # for keys in R^1 the same claim is true
