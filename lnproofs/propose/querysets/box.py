"""Proposals for the ``box`` query set: scores ``q . k_j + b_j`` over ``|q_l| <= B`` (or all of R^d).

Without a bias the box changes nothing but the witness's length (the argmax depends only on
the direction of the query, theorem ``coverage.argmax_direction``): the free-query results are
taken, each witness halved exactly into the box, and a combination that writes ``k_i`` from other
keys becomes the ``not-realisable`` evidence (``r = 0``).  With a bias each key is one HiGHS
linear programme (Grivas et al.'s formulation, solved with scipy's open solver): maximise
``s`` subject to ``(k_i - k_j) . q + b_i - b_j >= s`` for every ``j`` and ``|q_l| <= B`` (``s <= 1``
without a box).  A positive optimum gives the witness ``q``; otherwise the LP's dual weights give
``lambda`` for ``B ||r||_1 + b_i - sum_j lambda_j b_j <= 0`` (theorem ``vocab.bias_lift``), made
exact: normalised in rationals, and without a box solved exactly on their support so that
``r = 0``.  Every claim is checked by :mod:`lnproofs.kernel.querysets.free`; a claim it refutes
comes back ``undecided`` with the kernel's message.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import numpy as np

from ...kernel import BoxQuerySet, Combination, KeyResult

__all__ = ["KIND", "QUERY_SET", "BoxQuerySet", "certify", "into_box", "load_box"]

KIND, QUERY_SET = "box", BoxQuerySet


def load_box(bound, bias_path=None, n_keys: int | None = None) -> BoxQuerySet:
    """The box (``bound`` None: every query) with the bias read from ``bias_path`` (one per key)."""
    from ...io.arrays import load_array
    from ...kernel import ShapeError

    bias = None
    if bias_path is not None:
        bias = load_array(bias_path, name="key bias", ndim=None).reshape(-1)
        if n_keys is not None and len(bias) != n_keys:
            raise ShapeError(
                f"key bias {bias_path} has {len(bias)} entries but there are {n_keys} keys; give one bias per key"
            )
    return BoxQuerySet(bound, None if bias is None else tuple(bias.tolist()))


def into_box(witness, bound):
    """The witness halved (exactly) until every entry is at most ``bound`` in absolute value."""
    w = list(witness)
    top = max((abs(Fraction(x)) for x in w), default=Fraction(0))
    while bound is not None and top > Fraction(bound):
        w = [x / 2 for x in w]
        top /= 2
    return tuple(w)


def _from_free(K, qs, indices, options):
    from ..certification import certify_results

    out = []
    for r in certify_results(K, indices=indices, **options):
        if r.status == "selectable":
            r = replace(r, witness=into_box(r.witness, qs.bound))
        elif r.status in ("tie-only", "unselectable"):
            r = KeyResult(r.index, "not-realisable", None, r.combination, "exact")
        out.append(r)
    return out


def _exact_support(K, b, i, support):
    """Exact weights on ``support`` with ``sum lambda_j k_j = k_i``, ``sum lambda_j = 1`` (normal equations), or None."""
    from flint import fmpq, fmpq_mat

    def q(x):
        f = Fraction(float(x))
        return fmpq(f.numerator, f.denominator)

    M = fmpq_mat([[q(K[j, c]) for j in support] for c in range(K.shape[1])] + [[fmpq(1)] * len(support)])
    rhs = fmpq_mat([[q(x)] for x in K[i]] + [[fmpq(1)]])
    try:
        lam = (M.transpose() * M).solve(M.transpose() * rhs)
    except (ZeroDivisionError, ValueError):
        return None
    weights = [Fraction(int(x.p), int(x.q)) for x in lam.entries()]
    return weights if min(weights) >= 0 else None


def _lp(K, b, i, bound, start: int = 64, add: int = 64):
    """One key's LP: a witness, candidate dual weights (tried in order), or a reason.  Solved on a
    growing set of rivals (constraint generation): first the ``start`` rivals that lead most at
    ``q = k_i``, then the ``add`` worst violators of each optimum, until no rival violates it; an
    optimum of a subset of the constraints that satisfies them all is the optimum of the whole LP,
    and its dual weights (zero elsewhere) are the whole LP's."""
    from scipy.optimize import linprog

    n, d = K.shape
    lead = (K - K[i]) @ K[i] + b - b[i]
    lead[i] = -np.inf
    others = np.argsort(-lead, kind="stable")[: min(start, n - 1)]
    box = (-bound, bound) if bound is not None else (None, None)
    while True:
        A = np.hstack([K[others] - K[i], np.ones((len(others), 1))])  # (k_j - k_i) . q + s <= b_i - b_j
        res = linprog(
            np.r_[np.zeros(d), -1.0], A_ub=A, b_ub=b[i] - b[others], bounds=[box] * d + [(None, 1.0)], method="highs"
        )
        if res.status != 0:
            return None, (), f"HiGHS: {res.message}"
        over = (K - K[i]) @ res.x[:d] + res.x[d] - (b[i] - b)
        over[i], over[others] = -np.inf, -np.inf
        bad = np.flatnonzero(over > 0)
        if not len(bad):
            break
        others = np.r_[others, bad[np.argsort(-over[bad], kind="stable")[:add]]]
    if -res.fun > 1e-9:
        return res.x[:d], (), None
    lam = -np.asarray(res.ineqlin.marginals)
    keep = np.flatnonzero(lam > 1e-12 * max(lam.max(), 1e-300))
    support = tuple(int(j) for j in others[keep])
    combos = []
    exact = _exact_support(K, b, i, list(support))  # r = 0 exactly: needed for free queries
    if exact is not None:
        combos.append(Combination(support, tuple(exact)))
    if bound is not None:  # the LP's weights, normalised exactly
        raw = [Fraction(float(x)) for x in lam[keep]]
        combos.append(Combination(support, tuple(w / sum(raw) for w in raw)))
    if not combos:
        return None, (), "the dual weights do not make k_i an exact combination"
    return None, tuple(combos), None


def certify(keys, query_set: BoxQuerySet, **options) -> list:
    """One result per key (``indices``: the keys to do, the others ``undecided``), kernel-checked."""
    K = np.asarray(keys, dtype=np.float64)
    n = len(K)
    indices = list(range(n)) if options.get("indices") is None else [int(i) for i in options["indices"]]
    if query_set.bias is None:
        results = _from_free(
            K, query_set, indices, {"seed": options.get("seed", 0), "progress": options.get("progress", False)}
        )
        proposed = [results[i] for i in indices]
    else:
        b = np.asarray(query_set.bias, dtype=np.float64)
        proposed = []
        for i in indices:
            q, combos, reason = _lp(K, b, i, query_set.bound)
            if q is not None:
                proposed.append(KeyResult(i, "selectable", tuple(float(x) for x in q), None, "exact"))
                continue
            tries = [KeyResult(i, "not-realisable", None, c, "exact") for c in combos]
            good = next((r for r in tries if query_set.check(K, [r])[0].ok), None)
            proposed.append(good or (tries[-1] if tries else KeyResult(i, "undecided", reason=reason)))
    verdicts = query_set.check(K, proposed)
    done = {
        r.index: (r if v.ok else KeyResult(r.index, "undecided", reason=f"the kernel refused: {v.message}"))
        for r, v in zip(proposed, verdicts)
    }
    return [done.get(i) or KeyResult(i, "undecided", reason="not requested") for i in range(n)]
