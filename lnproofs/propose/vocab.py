"""Certify a whole vocabulary: a screen by the self witness, the existing engine on the residue.

For free queries (and the box) without a bias, one blocked Gram computation (:func:`self_screen`,
in single precision for float32 keys) proposes every token whose own key beats every other key at
``q = k_i``: ``selectable`` with a reference for evidence (theorem ``vocab.self_witness``), which
the kernel's witness check then decides (:func:`lnproofs.certificates.vocab.check_vocab`).  With a
bias, ``q = t_i k_i`` with ``t_i`` a power of two large enough (or the largest that fits the box)
is proposed from the same products, and checked the same way.  For free queries and the box
without a bias, a token whose own key loses is nudged next (:func:`nudged_witnesses`: a few
float32 steps from ``q = k_i`` past its best rivals).  What is left (the residue) goes to the query set's own proposer
(:mod:`lnproofs.propose.certification` for free queries, :mod:`lnproofs.propose.querysets`
otherwise); its float witnesses become rows of one shared array, everything else a full result.
Nothing is kept that the kernel has not accepted.
"""

from __future__ import annotations


import numpy as np

from ..certificates.vocab import NONE, QUERY, RESULT, SELF, VocabCertificate, check_vocab
from ..certificates.writers import query_set_to_json
from ..kernel.arrays import as_real_array
from ..kernel.certificates import KeyResult
from ..kernel.checker import ExactKeys
from ..kernel.querysets import query_set_from_json
from ..kernel.querysets.free import FreeQueries

__all__ = ["certify_vocab_keys", "biased_self_scales", "box_scales", "self_screen", "nudged_witnesses"]


def self_screen(K: np.ndarray, block: int = 2048, rows=None) -> np.ndarray:
    """Rows ``i`` whose own score ``k_i . k_i`` beats every ``k_i . k_j`` in floating point by a
    relative margin (a proposal: the kernel decides).  One symmetric blocked Gram computation, in
    single precision when every key is a float32 (as a model's weights are).  ``rows``: screen
    only these rows (against every key, ``len(rows) * N`` products; the others come back False)."""
    n = len(K)
    if n < 2:
        return np.ones(n, bool) if rows is None else np.isin(np.arange(n), rows)
    W = K.astype(np.float32) if np.all(K.astype(np.float32) == K) else K
    top = np.full(n, -np.inf)
    if rows is None:
        for a in range(0, n, block):
            for b in range(a, n, block):
                S = W[a:a + block] @ W[b:b + block].T
                if a == b:
                    np.fill_diagonal(S, -np.inf)
                np.maximum(top[a:a + block], S.max(axis=1), out=top[a:a + block])
                np.maximum(top[b:b + block], S.max(axis=0), out=top[b:b + block])
        wanted = np.ones(n, bool)
    else:
        rows = np.asarray(rows, dtype=np.int64)
        wanted = np.zeros(n, bool)
        wanted[rows] = True
        for a in range(0, len(rows), block):
            part = rows[a:a + block]
            for b in range(0, n, block):
                S = W[part] @ W[b:b + block].T
                mine = (part >= b) & (part < b + block)
                S[np.flatnonzero(mine), part[mine] - b] = -np.inf
                top[part] = np.maximum(top[part], S.max(axis=1))
    own = np.einsum("ij,ij->i", W, W).astype(np.float64)
    return wanted & (own - top > 2.0 ** -16 * np.abs(own) + 1e-300)


def box_scales(K: np.ndarray, bound) -> np.ndarray:
    """The largest power of two ``t_i`` with ``t_i max_l |k_il| <= bound`` (1 without a bound or for a zero key)."""
    top = np.abs(K).max(axis=1)
    if bound is None:
        return np.ones(len(K))
    with np.errstate(divide="ignore"):
        t = np.exp2(np.floor(np.log2(bound / np.where(top > 0, top, 1.0))))
    t = np.where(t * top > bound, t / 2, t)
    return np.where(top > 0, t, 1.0)


def biased_self_scales(K: np.ndarray, bias: np.ndarray, bound, block: int = 2048,
                       tokens=None) -> tuple[np.ndarray, np.ndarray]:
    """``(proposed, t)``: tokens for which ``q = t_i k_i`` should win with the bias (floats: a proposal
    the kernel checks), and the power of two ``t_i`` (the box's largest, or twice what the float gaps need).
    ``tokens``: propose only for these (default all)."""
    n = len(K)
    t = box_scales(K, bound)
    proposed = np.zeros(n, bool)
    diag = np.einsum("ij,ij->i", K, K)
    tokens = np.arange(n) if tokens is None else np.asarray(tokens, dtype=np.int64)
    for a in range(0, len(tokens), block):
        rows = tokens[a:a + block]
        gaps = diag[rows, None] - K[rows] @ K.T                   # k_i . k_i - k_i . k_j
        gaps[np.arange(len(rows)), rows] = np.inf
        need = (bias[None, :] - bias[rows, None]) / np.where(gaps > 0, gaps, np.nan)
        positive = np.all(gaps > 0, axis=1)
        if bound is None:
            top = np.nanmax(np.where(np.isfinite(need), need, -np.inf), axis=1)
            t[rows] = np.exp2(np.ceil(np.log2(np.maximum(top, 2.0 ** -60))) + 1)
            proposed[rows] = positive & np.isfinite(t[rows])
        else:
            margin = t[rows, None] * gaps + bias[rows, None] - bias[None, :]
            proposed[rows] = positive & np.all(margin > 0, axis=1)
    return proposed, t


