"""Theorems whose every proof step is checked by SymPy.

A :class:`Theorem` is data: a statement in words and in LaTeX, named hypotheses, a
tuple of :class:`Step` objects and a tuple of conclusion steps (the statement itself as
SymPy claims).  Each step carries its claim as SymPy expressions (``lhs``, ``relation``,
``rhs``) and the name of the *method* that checks it (see :mod:`lnproofs.derive.steps`).
:meth:`Theorem.prove` runs the checker of every step and of every conclusion and
returns a :class:`ProofResult`; no step is ever taken on trust.  A theorem with a wrong
step or a wrong statement (flip a sign, drop a factor with :meth:`Theorem.with_step` or
:func:`dataclasses.replace`) fails its proof.  Theorems and results render as Markdown
(``$...$`` and ``$$...$$``) and LaTeX, and results travel as JSON.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import prose
from .steps import METHODS, check_step
from .sums import normalize_sums, reduce_ij

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
    "method_prose",
]


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Hypothesis:
    """A named assumption of a theorem: ``text`` is prose with its mathematics in ``$...$``
    (see :mod:`lnproofs.derive.prose`), ``latex`` an optional display formula."""

    name: str
    text: str
    latex: str = ""

    def __post_init__(self):
        if not self.latex:  # every hypothesis has a LaTeX form; prose becomes \text{...}
            object.__setattr__(self, "latex", r"\text{" + prose.to_latex(self.text) + "}")

    @property
    def has_formula(self) -> bool:
        return not self.latex.startswith(r"\text{")

    def to_json(self) -> dict:
        return {"name": self.name, "text": self.text, "latex": self.latex}


@dataclass(frozen=True)
class Step:
    """One claim ``lhs relation rhs`` and the method that checks it.

    ``description`` is prose with its mathematics in ``$...$`` (:mod:`lnproofs.derive.prose`).
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

    def evaluated(self) -> Step:
        """This step with its ``where`` bindings substituted and evaluated."""
        if not self.where:
            return self
        return dataclasses.replace(
            self,
            lhs=_substitute(self.lhs, self.where),
            rhs=_substitute(self.rhs, self.where),
            data=tuple(_substitute(d, self.where) for d in self.data),
            where=(),
        )

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
    def from_json(cls, data: dict) -> ProofResult:
        steps = tuple(StepResult(**s) for s in data["steps"])
        hyps = tuple(Hypothesis(**h) for h in data.get("hypotheses", ()))
        return cls(
            name=data["name"],
            title=data.get("title", ""),
            statement=data["statement"],
            statement_latex=data.get("statement_latex", ""),
            status=data["status"],
            steps=steps,
            n=data.get("n"),
            convention=data.get("convention"),
            hypotheses=hyps,
        )

    def to_markdown(self) -> str:
        mark = "proved" if self.proved else "FAILED"
        items = [
            (
                s.index,
                _label(s.kind),
                s.description,
                f"{method_prose(s.method)}; {_tick(s.checked, s.detail)}",
                s.claim_latex,
            )
            for s in self.steps
        ]
        return _markdown(
            f"`{self.name}`: {self.title} ({_scope(self.n)}{_conv(self.convention)}) - **{mark}**",
            self,
            "**Proof.**",
            items,
        )

    def to_latex(self) -> str:
        mark = "proved" if self.proved else "FAILED"
        items = [
            (
                _label(s.kind),
                prose.to_latex(s.description),
                f"{prose.to_latex(method_prose(s.method))}; {_tick(s.checked, _tex_escape(s.detail))}",
                s.claim_latex,
            )
            for s in self.steps
        ]
        return _latex(
            f"{_tex_escape(self.name)}: {prose.to_latex(self.title)} "
            f"({_tex_escape(_scope(self.n))}{_tex_escape(_conv(self.convention))}): {mark}.",
            self,
            items,
        )

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
        steps = [
            {
                "index": k,
                "kind": "conclusion" if k > len(self.steps) else "step",
                "description": s.description,
                "method": s.method,
                "claim": _safe(s.claim_text),
                "claim_latex": _safe(s.claim_latex),
            }
            for k, s in enumerate(self.steps + self.conclusion, start=1)
        ]
        return {
            "name": self.name,
            "title": self.title,
            "statement": self.statement,
            "statement_latex": self.statement_latex,
            "hypotheses": [h.to_json() for h in self.hypotheses],
            "steps": steps,
            "n": self.n,
            "scope": _scope(self.n),
            "convention": self.convention,
        }

    def prove(self) -> ProofResult:
        results = []
        for kind, group in (("step", self.steps), ("conclusion", self.conclusion)):
            for step in group:
                ok, detail = check_step(step)
                results.append(
                    StepResult(
                        len(results) + 1,
                        kind,
                        step.description,
                        step.method,
                        _safe(step.claim_text),
                        _safe(step.claim_latex),
                        ok,
                        detail,
                    )
                )
        proved = bool(self.steps) and bool(self.conclusion) and all(r.checked for r in results)
        return ProofResult(
            self.name,
            self.title,
            self.statement,
            self.statement_latex,
            "proved" if proved else "failed",
            tuple(results),
            self.n,
            self.convention,
            tuple(self.hypotheses),
        )

    def _numbered(self):
        return [
            (k, _label("conclusion" if k > len(self.steps) else "step"), step)
            for k, step in enumerate(self.steps + self.conclusion, start=1)
        ]

    def to_markdown(self) -> str:
        items = [
            (k, label, step.description, method_prose(step.method), _safe(step.claim_latex))
            for k, label, step in self._numbered()
        ]
        return _markdown(
            f"`{self.name}`: {self.title} ({_scope(self.n)}{_conv(self.convention)})",
            self,
            "**Proof** (each step is checked by SymPy when the theorem is proved).",
            items,
        )

    def to_latex(self) -> str:
        items = [
            (
                label,
                prose.to_latex(step.description),
                prose.to_latex(method_prose(step.method)),
                _safe(step.claim_latex),
            )
            for _, label, step in self._numbered()
        ]
        return _latex(
            f"{_tex_escape(self.name)}: {prose.to_latex(self.title)} "
            f"({_tex_escape(_scope(self.n))}{_tex_escape(_conv(self.convention))}).",
            self,
            items,
        )

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def _repr_latex_(self) -> str:
        return "$$ " + self.statement_latex + " $$"

    def with_step(self, index: int, **changes) -> Theorem:
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


