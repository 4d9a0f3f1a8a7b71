"""The Majority experiment's findings beside the paper's: the table of measures with their 95%
confidence intervals over seeds, and the sentences that say where ours agree and where not."""

from __future__ import annotations

from .blocks import Table, fmt, fmt_ci, fmt_int, mean_ci

__all__ = ["findings_table", "verdicts", "angle_note", "arms_note"]

_NAMES = {"default": "the default configuration", "paper": "the paper's configuration"}


def _join(items) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _ratios(m: dict) -> tuple[list, list]:
    """Per seed, the smoothed steps without projection over those with (reached) and the seeds
    where the arm without projection never reached the target (their lower bounds)."""
    reached, bounds = [], []
    for seed, with_p in m.get("layernorm", {}).items():
        without = m.get("no-projection", {}).get(seed)
        if with_p["steps_to_smoothed_loss"] is None or without is None:
            continue
        if without["steps_to_smoothed_loss"] is None:
            bounds.append((seed, without["final_step"] / with_p["steps_to_smoothed_loss"]))
        else:
            reached.append((seed, without["steps_to_smoothed_loss"] / with_p["steps_to_smoothed_loss"]))
    return reached, bounds


def _ratio_cell(m: dict) -> str:
    reached, bounds = _ratios(m)
    cells = [f"{r:.2f} (seed {s})" for s, r in reached] + [f"more than {b:.1f} (seed {s})" for s, b in bounds]
    return "; ".join(cells) if cells else "not reached"


def findings_table(runs, measures) -> Table:
    from .paper import PAPER_VALUES

    def col(arm, key, digits=3, unit=""):
        return [fmt_ci([v[key] for v in measures[i].get(arm, {}).values()], digits, unit) for i in range(len(runs))]

    def steps(arm, i):
        vals = [v["steps_to_smoothed_loss"] for v in measures[i].get(arm, {}).values()]
        got = [v for v in vals if v is not None]
        text = fmt_ci(got, 3) if got else "not reached"
        missing = len(vals) - len(got)
        return text + (f"; {missing} of {len(vals)} seeds never reached it" if missing and got else "")

    ln, sp = PAPER_VALUES["layernorm"], PAPER_VALUES["no-projection"]
    rows = [
        (
            "angle to $\\mathbf{1}$ with projection (degrees)",
            f"about {ln['angle'][0]:g} to {ln['angle'][1]:g}",
            *col("layernorm", "epoch_angle"),
        ),
        (
            "angle to $\\mathbf{1}$ without projection (degrees)",
            f"about {sp['angle'][0]:g} to {sp['angle'][1]:g}",
            *col("no-projection", "epoch_angle"),
        ),
        (
            "steps to smoothed loss 0.2, with projection",
            "not given",
            *(steps("layernorm", i) for i in range(len(runs))),
        ),
        (
            "steps to smoothed loss 0.2, without projection",
            "not given",
            *(steps("no-projection", i) for i in range(len(runs))),
        ),
        (
            "ratio of those steps, without over with, per seed",
            "about 3",
            *(_ratio_cell(measures[i]) for i in range(len(runs))),
        ),
        ("test accuracy with projection", f"about {ln['accuracy_at_5000']:g}", *col("layernorm", "accuracy_at")),
        ("test accuracy without projection", f"about {sp['accuracy_at_5000']:g}", *col("no-projection", "accuracy_at")),
        ("final test accuracy with projection", "not given", *col("layernorm", "final_accuracy")),
        ("final test accuracy without projection", "not given", *col("no-projection", "final_accuracy")),
        ("final smoothed training loss with projection", "not given", *col("layernorm", "final_loss")),
        ("final smoothed training loss without projection", "not given", *col("no-projection", "final_loss")),
    ]
    header = ("quantity", "the paper") + tuple(
        f"{_NAMES[c['configuration']]} ({len(s['seeds'])} seed{'s' if len(s['seeds']) != 1 else ''})"
        for _, s, _, c in runs
    )
    steps_at = ", ".join(f"step {fmt_int(s['accuracy_step'])} in {_NAMES[c['configuration']]}" for _, s, _, c in runs)
    return Table(
        "tab:majority-findings",
        "The paper's findings beside ours: mean $\\pm$ the half-width of the 95% confidence interval over "
        "seeds (Student's $t$); a single seed has no interval. Test accuracy is read at step 5,000 in the "
        f"paper and at {steps_at}.",
        header,
        tuple(rows),
    )


