"""Query sets that cover every direction: the proposer finds the claim exactly when the hypotheses
hold, the kernel accepts true claims and refutes false ones, covering sets give the free answers key
by key, and the theorem behind it proves and passes its numeric re-check."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
from flint import fmpz_mat

from lnproofs import certify
from lnproofs import kernel as kernel_coverage
from lnproofs.certificates.coverage import Coverage
from lnproofs.certificates.writers import format_fraction
from lnproofs.kernel import (
    CertificateFormatError,
    ExactQueryMap,
    LayerNormQuerySet,
    RMSNormQuerySet,
    RotaryLayerNormQuerySet,
    Rotation,
    integer_columns,
)
from lnproofs.propose.querysets.coverage import propose_coverage

KINDS = ("layernorm", "rmsnorm", "layernorm_rotary", "rmsnorm_rotary")


def check_coverage(query_set, claim, query_map=None):
    """The kernel's check of a claim given as a Coverage (the kernel reads its JSON object)."""
    data = claim.to_json() if isinstance(claim, Coverage) else claim
    return kernel_coverage.check_coverage(query_set, data, getattr(query_set, "dim", 0), query_map)


def _rotation(d, position=5):
    angles = position * 10000.0 ** (-np.arange(d // 2) / (d // 2))
    full = np.concatenate([angles, angles])
    return Rotation(np.cos(full), np.sin(full), "half", position)


def _query_set(kind, seed, *, n=8, d=4, centre=0.0, gains=None, W=None):
    """A random query set whose centre's least-norm preimage has norm ``centre * sqrt(n)`` (0: b = 0)."""
    rng = np.random.default_rng(seed)
    g = rng.uniform(0.5, 1.5, n) if gains is None else np.asarray(gains, dtype=float)
    W = rng.normal(size=(d, n)) if W is None else np.asarray(W, dtype=float)
    A = W * g
    if kind.startswith("layernorm"):
        A = A - A.mean(axis=1, keepdims=True)  # W diag(g) P
    u0 = A.T @ rng.normal(size=d)  # in the row space: the least-norm preimage of A u0
    u0 *= centre * np.sqrt(n) / np.linalg.norm(u0)
    beta = rng.normal(size=n) * 0.1 if centre else np.zeros(n)
    b_q = -(W @ (g * u0)) - W @ beta  # b = W beta + b_q = -A u0
    if kind == "layernorm":
        return LayerNormQuerySet(g, beta, W, b_q)
    rotation = _rotation(d) if kind.endswith("rotary") else None
    if kind == "layernorm_rotary":
        return RotaryLayerNormQuerySet(g, W, b_q, 0.0, rotation, beta)
    return RMSNormQuerySet(g, W, b_q, 0.0, rotation, beta if centre else None)


@pytest.mark.parametrize("kind", KINDS)
def test_proposals_follow_the_hypotheses_and_check_exactly(kind):
    centred = propose_coverage(_query_set(kind, 1))
    assert centred.kind == "full-rank-centred" and centred.u_star is None
    assert check_coverage(_query_set(kind, 1), centred) == (True, "")
    inside = _query_set(kind, 2, centre=0.7)
    claim = propose_coverage(inside)
    assert claim.kind == "full-rank-interior" and len(claim.u_star) == inside.width
    assert check_coverage(inside, claim) == (True, "")
    assert Coverage.from_json(json.loads(json.dumps(claim.to_json()))) == claim
    # the least-norm preimage has norm 0.7 sqrt(n) up to the float rounding of b
    norm2 = sum(Fraction(x) ** 2 for x in claim.u_star)
    assert abs(float(norm2) - 0.49 * inside.width) < 1e-6
    # a centre outside: no preimage is short enough, nothing is proposed
    assert propose_coverage(_query_set(kind, 3, centre=1.2)) is None
    # just inside and just outside the boundary
    assert propose_coverage(_query_set(kind, 4, centre=1 - 1e-6)) is not None
    assert propose_coverage(_query_set(kind, 4, centre=1 + 1e-6)) is None


@pytest.mark.parametrize("kind", KINDS)
def test_rank_deficient_sets_get_no_claim_and_a_forged_one_is_refuted(kind):
    n = 6
    wide = _query_set(kind, 5, n=n, d=n if kind.startswith("layernorm") else n + 1)  # d > n - 1 (centred) or > n
    assert propose_coverage(wide) is None
    gains = [1.0, 0.0, 0.0, 0.0, 2.0, 0.0]  # rank <= 2 < d = 3
    zero = _query_set(kind, 6, n=n, d=3, gains=gains)
    assert propose_coverage(zero) is None
    for rows in ((0, 1, 4), (0, 4, 5), (0, 2, 3)):
        ok, message = check_coverage(zero, Coverage("full-rank-centred", 2**61 - 1, rows))
        assert not ok and "zero modulo" in message
    ok, message = check_coverage(wide, Coverage("full-rank-centred", 2**61 - 1, tuple(range(wide.dim % n))))
    assert not ok and "distinct column indices" in message


def test_a_prime_that_divides_the_minor_is_refuted_though_the_rank_is_full():
    # integer W and gains 1: for RMSNorm A = W, the minor on columns (0, 1) is det [[2, 0], [0, 3]] = 6
    qs = RMSNormQuerySet([1.0, 1.0, 1.0], [[2.0, 0.0, 1.0], [0.0, 3.0, 1.0]], [0.0, 0.0])
    assert check_coverage(qs, Coverage("full-rank-centred", 5, (0, 1)))[0]
    for prime in (2, 3):
        ok, message = check_coverage(qs, Coverage("full-rank-centred", prime, (0, 1)))
        assert not ok and f"zero modulo {prime}" in message
    ok, message = check_coverage(qs, Coverage("full-rank-centred", 15, (0, 1)))
    assert not ok and "not a prime" in message
    ok, message = check_coverage(qs, Coverage("full-rank-centred", 5, (0, 0)))
    assert not ok and "distinct" in message


def _kernel_vector(qs):
    """An exact non-zero integer vector k with A k = 0 (and 1.k = 0 when centred)."""
    qm = ExactQueryMap(qs)
    M = integer_columns(qm, range(qm.n))
    rows = [[int(M[r, c]) for c in range(qm.n)] for r in range(qm.d)] + [[1] * qm.n]
    null, nullity = fmpz_mat(rows).nullspace()
    assert nullity >= 1
    return [int(null[r, 0]) for r in range(qm.n)]


@pytest.mark.parametrize("kind", KINDS)
def test_false_interior_claims_are_refuted(kind):
    qs = _query_set(kind, 7, centre=0.5)
    claim = propose_coverage(qs)
    u = [Fraction(x) for x in claim.u_star]

    def with_u(values):
        return Coverage("full-rank-interior", claim.prime, claim.rows, tuple(format_fraction(x) for x in values))

    # not a preimage: move a little weight between two coordinates (1.u stays 0)
    moved = [u[0] + Fraction(1, 1000), u[1] - Fraction(1, 1000)] + u[2:]
    ok, message = check_coverage(qs, with_u(moved))
    assert not ok and "not a preimage" in message
    # a preimage, but too long: add a large multiple of an exact kernel vector of A
    k = _kernel_vector(qs)
    long = [x + 100 * y for x, y in zip(u, k)]
    ok, message = check_coverage(qs, with_u(long))
    assert not ok and "||u_star||^2 >= n" in message
    # a preimage off the hyperplane (centred sets only)
    if qs.centred:
        ok, message = check_coverage(qs, with_u([x + Fraction(1, 7) for x in u]))
        assert not ok and "hyperplane" in message
    # wrong kinds: centred claimed while b != 0; interior claimed while b = 0; a u_star of the wrong length
    assert not check_coverage(qs, Coverage("full-rank-centred", claim.prime, claim.rows))[0]
    assert not check_coverage(_query_set(kind, 7), claim)[0]
    assert not check_coverage(qs, with_u(u[:-1]))[0]
    assert not check_coverage(qs, Coverage("full-rank-interior", claim.prime, claim.rows, None))[0]


def test_a_singular_rotation_and_other_query_sets_are_refuted():
    qs = _query_set("rmsnorm", 8)
    claim = propose_coverage(qs)
    cos, sin = [1.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]  # the block (1, 3) is the zero matrix
    singular = RMSNormQuerySet(qs.gain, qs.W_q, qs.b_q, 0.0, Rotation(cos, sin, "half"))
    ok, message = check_coverage(singular, claim)
    assert not ok and "not invertible" in message
    from lnproofs.kernel import FreeQueries

    assert propose_coverage(FreeQueries()) is None
    assert not check_coverage(FreeQueries(), claim)[0]


@pytest.mark.parametrize(
    "data, fragment",
    [
        ({"kind": "full-rank", "prime": 5, "rows": [0]}, "kind"),
        ({"kind": "full-rank-centred", "prime": 1, "rows": [0]}, "prime"),
        ({"kind": "full-rank-centred", "prime": 2**64 + 13, "rows": [0]}, "prime"),
        ({"kind": "full-rank-centred", "prime": "5", "rows": [0]}, "prime"),
        ({"kind": "full-rank-centred", "prime": 5, "rows": [0.5]}, "rows"),
        ({"kind": "full-rank-interior", "prime": 5, "rows": [0], "u_star": [0.5]}, "u_star"),
        ({"kind": "full-rank-interior", "prime": 5, "rows": [0], "u_star": ["1/0"]}, "u_star"),
        ({"kind": "full-rank-centred", "rows": [0]}, "'prime'"),
        ([1, 2], "object"),
    ],
)
def test_malformed_claims_are_one_line_errors(data, fragment):
    with pytest.raises(CertificateFormatError) as err:
        Coverage.from_json(data)
    assert fragment in str(err.value) and "\n" not in str(err.value)


def _statuses(cert):
    return [r.status for r in cert]


@pytest.mark.parametrize("kind", ["layernorm", "rmsnorm", "rmsnorm_rotary", "layernorm_rotary"])
@pytest.mark.parametrize("seed", [11, 12])
def test_covering_sets_give_the_free_statuses_key_by_key(kind, seed):
    rng = np.random.default_rng(seed)
    keys = rng.normal(size=(12, 4))
    keys[-1] = keys[:3].mean(axis=0)  # one key inside the hull: never selectable
    for centre in (0.0, 0.8):
        qs = _query_set(kind, seed, n=7, centre=centre)
        assert check_coverage(qs, propose_coverage(qs))[0]
        free = _statuses(certify(keys))
        realisable = _statuses(certify(keys, query_set=qs))
        assert "undecided" not in realisable
        assert [s == "selectable" for s in realisable] == [s == "selectable" for s in free]
        assert realisable[-1] == "not-realisable"


def test_a_set_that_does_not_cover_can_lose_keys_the_free_queries_select():
    rng = np.random.default_rng(3)
    keys = rng.normal(size=(12, 4))
    qs = _query_set("rmsnorm", 3, n=7, centre=6.0)  # the centre far outside: a narrow cone of directions
    assert propose_coverage(qs) is None
    free = _statuses(certify(keys))
    realisable = _statuses(certify(keys, query_set=qs))
    assert free.count("selectable") > realisable.count("selectable")


def test_the_theorems_prove_from_the_command_line(cli):
    result = cli(["derive", "--name", "coverage.every_direction", "--name", "coverage.argmax_direction", "--n", "4"])
    assert result.status == 0, result.err
    assert result.out.count("proved") >= 4 and "FAILED" not in result.out


def test_the_numeric_recheck_passes_and_catches_a_wrong_layer():
    pytest.importorskip("torch")
    from torch_backend.theorems import run_checks

    names = ["coverage.argmax_direction", "coverage.every_direction"]
    for dtype in ("float64", "float32"):
        assert all(r.passed for r in run_checks(names=names, samples=64, width=8, dtype=dtype))
    import torch.nn.functional as F

    def stretched(x, shape, weight=None, bias=None, eps=1e-5):  # outputs off the sphere by one part in 10^6
        return F.layer_norm(x * (1 + 1e-6), shape, weight, bias, eps) * (1 + 1e-6)

    bad = run_checks(names=["coverage.every_direction"], samples=64, width=8, layer_norm=stretched)
    assert not bad[0].passed


@pytest.mark.parametrize("kind", ["layernorm", "rmsnorm_rotary"])
def test_the_exact_fallbacks_give_claims_that_check(kind, monkeypatch):
    """Without the float column choice and the short preimage, the exact echelon columns and the
    exact least-norm u* are proposed; the least-norm u* is no longer than the short one."""
    from lnproofs.propose.querysets import coverage as proposer

    qs = _query_set(kind, 9, centre=0.9)
    short = proposer.propose_coverage(qs)
    monkeypatch.setattr(proposer, "_float_columns", lambda qm, A, tested=True: None)
    monkeypatch.setattr(proposer, "_compact_preimage", lambda qm, A, cols: None)
    exact = proposer.propose_coverage(qs)
    assert exact.kind == short.kind == "full-rank-interior"
    assert check_coverage(qs, exact) == (True, "")
    norm2 = [sum(Fraction(x) ** 2 for x in c.u_star) for c in (exact, short)]
    assert norm2[0] <= norm2[1] < qs.width


def test_the_check_reads_json_and_reuses_a_query_map():
    qs = _query_set("layernorm_rotary", 10, centre=0.5)
    qm = ExactQueryMap(qs)
    claim = propose_coverage(qs, qm)
    assert check_coverage(qs, claim.to_json(), qm) == (True, "")
    ok, message = check_coverage(qs, {"kind": "full-rank-interior", "prime": 4.5, "rows": []})
    assert not ok and "prime" in message


def test_a_run_uses_a_coverage_only_after_the_kernel_checks_it(monkeypatch):
    """``coverage_of`` (what certify-model records) puts every proposal through the kernel: a
    proposal whose minor vanishes is replaced by the proposer's tested search, and a forged one
    that fails again is not used at all."""
    import lnproofs.propose.querysets.coverage as proposer
    from lnproofs.models.head_sets import coverage_of

    qs = _query_set("rmsnorm", 3)
    assert coverage_of(qs) is not None
    true = propose_coverage(qs)
    forged = Coverage(true.kind, true.prime, (0,) * len(true.rows), true.u_star)  # a repeated column
    calls = []

    def propose(query_set, query_map=None, *, tested=True):
        calls.append(tested)
        return forged if not tested else true

    monkeypatch.setattr(proposer, "propose_coverage", propose)
    assert coverage_of(qs) == true.to_json() and calls == [False, True]
    monkeypatch.setattr(proposer, "propose_coverage", lambda *a, **k: forged)
    assert coverage_of(qs) is None


def _written(value: str):
    """What a claim keeps of ``value``: its u_star entry, or the refusal."""
    try:
        return Coverage("full-rank-interior", 5, (0,), (value,)).u_star[0]
    except CertificateFormatError:
        return CertificateFormatError


@pytest.mark.parametrize(
    "text",
    [
        "3/4",
        "-6/8",
        "5",
        "0",
        "-0",
        "00012/0004",
        "0.5",
        "-1e3",
        " 3/4",
        "3/-4",
        "3/0",
        "³/4",
        "1/2/3",
        "",
        "-",
        "0x10",
        "12345678901234567890123/98765432109876543210",
    ],
)
def test_a_claims_u_star_is_written_in_lowest_terms_as_the_kernel_reads_it(text):
    """Plain [-]digits[/digits] go through python-flint's reading, the rest through the kernel's
    to_fraction: either way the entry kept is format_fraction of the exact value, and what
    to_fraction cannot read is refused."""
    from lnproofs.kernel import to_fraction

    try:
        expected = format_fraction(to_fraction(text))
    except (ValueError, ZeroDivisionError):
        expected = CertificateFormatError
    assert _written(text) == expected


def test_random_fractions_keep_their_value_in_lowest_terms():
    rng = np.random.default_rng(7)
    for _ in range(300):
        p, q, k = (int(x) for x in rng.integers(-(10**12), 10**12, 3))
        q, k = abs(q) + 1, abs(k) % 50 + 1
        text = f"{p * k}/{q * k}"
        assert _written(text) == format_fraction(Fraction(p, q))
