"""Bad input to ``lnproofs homework``: malformed answers, unknown ids, missing problem folders."""

import json


def _problems(tmp_path):
    folder = tmp_path / "hw"
    folder.mkdir(exist_ok=True)
    data = {"schema": "lnproofs.homework/1", "seed": 0,
            "problems": [{"id": "threshold", "topic": "threshold", "magnitudes": ["2", "3"]}]}
    (folder / "problems.json").write_text(json.dumps(data))
    return folder


def _check(answers_text, with_problems=True):
    def make(tmp_path):
        path = tmp_path / "answers.json"
        path.write_text(answers_text)
        argv = ["homework", "check", path]
        if with_problems:
            argv += ["--problems", _problems(tmp_path)]
        return argv
    return make


def _missing_problems(tmp_path):
    path = tmp_path / "answers.json"
    path.write_text('{"answers": {}}')
    return ["homework", "check", path, "--problems", tmp_path / "nowhere"]


def _no_problems_json(tmp_path):
    path = tmp_path / "answers.json"
    path.write_text('{"answers": {}}')
    return ["homework", "check", path]


def _corrupt_problems(tmp_path):
    folder = tmp_path / "hw"
    folder.mkdir()
    (folder / "problems.json").write_text('{"schema": "lnproofs.homework/1", "seed": 0, "problems": [{"topic": "x"}]}')
    path = tmp_path / "answers.json"
    path.write_text('{"answers": {}}')
    return ["homework", "check", path, "--problems", folder]


CASES = [
    ("malformed-json", _check('{"answers": {"threshold": '), "not valid JSON"),
    ("not-an-object", _check('[1, 2, 3]'), "must be a JSON object"),
    ("wrong-schema", _check('{"schema": "other/1", "answers": {}}'), "schema"),
    ("unknown-problem-id", _check('{"answers": {"ellipse": {}}}'), "unknown problem id 'ellipse'"),
    ("unknown-answer-field", _check('{"answers": {"threshold": {"treshold": "1"}}}'), "no answer field 'treshold'"),
    ("answer-not-object", _check('{"answers": {"threshold": 3}}'), "must be a JSON object"),
    ("missing-answers-file", lambda tmp_path: ["homework", "check", tmp_path / "none.json", "--problems", tmp_path],
     "does not exist"),
    ("missing-problems-folder", _missing_problems, "does not exist"),
    ("folder-without-problems-json", _no_problems_json, "no problems.json"),
    ("corrupt-problems-json", _corrupt_problems, "unknown problem topic"),
    ("unknown-topic", lambda tmp_path: ["homework", "new", "--topics", "sphere,cones", "--out", tmp_path / "o"],
     "unknown topic 'cones'"),
    ("negative-seed", lambda tmp_path: ["homework", "new", "--seed", "-3", "--out", tmp_path / "o"], "--seed"),
    ("out-is-a-file", lambda tmp_path: (tmp_path / "f").write_text("x") and
     ["homework", "new", "--topics", "threshold", "--out", tmp_path / "f"], "is not a folder"),
    ("no-action", lambda tmp_path: ["homework"], "choose an action"),
]
