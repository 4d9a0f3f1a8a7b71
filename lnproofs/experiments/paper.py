"""The paper's arms and published numbers, shared by the experiments and their reports.

Values read off the paper's plots are approximate (see ``docs/experiments.md``).
"""

from __future__ import annotations

__all__ = ["ARMS", "ARM_LABELS", "PAPER_VALUES", "PAPER_TABLES", "PAPER_LR", "PAPER_ACCURACY_STEP", "accuracy_step"]

#: the three arms of the Majority task
ARMS = ("layernorm", "no-projection", "none")

ARM_LABELS = {"layernorm": "with projection (LayerNorm)", "no-projection": "without projection (sphere)",
              "none": "no norm"}

#: what the paper reports (read off its Figures 2 and 3)
PAPER_VALUES = {
    "layernorm": {"angle": (11.0, 12.0), "accuracy_at_5000": 0.93},
    "no-projection": {"angle": (70.0, 83.0), "accuracy_at_5000": 0.85},
    "speedup": 3.0,
}

#: the paper's learning rate and the step at which it reports test accuracy (Figure 3); a run
#: with another learning rate is compared at the step of the same learning rate x steps
PAPER_LR, PAPER_ACCURACY_STEP = 1e-3, 5000


def accuracy_step(cfg: dict) -> int:
    """The step at which a Majority run's test accuracy is compared: the paper's step 5,000
    scaled to the same learning rate x steps, at most the run's last step."""
    return min(round(PAPER_ACCURACY_STEP * PAPER_LR / cfg["lr"]), cfg["steps"])


#: Tables 1 and 2 (% unselectable per layer)
PAPER_TABLES = {"without": (51.0, 32.2, 34.7, 36.8), "with": (0.0, 0.0, 0.0, 0.0),
                "before": (44.8, 28.5, 22.3, 26.1), "after": (0.0, 0.0, 0.0, 0.0)}
