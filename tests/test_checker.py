"""The trusted checker: it accepts true claims, rejects every mutated certificate, and
its float filter never decides a sign that exact arithmetic contradicts."""

from __future__ import annotations

import copy
import json
from fractions import Fraction

import numpy as np
import pytest
from flint import fmpq, fmpq_mat
from hypothesis import given, settings
from hypothesis import strategies as st

from lnproofs.certificates.certificate import Certificate
from lnproofs.certificates.check import check_certificate
from lnproofs.certificates.writers import result_to_json
from lnproofs.kernel import (
    CertificateFormatError,
    Combination,
    KeyResult,
    affine_rank,
    check_combinations,
    check_witnesses,
)
from lnproofs.propose.certification import certify
from lnproofs.propose.exact_checks import check_combination

KEYS = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [2.0, 2.0], [1.0, 1.0], [1.0, 0.0]])


@pytest.fixture(scope="module")
def good():
    cert = certify(KEYS)
    assert cert.statuses == ("selectable",) * 4 + ("unselectable", "tie-only")
    return cert.to_json()


def _check(data):
    return check_certificate(Certificate.from_json(data), KEYS)


def test_the_unmutated_certificate_holds(good):
    assert _check(good).ok


def _mutations():
    def flip_weight(d):
        w = d["results"][4]["combination"]["weights"]
        w[0], w[-1] = "0", str(Fraction(w[0]) + Fraction(w[-1]))

    def negate_weight(d):
        w = d["results"][5]["combination"]["weights"]
        w[0] = str(-Fraction(w[0]))

    def perturb_witness(d):
        d["results"][0]["witness"] = [0.5, 0.0]  # ties k_0 with k_2 at best

    def tiny_witness_change(d):
        d["results"][1]["witness"] = [1.0, 0.0]  # k_1 = (2,0) ties with k_3 = (2,2)

    def wrong_index(d):
        d["results"][0]["index"], d["results"][4]["index"] = 4, 0
        d["results"][0], d["results"][4] = d["results"][4], d["results"][0]

    def selectable_without_witness(d):
        d["results"][4]["status"] = "selectable"

    def interior_claimed_tie_only(d):
        d["results"][4]["status"] = "tie-only"
        d["results"][4]["witness"] = [1.0, 1.0]

    def vertex_claimed_unselectable(d):
        d["results"][3].update(status="unselectable", witness=None, combination={"indices": [4], "weights": ["1"]})

    def support_not_spanning(d):
        d["results"][4]["combination"] = {"indices": [0, 3], "weights": ["1/2", "1/2"]}

    def combination_misses(d):
        d["results"][4]["combination"] = {"indices": [0, 1, 2], "weights": ["1/2", "1/4", "1/4"]}

    def weights_do_not_sum_to_one(d):
        d["results"][5]["combination"] = {"indices": [0, 1], "weights": ["1/2", "1/4"]}

    def uses_itself(d):
        d["results"][5]["combination"] = {"indices": [5], "weights": ["1"]}

    def tie_witness_ties_everything(d):
        d["results"][5]["witness"] = [0.0, 0.0]

    return [
        flip_weight,
        negate_weight,
        perturb_witness,
        tiny_witness_change,
        wrong_index,
        selectable_without_witness,
        interior_claimed_tie_only,
        vertex_claimed_unselectable,
        support_not_spanning,
        combination_misses,
        weights_do_not_sum_to_one,
        uses_itself,
        tie_witness_ties_everything,
    ]


@pytest.mark.parametrize("mutate", _mutations(), ids=lambda f: f.__name__)
def test_mutated_certificates_are_refuted(good, mutate):
    data = copy.deepcopy(good)
    mutate(data)
    report = _check(data)
    assert not report.ok
    assert report.failures[0].message.startswith("key ")


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda d: d["results"][2].pop("status"), "results[2].status"),
        (lambda d: d["results"][1].update(status="maybe"), "results[1].status"),
        (lambda d: d["results"][4]["combination"]["weights"].__setitem__(0, "one half"), "weights[0]"),
        (lambda d: d["results"][0].update(witness=[1.0, "x"]), "witness[1]"),
        (lambda d: d.update(schema="other/1"), "schema"),
        (lambda d: d.pop("results"), "results"),
        (lambda d: d.update(dim="two"), "dim"),
        (lambda d: d["results"][3].update(index=2), "index 2 appears twice"),
    ],
)
def test_malformed_certificates_name_the_field(good, edit, field):
    data = copy.deepcopy(good)
    edit(data)
    with pytest.raises(CertificateFormatError, match=field.replace("[", r"\[").replace("]", r"\]")):
        _check(data)


