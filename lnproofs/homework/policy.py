"""Grading policies: how much feedback each topic gives, when the expected answers are shown, and what
Gradescope shows when.

A policy file (JSON, schema ``lnproofs.homework-policy/1``; ``docs/homework.md`` documents it)::

    {"schema": "lnproofs.homework-policy/1",
     "feedback": {"default": "full",
                  "threshold": "hide-answer",
                  "ellipsoid": {"level": "score-only", "reveal_after": "2026-12-20T23:59:00+00:00"}},
     "gradescope": {"visibility": "visible", "stdout_visibility": "hidden",
                    "tests": {"default": "visible", "vocab": "after_due_date"}}}

Feedback levels: ``full`` (every message, with the expected answer), ``hide-answer`` (every message,
with each part that gives the expected answer away replaced by ``[hidden]``) and ``score-only`` (the
points alone).  ``reveal_after``: from that moment on (ISO 8601; a time without a zone is UTC) the topic
gets ``full`` feedback.  The moment of grading is an argument (``now``): nothing here reads the clock.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ..kernel import FileFormatError, require

__all__ = [
    "POLICY_SCHEMA",
    "LEVELS",
    "VISIBILITIES",
    "TopicPolicy",
    "Policy",
    "read_policy",
    "policy_from_json",
    "parse_moment",
    "DEFAULT_POLICY",
]

POLICY_SCHEMA = "lnproofs.homework-policy/1"
LEVELS = ("full", "hide-answer", "score-only")
#: Gradescope's visibility values (its autograder specification)
VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")


@dataclass(frozen=True)
class TopicPolicy:
    """The feedback of one topic: its level, and when (if ever) the expected answers are shown anyway."""

    level: str = "full"
    reveal_after: datetime | None = None

    def level_at(self, now: datetime | None) -> str:
        if self.reveal_after is not None and now is not None and now >= self.reveal_after:
            return "full"
        return self.level


@dataclass(frozen=True)
class Policy:
    """A whole policy: per topic feedback, and Gradescope's visibilities."""

    topics: dict = field(default_factory=dict)
    default: TopicPolicy = TopicPolicy()
    visibility: str = "visible"
    stdout_visibility: str = "hidden"
    test_visibility: dict = field(default_factory=dict)
    default_test_visibility: str = "visible"

    def of(self, topic: str) -> TopicPolicy:
        return self.topics.get(topic, self.default)

    def visibility_of(self, topic: str) -> str:
        return self.test_visibility.get(topic, self.default_test_visibility)


DEFAULT_POLICY = Policy()


def _near(name, valid) -> str:
    from .answers import nearest

    return nearest(name, valid)


def parse_moment(text, where: str) -> datetime:
    require(isinstance(text, str), FileFormatError, f"{where} must be a date-time such as 2026-12-20T23:59:00+00:00")
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise FileFormatError(
            f"{where} {text!r} is not a date-time; write it as 2026-12-20T23:59:00+00:00 (ISO 8601)"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def _topic_policy(value, where: str) -> TopicPolicy:
    if isinstance(value, str):
        value = {"level": value}
    require(isinstance(value, dict), FileFormatError, f'{where} must be a level such as "hide-answer" or an object')
    unknown = [k for k in value if k not in ("level", "reveal_after")]
    require(not unknown, FileFormatError, f"{where} has no setting {unknown[:1]}; accepted: level, reveal_after")
    level = value.get("level", "full")
    require(
        level in LEVELS,
        FileFormatError,
        f"{where} level {level!r} is not one of {', '.join(LEVELS)}{_near(level, LEVELS)}",
    )
    reveal = value.get("reveal_after")
    return TopicPolicy(level, None if reveal is None else parse_moment(reveal, f"{where} reveal_after"))


def _visibility(value, where: str) -> str:
    require(
        value in VISIBILITIES,
        FileFormatError,
        f"{where} {value!r} is not one of Gradescope's {', '.join(VISIBILITIES)}{_near(str(value), VISIBILITIES)}",
    )
    return value


def policy_from_json(data, topics) -> Policy:
    """A :class:`Policy` from its JSON form; every topic named must be one of ``topics``."""
    require(
        isinstance(data, dict) and data.get("schema", POLICY_SCHEMA) == POLICY_SCHEMA,
        FileFormatError,
        f'a policy must be a JSON object with "schema": "{POLICY_SCHEMA}"',
    )
    unknown = [k for k in data if k not in ("schema", "feedback", "gradescope")]
    require(not unknown, FileFormatError, f"the policy has no section {unknown[:1]}; accepted: feedback, gradescope")
    feedback = data.get("feedback", {})
    require(isinstance(feedback, dict), FileFormatError, "the policy's 'feedback' must map topics to levels")
    per_topic = {}
    for name, value in feedback.items():
        require(
            name == "default" or name in topics,
            FileFormatError,
            f"the policy's feedback names {name!r}, which is no topic of this homework{_near(name, topics)}",
        )
        per_topic[name] = _topic_policy(value, f"feedback {name!r}")
    gradescope = data.get("gradescope", {})
    require(isinstance(gradescope, dict), FileFormatError, "the policy's 'gradescope' must be an object")
    tests = gradescope.get("tests", {})
    require(isinstance(tests, dict), FileFormatError, "the policy's gradescope 'tests' must map topics to visibilities")
    for name in tests:
        require(
            name == "default" or name in topics,
            FileFormatError,
            f"gradescope tests names {name!r}, which is no topic{_near(name, topics)}",
        )
    return Policy(
        topics={k: v for k, v in per_topic.items() if k != "default"},
        default=per_topic.get("default", TopicPolicy()),
        visibility=_visibility(gradescope.get("visibility", "visible"), "gradescope visibility"),
        stdout_visibility=_visibility(gradescope.get("stdout_visibility", "hidden"), "gradescope stdout_visibility"),
        test_visibility={k: _visibility(v, f"gradescope tests {k!r}") for k, v in tests.items() if k != "default"},
        default_test_visibility=_visibility(tests.get("default", "visible"), "gradescope tests 'default'"),
    )


def read_policy(path, topics) -> Policy:
    """The policy in the JSON file ``path`` (refused with one line naming what is wrong)."""
    path = Path(path)
    require(path.is_file(), FileFormatError, f"policy file {path} does not exist")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise FileFormatError(f"policy file {path} is not valid JSON ({type(exc).__name__})") from None
    try:
        return policy_from_json(data, topics)
    except FileFormatError as err:
        raise FileFormatError(f"policy file {path}: {err}") from None
