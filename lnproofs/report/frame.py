"""The words around the results: title, author, abstract, introduction, setting.

Each function returns prose with its mathematics in ``$...$`` and citations written
``[[cite:key]]`` (see :mod:`lnproofs.experiments.blocks`), so that both writers share it.
"""

from __future__ import annotations

__all__ = [
    "TITLE",
    "AUTHOR",
    "SUBJECT",
    "KEYWORDS",
    "abstract",
    "introduction",
    "definitions",
    "geometry_text",
    "proof_convention",
    "cited_facts",
    "frame_instances",
    "general_cell",
    "count_cells",
    "concrete_cell",
]

TITLE = "LayerNorm and the Selectability of Attention Keys: Checked Proofs, Exact Certificates and a Reproduction"
AUTHOR = "The lnproofs project"
SUBJECT = "Machine-checked geometry of LayerNorm and the selectability of attention keys"
KEYWORDS = "LayerNorm, attention, convex hull, computer algebra, certificates, reproduction"


def cited_facts(report) -> list:
    """The classical facts the proofs cite instead of checking: (name, source key), each once."""
    found = {}
    for p in report.proofs:
        if p.n is None:
            for h in p.hypotheses:
                if h.cited:
                    found.setdefault(h.name, h.source)
    return list(found.items())


def abstract(report) -> str:
    general = [p for p in report.proofs if p.n is None]
    proved = sum(1 for p in general if p.proved)
    checks = sum(len(_shown(p)) for p in general)
    hidden = sum(len(p.steps) for p in general) - checks
    widths = sum(1 for p in report.proofs if p.n is not None and p.proved)
    cited = cited_facts(report)
    text = (
        "LayerNorm projects its input onto the hyperplane orthogonal to the all-ones vector, scales it onto a "
        "sphere and applies an affine map. We prove "
        f"{len(general)} results on this geometry and on what it means for attention: the image of LayerNorm is "
        "an ellipsoid whose semi-axes interlace the gains, RMSNorm fills a ball, and a key can be selected by "
        "some query exactly when it is not in the convex hull of the other keys. "
        + "Each proof is a chain of displayed relations; every relation of "
        + (f"the {proved} proofs" if proved == len(general) else f"{proved} of the {len(general)} proofs")
        + f" ({checks} in all) is checked by the computer algebra system SymPy when the report is "
        f"made, and so are {hidden} further checks the printed proofs leave out (the statement each chain "
        "proves, signs the hypotheses give, sums evaluated, cases another check covers), each listed with "
        "its check in the HTML version. The words that join the relations are not "
        f"machine-checked. {widths} results are checked again for the width $n = {report.n}$ with explicit "
        "matrices."
    )
    if cited:
        names = [f"{name} [[cite:{key}]]" for name, key in cited]
        listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        text += f" The proofs cite {len(names)} classical fact{'s' if len(names) != 1 else ''} instead of proving them: {listed}."
    if report.rechecks:
        passed = sum(1 for c in report.rechecks.values() if c.passed)
        text += f" An independent floating-point re-check passes for {passed} of {len(report.rechecks)} results."
    findings = getattr(report.experiments, "findings", ()) if report.experiments is not None else ()
    if findings:
        text += " Revisiting published experiments with exact certificates, we find that " + " ".join(findings)
    return text


def _shown(p):
    from .proofs import shown_steps

    return shown_steps(p)


def proof_convention() -> str:
    return (
        "Every proof below is a chain of displayed relations. Each relation is checked by SymPy "
        "[[cite:sympy]] when the report is made, by the rule named at its right; a proof counts only when "
        "every relation is checked. Named quantities (“Write ...”) are substituted before checking. The "
        "relation a chain proves between its ends and routine checks (a sign the hypotheses give, a sum "
        "evaluated, a case another check covers) are checked as well but not printed; [[tab:instances]] "
        "counts them and the HTML version lists each. A fact a proof cites instead of checking is named at the start of the proof with its "
        "source; the words between the relations are not machine-checked."
    )


def general_cell(entry) -> str:
    p = entry.general
    if p.n is not None:
        return "not stated (no width)"
    return "proved" if p.proved else "**not proved**"


def count_cells(entry) -> tuple[str, str]:
    """The checks of the general proof: the relations it shows, and the checks it makes without printing
    them (the statement a chain proves, routine checks); the two add up to every check."""
    p = entry.general
    if p.n is not None:
        return "", ""
    count = len(_shown(p))
    return str(count), str(len(p.steps) - count)


def concrete_cell(entry) -> str:
    p = entry.instance if entry.instance is not None else (entry.general if entry.general.n else None)
    if p is None:
        return "no width: a planar configuration"
    count = len(p.steps)
    return ("proved" if p.proved else "**not proved**") + f", {count} check{'s' if count != 1 else ''}"


def frame_instances(report, items) -> str:
    with_width = [e for e in items if e.instance is not None]
    without = [e for e in items if e.instance is None and e.general.n is None]
    text = (
        f"[[tab:instances]] lists what holds for each result. {len(with_width)} of the {len(items)} results "
        f"were also proved for the width $n = {report.n}$, with explicit matrices and vectors in place of the "
        "symbols; those checks are listed in the HTML version of this report."
    )
    if without:
        text += (
            f" {len(without)} result{'s' if len(without) != 1 else ''} "
            f"{'have' if len(without) != 1 else 'has'} no width to make concrete."
        )
    return text


