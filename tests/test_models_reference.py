"""The one road against the slow per-prefix reference (tests/reference/), key by key, on tiny
random models of every family: free and realisable statuses over the whole text, and for
decoders each key's causal answers (first stop, or the positions at which it can win)."""

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pq = pytest.importorskip("pyarrow.parquet")

from bad_inputs.models import tiny_bert, tiny_gpt2  # noqa: E402
from reference.per_prefix import certify_head  # noqa: E402
from tiny_decoders import DECODER_FAMILIES, tiny_decoder  # noqa: E402

from lnproofs.models.certify_model import certify_model, check_model_file  # noqa: E402
from lnproofs.models.extract import capture_layers  # noqa: E402
from lnproofs.models.loading import load_model  # noqa: E402

IDS = np.array([3, 7, 1, 9, 12, 5, 7, 2, 30, 4, 11, 19, 25, 6, 14, 8])
# "-offset": query biases far outside the realisable queries, so no head covers every direction
# and the LayerNorm fast search (and for decoders the per-position answers) are compared too
FAMILIES = ("bert", "gpt2", "bert-offset", "gpt2-offset") + DECODER_FAMILIES + ("llama-offset", "gpt_neox-offset")


def _model(name, folder):
    family, offset = name.split("-")[0], name.endswith("-offset")
    if family == "bert":
        tiny_bert(folder, layers=2, heads=4, width=16, tokenizer=False, query_bias=5.0 if offset else None)
    elif family == "gpt2":
        tiny_gpt2(folder, layers=2, heads=4, width=16, query_bias=5.0 if offset else None)
    else:
        model = tiny_decoder(family, folder if not offset else None)
        if offset:
            import torch

            with torch.no_grad():
                for name_, module in model.named_modules():
                    if name_.endswith(("q_proj", "query_key_value")) and module.bias is not None:
                        module.bias.normal_(0.0, 5.0)
            model.save_pretrained(str(folder))


@pytest.mark.parametrize("family", FAMILIES)
def test_the_road_equals_the_per_prefix_reference(family, tmp_path):
    folder = tmp_path / family
    folder.mkdir()
    _model(family, folder)
    loaded = load_model(folder)
    ids = IDS % 17 if family.startswith("bert") else IDS
    out = tmp_path / "out"
    certify_model(loaded, [ids], out, layers=[0, 1], uniform="none")
    table = pq.read_table(out / "table.parquet").to_pylist()
    caps = capture_layers(loaded, [ids], [0, 1])
    causal = loaded.family.causal
    compared = set()
    for layer in (0, 1):
        for head in range(loaded.n_heads):
            ref = certify_head(caps[layer], head, uniform="none", causal=causal)
            rows = sorted((r for r in table if r["layer"] == layer and r["head"] == head), key=lambda r: r["position"])
            assert [r["status_free"] for r in rows] == [r["status"] for r in ref["free"]["results"]]
            assert [r["status_realisable"] for r in rows] == [r["status"] for r in ref["layernorm"]["results"]]
            compared |= {r["status_realisable"] for r in rows} | {r["status_free"] for r in rows}
            if not causal:
                assert all(r["first_stop_free"] is None for r in rows)
                continue
            section = ref["causal"]["inputs"][0]
            assert [r["first_stop_free"] for r in rows] == section["free"]["first_unselectable"]
            real = section["realisable"]
            if "first_unselectable" in real:
                assert [r["first_stop_realisable"] for r in rows] == real["first_unselectable"]
            wins = real.get("selectable_at")
            if wins is None:  # monotone: the positions from j up to the first stop
                T = len(rows)
                wins = [list(range(j, T if t is None else t)) for j, t in enumerate(real["first_unselectable"])]
            assert [r["realisable_wins"] for r in rows] == [len(w) for w in wins]
            assert [r["realisable_first_win"] for r in rows] == [w[0] if w else None for w in wins]
            assert [r["realisable_last_win"] for r in rows] == [w[-1] if w else None for w in wins]
    assert "selectable" in compared and len(compared) > 1  # the comparison is not vacuous
    reports = check_model_file(out / "texts" / "text00000.json")
    assert reports and all(r.ok for r in reports.values())
    record = json.loads((out / "texts" / "text00000.json").read_text())
    assert {h["kind"] for h in record["heads"]} == {
        "bert": {"layernorm"},
        "gpt2": {"layernorm"},
        "opt": {"layernorm"},
        "gpt_neox": {"layernorm_rotary"},
    }.get(family.split("-")[0], {"rmsnorm"})
    covered = {"coverage" in h["realisable"] for h in record["heads"]}
    if family.endswith("-offset"):
        assert covered == {False}
    elif family in ("bert", "gpt2"):
        assert covered == {True}
