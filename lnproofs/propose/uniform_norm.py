"""Uniform attention under norm-realisable queries (LayerNorm, RMSNorm, rotary), whatever the weights.

The queries are ``q = A u + q0`` (``A = R W_q diag(g)``, ``q0 = R (W_q beta + b_q)``) with
``||u||^2 <= n`` (and ``1 . u = 0`` when centred).  Only the part of ``u`` in the range of
``P A^T`` moves ``q``, so every useful ``u`` is ``P A^T w`` for some ``w`` in R^d, with
``q = H w + q0`` and ``||u||^2 = w^T H w`` (``H = A P A^T = Hn c``, ``Hn`` an integer d x d
matrix, positive semi-definite).  Equal scores are ``D q = 0`` for the integer key
differences ``D``.  Everything below is d-dimensional python-flint linear algebra:

1. Rows ``Dp`` of ``D`` whose images ``Dp H`` are independent (modular rank, confirmed
   exactly when short of full).  Then ``G = Dp Hn Dp^T`` is invertible (``rank(X H X^T) =
   rank(X H)`` for semi-definite ``H``), and the least-norm solution is
   ``w* = Dp^T lambda`` with ``G (c lambda) = -Dp q0``, ``||u*||^2 = -lambda . Dp q0``.
2. With ``H`` invertible the other equations follow from these; with ``H`` singular (zero
   gains, rank-deficient ``W_q``) ``D q* = 0`` is checked exactly, and when it fails a vector
   of the left null space of ``D H`` with ``y . D q0 != 0`` proves the equations inconsistent.
3. ``||u*||^2 > n``: no solution lies in the ball.  ``q* != 0``: ``q*`` is the answer.
   ``q* = 0`` (for instance ``beta = 0`` and ``b_q = 0``, as in randomly initialised models):
   a direction ``w'`` with ``D H w' = 0`` and ``H w' != 0`` (the null space of ``D Hn``) moves
   ``q`` off zero inside the ball (``w*^T H w' = 0``, so ``||u||^2 = ||u*||^2 + t^2 w'^T H w'``);
   when none exists every solution in the ball gives ``q = 0``.

Runs that keep only the status (``compact``) decide steps 1 and 3 first when ``H`` is
invertible, with fewer differences than dimensions, on every row of ``D`` before any choice
of rows (a solve proved to succeed shows ``D Hn D^T`` invertible, so the rows are independent
and step 1 would choose them all): in float64 with proved error bounds
(:mod:`.uniform_float`, from the float keys, so no integer differences are built when it
decides), then in Arb ball arithmetic; a bound or ball that touches its threshold sends the
question to the exact rationals.  No status is decided by a tolerance.
"""

from __future__ import annotations

from fractions import Fraction
from math import lcm

from ..certificates.uniform import UniformResult
from ..kernel import LayerNormEquations, LayerNormQuerySet
from .integer_keys import key_differences
from .uniform_linalg import full_column_rank, kept, kernel_vector, pivot_rows, root_below, rows_of

__all__ = ["uniform_norm"]

#: working precisions (bits) of the ball-arithmetic decision, tried in turn: 128 bits (with
#: Arb's plain LU solve, about 4 times faster than its preconditioned one on 28 x 28 systems)
#: decide the heads of trained and random models seen so far; 320 bits (preconditioned) keep
#: the balls of float64-derived data (entries of a few hundred bits) far narrower than any gap
BALL_PRECS = (128, 320)
#: Arb's solver at the first precision ("lu"; None: its default, preconditioned)
BALL_FIRST_SOLVE = "lu"


def _independent_differences(D, base, pick=None):
    pick = pivot_rows(D) if pick is None else pick
    return UniformResult(
        "infeasible", proof={"kind": "independent differences", "pairs": [[j + 1, 0] for j in pick]}, **base
    )


def independent_first(keys, base) -> UniformResult | None:
    """The answer when no non-zero query gives equal scores because the first ``d`` differences
    are independent, proved in float64 (:func:`~.uniform_float.first_differences_independent`;
    the rows the exact choice would take when they are independent modulo its prime); else None."""
    from .uniform_float import first_differences_independent

    d = keys.shape[1]
    return _independent_differences(None, base, list(range(d))) if first_differences_independent(keys) else None


