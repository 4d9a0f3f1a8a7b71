"""The Majority task: its data generator, the model's frozen bias, and a tiny run of the command."""

from __future__ import annotations

import csv
import json
from collections import Counter

import numpy as np
import pytest

from lnproofs.experiments.majority_data import make_majority_data, partitions, valid_partitions


def test_partitions_are_the_partitions_of_l_in_order():
    assert sorted(partitions(5, 5)) == [(1, 1, 1, 1, 1), (1, 1, 1, 2), (1, 1, 3), (1, 2, 2), (1, 4), (2, 3), (5,)]
    assert sorted(partitions(5, 2)) == [(1, 4), (2, 3), (5,)]
    assert len(list(partitions(12, 12))) == 77  # p(12)
    for parts in partitions(15, 6):
        assert sum(parts) == 15 and len(parts) <= 6 and list(parts) == sorted(parts)


def test_valid_partitions_have_a_clear_unique_top():
    parts = valid_partitions(20, 6, 4)
    assert parts
    for p in parts:
        second = p[-2] if len(p) > 1 else 0
        assert p[-1] - second >= 4 and len(p) <= 6
    assert (6, 14) in parts and (8, 12) in parts and (9, 11) not in parts and (10, 10) not in parts
    # no ties even when min_delta is 0
    assert all((p[-2] if len(p) > 1 else 0) < p[-1] for p in valid_partitions(12, 5, 0))


def test_sequences_labels_and_stratified_split():
    data = make_majority_data(1000, 20, 6, min_delta=3, seed=5)
    x = np.concatenate([data.x_train, data.x_test])
    y = np.concatenate([data.y_train, data.y_test])
    assert x.shape == (1000, 20) and len(data.x_test) + len(data.x_train) == 1000
    assert x.min() >= 0 and x.max() < 6
    for seq, label in zip(x, y):
        counts = Counter(seq.tolist()).most_common()
        assert counts[0][0] == label
        second = counts[1][1] if len(counts) > 1 else 0
        assert counts[0][1] - second >= 3
    for label in np.unique(y):
        n_all, n_test = int((y == label).sum()), int((data.y_test == label).sum())
        assert n_test == round(0.2 * n_all)
    again = make_majority_data(1000, 20, 6, min_delta=3, seed=5)
    assert np.array_equal(again.x_train, data.x_train) and np.array_equal(again.y_test, data.y_test)
    other = make_majority_data(1000, 20, 6, min_delta=3, seed=6)
    assert not np.array_equal(other.x_train, data.x_train)


def test_ten_sequences_per_partition():
    data = make_majority_data(100, 12, 4, min_delta=2, seed=0)
    assert data.n_partitions == 10


def test_in_projection_bias_stays_zero_and_the_norms_do_what_they_say():
    torch = pytest.importorskip("torch")
    from torch_backend.training.majority import MajorityModel, train_majority

    data = make_majority_data(200, 12, 5, min_delta=2, seed=0)
    rows = []
    result = train_majority(
        data, arm="layernorm", d=4, seed=1, steps=5, batch=32, lr=1e-2, decay_steps=50, eval_every=2, on_row=rows.append
    )
    assert [r["step"] for r in rows] == [1, 2, 3, 4, 5]
    assert 0.0 <= result["test_accuracy"] <= 1.0 and 0.0 <= result["query_angle"] <= 90.0
    model = MajorityModel(5, 4, "layernorm")
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=0.1)
    before = model.embedding.weight.detach().clone()
    for _ in range(3):
        loss = model(torch.randint(0, 5, (8, 12))).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert torch.count_nonzero(model.layer.self_attn.in_proj_bias) == 0
    assert not model.layer.self_attn.in_proj_bias.requires_grad
    assert not torch.equal(before, model.embedding.weight)
    x = torch.randn(6, 4)
    ln = MajorityModel(5, 4, "layernorm").layer.norm1(x)
    assert torch.allclose(ln.sum(-1), torch.zeros(6), atol=1e-5)
    assert torch.allclose(ln.norm(dim=-1), torch.full((6,), 2.0), atol=1e-4)  # radius sqrt(d)
    sphere = MajorityModel(5, 4, "no-projection").layer.norm1(x)
    assert torch.allclose(sphere.norm(dim=-1), torch.full((6,), 0.5), atol=1e-6)  # 1/sqrt(d)
    assert torch.equal(MajorityModel(5, 4, "none").layer.norm1(x), x)