def introduction(report) -> list[str]:
    paragraphs = [
        "An attention head scores every key $k_i$ against a query $q$ by $q \\cdot k_i$ and attends mostly to the "
        "keys with the highest scores. A key is selectable when some query gives it a higher score than every "
        "other key. [[cite:brody2023]] observe that the LayerNorm placed before attention in a Transformer "
        "shapes which keys are selectable: its projection onto the hyperplane orthogonal to the all-ones vector "
        "lets a single query attend to all keys equally, and its scaling onto a sphere makes every key "
        "selectable. Below, “the paper” is their article.",
        "The geometry behind this has been described several times: a blog post decomposes LayerNorm into a "
        "projection, a radial scaling and an affine map [[cite:brody2023]], and [[cite:riechers2024]] "
        "describes its image as an ellipsoid through the eigen-decomposition of a simple matrix. The question of "
        "which outputs a linear scoring layer can make the winner also arises for the classes of a softmax "
        "output layer, where [[cite:grivas2022]] call the losers unargmaxable and decide them by linear "
        "programming; the same convex-hull condition appears here for keys.",
        "This report makes these statements exact. Each result is stated once for a general width $n$ and proved "
        "by a sequence of steps that the computer algebra system SymPy [[cite:sympy]] checks when the report is "
        "made. Whether a given key is selectable is decided by a certificate, a witness query or a convex "
        "combination of the other keys, found by floating-point solvers (NumPy [[cite:numpy]], SciPy [[cite:scipy]], CVXPY "
        "[[cite:cvxpy]] with HiGHS [[cite:highs]] and Clarabel [[cite:clarabel]]) and accepted only after a check in exact rational arithmetic "
        "with FLINT [[cite:flint]]; a key without such a check stays undecided. A floating-point re-check with "
        "PyTorch [[cite:pytorch]] gives independent evidence for every result. Figures are drawn with Matplotlib "
        "[[cite:matplotlib]].",
    ]
    outline = (
        "[[sec:setting]] fixes the notation. The results follow, grouped by subject, each with its "
        "proof; [[sec:instances]] says what was checked for each result, and [[sec:geometry]] "
        "draws the geometry."
    )
    if report.experiments is not None:
        outline += " The experiments follow, and the software used closes the report."
    paragraphs.append(outline + " An index at the end maps each result to its name in the software.")
    return paragraphs


def definitions(report) -> list[tuple[str, str, str]]:
    """(label, title, text) of the definitions of the setting."""
    from .model import CONVENTIONS

    return [
        (
            "def:projection",
            "Centring projection",
            "For a width $n \\ge 2$ let $\\mathbf{1} \\in \\mathbb{R}^n$ be the all-ones vector, "
            "$J = \\mathbf{1}\\mathbf{1}^T$ and $P = I - \\tfrac{1}{n} J$. For $x \\in \\mathbb{R}^n$, "
            "$\\bar{x} = \\tfrac{1}{n}\\mathbf{1}^T x$ is its mean. Indices $i, j, k$ run over $1, \\dots, n$ "
            "and $\\delta_{ij}$ is $1$ when $i = j$ and $0$ otherwise (the Kronecker delta). Unless a result says "
            "otherwise, $n \\ge 2$ is an integer.",
        ),
        (
            "def:layernorm",
            "LayerNorm",
            "With gain $a \\in \\mathbb{R}^n$, bias $b \\in \\mathbb{R}^n$ and $\\epsilon \\ge 0$, LayerNorm is "
            + CONVENTIONS["torch"]
            + " (the PyTorch convention), and "
            + CONVENTIONS["std"]
            + " (the standard-deviation convention). Results that depend on the convention are stated for the "
            + ("PyTorch" if report.convention == "torch" else "standard-deviation")
            + " convention; both "
            "conventions' decompositions and interior results are always included.",
        ),
        (
            "def:selectable",
            "Selectable key",
            "Let $k_1, \\dots, k_m \\in \\mathbb{R}^d$ be keys and $Q \\subseteq \\mathbb{R}^d$ a set of queries. "
            "The key $k_i$ is selectable when some $q \\in Q$ has $q \\cdot k_i > q \\cdot k_j$ for every $j \\ne i$; "
            "it is tie-only when it is not selectable but some $q$ gives it a score at least every other; "
            "otherwise it is unselectable.",
        ),
    ]


def geometry_text() -> str:
    return (
        "[[fig:layernorm_n3]] shows LayerNorm for $n = 3$: the inputs are projected onto the plane orthogonal "
        "to $(1, 1, 1)$, scaled onto the circle of radius $\\sqrt{3}$, and the gain and bias turn the circle "
        "into an ellipse, whose principal axes [[fig:ellipse_axes]] draws. [[fig:keys_2d]] and "
        "[[fig:keys_3d]] show certified statuses of keys in two and three dimensions: the keys inside the "
        "hull of the others are unselectable and those on a face, not at a vertex, can only tie. "
        "[[fig:attention_weights]] shows the attention weights of the example of [[cite:brody2023]], where "
        "a large key makes its neighbour unselectable."
    )
