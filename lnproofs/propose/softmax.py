"""Softmax attention weights over a query set: the largest weight a key can get, and
the smallest query norm that gives it a required weight.

With scores multiplied by ``s`` (``1/T`` for a temperature ``T``, or ``1/sqrt(d)`` as in
attention) the log-weight of key ``i`` is ``f(q) = s k_i.q - logsumexp(s K q)``, a concave
function.  A cone solver proposes an optimal query; the reported numbers are then
proved:

* the query is put into the query set exactly (rational arithmetic) and its weight is
  enclosed with interval arithmetic, so ``weight`` is a rigorous interval;
* for every probability vector ``p``, ``logsumexp(y) >= p.y + H(p)`` (Gibbs), hence
  ``f(q) <= s c.q - H(p)`` with ``c = k_i - K^T p``.  Taking ``p`` = the softmax
  weights at the proposed query gives a dual bound that is tight at the optimum:
  ``max f <= s h(c) - H(p)`` where ``h`` is the support function of the query set, and
  ``||q|| >= (log tau + H(p)) / (s sigma(c))`` for every query reaching weight ``tau``
  (``sigma(c)`` = the largest ``c.q`` over unit queries in the set's linear span).
  ``h`` and ``sigma`` come from exact rationals followed by one interval square root
  (:mod:`lnproofs.propose.softmax_exact`).
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from ..certificates.writers import query_set_to_json
from ..kernel import InputError, LayerNormQuerySet, OptionError, SubspaceQuerySet, require
from .pivots import pivot_columns
from .softmax_exact import ExactSet, evaluate, gibbs, text

__all__ = ["AttentionWeightResult", "max_weight", "min_norm", "score_factor"]


@dataclass(frozen=True)
class AttentionWeightResult:
    """A solved softmax question with rigorous intervals.

    ``weight``: enclosure of the target's weight at ``query``.  ``bound``: for
    ``max-weight`` an upper bound on the largest weight over the set; for ``min-norm``
    a lower bound on the smallest norm.  ``gap``: bound minus what the query achieves
    (an upper bound on how far the query is from optimal).  ``status``: ``"solved"``
    (query verified in the set), ``"infeasible"`` (proved: no query in the set reaches
    ``tau``) or ``"undecided"`` (``reason`` says why).
    """

    question: str
    target: int
    status: str
    scale: str
    query_set: dict
    tau: float | None = None
    query: tuple | None = None
    query_exact: tuple | None = None
    query_norm: tuple | None = None
    weight: tuple | None = None
    bound: tuple | None = None
    gap: float | None = None
    solver_value: float | None = None
    reason: str | None = None
    extras: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        out = {
            "question": self.question,
            "target": self.target,
            "status": self.status,
            "scale": self.scale,
            "query_set": self.query_set,
            "tau": self.tau,
            "query": None if self.query is None else list(self.query),
            "query_exact": None if self.query_exact is None else list(self.query_exact),
            "query_norm": None if self.query_norm is None else list(self.query_norm),
            "weight": None if self.weight is None else list(self.weight),
            "bound": None if self.bound is None else [x if math.isfinite(x) else None for x in self.bound],
            "gap": self.gap,
            "solver_value": self.solver_value,
            "reason": self.reason,
        }
        out.update(self.extras)
        return out

    def describe(self) -> str:
        lines = []
        if self.question == "max-weight":
            lines.append(f"largest softmax weight of key {self.target} (scores times {self.scale})")
        else:
            lines.append(f"smallest ||q|| giving key {self.target} weight >= {self.tau:g} (scores times {self.scale})")
        lines.append(f"  status: {self.status}" + (f" ({self.reason})" if self.reason else ""))
        if self.query is not None:
            shown = ", ".join(f"{x:.6g}" for x in self.query[:8]) + (", ..." if len(self.query) > 8 else "")
            lines.append(f"  query: [{shown}]")
        if self.query_norm is not None:
            lines.append(f"  ||query|| in [{self.query_norm[0]:.12g}, {self.query_norm[1]:.12g}]")
        if self.weight is not None:
            lines.append(
                f"  weight at the query in [{self.weight[0]:.12g}, {self.weight[1]:.12g}] (interval arithmetic)"
            )
        if self.bound is not None:
            if self.question == "max-weight" or self.status == "infeasible":
                what, value = "largest weight over the set <=", self.bound[1]
            else:
                what, value = "smallest norm >=", self.bound[0]
            lines.append(f"  dual bound: {what} {value:.12g}")
        if self.gap is not None:
            lines.append(f"  gap: {self.gap:.3g}")
        return "\n".join(lines)


def score_factor(dim: int, *, temperature=None, scaled: bool = False) -> tuple[float, str]:
    """The float factor on the scores and its description."""
    if scaled and temperature is not None:
        raise OptionError("--scaled and --temperature were both given; choose one")
    if scaled:
        return 1.0 / math.sqrt(dim), f"1/sqrt({dim})"
    if temperature is None:
        return 1.0, "1"
    t = float(temperature)
    require(math.isfinite(t) and t > 0, OptionError, f"temperature T = {temperature!r} must be a finite number > 0")
    return 1.0 / t, f"1/{t!r}"


# --------------------------------------------------------------------------- the solvers


def _problem(keys, query_set, factor):
    import cvxpy as cp

    N, d = keys.shape
    constraints = []
    if isinstance(query_set, SubspaceQuerySet):
        W = query_set.matrix
        var = cp.Variable(W.shape[0])
        q = W.T @ var
    elif isinstance(query_set, LayerNormQuerySet):
        arrays = query_set.arrays()
        n = query_set.width
        var = cp.Variable(n)
        A = arrays["W_q"] * arrays["gamma"][None, :]
        q = A @ var + (arrays["W_q"] @ arrays["beta"] + arrays["b_q"])
        constraints += [cp.sum(var) == 0, cp.norm(var) <= math.sqrt(n) * (1 - 1e-9)]
    else:
        var = cp.Variable(d)
        q = var
    radius = getattr(query_set, "radius", None)
    if radius is not None:
        constraints.append(cp.norm(q) <= radius * (1 - 1e-9))
    return var, q, constraints


@contextlib.contextmanager
def _stdout_to_stderr():
    """Standard output at the file-descriptor level sent to standard error while solvers run:
    their C code can print (SCS reports a failed factorisation on stdout even when not verbose),
    and stdout belongs to the command's own output (``--json``)."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _solve(problem):
    import warnings

    import cvxpy as cp

    for solver in ("CLARABEL", "SCS"):
        try:
            with warnings.catch_warnings(), _stdout_to_stderr():
                warnings.simplefilter("ignore")  # inaccurate solutions are only proposals
                problem.solve(solver=solver, verbose=False)  # no solver banner, ever
        except (cp.error.SolverError, ValueError, ArithmeticError):
            continue
        if problem.status in ("optimal", "optimal_inaccurate"):
            return True
    return False


