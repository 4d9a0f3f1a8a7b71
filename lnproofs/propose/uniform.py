"""Uniform attention: a non-zero query that gives every key the same score.

``q . k_j`` is the same for every j exactly when ``q`` is orthogonal to every key
difference ``k_j - k_0``.  For free queries such a ``q != 0`` exists iff the differences
span less than R^d; when they span R^d, ``d`` linearly independent differences prove
that none exists.  Projection (LayerNorm's mean subtraction) makes the differences
orthogonal to the all-ones vector, so ``q = 1`` always works there (the paper's
projection property).

Under a subspace query set (q = W^T z) the question is whether the differences, seen
through ``W``, still have a kernel; under LayerNorm-realisable queries the solutions
``u`` of the linear equations form an affine space, and its point of least norm (exact
rationals) decides whether one lies in the ball ``||u||^2 <= n``.

Every step is one exact python-flint matrix operation (one null space or one row
reduction per head); :mod:`lnproofs.propose.uniform_reference` keeps the original
element-by-element search, which gives the same answers.

Statuses: ``"feasible"`` (a query is given and checked exactly), ``"infeasible"``
(a proof is given and checked exactly), ``"undecided"`` (with the reason).
"""

from __future__ import annotations

from fractions import Fraction

from .pivots import pivot_columns
from ..certificates.uniform import UniformResult
from ..kernel.uniform_check import check_uniform

__all__ = ["UniformResult", "uniform_attention", "check_uniform"]


def _first_kernel_column(X, cols: int):
    return [Fraction(int(X[r, 0])) for r in range(cols)]


_PRIME = (1 << 61) - 1


def _pivot_rows(matrix) -> list[int]:
    """Indices of a maximal independent set of rows of an fmpz_mat or fmpq_mat (exact).

    Rows independent modulo a prime are independent over the rationals, so when the rank
    modulo the prime is already the largest possible the modular pivots are taken; exact
    row reduction otherwise."""
    if matrix.nrows() == 0 or matrix.ncols() == 0:
        return []
    T = matrix.transpose()
    if hasattr(T, "nullspace"):                      # fmpz_mat
        from flint import nmod_mat

        R, rank = nmod_mat(T, _PRIME).rref()
        if int(rank) == min(T.nrows(), T.ncols()):
            return pivot_columns(R, int(rank), T.ncols())
    rref = T.rref()
    R, rank = rref[0], int(rref[-1])
    return pivot_columns(R, rank, T.ncols())


def _full_column_rank(D) -> bool:
    """True when the integer matrix ``D`` has rank equal to its column count (a full rank
    modulo a prime proves it; exact rank otherwise)."""
    from flint import nmod_mat

    d = D.ncols()
    return int(nmod_mat(D, _PRIME).rank()) == d or int(D.rank()) == d


def uniform_attention(keys, query_set=None, *, reference: bool = False, query_map=None,
                      compact: bool = False, differences=None) -> UniformResult:
    """Decide whether a non-zero query in the set gives every key the same score.

    ``reference=True`` runs the original element-by-element search (same answers, slow).
    For LayerNorm query sets, ``query_map`` (an
    :class:`~lnproofs.kernel.querysets.layernorm.ExactQueryMap` of the same query set) is
    shared between calls.  ``compact=True`` is for runs that keep only the statuses: the
    answer's exact query and proof (rationals of thousands of digits for wide layers) are
    computed but not returned; run without it for an answer that :func:`check_uniform`
    re-verifies (with a ball radius, a feasible compact answer carries ``w``,
    ``u = P diag(gamma) W_q^T w``, d numbers instead of n).  ``differences``: what
    :func:`~lnproofs.kernel.uniform_exact.difference_matrix` gives for these keys, when
    the caller already has it (several query sets over the same keys)."""
    from ..kernel.arrays import as_real_array

    if reference:
        from .uniform_reference import reference_uniform_attention

        return reference_uniform_attention(keys, query_set)
    keys = as_real_array(keys, name="keys", ndim=2)
    N, d = keys.shape
    if query_set is not None:
        query_set.validate(d)
    kind = "free" if query_set is None else query_set.kind
    if kind == "subspace":
        from .uniform_reference import reference_uniform_attention

        return reference_uniform_attention(keys, query_set)
    if query_set is None:
        qs_json = {"kind": "free"}
    else:
        qs_json = _kept(query_map, "query_set_json", query_set.to_json)
    base = dict(query_set=qs_json, n_keys=N, dim=d)
    if kind in ("free", "ball"):
        from ..kernel.uniform_exact import difference_matrix
        from .uniform_reference import _normalise, _scale_into

        if compact and query_set is None and N - 1 < d:
            # fewer differences than dimensions: their span misses some q != 0
            return UniformResult("feasible", proof={"kind": "fewer differences than dimensions"},
                                 extras={"query_stored": False}, **base)
        D, _ = difference_matrix(keys) if differences is None else differences
        if D.nrows() == 0:
            q = [Fraction(1)] + [Fraction(0)] * (d - 1)
            return UniformResult("feasible", query=tuple(_scale_into(_normalise(q), query_set)), **base)
        full = D.nrows() >= d and _full_column_rank(D)
        X, nullity = (None, 0) if full else D.nullspace()
        if int(nullity):
            q = _first_kernel_column(X, d)
            return UniformResult("feasible", query=tuple(_scale_into(_normalise(q), query_set)), **base)
        rows = _pivot_rows(D)
        return UniformResult("infeasible", proof={"kind": "independent differences",
                                                  "pairs": [[j + 1, 0] for j in rows]}, **base)
    return _uniform_layernorm(keys, query_set, base, query_map, compact, differences)


