"""The problem set and the instructor's solutions as Markdown and as LaTeX.

Every statement is written once, as text whose mathematics sits between ``$`` signs and
uses only commands of plain LaTeX and amsmath; the same text is valid Markdown for
renderers with maths (Jupyter, GitHub).  The LaTeX documents use only the ``article``
class with ``amsmath``, ``amssymb`` and ``geometry``, so they compile with any TeX
distribution.  Nothing here reads the clock: the same problems give the same bytes.
"""

from __future__ import annotations

import hashlib
import json

from ..certificates.writers import format_fraction
from ..certificates.writes import folder_entry, output_folder, write_text

__all__ = [
    "latex_escape",
    "problem_parts",
    "problem_markdown",
    "problem_latex_display",
    "problem_set_markdown",
    "problem_set_latex",
    "solutions_markdown",
    "solutions_latex",
    "write_homework",
    "write_files",
    "compile_pdf",
    "instructor_texts",
    "compact_json",
    "solution_markdown",
    "certificate_files",
]

#: files written next to the solutions for the selectability problem (the vocab problem's: vocab_...)
CERTIFICATE_FILE = "selectability_certificate.json"
KEYS_FILE = "selectability_keys.csv"


def certificate_files(topic: str) -> tuple[str, str]:
    """The certificate and keys file names of a problem that has a certificate."""
    return CERTIFICATE_FILE.replace("selectability", topic), KEYS_FILE.replace("selectability", topic)


_TITLES = {
    "projection": "The centring projection",
    "sphere": "Onto the sphere, and inside it",
    "ellipsoid": "The ellipsoid of a LayerNorm",
    "selectability": "Which keys can win?",
    "uniform": "Uniform attention",
    "threshold": "The demo threshold",
    "vocab": "Tokens a model can never output",
}

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def latex_escape(text: str) -> str:
    """Plain text made safe for LaTeX text mode."""
    return "".join(_LATEX_SPECIAL.get(c, c) for c in str(text))


def _vec(values) -> str:
    return "(" + ", ".join(format_fraction(v) if not isinstance(v, str) else v for v in values) + ")"


def _keys_display(keys, per_line: int = 4) -> str:
    """The keys as display maths, at most ``per_line`` keys per display (so lines fit the page)."""
    items = [f"k_{{{i}}} = {_vec(k)}" for i, k in enumerate(keys, 1)]
    rows = [items[start : start + per_line] for start in range(0, len(items), per_line)]
    return "\n".join(
        "$$" + ",\\quad ".join(row) + ("." if last else ",") + "$$" for last, row in ((r is rows[-1], r) for r in rows)
    )


def _vocab_parts(problem) -> tuple[list[str], list[tuple[str, str]]]:
    """The ``vocab`` statement: 8 tokens, hidden states in R^3, rows w_j and biases b_j two to a line."""
    count, dim = len(problem.rows), len(problem.rows[0])
    items = [
        f"w_{{{j}}} = {_vec(row)},\\ b_{{{j}}} = {b}" for j, (row, b) in enumerate(zip(problem.rows, problem.bias), 1)
    ]
    display = "\n".join(
        "$$" + ",\\qquad ".join(items[s : s + 2]) + ("." if s + 2 >= len(items) else ",") + "$$"
        for s in range(0, len(items), 2)
    )
    intro = [
        f"A tiny language model has a vocabulary of {count} tokens and final hidden states "
        f"$h \\in \\mathbb R^{{{dim}}}$ (it has no final norm, so $h$ can be any vector). Token $j$ gets the "
        "logit $w_j^\\top h + b_j$ from row $w_j$ of the unembedding and the output bias $b_j$, and the model "
        "outputs the token whose logit is strictly the largest:",
        display,
    ]
    parts = [
        (
            "never",
            f"Which of these {count} tokens can this model never output, whatever $h$ is? Give the list "
            "of their numbers. Justify each never-output token with weights $\\lambda_j \\ge 0$ summing "
            "to 1 over other tokens such that $w_i = \\sum_j \\lambda_j w_j$ and "
            "$\\sum_j \\lambda_j b_j \\ge b_i$, and each other token with a hidden state $h$ that makes "
            "it win.",
        )
    ]
    return intro, parts


