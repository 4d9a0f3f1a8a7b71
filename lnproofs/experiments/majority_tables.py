"""Tables of the Majority experiment beside its findings: the certificates of the trained models
and the three-dimensional variant, from the result files of each run."""

from __future__ import annotations

from .blocks import Heading, Para, Table, fmt

__all__ = ["certificates_blocks", "three_d_blocks"]

_NAMES = {"default": "the default configuration", "paper": "the paper's configuration"}


def _join(items) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def certificates_blocks(runs) -> list:
    from .paper import ARM_LABELS

    def verdict(u):
        if u["status"] == "feasible":
            return "yes (a checked query)"
        if u["status"] == "infeasible":
            return (
                "no ("
                + {
                    "independent differences": "the key differences are independent",
                    "every solution in the ball gives q = 0": "only the zero query solves it",
                }.get(u.get("proof"), "an exact proof")
                + ")"
            )
        return "undecided"

    rows = []
    for _, summary, _, config in runs:
        for name, cert in summary.get("certificates", {}).items():
            arm, seed = name.rsplit("_seed", 1)
            statuses = cert["key_statuses"]
            keys = _join([f"{count} of {cert['keys']} {status}" for status, count in statuses.items()])
            rows.append(
                (
                    _NAMES[config["configuration"]],
                    ARM_LABELS[arm],
                    seed,
                    verdict(cert["uniform_free"]),
                    verdict(cert["uniform_realisable"]),
                    keys,
                )
            )
    if not rows:
        return []
    table = Table(
        "tab:majority-certificates",
        "Uniform attention and selectability in the trained Majority models, decided exactly: whether "
        "some query gives every one of the $C$ keys the same score, whether one of the trained layer's "
        "own queries does, and the status of each key under the layer's queries.",
        ("configuration", "arm", "seed", "uniform: any query", "uniform: the layer's queries", "keys"),
        tuple(rows),
    )
    text = (
        "The angle measures how close the queries come to uniform attention: a query along the all-ones vector "
        "gives every projected key the same score. [[tab:majority-certificates]] decides this exactly for the "
        "$C$ distinct keys of every trained model. With projection some query gives every key the same score, "
        "because the keys' differences span only the hyperplane orthogonal to $\\mathbf{1}$; without "
        "projection none does, because the differences span the whole space. The trained layer's own queries "
        "are $W_K^T W_Q u$ for $u$ in the closure of the norm's image; an exactly uniform query among them "
        "needs $W_K^T W_Q$ to send a non-zero $u$ orthogonal to $\\mathbf{1}$ onto the all-ones line, a "
        "condition of measure zero that training in floating point does not meet, so a small angle means "
        "nearly uniform attention, not exactly uniform attention. Every key is selectable in every model."
    )
    return [Heading("Uniform attention, certified", 2), Para(text), table]


def three_d_blocks(runs) -> list:
    """The three-dimensional variant's table and verdict (from ``summary.json``'s ``three_d``)."""
    from .paper import ARM_LABELS

    rows, verdicts = [], []
    for _, summary, _, config in runs:
        variant = summary.get("three_d") or {}
        if not variant:
            continue
        for arm, m in variant.items():
            spread = (
                f"{fmt(m['query_angle_min'], 2)} to {fmt(m['query_angle_max'], 2)}"
                if "query_angle_min" in m
                else "not kept"
            )
            rows.append(
                (
                    ARM_LABELS[arm],
                    fmt(m["final_accuracy"]) if m["final_accuracy"] is not None else "not evaluated",
                    fmt(m["epoch_angle"]) if m["epoch_angle"] is not None else "not measured",
                    spread,
                    "near the all-ones vector" if arm == "layernorm" else "far from it",
                )
            )
        ln, sp = variant.get("layernorm"), variant.get("no-projection")
        if ln and sp and ln.get("query_angle_min") is not None:
            close = ln["query_angle_max"] < 20
            verdicts.append(
                "The three-dimensional variant "
                + ("reproduces" if close else "does not reproduce")
                + " the paper's Figures 1a and 1b: with projection the trained queries lie "
                f"{fmt(ln['query_angle_min'], 2)} to {fmt(ln['query_angle_max'], 2)} degrees from the all-ones vector"
                + (" (the paper draws them along it)" if not close else "")
                + f", and its final test accuracy is {fmt(ln['final_accuracy'])} against "
                f"{fmt(sp['final_accuracy'])} without projection. "
                + (
                    "It was trained for "
                    f"{config['three_d']['steps']:,} steps of batch {config['three_d']['batch']} (the paper: "
                    "up to 10,000 epochs of one batch of 6,000), one seed; a query direction is set by the "
                    "attention weights, which in three dimensions need not point along the all-ones vector "
                    "for the task to be learnt."
                    if config.get("three_d")
                    else ""
                )
            )
    if not rows:
        return []
    table = Table(
        "tab:majority-3d",
        "The three-dimensional variant (the paper's Figures 1a and 1b): final test accuracy, the paper's angle "
        "(degrees, last epoch) and the range of the angles of the trained queries to the all-ones vector, one "
        "seed per arm; the last column is what the paper shows.",
        ("arm", "final test accuracy", "angle to the all-ones vector", "range over the queries", "the paper"),
        tuple(rows),
    )
    return [Heading("The three-dimensional variant", 2), Para(" ".join(verdicts)), table]
