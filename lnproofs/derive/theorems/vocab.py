"""Theorems that settle vocabulary tokens wholesale, before any search.

A language model's next token is the argmax of ``k_j . z + b_j`` over the rows ``k_j`` of its
unembedding, with ``z`` what the final norm can produce and ``b`` the output bias.

* ``vocab.self_witness``: a row whose own score beats every other row's at ``q = k_i``
  (``||k_i||^2 > k_i . k_j``) is selectable with that query; every row of largest norm that no
  other row equals is one; with a bias, ``q = t k_i`` for ``t`` large enough.
* ``vocab.duplicate_rows``: equal rows differ by their biases alone: with equal biases they tie
  for every query, and the one with the smaller bias never wins.
* ``vocab.bias_lift``: a bias is a lifted coordinate, ``(q, 1) . (k_j, b_j)``; and the dual
  evidence that row ``i`` never wins, for free queries and for the box ``|q_l| <= B``.
* ``vocab.final_norm``: the realisable logits of a final LayerNorm (or RMSNorm) are a ball
  question for the keys ``g o k_j`` with offsets ``k_j . beta + b_j``.
* ``vocab.no_offset``: without offsets the radius never matters and, for LayerNorm, the question is
  the free one for the points ``L a_j`` (``(L a)_l = a_l - a_n``) in ``n - 1`` coordinates.

The kernel's self filter (:func:`lnproofs.kernel.self_filter`) applies the first; the box query set
(:mod:`lnproofs.kernel.querysets.free`) checks the evidence of the third.
"""

from __future__ import annotations

from ..theorem import Hypothesis, Step, Theorem, general_symbols
from . import routine, width_hypothesis

__all__ = ["theorems"]

_SUMS = "finite sums and Kronecker deltas"
_SIGN = "sign under assumptions"


_WIDTH = "$n \\ge 2$ is an integer; $l$ runs over the $n$ coordinates"


def _vectors(n_value, *names):
    """For general n: IndexedBases, a summation helper and the index; for width n: coordinate tuples."""
    import sympy as sp

    if n_value is None:
        n, l = general_symbols()["n"], sp.Symbol("l", positive=True, integer=True)
        return [sp.IndexedBase(name, real=True) for name in names], (lambda e: sp.Sum(e, (l, 1, n))), l
    coords = [sp.symbols(f"{name}1:{n_value + 1}", real=True) for name in names]
    return coords, (lambda f: sum(f(c) for c in range(n_value))), None


def _sum(S, l, body):
    """``sum_l body(l)``: an unevaluated Sum for general n, the explicit sum for width n."""
    return S(body(l)) if l is not None else S(body)


