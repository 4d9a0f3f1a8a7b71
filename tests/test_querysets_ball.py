"""Ball query sets ||q|| <= R: statuses as for free queries, witnesses inside the ball."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from lnproofs.certificates.check import check_certificate
from lnproofs.certificates.writers import query_set_to_json
from lnproofs.derive.demo_config import demo_keys
from lnproofs.kernel import BallQuerySet, OptionError
from lnproofs.propose.certification import certify


@pytest.mark.parametrize("radius", [1e-3, 1.0, 1e6])
def test_statuses_match_free_queries_and_witnesses_fit(radius):
    rng = np.random.default_rng(7)
    keys = np.vstack([rng.normal(size=(15, 3)) * 10, np.zeros((1, 3))])
    free = certify(keys)
    ball = certify(keys, BallQuerySet(radius))
    assert ball.statuses == free.statuses
    for r in ball:
        if r.witness is not None:
            assert sum(Fraction(x) ** 2 for x in r.witness) <= Fraction(radius) ** 2
    assert check_certificate(ball.to_json(), keys).ok


def test_demo_keys_beyond_threshold():
    keys = np.asarray(demo_keys(3.0))
    cert = certify(keys, BallQuerySet(0.25))
    assert cert.statuses[1] == "unselectable" and cert.indices("selectable") == (0, 2, 3)


def test_witness_outside_the_ball_is_rejected():
    keys = np.asarray(demo_keys(1.0))
    cert = certify(keys, BallQuerySet(0.5)).to_json()
    r = next(x for x in cert["results"] if x["status"] == "selectable")
    data = {**cert, "results": [dict(x) for x in cert["results"]]}
    data["results"][r["index"]]["witness"] = [float(x) * 2**20 for x in r["witness"]]
    report = check_certificate(data, keys)
    assert not report.ok and "||q|| > R" in report.failures[0].message


def test_radius_must_be_positive():
    for bad in (0, -1.0, float("nan"), float("inf")):
        with pytest.raises(OptionError):
            BallQuerySet(bad)
    assert BallQuerySet.from_json(query_set_to_json(BallQuerySet(2.5))) == BallQuerySet(2.5)