def _reference_and_grouped(arm: str, dtype, scale: float = 1.0):
    """Loss, per-token logits and gradients of one model from both forward passes."""
    torch = pytest.importorskip("torch")
    from torch_backend.training.majority import MajorityModel
    from torch_backend.training.majority_fast import class_counts, grouped_batch, grouped_logits, grouped_loss

    data = make_majority_data(300, 50, 20, min_delta=6, seed=3)
    x, y = torch.as_tensor(data.x_train[:48]), torch.as_tensor(data.y_train[:48])
    torch.manual_seed(7)
    model = MajorityModel(20, 8, arm).to(dtype)
    with torch.no_grad():
        model.layer.self_attn.in_proj_weight.mul_(scale)
    params = [p for p in model.parameters() if p.requires_grad]
    ref_logits = model(x)
    ref_loss = torch.nn.functional.cross_entropy(ref_logits.reshape(-1, 20), y[:, None].expand_as(x).reshape(-1))
    ref_grads = torch.autograd.grad(ref_loss, params)
    batch = grouped_batch(class_counts(x, 20).to(dtype), y)
    logits = grouped_logits(model, batch)
    loss = grouped_loss(logits, batch)
    grads = torch.autograd.grad(loss, params)
    # every position's logits are its (sequence, class) row of the grouped logits
    full = torch.full((48 * 20, 20), float("nan"), dtype=dtype)
    full[batch.rows] = logits.detach()
    per_token = full.reshape(48, 20, 20)[torch.arange(48)[:, None], x]
    return (ref_loss, loss), (ref_logits.detach(), per_token), list(zip(ref_grads, grads))


@pytest.mark.parametrize("arm", ["layernorm", "no-projection", "none"])
@pytest.mark.parametrize("scale", [1.0, 40.0])  # 40: scores spread past the counts-product path
def test_grouped_forward_is_the_reference_layer(arm, scale):
    """The forward over class counts is the nn.TransformerEncoderLayer model: the same loss,
    per-token logits and gradients, to 1e-9 in float64 and 2e-4 (relative) in float32."""
    torch = pytest.importorskip("torch")
    for dtype, tol in ((torch.float64, 1e-9), (torch.float32, 2e-4)):
        (ref_loss, loss), (ref_logits, logits), grads = _reference_and_grouped(arm, dtype, scale)
        assert not torch.isnan(logits).any()
        assert abs(float((ref_loss - loss).detach())) <= tol * max(1.0, abs(float(ref_loss.detach())))
        assert torch.allclose(logits, ref_logits, rtol=tol, atol=tol * float(ref_logits.abs().max()))
        for ref, got in grads:
            assert torch.allclose(got, ref, rtol=tol, atol=tol * max(1.0, float(ref.abs().max())))


def test_grouped_and_reference_training_agree_step_by_step():
    pytest.importorskip("torch")
    from torch_backend.training.majority import train_majority

    data = make_majority_data(400, 30, 8, min_delta=4, seed=1)
    runs = {}
    for grouped in (True, False):
        rows = []
        train_majority(
            data,
            arm="layernorm",
            d=4,
            seed=2,
            steps=6,
            batch=64,
            lr=1e-2,
            decay_steps=60,
            eval_every=3,
            on_row=rows.append,
            grouped=grouped,
        )
        runs[grouped] = rows
    for fast, ref in zip(runs[True], runs[False]):
        assert fast["epoch"] == ref["epoch"] and fast["step"] == ref["step"]
        assert fast["train_loss"] == pytest.approx(ref["train_loss"], rel=1e-4)
        assert fast["train_angle"] == pytest.approx(ref["train_angle"], abs=1e-3)
    assert runs[True][-1]["test_accuracy"] == pytest.approx(runs[False][-1]["test_accuracy"], abs=0.02)


