"""Every symbol a printed proof uses is defined where it is first used: in the setting, the
statement, the hypotheses, the named quantities ("Write ..."), or the words that lead into the
step; and every symbol of a claim is what the checker compares."""

from __future__ import annotations

import re

import pytest
import sympy as sp
from sympy.core.function import AppliedUndef

from lnproofs.derive import claims
from lnproofs.derive.registry import all_theorems
from lnproofs.report import frame

_GENERAL = [t for t in all_theorems() + all_theorems(convention="std") if t.n is None]
_THEOREMS = list({(t.name, t.convention): t for t in _GENERAL}.values())


def _normal(text: str) -> str:
    return re.sub(r"[{}\s]|\\[,;:! ]", "", text)


def _names(step) -> set[str]:
    """The printed names of the symbols, vectors, entries and matrices a step's claim shows."""
    exprs = [step.lhs, step.rhs, *(value for _, value in step.where)]
    bound = {sym for sym, _ in step.where}
    if step.method in ("solve", "limit", "derivative") and step.data:
        bound.add(step.data[0])
    out = set()
    for e in exprs:
        if not isinstance(e, (sp.Basic, sp.MatrixBase)):
            continue
        for sym in e.free_symbols:
            if isinstance(sym, sp.Indexed) or sym in bound:
                continue
            if isinstance(sym, sp.IndexedBase):
                out.add(str(sym.label))
            elif isinstance(sym, sp.MatrixSymbol):
                out.add(sym.name)
            elif isinstance(sym, sp.Symbol):
                out.add(claims.latex(sym))
        for f in e.atoms(AppliedUndef):
            out.add(type(f).__name__)
        for m in e.atoms(sp.MatrixSymbol):
            if m not in bound:
                out.add(m.name)
    return out


def _value_names(theorem) -> set[str]:
    """The names the values of the named quantities use (step 0: the "Write ..." line)."""
    from types import SimpleNamespace

    out = set()
    for sym, value in theorem.definitions:
        body = value.expr if isinstance(value, sp.Lambda) else value
        bound = set(value.variables) if isinstance(value, sp.Lambda) else set()
        fake = SimpleNamespace(lhs=body, rhs=sp.Integer(0), where=tuple((v, v) for v in bound), method="", data=())
        out |= _names(fake) - {claims.latex(v) for v in bound}
    return out


def _mentioned(name: str, context: str) -> bool:
    token = _normal(claims.latex(sp.Symbol(name)) if re.fullmatch(r"[A-Za-z]+(_\w+)?", name) else name)
    if re.fullmatch(r"[A-Za-z]", token) or re.fullmatch(r"\\[A-Za-z]+", token):
        return re.search(r"(?<![A-Za-z\\])" + re.escape(token) + r"(?![A-Za-z])", context) is not None
    return token in context or _normal(name) in context


def _setting() -> str:
    from types import SimpleNamespace

    return " ".join(text for _, _, text in frame.definitions(SimpleNamespace(convention="torch")))


def undefined_symbols(theorem) -> list[tuple[int, str]]:
    """(step number, name) for each symbol a step shows before anything has defined it."""
    base = [_setting(), theorem.title, theorem.statement, theorem.statement_latex]
    base += [h.text + " " + h.latex for h in theorem.hypotheses]
    written = [claims.binding_latex(sym, value) for sym, value in theorem.definitions]
    base += [w.split(" = ", 1)[0] + " =" for w in written]  # a named quantity defines its name, not its value's
    missing = [
        (0, name) for name in sorted(_value_names(theorem)) if not _mentioned(name, "|".join(map(_normal, base)))
    ]
    words = []
    for k, step in enumerate(theorem.steps + theorem.conclusion, start=1):
        words += [step.description, step.why, step.claim_latex(theorem.defined_symbols)]
        context = "|".join(_normal(text) for text in base + words[:-1] + [w for w in words[-1:] if "where" in w])
        for name in sorted(_names(step)):
            if name.startswith("lambda_charpoly") or _mentioned(name, context):
                continue
            missing.append((k, name))
    return missing


@pytest.mark.parametrize("theorem", _THEOREMS, ids=lambda t: f"{t.name}[{t.convention}]")
def test_every_symbol_of_a_proof_is_defined_before_use(theorem):
    assert undefined_symbols(theorem) == []


def test_an_undefined_symbol_is_found():
    import dataclasses

    theorem = next(t for t in _THEOREMS if t.name == "sphere.radius")
    stranger = sp.Symbol("zeta", positive=True)
    step = dataclasses.replace(theorem.steps[0], rhs=theorem.steps[0].rhs * stranger / stranger + stranger - stranger)
    assert undefined_symbols(theorem) == []
    bad = dataclasses.replace(theorem, steps=(dataclasses.replace(step, rhs=sp.sqrt(stranger)),) + theorem.steps[1:])
    assert (1, r"\zeta") in undefined_symbols(bad)
