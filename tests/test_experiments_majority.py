"""The Majority task: its data generator, the model's frozen bias, and a tiny run of the command."""

from __future__ import annotations

import csv
from collections import Counter

import numpy as np
import pytest

from lnproofs.experiments.majority_data import make_majority_data, partitions, valid_partitions


def test_partitions_are_the_partitions_of_l_in_order():
    assert sorted(partitions(5, 5)) == [(1, 1, 1, 1, 1), (1, 1, 1, 2), (1, 1, 3), (1, 2, 2), (1, 4), (2, 3), (5,)]
    assert sorted(partitions(5, 2)) == [(1, 4), (2, 3), (5,)]
    assert len(list(partitions(12, 12))) == 77                      # p(12)
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
    result = train_majority(data, arm="layernorm", d=4, seed=1, steps=5, batch=32, lr=1e-2, decay_steps=50,
                            eval_every=2, on_row=rows.append)
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
    assert torch.allclose(ln.norm(dim=-1), torch.full((6,), 2.0), atol=1e-4)      # radius sqrt(d)
    sphere = MajorityModel(5, 4, "no-projection").layer.norm1(x)
    assert torch.allclose(sphere.norm(dim=-1), torch.full((6,), 0.5), atol=1e-6)  # 1/sqrt(d)
    assert torch.equal(MajorityModel(5, 4, "none").layer.norm1(x), x)


def test_command_writes_csvs_figures_summary_and_keeps_finished_runs(cli, tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "exp"
    result = cli(["reproduce", "majority", "--out", out, "--steps", "4", "--samples", "300", "--seeds", "3,4",
                  "--quiet"])
    assert result.status == 0, result.err
    assert result.err == ""                        # --quiet: only warnings and errors, and there were none
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
    assert "Majority task" in summary and "paper" in summary and "config.json" in summary
    stamp = (root / "runs" / "layernorm_seed3.csv").stat().st_mtime_ns
    assert cli(["reproduce", "majority", "--out", out, "--steps", "0"]).status == 2
    again = cli(["reproduce", "majority", "--out", out, "--steps", "4", "--samples", "300", "--seeds", "3,4",
                 "--quiet", "--no-3d"])
    assert again.status == 0, again.err
    assert (root / "runs" / "layernorm_seed3.csv").stat().st_mtime_ns == stamp    # not redone
