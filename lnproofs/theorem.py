"""Theorems whose every proof step is checked by SymPy.

A :class:`Theorem` is data: a statement in words and in LaTeX, named hypotheses, a
tuple of :class:`Step` objects and a tuple of conclusion steps (the statement itself as
SymPy claims).  Each step carries its claim as SymPy expressions (``lhs``, ``relation``,
``rhs``) and the name of the *method* that checks it.  :meth:`Theorem.prove` runs the
checker of every step and of every conclusion and returns a :class:`ProofResult`; no
step is ever taken on trust.  A theorem with a wrong step or a wrong statement (flip a
sign, drop a factor with :func:`dataclasses.replace`) fails its proof.

The checkers live in :data:`METHODS` (method name -> function).  They are small on
purpose:

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
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Callable

__all__ = [
    "Hypothesis",
    "Step",
    "Theorem",
    "StepResult",
    "ProofResult",
    "METHODS",
    "check_step",
    "normalize_sums",
    "reduce_ij",
    "mutate_step",
    "dumps",
    "general_symbols",
]


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Hypothesis:
    """A named assumption of a theorem, in words and in LaTeX."""

    name: str
    text: str
    latex: str = ""

    def __post_init__(self):
        if not self.latex:  # every hypothesis has a LaTeX form; plain text becomes \text{...}
            object.__setattr__(self, "latex", r"\text{" + _tex_escape(self.text) + "}")

    @property
    def has_formula(self) -> bool:
        return not self.latex.startswith(r"\text{")

    def to_json(self) -> dict:
        return {"name": self.name, "text": self.text, "latex": self.latex}


@dataclass(frozen=True)
class Step:
    """One claim ``lhs relation rhs`` and the method that checks it.

    ``lhs`` and ``rhs`` are SymPy expressions or matrices (for some methods a dict or a
    tuple, see :data:`METHODS`).  ``data`` holds extra SymPy objects a method needs
    (the symbol of an equation, a domain, ...).  ``where`` holds ``(symbol, value)`` pairs
    substituted only when the step is checked (``P`` standing for an explicit matrix, ``alpha``
    for a weight): the claim is shown as written and evaluated by the checker.
    """

    description: str
    lhs: Any
    rhs: Any
    method: str = "simplify-to-zero"
    relation: str = "="
    data: tuple = ()
    where: tuple = ()

    def __post_init__(self):
        # store matrices and dicts immutably, so that a Step (and a Theorem) is hashable data
        for name in ("lhs", "rhs"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))
        object.__setattr__(self, "where", tuple((sym, _frozen(val)) for sym, val in self.where))

    def evaluated(self) -> "Step":
        """This step with its ``where`` bindings substituted and evaluated."""
        if not self.where:
            return self
        return dataclasses.replace(self, lhs=_substitute(self.lhs, self.where), rhs=_substitute(self.rhs, self.where),
                                   data=tuple(_substitute(d, self.where) for d in self.data), where=())

    def claim_text(self) -> str:
        return _claim(self, latex=False)

    def claim_latex(self) -> str:
        return _claim(self, latex=True)


def _substitute(value, where):
    import sympy as sp

    if not isinstance(value, sp.Basic):
        return value
    out = value
    for sym, val in where:  # in order: later bindings may use earlier symbols
        out = out.xreplace({sym: val}) if isinstance(sym, sp.MatrixSymbol) else out.subs(sym, val)
    out = out.doit() if hasattr(out, "doit") else out
    if isinstance(out, sp.MatrixExpr) and not isinstance(out, sp.MatrixBase):
        out = out.as_explicit()
    return out


def _frozen(value):
    if isinstance(value, dict):
        import sympy as sp

        return sp.Dict(value)
    if type(value).__name__ in ("MutableDenseMatrix", "MutableSparseMatrix"):
        return value.as_immutable()
    return value


@dataclass(frozen=True)
class StepResult:
    """What the checker said about one step."""

    index: int
    kind: str  # "step" or "conclusion"
    description: str
    method: str
    claim: str
    claim_latex: str
    checked: bool
    detail: str

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def _scope(n) -> str:
    return "general n" if n is None else f"n = {n}"


@dataclass(frozen=True)
class ProofResult:
    """The outcome of :meth:`Theorem.prove`: ``status`` is ``"proved"`` or ``"failed"``."""

    name: str
    title: str
    statement: str
    statement_latex: str
    status: str
    steps: tuple
    n: int | None = None
    convention: str | None = None
    hypotheses: tuple = ()

    @property
    def proved(self) -> bool:
        return self.status == "proved"

    @property
    def failed_steps(self) -> tuple:
        return tuple(s for s in self.steps if not s.checked)

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "statement": self.statement,
            "status": self.status,
            "steps": [s.to_json() for s in self.steps],
            "title": self.title,
            "statement_latex": self.statement_latex,
            "n": self.n,
            "scope": _scope(self.n),
            "convention": self.convention,
            "hypotheses": [h.to_json() for h in self.hypotheses],
        }

    @classmethod
    def from_json(cls, data: dict) -> "ProofResult":
        steps = tuple(StepResult(**s) for s in data["steps"])
        hyps = tuple(Hypothesis(**h) for h in data.get("hypotheses", ()))
        return cls(name=data["name"], title=data.get("title", ""), statement=data["statement"],
                   statement_latex=data.get("statement_latex", ""), status=data["status"], steps=steps,
                   n=data.get("n"), convention=data.get("convention"), hypotheses=hyps)

    def to_markdown(self) -> str:
        mark = "proved" if self.proved else "FAILED"
        lines = [f"### `{self.name}`: {self.title} ({_scope(self.n)}{_conv(self.convention)}) - **{mark}**", "",
                 f"**Statement.** {self.statement}", "", f"$$ {self.statement_latex} $$", ""]
        lines += _hyp_markdown(self.hypotheses)
        lines += ["**Proof.**", ""]
        for s in self.steps:
            tick = "checked by SymPy" if s.checked else f"NOT checked: {s.detail}"
            label = "Conclusion" if s.kind == "conclusion" else "Step"
            lines += [f"{s.index}. *{label}.* {s.description} ({s.method}; {tick})", "",
                      f"   $$ {s.claim_latex} $$", ""]
        return "\n".join(lines)

    def to_latex(self) -> str:
        mark = "proved" if self.proved else "FAILED"
        out = [f"\\paragraph{{{_tex_escape(self.name)}: {_tex_escape(self.title)} "
               f"({_tex_escape(_scope(self.n))}{_tex_escape(_conv(self.convention))}) --- {mark}.}}",
               f"{_tex_escape(self.statement)}", f"\\[ {self.statement_latex} \\]"]
        out += _hyp_latex(self.hypotheses)
        out.append("\\begin{enumerate}")
        for s in self.steps:
            tick = "checked by SymPy" if s.checked else "NOT checked: " + _tex_escape(s.detail)
            label = "Conclusion" if s.kind == "conclusion" else "Step"
            out.append(f"\\item \\emph{{{label}.}} {_tex_escape(s.description)} "
                       f"({_tex_escape(s.method)}; {tick}) \\[ {s.claim_latex} \\]")
        out.append("\\end{enumerate}")
        return "\n".join(out)

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def _repr_latex_(self) -> str:
        label = _tex_escape(f"{self.name}: {self.status}")
        return "$$ \\text{" + label + "} \\quad " + self.statement_latex + " $$"


@dataclass(frozen=True)
class Theorem:
    """A statement, its hypotheses, and the steps that prove it (see module docstring)."""

    name: str
    title: str
    statement: str
    statement_latex: str
    hypotheses: tuple = ()
    steps: tuple = ()
    conclusion: tuple = ()
    n: int | None = None
    convention: str | None = None

    def to_json(self) -> dict:
        """The theorem as data (claims as text and LaTeX); :meth:`prove` gives the checked version."""
        steps = [{"index": k, "kind": "conclusion" if k > len(self.steps) else "step", "description": s.description,
                  "method": s.method, "claim": _safe(s.claim_text), "claim_latex": _safe(s.claim_latex)}
                 for k, s in enumerate(self.steps + self.conclusion, start=1)]
        return {"name": self.name, "title": self.title, "statement": self.statement,
                "statement_latex": self.statement_latex, "hypotheses": [h.to_json() for h in self.hypotheses],
                "steps": steps, "n": self.n, "scope": _scope(self.n), "convention": self.convention}

    def prove(self) -> ProofResult:
        results = []
        for kind, group in (("step", self.steps), ("conclusion", self.conclusion)):
            for step in group:
                ok, detail = check_step(step)
                results.append(StepResult(len(results) + 1, kind, step.description, step.method,
                                          _safe(step.claim_text), _safe(step.claim_latex), ok, detail))
        proved = bool(self.steps) and bool(self.conclusion) and all(r.checked for r in results)
        return ProofResult(self.name, self.title, self.statement, self.statement_latex,
                           "proved" if proved else "failed", tuple(results), self.n, self.convention,
                           tuple(self.hypotheses))

    def to_markdown(self) -> str:
        lines = [f"### `{self.name}`: {self.title} ({_scope(self.n)}{_conv(self.convention)})", "",
                 f"**Statement.** {self.statement}", "", f"$$ {self.statement_latex} $$", ""]
        lines += _hyp_markdown(self.hypotheses)
        lines += ["**Proof** (each step is checked by SymPy when the theorem is proved).", ""]
        for k, step in enumerate(self.steps + self.conclusion, start=1):
            label = "Conclusion" if k > len(self.steps) else "Step"
            lines += [f"{k}. *{label}.* {step.description} ({step.method})", "",
                      f"   $$ {_safe(step.claim_latex)} $$", ""]
        return "\n".join(lines)

    def to_latex(self) -> str:
        out = [f"\\paragraph{{{_tex_escape(self.name)}: {_tex_escape(self.title)} "
               f"({_tex_escape(_scope(self.n))}{_tex_escape(_conv(self.convention))}).}}",
               _tex_escape(self.statement), f"\\[ {self.statement_latex} \\]"]
        out += _hyp_latex(self.hypotheses)
        out.append("\\begin{enumerate}")
        for k, step in enumerate(self.steps + self.conclusion, start=1):
            label = "Conclusion" if k > len(self.steps) else "Step"
            out.append(f"\\item \\emph{{{label}.}} {_tex_escape(step.description)} "
                       f"({_tex_escape(step.method)}) \\[ {_safe(step.claim_latex)} \\]")
        out.append("\\end{enumerate}")
        return "\n".join(out)

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def _repr_latex_(self) -> str:
        return "$$ " + self.statement_latex + " $$"

    def with_step(self, index: int, **changes) -> "Theorem":
        """A copy with step ``index`` (0-based over steps then conclusion) changed."""
        return mutate_step(self, index, **changes)


def mutate_step(theorem: Theorem, index: int, **changes) -> Theorem:
    """A copy of ``theorem`` whose step ``index`` (steps first, then conclusion) has ``changes``."""
    steps = list(theorem.steps)
    concl = list(theorem.conclusion)
    if index < len(steps):
        steps[index] = dataclasses.replace(steps[index], **changes)
    else:
        k = index - len(steps)
        concl[k] = dataclasses.replace(concl[k], **changes)
    return dataclasses.replace(theorem, steps=tuple(steps), conclusion=tuple(concl))


def _conv(convention) -> str:
    return "" if convention is None else f", convention {convention!r}"


def _hyp_markdown(hyps) -> list:
    if not hyps:
        return []
    lines = ["**Hypotheses.**", ""]
    for h in hyps:
        math = f" ${h.latex.strip()}$" if h.has_formula else ""
        lines.append(f"- *{h.name}*: {h.text}{math}")
    return lines + [""]


def _hyp_latex(hyps) -> list:
    if not hyps:
        return []
    out = ["Hypotheses:", "\\begin{itemize}"]
    for h in hyps:
        math = f" $ {h.latex} $" if h.has_formula else ""
        out.append(f"\\item \\emph{{{_tex_escape(h.name)}}}: {_tex_escape(h.text)}{math}")
    return out + ["\\end{itemize}"]


def _tex_escape(text: str) -> str:
    table = {"\\": r"\textbackslash{}", "_": r"\_", "%": r"\%", "&": r"\&", "#": r"\#", "$": r"\$",
             "{": r"\{", "}": r"\}", "^": r"\^{}", "~": r"\~{}"}
    return "".join(table.get(ch, ch) for ch in str(text))


def _safe(fn: Callable[[], str]) -> str:
    try:
        return fn()
    except Exception as exc:  # rendering must never hide a result
        return f"<unrenderable claim: {type(exc).__name__}>"


# ------------------------------------------------------------------ claim display

_RELATION_LATEX = {"=": "=", "<": "<", ">": ">", "<=": r"\le", ">=": r"\ge"}


def _claim(step: Step, latex: bool) -> str:
    text = _claim_body(step, latex)
    if not step.where:
        return text
    parts = [_binding(sym, val, latex) for sym, val in _used_bindings(step)]
    if latex:
        return text + r"\quad\text{where } " + r",\ ".join(parts)
    return text + "  where " + ", ".join(parts)


def _used_bindings(step: Step) -> list:
    """The ``where`` pairs the claim mentions (directly or through another shown binding)."""
    import sympy as sp

    def mentions(expr, sym):
        return isinstance(expr, sp.Basic) and expr.has(sym)

    used = []
    for sym, val in step.where:
        if mentions(step.lhs, sym) or mentions(step.rhs, sym) or any(mentions(v, sym) for _, v in used):
            used.append((sym, val))
    return [pair for pair in step.where if pair in used]


def _binding(sym, val, latex: bool) -> str:
    import sympy as sp

    if isinstance(val, sp.MatrixBase) and len(val) > 16:
        size = f"{val.shape[0]} x {val.shape[1]}"
        return (rf"{sp.latex(sym)} \text{{ explicit ({size})}}" if latex else f"{sp.sstr(sym)} explicit ({size})")
    if latex:
        return f"{sp.latex(sym)} = {sp.latex(val)}"
    return f"{sp.sstr(sym)} = {sp.sstr(val.tolist() if isinstance(val, sp.MatrixBase) else val)}"


def _claim_body(step: Step, latex: bool) -> str:
    import sympy as sp

    show = sp.latex if latex else sp.sstr
    rel = _RELATION_LATEX.get(step.relation, step.relation) if latex else step.relation
    m = step.method
    lhs, rhs = step.lhs, step.rhs
    if m == "trace (tr I = n, tr J = n)":
        return (rf"\operatorname{{tr}}\left({show(lhs)}\right) {rel} {show(rhs)}" if latex
                else f"tr({show(lhs)}) {rel} {show(rhs)}")
    if m == "apply to 1 (J 1 = n 1)":
        return (rf"\left({show(lhs)}\right)\mathbf{{1}} {rel} {show(rhs)}\,\mathbf{{1}}" if latex
                else f"({show(lhs)}) 1 {rel} ({show(rhs)}) 1")
    if m == "apply to v orthogonal to 1 (J v = 0)":
        return (rf"\left({show(lhs)}\right) v {rel} {show(rhs)}\, v \quad (\mathbf{{1}}^T v = 0)" if latex
                else f"({show(lhs)}) v {rel} ({show(rhs)}) v  for 1^T v = 0")
    if m == "eigen (characteristic polynomial)":
        spec = ", ".join(f"{show(k)}" + (rf"\ (\times {v})" if latex else f" (x{v})") for k, v in rhs.items())
        return (rf"\operatorname{{spec}}\left({show(lhs)}\right) = \{{ {spec} \}}" if latex
                else f"spectrum({show(lhs)}) = {{{spec}}}")
    if m == "determinant lemma":
        return (rf"\det {show(lhs)} = {show(rhs)}" if latex else f"det({show(lhs)}) = {show(rhs)}")
    if m == "solve":
        sym = step.data[0]
        cond = show(lhs) if isinstance(lhs, sp.core.relational.Relational) else f"{show(lhs)} = 0"
        return (rf"\{{ {show(sym)} : {cond} \}} = {show(rhs)}" if latex
                else f"{{{show(sym)} : {cond}}} = {show(rhs)}")
    if m == "derivative":
        sym = step.data[0]
        return (rf"\frac{{d}}{{d{show(sym)}}}\left({show(lhs)}\right) = {show(rhs)}" if latex
                else f"d/d{show(sym)} ({show(lhs)}) = {show(rhs)}")
    if m == "limit":
        sym, point = step.data[0], step.data[1]
        side = step.data[2] if len(step.data) > 2 else ""
        side_tex = {"+": "^+", "-": "^-"}.get(side, "")
        return (rf"\lim_{{{show(sym)} \to {show(point)}{side_tex}}} {show(lhs)} = {show(rhs)}" if latex
                else f"limit of {show(lhs)} as {show(sym)} -> {show(point)}{side} = {show(rhs)}")
    if m == "root isolation (Sturm)":
        ivs = ", ".join(f"[{show(a)}, {show(b)}]" for a, b in rhs)
        return (rf"\text{{real roots of }} {show(lhs)}: \text{{one in each of }} {ivs}" if latex
                else f"real roots of {show(lhs)}: exactly one in each of {ivs}")
    return f"{show(lhs)} {rel} {show(rhs)}"


# ------------------------------------------------------------------------ checkers


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
        if radical and sp.expand(sp.radsimp(e)) == 0:
            continue
        e = sp.cancel(sp.together(e))
        if e == 0:
            continue
        if sp.count_ops(e) <= budget and sp.simplify(e) == 0:
            continue
        return False
    return True


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


def _difference(step: Step):
    import sympy as sp

    lhs, rhs = step.lhs, step.rhs
    if isinstance(lhs, sp.MatrixBase) or isinstance(rhs, sp.MatrixBase):
        lhs, rhs = sp.Matrix(lhs), sp.Matrix(rhs)
        if lhs.shape != rhs.shape:
            raise ValueError(f"shapes differ: {lhs.shape} and {rhs.shape}")
    return lhs - rhs


def _require_equality(step: Step):
    if step.relation != "=":
        raise ValueError(f"method {step.method!r} checks equalities, not {step.relation!r}")


def _check_simplify(step: Step):
    _require_equality(step)
    ok = _vanishes(_difference(step))
    return ok, "lhs - rhs simplifies to 0" if ok else "lhs - rhs does not simplify to 0"


def _check_expand(step: Step):
    import sympy as sp

    _require_equality(step)
    ok = all(sp.expand(e) == 0 for e in _entries(_difference(step)))
    return ok, "expand(lhs - rhs) = 0" if ok else "expand(lhs - rhs) is not 0"


def _ij_symbols(step: Step):
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


def _check_rewrite_j(step: Step):
    import sympy as sp

    _require_equality(step)
    I, J, n = _ij_symbols(step)
    a1, b1 = reduce_ij(step.lhs, n, I, J)
    a2, b2 = reduce_ij(step.rhs, n, I, J)
    ok = _vanishes(a1 - a2) and _vanishes(b1 - b2)
    detail = f"both sides reduce to {sp.sstr(a1)}*I + ({sp.sstr(b1)})*J modulo J^2 = nJ"
    if not ok:
        detail = (f"lhs reduces to {sp.sstr(a1)}*I + ({sp.sstr(b1)})*J, rhs to "
                  f"{sp.sstr(a2)}*I + ({sp.sstr(b2)})*J modulo J^2 = nJ")
    return ok, detail


def _check_trace(step: Step):
    _require_equality(step)
    I, J, n = _ij_symbols(step)
    a, b = reduce_ij(step.lhs, n, I, J)
    value = a * n + b * n
    ok = _vanishes(value - step.rhs)
    return ok, f"tr = {value} by linearity with tr I = tr J = n" if ok else f"trace is {value}, not {step.rhs}"


def _check_apply_one(step: Step):
    _require_equality(step)
    I, J, n = _ij_symbols(step)
    a, b = reduce_ij(step.lhs, n, I, J)
    value = a + b * n
    ok = _vanishes(value - step.rhs)
    return ok, f"(alpha I + beta J) 1 = (alpha + n beta) 1 = ({value}) 1" if ok else f"gives ({value}) 1"


def _check_apply_perp(step: Step):
    _require_equality(step)
    I, J, n = _ij_symbols(step)
    a, _ = reduce_ij(step.lhs, n, I, J)
    ok = _vanishes(a - step.rhs)
    return ok, f"(alpha I + beta J) v = alpha v = ({a}) v since J v = 1 (1^T v) = 0" if ok else f"gives ({a}) v"


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
        delta = next((f for f in dep if isinstance(f, sp.KroneckerDelta) and (k in f.args)
                      and any(a != k for a in f.args)), None)
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


def _check_sums(step: Step):
    _require_equality(step)
    diff = _difference(step)
    ok = all(_vanishes(normalize_sums(e)) for e in _entries(diff))
    return ok, ("sums expanded by linearity; lhs - rhs = 0" if ok
                else "lhs - rhs does not vanish after expanding the sums")


def _check_squares(step: Step):
    import sympy as sp

    _require_equality(step)
    for side, name in ((step.lhs, "lhs"), (step.rhs, "rhs")):
        if sp.sympify(side).is_nonnegative is not True:
            return False, f"{name} is not known to be nonnegative"
    ok = _vanishes(sp.sympify(step.lhs) ** 2 - sp.sympify(step.rhs) ** 2)
    return ok, "both sides nonnegative and lhs^2 - rhs^2 = 0" if ok else "the squares differ"


def _check_sign(step: Step):
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


def _check_eigen(step: Step):
    import sympy as sp

    _require_equality(step)
    lam = sp.Symbol("lambda_charpoly")
    matrix = sp.Matrix(step.lhs)
    if sum(step.rhs.values()) != matrix.shape[0]:
        return False, "multiplicities do not add up to the size of the matrix"
    char = matrix.charpoly(lam).as_expr()
    target = sp.Mul(*[(lam - sp.sympify(v)) ** int(k) for v, k in step.rhs.items()])
    ok = sp.expand(char - target) == 0
    return ok, ("characteristic polynomial equals prod (lambda - mu)^k" if ok
                else f"characteristic polynomial is {sp.factor(char)}")


def _check_det(step: Step):
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


def _check_solve(step: Step):
    import sympy as sp

    _require_equality(step)
    symbol, domain = step.data[0], (step.data[1] if len(step.data) > 1 else sp.S.Reals)
    found = sp.solveset(step.lhs, symbol, domain)
    ok = found == step.rhs or (isinstance(found, sp.FiniteSet) and isinstance(step.rhs, sp.FiniteSet)
                               and len(found) == len(step.rhs)
                               and all(any(_vanishes(a - b) for b in step.rhs) for a in found))
    return ok, f"solveset gives {sp.sstr(found)}"


def _check_roots(step: Step):
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


def _check_limit(step: Step):
    import sympy as sp

    _require_equality(step)
    symbol, point = step.data[0], step.data[1]
    direction = step.data[2] if len(step.data) > 2 else "+-"
    found = sp.limit(step.lhs, symbol, point, direction)
    ok = found == step.rhs or (found.is_finite and _vanishes(found - step.rhs))
    return ok, f"limit is {sp.sstr(found)}"


def _check_derivative(step: Step):
    _require_equality(step)
    symbol = step.data[0]
    derived = step.lhs.diff(symbol)
    ok = _vanishes(normalize_sums(derived - step.rhs))
    return ok, "d/d{} of the function equals the claim".format(symbol) if ok else "the derivative differs"


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


def check_step(step: Step) -> tuple:
    """``(checked, detail)`` for one step; an unknown method or an exception fails the step."""
    checker = METHODS.get(step.method)
    if checker is None:
        return False, f"unknown method {step.method!r}"
    try:
        ok, detail = checker(step.evaluated())
    except Exception as exc:  # a malformed claim fails, it never passes
        return False, f"checker raised {type(exc).__name__}: {exc}"
    return bool(ok), detail


def dumps(results) -> str:
    """JSON text for a list of proof results."""
    return json.dumps({"theorems": [r.to_json() for r in results]}, indent=2)


def general_symbols() -> dict:
    """The SymPy symbols shared by the theorem modules (fresh objects; SymPy caches by name).

    ``n`` is a positive integer (the width), ``i, j, k`` indices, ``x, a, b, y, v`` indexed
    vectors, ``eps`` a positive epsilon, ``I`` and ``J`` the commuting identity and
    all-ones matrices of the ``J^2 = n J`` algebra.
    """
    import sympy as sp

    return {
        "n": sp.Symbol("n", positive=True, integer=True),
        "i": sp.Symbol("i", positive=True, integer=True),
        "j": sp.Symbol("j", positive=True, integer=True),
        "k": sp.Symbol("k", positive=True, integer=True),
        "x": sp.IndexedBase("x", real=True),
        "a": sp.IndexedBase("a", real=True),
        "b": sp.IndexedBase("b", real=True),
        "y": sp.IndexedBase("y", real=True),
        "v": sp.IndexedBase("v", real=True),
        "eps": sp.Symbol("epsilon", positive=True),
        "I": sp.Symbol("I"),
        "J": sp.Symbol("J"),
    }
