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

from . import claims, prose
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
    "chain",
]


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Hypothesis:
    """A named assumption of a theorem: ``text`` is prose with its mathematics in ``$...$``
    (see :mod:`lnproofs.derive.prose`), ``latex`` an optional display formula.  A hypothesis
    with a ``source`` (a key of the report's bibliography) is a classical fact the proof cites
    instead of checking it."""

    name: str
    text: str
    latex: str = ""
    source: str = ""

    def __post_init__(self):
        if not self.latex:  # every hypothesis has a LaTeX form; prose becomes \text{...}
            object.__setattr__(self, "latex", r"\text{" + prose.to_latex(self.text) + "}")

    @property
    def has_formula(self) -> bool:
        return not self.latex.startswith(r"\text{")

    @property
    def cited(self) -> bool:
        return bool(self.source)

    def to_json(self) -> dict:
        return {"name": self.name, "text": self.text, "latex": self.latex, "source": self.source}


@dataclass(frozen=True)
class Step:
    """One claim ``lhs relation rhs`` and the method that checks it.

    ``description`` is prose with its mathematics in ``$...$`` (:mod:`lnproofs.derive.prose`):
    the sentence that leads into the step, or nothing.  ``why`` is the step's justification
    as a reader sees it at the right of the displayed relation ("$J^2 = nJ$", "expand",
    "projection.symmetric"); without it the method's own word is shown.  ``chained``: the
    claim continues the previous step's, whose right side is this one's left side (a chain
    ``a = b = c`` displays one relation per line).  ``bookkeeping``: a routine check (a sign the
    hypotheses give, a sum evaluated, a case another check covers), checked like every step and
    listed with its check in the blueprint, but not printed in the paper's proof.  ``lhs`` and ``rhs`` are SymPy expressions
    or matrices (for some methods a dict or a tuple, see :data:`METHODS`).  ``data`` holds
    extra SymPy objects a method needs (the symbol of an equation, a domain, ...).  ``where``
    holds ``(symbol, value)`` pairs substituted only when the step is checked (``P`` standing
    for an explicit matrix, ``alpha`` for a weight): the claim is shown as written and
    evaluated by the checker.
    """

    description: str
    lhs: Any
    rhs: Any
    method: str = "simplify-to-zero"
    relation: str = "="
    data: tuple = ()
    where: tuple = ()
    why: str = ""
    chained: bool = False
    bookkeeping: bool = False

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
        return claims.claim(self, False)

    def claim_latex(self, hidden=()) -> str:
        return claims.claim(self, True, hidden)


def chain(start, *links, description: str = "") -> tuple:
    """Steps of a chain ``start rel_1 e_1 rel_2 e_2 ...``: each link is ``(e, method, why)`` or
    ``(e, method, why, relation)``, or a dict of :class:`Step` fields with ``rhs``; each step
    claims the previous expression ``rel`` the next and is checked on its own."""
    steps, left = [], start
    for k, link in enumerate(links):
        fields = dict(link) if isinstance(link, dict) else dict(zip(("rhs", "method", "why", "relation"), link))
        steps.append(
            Step(description if k == 0 else "", left, chained=k > 0, **{"method": "simplify-to-zero", **fields})
        )
        left = fields["rhs"]
    return tuple(steps)


def _substitute(value, where):
    import sympy as sp

    if not isinstance(value, sp.Basic):
        return value
    out = value
    for sym, val in where:  # in order: a binding's value may use symbols bound after it
        if isinstance(sym, sp.MatrixSymbol):
            out = out.xreplace({sym: val})
        elif isinstance(val, sp.Lambda):  # an entry P(i, j) bound to its formula, inside sums too
            out = out.replace(sym, val)
        else:
            out = out.subs(sym, val)
    if hasattr(out, "doit") and not out.has(sp.Sum):  # sums stay for their own checker to expand
        out = out.doit()
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
    """What the checker said about one step: the claim as shown (``claim``, ``claim_latex``;
    ``lhs_latex``, ``relation``, ``rhs_latex`` for an ordinary relation), the expressions the
    checker compared (``checked_claim``, every named quantity substituted) and its verdict;
    ``bookkeeping`` for a routine check the paper does not print (see :class:`Step`)."""

    index: int
    kind: str  # "step" or "conclusion"
    description: str
    method: str
    claim: str
    claim_latex: str
    checked: bool
    detail: str
    why: str = ""
    chained: bool = False
    lhs_latex: str = ""
    relation: str = "="
    rhs_latex: str = ""
    checked_claim: str = ""
    bookkeeping: bool = False

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def _scope(n) -> str:
    return "general n" if n is None else f"n = {n}"


@dataclass(frozen=True)
class ProofResult:
    """The outcome of :meth:`Theorem.prove`: ``status`` is ``"proved"`` or ``"failed"``.
    ``definitions`` are the named quantities of the proof as LaTeX (``\bar{x} = ...``);
    ``uses`` the results and definitions the theorem names as its dependencies."""

    name: str
    title: str
    statement: str
    statement_latex: str
    status: str
    steps: tuple
    n: int | None = None
    convention: str | None = None
    hypotheses: tuple = ()
    definitions: tuple = ()
    uses: tuple = ()

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
            "definitions": list(self.definitions),
            "uses": list(self.uses),
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
            definitions=tuple(data.get("definitions", ())),
            uses=tuple(data.get("uses", ())),
        )

    def to_markdown(self) -> str:
        from .theorem_text import result_markdown

        return result_markdown(self)

    def to_latex(self) -> str:
        from .theorem_text import result_latex

        return result_latex(self)

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def _repr_latex_(self) -> str:
        label = prose.escape_text(f"{self.name}: {self.status}")
        return "$$ \\text{" + label + "} \\quad " + self.statement_latex + " $$"


