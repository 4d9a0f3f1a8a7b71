"""Scores with a per-key bias, ``q . k_j + b_j``, over the box ``|q_l| <= B`` or over all of R^d.

The ``box`` kind is the query set of Grivas et al.'s unargmaxable-token search (``B = 100``); with
``bound`` null it is every query (free queries with a bias).  ``bias`` (one float per key, or null)
is the output bias of a language model's head.  Theorem ``vocab.bias_lift``:

* ``selectable``: a witness ``q`` (``|q_l| <= B`` exactly) with ``q . k_i + b_i > q . k_j + b_j`` for
  every ``j != i``: the checker's witness check on the lifted keys ``(k_j, b_j)`` and query ``(q, 1)``;
* ``not-realisable`` (no query of the set makes ``k_i`` the strict argmax): weights ``lambda_j >= 0``
  (sum 1) over other keys with ``r = k_i - sum_j lambda_j k_j`` and
  ``B ||r||_1 + b_i - sum_j lambda_j b_j <= 0`` (with ``bound`` null: ``r = 0`` and
  ``sum_j lambda_j b_j >= b_i``), since ``sum_j lambda_j (s_i - s_j) <= B ||r||_1 + b_i - sum_j lambda_j b_j``
  for every ``q`` in the box; decided in exact rationals.

Ties are not told apart from losses here: ``tie-only`` and ``unselectable`` are not statuses of
this set.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..arrays import as_real_array
from ..checker import ExactKeys, Verdict, _weights, check_witnesses
from ..errors import OptionError, ShapeError, require
from ..exact import show, to_fraction
from ..querysets import QuerySetSchema

__all__ = ["KIND", "QUERY_SET", "BoxQuerySet", "lifted_keys", "check_all"]

KIND = "box"


@dataclass(frozen=True)
class BoxQuerySet(QuerySetSchema):
    """Queries with ``|q_l| <= bound`` (every query when ``bound`` is None), scores ``q . k_j + bias_j``."""

    bound: float | None = None
    bias: tuple | None = None

    kind = KIND
    FIELDS = ("bound", "bias")
    OPTIONAL = ("bound", "bias")

    def __post_init__(self):
        if self.bound is not None:
            ok = isinstance(self.bound, (int, float)) and not isinstance(self.bound, bool) and math.isfinite(self.bound)
            require(ok and self.bound > 0, OptionError, f"box bound B = {self.bound!r} must be a finite number > 0")
            object.__setattr__(self, "bound", float(self.bound))
        if self.bias is not None:
            object.__setattr__(self, "bias", tuple(as_real_array(self.bias, name="key bias", ndim=1).tolist()))


QUERY_SET = BoxQuerySet


def lifted_keys(keys, bias) -> np.ndarray:
    """``(k_j, b_j)`` as rows (the keys themselves when there is no bias)."""
    K = ExactKeys.of(keys).array
    if bias is None:
        return K
    b = np.asarray(bias, dtype=np.float64)
    require(b.shape == (K.shape[0],), ShapeError,
            f"key bias has {b.size} entries but there are {K.shape[0]} keys; give one bias per key")
    return np.hstack([K, b[:, None]])


def _dual(K, b, i, combination, bound) -> str | None:
    got = _weights(ExactKeys.of(K), i, combination, False)
    if isinstance(got, str):
        return got
    idx, W, den = got
    r = [den * to_fraction(K[i, c]) - sum(w * to_fraction(K[j, c]) for j, w in zip(idx, W)) for c in range(K.shape[1])]
    gap = (den * to_fraction(b[i]) - sum(w * to_fraction(b[j]) for j, w in zip(idx, W))) if b is not None else 0
    if bound is None and any(r):
        return f"key {i}: the weights leave k_i - sum_j lambda_j k_j != 0; free queries need it to vanish"
    total = Fraction(gap, den) + Fraction(to_fraction(bound)) * sum(abs(x) for x in r) / den if bound else Fraction(gap, den)
    return None if total <= 0 else f"key {i}: B ||r||_1 + b_i - sum_j lambda_j b_j = {show(total)} > 0"


def check_all(keys, query_set, results) -> list[Verdict]:
    """Exact verdicts: witnesses on the lifted keys in bulk, the dual bounds one by one."""
    K = ExactKeys.of(keys).array
    lifted = lifted_keys(K, query_set.bias)
    b, B = query_set.bias, query_set.bound
    messages, wins = {}, []
    for pos, r in enumerate(results):
        if r.status == "undecided":
            messages[pos] = None
        elif r.status == "not-realisable":
            messages[pos] = _dual(K, b, r.index, r.combination, B)
        elif r.status != "selectable":
            messages[pos] = f"key {r.index}: {r.status!r} is not a status of the box query set"
        elif r.witness is None or len(r.witness) != K.shape[1]:
            messages[pos] = f"key {r.index}: a selectable claim needs a witness query with {K.shape[1]} entries"
        elif B is not None and max(abs(to_fraction(x)) for x in r.witness) > Fraction(B):
            messages[pos] = f"key {r.index}: the witness leaves the box |q_l| <= {show(Fraction(B))}"
        else:
            wins.append(pos)
    items = [(results[p].index, tuple(results[p].witness) + (() if b is None else (
        1.0 if all(type(x) is float for x in results[p].witness) else Fraction(1),))) for p in wins]
    messages.update(zip(wins, check_witnesses(lifted, items, mode="strict")))
    return [Verdict(r.index, r.status, messages[p] is None, messages[p] or "") for p, r in enumerate(results)]