def problem_parts(problem) -> tuple[list[str], list[tuple[str, str]]]:
    """(introduction paragraphs, [(answer field, question text)]) for a problem; maths in ``$...$``."""
    t = problem.topic
    if t == "projection":
        n = problem.n
        intro = [
            f"Let $n = {n}$, $J = \\mathbf 1\\mathbf 1^\\top$ the ${n}\\times{n}$ matrix of ones and "
            f"$P = I - \\tfrac1{{{n}}}J$, so that $x - \\operatorname{{mean}}(x)\\mathbf 1 = Px$. "
            f"Let $x = {_vec(problem.x)}$."
        ]
        parts = [
            ("P", "Write down $P$ with exact entries."),
            ("P_squared", "Compute $P^2$ entry by entry and conclude that $P$ is idempotent ($P^2 = P$)."),
            ("Px", "Compute $Px$."),
        ]
    elif t == "sphere":
        n = problem.n
        intro = [
            f"LayerNorm first centres, $y = Px$, then scales radially: with $\\varepsilon = 0$, "
            f"$g(y) = \\sqrt n\\, y/\\|y\\|$; with $\\varepsilon > 0$ (torch convention) "
            f"$g(y) = \\sqrt n\\, y/\\sqrt{{\\|y\\|^2 + n\\varepsilon}}$. Let $n = {n}$ and $x = {_vec(problem.x)}$."
        ]
        parts = [
            ("Px", "Compute $Px$."),
            ("norm_Px", "Compute $\\|Px\\|$ exactly."),
            (
                "g",
                "With $\\varepsilon = 0$, compute $g(Px)$ and check that it lies on the sphere of radius "
                "$\\sqrt n$ in the hyperplane $\\mathbf 1^\\top z = 0$.",
            ),
            (
                "norm_g_eps",
                f"With $\\varepsilon = {format_fraction(problem.eps)}$, compute $\\|g(Px)\\|$ "
                "and compare it with $\\sqrt n$.",
            ),
        ]
    elif t == "ellipsoid":
        intro = [
            f"A LayerNorm on $\\mathbb R^{{{problem.n}}}$ with $\\varepsilon = 0$ has gain $a = {_vec(problem.gain)}$ "
            f"and bias $b = {_vec(problem.bias)}$. Its outputs $z = \\operatorname{{diag}}(a)\\,g(Px) + b$ fill an "
            f"ellipsoid of dimension ${problem.n - 1}$."
        ]
        parts = [
            ("center", "Give the centre of the ellipsoid."),
            ("normal", "Give a normal vector of the hyperplane that contains every output."),
            ("semi_axes", "Find the semi-axes exactly (for example with square roots)."),
        ]
    elif t == "selectability":
        intro = [
            f"Attention scores key $k_j$ with $q^\\top k_j$. Key $i$ is selectable if some query $q$ gives "
            f"$q^\\top k_i > q^\\top k_j$ for every $j \\ne i$. Consider the {len(problem.keys)} keys",
            _keys_display(problem.keys),
        ]
        parts = [
            (
                "keys",
                "For each key decide whether it is selectable, tie-only (it can tie for the maximum but "
                "never win) or unselectable (strictly inside the convex hull of the keys). Justify "
                "'selectable' with a query $q$, and the other two with convex weights over the other "
                "keys that reproduce the key.",
            )
        ]
    elif t == "uniform":
        intro = [
            f"A LayerNorm with gain $a = {_vec(problem.gain)}$ and bias $b = {_vec(problem.bias)}$ produced the keys",
            _keys_display(problem.keys),
        ]
        parts = [
            (
                "query",
                "Find a non-zero query $q$ that gives every key the same score $q^\\top k_j$ "
                "(uniform attention). Explain why it works for every output of this LayerNorm.",
            )
        ]
    elif t == "threshold":
        mags = " and ".join(f"$m = {format_fraction(m)}$" for m in problem.magnitudes)
        intro = [
            "In the attention demo the keys are unit vectors at angles $0^\\circ, 45^\\circ, 90^\\circ, 180^\\circ$ "
            "(keys 1 to 4), and key 3 is scaled by a magnitude $m > 0$."
        ]
        parts = [
            ("threshold", "Find the exact magnitude $m$ at which key 2 stops being selectable."),
            ("status_at", f"Is key 2 selectable, tie-only or unselectable at {mags}?"),
        ]
    elif t == "vocab":
        intro, parts = _vocab_parts(problem)
    else:  # pragma: no cover - the problem classes are closed
        raise ValueError(t)
    return intro, parts


def problem_markdown(problem, number=None) -> str:
    intro, parts = problem_parts(problem)
    head = f"Problem {number}" if number is not None else "Problem"
    lines = [f"### {head}: {_TITLES[problem.topic]} (id `{problem.id}`)", ""]
    for paragraph in intro:
        lines += [paragraph, ""]
    for label, (name, text) in zip("abcdefgh", parts):
        lines.append(f"- ({label}) {text} Answer field: `{name}`.")
    return "\n".join(lines) + "\n"