def uniform_norm(keys, query_set, base, query_map=None, compact=False, differences=None) -> UniformResult:
    """The uniform-attention answer under a norm query set (see the module docstring).

    ``base``: the result's ``query_set``, ``n_keys`` and ``dim``; ``query_map``: the head's
    :class:`~lnproofs.kernel.ExactQueryMap`, shared between calls;
    ``compact``: keep the status only (no query and no proof for a set without a radius);
    ``differences``: a function giving what :func:`~.integer_keys.key_differences` gives for
    ``keys`` (called only when the float64 bounds do not decide; only ``D`` is read)."""
    from flint import fmpq, fmpq_mat

    from ..kernel import ExactQueryMap

    n, d = query_set.width, query_set.dim
    query_map = ExactQueryMap(query_set) if query_map is None else query_map
    radius = getattr(query_set, "radius", None)
    if compact and radius is None and 0 < len(keys) - 1 < d:
        decided = _float_first(keys, query_map, n)
        if decided == "q0 = 0":  # what the exact road below answers for q0 = 0
            return UniformResult(
                "feasible",
                extras={"least_norm_squared": 0.0, "eps_note": _eps_note(query_set), "query_stored": False},
                **base,
            )
        if decided is not None:
            return _ball_result(decided, query_set, base, "float64 bounds")
    if len(keys) - 1 >= d and (answer := independent_first(keys, base)) is not None:
        return answer  # no non-zero query at all gives equal scores
    D, K = key_differences(keys, with_keys=False) if differences is None else differences()
    if D.nrows() >= d and full_column_rank(D):  # no non-zero query at all gives equal scores
        return _independent_differences(D, base)
    eq = LayerNormEquations(keys, query_set, query_map, differences=(D, K))
    Hn, c, q0 = eq.Hn, eq.c, eq.q0
    h_full = kept(query_map, "uniform_h_full", lambda: full_column_rank(Hn))
    m = D.nrows()
    q0i, q0den = q0.numer_denom()
    balls = compact and radius is None and h_full
    every_row = list(range(m))
    if balls and 0 < m < d and any(q0.entries()):
        # every row first, without choosing independent rows: a ball solve that succeeds proves
        # D Hn D^T invertible, so the rows of D are independent and the choice below would be
        # all of them (the same computation); one that fails falls through to the choice
        decided = _balls(D, Hn, q0, D * q0i, q0den, c, n, query_map)
        if decided is not None:
            return _ball_result(decided, query_set, base)
    else:
        every_row = None
    # with H invertible the rows of D H are independent exactly where those of D are
    pick = pivot_rows(D if h_full else D * Hn) if m else []
    if pick and not any(q0.entries()):  # q0 = 0 (no biases): the least-norm solution is u* = 0
        q_star, norm2, w_star, lam = q0, fmpq(0), fmpq_mat(d, 1), [fmpq(0)] * len(pick)
    elif pick:
        Dp = D if pick == list(range(m)) else rows_of(D, pick)  # every row independent: D itself
        Dq0 = Dp * q0i  # Dp q0 * q0den
        if balls and pick != every_row:  # (every row: tried above, undecided)
            decided = _balls(Dp, Hn, q0, Dq0, q0den, c, n, query_map)
            if decided is not None:
                return _ball_result(decided, query_set, base)
        DpT = Dp.transpose()
        mu = (Dp * Hn * DpT).solve(-Dq0) * (fmpq(1) / q0den)  # mu = c lambda
        q_star = q0 + fmpq_mat(Hn * DpT) * mu
        norm2 = -(mu.transpose() * fmpq_mat(Dq0))[0, 0] / (c * q0den)
        w_star = fmpq_mat(DpT) * mu * (fmpq(1) / c)
        lam = [x / c for x in mu.entries()]
    else:
        q_star, norm2, w_star, lam = q0, fmpq(0), fmpq_mat(d, 1), []
    if not h_full and m and any(x != 0 for x in (fmpq_mat(D) * q_star).entries()):
        return _inconsistent(eq, base, compact)
    extras = {"least_norm_squared": _float(norm2), "eps_note": _eps_note(query_set)}
    rows = pick + ([eq.N - 1] if eq.centred else [])
    if norm2 > n:
        return _infeasible(eq, "least-norm solution outside the ball", rows, lam, w_star, extras, base, compact)
    q_zero = all(x == 0 for x in q_star.entries())
    if q_zero:
        if norm2 == n:  # only u* itself lies in the ball
            return _infeasible(eq, "every solution in the ball gives q = 0", rows, lam, w_star, extras, base, compact)
        if compact and radius is None and h_full:  # D has a null space (checked above), H reaches it
            return UniformResult("feasible", extras={**extras, "query_stored": False}, **base)
        step = _direction(D, Hn, h_full)
        if step is None:
            return _infeasible(eq, "every solution in the ball gives q = 0", rows, lam, w_star, extras, base, compact)
        if compact and radius is None:
            return UniformResult("feasible", extras={**extras, "query_stored": False}, **base)
        Hs = fmpq_mat(Hn * step) * c  # the query moves along H w'
        room = (fmpq(n) - norm2) / (step.transpose() * Hn * step)[0, 0] / c
        bounds = [room] + (
            [] if radius is None else [fmpq(*Fraction(radius).as_integer_ratio()) ** 2 / (Hs.transpose() * Hs)[0, 0]]
        )
        t = root_below(min(_fraction(b) for b in bounds))
        t = fmpq(t.numerator, t.denominator)
        q_star, w_star = q_star + Hs * t, w_star + fmpq_mat(step) * t
    elif compact and radius is None:
        return UniformResult("feasible", extras={**extras, "query_stored": False}, **base)
    q = [_fraction(x) for x in q_star.entries()]
    if radius is not None and sum(x * x for x in q) > Fraction(radius) ** 2:
        return UniformResult("undecided", reason="the least-norm query exceeds the ball radius", extras=extras, **base)
    if compact:
        extras["w"] = [str(x) for x in w_star.entries()]
    else:
        extras["u"] = [str(x) for x in _u_of(eq, w_star)]
    return UniformResult("feasible", query=tuple(q), extras=extras, **base)