@dataclass(frozen=True)
class Theorem:
    """A statement, its hypotheses, and the steps that prove it (see module docstring).

    ``definitions`` are ``(symbol, value)`` pairs naming the proof's quantities (the mean
    ``\bar{x}``, an entry ``P(i, j)`` bound to a ``Lambda``): every step shows the names and is
    checked with them substituted (they are added to each step's ``where``).  ``uses`` names
    the results (``projection.symmetric``) and definitions (``def:layernorm``) the theorem
    rests on, beyond those its words cite."""

    name: str
    title: str
    statement: str
    statement_latex: str
    hypotheses: tuple = ()
    steps: tuple = ()
    conclusion: tuple = ()
    n: int | None = None
    convention: str | None = None
    definitions: tuple = ()
    uses: tuple = ()

    def __post_init__(self):
        if self.definitions:
            for field in ("steps", "conclusion"):
                object.__setattr__(self, field, tuple(self._defined(s) for s in getattr(self, field)))

    def _defined(self, step: Step) -> Step:
        """``step`` with the named quantities it mentions (directly or through another) bound."""
        import sympy as sp

        exprs = [step.lhs, step.rhs, *step.data, *(value for _, value in step.where)]
        named = set(self.defined_symbols)
        overridden = {sym for sym, _ in step.where if sym in named}
        used = []
        for sym, value in reversed(self.definitions):  # a later definition may use an earlier one
            if sym not in overridden and any(isinstance(e, (sp.Basic, sp.MatrixBase)) and e.has(sym) for e in exprs):
                used.append((sym, value))
                exprs.append(value)
        if not used:
            return step

        # a binding of a named quantity (W = 1) replaces its definition and comes first, as does one whose
        # value uses names (t = p / V); the names are expanded next, and a binding of a free symbol to a
        # value without names (m = m* + s) last, inside the expanded names
        def early(pair) -> bool:  # binds a name, or to a value written with names: before the names expand
            sym, value = pair
            return sym in named or (isinstance(value, sp.Basic) and any(value.has(name) for name in named))

        first = tuple(pair for pair in step.where if early(pair))
        last = tuple(pair for pair in step.where if not early(pair))
        return dataclasses.replace(step, where=first + tuple(used) + last)

    @property
    def defined_symbols(self) -> tuple:
        return tuple(sym for sym, _ in self.definitions)

    def _shown(self, step: Step) -> str:
        return _safe(lambda: step.claim_latex(self.defined_symbols))

    def to_json(self) -> dict:
        """The theorem as data (claims as text and LaTeX); :meth:`prove` gives the checked version."""
        steps = [
            {
                "index": k,
                "kind": "conclusion" if k > len(self.steps) else "step",
                "description": s.description,
                "method": s.method,
                "why": s.why,
                "bookkeeping": s.bookkeeping,
                "claim": _safe(s.claim_text),
                "claim_latex": self._shown(s),
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
                results.append(self._result(len(results) + 1, kind, step, ok, detail))
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
            tuple(_safe(lambda s=s, v=v: claims.binding_latex(s, v)) for s, v in self.definitions),
            tuple(self.uses),
        )

    def _result(self, index: int, kind: str, step: Step, ok: bool, detail: str) -> StepResult:
        hidden = set(self.defined_symbols)
        own = [pair for pair in claims.used_bindings(step) if pair[0] not in hidden]
        plain = step.method in _PLAIN_METHODS and not own
        return StepResult(
            index,
            kind,
            step.description,
            step.method,
            _safe(step.claim_text),
            self._shown(step),
            ok,
            detail,
            step.why,
            step.chained,
            _safe(lambda: claims.side(step, "lhs")) if plain else "",
            step.relation,
            _safe(lambda: claims.side(step, "rhs")) if plain else "",
            _safe(lambda: step.evaluated().claim_text()),
            step.bookkeeping,
        )

    def to_markdown(self) -> str:
        from .theorem_text import theorem_markdown

        return theorem_markdown(self)

    def to_latex(self) -> str:
        from .theorem_text import theorem_latex

        return theorem_latex(self)

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def _repr_latex_(self) -> str:
        return "$$ " + self.statement_latex + " $$"

    def with_step(self, index: int, **changes) -> Theorem:
        """A copy with step ``index`` (0-based over steps then conclusion) changed."""
        return mutate_step(self, index, **changes)


#: the methods whose claim is an ordinary relation ``lhs rel rhs`` (the others read it through a map)
_PLAIN_METHODS = (
    "simplify-to-zero",
    "expand",
    "rewrite J^2 = nJ",
    "finite sums and Kronecker deltas",
    "compare squares (both sides nonnegative)",
    "sign under assumptions",
)


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


def method_prose(method: str) -> str:
    """The checking method's name as prose with inline mathematics."""
    from .theorem_text import method_prose as prose_of

    return prose_of(method)


def _safe(fn: Callable[[], str]) -> str:
    try:
        return fn()
    except Exception as exc:  # rendering must never hide a result
        return f"<unrenderable claim: {type(exc).__name__}>"


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
