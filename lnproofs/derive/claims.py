"""How a checked claim reads: the notation of the proofs, printed from the SymPy objects checked.

A step's claim is shown exactly as the checker sees it, before its ``where`` bindings are
substituted: named quantities (``\\bar{x}``, ``y_t``) stay names.  :func:`latex` is SymPy's
LaTeX printer with the notation a mathematician writes: an undefined function of indices is
an entry (``P(i, j)`` prints ``P_{ij}``), and a sum or a long numerator over a short
denominator is written ``\\tfrac{1}{n} \\sum_j x_j`` instead of a fraction of a sum.
:func:`claim` writes a whole claim in that notation (or as plain text), with the special
forms of the methods that read a claim through a linear map (trace, applying to
``\\mathbf{1}``, ...).
"""

from __future__ import annotations

__all__ = ["latex", "claim", "used_bindings", "RELATION_LATEX"]

#: symbols that stand for matrices: printed after the scalars that multiply them
_MATRICES = ("I", "J", "P", "A", "M", "N")

RELATION_LATEX = {"=": "=", "<": "<", ">": ">", "<=": r"\le", ">=": r"\ge"}

_PRINTER = None


def _printer():
    """The one LaTeX printer of the proofs (built on first use: SymPy is imported lazily)."""
    global _PRINTER
    if _PRINTER is None:
        _PRINTER = _make_printer()
    return _PRINTER


def _make_printer():
    import sympy as sp
    from sympy.core.function import AppliedUndef
    from sympy.printing.latex import LatexPrinter

    def simple(expr) -> bool:
        return expr.is_Symbol or expr.is_Integer or (expr.is_Pow and expr.base.is_Symbol and expr.exp.is_Integer)

    class Printer(LatexPrinter):
        def _print_Function(self, expr, exp=None):
            if isinstance(expr, AppliedUndef):
                base = self._print(sp.Symbol(type(expr).__name__))
                args = expr.args
                index = all(a.is_Symbol and a.is_integer for a in args) or (
                    len(args) > 1 and all(a.is_Integer or (a.is_Symbol and a.is_integer) for a in args)
                )
                if index:  # an entry: P(i, j) is P_{ij}
                    entry = f"{base}_{{{''.join(self._print(a) for a in args)}}}"
                else:  # a function value: f(\lambda)
                    entry = f"{base}({', '.join(self._print(a) for a in args)})"
                return entry if exp is None else f"{entry}^{{{exp}}}"
            return super()._print_Function(expr, exp)

        def _as_ordered_terms(self, expr, order=None):
            terms = list(super()._as_ordered_terms(expr, order))
            if terms and terms[0].could_extract_minus_sign():  # a positive term first: x_i - \bar{x}
                first = next((t for t in terms if not t.could_extract_minus_sign()), None)
                if first is not None:
                    terms.remove(first)
                    terms.insert(0, first)
            bias = [t for t in terms if _is_bias(t)]
            if bias and len(bias) < len(terms) and not terms[-1].is_Number:  # bias terms last: a_i y_i + b_i
                terms = [t for t in terms if t not in bias] + bias
            return terms

        def _print_Indexed(self, expr):
            label = str(expr.base.label)
            if "_" in label and len(expr.indices) == 1:  # entry t of k_i is k_{it}
                head, sub = label.split("_", 1)
                return f"{head}_{{{sub}{self._print(expr.indices[0])}}}"
            indices = [self._print(index) for index in expr.indices]
            if len(indices) > 1 and all(len(index) == 1 for index in indices):  # d_{jt}
                return f"{self._print(expr.base)}_{{{''.join(indices)}}}"
            return super()._print_Indexed(expr)

        def _print_Identity(self, expr):
            return "" if expr.shape == (1, 1) else "I"  # a 1 x 1 identity is the number 1: a factor not shown

        def _print_Sum(self, expr):
            # indices run over 1..n (the setting says so): the sum is written with its index only
            ((index, low, high),) = expr.limits if len(expr.limits) == 1 else ((None, None, None),)
            if index is None or low != 1 or not (high.is_Symbol and high.name == "n"):
                return super()._print_Sum(expr)
            term = self._print(expr.function)
            if expr.function.is_Add:
                term = rf"\left({term}\right)"
            return rf"\sum\nolimits_{{{self._print(index)}}} {term}"

        def _print_Mul(self, expr):
            if expr.as_coeff_Mul()[0].is_negative:
                inner = self._print(-expr)
                return "- " + (rf"\left({inner}\right)" if (-expr).is_Add else inner)
            num, den = sp.fraction(expr, exact=True)
            if den != 1 and simple(den) and num != 1 and (num.has(sp.Sum) or len(self._print(num)) > 24):
                coeff, rest = num.as_coeff_Mul()
                if not (coeff.is_Rational and coeff > 0):
                    coeff, rest = sp.Integer(1), num
                inner = self._print(rest)
                if rest.is_Add:
                    inner = rf"\left({inner}\right)"
                return rf"\tfrac{{{coeff.p}}}{{{self._print(coeff.q * den)}}} {inner}"
            if den != 1 and not expr.could_extract_minus_sign() and num.is_Mul:
                return rf"\frac{{{self._print(num)}}}{{{self._print(den)}}}"
            if den == 1 and not expr.could_extract_minus_sign():
                factors = expr.as_ordered_factors()
                matrices = [f for f in factors if f.is_Symbol and f.name in _MATRICES]
                if matrices and len(matrices) < len(factors):  # scalars before matrices: c^2 P
                    rest = [f for f in factors if f not in matrices]
                    return " ".join([self._print(sp.Mul(*rest))] + [self._print(m) for m in matrices])
                groups = [f for f in factors if f.is_Add or (f.is_Pow and f.base.is_Add)]
                if groups and len(groups) < len(factors):  # scalars before parentheses: a_i (x_i - \bar{x})
                    rest = [f for f in factors if f not in groups]
                    return " ".join(
                        [self._print(sp.Mul(*rest))]
                        + [self._print(g) if not g.is_Add else rf"\left({self._print(g)}\right)" for g in groups]
                    )
            return super()._print_Mul(expr)

    def _is_bias(term) -> bool:
        if term.is_Mul and len(term.args) == 2 and term.args[0] == -1:
            term = term.args[1]
        if isinstance(term, sp.Indexed):
            return str(term.base) == "b"
        return term.is_Symbol and term.name in ("b_i", "b_j")

    return Printer({"mul_symbol": None})