def _self_witness(n_value):
    import sympy as sp

    (ki, kj), S, l = _vectors(n_value, "k_i", "k_j")
    gap = _sum(S, l, lambda t: ki[t] ** 2 - ki[t] * kj[t])
    half = (
        _sum(S, l, lambda t: (ki[t] - kj[t]) ** 2) + _sum(S, l, lambda t: ki[t] ** 2) - _sum(S, l, lambda t: kj[t] ** 2)
    ) / 2
    D, a = sp.Symbol("D", positive=True), sp.Symbol("a", nonnegative=True)
    g, s = sp.Symbol("g", positive=True), sp.Symbol("s", positive=True)
    t, bi, bj = sp.Symbol("t", real=True), sp.Symbol("b_i", real=True), sp.Symbol("b_j", real=True)
    text = (
        "If $\\|k_i\\|^2 > k_i \\cdot k_j$ for every row $j \\ne i$, the query $q = k_i$ makes row $i$ the "
        "strict argmax of $q \\cdot k_j$.  Since $\\|k_i\\|^2 - k_i \\cdot k_j = \\frac{1}{2}(\\|k_i - k_j\\|^2 "
        "+ \\|k_i\\|^2 - \\|k_j\\|^2)$, every row of largest norm that no other row equals is such a row.  "
        "With a per-token bias $b$, the query $q = t k_i$ makes row $i$ the strict argmax of "
        "$q \\cdot k_j + b_j$ for every $t > \\max_j (b_j - b_i) / (\\|k_i\\|^2 - k_i \\cdot k_j)$."
    )
    latex = (
        r"\|k_i\|^2 - k_i \cdot k_j = \tfrac{1}{2}\left(\|k_i - k_j\|^2 + \|k_i\|^2 - \|k_j\|^2\right),\quad "
        r"t\,(\|k_i\|^2 - k_i \cdot k_j) + b_i - b_j > 0"
    )
    hyps = (
        width_hypothesis(n_value, _WIDTH),
        Hypothesis("rows", "$k_i$ and $k_j$ are two rows of the unembedding, $j \\ne i$", r"j \ne i"),
        Hypothesis(
            "gap",
            "$g = \\|k_i\\|^2 - k_i \\cdot k_j > 0$ for the bias statement, and $t = (b_j - b_i) / g + s$ with $s > 0$",
            r"g > 0,\ s > 0",
        ),
    )
    identity = Step(
        r"With coordinates $k_{il}$ of $k_i$,",
        gap,
        half,
        _SUMS if n_value is None else "expand",
    )
    largest = Step(
        r"so for $\|k_j\| \le \|k_i\|$ and $k_j \ne k_i$, with $D = \|k_i - k_j\|^2 > 0$ and "
        r"$a = \|k_i\|^2 - \|k_j\|^2 \ge 0$,",
        (D + a) / 2,
        0,
        _SIGN,
        relation=">",
    )
    scaled = Step(
        r"With a bias and $q = t k_i$ the score gap is",
        t * g + bi - bj,
        s * g,
        "simplify-to-zero",
        where=((t, (bj - bi) / g + s),),
    )
    wins = Step("", s * g, 0, _SIGN, relation=">", chained=True)
    steps = (identity, largest, scaled, wins)
    return Theorem(
        "vocab.self_witness",
        "A row that beats every other row at its own direction is selectable",
        text,
        latex,
        hyps,
        steps,
        (identity, largest, wins),
        n=n_value,
    )


def _duplicate_rows(n_value):
    import sympy as sp

    (q, ki, kj), S, l = _vectors(n_value, "q", "k_i", "k_j")
    bi, bj = sp.Symbol("b_i", real=True), sp.Symbol("b_j", real=True)
    c = sp.Symbol("c", positive=True)
    diff = _sum(S, l, lambda t: q[t] * ki[t]) + bi - _sum(S, l, lambda t: q[t] * kj[t]) - bj
    bind = ((kj, ki),) if n_value is None else tuple(zip(kj, ki))
    text = (
        "If two rows are equal, $k_j = k_i$, then for every query $q$ their scores differ by the biases "
        "alone: $(q \\cdot k_i + b_i) - (q \\cdot k_j + b_j) = b_i - b_j$.  With equal biases the two rows "
        "tie for every query, so neither is ever the strict argmax; with $b_i < b_j$ row $i$ is never "
        "the argmax at all."
    )
    latex = r"k_j = k_i \implies (q \cdot k_i + b_i) - (q \cdot k_j + b_j) = b_i - b_j"
    hyps = (
        width_hypothesis(n_value, _WIDTH),
        Hypothesis("equal rows", "$k_j = k_i$ coordinate by coordinate, $j \\ne i$", r"k_j = k_i"),
        Hypothesis("smaller bias", "for the last claim $b_j = b_i + c$ with $c > 0$", r"b_j > b_i"),
    )
    same = Step(
        r"With coordinates $k_{il}$ of $k_i$, the difference of the scores is",
        diff,
        bi - bj,
        _SUMS if n_value is None else "expand",
        where=bind,
    )
    lower = Step(
        "",
        bi - bj,
        0,
        _SIGN,
        relation="<",
        where=((bj, bi + c),),
    )
    return Theorem(
        "vocab.duplicate_rows",
        "Equal rows differ by their biases alone",
        text,
        latex,
        hyps,
        (same, lower),
        (same, lower),
        n=n_value,
    )