def _validate(keys, target, query_set):
    from ..kernel import as_real_array

    keys = as_real_array(keys, name="keys", ndim=2)
    N, d = keys.shape
    require(
        isinstance(target, (int, np.integer)) and 0 <= int(target) < N,
        OptionError,
        f"target {target!r} is out of range; the keys are numbered 0..{N - 1}",
    )
    if query_set is not None:
        query_set.validate(d)
    return keys, int(target)


def max_weight(keys, target: int, query_set=None, *, temperature=None, scaled: bool = False) -> AttentionWeightResult:
    """The largest softmax weight key ``target`` gets from a query in the (bounded) set."""
    import cvxpy as cp

    from .intervals import _ctx, bounds, entropy, score_scale

    keys, target = _validate(keys, target, query_set)
    N, d = keys.shape
    layernorm = isinstance(query_set, LayerNormQuerySet)
    require(
        layernorm or getattr(query_set, "radius", None) is not None,
        OptionError,
        "--max-weight needs a bounded query set: give --query-ball R (the weight tends to its supremum "
        "only as ||q|| grows)",
    )
    factor, scale_text = score_factor(d, temperature=temperature, scaled=scaled)
    qs_json = query_set_to_json(query_set)
    var, q, constraints = _problem(keys, query_set, factor)
    objective = cp.Maximize(factor * (keys[target] @ q) - cp.log_sum_exp(factor * (keys @ q)))
    problem = cp.Problem(objective, constraints)
    base = dict(question="max-weight", target=target, scale=scale_text, query_set=qs_json)
    if not _solve(problem):
        return AttentionWeightResult(status="undecided", reason=f"the cone solver failed ({problem.status})", **base)
    ctx = _ctx()
    scale_iv = score_scale(temperature=temperature, dim=d, scaled=scaled, ctx=ctx)
    es = ExactSet(keys, query_set)
    query = es.snap(np.asarray(var.value, dtype=np.float64))
    if query is None:
        return AttentionWeightResult(
            status="undecided",
            reason="the proposed query could not be put into the set exactly",
            solver_value=float(math.exp(problem.value)),
            **base,
        )
    scores, weight, norm = evaluate(es, target, query, scale_iv, ctx)
    p = gibbs(scores, factor)
    c = [k_i - sum((pj * kj[a] for pj, kj in zip(p, es.K)), Fraction(0)) for a, k_i in enumerate(es.K[target])]
    upper = ctx.exp(scale_iv * es.support(c, ctx) - entropy(p, ctx))
    bound = bounds(upper)
    bound = (bound[0], min(bound[1], 1.0))
    return AttentionWeightResult(
        status="solved",
        query=tuple(float(x) for x in query),
        query_exact=tuple(text(x) for x in query),
        query_norm=norm,
        weight=weight,
        bound=bound,
        gap=max(0.0, bound[1] - weight[0]),
        solver_value=float(math.exp(problem.value)),
        **base,
    )


