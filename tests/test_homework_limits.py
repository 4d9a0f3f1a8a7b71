"""Students' expressions are read without running code and checked within limits: an answer
past them is graded "too complex to check" (in the feedback and in the teacher's list), never
a hang, and a class with one such answer is graded in about the usual time."""

from __future__ import annotations

import csv
import json
import time

import pytest
import sympy as sp

from lnproofs.homework.classroom import student_problem_set
from lnproofs.homework.compare import same
from lnproofs.homework.expressions import MAX_DEPTH, Refused, TooComplex, read_expression

STALL = "(2^(1/64)+3^(1/63)+5^(1/61)+7^(1/59))^64"


def test_reading_an_expression_runs_no_code(monkeypatch):
    import builtins

    import sympy.parsing.sympy_parser as parser

    def forbidden(*args, **kwargs):
        raise AssertionError("code was evaluated")

    read_expression("(1 + 2) * sqrt(3) - 4 / 5")  # SymPy's own modules loaded first
    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(parser, "parse_expr", forbidden)
    monkeypatch.setattr(sp, "sympify", forbidden)
    assert read_expression("2*sqrt(3) - 1/2") == 2 * sp.sqrt(3) - sp.Rational(1, 2)
    assert read_expression("-2^2") == -4 and read_expression("2**-1") == sp.Rational(1, 2)
    assert read_expression("2^3^2") == 512 and read_expression("0.75") == sp.Rational(3, 4)
    for text in ("__import__('os')", "x", "lambda: 1", "1;2", "sqrt", "1 2"):
        with pytest.raises(Refused):
            read_expression(text)


def test_limits_are_checked_before_any_expensive_work():
    start = time.perf_counter()
    with pytest.raises(TooComplex, match="too complex to check: multiplied out"):
        read_expression(STALL)
    with pytest.raises(Refused, match="nests more than"):
        read_expression("(" * (MAX_DEPTH + 1) + "1" + ")" * (MAX_DEPTH + 1))
    with pytest.raises(Refused, match="exponents must be small"):
        read_expression("2^65")
    with pytest.raises(TooComplex, match="bits"):
        read_expression("(10^60)^60")
    assert time.perf_counter() - start < 5


def test_comparisons_are_exact_in_a_safe_order():
    assert same(read_expression("sqrt(12)"), 2 * sp.sqrt(3))
    assert same(read_expression("(1+sqrt(2))^2"), 3 + 2 * sp.sqrt(2))
    assert not same(read_expression("1+sqrt(2)"), sp.sqrt(3))
    # differing numbers are told apart by balls, without simplify, however large the difference
    big = read_expression("(sqrt(2)+sqrt(3)+sqrt(5)+sqrt(7))^6")
    start = time.perf_counter()
    assert not same(big, sp.sqrt(2))
    assert time.perf_counter() - start < 2


def test_the_time_budget_really_stops_the_work():
    big = read_expression("(sqrt(2)+sqrt(3)+sqrt(5))^8")  # 3^8 terms: checked in its own process
    with pytest.raises(TooComplex, match="took more than"):
        same(big, sp.expand(big), seconds=0.05)
    assert same(big, sp.expand(big), seconds=60)


def test_the_budget_also_stops_a_comparison_made_in_this_process(monkeypatch):
    import signal

    from lnproofs.homework import compare

    monkeypatch.setattr(compare, "SMALL_TERMS", 10**6)  # this one would otherwise go elsewhere
    big = read_expression("(2^(1/63)+3^(1/61)+5^(1/59)+7^(1/57))^4")  # about 0.4 s of simplify
    before = signal.getsignal(signal.SIGALRM)
    start = time.perf_counter()
    with pytest.raises(TooComplex, match="took more than"):
        same(big, sp.expand(big), seconds=0.02)
    assert time.perf_counter() - start < 5
    assert signal.getsignal(signal.SIGALRM) is before and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def _read_csv(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _grade_class(cli, tmp_path, hostile: bool):
    hw = tmp_path / "hw"
    subs = tmp_path / ("subs_hostile" if hostile else "subs")
    subs.mkdir()
    for i in range(30):
        sid = f"s{i:02d}"
        problem_set = student_problem_set(hw, sid)
        answers = {
            p.id: {k: (str(v) if isinstance(v, sp.Basic) else v) for k, v in p.solve().answers.items()}
            for p in problem_set.problems
        }
        if hostile and i == 7:
            answers["sphere"]["norm_Px"] = STALL
        (subs / f"{sid}.json").write_text(json.dumps({"answers": answers}, default=str))
    start = time.perf_counter()
    result = cli(["homework", "grade", subs, "--problems", hw, "--out", tmp_path / f"g{int(hostile)}.csv"])
    return result, time.perf_counter() - start


def test_a_class_of_30_with_one_stalling_answer_is_graded_in_the_usual_time(cli, tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("id\n" + "".join(f"s{i:02d}\n" for i in range(30)))
    assert (
        cli(
            [
                "homework",
                "new",
                "--roster",
                roster,
                "--topics",
                "sphere,threshold",
                "--no-pdf",
                "--out",
                tmp_path / "hw",
            ]
        ).status
        == 0
    )
    usual, usual_seconds = _grade_class(cli, tmp_path, hostile=False)
    assert usual.status == 0, usual.err + usual.out
    hostile, hostile_seconds = _grade_class(cli, tmp_path, hostile=True)
    assert hostile.status == 1 and "check by hand: s07.json (s07)" in hostile.out, hostile.out
    assert hostile_seconds < usual_seconds + 10, (usual_seconds, hostile_seconds)
    rows = {r["student"]: r for r in _read_csv(tmp_path / "g1.csv")}
    assert rows["s07"]["status"] == "graded" and int(rows["s07"]["total"]) == int(rows["s07"]["possible"]) - 1
    listed = _read_csv(tmp_path / "g1_not_graded.csv")
    assert [(r["file"], r["student"]) for r in listed] == [("s07.json", "s07")]
    assert "too complex to check" in listed[0]["reason"] and "by hand" in listed[0]["reason"]
    feedback = (tmp_path / "g1_feedback" / "s07.txt").read_text()
    assert "norm_Px: too complex to check: multiplied out it would have more than 10,000 terms" in feedback
