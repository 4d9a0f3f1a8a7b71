"""Reading a student's answers file and checking every answer exactly (the marking itself
is in :mod:`.marks_geometry`, :mod:`.marks_attention` and :mod:`.marks_vocab`, value parsing in :mod:`.values`).

The answers format (schema ``lnproofs.homework-answers/1``) is documented in
``docs/homework.md``.  Numbers are exact: JSON integers, ``"p/q"`` strings, decimals
(read as the exact decimal), and for symbolic fields expressions such as
``"2*sqrt(3)"``.  Expressions are parsed safely: the text may contain only numbers,
``+ - * / ^ **``, parentheses, commas and ``sqrt``; nothing is evaluated as Python.

A wrong answer always says why: which inequality fails and by how much, which key is
a counterexample, or the expected value next to the given one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..kernel import FileFormatError, InputError, require
from .marks_attention import check_selectability, check_threshold, check_uniform
from .marks_geometry import check_ellipsoid, check_projection, check_sphere
from .marks_vocab import check_vocab
from .values import ANSWERS_SCHEMA, PartResult, json_text, parse_expression

__all__ = [
    "ANSWERS_SCHEMA",
    "PartResult",
    "ProblemResult",
    "CheckResult",
    "parse_expression",
    "load_answers",
    "load_problem_set",
    "check_answers",
]


@dataclass(frozen=True)
class ProblemResult:
    """All verdicts for one problem."""

    problem: str
    parts: tuple[PartResult, ...]

    @property
    def ok(self) -> bool:
        return all(p.ok for p in self.parts)

    def to_json(self) -> dict:
        return {"id": self.problem, "ok": self.ok, "parts": [p.to_json() for p in self.parts]}


@dataclass(frozen=True)
class CheckResult:
    """The outcome of checking an answers file: ``ok`` only if every given answer is right.

    ``notes`` name what could not be matched to the problem set (a misspelt problem id or answer
    field, with the nearest valid name); only that problem's or field's points are lost."""

    problems: tuple[ProblemResult, ...]
    unanswered: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    #: the parts answered in words, for grading by hand: (problem id, part, prompt, text)
    written: tuple[tuple[str, str, str, str], ...] = ()

    @property
    def ok(self) -> bool:
        return all(p.ok for p in self.problems) and not self.notes

    @property
    def counts(self) -> tuple[int, int]:
        parts = [part for p in self.problems for part in p.parts]
        return sum(part.ok for part in parts), len(parts)

    def to_json(self) -> dict:
        right, total = self.counts
        return {
            "ok": self.ok,
            "correct": right,
            "parts": total,
            "unanswered": list(self.unanswered),
            "notes": list(self.notes),
            "problems": [p.to_json() for p in self.problems],
        }

    def to_text(self) -> str:
        lines = []
        for problem in self.problems:
            wrong = [p for p in problem.parts if not p.ok]
            if not wrong:
                lines.append(f"{problem.problem}: correct ({len(problem.parts)} of {len(problem.parts)} parts)")
                continue
            lines.append(f"{problem.problem}: {len(wrong)} of {len(problem.parts)} parts wrong")
            lines.extend(f"  {p.part}: {p.message}" for p in wrong)
        if self.unanswered:
            lines.append("not answered: " + ", ".join(self.unanswered))
        lines += [f"note: {note}" for note in self.notes]
        right, total = self.counts
        lines.append(f"{right} of {total} parts correct" + ("" if self.ok else "; see the messages above"))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_text()

    def _repr_markdown_(self) -> str:
        right, total = self.counts
        rows = ["| problem | part | verdict |", "|---|---|---|"]
        for problem in self.problems:
            for p in problem.parts:
                verdict = "correct" if p.ok else "**wrong**: " + p.message.replace("|", "\\|")
                rows.append(f"| {p.problem} | {p.part} | {verdict} |")
        head = f"**Homework check**: {right} of {total} parts correct"
        if self.unanswered:
            head += f" (not answered: {', '.join(self.unanswered)})"
        return head + "\n\n" + "\n".join(rows)

    def _repr_latex_(self) -> str:
        from .statements import latex_escape

        right, total = self.counts
        items = []
        for problem in self.problems:
            for p in problem.parts:
                verdict = r"\checkmark" if p.ok else r"\times"
                label = f"{p.problem}: {p.part}".replace("_", " ")
                items.append(rf"\text{{{latex_escape(label)}}} & {verdict}")
        body = r" \\ ".join(items)
        return rf"$\begin{{array}}{{ll}} {body} \\ \text{{{right} of {total} correct}} \end{{array}}$"


# ------------------------------------------------------------------ files
def load_answers(path) -> dict:
    """Read and validate the answers file; bad files raise FileFormatError (exit status 2)."""
    path = Path(path)
    require(path.exists(), FileFormatError, f"answers file {path} does not exist")
    require(path.is_file(), FileFormatError, f"answers file {path} is not a file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise FileFormatError(f"answers file {path} is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise FileFormatError(
            f"answers file {path} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:
        raise FileFormatError(
            f"answers file {path} is nested too deep to be an answers file (arrays or "
            "objects inside each other past the reader's limit)"
        ) from None
    except ValueError as exc:  # an integer past Python's digit limit
        raise FileFormatError(f"answers file {path} is not valid JSON ({str(exc)[:100]})") from None
    require(
        isinstance(data, dict) and isinstance(data.get("answers"), dict),
        FileFormatError,
        f"answers file {path} must be a JSON object with an object 'answers' mapping problem ids to answers",
    )
    schema = data.get("schema", ANSWERS_SCHEMA)
    require(
        schema == ANSWERS_SCHEMA,
        FileFormatError,
        f"answers file {path} has schema {schema!r}; expected {ANSWERS_SCHEMA!r}",
    )
    return data


def load_problem_set(folder):
    """The problem set stored in ``folder/problems.json`` (written by ``homework new``)."""
    from .generate import ProblemSet

    folder = Path(folder)
    require(
        folder.is_dir(),
        FileFormatError,
        f"problems folder {folder} does not exist; pass the folder written by 'lnproofs homework new' with --problems",
    )
    path = folder / "problems.json"
    require(
        path.is_file(),
        FileFormatError,
        f"problems folder {folder} has no problems.json; pass the folder written by 'lnproofs homework new'",
    )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, RecursionError) as exc:
        raise FileFormatError(f"{path} is not valid JSON ({str(exc)[:100]})") from None
    try:
        return ProblemSet.from_json(data)
    except InputError as err:
        raise FileFormatError(f"{path}: {err}") from None


_SIMPLE = {
    "projection": check_projection,
    "sphere": check_sphere,
    "ellipsoid": check_ellipsoid,
    "uniform": check_uniform,
    "threshold": check_threshold,
}


def nearest(name, valid) -> str:
    """``; did you mean 'x'?`` for the valid name closest to ``name`` (or '' when none is close)."""
    import difflib

    folded = {v.lower(): v for v in valid}
    close = difflib.get_close_matches(str(name).lower(), list(folded), n=1, cutoff=0.5)
    return f"; did you mean {folded[close[0]]!r}?" if close else ""


def blank(value) -> bool:
    """Left blank: null, or an object whose every value is blank (as in the answers template)."""
    return value is None or (isinstance(value, dict) and all(blank(v) for v in value.values()))


def _fields(problem, answer) -> tuple[dict, dict]:
    """(the answer's fields that the problem has, the field names it does not have -> its nearest name)."""
    valid = problem.fields + tuple(name for name, _ in getattr(problem, "written", ()))
    given = {k: v for k, v in answer.items() if not blank(v)}
    unknown = {k: nearest(k, valid) for k in given if k not in valid}
    return {k: v for k, v in given.items() if k in valid}, unknown


def _misspelt(parts, unknown: dict) -> list:
    """Every field not answered names the misspelt field that was probably meant for it."""
    out = []
    for part in parts:
        hint = next((k for k, near in unknown.items() if near == f"; did you mean {part.part!r}?"), None)
        if hint is not None and not part.ok and part.message.startswith("no answer given"):
            extra = f"; you wrote {hint!r}: write {part.part!r} instead"
            part = PartResult(part.problem, part.part, False, part.message + extra, hidden=part.hidden + extra)
        out.append(part)
    return out


def check_problem(problem, answer: dict, solution=None) -> ProblemResult:
    """Check the answer object for one problem (fields as in ``problem.fields``)."""
    if not isinstance(answer, dict):
        example = "{" + ", ".join(f'"{f}": ...' for f in problem.fields) + "}"
        message = f"the answer to {problem.id!r} must be an object naming its fields, {example}; you wrote {json_text(answer)}"
        return ProblemResult(problem.id, tuple(PartResult(problem.id, f, False, message) for f in problem.fields))
    answer, unknown = _fields(problem, answer)
    if problem.topic == "selectability":
        parts = check_selectability(problem, answer, solution or problem.solve())
    elif problem.topic == "vocab":
        parts = check_vocab(problem, answer, solution or problem.solve())
    elif problem.topic in _SIMPLE:
        parts = _SIMPLE[problem.topic](problem, answer)
    else:
        parts = problem.mark(answer)
    return ProblemResult(problem.id, tuple(_misspelt(parts, unknown)))


def _field_notes(problem, answer) -> list[str]:
    if not isinstance(answer, dict):
        return []
    _, unknown = _fields(problem, answer)
    return [f"{problem.id}: {name!r} is not an answer field{near}" for name, near in unknown.items()]


def check_answers(problem_set, answers) -> CheckResult:
    """Check a whole answers object (the parsed answers file) against a problem set.

    Problems that the answers leave out are listed as unanswered, not counted wrong.  A problem
    id or answer field that the set does not have loses only that problem's or field's points,
    with a note naming the nearest valid name; the rest is checked as usual.
    """
    if isinstance(answers, dict) and "answers" in answers:
        answers = answers["answers"]
    require(isinstance(answers, dict), InputError, "answers must be an object mapping problem ids to answers")
    problems = problem_set.by_id()
    notes = [
        f"{pid!r} is not a problem of this set, so its answers were not checked{nearest(pid, problems)}"
        for pid in answers
        if pid not in problems
    ]
    given = {pid: a for pid, a in answers.items() if pid in problems and not blank(a)}
    results = tuple(check_problem(problems[pid], given[pid]) for pid in problems if pid in given)
    for pid in problems:
        if pid in given:
            notes += _field_notes(problems[pid], given[pid])
    unanswered = tuple(pid for pid in problems if pid not in given)
    return CheckResult(results, unanswered, tuple(notes), _written(problems, given))


def _written(problems, given) -> tuple:
    out = []
    for pid, problem in problems.items():
        answer = given.get(pid)
        for name, prompt in getattr(problem, "written", ()):
            text = answer.get(name) if isinstance(answer, dict) else None
            if text is not None:
                out.append((pid, name, prompt, text if isinstance(text, str) else json_text(text)))
    return tuple(out)
