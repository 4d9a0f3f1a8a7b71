"""Marking the ``vocab`` exercise: the set of tokens a tiny model can never output.

The answer is a list of token numbers; each of the 8 tokens is one point, right when the
student's list and the kernel-decided truth agree on it.  A wrong token is told its evidence:
the hidden state that makes a listed token win, or the weights over other tokens that keep an
unlisted one from ever winning.
"""

from __future__ import annotations

from fractions import Fraction

from ..certificates.writers import format_fraction
from .values import PartResult, _Wrong, read_number_set
from .values import expected as expected_
from .vocabulary import NEVER, OUTPUT, vocab_evidence

__all__ = ["check_vocab"]


def _numbers(value, count: int) -> set[int]:
    """The token numbers of the answer, or :class:`_Wrong` saying why not (:func:`.values.read_number_set`)."""
    return read_number_set(value, count, "token", "never")


def _why(problem, result) -> str:
    """The evidence of one token's true status, as plain text."""
    number = result.index + 1
    _, evidence = vocab_evidence(problem, result)
    if result.status == OUTPUT:
        h = [Fraction(x) for x in evidence["h"]]
        logits = [
            sum((Fraction(a) * x for a, x in zip(row, h)), Fraction(0)) + b
            for row, b in zip(problem.rows, problem.bias)
        ]
        rival = max(s for j, s in enumerate(logits) if j != result.index)
        return f"token {number} can be output: " + expected_(
            f"the hidden state h = ({', '.join(evidence['h'])}) gives it the logit "
            f"{format_fraction(logits[result.index])}, more than every other token (at most {format_fraction(rival)})"
        )
    if result.status == NEVER:
        pairs = list(zip(evidence["tokens"], evidence["weights"]))
        rows = " + ".join(f"{w}*w_{j}" for j, w in pairs)
        mix = sum((Fraction(w) * problem.bias[j - 1] for j, w in pairs), Fraction(0))
        return (
            f"token {number} is never output: "
            + expected_(
                f"w_{number} = {rows} and the same weights give the biases "
                f"{format_fraction(mix)} >= b_{number} = {problem.bias[result.index]}"
            )
            + ", so its logit is never above all of theirs"
        )
    return f"token {number} could not be decided by the library ({result.reason}); ask your instructor"


def check_vocab(problem, answer, solution) -> list[PartResult]:
    """One part per token, so that every point lost has its message (an answer that cannot be read
    loses every token's point, each with the reason)."""
    count = len(problem.rows)
    try:
        if "never" not in answer:
            raise _Wrong("no answer given for 'never'")
        given = _numbers(answer["never"], count)
    except _Wrong as err:
        return [PartResult(problem.id, f"token {n}", False, str(err)) for n in range(1, count + 1)]
    truth = {int(n) for n, s in solution.statuses.items() if s == NEVER}
    decided = {int(n) for n, s in solution.statuses.items() if s in (NEVER, OUTPUT)}
    wrong = [n for n in range(1, count + 1) if n not in decided or (n in given) != (n in truth)]
    results = {r.index + 1: r for r in problem.certify()} if wrong else {}
    parts = []
    for number in range(1, count + 1):
        if number not in wrong:
            parts.append(PartResult(problem.id, f"token {number}", True, "correct"))
            continue
        result = results[number]
        if result.status != solution.statuses.get(str(number)):  # the certify road must agree with itself
            message = f"token {number}: the library's two runs disagree; please report it"
        else:
            message = _why(problem, result)
            listed = "you listed it" if number in given else "you did not list it"
            message = f"{message} ({listed})" if number in decided else message
        parts.append(PartResult(problem.id, f"token {number}", False, message))
    return parts