def _bias_lift(n_value):
    import sympy as sp

    (q, kj, r), S, l = _vectors(n_value, "q", "k_j", "r")
    bj, bi, beta = sp.Symbol("b_j", real=True), sp.Symbol("b_i", real=True), sp.Symbol("bbar", real=True)
    t = sp.Symbol("t", positive=True)
    lifted = Step(
        r"For $t > 0$ the lifted scores $(q, t) \cdot (k_j, b_j)$ are positive multiples of biased ones:",
        _sum(S, l, lambda c: q[c] * kj[c]) + t * bj,
        t * (_sum(S, l, lambda c: (q[c] / t) * kj[c]) + bj),
        _SUMS if n_value is None else "expand",
    )
    # sum_j lambda_j (s_i - s_j) = r . q + b_i - sum_j lambda_j b_j, with r = k_i - sum_j lambda_j k_j
    lam = sp.symbols("lambda_1:4", nonnegative=True)
    if n_value is None:
        K = [sp.IndexedBase(f"k_{m}", real=True) for m in ("i", 1, 2, 3)]
        score = [_sum(S, l, lambda c, k=k: q[c] * k[c]) for k in K]
        rq = _sum(S, l, lambda c: q[c] * (K[0][c] - sum(w * k[c] for w, k in zip(lam, K[1:]))))
    else:
        K = [sp.symbols(f"k{m}_1:{n_value + 1}", real=True) for m in ("i", 1, 2, 3)]
        score = [sum(a * b for a, b in zip(q, k)) for k in K]
        rq = sum(q[c] * (K[0][c] - sum(w * k[c] for w, k in zip(lam, K[1:]))) for c in range(n_value))
    B = [sp.Symbol(f"b_{m}", real=True) for m in (1, 2, 3)]
    L3 = sp.Symbol("lambda_3", nonnegative=True)
    definitions = ()
    if n_value is None:  # the scores and r by name: s_j = q . k_j + b_j, r_l = k_il - sum_j lambda_j k_jl
        sf, rf, idx = sp.Function("s"), sp.Function("r"), sp.Symbol("c", positive=True, integer=True)
        si = sp.Symbol("s_i", real=True)
        definitions = (
            (si, score[0] + bi),
            *((sp.Symbol(f"s_{m}", real=True), sc + b) for m, sc, b in zip((1, 2, 3), score[1:], B)),
            (rf, sp.Lambda((idx,), K[0][idx] - sum(w * k[idx] for w, k in zip(lam, K[1:])))),
        )
        names = [d[0] for d in definitions[1:4]]
        average = Step(
            r"With three other rows shown, $\lambda_3 = 1 - \lambda_1 - \lambda_2$:",
            sum(w * (si - sj) for w, sj in zip(lam, names)),
            _sum(S, l, lambda c: q[c] * rf(c)) + bi - sum(w * b for w, b in zip(lam, B)),
            _SUMS,
            where=((L3, 1 - lam[0] - lam[1]),),
        )
        del sf
    else:
        average = Step(
            r"With three other rows shown, $\lambda_3 = 1 - \lambda_1 - \lambda_2$ and $r = k_i - \sum_j \lambda_j k_j$:",
            sum(w * ((score[0] + bi) - (s + b)) for w, s, b in zip(lam, score[1:], B)),
            rq + bi - sum(w * b for w, b in zip(lam, B)),
            "expand",
            where=((L3, 1 - lam[0] - lam[1]),),
        )
    rr, x, y, Bb, qq = (
        sp.Symbol("r_l", nonnegative=True),
        sp.Symbol("x", nonnegative=True),
        sp.Symbol("y", nonnegative=True),
        sp.Symbol("B", positive=True),
        sp.Symbol("q_l", real=True),
    )
    box_pos = Step(
        r"In the box, $r_l q_l \le B |r_l|$ for $r_l \ge 0$ and $q_l = B - x$, $x \ge 0$,",
        Bb * rr - rr * qq,
        0,
        _SIGN,
        relation=">=",
        where=((qq, Bb - x),),
    )
    box_neg = Step(
        r"and for $r_l = -y \le 0$ and $q_l = x - B$, so $r \cdot q \le B \|r\|_1$",
        Bb * y - (-y) * qq,
        0,
        _SIGN,
        relation=">=",
        where=((qq, x - Bb),),
    )
    never = Step(
        r"and $\sum_j \lambda_j (s_i - s_j) \le B \|r\|_1 + b_i - \bar{b} \le 0$ when "
        r"$\bar{b} = \sum_j \lambda_j b_j = b_i + B \|r\|_1 + y$, $y \ge 0$ (with $x = \|r\|_1$):",
        Bb * x + bi - beta,
        0,
        _SIGN,
        relation="<=",
        where=((beta, bi + Bb * x + y),),
    )
    text = (
        "Scores with a per-token bias are scores of lifted keys, $q \\cdot k_j + b_j = (q, 1) \\cdot (k_j, b_j)$, "
        "and for $t > 0$, $(q, t) \\cdot (k_j, b_j) = t\\,((q/t) \\cdot k_j + b_j)$: row $i$ is the strict "
        "argmax for some query exactly when its lifted key is for some lifted query $(q, t)$ with $t > 0$.  "
        "Conversely, weights $\\lambda_j \\ge 0$ on the other rows with $\\sum_j \\lambda_j = 1$ and "
        "$r = k_i - \\sum_j \\lambda_j k_j$ give $\\sum_j \\lambda_j (s_i - s_j) = r \\cdot q + b_i - "
        "\\sum_j \\lambda_j b_j$, so row $i$ is never the strict argmax when this is at most $0$ for every "
        "allowed $q$: for free queries when $r = 0$ and $\\sum_j \\lambda_j b_j \\ge b_i$, and for the box "
        "$|q_l| \\le B$ when $B \\|r\\|_1 + b_i - \\sum_j \\lambda_j b_j \\le 0$."
    )
    latex = (
        r"q \cdot k_j + b_j = (q, 1)\cdot(k_j, b_j),\quad \sum_j \lambda_j (s_i - s_j) \le B \|r\|_1 + b_i "
        r"- \sum_j \lambda_j b_j"
    )
    hyps = (
        width_hypothesis(n_value, _WIDTH),
        Hypothesis("scores", "$s_j = q \\cdot k_j + b_j$ for every row $j$", r"s_j = q \cdot k_j + b_j"),
        Hypothesis(
            "weights",
            "$\\lambda_j \\ge 0$ on rows $j \\ne i$ with $\\sum_j \\lambda_j = 1$",
            r"\lambda \ge 0,\ \textstyle\sum_j \lambda_j = 1",
        ),
        Hypothesis("box", "$B > 0$ and $|q_l| \\le B$ for every coordinate $l$", r"\|q\|_\infty \le B"),
        Hypothesis(
            "three rows",
            r"the proof shows three other rows $k_1, k_2, k_3$, with biases $b_1, b_2, b_3$ and weights "
            r"$\lambda_1, \lambda_2, \lambda_3$",
            "",
        ),
    )
    steps = (lifted, average, box_pos, box_neg, never)
    return Theorem(
        "vocab.bias_lift",
        "A per-token bias is a lifted coordinate; the dual evidence of a token never output",
        text,
        latex,
        hyps,
        steps,
        (lifted, average, never),
        n=n_value,
        definitions=definitions,
    )


