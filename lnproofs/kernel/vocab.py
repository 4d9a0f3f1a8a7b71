"""Vocabulary certificates (``lnproofs.vocab/1``): the claim each token's evidence stands for, decided.

A vocabulary of tens of thousands of keys is certified mostly by references (the manifest and its
arrays; written, read and merged by :mod:`lnproofs.certificates.vocab`).  Per key, an evidence code:
``NONE`` (undecided), ``SELF`` (the key's own witness ``q = t_i k_i``, ``t_i`` its ``scale``, theorem
``vocab.self_witness``; under a norm set the input ``u_i = t_i J_i`` in the key's own direction,
:func:`norm_directions`), ``QUERY`` (row ``rows_i`` of the float ``queries``; under a norm set a ``u``)
or ``RESULT`` (a full result of the selectability schema in the manifest).  :func:`check_vocab` takes
the manifest and its arrays as read, turns every reference into the ``selectable`` claim it stands
for, and decides every claim with the query set's own checks: the box's bias lift for a bias
(theorem ``vocab.bias_lift``), and with a coverage claim (a norm set whose queries are checked to live
in the keys' space and to realise every direction, :func:`.querysets.coverage.check_coverage`) the
free checks (theorem ``coverage.argmax_direction``).

The float filter in front of a norm set's exact path.  A row is in the set when it is ``u = I 2^e``
with integers ``|I| < 2^20`` (``e`` from its largest entry; the row read back exactly), ``1 . I = 0``
when centred and ``2^(2e) I . I <= n``: with ``n <= 2^13`` these sums are exact in doubles, in any
order.  Its scores are those of the float keys ``L_j = (g * W_q^T k_j, k_j)`` at ``(u, q0)``:
``L_j . (u, q0) = k_j . q`` (theorem ``vocab.final_norm``), decided by :func:`.checker.check_witnesses`.
``L`` is exact when ``W_q`` is a 0/1 selection (one 1 per column), ``g`` and the keys are float32
numbers (as a model's weights are: their products are doubles), and ``q0`` is a float vector, without
rotation or radius (an output layer's set).  The filter only accepts: every row it does not accept goes to the exact path
of :mod:`.querysets.norm`, and ``tests/test_vocab_filter.py`` compares the two with Hypothesis.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .certificates import KeyResult, each_once, same_shape
from .checker import ExactKeys, Verdict, check_witnesses, self_filter
from .dyadic import fmpq_of, fraction_of_fmpq
from .errors import CertificateFormatError, require
from .querysets import query_set_from_json
from .querysets.coverage import check_coverage
from .querysets.free import BoxQuerySet, FreeQueries
from .querysets.norm import ExactQueryMap, NormQuerySet

VOCAB_SCHEMA = "lnproofs.vocab/1"
#: the evidence codes: undecided, the key itself (``t_i k_i``), a row of the shared queries, a full result
EVIDENCE = NONE, SELF, QUERY, RESULT = 0, 1, 2, 3


def integer_rows(Z: np.ndarray, bits: int, centred: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(J, e)``: each row of ``Z`` as integers ``J`` (int64; ``2^bits`` at most for its largest entry)
    with ``Z ~ J 2^e`` row by row, and for ``centred`` moved onto ``1 . J = 0`` exactly (minus the
    floor of its mean, then minus 1 on its first ``1 . J`` entries): only the rounding is a float step."""
    top = np.abs(Z).max(axis=1, initial=0.0)
    e = np.where(top > 0, np.frexp(top)[1] - bits, 0)
    J = np.rint(np.ldexp(Z, -e[:, None])).astype(np.int64)
    if centred:
        J -= (J.sum(axis=1) // J.shape[1])[:, None]
        J -= np.arange(J.shape[1])[None, :] < J.sum(axis=1)[:, None]
    return J, e


def norm_directions(keys, query_set, tokens, block: int = 4096) -> np.ndarray:
    """Integer rows ``J_i`` (as floats, exactly) in the direction of ``z_i = g * k_i[c]`` for the
    ``tokens``, ``c`` the column each input coordinate reads (``W_q``'s largest entry; ``W_q^T k_i``
    when it selects coordinates): :func:`integer_rows` of 12 bits, centred for a centred set.  Every
    step after the product is on integers, so every machine makes the same rows."""
    K, arrays = getattr(keys, "array", keys), query_set.arrays()
    cols, g, tokens = arrays["W_q"].argmax(axis=0), arrays[query_set.G_NAME], np.asarray(tokens, dtype=np.int64)
    out = np.empty((len(tokens), len(g)))
    for a in range(0, len(tokens), block):
        out[a : a + block] = integer_rows(K[tokens[a : a + block]][:, cols] * g, 12, query_set.centred)[0]
    return out


def self_witnesses(keys, selves, scale) -> list:
    """``(i, q)`` with ``q = t_i k_i`` for each token ``i`` of ``selves``: the float row itself where
    the product is exact (``t_i`` a power of two, nothing overflowing or underflowing), else exact
    rationals."""
    K, t = getattr(keys, "array", keys), np.asarray(scale, dtype=np.float64)
    selves = np.asarray(selves, dtype=np.int64)
    Q = K[selves] * t[selves, None]
    exact = (np.frexp(t[selves])[0] == 0.5) & np.all(Q / t[selves, None] == K[selves], axis=1)  # no bit lost
    return [
        (int(i), Q[k] if exact[k] else tuple(Fraction(float(t[i])) * Fraction(x) for x in K[i].tolist()))
        for k, i in enumerate(selves)
    ]


def _grid_accepts(ek: ExactKeys, query_set, indices, U) -> np.ndarray:
    """The float filter of the module docstring: for each row ``u`` of ``U``, True when it is proved in
    the set and to make key ``indices[t]`` win; False leaves the row to the exact path."""
    qm, n = ExactQueryMap(query_set), query_set.width
    g, W, q0 = query_set.arrays()[query_set.G_NAME], qm.W_float, qm.q0.entries()
    w0 = np.array([float(fraction_of_fmpq(x)) for x in q0])
    Z = ek.array[:, W.argmax(axis=0)] * g  # W_q^T k_j times g, when W_q selects coordinates
    float32 = ek.single and np.array_equal(g.astype(np.float32), g)  # each product exact in doubles
    selection = np.isin(W, (0, 1)).all() and (W.sum(axis=0) == 1).all()
    floats = all(fmpq_of(a) == b for a, b in zip(w0, q0))  # q0 is a float vector
    if qm.R is not None or qm.radius is not None or n > 2**13 or not (selection and floats and float32):
        return np.zeros(len(U), dtype=bool)
    e = np.frexp(np.abs(U).max(axis=1, initial=0))[1] - 20
    with np.errstate(invalid="ignore", over="ignore"):
        I = np.ldexp(U, -e[:, None])
        inside = np.all((I == np.rint(I)) & (np.ldexp(I, e[:, None]) == U), axis=1) & np.all(np.isfinite(U), axis=1)
        inside &= ((I.sum(axis=1) == 0) | (not qm.centred)) & (np.ldexp((I * I).sum(axis=1), 2 * e) <= n)
    keep, rows = np.flatnonzero(w0), np.flatnonzero(inside)
    L = ExactKeys(np.hstack([Z, ek.array[:, keep]]), ek.matmul)
    inside[rows] = [m is None for m in check_witnesses(L, [(int(indices[t]), np.r_[U[t], w0[keep]]) for t in rows])]
    return inside


def check_vocab(keys, manifest: dict, arrays: dict, matmul=None) -> list[Verdict]:
    """The verdict on every token of a vocabulary certificate (``manifest``: its JSON, results as data
    or as :class:`KeyResult`; ``arrays``: the arrays it names, by name, as read), in index order, then
    the coverage claim's when it has one.  ``matmul``: the float filter's products (:class:`.ExactKeys`;
    None: numpy's, or those of ``keys`` when they are ExactKeys); the verdicts do not depend on it."""
    ek = ExactKeys.of(keys, matmul)
    n = ek.n
    same_shape(manifest, n, ek.dim, "certificate")
    bias, cover = arrays.get("bias"), []
    qs = query_set_from_json(dict(manifest["query_set"], **({} if bias is None else {"bias": bias.tolist()})))
    if manifest.get("coverage") is not None:  # a set that realises every direction has the free answers
        ok, message = check_coverage(qs, manifest["coverage"], ek.dim)
        cover, qs = [Verdict(-1, "coverage", ok, "" if ok else f"coverage claim: {message}")], FreeQueries()
    qs.validate(ek.dim)  # the set's queries live where the keys do
    ev = np.asarray(arrays.get("evidence"))
    require(
        ev.shape == (n,) and np.isin(ev, EVIDENCE).all(),
        CertificateFormatError,
        f"the evidence array must give one code 0..3 per key ({n} keys)",
    )
    results = [
        r if isinstance(r, KeyResult) else KeyResult.from_json(r, f"results[{k}]")
        for k, r in enumerate(manifest.get("results", []))
    ]
    each_once(
        [r.index for r in results] + np.flatnonzero(ev != RESULT).tolist(), n, "the results with the other evidence"
    )
    selves, picked = np.flatnonzero(ev == SELF), np.flatnonzero(ev == QUERY)
    Q, rows = arrays.get("queries"), arrays.get("rows")
    norm = isinstance(qs, NormQuerySet)  # a norm set's witnesses are its inputs u
    width = qs.width if norm else ek.dim
    require(
        not len(picked)
        or (Q is not None and rows is not None and rows.shape == (n,) and Q.ndim == 2 and Q.shape[1] == width)
        and bool(np.all((rows[picked] >= 0) & (rows[picked] < len(Q)))),
        CertificateFormatError,
        f"evidence 2 (a shared query) needs the queries array, rows of {width} numbers, and rows indexing it",
    )
    W = Q[rows[picked]] if len(picked) else np.zeros((0, width))
    t = np.ones(n) if arrays.get("scale") is None else np.asarray(arrays["scale"], dtype=np.float64)
    require(
        t.shape == (n,) and bool(np.isfinite(t).all()) and bool(np.all(t[selves] > 0)),
        CertificateFormatError,
        "scale must give one finite t_i > 0 per key",
    )
    claims, done = results + [KeyResult(int(i), "undecided") for i in np.flatnonzero(ev == NONE)], []
    if norm:  # the float filter first
        tokens = np.r_[selves, picked]
        U = np.vstack([norm_directions(ek, qs, selves) * t[selves, None], W])
        accepted = _grid_accepts(ek, qs, tokens, U) if len(U) else np.zeros(0, dtype=bool)
        done = [Verdict(int(i), "selectable", True) for i in tokens[accepted]]
        claims += [
            KeyResult(int(tokens[k]), "selectable", extras={"u": U[k].tolist()}) for k in np.flatnonzero(~accepted)
        ]
    else:  # free queries or a box without a bias: q = t_i k_i wins where k_i does (t_i > 0), by the self filter
        plain = type(qs) is FreeQueries or (type(qs) is BoxQuerySet and qs.bias is None)
        sign = self_filter(ek, selves) if plain else np.zeros(len(selves), dtype=np.int8)
        B = None if getattr(qs, "bound", None) is None else Fraction(qs.bound)
        for i, s in zip(selves[sign != 0].tolist(), sign[sign != 0].tolist()):
            out = B is not None and Fraction(float(t[i])) * Fraction(float(np.abs(ek.array[i]).max())) > B
            why = f"key {i}: {'another key beats its own witness' if s < 0 else 'its witness leaves the box'}"
            done.append(Verdict(i, "selectable", s > 0 and not out, "" if s > 0 and not out else why))
        items = self_witnesses(ek, selves[sign == 0], t) + list(zip(picked.tolist(), W))
        claims += [KeyResult(i, "selectable", tuple(q.tolist()) if isinstance(q, np.ndarray) else q) for i, q in items]
    return sorted(qs.check(ek, claims) + done, key=lambda v: v.index) + cover
