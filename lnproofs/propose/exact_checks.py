"""The kernel's exact checks as the searches call them: one item at a time.

The kernel (:mod:`lnproofs.kernel.checker`) checks many items at once and holds no convenience
for its callers; the one-item forms the proposers, the experiments and the homework use are here.
"""

from __future__ import annotations

import numpy as np
from flint import fmpq, fmpz_mat

from ..kernel import check_combinations, integer_matrix, pow2, primal_queries

__all__ = ["check_combination", "check_primal", "check_primals", "key_row", "scaled_columns", "exact_margins"]


def check_combination(keys, i: int, combination, *, strict: bool) -> str | None:
    """:func:`lnproofs.kernel.check_combinations` for one key."""
    return check_combinations(keys, [(i, combination)], strict=strict)[0]


def check_primal(layer, index: int, U, D: int) -> tuple:
    """``(ok, message, q)`` for the query ``q`` made from ``u = U / D`` over the keys of an
    :class:`~lnproofs.kernel.ExactLayer` (``q`` None when ``u`` is outside the set):
    :func:`~lnproofs.kernel.primal_queries`, then the kernel's witness check."""
    return check_primals(layer, [(index, U, D)])[0]


def check_primals(layer, items) -> list:
    """:func:`check_primal` for many ``(index, U, D)`` items: the queries in one product
    (:func:`~lnproofs.kernel.primal_queries`), the wins in one witness check."""
    made = primal_queries(layer, items)
    won = iter(layer.winners([(item[0], q) for item, q in zip(items, made) if not isinstance(q, tuple)]))
    return [q if isinstance(q, tuple) else (*next(won), q) for q in made]


def key_row(ek, j: int) -> list[int]:
    """K_j: the key k_j of an :class:`~lnproofs.kernel.ExactKeys` divided by 2**exponent, as Python
    integers (every row built once, kept on ``ek``: a cache of the searches, never read as a claim)."""
    if "_search_rows" not in vars(ek):
        ek._search_rows = ek.some_rows(np.arange(ek.n))
    return ek._search_rows[j].tolist()


def scaled_columns(ek, columns) -> list[list]:
    """For the keys ``columns`` of an :class:`~lnproofs.kernel.ExactKeys`: the d + 1 rows of the
    matrix whose column c is (K_j, 1) for j = columns[c], the K_j integers up to one positive
    power of two common to these keys (python-flint integers; only these keys are converted).
    Barycentric weights solved from such columns are those of the keys themselves."""
    M, _ = integer_matrix(ek.array[list(columns)])
    d, entries = ek.dim, M.entries()
    return [entries[r::d] for r in range(d)] + [[1] * len(columns)]


def exact_margins(layer, items) -> list:
    """The margins ``min_{j != i} q.(k_i - k_j)`` (python-flint rationals; None for a single key) of
    ``(index, q)`` pairs with exact queries ``q`` (fmpq d x 1) over the keys of an
    :class:`~lnproofs.kernel.ExactLayer`: one integer product for all items.  A margin
    is informational (the kernel does not read it); the searches state it beside a witness."""
    if not items:
        return []
    cols = [q.numer_denom() for _, q in items]
    m = len(items)
    S = (
        layer.keys.integer_matrix() * fmpz_mat(layer.d, m, [int(num[a, 0]) for a in range(layer.d) for num, _ in cols])
    ).entries()
    out = []
    for t, (index, _) in enumerate(items):
        column = S[t::m]  # q.k_j = column[j] * 2**exponent / den
        others = column[:index] + column[index + 1 :]
        out.append(
            fmpq(column[index] - max(others)) * pow2(layer.keys.exponent) / fmpq(int(cols[t][1])) if others else None
        )
    return out
