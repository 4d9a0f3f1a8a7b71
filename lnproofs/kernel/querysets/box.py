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
from ..exact import to_fraction
from ..querysets import QuerySetSchema

__all__ = ["KIND", "QUERY_SET", "BoxQuerySet", "check_all"]

KIND = "box"


@dataclass(frozen=True)
class BoxQuerySet(QuerySetSchema):
    """Queries with ``|q_l| <= bound`` (every query when ``bound`` is None), scores ``q . k_j + bias_j``."""

    bound: float | None = None
    bias: tuple | None = None

    kind = KIND
    FIELDS, REQUIRED, OPTIONAL = ("bound", "bias"), ("bound",), ("bias",)

    def __post_init__(self):
        ok = self.bound is None or (type(self.bound) in (int, float) and math.isfinite(self.bound) and self.bound > 0)
        require(ok, OptionError, f"box bound B = {self.bound!r} must be a finite number > 0")
        object.__setattr__(self, "bound", None if self.bound is None else float(self.bound))
        if self.bias is not None:
            object.__setattr__(self, "bias", tuple(as_real_array(self.bias, name="key bias", ndim=1).tolist()))


QUERY_SET = BoxQuerySet


def _dual(ek, b, B, r) -> str | None:
    """``B ||r||_1 + b_i - sum_j lambda_j b_j <= 0`` (``r = 0`` without a box), in exact rationals."""
    got = _weights(ek, r.index, r.combination, False)
    if isinstance(got, str):
        return got
    idx, W, den = got
    row = lambda j: [to_fraction(x) for x in ek.array[j].tolist()] + [to_fraction(b[j]) if b else 0]  # noqa: E731
    gap = [den * x for x in row(r.index)]                      # den (k_i, b_i) - sum_j W_j (k_j, b_j)
    for j, w in zip(idx, W):
        gap = [g - w * x for g, x in zip(gap, row(j))]
    total = Fraction(gap[-1] + (to_fraction(B) * sum(map(abs, gap[:-1])) if B is not None else 0), den)
    if (B is None and any(gap[:-1])) or total > 0:
        return f"key {r.index}: B ||r||_1 + b_i - sum_j lambda_j b_j > 0 (free queries: or r != 0)"
    return None


def check_all(keys, query_set, results) -> list[Verdict]:
    """Exact verdicts: witnesses on the lifted keys ``(k_j, b_j)`` in bulk, the dual bounds one by one."""
    ek = ExactKeys.of(keys)
    b, B = query_set.bias, query_set.bound
    require(b is None or len(b) == ek.n, ShapeError,
            f"key bias has {0 if b is None else len(b)} entries but there are {ek.n} keys; give one bias per key")
    messages, wins = {}, []
    for pos, r in enumerate(results):
        if r.status in ("not-realisable", "undecided"):
            messages[pos] = _dual(ek, b, B, r) if r.status == "not-realisable" else None
        elif r.status != "selectable" or r.witness is None or len(r.witness) != ek.dim:
            messages[pos] = (f"key {r.index}: box claims are selectable (with a witness of {ek.dim} entries), "
                             f"not-realisable or undecided")
        elif B is not None and max(abs(to_fraction(x)) for x in r.witness) > B:
            messages[pos] = f"key {r.index}: the witness leaves the box |q_l| <= {B!r}"
        else:
            wins.append(pos)
    lifted = np.hstack([ek.array, np.asarray(b)[:, None]]) if b else ek
    one = [1.0 if all(type(x) is float for x in results[p].witness) else Fraction(1) for p in wins]
    items = [(results[p].index, tuple(results[p].witness) + ((o,) if b else ())) for p, o in zip(wins, one)]
    messages.update(zip(wins, check_witnesses(lifted, items, mode="strict")))
    return [Verdict(r.index, r.status, messages[p] is None, messages[p] or "") for p, r in enumerate(results)]