def _final_norm(n_value):
    import sympy as sp

    (k, g, u, beta, a), S, l = _vectors(n_value, "k", "g", "u", "beta", "a")
    b, sigma = sp.Symbol("b", real=True), sp.Symbol("sigma", real=True)
    n = general_symbols()["n"] if n_value is None else sp.Integer(n_value)
    logit = Step(
        "",
        _sum(S, l, lambda c: k[c] * (g[c] * u[c] + beta[c])) + b,
        _sum(S, l, lambda c: (g[c] * k[c]) * u[c]) + _sum(S, l, lambda c: k[c] * beta[c]) + b,
        _SUMS if n_value is None else "expand",
    )
    mean = _sum(S, l, lambda c: a[c]) / n
    centred = Step(
        r"and in $\mathbf{1}^\perp$ the keys may be centred:",
        _sum(S, l, lambda c: (a[c] - mean) * u[c]),
        _sum(S, l, lambda c: a[c] * u[c]) - mean * _sum(S, l, lambda c: u[c]),
        _SUMS if n_value is None else "expand",
    )
    A = sp.Symbol("A", real=True)
    inside = Step(
        "",
        A - mean * sigma,
        A,
        "simplify-to-zero",
        where=((sigma, 0),),
    )
    text = (
        "With a final norm $z = g \\circ u + \\beta$, where $u$ is the normalised input "
        "($\\|u\\|^2 \\le n$, strictly inside when $\\epsilon > 0$, and $\\mathbf{1} \\cdot u = 0$ for LayerNorm), "
        "the logits are $k_j \\cdot z + b_j = (g \\circ k_j) \\cdot u + (k_j \\cdot \\beta + b_j)$: the "
        "realisable question is the question of the ball $\\|u\\|^2 \\le n$ (in $\\mathbf{1}^\\perp$ for "
        "LayerNorm) for the keys $g \\circ k_j$ with the per-token offsets $c_j = k_j \\cdot \\beta + b_j$; "
        "and in $\\mathbf{1}^\\perp$ the keys may be centred, $(P a) \\cdot u = a \\cdot u$."
    )
    latex = r"k_j \cdot (g \circ u + \beta) + b_j = (g \circ k_j) \cdot u + (k_j \cdot \beta + b_j)"
    hyps = (
        width_hypothesis(n_value, _WIDTH),
        Hypothesis(
            "final norm",
            "$u$ is the output of the normalisation before the gain $g$ and the bias "
            "$\\beta$; $k$ is a row of the unembedding and $b$ its output bias",
            r"z = g \circ u + \beta",
        ),
        Hypothesis("centred", "for LayerNorm $\\sigma = \\mathbf{1} \\cdot u = 0$", r"\mathbf{1} \cdot u = 0"),
    )
    return Theorem(
        "vocab.final_norm",
        "The realisable logits of a final norm are a ball question with offsets",
        text,
        latex,
        hyps,
        (logit, centred, inside),
        (logit, inside),
        n=n_value,
    )


