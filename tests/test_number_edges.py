"""Numbers at the edges: whatever ``certify`` writes, ``check`` accepts (valid JSON, no
Infinity), and overflow gives an exact answer or one line (exit 2), never an internal error."""

from __future__ import annotations

import json
from decimal import Decimal

import numpy as np
import pytest

NEAR_MAX = 1.7e308


def _strict_json(text: str):
    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize(
    "rows, extra",
    [
        ([[NEAR_MAX, 0.0], [0.0, NEAR_MAX], [-NEAR_MAX, -NEAR_MAX], [1.0, 1.0]], []),
        ([[NEAR_MAX, 0.0], [0.0, NEAR_MAX], [-NEAR_MAX, -NEAR_MAX], [1.0, 1.0]], ["--min-margin", "1e300"]),
        (
            [[NEAR_MAX, 0.0, -NEAR_MAX], [0.0, NEAR_MAX, 1e307], [3.0, 1.0, 0.0], [-NEAR_MAX, -NEAR_MAX, NEAR_MAX]],
            ["--query-ball", str(Decimal(1e308))],  # the float's exact decimal (options are read exactly)
        ),
        ([[1e-320, 0.0], [0.0, 5e-324], [1e-320, 1e-320]], []),
    ],
)
def test_what_certify_writes_check_accepts(cli, tmp_path, rows, extra):
    np.save(tmp_path / "k.npy", np.array(rows))
    made = cli(["certify", tmp_path / "k.npy", "--out", tmp_path / "c.json", *extra])
    assert made.status == 0, made.err
    data = _strict_json((tmp_path / "c.json").read_text())
    assert all(r["margin"] is None or np.isfinite(r["margin"]) for r in data["results"])
    checked = cli(["check", tmp_path / "c.json"])
    assert checked.status == 0, checked.err + checked.out
    printed = cli(["certify", tmp_path / "k.npy", "--json", *extra])
    assert printed.status == 0 and _strict_json(printed.out)["n_keys"] == len(rows)


def test_a_margin_beyond_the_float_range_is_null(tmp_path):
    from lnproofs.certificates.findings import rank_finding, witness_margins

    keys = np.array([[NEAR_MAX, 0.0], [0.0, NEAR_MAX], [-NEAR_MAX, -NEAR_MAX]])
    assert witness_margins(keys, [(2, (-1.0, -1.0))]) == [None]  # about 2.4e308: not a float
    finding = rank_finding(keys)
    assert finding["numerical_affine_dimension"] == 2 and None in finding["singular_values"]


@pytest.mark.parametrize("gains", [(1e308, 1e308, 1e308), (1e-308, 1e-308, 1e-308), (1e308, -1e308, 1e308)])
def test_layernorm_outputs_with_extreme_gains_check(cli, tmp_path, gains):
    from decimal import Decimal

    gain = ",".join(str(Decimal(g)) for g in gains)  # the floats' exact decimals (read exactly)
    np.save(tmp_path / "x.npy", np.array([[1.0, 2, 3], [3, 1, 2], [2, 3, 1], [1, 1, 2]]))
    made = cli(
        [
            "certify",
            tmp_path / "x.npy",
            "--keys-from-layernorm-inputs",
            "--gain",
            gain,
            "--eps",
            "1e-5",
            "--out",
            tmp_path / "c.json",
        ]
    )
    assert made.status == 0, made.err
    _strict_json((tmp_path / "c.json").read_text())
    checked = cli(["check", tmp_path / "c.json"])
    assert checked.status == 0, checked.err + checked.out


def test_a_huge_rational_witness_for_layernorm_inputs_is_decided_exactly(tmp_path):
    from lnproofs.propose.layernorm_inputs import certify_layernorm_outputs

    inputs = np.array([[1.0, 1e-320], [5e-324, -1.0]])
    cert = certify_layernorm_outputs(inputs, eps=1e300)
    from lnproofs.certificates.check import check_certificate

    assert check_certificate(cert, inputs).ok


def test_extreme_keys_never_meet_an_internal_error(cli, tmp_path):
    values = [
        0.0,
        1e-320,
        -1e-320,
        5e-324,
        1e308,
        -1e308,
        1.7976931348623157e308,
        -1.7976931348623157e308,
        1.0,
        -1.0,
        1e-300,
        1e300,
        -1e300,
        3.0,
    ]
    rng = np.random.default_rng(20261126)
    for trial in range(40):
        keys = rng.choice(values, size=(int(rng.integers(2, 6)), int(rng.integers(1, 4))))
        np.save(tmp_path / "k.npy", keys)
        extra = [[], ["--min-margin", "0"], ["--query-ball", "1e-300"], ["--query-ball", "1e308"]][trial % 4]
        made = cli(["certify", tmp_path / "k.npy", "--out", tmp_path / "c.json", *extra])
        assert made.status in (0, 2), (keys.tolist(), extra, made.err)
        if made.status == 0:
            checked = cli(["check", tmp_path / "c.json"])
            assert checked.status == 0, (keys.tolist(), extra, checked.err, checked.out)
