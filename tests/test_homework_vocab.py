"""The ``vocab`` exercise: which of 8 tokens can a model in 3 dimensions never output?

Generation is seeded and never trivial; the expected answer (decided by the kernel) agrees
with a numeric search over many hidden states and with exact arithmetic done here on the
evidence; wrong and malformed answers lose marks with a message; the problem data in
``problems.json`` is validated."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from lnproofs.homework import check_answers, generate
from lnproofs.homework.grading import possible_points, score
from lnproofs.homework.problems import VocabProblem, problem_from_json
from lnproofs.homework.vocabulary import NEVER, OUTPUT, vocab_evidence

SEEDS = range(6)


@pytest.fixture(scope="module")
def solved():
    out = {}
    for seed in SEEDS:
        problem_set = generate(seed, "vocab")
        (problem,) = problem_set.problems
        out[seed] = (problem_set, problem, problem.solve())
    return out


def _never(solution):
    return set(solution.answers["never"])


def test_generation_is_seeded_and_round_trips():
    assert generate(4, "vocab").to_json() == generate(4, "vocab").to_json()
    assert len({json.dumps(generate(s, "vocab").to_json()) for s in range(8)}) == 8
    problem = generate(4, "vocab").problems[0]
    assert problem_from_json(json.loads(json.dumps(problem.to_json()))) == problem
    assert len(problem.rows) == 8 and all(len(r) == 3 for r in problem.rows) and len(problem.bias) == 8
    assert generate(4).by_id()["vocab"] == problem  # independent of the other topics


def test_every_seed_asks_a_question_with_both_answers(solved):
    for seed, (_, problem, solution) in solved.items():
        statuses = set(solution.statuses.values())
        assert statuses == {OUTPUT, NEVER}, (seed, solution.statuses)
        assert 1 <= len(_never(solution)) <= 7
        assert possible_points(problem) == 8


def test_numeric_search_finds_exactly_the_tokens_the_answer_says_can_be_output(solved):
    """An independent check: many hidden states (directions times log-spread lengths, and 0) in
    floating point; a token counts as output only when it leads by a clear margin."""
    rng = np.random.default_rng(20261126)
    u = rng.standard_normal((200_000, 3))
    H = np.vstack([np.zeros((1, 3)), u * np.exp(rng.uniform(np.log(1e-2), np.log(1e2), (len(u), 1)))])
    for seed, (_, problem, solution) in solved.items():
        logits = H @ np.array(problem.rows, dtype=float).T + np.array(problem.bias, dtype=float)
        top = np.sort(logits, axis=1)
        winners = logits.argmax(axis=1)[top[:, -1] - top[:, -2] > 1e-9] + 1
        found = set(winners.tolist())
        assert found == set(range(1, 9)) - _never(solution), seed


def test_the_evidence_holds_in_exact_arithmetic(solved):
    for seed, (_, problem, _) in solved.items():
        for result in problem.certify():
            number = result.index + 1
            line, evidence = vocab_evidence(problem, result)
            if result.status == OUTPUT:
                h = [Fraction(x) for x in evidence["h"]]
                logits = [
                    sum(Fraction(a) * x for a, x in zip(row, h)) + b for row, b in zip(problem.rows, problem.bias)
                ]
                assert all(logits[result.index] > s for j, s in enumerate(logits) if j != result.index), (seed, number)
                assert line.startswith(f"Token {number} can be output")
            else:
                weights = [Fraction(w) for w in evidence["weights"]]
                tokens = evidence["tokens"]
                assert number not in tokens and min(weights) >= 0 and sum(weights) == 1
                mix = [sum(w * problem.rows[j - 1][c] for j, w in zip(tokens, weights)) for c in range(3)]
                assert mix == list(problem.rows[result.index]), (seed, number)
                assert sum(w * problem.bias[j - 1] for j, w in zip(tokens, weights)) >= problem.bias[result.index]
                assert line.startswith(f"Token {number} is never output")


def test_the_worked_solution_names_evidence_for_every_token(solved):
    for _, (_, _, solution) in solved.items():
        for number in range(1, 9):
            assert any(
                line.startswith(f"Token {number} can be output: $h = (")
                or line.startswith(f"Token {number} is never output: $w_{{{number}}} = ")
                for line in solution.work
            )


def test_the_right_answer_scores_every_point(solved):
    problem_set, _, solution = solved[0]
    result = check_answers(problem_set, {"answers": {"vocab": {"never": sorted(_never(solution), reverse=True)}}})
    assert result.ok and result.counts == (8, 8)
    (got,) = score(problem_set, result)
    assert (got.points, got.possible) == (8, 8)


def test_a_wrong_token_loses_its_point_and_is_told_why(solved):
    problem_set, _, solution = solved[1]
    never = _never(solution)
    output = sorted(set(range(1, 9)) - never)
    # one output token listed as never, one never token left out
    given = sorted((never - {min(never)}) | {output[0]})
    result = check_answers(problem_set, {"answers": {"vocab": {"never": given}}})
    (got,) = score(problem_set, result)
    assert (got.points, got.possible) == (6, 8)
    wrong = dict(got.wrong)
    assert set(wrong) == {f"token {output[0]}", f"token {min(never)}"}
    assert f"token {output[0]} can be output: the hidden state h = (" in wrong[f"token {output[0]}"]
    assert "(you listed it)" in wrong[f"token {output[0]}"]
    assert f"token {min(never)} is never output: w_{min(never)} = " in wrong[f"token {min(never)}"]


def test_listing_every_token_or_none_gets_partial_credit(solved):
    problem_set, _, solution = solved[2]
    n_never = len(_never(solution))
    for given, points in (([], 8 - n_never), (list(range(1, 9)), n_never)):
        (got,) = score(problem_set, check_answers(problem_set, {"answers": {"vocab": {"never": given}}}))
        assert got.points == points


@pytest.mark.parametrize(
    "value, message",
    [
        ({"3": True}, "must be a list of token numbers"),
        ([9], "9 is not a token number; tokens are numbered 1 to 8"),
        ([0], "0 is not a token number"),
        ([True], "true is not a token number; write a whole number such as 3"),
        (["two"], '"two" is not a token number; write a whole number such as 3'),
        ([2.5], "2.5 is not a token number"),
    ],
)
def test_malformed_answers_score_nothing_with_a_message(solved, value, message):
    problem_set, _, _ = solved[0]
    result = check_answers(problem_set, {"answers": {"vocab": {"never": value}}})
    (got,) = score(problem_set, result)
    assert got.points == 0 and got.possible == 8
    assert message in got.output


def test_a_missing_field_scores_nothing(solved):
    problem_set, _, _ = solved[0]
    (got,) = score(problem_set, check_answers(problem_set, {"answers": {"vocab": {"never": None}}}))
    assert got.points == 0 and not got.answered and got.output == "not answered"  # null: left blank


def test_sheets_and_notebook_show_the_model(solved, tmp_path):
    from lnproofs.homework import write_homework
    from lnproofs.homework.notebook import answer_cell_source

    problem_set, problem, _ = solved[3]
    write_homework(problem_set, tmp_path, pdf=False)
    sheet = (tmp_path / "problems.md").read_text()
    assert "never output" in sheet and f"w_{{8}} = ({', '.join(map(str, problem.rows[7]))})" in sheet
    assert "Answer field: `never`" in sheet and '"never": null' in sheet and '"never": [' not in sheet
    solutions = (tmp_path / "solutions.md").read_text()
    assert "`vocab.bias_lift`" in solutions and "**FAILED**" not in solutions
    assert "\\mathbb R^{3}" in (tmp_path / "problems.tex").read_text()
    assert '"never": None,  # a list of token numbers' in answer_cell_source(problem)


def test_cli_new_and_check(cli, tmp_path, solved):
    out = tmp_path / "hw"
    assert cli(["homework", "new", "--seed", "5", "--topics", "vocab", "--no-pdf", "--out", out]).status == 0
    never = sorted(_never(solved[5][2]))
    path = out / "answers.json"
    path.write_text(json.dumps({"answers": {"vocab": {"never": never}}}))
    result = cli(["homework", "check", path])
    assert result.status == 0 and "8 of 8 parts correct" in result.out
    path.write_text(json.dumps({"answers": {"vocab": {"never": never[1:]}}}))  # one never-output token left out
    result = cli(["homework", "check", path])
    assert result.status == 1 and "is never output" in result.out


@pytest.mark.parametrize(
    "change, message",
    [
        ({"unembedding": [[1, 2, 3]] * 8}, "must be distinct"),
        ({"unembedding": [[1, 2]] + [[i, 0, 0] for i in range(7)]}, "row 1 of 'unembedding' must be 3 integers"),
        ({"unembedding": [[i, 0, 0] for i in range(7)]}, "must be a list of 8 rows of 3 integers"),
        ({"unembedding": [[100, 0, 0]] + [[i, 0, 0] for i in range(7)]}, "of size at most 20"),
        ({"unembedding": [[0.5, 0, 0]] + [[i, 0, 0] for i in range(1, 8)]}, "must be an integer"),
        ({"bias": [0] * 7}, "'bias' must be a list of 8 integers"),
        ({"bias": [True] + [0] * 7}, "a bias entry must be an integer"),
    ],
)
def test_bad_problem_data_is_refused(change, message):
    from lnproofs.kernel import InputError

    data = {**generate(0, "vocab").problems[0].to_json(), **change}
    with pytest.raises(InputError, match=message):
        VocabProblem.from_json(data)


def test_the_instructor_certificate_rechecks_and_a_tampered_one_is_refused(cli, tmp_path):
    out = tmp_path / "hw"
    assert cli(["homework", "new", "--seed", "2", "--topics", "vocab", "--no-pdf", "--out", out]).status == 0
    assert "lnproofs check vocab_certificate.json vocab_keys.csv" in (out / "solutions.md").read_text()
    result = cli(["check", out / "vocab_certificate.json", out / "vocab_keys.csv"])
    assert result.status == 0 and "every claim holds: 8 keys in R^3" in result.out
    cert = json.loads((out / "vocab_certificate.json").read_text())
    assert cert["query_set"]["bias"] == [float(b) for b in generate(2, "vocab").problems[0].bias]
    # claim a never-output token can be output with the witness of another token
    never = next(r for r in cert["results"] if r["status"] == NEVER)
    other = next(r for r in cert["results"] if r["status"] == OUTPUT)
    never.update(status=OUTPUT, witness=other["witness"], combination=None)
    (out / "vocab_certificate.json").write_text(json.dumps(cert))
    result = cli(["check", out / "vocab_certificate.json", out / "vocab_keys.csv"])
    assert result.status == 1 and "1 of 8 claims refuted" in result.out + result.err