def min_norm(
    keys, target: int, tau: float, query_set=None, *, temperature=None, scaled: bool = False
) -> AttentionWeightResult:
    """The smallest ``||q||`` over the set giving key ``target`` softmax weight at least ``tau``."""
    import cvxpy as cp

    from .intervals import _ctx, bounds, entropy, interval, score_scale, sqrt_of

    keys, target = _validate(keys, target, query_set)
    N, d = keys.shape
    try:
        tau = float(tau)
    except (TypeError, ValueError):
        raise OptionError(f"weight tau {tau!r} is not a number; give 0 < tau < 1") from None
    require(0 < tau < 1, OptionError, f"weight tau = {tau!r} is outside (0, 1); give 0 < tau < 1")
    factor, scale_text = score_factor(d, temperature=temperature, scaled=scaled)
    qs_json = query_set_to_json(query_set)
    base = dict(question="min-norm", target=target, scale=scale_text, query_set=qs_json, tau=tau)
    ctx = _ctx()
    scale_iv = score_scale(temperature=temperature, dim=d, scaled=scaled, ctx=ctx)
    es = ExactSet(keys, query_set)
    log_tau = ctx.log(interval(tau, ctx))
    layernorm = es.layernorm
    best = None
    for slack in (1e-7, 1e-5, 1e-3):
        var, q, constraints = _problem(keys, query_set, factor)
        constraints = constraints + [
            factor * (keys[target] @ q) - cp.log_sum_exp(factor * (keys @ q)) >= math.log(tau) + slack
        ]
        problem = cp.Problem(cp.Minimize(cp.norm(q)), constraints)
        if not _solve(problem):
            break
        query = es.snap(np.asarray(var.value, dtype=np.float64))
        if query is None:
            continue
        scores, weight, norm = evaluate(es, target, query, scale_iv, ctx)
        if weight[0] >= tau:
            best = (query, scores, weight, norm, float(problem.value))
            break
    if best is None:
        # no verified query: try to prove that none exists
        reason = "the solver found no query in the set reaching tau"
        if layernorm or es.radius is not None:
            try:
                top = max_weight(keys, target, query_set, temperature=temperature, scaled=scaled)
            except InputError:
                top = None
            if top is not None and top.bound is not None and top.bound[1] < tau:
                return AttentionWeightResult(
                    status="infeasible",
                    bound=top.bound,
                    reason=f"every query in the set gives weight <= {top.bound[1]:.12g} < tau",
                    **base,
                )
        else:
            found = _entropy_bound(es, target, ctx)
            if found is not None and found[0][1] < tau:
                bound, p = found
                return AttentionWeightResult(
                    status="infeasible",
                    bound=bound,
                    reason=(
                        f"every query gives weight <= exp(-H(p)) <= {bound[1]:.12g} < tau, where p averages "
                        f"the keys to key {target} exactly (in the query directions)"
                    ),
                    extras={"entropy_weights": {"indices": [j for j, w in p], "weights": [text(w) for j, w in p]}},
                    **base,
                )
        return AttentionWeightResult(status="undecided", reason=reason, **base)
    query, scores, weight, norm, value = best
    p = gibbs(scores, factor)
    c = [k_i - sum((pj * kj[a] for pj, kj in zip(p, es.K)), Fraction(0)) for a, k_i in enumerate(es.K[target])]
    numerator = log_tau + entropy(p, ctx)
    sigma = sqrt_of(es.span_norm_sq(c), ctx)
    lower = 0.0
    lo_num = bounds(numerator)[0]
    if lo_num > 0 and bounds(sigma)[1] > 0:
        lower = max(0.0, bounds(numerator / (scale_iv * sigma))[0])
    return AttentionWeightResult(
        status="solved",
        query=tuple(float(x) for x in query),
        query_exact=tuple(text(x) for x in query),
        query_norm=norm,
        weight=weight,
        bound=(lower, math.inf),
        gap=max(0.0, norm[1] - lower),
        solver_value=value,
        **base,
    )