def test_float_filter_cannot_be_fooled_by_cancellation():
    big = 2.0**60
    # exact scores: q.k_0 = 1, q.k_1 = 0.5; the float sum of k_0 loses the 1 entirely
    keys = np.array([[big, 1.0, -big], [0.0, 0.0, 0.5]])
    assert check_witnesses(keys, [(0, (1.0, 1.0, 1.0))])[0] is None
    # exact: q.k_0 = -1 < q.k_1 = -0.5, while floats say 0 > -0.5
    keys = np.array([[big, -1.0, -big], [0.0, 0.0, -0.5]])
    message = check_witnesses(keys, [(0, (1.0, 1.0, 1.0))])[0]
    assert message is not None and "q.k_0 - q.k_1 < 0" in message


def test_float_filter_handles_huge_and_tiny_values():
    keys = np.array([[1e300, 1e300], [-1e300, 1e300], [1e-300, 0.0], [5e-324, 5e-324]])
    items = [(0, (1.0, 0.0)), (1, (-1.0, 0.0)), (3, (-1.0, -1.0))]
    results = check_witnesses(keys, items)
    assert results[0] is None and results[1] is None and results[2] is not None


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 6), st.integers(2, 5), st.integers(0, 2**32 - 1))
def test_witness_verdicts_match_fraction_arithmetic(n, d, seed):
    rng = np.random.default_rng(seed)
    scale = 2.0 ** rng.integers(-60, 60, size=(n, d))
    keys = rng.integers(-4, 5, size=(n, d)) * scale + rng.standard_normal((n, d)) * (rng.random() < 0.5)
    q = tuple(float(x) for x in rng.integers(-3, 4, size=d) * 2.0 ** rng.integers(-30, 30, size=d))
    i = int(rng.integers(n))
    F = [[Fraction(x) for x in row] for row in keys]
    score = [sum(Fraction(a) * b for a, b in zip(q, row)) for row in F]
    strict = all(score[i] > score[j] for j in range(n) if j != i)
    tie = all(score[i] >= score[j] for j in range(n)) and any(score[i] > s for s in score)
    assert (check_witnesses(keys, [(i, q)], mode="strict")[0] is None) == strict
    assert (check_witnesses(keys, [(i, q)], mode="tie")[0] is None) == (tie or (n == 1))


def test_combination_and_rank_primitives():
    keys = np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 0.0], [2.0, 2.0, 0.0], [3.0, 0.0, 0.0]])
    assert affine_rank([[0, 0], [1, 1], [2, 2]]) == 1
    assert affine_rank([[1, 0], [3, 3], [0, 15]]) == 2  # the points (1/3, 0), (1, 1), (0, 5), times 3
    half = Combination((0, 2), (Fraction(1, 2), Fraction(1, 2)))
    assert check_combination(keys[:3], 1, half, strict=True) is None  # keys on a line
    assert "relative interior" in check_combination(keys, 1, half, strict=True)
    assert check_combination(keys, 1, half, strict=False) is None


def test_report_json_and_text(good):
    data = copy.deepcopy(good)
    data["results"][0]["witness"] = [0.5, 0.0]
    report = _check(data)
    out = report.to_json()
    assert out["ok"] is False and out["failures"][0]["index"] == 0
    assert "refuted" in str(report)
    json.dumps(out)


def test_certificate_dataclasses_are_frozen(good):
    cert = Certificate.from_json(good)
    with pytest.raises(Exception):
        cert.results[0].status = "undecided"
    with pytest.raises(Exception):
        cert.n_keys = 3
    assert KeyResult.from_json(result_to_json(cert.results[4])) == cert.results[4]