def _kept(query_map, name: str, make):
    """``make()``, kept on the head's query map when there is one (a run over many texts builds
    the query set's JSON and tests ``H`` once per head); a cache of this search, not a claim."""
    if query_map is None:
        return make()
    if name not in vars(query_map):
        setattr(query_map, name, make())
    return getattr(query_map, name)


def _uniform_layernorm(keys, query_set, base, query_map=None, compact=False, differences=None) -> UniformResult:
    """The least-norm solution of the uniform equations, found in d dimensions.

    ``q = H w + q0`` with ``u = P A^T w`` and ``||u||^2 = w^T H w`` (``H = A P A^T``).  With
    ``H`` invertible the least-norm solution minimises ``(q - q0)^T H^-1 (q - q0)`` over the
    queries with equal scores (``D q = 0``): one integer solve with ``Dp H Dp^T`` on
    independent key differences ``Dp``.  Its multipliers ``y`` (``M^T y = u``) are the same
    kind of proof object as the reference's.  Singular ``H`` and the rare boundary cases go
    to the reference search.
    """
    from flint import fmpq, fmpq_mat, fmpz_mat

    from ..kernel.uniform_exact import LayerNormEquations, difference_matrix

    n, d = query_set.width, len(query_set.b_q)
    D, K = difference_matrix(keys) if differences is None else differences
    if D.nrows() >= d and _full_column_rank(D):      # no non-zero query at all gives equal scores
        pick = _pivot_rows(D)
        return UniformResult("infeasible", proof={"kind": "independent differences",
                                                  "pairs": [[j + 1, 0] for j in pick]}, **base)
    eq = LayerNormEquations(keys, query_set, query_map, differences=(D, K))
    if not _kept(query_map, "h_invertible", lambda: _full_column_rank(eq.Hn)):
        return _reference(keys, query_set)
    # Lagrange: q = q0 + H D^T lam with (Dp H Dp^T) lam = -Dp q0 on independent rows Dp of D;
    # then w = Dp^T lam, u = P A^T w, ||u||^2 = w^T H w = -lam . Dp q0.  With H = Hn c
    # (c = scale^2 / n) and mu = c lam: (Dp Hn Dp^T) mu = -Dp q0.
    pick = _pivot_rows(eq.D)
    c = eq.scale * eq.scale / fmpq(n)
    q0i, q0den = eq.q0.numer_denom()
    if pick:
        entries = eq.D.entries()
        Dp = fmpz_mat(len(pick), d, [entries[r * d + k] for r in pick for k in range(d)])
        Dq0 = Dp * q0i                                              # Dp q0 * q0den
        if compact and getattr(query_set, "radius", None) is None:
            decided = _ball_decision(Dp, eq, Dq0, q0den, c, n)
            if decided is not None:
                status, kind, norm2 = decided
                extras = {"least_norm_squared": norm2, "decided_by": "arb balls", "eps_note": _eps_note(query_set),
                          "query_stored": False}
                if status == "feasible":
                    return UniformResult("feasible", extras=extras, **base)
                return UniformResult("infeasible", proof={"kind": kind, "stored": False}, extras=extras, **base)
        mu = (Dp * eq.Hn * Dp.transpose()).solve(-Dq0)              # mu * q0den
        mu = mu * (fmpq(1) / q0den)
        norm2 = -(mu.transpose() * fmpq_mat(Dq0))[0, 0] / (c * q0den)
        HD = eq.Hn * Dp.transpose()
        if compact and getattr(query_set, "radius", None) is None:
            # only the status is kept: ||u||^2 and whether q = q0 + Hn Dp^T mu is zero
            extras = {"least_norm_squared": int(norm2.p) / int(norm2.q), "eps_note": _eps_note(query_set)}
            q0e, hd, mue = eq.q0.entries(), HD.entries(), mu.entries()
            rho = len(pick)
            nonzero = any(q0e[a] + sum((hd[a * rho + k] * mue[k] for k in range(rho)), fmpq(0)) != 0
                          for a in range(d))
            if norm2 <= n and nonzero:
                return UniformResult("feasible", extras={**extras, "query_stored": False}, **base)
            if norm2 > n or eq.directions_keep_query():
                kind = "least-norm solution outside the ball" if norm2 > n else "every solution in the ball gives q = 0"
                return UniformResult("infeasible", proof={"kind": kind, "stored": False}, extras=extras, **base)
            return _reference(keys, query_set)
        q_star = eq.q0 + fmpq_mat(HD) * mu
        w = fmpq_mat(Dp.transpose()) * mu * (fmpq(1) / c)
        lam = [x / c for x in mu.entries()]
    else:
        q_star, norm2, w, lam = eq.q0, fmpq(0), fmpq_mat(d, 1), []
    extras = {"least_norm_squared": int(norm2.p) / int(norm2.q), "eps_note": _eps_note(query_set)}
    q_zero = all(x == 0 for x in q_star.entries())
    if norm2 > n or q_zero:
        kind = "least-norm solution outside the ball" if norm2 > n else "every solution in the ball gives q = 0"
        if norm2 <= n and not eq.directions_keep_query():
            return _reference(keys, query_set)
        if compact:
            return UniformResult("infeasible", proof={"kind": kind, "stored": False}, extras=extras, **base)
        U, den = eq.AT_times(w)
        y = lam + [-fmpq(int(sum(U.entries())), den * n)]            # y_last = -mean(A^T w)
        return UniformResult("infeasible", proof={"kind": kind, "rows": pick + [eq.N - 1], "y": [str(x) for x in y]},
                             extras=extras, **base)
    radius = getattr(query_set, "radius", None)
    if compact and radius is None:
        return UniformResult("feasible", extras={**extras, "query_stored": False}, **base)
    q = [_fraction(x) for x in q_star.entries()]
    if radius is not None and sum(x * x for x in q) > Fraction(radius) ** 2:
        return UniformResult("undecided", reason="the least-norm query exceeds the ball radius", extras=extras, **base)
    if compact:
        extras["w"] = [str(x) for x in w.entries()]
    if not compact:
        U, den = eq.AT_times(w)
        total = sum(U.entries())
        # u = P A^T w = (n U - total 1) / (n den)
        U = U * n - fmpz_mat(n, 1, [total] * n)
        extras["u"] = [str(fmpq(int(x), den * n)) for x in U.entries()]
    return UniformResult("feasible", query=tuple(q), extras=extras, **base)


