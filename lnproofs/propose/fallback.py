"""The exact end of the search: repair float witnesses, settle keys with the exact simplex.

Used by :mod:`lnproofs.propose.engine` for the keys its float rounds leave open: a
witness that failed the exact check is moved onto the keys it nearly ties
(:func:`repair_witness`); a key placed inside the hull gets exact weights or a tie query
(:func:`decide_inside`); whatever is still open goes to the exact simplex of
:mod:`lnproofs.propose.exact_lp` (:func:`exact_fallback`).  Every answer has passed the
checker; the rest is ``undecided`` with the reason.
"""

from __future__ import annotations

import numpy as np

from ..kernel import Combination, ExactKeys, KeyResult, check_witnesses
from .exact_checks import check_combination, key_row

__all__ = ["exact_fallback", "decide_inside", "repair_witness"]


def _exact_scores(ek: ExactKeys, q) -> list[int]:
    """Integers with the order of the exact scores q.k_j (for choosing columns)."""
    from ..kernel import integer_vector_of_fractions

    Q, _ = integer_vector_of_fractions(q)
    return [sum(a * b for a, b in zip(Q, key_row(ek, j))) for j in range(ek.n)]


def exact_fallback(engine, i: int, why: str, rounds: int = 6) -> KeyResult:
    """Settle key i with the exact simplex: over all keys for modest key sets, otherwise
    over a candidate subset that grows by the keys beating k_i (exact Clarkson rounds)."""
    from .exact_lp import classify_key
    from .repair import compact_vector

    ek = engine.ek
    spanning = engine.exact_spanning_set()
    if spanning is None:
        return KeyResult(i, "undecided", reason=f"{why}; no exact spanning set of the keys was found")
    if engine.m <= 6 * (engine.d + 1):
        cols = set(range(engine.m))
    else:
        near = np.argsort(-(engine.X @ engine.X[i]))[: 4 * (engine.d + 1)]
        cols = set(spanning) | {int(j) for j in near}
    rows = _LazyRows(ek)
    for _ in range(rounds):
        answer = classify_key(rows, i, sorted(cols - {i}), spanning)
        q = None
        if answer[0] == "witness":
            q = compact_vector(answer[1])
            if check_witnesses(ek, [(i, q)], mode="strict")[0] is None:
                return KeyResult(i, "selectable", q, None, "exact")
        elif answer[0] in ("unselectable", "tie-only"):
            comb = Combination(tuple(answer[1]), tuple(answer[1].values()))
            strict = answer[0] == "unselectable"
            if check_combination(ek, i, comb, strict=strict) is None:
                if strict:
                    return KeyResult(i, "unselectable", None, comb, "exact")
                q = compact_vector(answer[2])
                if check_witnesses(ek, [(i, q)], mode="tie")[0] is None:
                    return KeyResult(i, "tie-only", q, comb, "exact")
        if q is None or len(cols) >= engine.m:
            break
        scores = _exact_scores(ek, q)
        beat = [j for j in np.argsort([-v for v in scores]).tolist() if scores[j] >= scores[i] and j != i]
        fresh = [j for j in beat if j not in cols][: 2 * (engine.d + 1)]
        if not fresh:
            break
        cols.update(fresh)
    return KeyResult(i, "undecided", reason=f"{why}; the exact simplex found no certificate that passes the checker")


class _LazyRows:
    """rows[j] -> the exact integer key j, computed on first use."""

    def __init__(self, ek: ExactKeys):
        self.ek = ek

    def __getitem__(self, j: int) -> list[int]:
        return key_row(self.ek, int(j))


def decide_inside(engine, i: int, support, weights) -> KeyResult:
    comb = engine.unselectable(i, support, weights)
    if comb is not None:
        return KeyResult(i, "unselectable", None, comb, "exact")
    tie = engine.tie_only(i, support, weights)
    if tie is not None:
        return KeyResult(i, "tie-only", tie[1], tie[0], "exact")
    comb = engine.unselectable(i, support, weights, everything=True)
    if comb is not None:
        return KeyResult(i, "unselectable", None, comb, "exact")
    return exact_fallback(
        engine,
        i,
        "the float solver placed the key inside the hull but its repaired certificates did not pass the exact checker",
    )


def repair_witness(engine, i: int, q: np.ndarray):
    from .repair import exact_vertex_query

    s = engine.X @ q
    gaps = s[i] - s
    gaps[i] = np.inf
    active = np.argsort(gaps)[: engine.d]
    w = exact_vertex_query(engine.ek, i, engine.float_query(q), active)
    if w is not None and check_witnesses(engine.ek, [(i, w)], mode="strict")[0] is None:
        return w
    return None
