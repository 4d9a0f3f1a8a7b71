"""The students' problem sheet as Markdown and as LaTeX.

The LaTeX document uses only the ``article`` class with ``amsmath``, ``amssymb`` and
``geometry``, so it compiles with any TeX distribution.  Nothing here reads the clock: the same
problems give the same bytes.
"""

from __future__ import annotations

import json

from .statements import TITLES, latex_escape, problem_parts, vec_text

__all__ = [
    "problem_markdown",
    "problem_latex",
    "problem_latex_display",
    "problem_set_markdown",
    "problem_set_latex",
    "preamble",
    "sheet_title",
    "compact_json",
    "answers_template",
    "blank_answer",
]


def _written(problem) -> list[tuple[str, str]]:
    """The parts answered in words: collected with the answers and graded by hand."""
    return [(name, f"{prompt} (In words; graded by hand.)") for name, prompt in getattr(problem, "written", ())]


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


def blank_answer(problem) -> dict:
    """The answer object of a problem with every value None (null in JSON): fields keyed by number
    (keys, magnitudes, positions) get one entry per number."""
    from ..certificates.writers import format_fraction

    out = {}
    for name in problem.fields:
        if problem.topic == "selectability":
            out[name] = {str(k): None for k in range(1, len(problem.keys) + 1)}
        elif (problem.topic, name) == ("threshold", "status_at"):
            out[name] = {format_fraction(m): None for m in problem.magnitudes}
        elif (problem.topic, name) == ("causal", "stops"):
            out[name] = {str(k): None for k in range(1, len(problem.keys) + 1)}
        else:
            out[name] = None
    for name, _ in getattr(problem, "written", ()):
        out[name] = None
    return out


def answers_template(problem_set) -> str:
    """A copyable answers file with every field null: replace each null by the answer."""
    from .values import ANSWERS_SCHEMA

    data = {"schema": ANSWERS_SCHEMA}
    if problem_set.student is not None:
        data["student_id"] = problem_set.student
    data["answers"] = {p.id: blank_answer(p) for p in problem_set.problems}
    return compact_json(data)


def problem_markdown(problem, number=None) -> str:
    intro, parts = problem_parts(problem)
    head = f"Problem {number}" if number is not None else "Problem"
    lines = [f"### {head}: {TITLES[problem.topic]} (id `{problem.id}`)", ""]
    for paragraph in intro:
        lines += [paragraph, ""]
    for label, (name, text) in zip("abcdefgh", parts + _written(problem)):
        lines.append(f"- ({label}) {text} Answer field: `{name}`.")
    return "\n".join(lines) + "\n"


def problem_latex(problem, number: int) -> str:
    intro, parts = problem_parts(problem)
    out = [
        f"\\section*{{Problem {number}: {latex_escape(TITLES[problem.topic])}}}",
        f"\\noindent Problem id: \\texttt{{{latex_escape(problem.id)}}}.",
        "",
    ]
    for paragraph in intro:
        out += [paragraph, ""]
    out.append("\\begin{itemize}")
    for label, (name, text) in zip("abcdefgh", parts + _written(problem)):
        out.append(f"  \\item[({label})] {text} Answer field: \\texttt{{{latex_escape(name)}}}.")
    out.append("\\end{itemize}")
    return "\n".join(out) + "\n"


def problem_latex_display(problem) -> str:
    """A one-line maths display of a problem's data (for Jupyter's LaTeX output)."""
    data = {k: v for k, v in problem.to_json().items() if k not in ("id", "topic")}
    pieces = []
    for key, value in data.items():
        if isinstance(value, list) and value and isinstance(value[0], list):
            text = ",\\ ".join(vec_text(v) for v in value)
        elif isinstance(value, list):
            text = vec_text(value)
        else:
            text = str(value)
        pieces.append(f"\\text{{{latex_escape(key)}}} = {text}")
    return f"$\\text{{{latex_escape(problem.id)}}}:\\ " + ",\\quad ".join(pieces) + "$"


def preamble(title: str) -> list[str]:
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


def sheet_title(problem_set, what: str, for_student: bool) -> str:
    """A student's sheet names the student, never the seed (seed and id would regenerate the solutions)."""
    student = getattr(problem_set, "student", None)
    if student is None:
        return f"{what} (seed {problem_set.seed})"
    return f"{what} for student {student}" if for_student else f"{what} (seed {problem_set.seed}, student {student})"


_TEMPLATE_INTRO = (
    "Copy this answers file and replace each null by your answer (a field left null counts as not answered):"
)


def problem_set_markdown(problem_set) -> str:
    lines = [
        f"# {sheet_title(problem_set, 'LayerNorm and attention: problem set', True)}",
        "",
        _answers_intro(problem_set),
        "",
        _TEMPLATE_INTRO,
        "",
        "```json",
        answers_template(problem_set),
        "```",
        "",
    ]
    for number, problem in enumerate(problem_set.problems, 1):
        lines.append(problem_markdown(problem, number))
    return "\n".join(lines)


def problem_set_latex(problem_set) -> str:
    out = preamble(sheet_title(problem_set, "LayerNorm and attention: problem set", True))
    # straight quotes (typewriter) and two hyphens, as a student must type them
    intro = latex_escape(_answers_intro(problem_set)).replace('"', '\\texttt{"}').replace("--", "-{}-")
    out += [intro, "", latex_escape(_TEMPLATE_INTRO)]
    # verbatim in the typewriter font: its quotes are straight, so the JSON copies as valid JSON
    out += ["{\\small", "\\begin{verbatim}", answers_template(problem_set), "\\end{verbatim}", "}", ""]
    for number, problem in enumerate(problem_set.problems, 1):
        out.append(problem_latex(problem, number))
    out.append("\\end{document}")
    return "\n".join(out) + "\n"
