"""Uniform attention, whatever the weights: the python-flint search gives the statuses of the
element-by-element reference (tests/reference/uniform_reference.py) on random and structured
inputs (trained-like and randomly initialised weights, degenerate keys, rank-deficient W_q,
zero gains; LayerNorm, RMSNorm, rotary and subspace query sets), every full answer checks
exactly, compact answers keep the status, and tampered proofs of the new kinds are refuted."""

from fractions import Fraction

import numpy as np
import pytest
from reference.uniform_reference import reference_uniform_attention

from lnproofs.certificates.writers import query_set_to_json
from lnproofs.kernel import LayerNormQuerySet, RMSNormQuerySet, RotaryLayerNormQuerySet, Rotation, SubspaceQuerySet
from lnproofs.propose.uniform import check_uniform, uniform_attention

SHAPES = [(3, 6, 3), (6, 8, 3), (2, 5, 4), (4, 12, 4), (5, 4, 4), (8, 7, 5)]  # (N, n, d)


def _powers_of_two(rng, size):
    """Signed powers of two: multiplying a float by them is exact, so proportional rows stay
    exactly proportional."""
    return rng.choice([-2.0, -1.0, -0.5, 0.5, 1.0, 2.0, 4.0], size=size)


def _weights(rng, n, d, style):
    """gain, beta, W_q, b_q of one head in a given style."""
    gain = 1 + 0.3 * rng.normal(size=n)
    beta, b_q = 0.1 * rng.normal(size=n), 0.1 * rng.normal(size=d)
    W = rng.normal(size=(d, n))
    if style == "random-init":  # as a freshly initialised model: unit gains, no biases
        gain, beta, b_q = np.ones(n), np.zeros(n), np.zeros(d)
    elif style == "zero-gains":
        gain[: n // 2] = 0.0
    elif style == "all-zero-gains":
        gain = np.zeros(n)
    elif style == "rank-deficient":  # W_q of rank 1 exactly (rows: powers of two times one row)
        W = np.outer(_powers_of_two(rng, d), rng.normal(size=n))
    elif style == "rank-deficient-no-bias":
        W, beta, b_q = np.outer(_powers_of_two(rng, d), rng.normal(size=n)), np.zeros(n), np.zeros(d)
    return gain, beta, W, b_q


def _keys(rng, N, d, style):
    keys = rng.normal(size=(N, d))
    if style == "duplicates":
        keys[1:] = keys[0]
    elif style == "on-a-line":  # exactly: powers of two times one key
        keys = np.outer(_powers_of_two(rng, N), rng.normal(size=d))
    elif style == "large":
        keys = keys * 1e3  # the least-norm solution may leave the ball
    return keys


WEIGHTS = ["trained-like", "random-init", "zero-gains", "all-zero-gains", "rank-deficient", "rank-deficient-no-bias"]
KEYS = ["generic", "duplicates", "on-a-line", "large"]


def _agree(keys, qs):
    fast, ref = uniform_attention(keys, qs), reference_uniform_attention(keys, qs)
    assert fast.status == ref.status, (fast.to_json(), ref.to_json())
    assert check_uniform(keys, fast) == (True, "")
    if qs is not None and qs.kind != "subspace":
        compact = uniform_attention(keys, qs, compact=True)
        assert compact.status == fast.status
    return fast.status


@pytest.mark.parametrize("weights", WEIGHTS)
@pytest.mark.parametrize("keystyle", KEYS)
def test_layernorm_statuses_equal_the_reference_whatever_the_weights(weights, keystyle):
    seen = set()
    for k, (N, n, d) in enumerate(SHAPES):
        rng = np.random.default_rng(1000 + 10 * k + WEIGHTS.index(weights))
        gain, beta, W, b_q = _weights(rng, n, d, weights)
        seen.add(_agree(_keys(rng, N, d, keystyle), LayerNormQuerySet(gain, beta, W, b_q, 1e-5)))
    assert seen <= {"feasible", "infeasible"}


@pytest.mark.parametrize("weights", WEIGHTS)
@pytest.mark.parametrize("keystyle", KEYS)
def test_rmsnorm_and_rotary_statuses_equal_the_reference(weights, keystyle):
    for k, (N, n, d) in enumerate(SHAPES):
        rng = np.random.default_rng(2000 + 10 * k + WEIGHTS.index(weights))
        gain, beta, W, b_q = _weights(rng, n, d, weights)
        keys = _keys(rng, N, d, keystyle)
        _agree(keys, RMSNormQuerySet(gain, W, b_q, 1e-6))
        half = 2 * (d // 2)
        angles = rng.uniform(0, 2 * np.pi, size=half)
        rotation = Rotation(np.cos(angles), np.sin(angles), "half" if k % 2 else "interleaved", position=k)
        _agree(keys, RMSNormQuerySet(gain, W, b_q, 1e-6, rotation))
        _agree(keys, RotaryLayerNormQuerySet(gain, W, b_q, 1e-5, rotation, beta))


@pytest.mark.parametrize("keystyle", KEYS)
def test_subspace_statuses_equal_the_reference(keystyle):
    for k, (N, n, d) in enumerate(SHAPES):
        rng = np.random.default_rng(3000 + k)
        keys = _keys(rng, N, d, keystyle)
        for rows in (1, d - 1, d + 1):
            W = rng.normal(size=(rows, d))
            if k % 2:
                W[-1] = W[0]  # a repeated row: rank below the row count
            _agree(keys, SubspaceQuerySet(W))


@pytest.mark.parametrize("seed", range(6))
def test_free_answers_equal_the_reference(seed):
    rng = np.random.default_rng(4000 + seed)
    for N, _, d in SHAPES:
        for style in KEYS:
            _agree(_keys(rng, N, d, style), None)


def test_randomly_initialised_heads_are_decided_without_a_reference():
    """Unit gains and no biases (q0 = 0): the least-norm solution is u = 0 with q = 0, and a
    direction of the solution set gives a query; the full answer checks exactly."""
    rng = np.random.default_rng(7)
    n, d, N = 24, 8, 5
    qs = LayerNormQuerySet(np.ones(n), np.zeros(n), rng.normal(size=(d, n)), np.zeros(d), 1e-12)
    keys = rng.normal(size=(N, d))
    full = uniform_attention(keys, qs)
    assert full.status == "feasible" and any(full.query)
    assert check_uniform(keys, full) == (True, "")
    assert uniform_attention(keys, qs, compact=True).status == "feasible"
    with_radius = LayerNormQuerySet(qs.gamma, qs.beta, qs.W_q, qs.b_q, qs.eps, radius=1e-3)
    small = uniform_attention(keys, with_radius)
    assert small.status == "feasible" and sum(x * x for x in small.query) <= Fraction(1, 10**6)
    assert check_uniform(keys, small) == (True, "")


def test_a_tampered_inconsistency_proof_is_refuted():
    rng = np.random.default_rng(11)
    n, d = 6, 3
    # zero gains: every query is q0 = b_q, and generic keys do not score it equally
    qs = LayerNormQuerySet(np.zeros(n), np.zeros(n), rng.normal(size=(d, n)), [1.0, 2.0, 3.0])
    keys = rng.normal(size=(3, d))
    answer = uniform_attention(keys, qs).to_json()
    assert answer["status"] == "infeasible" and answer["proof"]["kind"] == "inconsistent equations"
    assert check_uniform(keys, answer) == (True, "")
    answer["proof"]["combination"] = ["0"] * len(answer["proof"]["combination"])
    ok, message = check_uniform(keys, answer)
    assert not ok and "0 = 0" in message


@pytest.mark.parametrize("seed", range(4))
def test_tampered_rmsnorm_and_rotary_answers_are_refuted(seed):
    rng = np.random.default_rng(500 + seed)
    n, d = 8, 4
    angles = rng.uniform(0, 2 * np.pi, size=d)
    qs = RMSNormQuerySet(
        1 + 0.3 * rng.normal(size=n),
        rng.normal(size=(d, n)),
        0.1 * rng.normal(size=d),
        1e-6,
        Rotation(np.cos(angles), np.sin(angles)),
    )
    keys = rng.normal(size=(3, d))
    answer = uniform_attention(keys, qs).to_json()
    assert answer["status"] == "feasible" and check_uniform(keys, answer) == (True, "")
    grown = dict(answer, u=[str(3 * Fraction(x)) for x in answer["u"]])  # outside the ball, or not q's u
    assert not check_uniform(keys, grown)[0]
    unrotated = RMSNormQuerySet(qs.gain, qs.W_q, qs.b_q, qs.eps)  # the same u without R
    assert not check_uniform(keys, dict(answer, query_set=query_set_to_json(unrotated)))[0]
    big = rng.normal(size=(3, d)) * 1e3
    far = uniform_attention(big, qs).to_json()
    if far["status"] == "infeasible" and far["proof"]["kind"] == "least-norm solution outside the ball":
        assert check_uniform(big, far) == (True, "")
        far["proof"]["y"] = [str(2 * Fraction(x)) for x in far["proof"]["y"]]
        assert not check_uniform(big, far)[0]


def test_the_package_never_imports_the_reference_searches():
    from pathlib import Path

    import lnproofs

    root = Path(lnproofs.__file__).parent
    assert not list(root.rglob("*_reference.py"))
    for path in root.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for name in ("uniform_reference", "layernorm_reference", "from reference", "import reference"):
            assert name not in text, f"{path.relative_to(root)} names {name}"


def test_a_freshly_initialised_bert_is_decided_as_the_reference_decides(tmp_path):
    """Every head of a BERT straight from its config (unit gains, zero biases: q0 = 0) under
    its LayerNorm queries, as a corpus run asks (status only, the head's query map shared),
    and as one full answer that checks exactly."""
    pytest.importorskip("transformers")
    import torch
    from transformers import BertConfig, BertModel

    from lnproofs.kernel import ExactQueryMap
    from lnproofs.models.extract import capture_layers
    from lnproofs.models.head_sets import capture_query_set as head_query_set
    from lnproofs.models.loading import load_model

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=40,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=24,
    )
    BertModel(config).save_pretrained(str(tmp_path))
    loaded = load_model(tmp_path)
    ids = np.array([2, 7, 11, 5, 30, 9, 3], dtype=np.int64)  # 7 keys in R^8: a null space
    seen = []
    for layer, cap in capture_layers(loaded, [ids], [0, 1]).items():
        for head in range(4):
            keys, qs = cap.keys(head), head_query_set(cap, head)
            assert not any(qs.beta) and not any(qs.b_q) and set(qs.gamma) == {1.0}
            qmap = ExactQueryMap(qs)
            compact = uniform_attention(keys, qs, query_map=qmap, compact=True)
            full = uniform_attention(keys, qs, query_map=qmap)
            assert compact.status == full.status == reference_uniform_attention(keys, qs).status
            assert check_uniform(keys, full) == (True, "")
            seen.append(full.status)
    assert "feasible" in seen