def problem_latex(problem, number: int) -> str:
    intro, parts = problem_parts(problem)
    out = [
        f"\\section*{{Problem {number}: {latex_escape(_TITLES[problem.topic])}}}",
        f"\\noindent Problem id: \\texttt{{{latex_escape(problem.id)}}}.",
        "",
    ]
    for paragraph in intro:
        out += [paragraph, ""]
    out.append("\\begin{itemize}")
    for label, (name, text) in zip("abcdefgh", parts):
        out.append(f"  \\item[({label})] {text} Answer field: \\texttt{{{latex_escape(name)}}}.")
    out.append("\\end{itemize}")
    return "\n".join(out) + "\n"


def problem_latex_display(problem) -> str:
    """A one-line maths display of a problem's data (for Jupyter's LaTeX output)."""
    data = {k: v for k, v in problem.to_json().items() if k not in ("id", "topic")}
    pieces = []
    for key, value in data.items():
        if isinstance(value, list) and value and isinstance(value[0], list):
            text = ",\\ ".join(_vec(v) for v in value)
        elif isinstance(value, list):
            text = _vec(value)
        else:
            text = str(value)
        pieces.append(f"\\text{{{latex_escape(key)}}} = {text}")
    return f"$\\text{{{latex_escape(problem.id)}}}:\\ " + ",\\quad ".join(pieces) + "$"


def _preamble(title: str) -> list[str]:
    return [
        "\\documentclass[11pt]{article}",
        "\\usepackage{amsmath,amssymb}",
        "\\usepackage[margin=2.5cm]{geometry}",
        f"\\title{{{latex_escape(title)}}}",
        "\\author{}",
        "\\date{}",
        "\\begin{document}",
        "\\maketitle",
    ]


def _answers_intro(problem_set) -> str:
    exact = 'Give exact values: integers, fractions written as "p/q", and square roots written sqrt(...).'
    student = getattr(problem_set, "student", None)
    if student is not None:
        return (
            f"These problems were drawn for you (student id {student}). Write your answers in a JSON file "
            f"named {student}.json (the answers format is described in docs/homework.md of lnproofs) with "
            f'"student_id": "{student}" at the top level, and hand it in. ' + exact
        )
    return (
        "Write your answers in a JSON file (the answers format is described in docs/homework.md of lnproofs) "
        "and check them "
        "with lnproofs homework check answers.json --problems FOLDER. " + exact
    )


def _title(problem_set, what: str, for_student: bool) -> str:
    """A student's sheet names the student, never the seed (seed and id would regenerate the solutions)."""
    student = getattr(problem_set, "student", None)
    if student is None:
        return f"{what} (seed {problem_set.seed})"
    return f"{what} for student {student}" if for_student else f"{what} (seed {problem_set.seed}, student {student})"


def problem_set_markdown(problem_set) -> str:
    lines = [
        f"# {_title(problem_set, 'LayerNorm and attention: problem set', True)}",
        "",
        _answers_intro(problem_set),
        "",
    ]
    for number, problem in enumerate(problem_set.problems, 1):
        lines.append(problem_markdown(problem, number))
    return "\n".join(lines)


def problem_set_latex(problem_set) -> str:
    out = _preamble(_title(problem_set, "LayerNorm and attention: problem set", True))
    out += [latex_escape(_answers_intro(problem_set)), ""]
    for number, problem in enumerate(problem_set.problems, 1):
        out.append(problem_latex(problem, number))
    out.append("\\end{document}")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ solutions
def _theorem_block(name: str, markdown: bool, proofs: dict | None = None) -> str:
    """The library's proof of theorem ``name`` rendered by the theorem object itself.

    ``proofs`` (name -> proof result), when given, keeps proofs already run: a class of
    students shares the same theorems, proved once.
    """
    from .library import proved_theorem

    try:
        if proofs is None:
            result = proved_theorem(name)
        else:
            if name not in proofs:
                proofs[name] = proved_theorem(name)
            result = proofs[name]
    except Exception as err:  # another module's bug must not block the handout; say so in it
        what = f"its proof could not be run ({type(err).__name__}: {err})"
        return (
            f"Theorem `{name}`: {what}."
            if markdown
            else f"Theorem \\texttt{{{latex_escape(name)}}}: {latex_escape(what)}."
        )
    if result is None:
        return (
            f"Theorem `{name}`: not available in this installation."
            if markdown
            else f"Theorem \\texttt{{{latex_escape(name)}}}: not available in this installation."
        )
    method = getattr(result, "to_markdown" if markdown else "to_latex", None)
    return method().strip() if method is not None else str(result)