def test_command_writes_csvs_figures_summary_and_keeps_finished_runs(cli, tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "exp"
    result = cli(
        [
            "reproduce",
            "majority",
            "--out",
            out,
            "--steps",
            "4",
            "--samples",
            "300",
            "--seeds",
            "3,4",
            "--quiet",
            "--arms",
            "layernorm,no-projection,none",
        ]
    )
    assert result.status == 0, result.err
    assert result.err == ""  # --quiet: only warnings and errors, and there were none
    root = out / "majority"
    for arm in ("layernorm", "no-projection", "none"):
        for seed in (3, 4):
            with open(root / "runs" / f"{arm}_seed{seed}.csv", newline="") as handle:
                rows = list(csv.DictReader(handle))
            assert [int(r["step"]) for r in rows] == [1, 2, 3, 4]
            assert rows[-1]["test_accuracy"] and rows[-1]["query_angle"]
    for name in ("majority_loss.png", "majority_accuracy.png", "majority_angle.png", "majority_3d.png"):
        assert (root / name).read_bytes().startswith(b"\x89PNG")
    summary = (out / "summary.md").read_text()
    assert "Majority task" in summary and "the paper" in summary and "Uniform attention, certified" in summary
    assert "the default configuration" in summary and "the paper's configuration" not in summary  # this run only
    findings = [
        line
        for line in summary.splitlines()
        if line.startswith(("| angle to $\\mathbf{1}$", "| steps to smoothed loss", "| test accuracy with"))
    ]
    assert len(findings) == 6 and all(line.count("|") == 4 for line in findings)  # quantity, paper, this run
    for seed in (3, 4):  # every trained model is certified, its weights kept
        assert (root / "runs" / f"layernorm_seed{seed}_weights.npz").is_file()
        assert not (root / "runs" / f"layernorm_seed{seed}.checkpoint.pt").exists()
        ln = json.loads((root / "runs" / f"layernorm_seed{seed}_certificates.json").read_text())
        sphere = json.loads((root / "runs" / f"no-projection_seed{seed}_certificates.json").read_text())
        assert ln["uniform_free"]["status"] == "feasible" and sphere["uniform_free"]["status"] == "infeasible"
    stamp = (root / "runs" / "layernorm_seed3.csv").stat().st_mtime_ns
    assert cli(["reproduce", "majority", "--out", out, "--steps", "0"]).status == 2
    other = cli(["reproduce", "majority", "--out", out, "--steps", "5", "--samples", "300", "--seeds", "3,4"])
    assert other.status == 2 and "steps 4 (now 5)" in other.err and len(other.err.strip().splitlines()) == 1
    assert (root / "runs" / "layernorm_seed3.csv").stat().st_mtime_ns == stamp  # runs of other settings kept
    again = cli(
        [
            "reproduce",
            "majority",
            "--out",
            out,
            "--steps",
            "4",
            "--samples",
            "300",
            "--seeds",
            "3,4",
            "--quiet",
            "--no-3d",
            "--arms",
            "none,layernorm,no-projection",
        ]
    )
    assert again.status == 0, again.err
    assert (root / "runs" / "layernorm_seed3.csv").stat().st_mtime_ns == stamp  # not redone


def test_training_resumes_from_its_checkpoint_with_the_same_result(tmp_path):
    pytest.importorskip("torch")
    from torch_backend.training.majority import checkpoint_step, train_majority

    data = make_majority_data(300, 20, 6, min_delta=3, seed=2)
    kwargs = dict(arm="no-projection", d=4, seed=5, steps=10, batch=50, lr=1e-2, decay_steps=100, eval_every=3)
    whole = []
    expected = train_majority(data, on_row=whole.append, **kwargs)
    ckpt = tmp_path / "run.checkpoint.pt"

    def stop_at_six(row):
        if row["step"] == 6:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train_majority(data, on_row=stop_at_six, checkpoint=ckpt, checkpoint_every=4, **kwargs)
    assert checkpoint_step(ckpt) == 4
    rest = []
    resumed = train_majority(data, on_row=rest.append, checkpoint=ckpt, checkpoint_every=4, **kwargs)
    assert [r["step"] for r in rest] == [5, 6, 7, 8, 9, 10]
    assert rest == whole[4:]  # 4 batches of 50 from 240 sequences: the epoch boundary is crossed
    for name, value in expected["weights"].items():
        assert np.array_equal(value, resumed["weights"][name]), name


def test_certificates_of_uniform_attention_separate_the_arms():
    """With projection some query gives all C keys the same score (the all-ones direction);
    on the sphere no query does; the exactly centred keys sum to exactly 0."""
    from fractions import Fraction

    from lnproofs.experiments.majority_certify import certify_majority_model, normalised_keys

    rng = np.random.default_rng(4)
    emb = rng.standard_normal((12, 6)).astype(np.float32)
    sphere = (emb / np.linalg.norm(emb, axis=1, keepdims=True) / np.sqrt(6)).astype(np.float32)
    weights = {
        "embedding.weight": emb,
        "norm1_keys": sphere,
        "layer.self_attn.in_proj_weight": rng.standard_normal((18, 6)).astype(np.float32),
    }
    centred = normalised_keys("layernorm", weights)
    assert all(sum(Fraction(float(v)) for v in row) == 0 for row in centred)
    assert np.allclose(
        centred / np.linalg.norm(centred, axis=1, keepdims=True),
        (emb - emb.mean(1, keepdims=True)) / np.linalg.norm(emb - emb.mean(1, keepdims=True), axis=1, keepdims=True),
        atol=1e-6,
    )
    ln = certify_majority_model("layernorm", weights)
    assert ln["uniform_free"]["status"] == "feasible"
    assert ln["uniform_realisable"]["status"] == "infeasible"  # a generic W_K^T W_Q
    sp = certify_majority_model("no-projection", weights)
    assert sp["uniform_free"] == {"status": "infeasible", "proof": "independent differences"}
    assert sp["uniform_realisable"]["status"] == "infeasible"
    for cert in (ln, sp, certify_majority_model("none", weights)):
        assert sum(cert["key_statuses"].values()) == 12 and "undecided" not in cert["key_statuses"]


@pytest.mark.slow
def test_runs_on_two_workers_give_the_numbers_of_one_process(cli, tmp_path):
    """Each training run is one task: on a local cluster of 2 workers the CSVs are the bytes
    of the runs made one after another in this process."""
    pytest.importorskip("torch")
    pytest.importorskip("distributed")
    common = ["--steps", "6", "--samples", "300", "--seeds", "3,4", "--quiet", "--device", "cpu"]
    for workers in ("1", "2"):
        result = cli(["reproduce", "majority", "--out", tmp_path / workers, "--workers", workers, *common])
        assert result.status == 0, result.err
    for folder in ("runs", "runs3d"):
        one = sorted((tmp_path / "1" / "majority" / folder).glob("*.csv"))
        assert len(one) == (4 if folder == "runs" else 2)  # the default's 2 arms x 2 seeds; the 3-D pair
        for path in one:
            assert path.read_bytes() == (tmp_path / "2" / "majority" / folder / path.name).read_bytes(), path.name
