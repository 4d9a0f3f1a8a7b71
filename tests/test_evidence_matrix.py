"""One evidence check for every file kind: a text file, a head file (``--head-files``) and a
pooled file (``--pool``) of the same run are checked by the same code, so a tampered piece
of evidence is refuted in each, for a LayerNorm encoder (BERT), a LayerNorm decoder (GPT-2),
a rotary LayerNorm decoder (GPT-NeoX, partial rotation) and a rotary RMSNorm decoder with
grouped queries (Llama), tiny random models built from configs.

The matrix holds every cell where the evidence exists: a witness (free certificate) and a
coverage minor in every file kind and family; a causal record in text and head files of the
decoders (an encoder has none, and causal answers stay per text: a pooled file holds none);
a rotation in every file kind of the rotary families (made singular at one position: at a
query position before the last for the causal answers of a text, at the pooled query
position in a pooled file).
"""

import json
import shutil

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("pyarrow")

from bad_inputs.models import tiny_bert, tiny_gpt2  # noqa: E402
from tiny_decoders import tiny_decoder  # noqa: E402

from lnproofs.models.certify_model import certify_model, check_model_file  # noqa: E402
from lnproofs.models.loading import load_model  # noqa: E402

#: family -> (layer certified, a head of it whose realisable set covers every direction)
FAMILIES = {"bert": (1, 0), "gpt2": (1, 0), "gpt_neox": (0, 2), "llama": (1, 0)}
ROTARY = ("gpt_neox", "llama")
CAUSAL = ("gpt2", "gpt_neox", "llama")
LENGTHS = (10, 13, 16)
TEXT = len(LENGTHS) - 1  # the text whose files are tampered with


def _build(family, folder):
    if family == "bert":
        tiny_bert(folder, layers=2, heads=4, width=16, tokenizer=False)
    elif family == "gpt2":
        tiny_gpt2(folder, heads=4)
    else:
        tiny_decoder(family, folder)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """family -> a finished run (every head of one layer, three texts, pooled, head files)."""
    out = {}
    for family, (layer, _) in FAMILIES.items():
        folder = tmp_path_factory.mktemp(f"model-{family}")
        _build(family, folder)
        rng = np.random.default_rng(1)
        run = tmp_path_factory.mktemp(f"run-{family}")
        certify_model(
            load_model(folder),
            [rng.integers(0, 17, n) for n in LENGTHS],
            run,
            layers=[layer],
            uniform="none",
            pool=True,
            head_files=True,
        )
        out[family] = run
    return out


def _paths(run, family):
    layer, head = FAMILIES[family]
    return {
        "text": run / "texts" / f"text{TEXT:05d}.json",
        "head": run / "heads" / f"layer{layer}_head{head}.json",
        "pooled": run / "pooled" / f"layer{layer}_head{head}.json",
    }


def _prefix(kind, family):
    layer, head = FAMILIES[family]
    return {"text": f"layer{layer}/head{head}", "head": f"text{TEXT}", "pooled": f"pooled/layer{layer}/head{head}"}[
        kind
    ]


def _entry(kind, family, data):
    """The tampered head's evidence inside the file's JSON (free, realisable, causal)."""
    layer, head = FAMILIES[family]
    if kind == "text":
        return next(h for h in data["heads"] if h["layer"] == layer and h["head"] == head)
    if kind == "head":
        return next(t for t in data["texts"] if t["text"] == TEXT)
    return data


def _witness(path, kind, family):
    data = json.loads(path.read_text())
    free = _entry(kind, family, data)["free"]
    result = next(r for r in free["results"] if r["status"] == "selectable")
    result["witness"] = [0.0] * len(result["witness"])  # every key scores 0: nothing wins
    path.write_text(json.dumps(data))
    return "free"


def _coverage(path, kind, family):
    data = json.loads(path.read_text())
    coverage = _entry(kind, family, data)["realisable"]["coverage"]
    if kind == "text":  # a text file names its run's coverage file
        path = path.parent.parent / coverage
        data = json.loads(path.read_text())
        coverage = data["coverage"]
    coverage["rows"][1] = coverage["rows"][0]  # a minor with two equal columns: zero
    path.write_text(json.dumps(data))
    return "coverage"