def _certificate_table(solution, markdown: bool) -> str:
    cert = solution.certificate
    if markdown:
        rows = ["| key | status | evidence |", "|---|---|---|"]
    else:
        rows = ["\\begin{tabular}{lll}", "key & status & evidence \\\\ \\hline"]
    for result in cert["results"]:
        number = int(result["index"]) + 1
        entry = solution.answers["keys"][str(number)]
        if "combination" in entry:
            comb = entry["combination"]
            evidence = " + ".join(f"{w} k{k}" for k, w in zip(comb["keys"], comb["weights"]))
            if "query" in entry:
                evidence += f"; ties with q = {_vec(entry['query'])}"
        elif "query" in entry:
            evidence = f"q = {_vec(entry['query'])}"
        else:
            evidence = str(result.get("reason"))
        if markdown:
            rows.append(f"| {number} | {result['status']} | {evidence} |")
        else:
            rows.append(f"{number} & {latex_escape(result['status'])} & {latex_escape(evidence)} \\\\")
    if not markdown:
        rows.append("\\end{tabular}")
    return "\n".join(rows)


def compact_json(value, indent: int = 0) -> str:
    """JSON with lists of numbers and strings on one line (matrices one row per line)."""
    pad = "  " * indent
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [f"{pad}  {json.dumps(k)}: {compact_json(v, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, list) and any(isinstance(v, (list, dict)) for v in value):
        items = [f"{pad}  {compact_json(v, indent + 1)}" for v in value]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return json.dumps(value, ensure_ascii=True)


def solution_markdown(solution) -> str:
    """One solution: its worked lines and its answer in the answers format."""
    lines = [f"**Solution** (id `{solution.problem_id}`)", ""]
    lines += [f"- {line}" for line in solution.work]
    lines += ["", "```json", compact_json({solution.problem_id: solution.answers}), "```"]
    return "\n".join(lines) + "\n"


def _solution_sections(problem_set, solutions, markdown: bool, proofs: dict | None = None) -> list[str]:
    out = []
    for number, (problem, solution) in enumerate(zip(problem_set.problems, solutions), 1):
        title = f"Problem {number}: {_TITLES[problem.topic]}"
        answer_json = compact_json({problem.id: solution.answers})
        if markdown:
            out += [f"## {title} (id `{problem.id}`)", ""]
            out += [f"- {line}" for line in solution.work] + [""]
            if solution.certificate is not None:
                cert_file, keys_file = certificate_files(problem.topic)
                out += [
                    "Certificate from the library's certifier, verified exactly by its checker "
                    f"(re-check it with `lnproofs check {cert_file} {keys_file}`)"
                    + (":" if problem.topic == "selectability" else "."),
                    "",
                ]
                out += [_certificate_table(solution, True), ""] if problem.topic == "selectability" else []
            out += ["Answer in the answers format:", "", "```json", answer_json, "```", ""]
            for name in solution.theorems:
                out += [_theorem_block(name, True, proofs), ""]
        else:
            out += [f"\\section*{{{latex_escape(title)}}}", "\\begin{itemize}"]
            out += [f"  \\item {line}" for line in solution.work] + ["\\end{itemize}", ""]
            if solution.certificate is not None:
                cert_file, keys_file = certificate_files(problem.topic)
                out += [
                    "\\noindent Certificate from the library's certifier, verified exactly by its checker "
                    f"(re-check it with \\texttt{{lnproofs check {latex_escape(cert_file)} "
                    f"{latex_escape(keys_file)}}})" + (":" if problem.topic == "selectability" else "."),
                    "",
                ]
                out += (
                    ["\\medskip", _certificate_table(solution, False), ""] if problem.topic == "selectability" else []
                )
            out += ["\\noindent Answer in the answers format:", "\\begin{verbatim}", answer_json, "\\end{verbatim}", ""]
            for name in solution.theorems:
                out += [_theorem_block(name, False, proofs), ""]
    return out


def solutions_markdown(problem_set, solutions, proofs: dict | None = None) -> str:
    lines = [
        f"# {_title(problem_set, 'Instructor solutions', False)}",
        "",
        "Produced by lnproofs: the worked values are exact, selectability certificates are verified by "
        "the exact checker, and each solution ends with the library's machine-checked proofs.",
        "",
    ]
    lines += _solution_sections(problem_set, solutions, True, proofs)
    return "\n".join(lines).rstrip() + "\n"


def solutions_latex(problem_set, solutions, proofs: dict | None = None) -> str:
    out = _preamble(_title(problem_set, "Instructor solutions", False))
    out += [
        latex_escape(
            "Produced by lnproofs: the worked values are exact, selectability certificates are "
            "verified by the exact checker, and each solution ends with the library's "
            "machine-checked proofs."
        ),
        "",
    ]
    out += _solution_sections(problem_set, solutions, False, proofs)
    out.append("\\end{document}")
    return "\n".join(out) + "\n"


def compile_pdf(folder, stem: str) -> dict:
    """Run pdflatex on ``folder/stem.tex`` with fixed dates: {"stem.pdf": path}, or {"stem.log": path} on failure.

    Returns {} when pdflatex is not installed.
    """
    import os
    import shutil
    import subprocess
    from pathlib import Path

    compiler = shutil.which("pdflatex")
    if not compiler:
        return {}
    folder = Path(folder)
    for suffix in (".pdf", ".log", ".aux"):  # pdflatex writes these: only regular files are replaced
        folder_entry(folder, stem + suffix)
    env = dict(os.environ, SOURCE_DATE_EPOCH="0", FORCE_SOURCE_DATE="1")
    run = subprocess.run(
        [compiler, "-interaction=nonstopmode", "-halt-on-error", f"{stem}.tex"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    (folder / f"{stem}.aux").unlink(missing_ok=True)
    if run.returncode == 0 and (folder / f"{stem}.pdf").exists():
        (folder / f"{stem}.log").unlink(missing_ok=True)
        return {f"{stem}.pdf": folder / f"{stem}.pdf"}
    # keep the log so the failure can be read; the .tex file stands on its own
    return {f"{stem}.log": folder / f"{stem}.log"}


def write_files(folder, texts: dict, stale=()) -> dict:
    """Write ``texts`` (name -> text) into ``folder`` (created); remove the ``stale`` names not written."""
    folder = output_folder(folder)
    written = {}
    for name, text in texts.items():
        path = folder_entry(folder, name)
        write_text(path, text)
        written[name] = path
    for name in stale:
        if name not in texts:
            (folder / name).unlink(missing_ok=True)
    return written


def instructor_texts(problem_set, solutions, proofs: dict | None = None) -> dict:
    """The instructor's files as name -> text: problems.json, both sheets, the solutions, the certificate."""
    texts = {
        "problems.json": json.dumps(problem_set.to_json(), indent=2) + "\n",
        "problems.md": problem_set_markdown(problem_set),
        "problems.tex": problem_set_latex(problem_set),
        "solutions.md": solutions_markdown(problem_set, solutions, proofs),
        "solutions.tex": solutions_latex(problem_set, solutions, proofs),
    }
    for problem, solution in zip(problem_set.problems, solutions):
        if solution.certificate is not None:
            cert_file, keys_file = certificate_files(problem.topic)
            texts[keys_file] = "".join(",".join(str(v) for v in key) + "\n" for key in problem.keys)
            named = {"path": keys_file, "sha256": hashlib.sha256(texts[keys_file].encode("utf-8")).hexdigest()}
            cert = dict(solution.certificate)  # the certificate names its keys file
            cert = {**{k: cert[k] for k in list(cert)[:3]}, "keys_file": named, **cert}
            texts[cert_file] = json.dumps(cert, indent=1) + "\n"
    return texts


#: files a previous run may have left that a new problem set does not produce
STALE = (
    CERTIFICATE_FILE,
    KEYS_FILE,
    *certificate_files("vocab"),
    "problems.pdf",
    "solutions.pdf",
    "problems.log",
    "solutions.log",
)


def write_homework(problem_set, folder, pdf: bool = True, *, proofs: dict | None = None) -> dict:
    """Write the problem set, the solutions and ``problems.json`` into ``folder``.

    Files: ``problems.md``, ``problems.tex``, ``solutions.md``, ``solutions.tex``,
    ``problems.json`` (what ``homework check`` reads), the selectability and vocab
    certificates and their keys when those topics are present, and the PDFs of both ``.tex`` files when ``pdf``
    is true and ``pdflatex`` is installed (if pdflatex fails, its ``.log`` is kept
    instead).  ``proofs`` is a dict shared between calls so that each theorem is proved
    once (see :func:`_theorem_block`).  Returns name -> path.
    """
    solutions = [problem.solve() for problem in problem_set.problems]
    written = write_files(folder, instructor_texts(problem_set, solutions, proofs), STALE)
    if pdf:
        for stem in ("problems", "solutions"):
            written.update(compile_pdf(folder, stem))
    return written
