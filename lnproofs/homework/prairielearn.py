"""Each topic as a PrairieLearn question: ``info.json``, ``question.html`` and a ``server.py`` whose
``generate``, ``parse`` and ``grade`` call this module, that is lnproofs' own generator and exact checker.

PrairieLearn calls ``generate(data)`` for a new variant (``data["variant_seed"]`` picks it; every
variant is drawn as ``homework new`` draws the topic, with its claims), ``parse(data)`` when a student
submits (each answer is typed as in the answers file: JSON for lists and objects, an expression or a
status as it is), and ``grade(data)``, which sets ``partial_scores`` (one entry per answer field, its
weight the points of the field), ``score`` and ``feedback`` from the exact checker's verdicts.
``server.py`` imports lnproofs, so the course's PrairieLearn must provide it (and its dependencies) to
question code.
"""

from __future__ import annotations

import hashlib
import html
import json
import uuid
from pathlib import Path

from ..certificates.writes import folder_entry, output_folder, write_text

__all__ = ["export_prairielearn", "pl_generate", "pl_parse", "pl_grade", "read_answer_text", "QUESTIONS_DIR"]

QUESTIONS_DIR = Path("questions") / "lnproofs"

_SERVER = '''"""PrairieLearn question "{title}", written by `lnproofs homework export --prairielearn`.

generate, parse and grade call lnproofs (its generator and its exact checker): lnproofs must be
importable by this course's question code.
"""

from lnproofs.homework.prairielearn import pl_generate, pl_grade, pl_parse

TOPIC = "{topic}"


def generate(data):
    pl_generate(data, TOPIC)


def parse(data):
    pl_parse(data, TOPIC)


def grade(data):
    pl_grade(data, TOPIC)
'''


def _seed(data) -> int:
    """A seed below 2^53 (PrairieLearn keeps integers within JavaScript's safe range) from the variant seed."""
    digest = hashlib.sha256(f"lnproofs.prairielearn/{data.get('variant_seed')}".encode()).digest()
    return int.from_bytes(digest[:6], "big")


def _statement_html(problem) -> str:
    from .statements import problem_parts

    intro, parts = problem_parts(problem)
    out = [f"<p>{html.escape(p)}</p>" for p in intro]
    items = [f"<li>{html.escape(text)} Answer field: <code>{html.escape(name)}</code>.</li>" for name, text in parts]
    return "\n".join(out + ['<ol type="a">', *items, "</ol>"])


def _answer_text(value) -> str:
    """How a student types a value: a string as it is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def pl_generate(data: dict, topic: str) -> None:
    """A new variant: the problem's data and statement in ``params``, the answers in ``correct_answers``."""
    from .generate import generate

    (problem,) = generate(_seed(data), topic).problems
    solution = problem.solve()
    data["params"]["problem"] = problem.to_json()
    data["params"]["statement_html"] = _statement_html(problem)
    data["correct_answers"].update({name: _answer_text(v) for name, v in solution.answers.items()})


def _items(text: str) -> list:
    """A list written without quotes, ``[2*sqrt(3), sqrt(6)]`` or ``[[1, 4], [4, 9]]``: split at the commas
    outside brackets and parentheses; each item read again."""
    inner, items, depth, start = text[1:-1], [], 0, 0
    for i, c in enumerate(inner):
        depth += (c in "[(") - (c in "])")
        if c == "," and depth == 0:
            items.append(inner[start:i])
            start = i + 1
    items.append(inner[start:])
    if len(items) == 1 and not items[0].strip():
        return []
    return [read_answer_text(item) for item in items]


def read_answer_text(text):
    """A typed answer: JSON when it reads as JSON (lists, objects, numbers), a list of expressions written
    without quotes, else the text itself (an expression such as ``1 + sqrt(2)`` or a status); ValueError
    for broken brackets."""
    text = str(text).strip()
    try:
        return json.loads(text)
    except ValueError:
        if text.startswith("[") and text.endswith("]") and text.count("[") == text.count("]"):
            return _items(text)
        if text[:1] in "[{":
            raise ValueError(
                f"{text[:40]!r} is not valid JSON: write a list as [1, -1, 0] and an object as "
                '{"1": "selectable"}, with strings in double quotes'
            ) from None
        return text