def latex(expr) -> str:
    """``expr`` in the proofs' notation."""
    return _printer().doprint(expr)


def used_bindings(step) -> list:
    """The ``where`` pairs the claim mentions (directly or through another shown binding)."""
    import sympy as sp

    def mentions(expr, sym):
        return isinstance(expr, sp.Basic) and expr.has(sym)

    used = []
    for sym, val in step.where:
        if mentions(step.lhs, sym) or mentions(step.rhs, sym) or any(mentions(v, sym) for _, v in used):
            used.append((sym, val))
    return [pair for pair in step.where if pair in used]


def _binding(sym, val, as_latex: bool) -> str:
    import sympy as sp

    if isinstance(val, sp.MatrixBase) and len(val) > 16:
        size = f"{val.shape[0]} x {val.shape[1]}"
        return rf"{latex(sym)} \text{{ explicit ({size})}}" if as_latex else f"{sp.sstr(sym)} explicit ({size})"
    if isinstance(val, sp.Lambda):
        entry = val.expr
        head = sym(*val.variables) if callable(sym) else sym
        return f"{latex(head)} = {latex(entry)}" if as_latex else f"{sp.sstr(head)} = {sp.sstr(entry)}"
    if as_latex:
        return f"{latex(sym)} = {latex(val)}"
    return f"{sp.sstr(sym)} = {sp.sstr(val.tolist() if isinstance(val, sp.MatrixBase) else val)}"


def binding_latex(sym, val) -> str:
    """One named quantity, ``sym = value``, in the proofs' notation."""
    return _binding(sym, val, True)


def claim(step, as_latex: bool, hidden=()) -> str:
    """The claim of ``step``; ``where`` bindings it mentions follow it, except those in ``hidden``
    (the theorem's named quantities, said once before the proof)."""
    text = body(step, as_latex)
    shown = [(sym, val) for sym, val in used_bindings(step) if sym not in hidden]
    if not shown:
        return text
    parts = [_binding(sym, val, as_latex) for sym, val in shown]
    if as_latex:
        return text + r"\quad\text{where } " + r",\ ".join(parts)
    return text + "  where " + ", ".join(parts)


