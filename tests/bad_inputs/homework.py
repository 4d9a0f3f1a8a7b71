"""Bad input to ``lnproofs homework``: malformed answers, unknown ids, missing problem folders, bad
rosters and bad grading options (a malformed *submission* is not bad input: it is listed apart)."""

import json


def _problems(tmp_path):
    folder = tmp_path / "hw"
    folder.mkdir(exist_ok=True)
    data = {
        "schema": "lnproofs.homework/1",
        "seed": 0,
        "problems": [{"id": "threshold", "topic": "threshold", "magnitudes": ["2", "3"]}],
    }
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


def _vocab_problems(change):
    def make(tmp_path):
        folder = tmp_path / "hw"
        folder.mkdir()
        problem = {"id": "vocab", "topic": "vocab", "unembedding": [[i, 1, 0] for i in range(8)], "bias": [0] * 8}
        problem.update(change)
        (folder / "problems.json").write_text(
            json.dumps({"schema": "lnproofs.homework/1", "seed": 0, "problems": [problem]})
        )
        path = tmp_path / "answers.json"
        path.write_text('{"answers": {"vocab": {"never": []}}}')
        return ["homework", "check", path, "--problems", folder]

    return make


def _roster(content):
    def make(tmp_path):
        path = tmp_path / "roster.csv"
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
        return ["homework", "new", "--roster", path, "--topics", "threshold", "--no-pdf", "--out", tmp_path / "o"]

    return make


def _out_not_empty(tmp_path):
    argv = _roster("id\nada\n")(tmp_path)
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "thesis.tex").write_text("x")
    return argv


def _out_with_other_students(tmp_path):
    argv = _roster("id\nada\n")(tmp_path)
    (tmp_path / "o" / "students" / "zed").mkdir(parents=True)
    (tmp_path / "o" / "class.json").write_text("{}")
    return argv


def _class(class_text):
    def make(tmp_path):
        (tmp_path / "hw").mkdir()
        (tmp_path / "hw" / "class.json").write_text(class_text)
        (tmp_path / "subs").mkdir()
        return ["homework", "grade", tmp_path / "subs", "--problems", tmp_path / "hw", "--out", tmp_path / "g.csv"]

    return make


_GOOD_CLASS = json.dumps(
    {
        "schema": "lnproofs.homework-class/1",
        "seed": 1,
        "topics": ["threshold"],
        "students": [{"id": "ada", "name": "", "email": "ada@example.org"}],
    }
)


def _grade(*extra, metadata=None):
    def make(tmp_path):
        argv = _class(_GOOD_CLASS)(tmp_path)
        if metadata is not None:
            (tmp_path / "meta.json").write_text(metadata)
            argv += ["--metadata", tmp_path / "meta.json"]
        return argv + list(extra)

    return make


def _out_is_folder(tmp_path):
    argv = _class(_GOOD_CLASS)(tmp_path)
    (tmp_path / "g.csv").mkdir()
    return argv


def _feedback_is_file(tmp_path):
    argv = _class(_GOOD_CLASS)(tmp_path)
    (tmp_path / "fb").write_text("x")
    return argv + ["--feedback", tmp_path / "fb"]