def _against(values, low: float, high: float, unit: str = "") -> str:
    """How our interval of ``values`` stands to the paper's range [low, high]."""
    mean, half, n = mean_ci(values)
    if mean is None:
        return "not measured"
    lo, hi = (mean - half, mean + half) if half is not None else (mean, mean)
    ours = f"{fmt(mean)}{unit}" + (f" ± {fmt(half)}{unit}" if half is not None else f" ({n} seed)")
    if hi < low:
        return f"{ours}, below the paper's {low:g} to {high:g}{unit}"
    if lo > high:
        return f"{ours}, above the paper's {low:g} to {high:g}{unit}"
    return f"{ours}, as in the paper ({low:g} to {high:g}{unit})"


def verdicts(runs, measures) -> str:
    from .paper import PAPER_VALUES

    ln, sp = PAPER_VALUES["layernorm"], PAPER_VALUES["no-projection"]
    out = []
    for i, (_, summary, _, config) in enumerate(runs):
        m = measures[i]

        def vals(arm, key):
            return [v[key] for v in m.get(arm, {}).values() if v.get(key) is not None]

        found = [
            "the queries' angle to the all-ones vector is "
            + _against(vals("layernorm", "epoch_angle"), *ln["angle"], "°")
            + " with projection and "
            + _against(vals("no-projection", "epoch_angle"), *sp["angle"], "°")
            + " without"
        ]
        reached, bounds = _ratios(m)
        ratios = [r for _, r in reached]
        if ratios or bounds:
            found.append(
                "the arm without projection needs "
                + (f"{min(ratios):.1f} to {max(ratios):.1f} times" if len(ratios) > 1 else "")
                + (f"{ratios[0]:.1f} times" if len(ratios) == 1 else "")
                + (" and, for " if ratios and bounds else "")
                + (_join([f"seed {s}, more than {b:.1f} times" for s, b in bounds]) if bounds else "")
                + " as many steps to bring its smoothed loss to 0.2 (the paper: about 3 times)"
            )
        acc_ln, acc_sp = mean_ci(vals("layernorm", "accuracy_at"))[0], mean_ci(vals("no-projection", "accuracy_at"))[0]
        if acc_ln is not None and acc_sp is not None:
            found.append(
                f"test accuracy at step {fmt_int(summary['accuracy_step'])} is "
                + ("higher" if acc_ln > acc_sp else "not higher")
                + f" with projection ({fmt(acc_ln)} against {fmt(acc_sp)}; the paper: about "
                f"{ln['accuracy_at_5000']:g} against {sp['accuracy_at_5000']:g})"
            )
        fin_ln, fin_sp = (
            mean_ci(vals("layernorm", "final_accuracy"))[0],
            mean_ci(vals("no-projection", "final_accuracy"))[0],
        )
        loss_ln, loss_sp = mean_ci(vals("layernorm", "final_loss"))[0], mean_ci(vals("no-projection", "final_loss"))[0]
        if None not in (fin_ln, fin_sp, loss_ln, loss_sp):
            ahead = fin_sp > fin_ln and loss_sp < loss_ln
            found.append(
                f"at the last step, {fmt_int(int(max(vals('layernorm', 'final_step'))))}, "
                + (
                    "the arm without projection is ahead, unlike the paper's curves: "
                    if ahead
                    else "the arm with projection is still ahead: "
                )
                + f"final test accuracy {fmt(fin_ln)} with projection against {fmt(fin_sp)} without, smoothed "
                f"training loss {fmt(loss_ln)} against {fmt(loss_sp)}"
            )
        out.append(f"In {_NAMES[config['configuration']]}, " + _join(found) + ".")
    return " ".join(out)


def arms_note(runs) -> str:
    """What became of the paper's third arm (no normalisation) in each configuration."""
    from .paper import ARMS

    missing = [_NAMES[c["configuration"]] for _, _, _, c in runs if not set(ARMS) <= set(c["arms"])]
    if not missing:
        return "All three of the paper's arms were run."
    return (
        "The paper's third arm, with no normalisation at all, was not run in "
        + _join(missing)
        + ": the findings compare projection with its absence, which the two arms run here isolate, and "
        "each further arm costs as much training time again."
    )


def angle_note(runs, measures) -> str:
    """Why the angle with projection stays above the paper's, where it does."""
    from .paper import PAPER_VALUES

    low, high = PAPER_VALUES["layernorm"]["angle"]
    above = [
        i
        for i in range(len(runs))
        if (mean_ci([v["epoch_angle"] for v in measures[i].get("layernorm", {}).values()])[0] or 0) > high
    ]
    if not above:
        return ""
    return (
        f"The angle with projection stays above the paper's {low:g} to {high:g} degrees. Likely reasons: our "
        "runs stop at a fixed number of steps while the angle is still falling (it falls steadily over "
        "the last thousands of steps, [[fig:majority-default-angle]]), whereas the paper trains until test "
        "accuracy 1.0 or 1,000 epochs; fewer seeds; and the paper's values are read off its plot."
    )
