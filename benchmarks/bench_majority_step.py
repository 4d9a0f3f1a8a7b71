"""Benchmark: one training step of the Majority model on the paper's batch, before and after.

Before: the ``nn.TransformerEncoderLayer`` forward over ``B x L`` positions (what training
ran before the grouped forward).  After: the forward over class counts
(:mod:`torch_backend.training.majority_fast`, the same function of the same parameters).
A step is forward, loss, backward and one Adam update of the paper's batch: 6,000 sequences
of 50 tokens over 20 classes, width 8, float32.  The two are timed alternately in the same
process (``--rounds`` rounds of ``--steps`` steps each, best round counts), so a busy
machine slows both alike; the figure of merit is their ratio (target: at least 5).

    python benchmarks/bench_majority_step.py [--threads 1] [--arm layernorm] [--json]
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from lnproofs.experiments.majority_data import make_majority_data
from torch_backend.training.majority import MajorityModel
from torch_backend.training.majority_fast import class_counts, grouped_batch, grouped_logits, grouped_loss
from torch_backend.training.threads import cpu_threads


def _steps(arm: str, batch: int):
    data = make_majority_data(batch + batch // 4 + 10, 50, 20, min_delta=6, seed=0)
    x, y = torch.as_tensor(data.x_train[:batch]), torch.as_tensor(data.y_train[:batch])
    counts = class_counts(x, 20)
    torch.manual_seed(0)
    model = MajorityModel(20, 8, arm)
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-3)

    def update(loss):
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    def reference():
        logits = model(x)
        update(torch.nn.functional.cross_entropy(logits.reshape(-1, 20), y[:, None].expand_as(x).reshape(-1)))

    def grouped():
        b = grouped_batch(counts, y)
        update(grouped_loss(grouped_logits(model, b), b))

    return reference, grouped


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arm", default="layernorm", choices=("layernorm", "no-projection", "none"))
    parser.add_argument("--batch", type=int, default=6000, help="sequences per step (default 6,000, the paper's)")
    parser.add_argument(
        "--threads", type=int, default=1, help="torch CPU threads while timing (default 1, what training uses)"
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=3, help="steps per round")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with cpu_threads(args.threads):
        reference, grouped = _steps(args.arm, args.batch)
        reference(), grouped()  # warm-up
        best = {"reference": float("inf"), "grouped": float("inf")}
        for _ in range(args.rounds):
            for name, fn in (("reference", reference), ("grouped", grouped)):
                start = time.perf_counter()
                for _ in range(args.steps):
                    fn()
                best[name] = min(best[name], (time.perf_counter() - start) / args.steps)
    result = {
        "arm": args.arm,
        "batch": args.batch,
        "threads": args.threads,
        "torch": torch.__version__,
        "reference_s": best["reference"],
        "grouped_s": best["grouped"],
        "ratio": best["reference"] / best["grouped"],
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"one training step, batch {args.batch} x 50 tokens, {args.threads} thread(s): "
            f"nn.TransformerEncoderLayer {best['reference'] * 1e3:.1f} ms, grouped {best['grouped'] * 1e3:.1f} ms, "
            f"ratio {result['ratio']:.1f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