def test_checker_imports_no_solver_and_no_torch():
    import subprocess
    import sys

    code = (
        "import sys, numpy as np; import lnproofs.kernel as c;"
        "from lnproofs.propose.certification import certify;"
        "c.check_witnesses(np.eye(2), [(0, (1.0, 0.0))]); c.BallQuerySet(1.0);"
        "print(sorted(m for m in ('scipy', 'cvxpy', 'torch') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _reference_combination(keys, i, comb, strict) -> bool:
    """Whether a combination holds, in Fraction arithmetic (independent of the checker's batching)."""
    K = [[Fraction(float(x)) for x in row] for row in keys]
    if comb is None or not comb.indices or len(set(comb.indices)) != len(comb.indices):
        return False
    if any(not 0 <= j < len(K) or j == i for j in comb.indices):
        return False
    w = comb.weights
    if any(x < 0 for x in w) or (strict and any(x == 0 for x in w)) or sum(w) != 1:
        return False
    if any(sum(wj * K[j][c] for j, wj in zip(comb.indices, w)) != K[i][c] for c in range(len(K[i]))):
        return False
    r = _rational_affine_rank([K[j] for j in comb.indices])
    return not strict or r >= len(K[i]) or r == _rational_affine_rank(K)


def _rational_affine_rank(points) -> int:
    """The affine rank of rational points by python-flint's rational rank (not the checker's)."""
    if len(points) <= 1:
        return 0
    return int(
        fmpq_mat(
            [[fmpq((a - b).numerator, (a - b).denominator) for a, b in zip(p, points[0])] for p in points[1:]]
        ).rank()
    )


def _combination_cases():
    rng = np.random.default_rng(3)
    base = rng.integers(-5, 6, size=(10, 3)).astype(np.float64)
    keys = np.vstack([base, base[:4].mean(axis=0), base[4:6].mean(axis=0)])  # keys 10 and 11 are combinations
    q, h = Fraction(1, 4), Fraction(1, 2)
    cases = [
        (10, Combination((0, 1, 2, 3), (q, q, q, q))),  # valid, full-dimensional support
        (11, Combination((4, 5), (h, h))),  # valid, but its support is a segment
        (10, Combination((0, 1, 2, 3), (h, q, Fraction(1, 8), Fraction(1, 8)))),  # wrong weights
        (10, Combination((0, 1, 2, 3), (Fraction(-1, 4), h, h, h))),  # a negative weight
        (10, Combination((0, 1, 2, 3), (q, q, q, h))),  # weights sum to 5/4
        (10, Combination((0, 1, 2, 4), (q, q, q, q))),  # a wrong index
        (10, Combination((0, 1, 2, 10), (q, q, q, q))),  # the key itself in the support
        (10, Combination((0, 1, 2, 99), (q, q, q, q))),  # an index out of range
        (10, Combination((0, 1, 1, 3), (q, q, q, q))),  # a repeated index
        (10, Combination((0, 1, 2, 3, 4), (q, q, q, q, 0))),  # a zero weight
        (10, Combination((), ())),  # empty
        (10, None),  # missing
        (11, Combination((4, 5), (Fraction(1, 3), Fraction(2, 3)))),  # misses in a coordinate
    ]
    return keys, cases


@pytest.mark.parametrize("strict", [False, True])
def test_batched_combination_verdicts_equal_per_key_verdicts(strict):
    from lnproofs.kernel import ExactKeys, check_combinations

    keys, cases = _combination_cases()
    batched = check_combinations(ExactKeys(keys), cases, strict=strict)
    one_by_one = [check_combination(keys, i, comb, strict=strict) for i, comb in cases]
    assert batched == one_by_one
    assert [m is None for m in batched] == [_reference_combination(keys, i, c, strict) for i, c in cases]
    assert batched[0] is None and (batched[1] is None) != strict
    refuted = [m for n, m in enumerate(batched[2:], 2) if strict or n != 9]  # a zero weight is fine unless strict
    assert all(m is not None and m.startswith("key ") for m in refuted)
    assert (batched[9] is None) != strict


def test_free_check_all_gives_the_per_result_verdicts_for_combinations():
    from lnproofs.kernel import FreeQueries

    keys, cases = _combination_cases()
    results = [KeyResult(i, "unselectable", combination=c, verified="exact") for i, c in cases]
    results += [KeyResult(i, "tie-only", witness=(0.0, 0.0, 0.0), combination=c, verified="exact") for i, c in cases]
    together = FreeQueries().check(keys, results)
    assert together == [FreeQueries().check(keys, [r])[0] for r in results]
    assert sum(v.ok for v in together) == 1  # only the full-dimensional interior claim holds


def test_float_witnesses_left_to_few_keys_are_settled_exactly_like_rational_ones():
    # keys 0 and 1 differ by 2**-60 along q = (1, 1): the float filter cannot tell them apart,
    # the other keys are far below; the few undecided keys are compared exactly
    far = [[-1.0 - j, 0.0] for j in range(30)]
    for second, expected_ok in ((0.0, True), (2.0**-59, False), (2.0**-60, False)):
        keys = np.array([[1.0, 2.0**-60], [1.0, second]] + far)
        floaty = check_witnesses(keys, [(0, (1.0, 1.0))])[0]
        rational = check_witnesses(keys, [(0, (Fraction(1), Fraction(1)))])[0]
        assert floaty == rational and (floaty is None) == expected_ok
        assert (
            check_witnesses(keys, [(0, (1.0, 1.0))], mode="tie")[0]
            == check_witnesses(keys, [(0, (Fraction(1), Fraction(1)))], mode="tie")[0]
        )
    assert (
        "q.k_0 - q.k_1 < 0 but the claim needs > 0"
        in check_witnesses(np.array([[1.0, 2.0**-60], [1.0, 2.0**-59]] + far), [(0, (1.0, 1.0))])[0]
    )


def test_a_combination_that_misses_names_the_coordinate_and_the_side():
    from lnproofs.kernel import check_combinations

    keys = np.array([[1.0, 0.5], [1.0, 0.25], [3.0, 7.0], [-2.0, 2.0**-70], [1.0, 0.5]])
    got = check_combinations(
        keys,
        [
            (0, Combination((1,), (Fraction(1),))),
            (0, Combination((4,), (Fraction(1),))),
            (2, Combination((3, 1), (Fraction(1, 2), Fraction(1, 2)))),
        ],
        strict=False,
    )
    assert got[0] == "key 0: the combination is below k_0 in coordinate 1; it must reproduce k_0 exactly"
    assert got[1] is None
    assert got[2].startswith("key 2: the combination is below k_2 in coordinate 0;")


def test_equal_keys_tie_exactly_without_integers():
    """A strict witness for a key with an equal twin fails (the scores are equal, exactly);
    a tie claim passes; weight 1 on the twin writes the key exactly."""
    from lnproofs.kernel import Combination

    keys = np.array([[1.0, 0.1], [1.0, 0.1], [0.0, 1.0], [-1.0, 0.0]])
    q = (1.0, 0.0)
    strict = check_witnesses(keys, [(0, q)])[0]
    assert strict is not None and "q.k_0 - q.k_1 = 0" in strict
    assert check_witnesses(keys, [(0, q)], mode="tie") == [None]
    assert check_combinations(keys, [(0, Combination((1,), (1,)))], strict=False) == [None]
    assert check_combinations(keys, [(0, Combination((2,), (1,)))], strict=False)[0] is not None


def test_affinely_independent_keys_are_selectable_without_a_witness(cli, tmp_path):
    """Theorem attention.simplex_vertices: a selectable claim without a witness holds exactly when
    the keys are affinely independent (free and ball queries; a box bounds q, so not there), decided
    by the kernel's exact affine rank, and it survives the JSON round trip and ``lnproofs check``."""
    from lnproofs.kernel import BallQuerySet, BoxQuerySet, FreeQueries

    keys = np.array([[0, 0, 0, 0], [1, 0, 0, 0], [0, 3, 0, 0], [0, 0, -2, 0], [1, 1, 1, 5]], dtype=float)
    claims = [KeyResult(i, "selectable") for i in range(5)]
    for query_set in (FreeQueries(), BallQuerySet(1e-3)):
        assert [v.ok for v in query_set.check(keys, claims)] == [True] * 5
    assert not any(v.ok for v in BoxQuerySet(100.0).check(keys, claims))
    flat = keys.copy()
    flat[4] = (flat[1] + flat[2]) / 2  # exactly on a segment: affine rank 3 < 4
    verdicts = FreeQueries().check(flat, claims)
    assert not any(v.ok for v in verdicts)
    assert "without a witness query, the keys must be affinely independent" in verdicts[0].message
    six = np.vstack([keys, [2, 2, 2, 2]])  # six keys in R^4 are never affinely independent
    verdicts = FreeQueries().check(six, [KeyResult(i, "selectable") for i in range(6)])
    assert not any(v.ok for v in verdicts) and "needs a witness query with 4 entries (got none)" in verdicts[0].message
    cert = Certificate(5, 4, {"kind": "free"}, tuple(claims))
    again = Certificate.from_json(json.loads(json.dumps(cert.to_json())))
    assert again == cert and check_certificate(again, keys).ok and not check_certificate(again, flat).ok
    np.save(tmp_path / "k.npy", keys), np.save(tmp_path / "flat.npy", flat)
    (tmp_path / "c.json").write_text(json.dumps(cert.to_json()), encoding="utf-8")
    assert cli(["check", str(tmp_path / "c.json"), str(tmp_path / "k.npy")]).status == 0
    refuted = cli(["check", str(tmp_path / "c.json"), str(tmp_path / "flat.npy")])
    assert refuted.status == 1 and "must be affinely independent" in refuted.out + refuted.err


def test_the_rank_modulo_a_prime_is_a_lower_bound_that_proves_full_rank():
    """affine_rank(rows, exact=False) is the rank of [K | 1] modulo 2^31 - 1, less one: never above the
    exact affine rank, equal to it when full (which is all a proof of affine independence needs)."""
    p = float((1 << 31) - 1)
    rows = np.array([[p, 0.0], [0.0, 0.0], [0.0, 1.0]])  # the first row vanishes modulo p
    assert affine_rank(rows, exact=False) == 1 < affine_rank(rows) == 2
    ints = [[int(p), 0], [0, 0], [0, 1]]
    assert affine_rank(ints, exact=False) == 1 < affine_rank(ints) == 2
    independent = np.array([[0.5, 0.0], [0.0, 3.0], [1e-300, 1e300]])
    assert affine_rank(independent, exact=False) == affine_rank(independent) == 2


def test_a_singular_square_minor_leaves_the_rank_to_the_whole_matrix():
    """Fewer points than dimensions: the rank is taken modulo the prime on a square minor, the
    columns with the fewest zeros.  Here those are two equal columns and the 1s, a singular minor
    of points that are affinely independent: the exact rank says so, and the lower bound stays
    below it."""
    rows = [[1, 1, 0, 0, 5], [2, 2, 0, 3, 0], [3, 3, 4, 0, 0]]
    assert affine_rank(rows, exact=False) == 1 < affine_rank(rows) == 2
    assert affine_rank(np.array(rows, dtype=np.float64) * 2.0**-40) == 2


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 7), st.integers(1, 9), st.integers(0, 2**32 - 1))
def test_affine_ranks_match_the_rational_rank(n, d, seed):
    """Sparse and repeated columns, wide and tall: the exact rank is the rational one, and the
    rank with ``exact=False`` is never above it (and equal to it for points in general position)."""
    rng = np.random.default_rng(seed)
    rows = rng.integers(-2, 3, size=(n, d)) * (rng.random((n, d)) < 0.6)
    if d > 1 and rng.random() < 0.5:
        rows[:, 1] = rows[:, 0]
    points = [[Fraction(int(x)) for x in row] for row in rows]
    want = _rational_affine_rank(points)
    floats = rows.astype(np.float64) * 2.0 ** float(rng.integers(-50, 50))
    assert affine_rank(floats) == affine_rank(rows.astype(object)) == want
    assert affine_rank(floats, exact=False) <= want
    general = rng.standard_normal((n, d))
    assert affine_rank(general, exact=False) == affine_rank(general) == min(n - 1, d)