def _label(kind: str) -> str:
    return "Conclusion" if kind == "conclusion" else "Step"


#: how the checking methods read in prose (their names are the keys of METHODS)
_METHOD_PROSE = {
    "rewrite J^2 = nJ": r"rewrite $J^2 = nJ$",
    "trace (tr I = n, tr J = n)": r"trace ($\operatorname{tr} I = n$, $\operatorname{tr} J = n$)",
    "apply to 1 (J 1 = n 1)": r"apply to $\mathbf{1}$ ($J\mathbf{1} = n\mathbf{1}$)",
    "apply to v orthogonal to 1 (J v = 0)": r"apply to $v \perp \mathbf{1}$ ($J v = 0$)",
}


def method_prose(method: str) -> str:
    """The checking method's name as prose with inline mathematics."""
    return _METHOD_PROSE.get(method, method)


def _tick(checked: bool, detail: str) -> str:
    return "checked by SymPy" if checked else f"NOT checked: {detail}"


def _markdown(heading: str, item, proof_title: str, steps) -> str:
    """One theorem or proof result in Markdown; ``steps`` are (number, label, description, note, LaTeX)."""
    lines = [f"### {heading}", "", f"**Statement.** {item.statement}", "", f"$$ {item.statement_latex} $$", ""]
    lines += _hyp_markdown(item.hypotheses)
    lines += [proof_title, ""]
    for number, label, description, note, claim in steps:
        lines += [f"{number}. *{label}.* {description} ({note})", "", f"   $$ {claim} $$", ""]
    return "\n".join(lines)


def _latex(heading: str, item, steps) -> str:
    """One theorem or proof result in LaTeX; ``steps`` are (label, description, note, LaTeX), escaped."""
    out = [f"\\paragraph{{{heading}}}", prose.to_latex(item.statement), f"\\[ {item.statement_latex} \\]"]
    out += _hyp_latex(item.hypotheses)
    out.append("\\begin{enumerate}")
    for label, description, note, claim in steps:
        out.append(f"\\item \\emph{{{label}.}} {description} ({note}) {_display(claim)}")
    out.append("\\end{enumerate}")
    return "\n".join(out)


