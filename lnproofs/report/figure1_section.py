"""The report's section on the paper's Figure 1, from the counts ``lnproofs reproduce figure1`` wrote.

Every number comes from ``figure1_counts.csv`` (per cell: trials and, per panel, the trials
with a key that is not selectable, with every key selectable, and undecided).
"""

from __future__ import annotations

import csv
from pathlib import Path

from ..experiments.blocks import Figure, Heading, Para, fmt_int

__all__ = ["figure1_blocks"]


def _cells(path: Path) -> dict:
    cells = {}
    with open(path, newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            cells[(int(row["n"]), int(row["d"]))] = {k: int(v) for k, v in row.items()}
    return cells


def _fraction(cell: dict, panel: str) -> float | None:
    decided = cell["trials"] - cell[f"{panel}_undecided"]
    return None if decided <= 0 else cell[f"{panel}_nonselectable"] / decided


def _frac(value: float) -> str:
    """A fraction of trials: 0 and 1 as they are, otherwise two decimals."""
    return f"{value:g}" if value in (0, 1) else f"{value:.2f}"


def figure1_blocks(folder, prefix: str = "") -> tuple:
    """The section, or nothing when ``folder`` holds no ``figure1_counts.csv``."""
    folder = Path(folder)
    path = folder / "figure1_counts.csv"
    if not path.is_file():
        return ()
    cells = _cells(path)
    if not cells:
        return ()
    ns, ds = sorted({n for n, _ in cells}), sorted({d for _, d in cells})
    trials = sorted({c["trials"] for c in cells.values()})
    total = sum(c["trials"] for c in cells.values())
    undecided = sum(c["without_undecided"] + c["with_undecided"] for c in cells.values())
    without = {k: _fraction(c, "without") for k, c in cells.items()}
    with_ln = {k: _fraction(c, "with") for k, c in cells.items()}
    largest_with = max((v for v in with_ln.values() if v is not None), default=0.0)
    d0, n_last = ds[0], ns[-1]
    first_full = next((n for n in ns if without.get((n, d0)) == 1.0), None)
    small = [without[(n, d)] for (n, d) in cells if n <= d + 1 and without[(n, d)] is not None]
    facts = [
        f"with $d = {d0}$ the fraction "
        + (
            f"reaches 1 at $n = {first_full}$"
            if first_full
            else f"stays below 1 (at most {_frac(max(without[(n, d0)] or 0 for n in ns))})"
        ),
        f"at $n = {n_last}$ it falls from {_frac(without.get((n_last, d0)) or 0)} at $d = {d0}$ to "
        f"{_frac(without.get((n_last, ds[-1])) or 0)} at $d = {ds[-1]}$",
    ]
    if small:
        facts.append(
            f"with $n \\le d + 1$ keys it is {_frac(max(small))} in every cell, since so few Gaussian keys "
            "are affinely independent with probability 1 and each is then a vertex of their convex hull"
        )
    trial_text = fmt_int(trials[0]) if len(trials) == 1 else f"{fmt_int(trials[0])} to {fmt_int(trials[-1])}"
    text = (
        "[[cite:brody2023]] illustrate the two roles of LayerNorm in their Figure 1: projection lets a query "
        "along the all-ones vector attend to all keys equally (1a, 1b), and scaling leaves no key "
        "unselectable (1c, 1d). We reproduce the second half with certificates. For $n$ from "
        f"{ns[0]} to {ns[-1]} keys and $d$ from {ds[0]} to {ds[-1]} dimensions, {trial_text} trials per cell "
        "draw $n$ standard Gaussian keys in $\\mathbb{R}^d$; a trial counts when some key is not selectable, "
        "and every verdict is an exactly checked certificate. The same keys, passed through LayerNorm (gain "
        "1, bias 0, $\\epsilon = 0$), give the second panel. "
        + (
            "No trial was left undecided."
            if not undecided
            else f"Of {fmt_int(2 * total)} trials, {fmt_int(undecided)} were left undecided and are not counted."
        )
    )
    results = (
        "Without LayerNorm ([[fig:figure1c]]) "
        + "; ".join(facts)
        + ". With LayerNorm "
        + ("([[fig:figure1d]]) " if (folder / "figure1d.png").is_file() else "(the paper's Figure 1d) ")
        + f"the largest fraction is {_frac(largest_with)}"
        + (", in every cell, so that panel is not drawn" if largest_with == 0 else "")
        + ": the keys lie on a sphere centred at the origin, so "
        "each "
        "is a vertex of their hull and has a witness query, as [[thm:attention.sphere_witness]] "
        "proves. The paper shows the same pattern; its panels are images without the underlying numbers, so "
        f"the comparison is of the pattern and not cell by cell. At {trial_text} trials a cell's fraction "
        "has a binomial standard error of at most $0.5/\\sqrt{\\text{trials}}$"
        + (f", that is {0.5 / trials[0] ** 0.5:.2f}." if len(trials) == 1 else ".")
    )
    blocks = [Heading("The paper's Figure 1", 1, "sec:figure1"), Para(text), Para(results)]
    if (folder / "figure1ab.png").is_file():
        blocks.append(
            Para(
                "[[fig:figure1ab]] shows the first half on a small example: keys in three dimensions "
                "before and after the projection, and the query along the all-ones vector, which gives "
                "every projected key the same score."
            )
        )
    blocks += [
        Figure(
            "fig:figure1c",
            f"{prefix}figure1c.png",
            "Without LayerNorm: the fraction of trials with a key that is not selectable, by the number of "
            "keys $n$ and the dimension $d$ (the paper's Figure 1c). Few dimensions and many keys make "
            "such a key almost certain.",
        ),
    ]
    if (folder / "figure1d.png").is_file():
        blocks.append(
            Figure(
                "fig:figure1d",
                f"{prefix}figure1d.png",
                "The same keys after LayerNorm (the paper's Figure 1d).",
            )
        )
    if (folder / "figure1ab.png").is_file():
        blocks.append(
            Figure(
                "fig:figure1ab",
                f"{prefix}figure1ab.png",
                "Keys in three dimensions without (left) and with (right) the projection onto the "
                "plane orthogonal to the all-ones vector; the arrow is the query along the all-ones "
                "vector. After the projection every key has the same score under it, up to floating-point "
                "rounding: uniform attention.",
            )
        )
    return tuple(blocks)
