"""certify-model --corpus in two kinds of task: the same bytes whatever the layout.

One local cluster of 1 model worker (Dask resource MODEL) and 2 certifying workers serves
every test here; each run is compared file by file with the run in this process
(``workers=1``), also when a worker of either kind is killed in the middle of a run.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest
from bad_inputs.models import _word_tokenizer, tiny_bert, tiny_gpt2
from tiny_decoders import tiny_decoder

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("distributed")

TEXTS = [
    "the cat sat on the mat and the dog ran far",
    "a dog slept",
    "the mat sat on the cat . the dog ran",
    "the dog ran and ran",
    "a cat sat",
    "the cat ran on the mat",
    "a dog and a cat slept",
    "the dog sat",
    "on the mat the cat slept and the dog ran far",
    "a cat ran",
]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("layout-models")
    tiny_bert(root / "bert", layers=2, heads=2, width=16, max_positions=64)
    tiny_gpt2(root / "gpt2", layers=2, heads=2, width=16, positions=64, tokenizer=True)
    tiny_decoder("llama", root / "llama", positions=64)  # RMSNorm, rotary, grouped queries
    _word_tokenizer(root / "llama")
    corpus = root / "texts.txt"
    corpus.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    return root, corpus


@pytest.fixture(scope="module")
def layout():
    from lnproofs.execution import open_client

    with open_client(3, model_workers=1) as context:
        yield context


def _run(model, corpus, out, **options):
    from lnproofs.models.corpus_run import certify_corpus
    from lnproofs.models.loading import load_model, load_tokenizer

    loaded, tokenizer = load_model(model), load_tokenizer(model, None)
    return certify_corpus(loaded, tokenizer, corpus, out, progress=False, batch_size=2, uniform="free", **options)


def _files(out):
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def _same_bytes(one, two):
    first, second = _files(one), _files(two)
    assert sorted(first) == sorted(second)
    assert len([n for n in first if n.startswith("texts/") and n.endswith(".json")]) == len(TEXTS)
    for name in first:
        assert first[name] == second[name], _difference(name, first[name], second[name])


def _difference(name, one, two) -> str:
    """Where two versions of a file part: the first differing JSON path, else the first byte."""
    import json

    if name.endswith(".json"):

        def walk(a, b, path):
            if type(a) is not type(b):
                return f"{path}: {a!r:.200} != {b!r:.200}"
            if isinstance(a, dict):
                for key in sorted(set(a) | set(b)):
                    if a.get(key) != b.get(key):
                        return walk(a.get(key), b.get(key), f"{path}.{key}")
            elif isinstance(a, list):
                if len(a) != len(b):
                    return f"{path}: {len(a)} items != {len(b)}"
                for i, (x, y) in enumerate(zip(a, b)):
                    if x != y:
                        return walk(x, y, f"{path}[{i}]")
            return f"{path}: {a!r:.200} != {b!r:.200}"

        return f"{name} differs at " + walk(json.loads(one), json.loads(two), "$")
    at = next((i for i, (x, y) in enumerate(zip(one, two)) if x != y), min(len(one), len(two)))
    return f"{name} differs from byte {at} ({len(one)} and {len(two)} bytes)"


def _pids(context):
    from lnproofs.execution import MODEL_RESOURCE

    def who(dask_worker=None):
        return os.getpid(), dask_worker.state.total_resources.get(MODEL_RESOURCE, 0) > 0

    return context.client.run(who)


def _whole(context, timeout=120.0):
    """Wait until the cluster is 1 model worker + 2 certifiers again: a killed worker's nanny
    starts its replacement in the background, and a test that follows a kill test in the same
    process must not start on a cluster still missing it."""
    deadline = time.monotonic() + timeout
    while True:
        holds = sorted(h for _, h in _pids(context).values())
        if holds == [False, False, True]:
            return
        assert time.monotonic() < deadline, f"the cluster did not come back whole: {holds}"
        time.sleep(0.2)


@pytest.mark.slow
@pytest.mark.parametrize("family", ["bert", "gpt2", "llama"])
def test_one_model_worker_and_two_certifiers_write_the_bytes_of_one_process(models, layout, tmp_path, family):
    root, corpus = models
    _whole(layout)
    alone = _run(root / family, corpus, tmp_path / "alone", workers=1)
    split = _run(root / family, corpus, tmp_path / "split", context=layout)
    assert alone["certified"] == split["certified"] == len(TEXTS)
    _same_bytes(tmp_path / "alone", tmp_path / "split")
    record = split["model_loads"]
    certifiers = [r for r in record.values() if not r["model_worker"]]
    holders = [r for r in record.values() if r["model_worker"]]
    assert len(certifiers) == 2 and len(holders) == 1
    assert all(r["loads"] == 0 for r in certifiers)  # a certifying worker never makes the model
    assert holders[0]["loads"] == 1  # the model worker makes it once per run


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["model", "certifier"])
def test_killing_a_worker_mid_run_changes_no_byte(models, layout, tmp_path, kind):
    root, corpus = models
    _whole(layout)
    _run(root / "bert", corpus, tmp_path / "alone", workers=1)
    victims = [pid for pid, holds in _pids(layout).values() if holds == (kind == "model")]
    out = tmp_path / "killed"
    seen = {}

    def kill_after_first_text():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (out / "texts" / "text00000.json").exists():
            time.sleep(0.01)
        seen["finished"] = len(list((out / "texts").glob("text*.json"))) if (out / "texts").is_dir() else 0
        os.kill(victims[0], signal.SIGKILL)
        seen["killed"] = victims[0]

    killer = threading.Thread(target=kill_after_first_text, daemon=True)
    killer.start()
    result = _run(root / "bert", corpus, out, context=layout)
    killer.join(timeout=130)
    assert seen.get("killed") == victims[0]
    assert seen["finished"] < len(TEXTS), "the run was over before the worker was killed"
    assert result["certified"] == len(TEXTS)  # nothing lost, nothing counted twice
    _same_bytes(tmp_path / "alone", out)


def test_forward_pieces_are_the_capture_widened_exactly(tmp_path):
    """The forward task's pieces of a float32 forward pass on the CPU: float64 arrays holding
    float32 values (the widening is exact) equal to a direct capture, the same on a rerun; the
    keys it makes for the group are those of each text captured alone."""
    from lnproofs.models.corpus_run import _forward_group
    from lnproofs.models.extract import capture_layers
    from lnproofs.models.loading import load_model

    tiny_bert(tmp_path / "bert", layers=2, heads=2, width=16, max_positions=64, tokenizer=False)
    loaded = load_model(tmp_path / "bert", dtype="float32")
    inputs = [np.array([2, 5, 6, 7, 3]), np.array([2, 9, 11, 3]), np.array([2, 6, 3])]
    members = [(10, inputs[0], True), (11, inputs[1], False), (12, inputs[2], True)]
    pieces = _forward_group((members, [0, 1], False, {}), loaded)
    again = _forward_group((members, [0, 1], False, {}), loaded)
    folded = _forward_group((members, [0, 1], True, {}), loaded)
    caps = capture_layers(loaded, inputs, [0, 1])
    assert [(n, layer) for n, layer, _, _ in pieces] == [(10, 0), (10, 1), (12, 0), (12, 1)]
    for (number, layer, ids, fields), (_, _, _, other), (_, _, _, with_inputs) in zip(pieces, again, folded):
        k = number - 10
        mine = caps[layer].of_input(k)
        ln_out = fields["ln_out"]
        assert ln_out.dtype == np.float64 and ln_out.shape == (len(inputs[k]), 16)
        np.testing.assert_array_equal(ids, inputs[k])
        np.testing.assert_array_equal(ln_out, mine.ln_out)
        np.testing.assert_array_equal(ln_out, other["ln_out"])
        np.testing.assert_array_equal(ln_out.astype(np.float32).astype(np.float64), ln_out)
        np.testing.assert_array_equal(fields["sources"], mine.sources)
        assert fields["hidden_in"].shape[0] == 0  # the norm's inputs travel only for --fold
        np.testing.assert_array_equal(with_inputs["hidden_in"], mine.hidden_in)
        # the keys, made for the whole group at once, are the bytes of this text's own capture
        alone = capture_layers(loaded, [inputs[k]], [layer])[layer]
        assert alone.key_rows is None and fields["key_rows"].shape == (len(inputs[k]), 16)
        np.testing.assert_array_equal(fields["key_rows"], alone._all_keys)
        np.testing.assert_array_equal(fields["key_rows"], other["key_rows"])


@pytest.mark.parametrize(
    "case",
    ["model-workers-over-workers", "scheduler-without-model-workers", "device-not-here", "device-not-on-model-workers"],
)
def test_layout_refusals_come_before_any_file(cli, tmp_path, case):
    from bad_inputs.corpus import CASES

    make = {name: fn for name, fn, _ in CASES}[case]
    result = cli(make(tmp_path))
    assert result.status == 2, result.err
    assert not (tmp_path / "o").exists()


def _tiny_llama(folder):
    from tiny_decoders import tiny_decoder

    from lnproofs.models.loading import load_model

    tiny_decoder("llama", folder, layers=3)
    return load_model(folder, dtype="float32")


def test_layer_weights_travel_in_float32_only_where_that_is_exact(tmp_path):
    from dataclasses import replace

    from lnproofs.models.corpus_run import WEIGHTS, _compact, _layer_templates, _widen
    from lnproofs.models.extract import capture_layers

    loaded = _tiny_llama(tmp_path / "llama")
    full = capture_layers(loaded, [np.array([0, 1])], [0, 2])
    made = _layer_templates(loaded, [0, 2])
    for layer, small in zip([0, 2], made):
        assert small.layer == layer and small.ln_out.shape[0] == 0
        assert all(getattr(small, name).dtype == np.float32 for name in WEIGHTS)  # a float32 model
        fields = {"ln_out": full[layer].ln_out, "hidden_in": full[layer].hidden_in}
        wide = _widen(small, fields)
        for name in WEIGHTS:
            got, want = getattr(wide, name), getattr(full[layer], name)
            assert got.dtype == np.float64 and got.tobytes() == want.tobytes()
    third = full[0].W_q.copy()
    third[0, 0] = 1.0 / 3.0  # not a float32: the array stays float64
    kept = _compact(replace(full[0], W_q=third))
    assert kept.W_q.dtype == np.float64 and kept.W_k.dtype == np.float32
    assert _widen(kept, {}).W_q.tobytes() == third.tobytes()


def test_head_sets_drop_the_oldest_layer_and_certify_the_same(tmp_path):
    import json

    from lnproofs.models.extract import capture_layers
    from lnproofs.models.head_sets import HeadSets
    from lnproofs.models.text_heads import certify_text

    loaded = _tiny_llama(tmp_path / "llama")
    ids = np.array([1, 5, 9, 2, 7, 3, 11, 4])
    caps = capture_layers(loaded, [ids], [0, 1, 2])
    heads = list(range(loaded.n_heads))
    small, large = HeadSets(limit=1), HeadSets()
    for layer in [0, 1, 2, 0]:
        got = certify_text({layer: caps[layer]}, ids, 0, None, [layer], heads, small, uniform="free")
        want = certify_text({layer: caps[layer]}, ids, 0, None, [layer], heads, large, uniform="free")
        assert json.dumps(got[0], sort_keys=True) == json.dumps(want[0], sort_keys=True)
        assert got[1] == want[1]
        held = {key[0] for key in small.items if len(key) == 2}
        assert held == {layer}  # only the layer in use is kept
    assert {key[0] for key in large.items if len(key) == 2} == {0, 1, 2}


def _gpu() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.skipif(not _gpu(), reason="needs a GPU: compares a forward pass there with the CPU's")
@pytest.mark.parametrize("dtype, tolerance", [("float32", 1e-4), ("float64", 1e-10)])
def test_a_gpu_forward_pass_captures_what_the_cpu_does(tmp_path, dtype, tolerance):
    """--device cuda on a model worker: the pieces equal the CPU's within ``tolerance`` times
    each array's largest entry (a GPU sums in another order, so bit equality is not claimed)."""
    from lnproofs.models.corpus_run import _forward_group
    from lnproofs.models.loading import load_model

    tiny_bert(tmp_path / "bert", layers=2, heads=2, width=16, max_positions=64, tokenizer=False)
    members = [(0, np.array([2, 5, 6, 7, 3]), True), (1, np.array([2, 9, 11, 3]), True)]
    cpu, gpu = (
        _forward_group((members, [0, 1], False, {}), load_model(tmp_path / "bert", dtype=dtype, device=device))
        for device in ("cpu", "cuda")
    )
    assert [(n, layer) for n, layer, _, _ in cpu] == [(n, layer) for n, layer, _, _ in gpu]
    for (_, _, ids, fields), (_, _, gpu_ids, gpu_fields) in zip(cpu, gpu):
        np.testing.assert_array_equal(ids, gpu_ids)
        assert sorted(fields) == sorted(gpu_fields)
        for name, value in fields.items():
            if value is None or not np.issubdtype(np.asarray(value).dtype, np.floating):
                np.testing.assert_array_equal(gpu_fields[name], value)
                continue
            scale = float(np.abs(value).max(initial=1.0))
            np.testing.assert_allclose(gpu_fields[name], value, rtol=0, atol=tolerance * scale, err_msg=name)