def _no_offset(n_value):
    import sympy as sp

    (a, ai, aj, u), S, l = _vectors(n_value, "a", "a_i", "a_j", "u")
    s, c = sp.Symbol("s", positive=True), sp.Symbol("c", real=True)
    n = general_symbols()["n"] if n_value is None else sp.Integer(n_value)
    scaled = Step(
        r"Scaling $u$ by $s > 0$ scales every gap alike:",
        _sum(S, l, lambda t: (ai[t] - aj[t]) * (s * u[t])),
        s * _sum(S, l, lambda t: (ai[t] - aj[t]) * u[t]),
        _SUMS if n_value is None else "expand",
    )
    m = sp.Symbol("m", positive=True)
    kept = Step(r"So a gap $m > 0$ stays positive at $s u$", s * m, 0, _SIGN, relation=">")
    if n_value is None:
        z = sp.IndexedBase("z", real=True)
        first = lambda e: sp.Sum(e, (l, 1, n - 1))
        lhs = first(a[l] * z[l]) + a[n] * (-first(z[l]))
        rhs = first((a[l] - a[n]) * z[l])
    else:
        z = sp.symbols(f"z1:{n_value}", real=True)
        lhs = sum(a[t] * z[t] for t in range(n_value - 1)) + a[n_value - 1] * (-sum(z))
        rhs = sum((a[t] - a[n_value - 1]) * z[t] for t in range(n_value - 1))
    coords = Step(
        r"Every $u \in \mathbf{1}^\perp$ is $u_l = z_l$ ($l < n$), $u_n = -\sum_{l<n} z_l$ for one $z$, and",
        lhs,
        rhs,
        _SUMS if n_value is None else "expand",
    )
    if n_value is None:
        k = sp.Symbol("k", positive=True, integer=True)
        flat = Step(
            r"and $L v = 0$ makes every $v_l$ equal to one $c$, so $(P v)_l$ is",
            c - sp.Sum(c, (k, 1, n)) / n,
            0,
            _SUMS,
        )
    else:
        v = sp.symbols(f"v1:{n_value + 1}", real=True)
        flat = Step(
            "and $L v = 0$ makes every $v_l$ equal to one $c$: then $(P v)_1 = v_1 - \\frac{1}{n} \\sum_k v_k = 0$",
            v[0] - sum(v) / n,
            0,
            "simplify-to-zero",
            where=tuple((x, c) for x in v),
        )
    text = (
        "By theorem vocab.final_norm the logits are $a_j \\cdot u + c_j$.  When a norm set's queries have no "
        "offset, $c_j = k_j \\cdot \\beta + b_j = 0$ for every row, they are $a_j \\cdot u$ with $a_j = g \\circ k_j$ and $u$ in the "
        "ball $\\|u\\|^2 \\le n$ ($\\mathbf{1} \\cdot u = 0$ for LayerNorm).  Scaling $u$ by $s > 0$ scales "
        "every gap, so the ball's radius never matters: row $i$ can be the strict argmax exactly when it is for "
        "some $u \\ne 0$.  For LayerNorm, $u = L^T z$ runs over $\\mathbf{1}^\\perp$ as $z$ runs over "
        "$\\mathbb{R}^{n-1}$ and $a \\cdot u = (L a) \\cdot z$ with $(L a)_l = a_l - a_n$: row $i$ can be output exactly when $L a_i$ is "
        "a vertex of the hull of the points $L a_j$, a free question in $n - 1$ coordinates.  Weights "
        "$\\lambda$ with $\\sum_j \\lambda_j L a_j = L a_i$ leave $v = a_i - \\sum_j \\lambda_j a_j$ a "
        "multiple of $\\mathbf{1}$, so $P v = 0$: the dual evidence that the row is never output."
    )
    latex = r"a \cdot u = (L a) \cdot z,\quad u = (z_1, \dots, z_{n-1}, -\textstyle\sum_{l<n} z_l),\quad (L a)_l = a_l - a_n"
    hyps = (
        width_hypothesis(n_value, _WIDTH),
        Hypothesis("no offset", "$c_j = 0$ for every row: the scores are $a_j \\cdot u$", r"c_j = 0"),
        Hypothesis("scale", "$s > 0$", r"s > 0"),
    )
    return Theorem(
        "vocab.no_offset",
        "Without offsets a final norm's question is a free question in n - 1 coordinates",
        text,
        latex,
        hyps,
        (scaled, *routine(kept), coords, flat),
        (scaled, coords, flat),
        n=n_value,
    )


def theorems(n: int | None = None, convention: str = "torch") -> list:
    """The vocabulary theorems for general n or width ``n``."""
    return [_self_witness(n), _duplicate_rows(n), _bias_lift(n), _final_norm(n), _no_offset(n)]