CASES = [
    ("malformed-json", _check('{"answers": {"threshold": '), "not valid JSON"),
    ("not-an-object", _check("[1, 2, 3]"), "must be a JSON object"),
    ("wrong-schema", _check('{"schema": "other/1", "answers": {}}'), "schema"),
    (
        "missing-answers-file",
        lambda tmp_path: ["homework", "check", tmp_path / "none.json", "--problems", tmp_path],
        "does not exist",
    ),
    ("missing-problems-folder", _missing_problems, "does not exist"),
    ("folder-without-problems-json", _no_problems_json, "no problems.json"),
    ("corrupt-problems-json", _corrupt_problems, "unknown problem topic"),
    ("vocab-rows-not-distinct", _vocab_problems({"unembedding": [[1, 1, 0]] * 8}), "must be distinct"),
    ("vocab-row-too-short", _vocab_problems({"unembedding": [[1, 1]] * 8}), "row 1 of 'unembedding' must be 3"),
    ("vocab-seven-tokens", _vocab_problems({"bias": [0] * 7}), "'bias' must be a list of 8 integers"),
    ("vocab-entry-too-large", _vocab_problems({"bias": [10**9] + [0] * 7}), "of size at most 20"),
    (
        "unknown-topic",
        lambda tmp_path: ["homework", "new", "--topics", "sphere,cones", "--out", tmp_path / "o"],
        "unknown topic 'cones'",
    ),
    ("negative-seed", lambda tmp_path: ["homework", "new", "--seed", "-3", "--out", tmp_path / "o"], "--seed"),
    (
        "out-is-a-file",
        lambda tmp_path: (
            (tmp_path / "f").write_text("x") and ["homework", "new", "--topics", "threshold", "--out", tmp_path / "f"]
        ),
        "is not a folder",
    ),
    ("no-action", lambda tmp_path: ["homework"], "choose an action"),
    # rosters: every field validated, one line naming the row
    (
        "roster-missing",
        lambda tmp_path: ["homework", "new", "--roster", tmp_path / "none.csv", "--out", tmp_path / "o"],
        "does not exist",
    ),
    ("roster-not-utf8", _roster(b"id\n\xe9mile\n"), "not UTF-8"),
    ("roster-nul-byte", _roster("id\nada\x00\n"), "NUL"),
    ("roster-unclosed-quote", _roster('id,name\nada,"Ada\n'), "not valid CSV"),
    ("roster-empty", _roster("\n\n"), "is empty"),
    ("roster-header-only", _roster("id,name\n"), "no students"),
    ("roster-no-id-column", _roster("name,email\nAda,a@x.org\n"), "no column 'id'"),
    ("roster-unknown-column", _roster("id,phone\nada,555\n"), "column 'phone' is not accepted"),
    ("roster-column-twice", _roster("id,ID\nada,ada\n"), "appears twice in the header"),
    ("roster-field-count", _roster("id,name\nada,Ada,extra\n"), "line 2 has 3 fields"),
    ("roster-id-path", _roster("id\n../etc\n"), "'../etc' is not accepted"),
    ("roster-id-empty", _roster("id,name\n,Ada\n"), "line 2: student id '' is not accepted"),
    ("roster-id-reserved", _roster("id\nnul\n"), "Windows reserves"),
    ("roster-id-twice", _roster("id\nada\nbob\nada\n"), "'ada' appears twice"),
    ("roster-id-case", _roster("id\nada\nADA\n"), "differ in more than case"),
    ("roster-name-control", _roster('id,name\nada,"Ada\x07"\n'), "control character"),
    ("roster-bad-email", _roster("id,email\nada,ada at example\n"), "not an address"),
    ("roster-email-twice", _roster("id,email\nada,a@x.org\nbob,a@x.org\n"), "belongs to two students"),
    ("roster-too-large", _roster("id\n" + "a" * (5 * 1024 * 1024)), "larger than"),
    ("class-out-not-empty", _out_not_empty, "holds no class.json"),
    ("class-out-other-students", _out_with_other_students, "not on this roster"),
    # grading: bad options and damaged class folders (bad submissions are listed, not refused)
    (
        "grade-missing-submissions",
        lambda tmp_path: _class(_GOOD_CLASS)(tmp_path)[:2] + [tmp_path / "nowhere", "--problems", tmp_path / "hw"],
        "submissions folder",
    ),
    (
        "grade-missing-problems",
        lambda tmp_path: ["homework", "grade", tmp_path, "--problems", tmp_path / "none"],
        "does not exist",
    ),
    ("grade-no-problems-option", lambda tmp_path: ["homework", "grade", tmp_path], "--problems"),
    ("grade-class-json-not-json", _class("{"), "not valid JSON"),
    ("grade-class-json-schema", _class('{"schema": "x"}'), "schema"),
    ("grade-class-json-bad-id", _class(_GOOD_CLASS.replace('"ada"', '"a/b"')), "'a/b' is not accepted"),
    ("grade-class-json-no-topics", _class(_GOOD_CLASS.replace('["threshold"]', "[]")), "'topics'"),
    ("grade-out-is-folder", _out_is_folder, "is a folder"),
    ("grade-feedback-is-file", _feedback_is_file, "is not a folder"),
    ("grade-bad-format", _grade("--format", "moodle"), "invalid choice"),
    (
        "grade-metadata-missing",
        lambda tmp_path: _class(_GOOD_CLASS)(tmp_path) + ["--metadata", tmp_path / "m.json"],
        "--metadata",
    ),
    ("grade-metadata-not-json", _grade(metadata="{"), "not valid JSON"),
    ("grade-metadata-no-users", _grade(metadata='{"assignment": {}}'), "no list 'users'"),
]


def _class_again_other_seed(tmp_path):
    from lnproofs.cli import main

    argv = _roster("id\nada\n")(tmp_path)
    assert main([str(a) for a in argv]) == 0
    return argv + ["--seed", "9"]


def _policy(text):
    def make(tmp_path):
        (tmp_path / "policy.json").write_text(text)
        return _grade("--policy", tmp_path / "policy.json")(tmp_path)

    return make


CASES += [
    ("class-out-other-seed", _class_again_other_seed, "run again with those"),
    (
        "attempt-zero",
        lambda tmp_path: ["homework", "new", "--attempt", "0", "--out", tmp_path / "o"],
        "attempt must be",
    ),
    ("grade-policy-missing", _grade("--policy", "/nonexistent/policy.json"), "does not exist"),
    ("grade-policy-not-json", _policy("{"), "is not valid JSON"),
    ("grade-policy-bad-level", _policy('{"feedback": {"threshold": "secret"}}'), "is not one of full, hide-answer"),
    ("grade-policy-no-topic", _policy('{"feedback": {"treshold": "full"}}'), "did you mean 'threshold'?"),
    ("grade-now-not-a-date", _grade("--now", "yesterday"), "is not a date-time"),
    ("grade-bad-lms", _grade("--lms", "blackboard"), "invalid choice"),
    (
        "export-onto-a-file",
        lambda tmp_path: (tmp_path / "f").write_text("x") and ["homework", "export", "--prairielearn", tmp_path / "f"],
        "is not a folder",
    ),
    (
        "export-unknown-topic",
        lambda tmp_path: ["homework", "export", "--prairielearn", tmp_path / "pl", "--topics", "cones"],
        "unknown topic 'cones'",
    ),
]
