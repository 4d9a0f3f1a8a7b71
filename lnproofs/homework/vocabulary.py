"""The ``vocab`` exercise: which tokens can a tiny language model never output?

A model of 8 tokens in 3 dimensions: an unembedding with small integer rows ``w_j`` and an
output bias ``b`` of small integers; the final hidden state ``h`` may be any vector of R^3 (no
final norm).  Token ``j`` has the logit ``w_j . h + b_j`` and is output when its logit is strictly
the largest.  The answer comes from the library's certify road for a key bias (the ``box`` query
set without a bound, as ``lnproofs certify KEYS --key-bias b.npy`` runs it): every token is
``selectable`` with a witness ``h`` or ``not-realisable`` with weights ``lambda`` over other tokens
(``w_i = sum lambda_j w_j`` and ``sum lambda_j b_j >= b_i``, theorem ``vocab.bias_lift``), in a
certificate (:func:`lnproofs.propose.certification.certify`) whose every claim the exact checker
verifies (:func:`lnproofs.certificates.check.check_certificate`, the kernel's free-module checks)
before it reaches a solution sheet.  The witnesses and weights shown to students are made readable
(small integers, small denominators) and each is checked again by the kernel
(:func:`lnproofs.kernel.querysets.free.check_all`); where none passes, the certifier's own is shown.

Generation never needs a solver: a row of largest norm is always output (theorem
``vocab.self_witness``: with distinct rows, ``h = t w_i`` for large ``t``), and one token is
planted as the midpoint of two others with a bias strictly below theirs, so it is never output.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations, product
from typing import ClassVar

from ..certificates.writers import format_fraction
from ..kernel import InputError, require
from .problem_base import Claim, ProblemKind
from .solution import Solution

__all__ = ["VocabProblem", "draw_vocab", "vocab_evidence", "TOKENS", "DIM", "OUTPUT", "NEVER"]

#: the size of the exercise: 8 tokens, hidden states in R^3
TOKENS, DIM = 8, 3
_MAX_ENTRY = 20
OUTPUT, NEVER = "selectable", "not-realisable"


def _int(value, what: str) -> int:
    require(
        isinstance(value, int) and not isinstance(value, bool) and abs(value) <= _MAX_ENTRY,
        InputError,
        f"{what} must be an integer of size at most {_MAX_ENTRY}, not {value!r}",
    )
    return int(value)


def _text(values) -> str:
    return "(" + ", ".join(format_fraction(Fraction(v)) for v in values) + ")"


def _logits(rows, bias, h) -> list[Fraction]:
    return [sum((Fraction(a) * Fraction(x) for a, x in zip(row, h)), Fraction(0)) + b for row, b in zip(rows, bias)]


@dataclass(frozen=True)
class VocabProblem(ProblemKind):
    """Rows ``w_j`` of the unembedding (8 vectors of 3 integers) and the output bias ``b`` (8 integers)."""

    rows: tuple[tuple[int, ...], ...]
    bias: tuple[int, ...]
    topic: ClassVar[str] = "vocab"
    fields: ClassVar[tuple[str, ...]] = ("never",)

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "topic": self.topic,
            "unembedding": [list(r) for r in self.rows],
            "bias": list(self.bias),
        }

    def points(self) -> int:
        return len(self.rows)  # one per token

    @classmethod
    def draw(cls, rng: random.Random) -> VocabProblem:
        return draw_vocab(rng)

    def claims(self) -> tuple[Claim, ...]:
        """Decided exactly without the certifier: a row of largest norm is output (vocab.self_witness, rows
        distinct) and some token is the midpoint of two others with a bias below their average (never output)."""
        norms = [sum(v * v for v in r) for r in self.rows]
        planted = [
            i
            for i, row in enumerate(self.rows)
            for a, b in combinations([j for j in range(TOKENS) if j != i], 2)
            if all(2 * x == u + v for x, u, v in zip(row, self.rows[a], self.rows[b]))
            and 2 * self.bias[i] < self.bias[a] + self.bias[b]
        ]
        return (
            Claim(f"{TOKENS} distinct rows in R^{DIM}", len(set(self.rows)) == TOKENS),
            Claim("a row of largest norm exists, so some token can be output", max(norms) > 0),
            Claim("some token is a midpoint of two others with a lower bias, so it is never output", bool(planted)),
        )

    @classmethod
    def from_json(cls, data: dict) -> VocabProblem:
        rows = data.get("unembedding")
        require(
            isinstance(rows, list) and len(rows) == TOKENS,
            InputError,
            f"vocab problem 'unembedding' must be a list of {TOKENS} rows of {DIM} integers, not {rows!r}"[:300],
        )
        parsed = []
        for number, row in enumerate(rows, 1):
            require(
                isinstance(row, list) and len(row) == DIM,
                InputError,
                f"vocab problem: row {number} of 'unembedding' must be {DIM} integers, not {row!r}"[:300],
            )
            parsed.append(tuple(_int(v, f"vocab problem: an entry of row {number}") for v in row))
        same = next(((i, j) for j in range(TOKENS) for i in range(j) if parsed[i] == parsed[j]), None)
        require(
            same is None,
            InputError,
            "vocab problem: the rows of 'unembedding' must be distinct; rows "
            f"{same and same[0] + 1} and {same and same[1] + 1} are both {same and _text(parsed[same[0]])}",
        )
        bias = data.get("bias")
        require(
            isinstance(bias, list) and len(bias) == TOKENS,
            InputError,
            f"vocab problem 'bias' must be a list of {TOKENS} integers, not {bias!r}"[:300],
        )
        return cls(rows=tuple(parsed), bias=tuple(_int(v, "vocab problem: a bias entry") for v in bias))

    @property
    def keys(self) -> tuple[tuple[int, ...], ...]:
        """The rows of the unembedding: the keys of the certificate (with the bias as its query set's)."""
        return self.rows

    def certificate(self):
        """The certify road's certificate (``lnproofs certify KEYS --key-bias b.npy``: the box without a
        bound), accepted only after the exact checker has verified every claim in it."""
        import numpy as np

        from ..certificates.check import check_certificate
        from ..kernel import BoxQuerySet
        from ..propose.certification import certify

        K = np.array(self.rows, dtype=np.float64)
        cert = certify(K, BoxQuerySet(None, tuple(float(b) for b in self.bias)), progress=False)
        report = check_certificate(cert, K)
        if not report.ok:  # a certifier bug must never reach a solution sheet
            raise InputError(f"the certificate for this vocab problem failed the exact check: {report}")
        return cert

    def certify(self) -> list:
        """One kernel-checked result per token (0-based ``index``, in order), from :meth:`certificate`."""
        return sorted(self.certificate().results, key=lambda r: r.index)

    def solve(self):
        cert = self.certificate()
        answers, statuses, work = {}, {}, []
        for r in sorted(cert.results, key=lambda r: r.index):
            number = r.index + 1
            statuses[str(number)] = r.status
            line, _ = vocab_evidence(self, r)
            work.append(line)
        never = [int(n) for n, s in statuses.items() if s == NEVER]
        answers = {"never": sorted(never)}
        head = (
            f"Tokens never output: {', '.join(map(str, sorted(never))) or 'none'}. A token is output for some "
            "$h$ exactly when its lifted row $(w_i, b_i)$ wins for a lifted query $(h, 1)$; it is never output "
            "when weights $\\lambda_j \\ge 0$ summing to 1 give $w_i = \\sum_j \\lambda_j w_j$ and "
            "$\\sum_j \\lambda_j b_j \\ge b_i$ (then its logit is at most that average of the others' logits)."
        )
        return Solution(
            self.id,
            answers,
            ("vocab.bias_lift", "vocab.self_witness"),
            (head, *work),
            certificate=cert.to_json(),
            statuses=statuses,
        )


def _check(problem, result) -> bool:
    import numpy as np

    from ..kernel import BoxQuerySet

    query_set = BoxQuerySet(None, tuple(float(b) for b in problem.bias))
    return query_set.check(np.array(problem.rows, dtype=np.float64), [result])[0].ok


def _wins(problem, index: int, h) -> bool:
    logits = _logits(problem.rows, problem.bias, h)
    return all(logits[index] > s for j, s in enumerate(logits) if j != index)


def _nice_query(problem, result):
    """A hidden state a student reads easily that makes the token win, checked by the kernel: the smallest
    integer point of {-3..3}^3 that wins, else the certifier's witness rounded to a small denominator, else
    the certifier's witness itself."""
    from ..kernel import KeyResult, to_fraction

    exact = tuple(to_fraction(x) for x in result.witness)
    grid = sorted(product(range(-3, 4), repeat=DIM), key=lambda h: (max(map(abs, h)), sum(map(abs, h)), h))
    candidates = [tuple(map(Fraction, h)) for h in grid if _wins(problem, result.index, h)][:1]
    candidates += [tuple(Fraction(round(x * den), den) for x in exact) for den in range(1, 13)]
    for candidate in candidates:
        if _wins(problem, result.index, candidate) and _check(
            problem, KeyResult(result.index, OUTPUT, candidate, None, "exact")
        ):
            return candidate
    return exact


def _weights_on(problem, index: int, subset) -> list[Fraction] | None:
    """The exact barycentric weights of token ``index`` over ``subset`` when they are convex and keep its bias below."""
    from .library import _solve_exact

    rows = [[Fraction(problem.rows[j][c]) for j in subset] for c in range(DIM)] + [[Fraction(1)] * len(subset)]
    weights = _solve_exact(rows, [Fraction(v) for v in problem.rows[index]] + [Fraction(1)])
    if weights is None or any(w < 0 for w in weights):
        return None
    mix = sum((w * problem.bias[j] for j, w in zip(subset, weights)), Fraction(0))
    return weights if mix >= problem.bias[index] else None


def _nice_weights(problem, result):
    """Weights a student reads easily, checked by the kernel: over every set of at most 4 other tokens, the
    exact weights with the smallest denominators (then the fewest tokens); else the certifier's own weights."""
    from ..kernel import Combination, KeyResult

    others = [j for j in range(len(problem.rows)) if j != result.index]
    found = []
    for size in range(1, DIM + 2):
        for subset in combinations(others, size):
            weights = _weights_on(problem, result.index, subset)
            if weights is not None:
                found.append((max(w.denominator for w in weights), size, subset, weights))
    for _, _, subset, weights in sorted(found)[:3]:
        claim = KeyResult(result.index, NEVER, None, Combination(tuple(subset), tuple(weights)), "exact")
        if _check(problem, claim):
            return list(subset), weights
    comb = result.combination
    return list(comb.indices), [Fraction(w) for w in comb.weights]


def vocab_evidence(problem, result) -> tuple[str, dict]:
    """(a worked line for the solution sheet, the evidence as JSON) for one kernel-checked result."""
    number = result.index + 1
    if result.status == OUTPUT:
        h = _nice_query(problem, result)
        logits = _logits(problem.rows, problem.bias, h)
        rival = max(s for j, s in enumerate(logits) if j != result.index)
        return (
            f"Token {number} can be output: $h = {_text(h)}$ gives it the logit "
            f"${format_fraction(logits[result.index])}$, more than every other token (at most "
            f"${format_fraction(rival)}$)."
        ), {"h": [format_fraction(x) for x in h]}
    if result.status == NEVER:
        idx, weights = _nice_weights(problem, result)
        pairs = sorted(zip((j + 1 for j in idx), weights))
        mix = sum((w * problem.bias[j - 1] for j, w in pairs), Fraction(0))
        terms = " + ".join(f"{format_fraction(w)}\\,w_{{{j}}}" for j, w in pairs)
        bias_terms = " + ".join(f"{format_fraction(w)}\\,b_{{{j}}}" for j, w in pairs)
        gap = mix - problem.bias[result.index]
        relation = ">" if gap > 0 else "="
        below = "" if gap == 0 else f" minus ${format_fraction(gap)}$"
        return (
            f"Token {number} is never output: $w_{{{number}}} = {terms}$ and ${bias_terms} = {format_fraction(mix)} "
            f"{relation} b_{{{number}}} = {problem.bias[result.index]}$, so for every $h$ its logit is the same "
            f"average of those tokens' logits{below}, never above all of them."
        ), {"tokens": [j for j, _ in pairs], "weights": [format_fraction(w) for _, w in pairs]}
    return f"Token {number}: undecided ({result.reason}).", {}


def draw_vocab(rng: random.Random) -> VocabProblem:
    """8 distinct rows in {-2..2}^3 and biases in {-2..2}, one token planted as never output (see the docstring)."""
    cube = [(x, y, z) for x in range(-2, 3) for y in range(-2, 3) for z in range(-2, 3)]
    while True:
        rows = rng.sample(cube, TOKENS - 1)
        bias = [rng.randint(-2, 2) for _ in rows]
        pairs = [
            (a, b)
            for a, b in combinations(range(len(rows)), 2)
            if all((u + v) % 2 == 0 for u, v in zip(rows[a], rows[b]))
            and tuple((u + v) // 2 for u, v in zip(rows[a], rows[b])) not in rows
        ]
        if pairs:
            break
    a, b = rng.choice(pairs)
    mid = tuple((u + v) // 2 for u, v in zip(rows[a], rows[b]))
    # strictly below the average of the two biases: never output, and never even tied
    low = -((-(bias[a] + bias[b])) // 2) - 1 - rng.randint(0, 1)
    tokens = list(zip(rows, bias)) + [(mid, low)]
    rng.shuffle(tokens)
    return VocabProblem(rows=tuple(r for r, _ in tokens), bias=tuple(int(b) for _, b in tokens))
