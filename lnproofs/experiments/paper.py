"""The paper's arms and published numbers, shared by the experiments and their reports.

Values read off the paper's plots are approximate (see ``docs/experiments.md``).
"""

from __future__ import annotations

__all__ = [
    "ARMS",
    "ARM_LABELS",
    "PAPER_VALUES",
    "PAPER_TABLES",
    "PAPER_LR",
    "PAPER_ACCURACY_STEP",
    "accuracy_step",
    "PAPER_MAJORITY",
    "PAPER_LM_SETTING",
    "CITE",
]

#: the three arms of the Majority task
ARMS = ("layernorm", "no-projection", "none")

ARM_LABELS = {
    "layernorm": "with projection (LayerNorm)",
    "no-projection": "without projection (sphere)",
    "none": "no norm",
}

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
PAPER_TABLES = {
    "without": (51.0, 32.2, 34.7, 36.8),
    "with": (0.0, 0.0, 0.0, 0.0),
    "before": (44.8, 28.5, 22.3, 26.1),
    "after": (0.0, 0.0, 0.0, 0.0),
}


#: the paper's Majority setting (Figures 2 and 3), as the report states it
PAPER_MAJORITY = {
    "n_samples": 100_000,
    "length": 50,
    "classes": 20,
    "d": 8,
    "batch": 6000,
    "lr": 1e-3,
    "decay_steps": 170_000,
    "steps": 14_000,
    "seeds": 10,
    "min_delta": 6,
}

#: the paper's language-model setting (Tables 1 and 2, Figure 4)
PAPER_LM_SETTING = {
    "model": "GPT-2 architecture, width 8, 4 heads, 4 layers",
    "corpus": "English Wikipedia",
    "tokenizer": "the GPT-2 tokenizer (50,257 tokens)",
    "steps": 50_000,
    "batch": 16,
    "texts": "1,000 SQuAD validation contexts of 768 to 1,024 tokens",
    "decision": "a floating-point linear-programming search",
}

#: how the write-ups cite the sources in Markdown (the report's LaTeX uses BibTeX keys of the same names)
CITE = {
    "brody2023": "Brody, Alon and Yahav (2023)",
    "riechers2024": "Riechers (2024)",
    "grivas2022": "Grivas, Bogoychev and Lopez (2022)",
}