def _u_of(eq, w):
    """``u = P A^T w`` (fmpq entries)."""
    from flint import fmpq

    U, den = eq.AT_times(w)
    entries = [int(x) for x in U.entries()]
    if not eq.centred:
        return [fmpq(x, den) for x in entries]
    total = sum(entries)
    return [fmpq(eq.n * x - total, den * eq.n) for x in entries]


def _infeasible(eq, kind, rows, lam, w_star, extras, base, compact) -> UniformResult:
    """No query of the set gives equal scores: the least-norm solution ``u* = M_rows^T y``."""
    from flint import fmpq

    if compact:
        return UniformResult("infeasible", proof={"kind": kind, "stored": False}, extras=extras, **base)
    y = list(lam)
    if eq.centred:
        U, den = eq.AT_times(w_star)
        y.append(-fmpq(int(sum(U.entries())), den * eq.n))  # y_last = -mean(A^T w*)
    return UniformResult(
        "infeasible", proof={"kind": kind, "rows": rows, "y": [str(x) for x in y]}, extras=extras, **base
    )


def _inconsistent(eq, base, compact) -> UniformResult:
    """``D H w = -D q0`` has no solution: ``y`` with ``y^T D H = 0`` and ``y . D q0 != 0`` (then
    ``P A^T D^T y = 0``, and with the weight ``-mean(A^T D^T y)`` on ``1 . u = 0`` the
    combination of the equations reads ``0 = y . b != 0``)."""
    from flint import fmpq, fmpq_mat

    if compact:
        return UniformResult("infeasible", proof={"kind": "inconsistent equations", "stored": False}, **base)
    D, m = eq.D, eq.D.nrows()
    X, nullity = (eq.Hn * D.transpose()).nullspace()
    Dq0 = (fmpq_mat(D) * eq.q0).entries()
    for k in range(int(nullity)):
        y = [fmpq(int(X[r, k])) for r in range(m)]
        if sum((a * b for a, b in zip(y, Dq0)), fmpq(0)) != 0:
            break
    else:  # pragma: no cover - excluded by the algebra
        return UniformResult("undecided", reason="no inconsistency witness was found", **base)
    if eq.centred:
        U, den = eq.AT_times(fmpq_mat(D.transpose()) * fmpq_mat(m, 1, y))
        y.append(-fmpq(int(sum(U.entries())), den * eq.n))
    return UniformResult(
        "infeasible", proof={"kind": "inconsistent equations", "combination": [str(x) for x in y]}, **base
    )


def _direction(D, Hn, h_full):
    """An integer column ``w'`` with ``D Hn w' = 0`` and ``Hn w' != 0``, or None."""
    from flint import fmpz_mat

    d = Hn.ncols()
    if D.nrows() == 0:
        cols = [k for k in range(d) if Hn[k, k] != 0]  # Hn semi-definite: Hn e_k != 0 iff Hn_kk > 0
        return fmpz_mat(d, 1, [int(r == cols[0]) for r in range(d)]) if cols else None
    if h_full:  # any null vector of D Hn: one small solve (uniform_linalg)
        x = kernel_vector(D * Hn)
        if x is None:
            return None
        scale = lcm(*(v.denominator for v in x))
        return fmpz_mat(d, 1, [int(v * scale) for v in x])
    X, nullity = (D * Hn).nullspace()
    for k in range(int(nullity)):
        step = fmpz_mat(d, 1, [X[r, k] for r in range(d)])
        if h_full or any(x != 0 for x in (Hn * step).entries()):
            return step
    return None