def pl_parse(data: dict, topic: str) -> None:
    """Each submitted answer read as :func:`read_answer_text` reads it; broken JSON is a format error
    (the submission is then not graded and costs no attempt)."""
    from .problems import PROBLEM_CLASSES

    for name in PROBLEM_CLASSES[topic].fields:
        raw = data["submitted_answers"].get(name)
        if raw is None or name in data["format_errors"]:
            continue
        try:
            data["submitted_answers"][name] = read_answer_text(raw)
        except ValueError as err:
            data["format_errors"][name] = str(err)


def _field_of(part: str, fields, named) -> str:
    """The answer field a part belongs to: itself, or the field counted by key or token."""
    return part if part in fields else next(f for f in fields if f not in named)


def pl_grade(data: dict, topic: str) -> None:
    """Partial scores per answer field (weight: its points), the total score and feedback, from the checker."""
    from .answers import check_problem
    from .problems import problem_from_json

    problem = problem_from_json(data["params"]["problem"])
    answer = {k: v for k, v in data["submitted_answers"].items() if k in problem.fields and v not in (None, "")}
    result = check_problem(problem, answer)
    named = {p.part for p in result.parts}
    fields: dict[str, list] = {name: [] for name in problem.fields}
    for part in result.parts:
        fields[_field_of(part.part, problem.fields, named)].append(part)
    for name, parts in fields.items():
        right = sum(p.ok for p in parts)
        messages = "; ".join(p.message if p.part == name else f"{p.part}: {p.message}" for p in parts if not p.ok)
        data["partial_scores"][name] = {"score": right / len(parts), "weight": len(parts), "feedback": messages}
        data["feedback"][name] = messages or "correct"
    total = sum(len(parts) for parts in fields.values())
    data["score"] = sum(p.ok for p in result.parts) / total


def _question_html(problem_class) -> str:
    from .notebook import FIELD_HINTS

    inputs = []
    for name in problem_class.fields:
        hint = FIELD_HINTS.get((problem_class.topic, name), "JSON, as in the answers file")
        inputs.append(
            f'<pl-string-input answers-name="{name}" label="<code>{name}</code>" '
            f'placeholder="{html.escape(hint, quote=True)}" size="60" remove-spaces="false"></pl-string-input>'
        )
    return (
        "\n".join(
            [
                "<pl-question-panel>",
                "{{{params.statement_html}}}",
                "<p>Give exact values: integers, fractions such as 3/4, square roots such as 2*sqrt(3); lists and "
                'objects as in JSON, such as [1, -1/2] or {"1": "selectable"}.</p>',
                "</pl-question-panel>",
                *inputs,
                "<pl-submission-panel>",
                *[f"<p><code>{name}</code>: {{{{feedback.{name}}}}}</p>" for name in problem_class.fields],
                "</pl-submission-panel>",
            ]
        )
        + "\n"
    )


def export_prairielearn(course, topics) -> dict:
    """Write every topic as ``COURSE/questions/lnproofs/TOPIC/``; returns topic -> folder."""
    from .problems import PROBLEM_CLASSES
    from .statements import TITLES

    course = output_folder(course, "--prairielearn")
    written = {}
    for topic in topics:
        cls = PROBLEM_CLASSES[topic]
        folder = folder_entry(course, QUESTIONS_DIR / topic, folder=True)
        info = {
            "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"lnproofs.homework/{topic}")),
            "title": TITLES[topic],
            "topic": "LayerNorm and attention",
            "tags": ["lnproofs", topic],
            "type": "v3",
            "gradingMethod": "Internal",
            "partialCredit": True,
        }
        write_text(folder_entry(folder, "info.json"), json.dumps(info, indent=2) + "\n")
        write_text(folder_entry(folder, "question.html"), _question_html(cls))
        write_text(folder_entry(folder, "server.py"), _SERVER.format(title=TITLES[topic], topic=topic))
        written[topic] = folder
    return written
