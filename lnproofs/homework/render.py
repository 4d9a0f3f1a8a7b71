"""The instructor's solutions as Markdown and as LaTeX, and the files of a problem set.

The statements are in :mod:`.statements` and the students' sheet in :mod:`.sheet`; the
solutions use the same plain LaTeX (``article``, ``amsmath``, ``amssymb``, ``geometry``).
Nothing here reads the clock: the same problems give the same bytes.
"""

from __future__ import annotations

import hashlib
import json

from ..certificates.writes import folder_entry, output_folder, write_text
from .sheet import compact_json, preamble, problem_set_latex, problem_set_markdown, sheet_title
from .statements import TITLES, latex_escape, vec_text

__all__ = [
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
                evidence += f"; ties with q = {vec_text(entry['query'])}"
        elif "query" in entry:
            evidence = f"q = {vec_text(entry['query'])}"
        else:
            evidence = str(result.get("reason"))
        if markdown:
            rows.append(f"| {number} | {result['status']} | {evidence} |")
        else:
            rows.append(f"{number} & {latex_escape(result['status'])} & {latex_escape(evidence)} \\\\")
    if not markdown:
        rows.append("\\end{tabular}")
    return "\n".join(rows)


def solution_markdown(solution) -> str:
    """One solution: its worked lines and its answer in the answers format."""
    lines = [f"**Solution** (id `{solution.problem_id}`)", ""]
    lines += [f"- {line}" for line in solution.work]
    lines += ["", "```json", compact_json({solution.problem_id: solution.answers}), "```"]
    return "\n".join(lines) + "\n"


def _solution_sections(problem_set, solutions, markdown: bool, proofs: dict | None = None) -> list[str]:
    out = []
    for number, (problem, solution) in enumerate(zip(problem_set.problems, solutions), 1):
        title = f"Problem {number}: {TITLES[problem.topic]}"
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
        f"# {sheet_title(problem_set, 'Instructor solutions', False)}",
        "",
        "Produced by lnproofs: the worked values are exact, selectability certificates are verified by "
        "the exact checker, and each solution ends with the library's machine-checked proofs.",
        "",
    ]
    lines += _solution_sections(problem_set, solutions, True, proofs)
    return "\n".join(lines).rstrip() + "\n"


def solutions_latex(problem_set, solutions, proofs: dict | None = None) -> str:
    out = preamble(sheet_title(problem_set, "Instructor solutions", False))
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
    *certificate_files("rotary"),
    *certificate_files("centred"),
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
