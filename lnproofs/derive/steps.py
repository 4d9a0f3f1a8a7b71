"""The small trusted checkers behind every proof step (SymPy only).

Each checker takes a step (``lhs``, ``relation``, ``rhs``, ``data``) and returns
``(checked, detail)``; :data:`METHODS` maps the method names to them:

* ``simplify-to-zero`` / ``expand``: ``lhs - rhs`` reduces to zero (entrywise for
  matrices);
* ``rewrite J^2 = nJ``: both sides are polynomials in the commuting symmetric matrices
  ``I`` and ``J = 1 1^T``; they agree after reduction modulo ``J^2 - n J``;
* ``trace (tr I = n, tr J = n)``, ``apply to 1 (J 1 = n 1)``,
  ``apply to v orthogonal to 1 (J v = 0)``: the same algebra, read through a linear map;
* ``finite sums and Kronecker deltas``: sums over a symbolic range are expanded by
  linearity, constants pulled out, ``sum_k delta_ik f(k) = f(i)`` applied, and the
  difference of both sides must vanish;
* ``compare squares (both sides nonnegative)``: both sides are nonnegative under the
  symbols' assumptions and their squares agree;
* ``sign under assumptions``: the difference of both sides is positive (``<``, ``>``) or
  nonnegative (``<=``, ``>=``) by SymPy's assumption system;
* ``eigen (characteristic polynomial)``: an explicit matrix has exactly the claimed
  eigenvalues with the claimed multiplicities;
* ``determinant lemma``: an explicit determinant equals the claimed expression;
* ``solve``: the solution set of an equation in a stated domain is exactly the claim;
* ``root isolation (Sturm)``: a polynomial has exactly one root in each claimed closed
  interval, and no other real roots;
* ``derivative``: the derivative of ``lhs`` in ``data[0]`` (sums expanded) is ``rhs``;
* ``limit``: SymPy's limit of ``lhs`` (symbol, point and side in ``data``) is ``rhs``.

A checker that raises, or a method name that is unknown, fails the step: nothing passes
by accident.
"""

from __future__ import annotations

from .sums import _ij_symbols, normalize_sums, reduce_ij

# Steps are :class:`lnproofs.derive.theorem.Step` objects; this module reads only their
# fields (lhs, relation, rhs, data, method), so it does not import theorem.py.
__all__ = ["METHODS", "check_step"]


def _entries(value):
    import sympy as sp

    if isinstance(value, sp.MatrixBase):
        return list(value)
    return [value]


def _vanishes(expr, budget: int = 300) -> bool:
    """True when SymPy reduces ``expr`` to zero (cheap rewrites first)."""
    import sympy as sp

    for entry in _entries(expr):
        e = sp.sympify(entry)
        if e == 0:
            continue
        exact = _rational_zero(e)
        if exact is not None:
            if exact:
                continue
            return False
        e = sp.expand(e)
        if e == 0:
            continue
        radical = any(not p.exp.is_Integer for p in e.atoms(sp.Pow))
        if radical and _radicals_vanish(e):
            continue
        if radical and sp.expand(sp.radsimp(e)) == 0:
            continue
        e = sp.cancel(sp.together(e))
        if e == 0:
            continue
        if sp.count_ops(e) <= budget and sp.simplify(e) == 0:
            continue
        return False
    return True


def _radicals_vanish(expr) -> bool:
    """True when ``expr`` vanishes with every square root of a polynomial made a free symbol.

    Each ``p^(k/2)`` is written ``c^(k/2) s^k`` with ``p = c q`` (``c > 0`` the rational
    content, ``q`` primitive) and one symbol ``s`` per ``q`` standing for ``sqrt(q)``.  An
    identity that holds for a free ``s`` holds for ``s = sqrt(q)``, so this never accepts a
    false claim; it only makes identities between differently scaled radicands cheap.
    """
    import sympy as sp

    reps, roots = {}, {}
    for power in expr.atoms(sp.Pow):
        exp = power.exp
        if not (exp.is_Rational and exp.q == 2 and power.base.free_symbols):
            continue
        num, den = _fraction(power.base)
        if not den.free_symbols and not num.free_symbols:  # e.g. sqrt(n |y|^2 / |y|^2) = sqrt(n)
            reps[power] = (num / den) ** exp
            continue
        if den.free_symbols:
            continue
        content, prim = sp.expand(num / den).as_content_primitive()
        if not (content.is_Rational and content > 0):
            continue
        if prim not in roots:
            roots[prim] = sp.Dummy("root")
        reps[power] = content**exp * roots[prim] ** exp.p
    if not reps:
        return False
    try:
        numerator, _ = _fraction(expr.xreplace(reps))
        return sp.expand(numerator) == 0
    except Exception:
        return False


def _fraction(expr):
    """``(numerator, denominator)`` of ``expr``, through QQ's fraction field when possible (fast)."""
    import sympy as sp

    symbols = sorted(expr.free_symbols, key=sp.default_sort_key)
    if symbols and all(isinstance(s, sp.Symbol) for s in symbols) and not expr.has(sp.Function):
        try:
            field = sp.QQ.frac_field(*symbols)
            element = field.from_sympy(expr)
            return field.to_sympy(field(element.numer)), field.to_sympy(field(element.denom))
        except Exception:  # irrational coefficients or radicals: fall back to together
            pass
    return sp.fraction(sp.together(expr))


