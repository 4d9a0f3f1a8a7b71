"""Theorems and their proofs as a paper prints them, from :class:`ProofResult` data.

Each theorem is stated once, for general $n$, in a numbered environment with a label; the
report's other columns say whether it was also proved for a concrete width.  Its proof is
the chain a mathematician writes: the named quantities first ("Write ..."), then one
displayed relation per checked step, a chain ``a = b = c`` continued line by line, with the
step's justification at the right.  A conclusion that repeats a displayed step is not
printed again, nor one that is the relation a displayed chain proves between its ends, nor a
bookkeeping step (a routine check: a sign the hypotheses give, a sum evaluated, a case another
check covers); each is still checked on its own, and the blueprint lists it with its check
(:func:`hidden_steps`).  Any other conclusion closes the proof ("Hence ...").  Every displayed
relation is one check; the report counts the relations shown and the checks not printed apart.
Code names of theorems appear only in the report's final index.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..derive import prose
from .formulas import LINE, break_side, split_formula, width

__all__ = [
    "SECTIONS",
    "TheoremEntry",
    "entries",
    "theorem_latex",
    "theorem_markdown",
    "justification",
    "clean_text",
    "split_formula",
    "label",
    "shown_steps",
    "hidden_steps",
    "closing_steps",
    "printed_definitions",
    "lead_in",
    "dependencies",
    "SHARED_HYPOTHESES",
]

#: the theorem modules as sections of the report: (module, heading, environment)
SECTIONS = (
    ("projection", "The centring projection", "lemma"),
    ("decomposition", "LayerNorm as projection, scaling and an affine map", "theorem"),
    ("sphere", "The sphere and the ball", "theorem"),
    ("ellipsoid", "The image of LayerNorm: an ellipsoid", "theorem"),
    ("rmsnorm", "RMSNorm and rotary embeddings", "theorem"),
    ("attention", "Attention: which keys a query can select", "theorem"),
    ("coverage", "Coverage of directions", "theorem"),
    ("vocab", "The output layer: which tokens can be output", "theorem"),
)
_MODULE_OF = {"rotary": "rmsnorm"}

#: hypotheses every general statement shares, stated once in the setting (the width and its
#: indices, the definition of a selectable key): the printed statements leave them out
SHARED_HYPOTHESES = ("width", "indices", "selectable", "ones")

#: the word at the right of a step that has no justification of its own
_JUSTIFY = {
    "finite sums and Kronecker deltas": "evaluate the sums",
    "sign under assumptions": "signs",
    "simplify-to-zero": "simplify",
    "expand": "expand",
    "compare squares (both sides nonnegative)": "square both sides",
    "solve": "solve",
    "rewrite J^2 = nJ": r"$J^2 = nJ$",
    "trace (tr I = n, tr J = n)": r"$\operatorname{tr} I = \operatorname{tr} J = n$",
    "apply to 1 (J 1 = n 1)": r"$J\mathbf{1} = n\mathbf{1}$",
    "apply to v orthogonal to 1 (J v = 0)": r"$J v = 0$",
    "limit": "limit",
    "derivative": "differentiate",
    "eigen (characteristic polynomial)": "characteristic polynomial",
    "determinant lemma": "determinant",
    "root isolation (Sturm)": "Sturm sequences",
}


def justification(step) -> str:
    """The words at the right of a displayed step (mathematics in $...$)."""
    if step.why:
        return step.why
    return _JUSTIFY.get(step.method, prose.escape_text(step.method))


def label(name: str) -> str:
    return "thm:" + name


@dataclass(frozen=True)
class TheoremEntry:
    """One theorem of the report: its general proof, its concrete instance, its section."""

    name: str
    section: str
    environment: str
    general: object  # ProofResult for general n
    instance: object  # ProofResult for the report's n, or None


def entries(proofs) -> list:
    """The report's theorems in order, grouped by section: the general-n result of each name
    with its concrete instance beside it (a name proved only for a concrete n is its own entry)."""
    from ..derive.registry import THEOREM_NAMES

    general = {p.name: p for p in proofs if p.n is None}
    concrete = {p.name: p for p in proofs if p.n is not None}
    order = {name: k for k, name in enumerate(THEOREM_NAMES)}  # the contract's order: no forward reference
    names = sorted(dict.fromkeys(p.name for p in proofs), key=lambda name: order.get(name, len(order)))
    out = []
    for module, _, env in SECTIONS:
        for name in names:
            if _MODULE_OF.get(name.split(".")[0], name.split(".")[0]) == module:
                out.append(
                    TheoremEntry(
                        name,
                        module,
                        env,
                        general.get(name) or concrete[name],
                        concrete.get(name) if name in general else None,
                    )
                )
    return out


def shown_steps(p) -> list:
    """The checks a proof displays, in order: every step that is not bookkeeping, then each
    conclusion that is neither the same claim as a displayed step nor the claim ``first = last``
    of a displayed chain (see :func:`closing_steps`).  Their number is the count of relations the
    proof shows.  A step that failed its check is always shown."""
    closing = {s.index for s in closing_steps(p)}
    seen, out = set(), []
    for s in p.steps:
        key = (s.claim_latex, s.method)
        if s.checked and (key in seen or s.index in closing or getattr(s, "bookkeeping", False)):
            continue
        seen.add(key)
        out.append(s)
    return out


def hidden_steps(p) -> list:
    """The checks a proof makes and the paper does not print, in order: bookkeeping steps, the
    statement a displayed chain proves, a conclusion that repeats a displayed step.  With
    :func:`shown_steps` they are every check of the proof."""
    shown = {s.index for s in shown_steps(p)}
    return [s for s in p.steps if s.index not in shown]


def _printed_order(p) -> dict:
    """For each step that is not bookkeeping, the index of the one before it (a chain continues
    across the routine checks between its links)."""
    out, previous = {}, None
    for s in p.steps:
        if getattr(s, "bookkeeping", False):
            continue
        out[s.index] = previous
        previous = s.index
    return out


#: the relation a chain ``a r_1 b r_2 c`` proves between its ends
_STRICT = {"<": "<", ">": ">", "<=": "<", ">=": ">"}


def _compose(first: str, second: str) -> str | None:
    if first == "=":
        return second
    if second == "=" or first == second:
        return first
    if {first, second} in ({"<", "<="}, {">", ">="}):
        return _STRICT[first]
    return None


def closing_steps(p) -> list:
    """The conclusions a displayed chain already shows: a conclusion ``a r c`` whose sides are the
    first and the last expression of a chain ``a r_1 b r_2 ... c`` of the steps, with ``r`` the
    relation the chain proves.  Each is still checked on its own (the chain's ends compared
    directly); the printed proof does not show it a second time.  A conclusion that failed its
    check is always shown."""
    chains, current, before = [], [], _printed_order(p)
    for s in p.steps:
        if s.kind != "step" or s.index not in before:
            continue
        if s.chained and current and current[-1].index == before[s.index] and s.lhs_latex:
            current.append(s)
        else:
            current = [s]
            chains.append(current)
    ends = {}
    for run in chains:
        if len(run) < 2 or not run[0].lhs_latex:
            continue
        relation = run[0].relation
        for s in run[1:]:
            relation = relation and _compose(relation, s.relation)
        if relation:
            ends[(run[0].lhs_latex, run[-1].rhs_latex)] = relation
    return [
        s
        for s in p.steps
        if s.kind == "conclusion" and s.checked and s.lhs_latex and ends.get((s.lhs_latex, s.rhs_latex)) == s.relation
    ]


#: the named quantities the setting (Definition 2.1) already defines: a proof does not repeat them
_SETTING = (r"\bar{x} = ", "P_{rc} = ", "J_{rc} = ", r"P = I - \frac{J}{n}")


def printed_definitions(p) -> list:
    """The named quantities a proof writes out ("Write ..."): its own, not those of the setting nor
    those its hypotheses already define."""
    said = re.sub(r"[{}]", "", " ".join([p.statement] + [h.text for h in p.hypotheses]))

    def defined(d: str) -> bool:
        lhs = re.sub(r"[{}]", "", d.split(" = ", 1)[0].strip())
        if re.search(re.escape(lhs) + r"\s*=", said):
            return True
        head = re.match(r"([A-Za-z]+)\(", lhs)  # R(a) when the hypotheses define R(\theta)
        if head and re.search(re.escape(head.group(1)) + r"\([^)]*\)\s*=", said):
            return True
        entry = re.fullmatch(r"(\\?[A-Za-z]+)_\w+", lhs)  # s_1 when the hypotheses define s_j
        return bool(entry) and re.search(re.escape(entry.group(1)) + r"_\w+\s*=", said) is not None

    return [d for d in p.definitions if not d.startswith(_SETTING) and not defined(d)]


# ------------------------------------------------------------------------ prose
_REF = re.compile(
    r"\(?\b(?:[Tt]heorem |[Ll]emma )?((?:projection|decomposition|sphere|ellipsoid|rmsnorm|rotary|attention|coverage|vocab)"
    r"\.[a-z_]+)\b\)?"
)


def lead_in(text: str) -> str:
    """The words before a displayed relation, ending in a colon unless they end in punctuation."""
    text = text.rstrip()
    return text if text.endswith((":", ",", ".", ";")) else text + ":"


def clean_text(text: str, names, ref) -> str:
    """Prose without code: theorem names become references (``ref(name)``), the conventions
    are named in words."""

    def sub(m):
        target = _resolve(m.group(1), names)
        if target is None:
            return ""
        inner = ref(target)
        whole = m.group(0)
        return f"({inner})" if whole.startswith("(") and whole.endswith(")") else inner

    text = _REF.sub(sub, text)
    text = text.replace("'torch'", "PyTorch").replace("'std'", "standard-deviation")
    text = text.replace("(torch)", "(PyTorch convention)").replace("(std)", "(standard-deviation convention)")
    return re.sub(r"\s+\)", ")", re.sub(r"\(\s*\)", "", text)).strip()


def _resolve(name: str, names):
    if name in names:
        return name
    found = [n for n in names if n.startswith(name)]
    return found[0] if found else None


def dependencies(p, names) -> list[str]:
    """The results ``p`` rests on: those it names in ``uses`` and those its words cite."""
    found = [u for u in p.uses if u in names or u.startswith("def:")]
    texts = [p.title, p.statement] + [h.text for h in p.hypotheses] + [s.description for s in p.steps]
    texts += [s.why for s in p.steps]
    for text in texts:
        for m in _REF.finditer(text or ""):
            target = _resolve(m.group(1), names)
            if target and target != p.name:
                found.append(target)
    return list(dict.fromkeys(found))


# ---------------------------------------------------------------------- LaTeX
def _refs(names):
    targets = []

    def ref(target):  # a mark that escaping the prose leaves alone, made a \ref at the end
        targets.append(target)
        return f"\x00{len(targets) - 1}\x00"

    def resolve(text: str) -> str:
        return re.sub(
            "\x00([0-9]+)\x00",
            lambda m: rf"{_kind(targets[int(m.group(1))])}~\ref{{{label(targets[int(m.group(1))])}}}",
            text,
        )

    return ref, resolve


def _kind(name: str) -> str:
    return "Lemma" if name.startswith("projection.") else "Theorem"


def _printed_hypotheses(p) -> list:
    return [h for h in p.hypotheses if not (p.n is None and h.name in SHARED_HYPOTHESES)]


def theorem_latex(entry: TheoremEntry, names) -> str:
    """The theorem environment and its proof."""
    p = entry.general
    ref, resolve = _refs(names)
    env = entry.environment
    title = prose.to_latex(clean_text(p.title, names, ref))
    out = [rf"\begin{{{env}}}[{title}]\label{{{label(p.name)}}}"]
    hyps = _printed_hypotheses(p)
    assumed = [h for h in hyps if not h.cited]
    if assumed:
        out.append(
            "Suppose " + "; ".join(prose.to_latex(_lower(clean_text(h.text, names, ref))) for h in assumed) + "."
        )
    out.append(prose.to_latex(clean_text(p.statement, names, ref)))
    out.append(rf"\end{{{env}}}")
    out += _proof_latex(p, names, ref)
    return resolve("\n".join(out))


def _lower(text: str) -> str:
    return text[0].lower() + text[1:] if re.match(r"[A-Z][a-z]", text) else text


def _tag(text: str) -> str:
    return rf"\tag*{{\small {text}}}"


def _step_rows(s, first_of_chain: bool, why: str) -> list[str]:
    """The align* lines of one displayed step; the justification tags its last line."""
    budget = max(30, LINE - width(why) - 4)
    if s.lhs_latex and s.chained and not first_of_chain:
        rel = {"<=": r"\le", ">=": r"\ge"}.get(s.relation, s.relation)
        lines = break_side(s.rhs_latex, rel, budget)
    else:
        lines = split_formula(s.claim_latex, budget)
    lines[-1] += " " + _tag(why)
    return lines


def _proof_latex(p, names, ref) -> list[str]:
    shown = shown_steps(p)
    out = [r"\begin{proof}\proofskips"]
    cited = [h for h in p.hypotheses if h.cited]
    if cited:
        out.append(
            " ".join(
                f"The proof cites {prose.escape_text(h.name)} \\citep{{{h.source}}}: "
                + prose.to_latex(clean_text(h.text, names, ref))
                + "."
                for h in cited
            )
        )
    if printed_definitions(p):
        out.append("Write " + ", ".join(f"${d}$" for d in printed_definitions(p)) + ".")
    rows, previous, before = [], None, _printed_order(p)
    for s in shown:
        why = prose.to_latex(clean_text(justification(s), names, ref))
        continues = s.chained and previous is not None and before.get(s.index) == previous.index
        lead = clean_text(s.description, names, ref) if s.description else ""
        text = []
        if lead:
            lead = _lower(lead) if s.kind == "conclusion" else lead
            text.append(rf"\intertext{{{'Hence ' if s.kind == 'conclusion' else ''}{lead_in(prose.to_latex(lead))}}}")
        elif s.kind == "conclusion" and not continues:
            text.append(r"\intertext{Hence}")
        rows.append("\n".join(text + [" \\\\\n".join(_step_rows(s, not continues, why))]))
        previous = s
    if rows:
        out += [r"\begin{align*}", " \\\\\n".join(rows), r"\end{align*}"]
    failed = [s for s in p.steps if not s.checked]
    if failed:
        out.append(
            r"\textbf{This proof is not complete:} "
            + "; ".join(prose.escape_text(f"step {s.index} was not checked ({s.detail})") for s in failed)
            + "."
        )
    out.append(r"\end{proof}")
    return out


# -------------------------------------------------------------------- Markdown
def theorem_markdown(entry: TheoremEntry, number: str, names, numbers: dict) -> list[str]:
    p = entry.general

    def ref(target):
        return f"{_kind(target)} {numbers.get(target, '?')}"

    env = entry.environment.capitalize()
    hyps = [h for h in _printed_hypotheses(p) if not h.cited]
    let = ("Suppose " + "; ".join(_lower(clean_text(h.text, names, ref)) for h in hyps) + ". ") if hyps else ""
    lines = [f"**{env} {number}** ({clean_text(p.title, names, ref)}). {let}{clean_text(p.statement, names, ref)}", ""]
    lines += ["*Proof.*", ""]
    cited = [h for h in p.hypotheses if h.cited]
    if cited:
        lines += [" ".join(f"The proof cites {h.name}: {clean_text(h.text, names, ref)}." for h in cited), ""]
    if printed_definitions(p):
        lines += ["Write " + ", ".join(f"${d}$" for d in printed_definitions(p)) + ".", ""]
    for k, s in enumerate(shown_steps(p), start=1):
        words = clean_text(s.description, names, ref) if s.description else ""
        if s.kind == "conclusion":
            words = "Hence " + _lower(words) if words else "Hence"
        claim = s.claim_latex
        if s.chained and s.lhs_latex:
            claim = r"\quad " + {"<=": r"\le", ">=": r"\ge"}.get(s.relation, s.relation) + " " + s.rhs_latex
        lines += [
            f"{k}. {lead_in(words) + ' ' if words else ''}${claim.strip()}$ ({clean_text(justification(s), names, ref)})",
            "",
        ]
    lines += ["∎", ""]
    failed = [s for s in p.steps if not s.checked]
    if failed:
        lines += [
            "**This proof is not complete:** "
            + "; ".join(f"step {s.index} was not checked ({s.detail})" for s in failed)
            + ".",
            "",
        ]
    return lines