def _display(claim: str) -> str:
    """A displayed claim; a long one (explicit matrices) shrunk to the line's width where the
    document loads graphicx (as the report does), shown as it is elsewhere."""
    if len(claim) < 160:
        return f"\\[ {claim} \\]"
    return (
        r"\[ \ifdefined\resizebox\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}"
        r"{$\displaystyle " + claim + r"$}\else " + claim + r" \fi \]"
    )


def _hyp_markdown(hyps) -> list:
    if not hyps:
        return []
    lines = ["**Hypotheses.**", ""]
    for h in hyps:
        math = f" (${h.latex.strip()}$)" if _formula_adds(h) else ""
        lines.append(f"- *{h.name}*: {h.text}{math}")
    return lines + [""]


def _formula_adds(h) -> bool:
    """Whether to show a hypothesis's formula beside its prose: only for prose without mathematics."""
    return h.has_formula and not prose.math_pieces(h.text)


def _hyp_latex(hyps) -> list:
    if not hyps:
        return []
    out = ["Hypotheses:", "\\begin{itemize}"]
    for h in hyps:
        math = f" (${h.latex.strip()}$)" if _formula_adds(h) else ""
        out.append(f"\\item \\emph{{{_tex_escape(h.name)}}}: {prose.to_latex(h.text)}{math}")
    return out + ["\\end{itemize}"]


def _tex_escape(text: str) -> str:
    return prose.escape_text(text)


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
        return rf"{sp.latex(sym)} \text{{ explicit ({size})}}" if latex else f"{sp.sstr(sym)} explicit ({size})"
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
        return (
            rf"\operatorname{{tr}}\left({show(lhs)}\right) {rel} {show(rhs)}"
            if latex
            else f"tr({show(lhs)}) {rel} {show(rhs)}"
        )
    if m == "apply to 1 (J 1 = n 1)":
        return (
            rf"\left({show(lhs)}\right)\mathbf{{1}} {rel} {show(rhs)}\,\mathbf{{1}}"
            if latex
            else f"({show(lhs)}) 1 {rel} ({show(rhs)}) 1"
        )
    if m == "apply to v orthogonal to 1 (J v = 0)":
        return (
            rf"\left({show(lhs)}\right) v {rel} {show(rhs)}\, v \quad (\mathbf{{1}}^T v = 0)"
            if latex
            else f"({show(lhs)}) v {rel} ({show(rhs)}) v  for 1^T v = 0"
        )
    if m == "eigen (characteristic polynomial)":
        spec = ", ".join(f"{show(k)}" + (rf"\ (\times {v})" if latex else f" (x{v})") for k, v in rhs.items())
        return (
            rf"\operatorname{{spec}}\left({show(lhs)}\right) = \{{ {spec} \}}"
            if latex
            else f"spectrum({show(lhs)}) = {{{spec}}}"
        )
    if m == "determinant lemma":
        return rf"\det {show(lhs)} = {show(rhs)}" if latex else f"det({show(lhs)}) = {show(rhs)}"
    if m == "solve":
        sym = step.data[0]
        cond = show(lhs) if isinstance(lhs, sp.core.relational.Relational) else f"{show(lhs)} = 0"
        return rf"\{{ {show(sym)} : {cond} \}} = {show(rhs)}" if latex else f"{{{show(sym)} : {cond}}} = {show(rhs)}"
    if m == "derivative":
        sym = step.data[0]
        return (
            rf"\frac{{d}}{{d{show(sym)}}}\left({show(lhs)}\right) = {show(rhs)}"
            if latex
            else f"d/d{show(sym)} ({show(lhs)}) = {show(rhs)}"
        )
    if m == "limit":
        sym, point = step.data[0], step.data[1]
        side = step.data[2] if len(step.data) > 2 else ""
        side_tex = {"+": "^+", "-": "^-"}.get(side, "")
        return (
            rf"\lim_{{{show(sym)} \to {show(point)}{side_tex}}} {show(lhs)} = {show(rhs)}"
            if latex
            else f"limit of {show(lhs)} as {show(sym)} -> {show(point)}{side} = {show(rhs)}"
        )
    if m == "root isolation (Sturm)":
        ivs = ", ".join(f"[{show(a)}, {show(b)}]" for a, b in rhs)
        return (
            rf"\text{{real roots of }} {show(lhs)}: \text{{one in each of }} {ivs}"
            if latex
            else f"real roots of {show(lhs)}: exactly one in each of {ivs}"
        )
    return f"{show(lhs)} {rel} {show(rhs)}"


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