def _rational_zero(expr):
    """For a rational function over QQ in plain symbols: is it identically zero? Else None."""
    import sympy as sp

    if expr.has(sp.Indexed, sp.Sum, sp.KroneckerDelta, sp.Function):
        return None
    for power in expr.atoms(sp.Pow):
        if not power.exp.is_Integer:
            return None
    symbols = sorted(expr.free_symbols, key=sp.default_sort_key)
    if not all(isinstance(sym, sp.Symbol) for sym in symbols):
        return None
    try:
        if not symbols:
            return bool(expr == 0) if expr.is_Rational else None
        field = sp.QQ.frac_field(*symbols)
        return field.from_sympy(expr) == field.zero
    except Exception:  # not a rational function over QQ (e.g. sqrt(2) coefficients)
        return None


def _difference(step):
    import sympy as sp

    lhs, rhs = step.lhs, step.rhs
    if isinstance(lhs, sp.MatrixBase) or isinstance(rhs, sp.MatrixBase):
        lhs, rhs = sp.Matrix(lhs), sp.Matrix(rhs)
        if lhs.shape != rhs.shape:
            raise ValueError(f"shapes differ: {lhs.shape} and {rhs.shape}")
    return lhs - rhs


def _require_equality(step):
    if step.relation != "=":
        raise ValueError(f"method {step.method!r} checks equalities, not {step.relation!r}")


def _check_simplify(step):
    _require_equality(step)
    ok = _vanishes(_difference(step))
    return ok, "lhs - rhs simplifies to 0" if ok else "lhs - rhs does not simplify to 0"


def _check_expand(step):
    import sympy as sp

    _require_equality(step)
    ok = all(sp.expand(e) == 0 for e in _entries(_difference(step)))
    return ok, "expand(lhs - rhs) = 0" if ok else "expand(lhs - rhs) is not 0"


def _check_rewrite_j(step):
    import sympy as sp

    _require_equality(step)
    I, J, n = _ij_symbols(step)
    a1, b1 = reduce_ij(step.lhs, n, I, J)
    a2, b2 = reduce_ij(step.rhs, n, I, J)
    ok = _vanishes(a1 - a2) and _vanishes(b1 - b2)
    detail = f"both sides reduce to {sp.sstr(a1)}*I + ({sp.sstr(b1)})*J modulo J^2 = nJ"
    if not ok:
        detail = (
            f"lhs reduces to {sp.sstr(a1)}*I + ({sp.sstr(b1)})*J, rhs to "
            f"{sp.sstr(a2)}*I + ({sp.sstr(b2)})*J modulo J^2 = nJ"
        )
    return ok, detail


def _check_trace(step):
    _require_equality(step)
    I, J, n = _ij_symbols(step)
    a, b = reduce_ij(step.lhs, n, I, J)
    value = a * n + b * n
    ok = _vanishes(value - step.rhs)
    return ok, f"tr = {value} by linearity with tr I = tr J = n" if ok else f"trace is {value}, not {step.rhs}"


def _check_apply_one(step):
    _require_equality(step)
    I, J, n = _ij_symbols(step)
    a, b = reduce_ij(step.lhs, n, I, J)
    value = a + b * n
    ok = _vanishes(value - step.rhs)
    return ok, f"(alpha I + beta J) 1 = (alpha + n beta) 1 = ({value}) 1" if ok else f"gives ({value}) 1"


def _check_apply_perp(step):
    _require_equality(step)
    I, J, n = _ij_symbols(step)
    a, _ = reduce_ij(step.lhs, n, I, J)
    ok = _vanishes(a - step.rhs)
    return ok, f"(alpha I + beta J) v = alpha v = ({a}) v since J v = 1 (1^T v) = 0" if ok else f"gives ({a}) v"


def _check_sums(step):
    _require_equality(step)
    diff = _difference(step)
    ok = all(_vanishes(normalize_sums(e)) for e in _entries(diff))
    return ok, (
        "sums expanded by linearity; lhs - rhs = 0" if ok else "lhs - rhs does not vanish after expanding the sums"
    )


def _check_squares(step):
    import sympy as sp

    _require_equality(step)
    for side, name in ((step.lhs, "lhs"), (step.rhs, "rhs")):
        if sp.sympify(side).is_nonnegative is not True:
            return False, f"{name} is not known to be nonnegative"
    ok = _vanishes(sp.sympify(step.lhs) ** 2 - sp.sympify(step.rhs) ** 2)
    return ok, "both sides nonnegative and lhs^2 - rhs^2 = 0" if ok else "the squares differ"


