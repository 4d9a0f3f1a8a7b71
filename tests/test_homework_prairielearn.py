"""`lnproofs homework export --prairielearn DIR`: each topic as a PrairieLearn question whose server.py is
run here the way PrairieLearn's Python worker runs it: the file is compiled and executed into a fresh
namespace with the question folder as working directory and first on sys.path, `random` seeded with
the variant seed, and generate, parse and grade called in turn on one `data` dict (params,
correct_answers, submitted_answers, raw_submitted_answers, format_errors, partial_scores, score,
feedback, variant_seed, options), which must stay JSON (no NaN, integers within 2^53) between calls."""

from __future__ import annotations

import json
import os
import random
import re
import sys
import uuid

import pytest

from lnproofs.homework import TOPICS
from lnproofs.homework.prairielearn import read_answer_text


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    from lnproofs.cli import main

    folder = tmp_path_factory.mktemp("pl") / "course"
    assert main(["homework", "export", "--prairielearn", str(folder)]) == 0
    return folder


def _json_round_trip(data: dict) -> dict:
    def small(value):
        if isinstance(value, bool):
            return
        if isinstance(value, int):
            assert abs(value) <= 2**53, value
        elif isinstance(value, dict):
            for v in value.values():
                small(v)
        elif isinstance(value, list):
            for v in value:
                small(v)

    small(data)
    return json.loads(json.dumps(data, allow_nan=False))


def _call(folder, function: str, data: dict) -> dict:
    """One call as PrairieLearn's worker makes it (see the module docstring)."""
    path = folder / "server.py"
    saved_path, saved_cwd = list(sys.path), os.getcwd()
    random.seed(data["variant_seed"])
    sys.path.insert(0, str(folder))
    os.chdir(folder)
    try:
        namespace: dict = {}
        exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)
        returned = namespace[function](data)
        assert returned is None  # PrairieLearn's functions change data in place
    finally:
        sys.path[:], _ = saved_path, os.chdir(saved_cwd)
    return _json_round_trip(data)


def _fresh(seed: int) -> dict:
    return {
        "params": {},
        "correct_answers": {},
        "submitted_answers": {},
        "raw_submitted_answers": {},
        "format_errors": {},
        "partial_scores": {},
        "score": 0.0,
        "feedback": {},
        "variant_seed": seed,
        "options": {},
    }


def _submit(folder, data: dict, answers: dict) -> dict:
    data = json.loads(json.dumps(data))
    data["submitted_answers"] = dict(answers)
    data["raw_submitted_answers"] = dict(answers)
    data = _call(folder, "parse", data)
    assert not data["format_errors"], data["format_errors"]
    return _call(folder, "grade", data)


def test_each_topic_is_a_question_with_the_files_prairielearn_reads(course):
    for topic in TOPICS:
        folder = course / "questions" / "lnproofs" / topic
        assert sorted(p.name for p in folder.iterdir()) == ["info.json", "question.html", "server.py"]
        info = json.loads((folder / "info.json").read_text())
        assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", info["uuid"])
        assert uuid.UUID(info["uuid"]) and info["type"] == "v3" and info["title"] and info["topic"]
        assert set(info) <= {"uuid", "title", "topic", "tags", "type", "gradingMethod", "partialCredit"}
        page = (folder / "question.html").read_text()
        assert "{{{params.statement_html}}}" in page and "<pl-question-panel>" in page
    uuids = {json.loads((course / "questions" / "lnproofs" / t / "info.json").read_text())["uuid"] for t in TOPICS}
    assert len(uuids) == len(TOPICS)


@pytest.mark.parametrize("topic", TOPICS)
def test_generate_then_grade_a_correct_and_a_wrong_answer(course, topic):
    folder = course / "questions" / "lnproofs" / topic
    data = _call(folder, "generate", _fresh(1_234_567))
    page = (folder / "question.html").read_text()
    fields = list(data["correct_answers"])
    assert fields and all(f'answers-name="{name}"' in page for name in fields)
    assert data["params"]["problem"]["topic"] == topic and data["params"]["statement_html"]
    again = _call(folder, "generate", _fresh(1_234_567))
    assert again["params"] == data["params"]  # one variant per seed
    assert _call(folder, "generate", _fresh(7))["params"] != data["params"]  # a fresh variant per seed

    right = _submit(folder, data, data["correct_answers"])  # typed as the answer panel shows them
    assert right["score"] == 1.0, right["feedback"]
    assert all(s["score"] == 1.0 for s in right["partial_scores"].values())

    name = fields[0]
    wrong_value = "[]" if data["correct_answers"][name].startswith(("[", "{")) else "0"
    wrong = _submit(folder, data, {**data["correct_answers"], name: wrong_value})
    assert wrong["score"] < 1.0 and wrong["partial_scores"][name]["score"] < 1.0
    assert wrong["feedback"][name] != "correct" and wrong["partial_scores"][name]["feedback"]
    others = [f for f in fields if f != name]
    assert all(wrong["partial_scores"][f]["score"] == 1.0 for f in others)  # only that field's points are lost


def test_broken_json_is_a_format_error_not_a_grade(course):
    folder = course / "questions" / "lnproofs" / "ellipsoid"
    data = _call(folder, "generate", _fresh(99))
    data["submitted_answers"] = {"center": "[1, 2", "normal": "[1, 1, 1]"}
    data = _call(folder, "parse", data)
    assert "not valid JSON" in data["format_errors"]["center"] and "normal" not in data["format_errors"]


def test_typed_answers_are_read_as_the_answers_file_reads_them():
    assert read_answer_text(" [1, -1/2] ") == [1, "-1/2"]
    assert read_answer_text("[2*sqrt(3), sqrt(6)]") == ["2*sqrt(3)", "sqrt(6)"]
    assert read_answer_text("[[1, 4], [4, 9]]") == [[1, 4], [4, 9]] and read_answer_text("[]") == []
    assert read_answer_text('["2*sqrt(3)", "sqrt(6)"]') == ["2*sqrt(3)", "sqrt(6)"]
    assert read_answer_text("1 + sqrt(2)") == "1 + sqrt(2)"
    assert read_answer_text("3") == 3 and read_answer_text("Selectable") == "Selectable"
    with pytest.raises(ValueError, match="not valid JSON"):
        read_answer_text("[1, 2")
