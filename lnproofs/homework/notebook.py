"""A student's problem set as a Jupyter notebook whose last cell writes the answers file.

The notebook is written as nbformat 4.5 JSON with the standard library alone (fixed
cell ids, no outputs, so the same problems give the same bytes).  It needs nothing but
Python to run: each problem has a Markdown cell with the problem and a code cell with
one line per answer field set to ``None``; the student replaces ``None`` by the answer
(numbers, ``"p/q"`` strings, expressions such as ``"2*sqrt(3)"``; a ``Fraction`` or a
SymPy number is written as its text), and the last cell writes ``ID.json`` in the
answers format of ``docs/homework.md``, leaving out every field still ``None``.
"""

from __future__ import annotations

import json

from .values import ANSWERS_SCHEMA

__all__ = ["notebook_json", "notebook_text", "answer_cell_source", "FIELD_HINTS"]

#: what each answer field takes, shown as a comment next to it
FIELD_HINTS = {
    ("projection", "P"): 'n rows of n numbers, e.g. [["3/4", "-1/4", ...], ...]',
    ("projection", "P_squared"): "n rows of n numbers",
    ("projection", "Px"): "n numbers",
    ("sphere", "Px"): "n numbers",
    ("sphere", "norm_Px"): 'one expression, such as "p*sqrt(q)" with numbers p and q',
    ("sphere", "g"): "n expressions",
    ("sphere", "norm_g_eps"): "one expression",
    ("ellipsoid", "center"): "n numbers",
    ("ellipsoid", "normal"): "n numbers (any non-zero multiple of a normal)",
    ("ellipsoid", "semi_axes"): "a list of expressions, in any order",
    ("uniform", "query"): "n numbers, not all zero",
    ("threshold", "threshold"): "one expression",
    ("vocab", "never"): "a list of token numbers, e.g. [2, 5] (an empty list [] if every token can be output)",
    ("rmsnorm", "y"): "n expressions",
    ("rmsnorm", "semi_axes"): "a list of n expressions, in any order",
    ("rmsnorm", "scale"): "one expression",
    ("interlacing", "brackets"): "a list of pairs [lo, hi], e.g. [[1, 4], [4, 9]]",
    ("interlacing", "f_at"): "one number",
    ("interlacing", "below"): "a whole number",
    ("softmax", "max_log_odds"): "one expression",
    ("softmax", "query"): "2 expressions",
    ("softmax", "radius_for"): "one expression",
    ("rotary", "relative"): "2 rows of 2 numbers",
    ("rotary", "winners"): "a list of key numbers, e.g. [1, 3]",
    ("support", "max_score"): "one expression",
    ("support", "min_score"): "one expression",
    ("support", "argmax"): "n expressions",
    ("centred", "winners"): "a list of key numbers, e.g. [1, 3]",
}
_WRITTEN_HINT = "your explanation in words (graded by hand)"
_KEY_HINT = (
    '{"status": "selectable", "query": [...]} or {"status": "tie-only" or "unselectable", '
    '"combination": {"keys": [...], "weights": [...]}}'
)
_STATUS_HINT = '"selectable", "tie-only" or "unselectable"'


def _hint(problem, name, inner: bool) -> str:
    if problem.topic == "selectability":
        return _KEY_HINT
    if problem.topic == "threshold" and inner:
        return _STATUS_HINT
    if problem.topic == "causal" and inner:
        return 'a position, or "never"'
    if name in dict(getattr(problem, "written", ())):
        return _WRITTEN_HINT
    return FIELD_HINTS.get((problem.topic, name), "")


def answer_cell_source(problem) -> str:
    """The code cell of one problem: ``answers["ID"] = {...}`` with every field ``None``."""
    from .sheet import blank_answer

    lines = [f"answers[{json.dumps(problem.id)}] = {{"]
    for name, value in blank_answer(problem).items():
        if isinstance(value, dict):
            lines.append(f"    {json.dumps(name)}: {{")
            for number, key in enumerate(value):
                hint = _hint(problem, name, True)
                shown = f"  # {hint}" if hint and (number == 0 or problem.topic != "selectability") else ""
                lines.append(f"        {json.dumps(key)}: None,{shown}")
            lines.append("    },")
        else:
            lines.append(f"    {json.dumps(name)}: None,  # {_hint(problem, name, False)}".rstrip())
    lines.append("}")
    return "\n".join(lines)


def _writer_source(student_id) -> str:
    target = f"{student_id}.json" if student_id else "answers.json"
    identity = f'"student_id": {json.dumps(student_id)}, ' if student_id else ""
    return "\n".join(
        [
            f"# Run this cell to write your answers file, then hand in {target}.",
            "# Fields still None are left out (a problem left entirely None counts as not answered).",
            "import json",
            "",
            "",
            "def _given(value):",
            "    if hasattr(value, 'tolist'):  # NumPy numbers and arrays: plain Python values",
            "        value = value.tolist()",
            "    if isinstance(value, dict):",
            "        kept = {str(k): _given(v) for k, v in value.items() if v is not None}",
            "        return {k: v for k, v in kept.items() if v != {}}",
            "    if isinstance(value, (list, tuple)):",
            "        return [_given(v) for v in value]",
            "    return value",
            "",
            "",
            f'with open({json.dumps(target)}, "w", encoding="utf-8") as file:',
            f'    json.dump({{"schema": {json.dumps(ANSWERS_SCHEMA)}, {identity}"answers": _given(answers)}}, file,',
            "              indent=2, default=str)",
            f'print("wrote {target} with answers to:", ", ".join(_given(answers)) or "nothing yet")',
        ]
    )


def _cell(kind: str, cell_id: str, source: str, problem: str | None = None) -> dict:
    cell = {
        "cell_type": kind,
        "id": cell_id,
        "metadata": {"lnproofs": {"problem": problem}} if problem else {},
        "source": source,
    }
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def notebook_json(problem_set, student=None) -> dict:
    """The notebook as a JSON object (nbformat 4.5); ``student`` is a roster :class:`.roster.Student` or None."""
    from .sheet import problem_markdown

    student_id = problem_set.student
    who = f" for {student.label}" if student is not None else (f" for student {student_id}" if student_id else "")
    target = f"{student_id}.json" if student_id else "answers.json"
    intro = "\n".join(
        [
            f"# LayerNorm and attention: problem set{who}",
            "",
            "Work each problem below, then replace `None` in the cell after it by your answer. Give exact values: "
            'integers, fractions as strings `"p/q"`, square roots as strings such as `"p*sqrt(q)"` '
            "(a `fractions.Fraction` or a SymPy number also works). Leave `None` where you have no answer.",
            "",
            f"When you are done, run every cell (Run All); the last cell writes `{target}`. Hand in that file.",
        ]
    )
    cells = [_cell("markdown", "intro", intro), _cell("code", "answers", "answers = {}")]
    for number, problem in enumerate(problem_set.problems, 1):
        cells.append(_cell("markdown", f"problem-{number}", problem_markdown(problem, number).rstrip(), problem.id))
        cells.append(_cell("code", f"answer-{number}", answer_cell_source(problem), problem.id))
    cells.append(_cell("code", "write-answers", _writer_source(student_id)))
    return {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def notebook_text(problem_set, student=None) -> str:
    """The notebook file's text (UTF-8 JSON, one cell field per line, stable bytes)."""
    return json.dumps(notebook_json(problem_set, student), indent=1, ensure_ascii=False) + "\n"