def _reference_witness(keys, i, q, mode):
    """The verdict of check_witnesses from every exact score (Fractions): None or its message."""
    score = [sum(Fraction(a) * Fraction(b) for a, b in zip(q, row)) for row in keys.tolist()]
    rest = [s for j, s in enumerate(score) if j != i]
    top = max(rest)
    if top > score[i] or (top == score[i] and mode == "strict"):
        j = next(j for j, s in enumerate(score) if j != i and s == top)
        return (
            f"key {i}: witness gives q.k_{i} - q.k_{j} {'<' if top > score[i] else '='} 0 but the claim "
            f"needs {'>' if mode == 'strict' else '>='} 0"
        )
    if mode == "tie" and not min(rest) < score[i]:
        return f"key {i}: witness ties every key with k_{i}; tie-only needs some key strictly below"
    return None


@settings(max_examples=60, deadline=None)
@given(st.integers(8, 40), st.integers(2, 6), st.integers(0, 2**32 - 1))
def test_rows_the_bound_leaves_are_settled_exactly_as_every_score_would(n, d, seed):
    """Keys over more than 62 bit places with twins and near-twins: the exact check of the rows
    the float bound leaves gives the verdict, and names the rival, that every exact score gives."""
    rng = np.random.default_rng(seed)
    keys = rng.standard_normal((n, d)) * 2.0 ** rng.integers(-70, 10, size=(n, d))
    twins = rng.integers(0, n, size=n // 4)
    keys[twins] = keys[rng.integers(0, n, size=twins.size)]
    keys[rng.integers(0, n)] = keys[0] + 2.0**-60 * (rng.random() < 0.5)
    items = []
    for _ in range(6):
        i = int(rng.integers(n))
        items.append((i, keys[i].copy() if rng.random() < 0.5 else rng.standard_normal(d)))
    for mode in ("strict", "tie"):
        got = check_witnesses(keys, items, mode=mode)
        assert got == [_reference_witness(keys, i, q, mode) for i, q in items]
