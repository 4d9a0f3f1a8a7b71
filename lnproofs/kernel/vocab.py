"""Vocabulary certificates: evidence written as a reference, decided for every token at once.

Each token (key) ``i`` carries one kind of evidence (``evidence[i]``):

* ``NONE`` (0): undecided, no claim;
* ``SELF`` (1): ``selectable`` with the witness ``q = t_i k_i`` (``t_i = scale[i] > 0``), the key
  itself scaled (theorem ``vocab.self_witness``); with a bias the lifted query ``(t_i k_i, 1)``;
* ``QUERY`` (2): ``selectable`` with the witness ``queries[rows[i]]``, a row of a shared float array;
* ``RESULT`` (3): a :class:`~lnproofs.kernel.certificates.KeyResult`, checked by the query set's module.

``SELF`` and ``QUERY`` are accepted for the ``free`` and ``box`` query sets.  Free queries
without a bias decide every ``SELF`` token by one blocked Gram computation ``K K^T`` in doubles:
``q = t k_i`` has the strict winner of ``q = k_i``, and ``fl(k_i . k_i) - max_j fl(k_i . k_j)``
above the float filter's bound ``4 E'_i`` of :mod:`lnproofs.kernel.checker` (one bound per query,
any order of evaluation, so each block's transpose serves the other rows too) proves
``k_i . k_i > k_i . k_j`` for every ``j``; rounding is monotone, so the maximum may be taken
before the subtraction.  A row the filter does not settle (subnormal entries, near ties) goes to
the checker's exact witness check; so do all witnesses with a bias, on the lifted keys.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .checker import ExactKeys, Verdict, check_witnesses
from .errors import CertificateFormatError, require
from .querysets import module_for
from .querysets.box import lifted_keys

__all__ = ["NONE", "SELF", "QUERY", "RESULT", "self_witnesses", "check_vocab"]

NONE, SELF, QUERY, RESULT = 0, 1, 2, 3
_TINY = 2.0 ** -1022


def self_witnesses(keys, block: int = 2048) -> np.ndarray:
    """Rows ``i`` for which the float filter proves ``k_i . k_i > k_i . k_j`` for every ``j != i``."""
    ek = ExactKeys.of(keys)
    K, n, d = ek.array, ek.n, ek.dim
    c = ek.abs @ ek.abs.max(axis=0)                             # c'_i of query k_i, for every key
    thr = 4.0 * (c * (d * 2.0 ** -50) + d * 2.0 ** -1020)
    top = np.full(n, -np.inf)
    for a in range(0, n, block):
        for b in range(a, n, block):
            S = K[a:a + block] @ K[b:b + block].T
            if a == b:
                np.fill_diagonal(S, -np.inf)
            np.maximum(top[a:a + block], S.max(axis=1), out=top[a:a + block])
            np.maximum(top[b:b + block], S.max(axis=0), out=top[b:b + block])
    ok = (np.einsum("ij,ij->i", K, K) - top > thr) & (c <= 2.0 ** 1000)
    return ok & ~ek.subnormal_rows.any() if n > 1 else np.ones(n, bool)


def _scaled(K, t, i):
    """``t k_i`` as floats when the product is exact (``t`` a power of two, no underflow), else rationals."""
    q = K[i] * t
    exact = np.isfinite(q).all() and np.all((q == 0) == (K[i] == 0)) and np.all((np.abs(q) >= _TINY) | (q == 0)) \
        and np.frexp(t)[0] == 0.5
    return q if exact else tuple(Fraction(t) * Fraction(x) for x in K[i].tolist())


def check_vocab(keys, query_set, evidence, scale=None, queries=None, rows=None, results=()) -> list[Verdict]:
    """One verdict per token, in index order (see the module docstring)."""
    ek = ExactKeys.of(keys)
    K, n = ek.array, ek.n
    ev = np.asarray(evidence)
    require(ev.shape == (n,) and ev.dtype.kind in "iu" and bool(np.isin(ev, (NONE, SELF, QUERY, RESULT)).all()),
            CertificateFormatError, f"evidence must give one code 0..3 per key ({n} keys)")
    by_index = {int(r.index): r for r in results}
    require(len(by_index) == len(results) and sorted(by_index) == np.flatnonzero(ev == RESULT).tolist(),
            CertificateFormatError, "the results must be exactly the keys whose evidence is RESULT, each once")
    kind = query_set.kind
    bias, B = (query_set.bias, query_set.bound) if kind == "box" else (None, None)
    wins = np.flatnonzero((ev == SELF) | (ev == QUERY))
    require(not len(wins) or kind in ("free", "box"), CertificateFormatError,
            f"SELF and QUERY evidence is for free and box query sets, not {kind!r}")
    t = np.asarray(scale if scale is not None else np.ones(n), dtype=np.float64)
    require(t.shape == (n,) and bool(np.all(t[ev == SELF] > 0)) and np.isfinite(t).all(), CertificateFormatError,
            "scale must give one finite t_i > 0 per key")
    messages = [None] * n
    items = []
    if len(wins) and queries is not None:
        Q, r = np.asarray(queries, dtype=np.float64), np.asarray(rows)
        require(r.shape == (n,) and Q.ndim == 2 and Q.shape[1] == ek.dim and np.isfinite(Q).all() and
                bool(np.all((r[ev == QUERY] >= 0) & (r[ev == QUERY] < len(Q)))), CertificateFormatError,
                f"queries must be finite rows of length {ek.dim} and rows must index them")
        items += [(int(i), Q[r[i]]) for i in np.flatnonzero(ev == QUERY)]
    else:
        require(not np.any(ev == QUERY), CertificateFormatError, "QUERY evidence needs the queries and rows arrays")
    selfs = np.flatnonzero(ev == SELF)
    if bias is None and len(selfs):                            # q = t k_i wins where k_i does
        proven = self_witnesses(ek)
        exact = [(int(i), K[i]) for i in selfs if not proven[i]]
        if B is not None:                                      # t_i max_l |k_il| <= B, exactly
            for i in selfs:
                if Fraction(float(t[i])) * Fraction(float(ek.abs[i].max())) > Fraction(B):
                    messages[i] = f"key {i}: the witness t k_i leaves the box |q_l| <= {B}"
    else:
        exact, items = [], items + [(int(i), _scaled(K, float(t[i]), i)) for i in selfs]
    for i, q in items if B is not None else ():
        if (np.abs(q).max() if isinstance(q, np.ndarray) else max(abs(x) for x in q)) > B:
            messages[i] = f"key {i}: the witness leaves the box |q_l| <= {B}"
    items = [(i, np.append(q, 1.0) if isinstance(q, np.ndarray) else q + (Fraction(1),)) for i, q in items] \
        if bias else items + exact
    for (i, _), msg in zip(items, check_witnesses(lifted_keys(K, bias) if bias else ek, items, mode="strict")):
        messages[i] = messages[i] or msg
    if by_index:
        got = module_for(kind).check_all(ek, query_set, [by_index[i] for i in sorted(by_index)])
        for v in got:
            messages[v.index] = v.message if not v.ok else None
    status = {NONE: "undecided", SELF: "selectable", QUERY: "selectable"}
    return [Verdict(i, by_index[i].status if ev[i] == RESULT else status[int(ev[i])], messages[i] is None,
                    messages[i] or "") for i in range(n)]