def nudged_witnesses(K: np.ndarray, tokens, bound=None, steps: int = 300) -> dict:
    """Float witnesses for tokens whose own key does not win (a proposal: the kernel decides).
    From ``q = k_i``, each step moves ``q`` along ``k_i - k_j``, ``j`` the best rival at ``q``, just
    past the point where ``k_i`` beats ``k_j`` (in float32, with a margin well above float32's
    rounding of the scores); a witness is scaled by a power of two into the box ``|q_l| <= bound``
    (exactly: the argmax does not change).  A trained model's few such tokens take a step or five
    each, where the engine's LPs over every key take seconds."""
    W, out = K.astype(np.float32), {}
    colmax = np.abs(W).max(axis=0)
    for i in tokens:
        q = W[i].copy()
        for _ in range(steps):
            s = W @ q
            own, s[i] = float(s[i]), -np.inf
            j, need = int(np.argmax(s)), 64 * len(q) * 2.0 ** -24 * float(np.abs(q) @ colmax)
            d = W[i] - W[j]
            if own - s[j] > need or not np.all(np.isfinite(q)) or not d.any():
                break
            q = q + d * np.float32(1.5 * (s[j] - own + 2 * need) / float(d @ d))
        if own - s[j] > need and np.all(np.isfinite(q)) and q.any():
            q = q.astype(np.float64)
            out[int(i)] = q if bound is None else q * 2.0 ** np.floor(np.log2(bound / np.abs(q).max()))
    return out


def _residue(K, qs, indices, *, seed, progress):
    from .querysets import proposer_for

    if not len(indices):
        return []
    if qs.kind == "free":
        from .certification import certify_results
        got = certify_results(K, indices=indices, seed=seed, progress=progress)
    else:
        got = proposer_for(qs.kind).certify(K, qs, indices=indices, seed=seed, progress=progress)
    return [got[i] for i in indices]


def certify_vocab_keys(keys, query_set=None, *, seed: int = 0, progress: bool = False,
                       residue_limit: int | None = None, indices=None) -> VocabCertificate:
    """A :class:`~lnproofs.certificates.vocab.VocabCertificate` for ``keys`` under ``query_set``
    (None: free queries; a ``box`` set with or without a bias; or any other kind, whose tokens all
    go to its proposer).  ``residue_limit``: at most this many residue tokens are searched (the
    others stay ``undecided``).  ``indices``: certify only these tokens, each against every key
    (a chunk of the vocabulary; the others stay ``undecided``)."""
    K = as_real_array(keys, name="keys", ndim=2)
    ek = ExactKeys(K)                                            # built once: both checks below read it
    qs = FreeQueries() if query_set is None else (
        query_set_from_json(query_set) if isinstance(query_set, dict) else query_set)
    n, d = K.shape
    evidence, scale = np.full(n, NONE, dtype=np.int8), np.ones(n)
    bias = np.asarray(qs.bias, dtype=np.float64) if getattr(qs, "bias", None) is not None else None
    proposed, rows = np.zeros(n, bool), None if indices is None else np.unique(np.asarray(indices, dtype=np.int64))
    wanted = np.ones(n, bool) if rows is None else np.isin(np.arange(n), rows)
    if qs.kind == "free":
        proposed = self_screen(K, rows=rows)
    elif qs.kind == "box" and bias is None:                      # the box: t_i max|k_i| <= B, compared exactly by the kernel
        scale = box_scales(K, qs.bound)
        proposed = self_screen(K, rows=rows) & (scale * np.abs(K).max(axis=1) <= qs.bound)
    elif qs.kind == "box":
        proposed, scale = biased_self_scales(K, bias, qs.bound, tokens=rows)
    if proposed.any():                                           # the kernel decides every proposed self witness
        others = [KeyResult(int(i), "undecided") for i in np.flatnonzero(~proposed)]
        verdicts = check_vocab(ek, qs, np.flatnonzero(proposed), scale, others)
        evidence[[v.index for v in verdicts if v.ok and v.status == "selectable" and proposed[v.index]]] = SELF
    todo = np.flatnonzero((evidence == NONE) & wanted).tolist()
    if residue_limit is not None:
        todo = todo[:residue_limit]
    nudged = nudged_witnesses(K, todo, getattr(qs, "bound", None)) if qs.kind == "free" or (qs.kind == "box" and bias is None) else {}
    found = _residue(K, qs, [i for i in todo if i not in nudged], seed=seed, progress=progress)
    found += [KeyResult(i, "selectable", tuple(q.tolist())) for i, q in nudged.items()]
    queries, rows, results = [], np.full(n, -1, dtype=np.int32), []
    for r in found:
        if r.status == "selectable" and r.witness is not None and all(type(x) is float for x in r.witness) \
                and qs.kind in ("free", "box"):
            rows[r.index], evidence[r.index] = len(queries), QUERY
            queries.append(r.witness)
        elif r.status != "undecided":
            evidence[r.index] = RESULT
            results.append(r)
    Q = np.array(queries, dtype=np.float64).reshape(len(queries), d) if queries else None
    probe = [KeyResult(int(i), "undecided") for i in np.flatnonzero((evidence == NONE) | (evidence == SELF))]
    probe += [KeyResult(int(i), "selectable", tuple(Q[rows[i]].tolist()), None, "exact")
              for i in np.flatnonzero(evidence == QUERY)]
    verdicts = check_vocab(ek, qs, [], np.ones(n), probe + results)     # SELF was decided above
    evidence[[v.index for v in verdicts if not v.ok]] = NONE
    results = tuple(r for r in results if evidence[r.index] == RESULT)
    qs_json = {k: v for k, v in query_set_to_json(qs).items() if k != "bias"}
    return VocabCertificate(n, d, qs_json, evidence,
                            scale if (bias is not None or qs.kind == "box") else None,
                            Q, rows if Q is not None else None, bias, results)
