"""The theorem modules, one per idea: projection, decomposition, sphere, ellipsoid,
RMSNorm, the attention consequences, the query sets that cover every direction and the output
layer.  Each module has ``theorems(n=None, convention="torch")``; :mod:`lnproofs.derive.registry`
collects them."""

from __future__ import annotations

import dataclasses

from ..theorem import Hypothesis

__all__ = ["width_hypothesis", "routine", "CONVENTION_NAMES"]

#: the epsilon conventions as a statement names them
CONVENTION_NAMES = {"torch": "PyTorch", "std": "standard-deviation"}


def width_hypothesis(n, general: str) -> Hypothesis:
    """The width hypothesis of a theorem: ``general`` (what ``n >= 2`` and its indices mean) for
    general ``n``, or ``n = n`` for a concrete width."""
    return Hypothesis("width", general, r"n \ge 2") if n is None else Hypothesis("width", f"$n = {n}$", rf"n = {n}")


def routine(*steps) -> tuple:
    """``steps`` as bookkeeping: routine checks (a sign the hypotheses give, a sum evaluated, a case
    another check covers) made like every step and listed in the blueprint, not printed in the paper."""
    return tuple(dataclasses.replace(step, bookkeeping=True) for step in steps)