def _balls(Dp, Hn, q0, Dq0, q0den, c, n, query_map=None):
    """:func:`_ball_decision` at each precision of :data:`BALL_PRECS` in turn, or None."""
    for k, prec in enumerate(BALL_PRECS):
        decided = _ball_decision(Dp, Hn, q0, Dq0, q0den, c, n, prec, BALL_FIRST_SOLVE if k == 0 else None, query_map)
        if decided is not None:
            return decided
    return None


def _float_first(keys, query_map, n):
    """For ``H`` invertible (else None): ``"q0 = 0"`` when the offset is zero (then ``u* = 0``
    and, with fewer differences than dimensions, the answer is ``feasible``, step 3), or
    :func:`~.uniform_float.float_decision`, with the head's float data kept on ``query_map``."""
    from .uniform_float import float_data, float_decision, rotated_data

    def data(qm):
        Hn, c, q0 = qm.gram()
        if not kept(qm, "uniform_h_full", lambda: full_column_rank(Hn)):
            return None
        return "q0 = 0" if not any(q0.entries()) else float_data(Hn, c, q0)

    def rotated():
        # a rotary position's map shares its head's forms: R H R^T is invertible when H and R are
        # (R: a full rank modulo a prime proves it), and R q0 = 0 exactly when q0 = 0
        whole = kept(base, "uniform_float", lambda: data(base))
        if whole is None or not full_column_rank(query_map.R.numer_denom()[0]):
            return None
        return whole if whole == "q0 = 0" else rotated_data(query_map.R, whole)

    base = getattr(query_map, "position_free", None)
    held = kept(
        query_map, "uniform_float", lambda: data(query_map) if query_map.R is None or base is None else rotated()
    )
    return held if held is None or held == "q0 = 0" else float_decision(keys, *held, n)


def _ball_result(decided, query_set, base, by: str = "arb balls") -> UniformResult:
    status, norm2 = decided
    extras = {"least_norm_squared": norm2, "decided_by": by, "eps_note": _eps_note(query_set), "query_stored": False}
    if status == "feasible":
        return UniformResult("feasible", extras=extras, **base)
    return UniformResult(
        "infeasible", proof={"kind": "least-norm solution outside the ball", "stored": False}, extras=extras, **base
    )


def _ball_decision(Dp, Hn, q0, Dq0, q0den, c, n, prec, algorithm=None, query_map=None):
    """The compact decision in Arb ball arithmetic (``H`` invertible), or None.

    The least-norm quantities (``mu``, ``||u*||^2`` and ``q*``), each enclosed in a ball that
    provably contains the exact rational value (Arb's enclosures are rigorous: no tolerance
    enters).  ``("feasible", norm2)`` when ``||u*||^2 < n`` and some coordinate of ``q*`` is
    provably non-zero; ``("infeasible", norm2)`` when ``||u*||^2 > n`` (``norm2``: the ball's
    centre as a float, for display); None when a ball touches its threshold or the system is
    not provably invertible at this precision, and the exact rationals decide.  ``Hn`` as a ball
    matrix at this precision is kept on ``query_map`` (the head's, shared by the texts of a run)."""
    from flint import arb, arb_mat, ctx

    with ctx.workprec(prec):
        Hb = kept(query_map, f"uniform_hn_arb_{prec}", lambda: arb_mat(Hn))
        Db = arb_mat(Dp)  # the balls arb_mat(Dp.transpose()) would hold
        HD = Hb * Db.transpose()
        try:
            G, rhs = Db * HD, arb_mat(-Dq0)
            mu = (G.solve(rhs, algorithm=algorithm) if algorithm else G.solve(rhs)) * (arb(1) / arb(q0den))
        except ZeroDivisionError:
            return None
        norm2 = -(mu.transpose() * arb_mat(Dq0))[0, 0] / (arb(c) * arb(q0den))
        if norm2 > n:
            return "infeasible", float(norm2.mid())
        if not norm2 < n:
            return None
        q = arb_mat(q0) + HD * mu
        if any(x > 0 or x < 0 for x in q.entries()):
            return "feasible", float(norm2.mid())
    return None


def _float(x) -> float:
    """An fmpq as a float for display (inf when it is beyond the float range)."""
    try:
        return int(x.p) / int(x.q)
    except OverflowError:
        return float("inf")


def _fraction(x) -> Fraction:
    return Fraction(int(x.p), int(x.q))


def _eps_note(query_set) -> str | None:
    if query_set.eps == 0:
        return None
    outputs = "LayerNorm" if isinstance(query_set, LayerNormQuerySet) else "normalised"
    return (
        f"eps > 0: {outputs} outputs lie strictly inside ||u|| < sqrt(n); the closure ||u|| <= sqrt(n) "
        "is used (an outer bound)"
    )