#: working precision (bits) of the ball-arithmetic decision; wide enough that the balls of
#: float64-derived data (entries of a few hundred bits) stay far narrower than any gap seen
_BALL_PREC = 320


def _ball_decision(Dp, eq, Dq0, q0den, c, n):
    """The compact decision of :func:`_uniform_layernorm` in Arb ball arithmetic, or None.

    The same least-norm quantities as the exact path (``mu``, ``||u||^2`` and ``q``), each
    enclosed in a ball that provably contains the exact rational value (Arb's enclosures are
    rigorous: no tolerance enters).  ``("feasible", None, norm2)`` when ``||u||^2 < n`` and
    some coordinate of ``q`` is provably non-zero; ``("infeasible", kind, norm2)`` when
    ``||u||^2 > n`` (``norm2``: the ball's centre as a float, for display);
    None when a ball touches its threshold or the system is not provably invertible at this
    precision, and the exact rationals decide."""
    from flint import arb, arb_mat, ctx

    with ctx.workprec(_BALL_PREC):
        DpT = arb_mat(Dp.transpose())
        HD = arb_mat(eq.Hn) * DpT
        try:
            mu = (arb_mat(Dp) * HD).solve(arb_mat(-Dq0)) * (arb(1) / arb(q0den))
        except ZeroDivisionError:
            return None
        norm2 = -(mu.transpose() * arb_mat(Dq0))[0, 0] / (arb(c) * arb(q0den))
        if norm2 > n:
            return "infeasible", "least-norm solution outside the ball", float(norm2.mid())
        if not norm2 < n:
            return None
        q = arb_mat(eq.q0) + HD * mu
        if any(x > 0 or x < 0 for x in q.entries()):
            return "feasible", None, float(norm2.mid())
    return None


def _fraction(x) -> Fraction:
    return Fraction(int(x.p), int(x.q))


def _reference(keys, query_set):
    from .uniform_reference import reference_uniform_attention

    return reference_uniform_attention(keys, query_set)


def _eps_note(query_set) -> str | None:
    if query_set.eps == 0:
        return None
    return ("eps > 0: LayerNorm outputs lie strictly inside ||u|| < sqrt(n); the closure ||u|| <= sqrt(n) "
            "is used (an outer bound)")
