"""``--pool`` on the one road, for every family: the pooled statuses are those of certifying
every key of every text together (free queries; realisable queries at the pooled query
position, or the free answers where the set covers every direction), query heads that read
one key head share its free answers, and causal answers stay per text."""

import json

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pq = pytest.importorskip("pyarrow.parquet")

from tiny_decoders import tiny_decoder  # noqa: E402

from lnproofs.models.certify_model import certify_model  # noqa: E402
from lnproofs.models.loading import load_model  # noqa: E402

LENGTHS = (9, 14, 6, 12)


def _all_keys(run, layer, g):
    return np.concatenate([np.load(p)[f"keys_l{layer}_kv{g}"] for p in sorted((run / "texts").glob("*.npz"))])


@pytest.mark.parametrize("family", ["llama", "gpt_neox"])
def test_pooled_statuses_equal_certifying_every_key_together(family, tmp_path):
    from lnproofs.models.evidence import SetSource
    from lnproofs.models.head_sets import params_query_set, realisable_results
    from lnproofs.models.text_heads import COVERED_STATUS
    from lnproofs.propose.certification import certify

    folder = tmp_path / "model"
    tiny_decoder(family, folder)
    rng = np.random.default_rng(3)
    inputs = [rng.integers(0, 40, n) for n in LENGTHS]
    run = tmp_path / "run"
    layer = 1
    certify_model(load_model(folder), inputs, run, layers=[layer], uniform="none", pool=True)
    rows = pq.read_table(run / "pooled.parquet").to_pylist()
    params = dict(np.load(run / "params.npz"))
    where = [(t, p) for t, x in enumerate(inputs) for p in range(len(x))]
    longest = int(np.argmax(LENGTHS))
    table = np.load(run / "texts" / f"text{longest:05d}.npz")
    P = max(LENGTHS) - 1
    covered = uncovered = 0
    for head in range(4):
        record = json.loads((run / "pooled" / f"layer{layer}_head{head}.json").read_text())
        assert "causal" not in record and record["realisable"]["query_set"]["position"] == P
        keys = _all_keys(run, layer, record["key_head"])
        free = list(certify(keys).statuses)
        if "coverage" in record["realisable"]:
            real = [COVERED_STATUS[s] for s in free]
            covered += 1
        else:
            base = params_query_set(params, layer, head, keys.shape[1])
            qs = SetSource(base, str(params[f"l{layer}_style"]), table["rotary_cos"], table["rotary_sin"]).at(P)
            real = [r["status"] for r in realisable_results(keys, qs)]
            uncovered += 1
        got = sorted(
            (r["text"], r["position"], r["pooled_free"], r["pooled_realisable"]) for r in rows if r["head"] == head
        )
        assert got == sorted((t, p, f, s) for (t, p), f, s in zip(where, free, real))
    assert uncovered > 0
    # per text, the causal answers are untouched: the text files still hold them
    text = json.loads((run / "texts" / "text00000.json").read_text())
    assert all("causal" in h for h in text["heads"])


def test_grouped_query_heads_share_their_key_heads_pooled_free_answers(tmp_path):
    folder = tmp_path / "model"
    tiny_decoder("llama", folder)
    rng = np.random.default_rng(4)
    run = tmp_path / "run"
    certify_model(
        load_model(folder), [rng.integers(0, 40, n) for n in LENGTHS], run, layers=[0], uniform="none", pool=True
    )
    records = [json.loads((run / "pooled" / f"layer0_head{h}.json").read_text()) for h in range(4)]
    assert [r["key_head"] for r in records] == [0, 0, 1, 1]
    assert records[0]["free"] == records[1]["free"] and records[2]["free"] == records[3]["free"]
    assert records[0]["arrays"] == records[1]["arrays"] == "layer0_kv0.npz"
    assert sorted(p.name for p in (run / "pooled").glob("*.npz")) == ["layer0_kv0.npz", "layer0_kv1.npz"]


def test_pool_through_the_command_line_for_a_rotary_rmsnorm_model(cli, tmp_path):
    folder = tmp_path / "model"
    tiny_decoder("llama", folder)
    np.save(tmp_path / "ids.npy", np.array([[3, 7, 1, 9, 12, 5], [3, 7, 2, 8, 30, 4]]))
    out = tmp_path / "out"
    result = cli(
        [
            "certify-model",
            folder,
            "--tokens",
            tmp_path / "ids.npy",
            "--pool",
            "--layers",
            "1",
            "--uniform",
            "none",
            "--out",
            out,
            "--quiet",
        ]
    )
    assert result.status == 0, result.err
    assert "pooled over 2 text(s)" in result.out
    checked = cli(["check", out / "pooled" / "layer1_head2.json"])
    assert checked.status == 0, checked.out


def test_an_unselectable_key_of_a_text_that_spans_less_is_certified_in_the_pool(tmp_path):
    """A key inside its text's hull is left out of the pool only when the text's keys span
    R^d: the keys of a text made to lie on a segment are certified with the candidates."""
    import pyarrow as pa
    from bad_inputs.models import tiny_bert

    from lnproofs.models.corpus_pool import pool_corpus
    from lnproofs.models.extract import capture_layers
    from lnproofs.models.head_sets import HeadSets
    from lnproofs.models.table import ROW_SCHEMA

    folder = tmp_path / "model"
    tiny_bert(folder, layers=1, heads=4, width=16, tokenizer=False)
    loaded = load_model(folder)
    rng = np.random.default_rng(5)
    run = tmp_path / "run"
    certify_model(loaded, [rng.integers(0, 17, 20), rng.integers(0, 17, 5)], run, layers=[0], heads=[0], uniform="none")
    spread = pq.read_table(run / "rows" / "text00000.parquet").to_pylist()
    inside = [r["position"] for r in spread if r["status_free"] == "unselectable"]
    assert inside  # 20 keys in R^4: some inside the hull, which spans R^4
    arrays_path = run / "texts" / "text00001.npz"
    arrays = dict(np.load(arrays_path))
    a, b = np.array([1.0, 2.0, -1.0, 0.5]), np.array([-3.0, 1.0, 2.0, 4.0])
    arrays["keys_l0_kv0"] = np.array([a + t * (b - a) for t in (0.0, 0.25, 0.5, 0.75, 1.0)])  # on a segment
    np.savez(arrays_path, **arrays)
    rows = pq.read_table(run / "rows" / "text00001.parquet").to_pylist()
    for r in rows:
        r["status_free"] = "selectable" if r["position"] in (0, 4) else "unselectable"
    pq.write_table(pa.Table.from_pylist(rows, schema=ROW_SCHEMA()), run / "rows" / "text00001.parquet")
    caps = capture_layers(loaded, [np.array([0, 1])], [0])
    pool_corpus(run, HeadSets(), caps, [0], [0], progress=False)
    record = json.loads((run / "pooled" / "layer0_head0.json").read_text())
    members = [tuple(m) for m in record["members"]]
    assert all((1, p) in members for p in range(5))  # the segment's keys: certified
    assert not any((0, p) in members for p in inside)  # the spanning text's: left out
    statuses = {tuple(m): r["status"] for m, r in zip(record["members"], record["free"]["results"])}
    assert {statuses[(1, p)] for p in (1, 2, 3)} <= {"tie-only", "unselectable"}
    from lnproofs.models.certify_model import check_model_file

    reports = check_model_file(run / "pooled" / "layer0_head0.json")
    assert reports and all(r.ok for r in reports.values())