def _causal(path, kind, family):
    data = json.loads(path.read_text())
    record = _entry(kind, family, data)["causal"]["free"]
    n = record["n_keys"]
    entry = next(e for e in record["keys"] if e["stop"] is None and 0 < e["index"] < n - 1)
    entry["stop"] = n - 1  # "stopped by key 0": k_j = k_0, which is false
    entry["cannot_win"] = {"combination": {"indices": [0], "weights": ["1"]}}
    path.write_text(json.dumps(data))
    return "causal/free"


def _rotation(path, kind, family):
    if kind == "head":
        data = json.loads(path.read_text())
        rotary = _entry(kind, family, data)["rotary"]
        rotary["cos"][3][0] = rotary["sin"][3][0] = 0.0  # a 2 x 2 block with determinant 0
        path.write_text(json.dumps(data))
        return "coverage"
    data = json.loads(path.read_text())
    arrays_path = path.parent / data["arrays"]
    with np.load(arrays_path) as a:
        arrays = {k: a[k] for k in a.files}
    at = 3 if kind == "text" else data["realisable"]["query_set"]["position"]
    arrays["rotary_cos"][at, 0] = arrays["rotary_sin"][at, 0] = 0.0
    np.savez(arrays_path, **arrays)
    return "coverage"


TAMPERS = {"witness": _witness, "coverage": _coverage, "causal": _causal, "rotation": _rotation}
CELLS = [
    (family, kind, tamper)
    for family in FAMILIES
    for kind in ("text", "head", "pooled")
    for tamper in TAMPERS
    if (tamper != "causal" or (family in CAUSAL and kind != "pooled")) and (tamper != "rotation" or family in ROTARY)
]


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_file_of_every_kind_checks(runs, family):
    run = runs[family]
    files = sorted(run.glob("texts/*.json")) + sorted(run.glob("heads/*.json")) + sorted(run.glob("pooled/*.json"))
    assert {p.parent.name for p in files} == {"texts", "heads", "pooled"}
    for path in files:
        reports = check_model_file(path)
        assert reports and all(r.ok for r in reports.values()), (path, [n for n, r in reports.items() if not r.ok])
    paths = _paths(run, family)
    kinds = {kind: set(check_model_file(p)) for kind, p in paths.items()}
    assert f"{_prefix('text', family)}/coverage" in kinds["text"]
    assert f"{_prefix('head', family)}/coverage" in kinds["head"]
    assert f"{_prefix('pooled', family)}/coverage" in kinds["pooled"]
    if family in CAUSAL:
        assert f"{_prefix('head', family)}/causal/free" in kinds["head"]


@pytest.mark.parametrize(("family", "kind", "tamper"), CELLS)
def test_tampered_evidence_is_refuted_in_every_file_kind(runs, family, kind, tamper, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(runs[family], run)
    path = _paths(run, family)[kind]
    part = TAMPERS[tamper](path, kind, family)
    reports = check_model_file(path)
    failed = sorted(name for name, r in reports.items() if not r.ok)
    assert f"{_prefix(kind, family)}/{part}" in failed, failed
    if tamper == "rotation":
        message = str(reports[f"{_prefix(kind, family)}/coverage"])
        assert "not invertible" in message, message


def test_the_matrix_has_every_cell():
    """4 tampers x 3 kinds x 4 families, less the cells without such evidence."""
    assert len(CELLS) == 2 * 3 * 4 + 2 * 3 + 3 * 2


def test_a_head_file_made_from_a_text_with_a_singular_rotation_is_refuted(runs, tmp_path):
    """The head file is written from the text files: a singular rotation at one position of
    a text's table is refuted in the text file and in the head file made from it."""
    from lnproofs.models.head_files import write_head_files

    run = tmp_path / "run"
    shutil.copytree(runs["llama"], run)
    _rotation(_paths(run, "llama")["text"], "text", "llama")
    write_head_files(run)
    for kind in ("text", "head"):
        reports = check_model_file(_paths(run, "llama")[kind])
        assert not reports[f"{_prefix(kind, 'llama')}/coverage"].ok
