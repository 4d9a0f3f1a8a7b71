"""The kernel's exact checks as the searches call them: one item at a time.

The kernel (:mod:`lnproofs.kernel.checker`) checks many items at once and holds no convenience
for its callers; the one-item forms the proposers, the experiments and the homework use are here.
"""

from __future__ import annotations

from ..kernel.checker import check_combinations

__all__ = ["check_combination", "key_row"]


def check_combination(keys, i: int, combination, *, strict: bool) -> str | None:
    """:func:`lnproofs.kernel.checker.check_combinations` for one key."""
    return check_combinations(keys, [(i, combination)], strict=strict)[0]


def key_row(ek, j: int) -> list[int]:
    """K_j: the key k_j of an :class:`~lnproofs.kernel.checker.ExactKeys` divided by 2**exponent, as Python integers."""
    return ek.integer_rows()[j].tolist()