def _check_sign(step):
    import sympy as sp

    lhs, rhs = sp.sympify(step.lhs), sp.sympify(step.rhs)
    rel = step.relation
    if rel in ("<", "<="):
        gap = rhs - lhs
    elif rel in (">", ">="):
        gap = lhs - rhs
    else:
        raise ValueError(f"sign check needs <, <=, > or >=, not {rel!r}")
    candidates = [gap, sp.factor(sp.cancel(sp.together(gap)))]
    for g in candidates:
        verdict = g.is_positive if rel in ("<", ">") else g.is_nonnegative
        if verdict is True:
            return True, f"the gap {sp.sstr(g)} is {'positive' if rel in '<>' else 'nonnegative'} under the assumptions"
    return False, f"the sign of the gap {sp.sstr(candidates[-1])} is not determined as claimed"


def _check_eigen(step):
    import sympy as sp

    _require_equality(step)
    lam = sp.Symbol("lambda_charpoly")
    matrix = sp.Matrix(step.lhs)
    if sum(step.rhs.values()) != matrix.shape[0]:
        return False, "multiplicities do not add up to the size of the matrix"
    char = matrix.charpoly(lam).as_expr()
    target = sp.Mul(*[(lam - sp.sympify(v)) ** int(k) for v, k in step.rhs.items()])
    ok = sp.expand(char - target) == 0
    return ok, (
        "characteristic polynomial equals prod (lambda - mu)^k"
        if ok
        else f"characteristic polynomial is {sp.factor(char)}"
    )


def _check_det(step):
    import sympy as sp

    _require_equality(step)
    from sympy.polys.matrices import DomainMatrix

    matrix = sp.Matrix(step.lhs)
    try:
        dm = DomainMatrix.from_Matrix(matrix)
        det = dm.domain.to_sympy(dm.det())
    except Exception:  # domains DomainMatrix cannot handle
        det = matrix.det(method="berkowitz")
    ok = _vanishes(det - step.rhs)
    return ok, "det(lhs) - rhs = 0" if ok else "det(lhs) differs from rhs"


def _check_solve(step):
    import sympy as sp

    _require_equality(step)
    symbol, domain = step.data[0], (step.data[1] if len(step.data) > 1 else sp.S.Reals)
    found = sp.solveset(step.lhs, symbol, domain)
    ok = found == step.rhs or (
        isinstance(found, sp.FiniteSet)
        and isinstance(step.rhs, sp.FiniteSet)
        and len(found) == len(step.rhs)
        and all(any(_vanishes(a - b) for b in step.rhs) for a in found)
    )
    return ok, f"solveset gives {sp.sstr(found)}"


def _check_roots(step):
    import sympy as sp

    lam = step.data[0]
    poly = sp.Poly(step.lhs, lam)
    if poly.degree() != len(step.rhs):
        return False, f"degree {poly.degree()} but {len(step.rhs)} intervals claimed"
    for lo, hi in step.rhs:
        if lo == hi:
            simple = poly.eval(lo) == 0 and poly.diff().eval(lo) != 0
            count = 1 if simple else 0
        else:
            count = poly.count_roots(lo, hi)
        if count != 1:
            return False, f"{count} simple roots in [{lo}, {hi}]"
    total = poly.count_roots()
    if total != len(step.rhs):
        return False, f"{total} real roots in all, {len(step.rhs)} intervals claimed"
    return True, "exactly one root in each interval and degree = number of intervals (Sturm sequences, exact)"


def _check_limit(step):
    import sympy as sp

    _require_equality(step)
    symbol, point = step.data[0], step.data[1]
    direction = step.data[2] if len(step.data) > 2 else "+-"
    found = sp.limit(step.lhs, symbol, point, direction)
    ok = found == step.rhs or (found.is_finite and _vanishes(found - step.rhs))
    return ok, f"limit is {sp.sstr(found)}"


def _check_derivative(step):
    _require_equality(step)
    symbol = step.data[0]
    derived = step.lhs.diff(symbol)
    ok = _vanishes(normalize_sums(derived - step.rhs))
    return ok, f"d/d{symbol} of the function equals the claim" if ok else "the derivative differs"


#: method name -> checker(step) -> (checked, detail)
METHODS: dict = {
    "simplify-to-zero": _check_simplify,
    "expand": _check_expand,
    "rewrite J^2 = nJ": _check_rewrite_j,
    "trace (tr I = n, tr J = n)": _check_trace,
    "apply to 1 (J 1 = n 1)": _check_apply_one,
    "apply to v orthogonal to 1 (J v = 0)": _check_apply_perp,
    "finite sums and Kronecker deltas": _check_sums,
    "compare squares (both sides nonnegative)": _check_squares,
    "sign under assumptions": _check_sign,
    "eigen (characteristic polynomial)": _check_eigen,
    "determinant lemma": _check_det,
    "solve": _check_solve,
    "root isolation (Sturm)": _check_roots,
    "limit": _check_limit,
    "derivative": _check_derivative,
}


def check_step(step) -> tuple:
    """``(checked, detail)`` for one step; an unknown method or an exception fails the step."""
    checker = METHODS.get(step.method)
    if checker is None:
        return False, f"unknown method {step.method!r}"
    try:
        ok, detail = checker(step.evaluated())
    except Exception as exc:  # a malformed claim fails, it never passes
        return False, f"checker raised {type(exc).__name__}: {exc}"
    return bool(ok), detail
