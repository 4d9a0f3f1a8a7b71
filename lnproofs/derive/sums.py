"""Symbolic sums, Kronecker deltas and the algebra of I and J = 1 1^T, in canonical form.

Proof steps that reason about ``sum_k`` over a symbolic range or about polynomials in
``I`` and ``J`` compare both sides after these normalisations (see :mod:`.steps`).
"""

from __future__ import annotations

__all__ = ["normalize_sums", "reduce_ij"]


def _ij_symbols(step):
    import sympy as sp

    n = step.data[0] if step.data else sp.Symbol("n", positive=True, integer=True)
    return sp.Symbol("I", commutative=True), sp.Symbol("J", commutative=True), n


def reduce_ij(expr, n, I=None, J=None):
    """``(alpha, beta)`` with ``expr = alpha I + beta J`` after ``J^2 = n J`` and ``I X = X``.

    ``I`` and ``J = 1 1^T`` commute, so polynomials in them form a commutative algebra;
    reduction modulo ``J^2 - n J`` gives the normal form ``alpha I + beta J``.
    """
    import sympy as sp

    I = I if I is not None else sp.Symbol("I")
    J = J if J is not None else sp.Symbol("J")
    e = sp.expand(sp.sympify(expr).subs(I, 1))
    poly = sp.Poly(e, J)
    rem = poly.rem(sp.Poly(J**2 - n * J, J))
    coeffs = rem.all_coeffs()
    while len(coeffs) < 2:
        coeffs.insert(0, sp.Integer(0))
    beta, alpha = coeffs
    return sp.cancel(alpha), sp.cancel(beta)


def normalize_sums(expr):
    """Expand finite sums by linearity and apply Kronecker deltas.

    Every ``Sum(f, (k, lo, hi))`` is split into its monomials; factors free of ``k`` are
    pulled out; ``sum_k c = c (hi - lo + 1)``; a factor ``KroneckerDelta(i, k)`` with
    ``i`` another index substitutes ``k = i`` (the hypothesis ``lo <= i <= hi`` is part of
    every theorem that uses this rewrite).  Outside sums, ``KroneckerDelta(i, j) f(j)``
    becomes ``KroneckerDelta(i, j) f(i)`` so that equal expressions get equal forms.
    """
    import sympy as sp

    expr = sp.sympify(expr)
    expr = expr.replace(lambda e: isinstance(e, sp.Sum), _expand_sum)
    expr = sp.expand(expr)
    return _canonical_dummies(_canonical_deltas(expr))


def _canonical_dummies(expr):
    """Rename the summation index of every innermost sum to one fixed symbol."""
    import sympy as sp

    def rename(s):
        if len(s.limits) != 1 or s.function.has(sp.Sum) or s.has(sp.Symbol("k_double_0", integer=True, positive=True)):
            return s
        k, lo, hi = s.limits[0]
        fixed = _sum_index()
        if k == fixed:
            return s
        return sp.Sum(s.function.subs(k, fixed), (fixed, lo, hi))

    return expr.replace(lambda e: isinstance(e, sp.Sum), rename)


def _sum_index():
    import sympy as sp

    return sp.Symbol("k_summation", integer=True, positive=True)


def _expand_sum(s):
    import sympy as sp

    body = normalize_sums(s.function)
    limits = s.limits
    if len(limits) == 2 and limits[0][0].name.startswith("k_double_"):
        return s
    if len(limits) != 1:
        inner = sp.Sum(body, *limits[:-1])
        return _expand_sum(sp.Sum(_expand_sum(inner), limits[-1]))
    k, lo, hi = limits[0]
    total = sp.Integer(0)
    for term in sp.Add.make_args(sp.expand(body)):
        const, dep = [], []
        for factor in sp.Mul.make_args(term):
            (dep if factor.has(k) else const).append(factor)
        c = sp.Mul(*const)
        inner = [f for f in dep if isinstance(f, sp.Sum) and len(f.limits) == 1]
        if len(inner) == 1 and not any(isinstance(f, sp.KroneckerDelta) for f in dep):
            # sum_k f(k) sum_j g(j, k) = sum over (j, k) of f(k) g(j, k): a finite double sum
            rest = sp.Mul(*[f for f in dep if f is not inner[0]])
            total += c * _double_sum(rest * inner[0].function, inner[0].limits[0], (k, lo, hi))
            continue
        delta = next(
            (f for f in dep if isinstance(f, sp.KroneckerDelta) and (k in f.args) and any(a != k for a in f.args)), None
        )
        if delta is not None:
            other = delta.args[0] if delta.args[1] == k else delta.args[1]
            rest = sp.Mul(*[f for f in dep if f is not delta])
            total += c * rest.subs(k, other)
        elif not dep:
            total += c * (hi - lo + 1)
        else:
            total += c * sp.Sum(sp.Mul(*dep), (k, lo, hi))
    return total


def _double_sum(body, first, second):
    """A canonical double sum: limits ordered by their ranges, indices renamed."""
    import sympy as sp

    limits = sorted([first, second], key=lambda lim: (sp.default_sort_key(lim[1]), sp.default_sort_key(lim[2])))
    names = [sp.Symbol(f"k_double_{t}", integer=True, positive=True) for t in range(2)]
    body = body.subs({limits[0][0]: names[0], limits[1][0]: names[1]}, simultaneous=True)
    out = sp.Integer(0)
    for term in sp.Add.make_args(sp.expand(body)):
        out += sp.Sum(term, (names[0], limits[0][1], limits[0][2]), (names[1], limits[1][1], limits[1][2]))
    return out


def _canonical_deltas(expr):
    import sympy as sp

    out = sp.Integer(0)
    for term in sp.Add.make_args(expr):
        deltas = [f for f in sp.Mul.make_args(term) if isinstance(f, sp.KroneckerDelta)]
        for d in deltas:
            a, b = sorted(d.args, key=sp.default_sort_key)
            if a != b and not a.is_number and not b.is_number:
                rest = sp.Mul(*[f for f in sp.Mul.make_args(term) if f is not d])
                term = d * rest.subs(b, a)
                break
        out += term
    return sp.expand(out)