def side(step, which: str, as_latex: bool = True) -> str:
    """One side of an ordinary claim (``"lhs"`` or ``"rhs"``)."""
    import sympy as sp

    value = getattr(step, which)
    return latex(value) if as_latex else sp.sstr(value)


def body(step, as_latex: bool) -> str:
    """The claim without its bindings."""
    import sympy as sp

    show = latex if as_latex else sp.sstr
    rel = RELATION_LATEX.get(step.relation, step.relation) if as_latex else step.relation
    m = step.method
    lhs, rhs = step.lhs, step.rhs
    operator = show(lhs) if getattr(lhs, "is_Symbol", False) else rf"\left({show(lhs)}\right)"
    if m == "trace (tr I = n, tr J = n)":
        return (
            rf"\operatorname{{tr}} {operator} {rel} {show(rhs)}" if as_latex else f"tr({show(lhs)}) {rel} {show(rhs)}"
        )
    if m == "apply to 1 (J 1 = n 1)":
        image = _times(show(rhs), r"\mathbf{1}" if as_latex else "1", rhs)
        return rf"{operator}\mathbf{{1}} {rel} {image}" if as_latex else f"({show(lhs)}) 1 {rel} {image}"
    if m == "apply to v orthogonal to 1 (J v = 0)":
        image = _times(show(rhs), "v", rhs)
        return (
            rf"{operator} v {rel} {image} \quad (\mathbf{{1}}^T v = 0)"
            if as_latex
            else f"({show(lhs)}) v {rel} {image}  for 1^T v = 0"
        )
    if m == "eigen (characteristic polynomial)":
        spec = ", ".join(f"{show(k)}" + (rf"\ (\times {v})" if as_latex else f" (x{v})") for k, v in rhs.items())
        return (
            rf"\operatorname{{spec}}\left({show(lhs)}\right) = \{{ {spec} \}}"
            if as_latex
            else f"spectrum({show(lhs)}) = {{{spec}}}"
        )
    if m == "determinant lemma":
        return rf"\det {show(lhs)} = {show(rhs)}" if as_latex else f"det({show(lhs)}) = {show(rhs)}"
    if m == "solve":
        sym = step.data[0]
        cond = show(lhs) if isinstance(lhs, sp.core.relational.Relational) else f"{show(lhs)} = 0"
        return rf"\{{ {show(sym)} : {cond} \}} = {show(rhs)}" if as_latex else f"{{{show(sym)} : {cond}}} = {show(rhs)}"
    if m == "derivative":
        sym = step.data[0]
        return (
            rf"\frac{{d}}{{d{show(sym)}}}\left({show(lhs)}\right) = {show(rhs)}"
            if as_latex
            else f"d/d{show(sym)} ({show(lhs)}) = {show(rhs)}"
        )
    if m == "limit":
        sym, point = step.data[0], step.data[1]
        where_to = step.data[2] if len(step.data) > 2 else ""
        side_tex = {"+": "^+", "-": "^-"}.get(where_to, "")
        return (
            rf"\lim_{{{show(sym)} \to {show(point)}{side_tex}}} {show(lhs)} = {show(rhs)}"
            if as_latex
            else f"limit of {show(lhs)} as {show(sym)} -> {show(point)}{where_to} = {show(rhs)}"
        )
    if m == "root isolation (Sturm)":
        ivs = ", ".join(f"[{show(a)}, {show(b)}]" for a, b in rhs)
        return (
            rf"\text{{real roots of }} {show(lhs)}: \text{{one in each of }} {ivs}"
            if as_latex
            else f"real roots of {show(lhs)}: exactly one in each of {ivs}"
        )
    return f"{show(lhs)} {rel} {show(rhs)}"


def _times(scalar: str, vector: str, value) -> str:
    """``scalar`` times ``vector``: ``0`` for zero, the vector alone for one."""
    if value == 0:
        return "0"
    if value == 1:
        return vector
    if not any(op in scalar for op in ("+", "-")):
        return rf"{scalar}\,{vector}"
    return rf"{scalar}\,{vector}" if len(scalar) < 4 else rf"\left({scalar}\right){vector}"