def _entropy_bound(es: ExactSet, target: int, ctx):
    """For unbounded linear query sets: ``p`` with ``sum_j p_j k_j = k_i`` seen by every query
    gives ``f(q) <= -H(p)`` for all q.  The solver proposes the max-entropy ``p``; exact
    rationals make the constraint hold; returns ``(bounds of exp(-H(p)), [(j, p_j)])`` or None."""
    import cvxpy as cp
    from flint import fmpq_mat

    from ..kernel import fmpq_of, fraction_of_fmpq
    from .intervals import bounds, entropy

    if es.subspace:
        rows = [
            [fraction_of_fmpq(x) for x in (es.Wb * fmpq_mat(es.d, 1, [fmpq_of(v) for v in k])).entries()] for k in es.K
        ]
    else:
        rows = [list(k) for k in es.K]
    pts = np.array([[float(x) for x in r] for r in rows], dtype=np.float64)
    N = len(rows)
    p = cp.Variable(N)
    problem = cp.Problem(cp.Maximize(cp.sum(cp.entr(p))), [pts.T @ p == pts[target], cp.sum(p) == 1, p >= 0])
    if not _solve(problem) or p.value is None:
        return None
    guess = np.maximum(np.asarray(p.value, dtype=np.float64), 0.0)
    support = [j for j in range(N) if guess[j] > 1e-10]
    if target not in support:
        support.append(target)
    # exact: A p_S = b with A = [points^T; 1], free columns fixed at their rounded values
    m = len(rows[0])
    A = [[rows[j][a] for j in support] for a in range(m)] + [[Fraction(1)] * len(support)]
    b = list(rows[target]) + [Fraction(1)]
    Am = fmpq_mat([[fmpq_of(x) for x in row] for row in A])
    rref, rank = Am.rref()
    pivots = pivot_columns(rref, rank, len(support))
    fixed = {c: Fraction(float(guess[support[c]])) for c in range(len(support)) if c not in pivots}
    rhs = [bv - sum((A[a][c] * v for c, v in fixed.items()), Fraction(0)) for a, bv in enumerate(b)]
    indep = _row_basis(A, pivots)
    M = fmpq_mat([[fmpq_of(A[a][c]) for c in pivots] for a in indep])
    sol = M.solve(fmpq_mat(len(indep), 1, [fmpq_of(rhs[a]) for a in indep]))
    weights = dict(fixed)
    for k, c in enumerate(pivots):
        weights[c] = fraction_of_fmpq(sol[k, 0])
    if any(w < 0 for w in weights.values()):
        return None
    p_exact = [(support[c], weights[c]) for c in sorted(weights) if weights[c] != 0]
    # every equation must hold exactly (the dropped rows included)
    for a in range(len(A)):
        if sum((A[a][c] * weights[c] for c in weights), Fraction(0)) != b[a]:
            return None
    return bounds(ctx.exp(-entropy([w for _, w in p_exact], ctx))), p_exact


def _row_basis(A, columns) -> list[int]:
    """Indices of rows of ``A`` (restricted to ``columns``) forming a basis of its row space."""
    from flint import fmpq_mat

    from ..kernel import fmpq_of

    T = fmpq_mat([[fmpq_of(A[a][c]) for a in range(len(A))] for c in columns])
    rref, rank = T.rref()
    return pivot_columns(rref, rank, len(A))
