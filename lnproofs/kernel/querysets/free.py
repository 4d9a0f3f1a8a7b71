"""Free queries: every q in R^d is allowed (the query set of the plain argmax question), and
two sets that differ from it by a bound or a per-key bias, checked the same way.

* ``ball``: queries of bounded norm ``||q|| <= R`` (:class:`BallQuerySet`).  The argmax of
  ``q . k`` does not change when ``q`` is scaled by a positive number, so every ball status is
  the free-query status; the ball checks are the free-query checks plus ``||q||^2 <= R^2`` for
  every witness, exactly.  The radius matters for softmax questions (see
  :mod:`lnproofs.propose.softmax`).
* ``box``: scores ``q . k_j + b_j`` with a per-key bias ``b`` (a language model's output bias;
  none: zeros) over the box ``|q_l| <= B`` (Grivas et al.'s unargmaxable-token search, ``B = 100``),
  or over all of R^d when the bound is null (:class:`BoxQuerySet`).  Theorem ``vocab.bias_lift``:
  a witness ``q`` (``|q_l| <= B`` exactly) is the free witness ``(q, 1)`` of the lifted keys
  ``(k_j, b_j)``.  ``not-realisable``: weights ``lambda_j >= 0`` (sum 1) over other keys with
  ``r = k_i - sum_j lambda_j k_j`` and ``B ||r||_1 + b_i - sum_j lambda_j b_j <= 0`` (no bound:
  ``r = 0`` and ``sum_j lambda_j b_j >= b_i``), since ``sum_j lambda_j (s_i - s_j)`` is at most that
  for every ``q`` in the box.  Ties are not told apart from losses: ``tie-only`` and
  ``unselectable`` are not statuses of a box.

Certificates are made by :mod:`lnproofs.propose.certification` (free, ball) and
:mod:`lnproofs.propose.querysets.box`; they are checked here with the exact primitives of
:mod:`lnproofs.kernel.checker`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..arrays import as_radius, as_real_array
from ..checker import ExactKeys, Verdict, _weights, check_combinations, check_witnesses
from ..errors import ShapeError, require
from ..exact import to_fraction
from ..querysets import QuerySetSchema


@dataclass(frozen=True)
class FreeQueries(QuerySetSchema):
    """All of R^d."""

    kind = "free"


@dataclass(frozen=True)
class BallQuerySet(QuerySetSchema):
    """Every query with Euclidean norm at most ``radius``."""

    radius: float

    kind = "ball"
    FIELDS = REQUIRED = ("radius",)

    def __post_init__(self):
        object.__setattr__(self, "radius", as_radius(self.radius))


@dataclass(frozen=True)
class BoxQuerySet(QuerySetSchema):
    """Scores ``q . k_j + bias_j`` (``bias``: one float per key, or None) for the queries with
    ``|q_l| <= bound`` (every query when ``bound`` is None)."""

    bound: float | None = None
    bias: tuple | None = None

    kind = "box"
    FIELDS, REQUIRED, OPTIONAL = ("bound", "bias"), ("bound",), ("bias",)

    def __post_init__(self):
        object.__setattr__(self, "bound", None if self.bound is None else as_radius(self.bound, "box bound B"))
        if self.bias is not None:
            object.__setattr__(self, "bias", tuple(as_real_array(self.bias, name="key bias", ndim=1).tolist()))


QUERY_SETS = {"free": FreeQueries, "ball": BallQuerySet, "box": BoxQuerySet}


def _box_dual(ek: ExactKeys, box: BoxQuerySet, r) -> str | None:
    """``B ||r||_1 + b_i - sum_j lambda_j b_j <= 0`` (no bound: ``r = 0``) on the (lifted) keys, exactly:
    ``den (k_i, b_i) - sum_j W_j (k_j, b_j)`` in integers, whose common positive scale does not matter."""
    got = _weights(ek, r.index, r.combination, False)
    if isinstance(got, str):
        return got
    idx, W, den = got
    rows = ek.some_rows([r.index] + idx)
    gap = den * rows[0] - (np.array(W, dtype=object)[:, None] * rows[1:]).sum(axis=0)
    rest, offset = (gap[:-1], gap[-1]) if box.bias is not None else (gap, 0)
    bounded = offset + Fraction(box.bound) * sum(map(abs, rest)) if box.bound is not None else offset
    if bounded > 0 or (box.bound is None and any(rest)):
        return f"key {r.index}: B ||r||_1 + b_i - sum_j lambda_j b_j > 0 (without a bound: or r != 0)"
    return None


def check_all(keys, query_set, results) -> list[Verdict]:
    """Exact verdicts for many results at once (witness inequalities in bulk); for a ball
    query set also ``||q||^2 <= R^2`` exactly for every witness; for a box ``|q_l| <= B``, its
    keys and witnesses lifted by the bias, and its dual bounds one by one."""
    ek = ExactKeys.of(keys)
    box = query_set if isinstance(query_set, BoxQuerySet) else None
    dim, lift = ek.dim, box is not None and box.bias is not None
    if lift:
        require(
            len(box.bias) == ek.n,
            ShapeError,
            f"key bias has {len(box.bias)} entries but there are {ek.n} keys; give one bias per key",
        )
        ek = ExactKeys(np.hstack([ek.array, np.array(box.bias)[:, None]]), ek.matmul)
    messages: dict[int, str | None] = {}
    strict_pos, ties, interiors = [], [], []
    for pos, r in enumerate(results):
        status = r.status
        if status == "undecided":
            messages[pos] = None
        elif status == "not-realisable" or (box and status in ("tie-only", "unselectable")):
            messages[pos] = (
                _box_dual(ek, box, r)
                if box and status == "not-realisable"
                else f"key {r.index}: {status!r} is not a status for {query_set.kind} queries"
            )
        elif status == "selectable" or status == "tie-only":
            if r.witness is None and status == "selectable" and not box and ek.n <= dim + 1 and 0 <= r.index < ek.n:
                messages[pos] = (
                    None
                    if ek.affine_rank() == ek.n - 1
                    else f"key {r.index}: without a witness query, the keys must be affinely independent"
                )
            elif r.witness is None or len(r.witness) != dim:
                got = "none" if r.witness is None else f"{len(r.witness)} entries"
                messages[pos] = f"key {r.index}: a {status} claim needs a witness query with {dim} entries (got {got})"
            else:
                (ties if status == "tie-only" else strict_pos).append(pos)
        else:  # unselectable
            interiors.append(pos)
    for group, strict in ((ties, False), (interiors, True)):  # exact combinations, all at once
        got = check_combinations(ek, [(results[p].index, results[p].combination) for p in group], strict=strict)
        messages.update(zip(group, got))
    tie_pos = [p for p in ties if messages[p] is None]
    one = lambda q: (*q, 1.0 if all(isinstance(x, float) for x in q) else Fraction(1)) if lift else q  # noqa: E731
    for group, mode in ((strict_pos, "strict"), (tie_pos, "tie")):
        got = check_witnesses(ek, [(results[p].index, one(results[p].witness)) for p in group], mode=mode)
        messages.update(zip(group, got))
    R2 = Fraction(query_set.radius) ** 2 if isinstance(query_set, BallQuerySet) else None
    B = None if box is None or box.bound is None else Fraction(box.bound)
    for pos, r in enumerate(results):
        if messages[pos] is not None or r.status not in ("selectable", "tie-only") or r.witness is None:
            continue
        if R2 is not None and sum((to_fraction(x) ** 2 for x in r.witness), Fraction(0)) > R2:
            messages[pos] = f"key {r.index}: witness has ||q|| > R = {query_set.radius!r}"
        elif B is not None and max(map(abs, r.witness)) > B:  # floats and Fractions compare exactly
            messages[pos] = f"key {r.index}: the witness leaves the box |q_l| <= {box.bound!r}"
    return [Verdict(r.index, r.status, messages[pos] is None, messages[pos] or "") for pos, r in enumerate(results)]
