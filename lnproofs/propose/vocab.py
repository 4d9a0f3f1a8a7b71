"""Certify a whole vocabulary: a screen by the self witness, the existing engine on the residue.

For free queries (and the box) without a bias, one blocked Gram computation (:func:`self_screen`,
in single precision for float32 keys) proposes every token whose own key beats every other key at
``q = k_i``: ``selectable`` with a reference for evidence (theorem ``vocab.self_witness``), which
the kernel's witness check then decides (:func:`lnproofs.kernel.check_tokens`).  With a
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

from ..certificates.vocab import NONE, QUERY, RESULT, SELF, VocabCertificate, load_vocab, merge_vocab
from ..certificates.writers import query_set_to_json
from ..kernel import (
    BoxQuerySet,
    ExactKeys,
    FreeQueries,
    KeyResult,
    NormQuerySet,
    as_real_array,
    check_vocab,
    integer_rows,
    norm_directions,
    query_set_from_json,
)
from .homogeneous import homogeneous_results, is_homogeneous, relaxed_duals

__all__ = [
    "certify_vocab_keys",
    "certify_vocab_chunks",
    "biased_self_scales",
    "box_scales",
    "self_screen",
    "nudged_witnesses",
    "norm_self_scales",
    "norm_nudged_witnesses",
    "CHUNK_TOKENS",
]

#: tokens per task when a vocabulary is spread over workers (each token against every key)
CHUNK_TOKENS = 10000


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
                S = W[a : a + block] @ W[b : b + block].T
                if a == b:
                    np.fill_diagonal(S, -np.inf)
                np.maximum(top[a : a + block], S.max(axis=1), out=top[a : a + block])
                np.maximum(top[b : b + block], S.max(axis=0), out=top[b : b + block])
        wanted = np.ones(n, bool)
    else:
        rows = np.asarray(rows, dtype=np.int64)
        wanted = np.zeros(n, bool)
        wanted[rows] = True
        for a in range(0, len(rows), block):
            part = rows[a : a + block]
            for b in range(0, n, block):
                S = W[part] @ W[b : b + block].T
                mine = (part >= b) & (part < b + block)
                S[np.flatnonzero(mine), part[mine] - b] = -np.inf
                top[part] = np.maximum(top[part], S.max(axis=1))
    own = np.einsum("ij,ij->i", W, W).astype(np.float64)
    return wanted & (own - top > 2.0**-16 * np.abs(own) + 1e-300)


def box_scales(K: np.ndarray, bound) -> np.ndarray:
    """The largest power of two ``t_i`` with ``t_i max_l |k_il| <= bound`` (1 without a bound or for a zero key)."""
    top = np.abs(K).max(axis=1)
    if bound is None:
        return np.ones(len(K))
    with np.errstate(divide="ignore"):
        t = np.exp2(np.floor(np.log2(bound / np.where(top > 0, top, 1.0))))
    t = np.where(t * top > bound, t / 2, t)
    return np.where(top > 0, t, 1.0)


def biased_self_scales(
    K: np.ndarray, bias: np.ndarray, bound, block: int = 2048, tokens=None
) -> tuple[np.ndarray, np.ndarray]:
    """``(proposed, t)``: tokens for which ``q = t_i k_i`` should win with the bias (floats: a proposal
    the kernel checks), and the power of two ``t_i`` (the box's largest, or twice what the float gaps need).
    ``tokens``: propose only for these (default all)."""
    n = len(K)
    t = box_scales(K, bound)
    proposed = np.zeros(n, bool)
    diag = np.einsum("ij,ij->i", K, K)
    tokens = np.arange(n) if tokens is None else np.asarray(tokens, dtype=np.int64)
    for a in range(0, len(tokens), block):
        rows = tokens[a : a + block]
        gaps = diag[rows, None] - K[rows] @ K.T  # k_i . k_i - k_i . k_j
        gaps[np.arange(len(rows)), rows] = np.inf
        need = (bias[None, :] - bias[rows, None]) / np.where(gaps > 0, gaps, np.nan)
        positive = np.all(gaps > 0, axis=1)
        if bound is None:
            top = np.nanmax(np.where(np.isfinite(need), need, -np.inf), axis=1)
            t[rows] = np.exp2(np.ceil(np.log2(np.maximum(top, 2.0**-60))) + 1)
            proposed[rows] = positive & np.isfinite(t[rows])
        else:
            margin = t[rows, None] * gaps + bias[rows, None] - bias[None, :]
            proposed[rows] = positive & np.all(margin > 0, axis=1)
    return proposed, t


def norm_self_scales(K: np.ndarray, qs, tokens=None, block: int = 2048) -> tuple[np.ndarray, np.ndarray]:
    """``(proposed, t)`` under a norm query set whose ``W_q`` selects coordinates: the tokens whose own
    direction ``u_i = t_i J_i`` (:func:`lnproofs.kernel.norm_directions`: ``a_i = P (g * k_i)``
    on a grid of integers) should win, and ``t_i = T 2^f`` (``32 <= T < 64``), the largest with
    ``||u_i||^2 <= n`` (compared in integers), so ``u_i`` is as long as the ball allows (what
    the offsets ``c_j = k_j . q0`` need; theorems ``vocab.final_norm`` and ``vocab.self_witness``).
    The screen is one symmetric blocked float32 Gram computation of the ``a_j``: at ``u_i ~ s_i a_i``
    the scores are ``s_i a_j . a_i + c_j``.  A token is kept when its own score leads by more than
    the grid's rounding of ``u_i`` can move a score (3 per entry of ``J_i``, times ``t_i ||a_j||_1``)
    plus twice the kernel's float32 bound (when the keys ``g o k_j`` are float32 numbers; else the
    screen's own float32 rounding): a proposal, the kernel decides."""
    n, arrays = qs.width, qs.arrays()
    W, g = arrays["W_q"], arrays[qs.G_NAME]
    tokens = np.arange(len(K)) if tokens is None else np.asarray(tokens, dtype=np.int64)
    J = norm_directions(K, qs, tokens)
    t, proposed = np.ones(len(K)), np.zeros(len(K), bool)
    for i, q in zip(tokens.tolist(), np.einsum("ij,ij->i", J, J).astype(np.int64).tolist()):  # exact: < 2^40
        if q > 0:
            f = int(np.floor(np.log2(np.sqrt(n / q)))) - 5
            T = min(63, int(np.sqrt(n / q) / 2.0**f))
            while T * T * q << max(2 * f, 0) > n << max(-2 * f, 0):
                T -= 1
            t[i], proposed[i] = T * 2.0**f, T > 0
    Z = K[:, W.argmax(axis=0)] * g
    A = Z - Z.mean(axis=1, keepdims=True) if qs.centred else Z.copy()
    # the kernel's c' = sum_l max_j |L_jl| |w_l| for the lifted keys L_j = (z_j, k_j) at w = (u, q0), per token
    size = np.zeros(len(K))
    size[tokens] = t[tokens] * (np.abs(J) @ np.abs(Z).max(axis=0))
    bound = 8 * 2.0**-21 if np.array_equal(Z.astype(np.float32), Z) else 8 * 2.0**-24  # the kernel's, or our float32's
    del Z
    q0 = W @ arrays["beta"] + arrays["b_q"]
    c = K @ q0
    norms2 = np.einsum("ij,ij->i", A, A)
    s = np.ones(len(K))  # tokens outside ``tokens``: computed, not used
    s[tokens] = t[tokens] * np.sqrt(np.einsum("ij,ij->i", J, J)) / np.sqrt(np.maximum(norms2[tokens], 1e-300))
    s[~(s > 0)] = 1.0  # no direction (J_i = 0): not proposed; 0 * -inf would be nan
    del J
    wanted = np.zeros(len(K), bool)
    wanted[tokens] = True
    Af, top, offsets = A.astype(np.float32), np.full(len(K), -np.inf), bool(c.any())
    s32, c32 = s.astype(np.float32), c.astype(np.float32)
    for a in range(0, len(K), block):
        for b in range(a, len(K), block):
            if not (wanted[a : a + block].any() or wanted[b : b + block].any()):
                continue
            G = Af[a : a + block] @ Af[b : b + block].T
            if a == b:
                np.fill_diagonal(G, -np.inf)
            # witnesses of block b against the keys of block a, and (a < b) those of block a against block b;
            # without offsets the largest score is s_i times the largest product (s_i > 0)
            col = (
                (s32[None, b : b + block] * G + c32[a : a + block, None]).max(axis=0)
                if offsets
                else s[b : b + block] * G.max(axis=0)
            )
            top[b : b + block] = np.maximum(top[b : b + block], col)
            if a < b:
                row = (
                    (s32[a : a + block, None] * G + c32[None, b : b + block]).max(axis=1)
                    if offsets
                    else s[a : a + block] * G.max(axis=1)
                )
                top[a : a + block] = np.maximum(top[a : a + block], row)
    own = s * norms2 + c
    size += float(np.abs(q0) @ np.abs(K).max(axis=0))
    tol = 6 * t * np.abs(A).sum(axis=1).max(initial=0.0) + bound * (n + np.count_nonzero(q0)) * size
    return proposed & wanted & (own - top > tol), t


def norm_nudged_witnesses(K: np.ndarray, qs, tokens, steps: int = 200, block: int = 64) -> dict:
    """Float witnesses ``u`` (on the grid the kernel reads: 20-bit integers, ``1 . u = 0`` exactly when
    centred, ``||u||^2 <= n`` compared in integers) for tokens whose own direction does not win
    under a norm set whose ``W_q`` selects coordinates (a proposal: the kernel decides).  From
    ``u = r a_i / ||a_i||`` (``r`` just inside the ball), each step moves ``u`` toward the soft
    minimum of the score gaps ``s_i - s_j`` (``s_j = a_j . u + c_j``; a softmax over the rivals
    with a temperature that falls), back onto the ball: the keys enter through products only, so a
    block of tokens against 50,000 keys takes a few matrix products per step."""
    if not len(tokens):
        return {}
    n, arrays = qs.width, qs.arrays()
    W, g = arrays["W_q"], arrays[qs.G_NAME]
    A = K[:, W.argmax(axis=0)] * g
    if qs.centred:
        A -= A.mean(axis=1, keepdims=True)  # in 1-perp the centred keys give the same scores
    c = K @ (W @ arrays["beta"] + arrays["b_q"])
    radius, out = np.sqrt(n) * (1 - 2.0**-8), {}
    tokens = np.asarray(tokens, dtype=np.int64)
    scale = 2 * radius * float(np.sqrt(np.einsum("ij,ij->i", A, A).max(initial=0.0))) + float(np.ptp(c)) + 1e-300
    for a in range(0, len(tokens), block):
        R = tokens[a : a + block]
        ar = np.arange(len(R))
        u = A[R] * (radius / np.maximum(np.linalg.norm(A[R], axis=1), 1e-300))[:, None]
        best_u, best = u.copy(), np.full(len(R), -np.inf)
        for step in range(steps):
            gap = (u @ A[R].T)[ar, ar][:, None] + c[R, None] - (u @ A.T) - c[None, :]
            gap[ar, R] = np.inf
            low = gap.min(axis=1)
            better = low > best
            best_u[better], best[better] = u[better], low[better]
            if np.all(best > 2.0**-16 * scale):
                break
            p = np.exp(-(gap - low[:, None]) / (0.05 * scale / (1 + step)))
            p /= p.sum(axis=1, keepdims=True)
            grad = A[R] - p @ A  # the gradient of s_i - sum_j p_j s_j
            grad /= np.maximum(np.linalg.norm(grad, axis=1), 1e-300)[:, None]
            u = u + (0.5 / np.sqrt(1 + step)) * radius * grad
            u *= np.minimum(1.0, radius / np.maximum(np.linalg.norm(u, axis=1), 1e-300))[:, None]
        out.update(
            (i, u)
            for i, v, m in zip(R.tolist(), best_u, best)
            if m > 2.0**-16 * scale and (u := _on_grid(v, n, qs.centred)) is not None
        )
    return out


def _on_grid(v: np.ndarray, n: int, centred: bool):
    """``v`` rounded to the grid the kernel reads (20-bit integers times a power of two), moved onto
    ``1 . u = 0`` exactly when ``centred``; None when it is zero or leaves the ball ``||u||^2 <= n``."""
    if not v.any() or not np.all(np.isfinite(v)):
        return None
    J, e = integer_rows(v[None, :], 19, centred)
    J, e = J[0], int(e[0])
    return np.ldexp(J.astype(np.float64), e) if int((J * J).sum()) << max(2 * e, 0) <= n << max(-2 * e, 0) else None


def nudged_witnesses(K: np.ndarray, tokens, bound=None, steps: int = 300, patience: int = 16) -> dict:
    """Float witnesses for tokens whose own key does not win (a proposal: the kernel decides).
    From ``q = k_i``, each step moves ``q`` along ``k_i - k_j``, ``j`` the best rival at ``q``, just
    past the point where ``k_i`` beats ``k_j`` (in float32, with a margin well above float32's
    rounding of the scores); a witness is scaled by a power of two into the box ``|q_l| <= bound``
    (exactly: the argmax does not change).  A trained model's few such tokens take a step or five
    each, where the engine's LPs over every key take seconds.  A token whose gap to its best rival,
    relative to the scores' size, has not grown for ``patience`` steps is left to the engine (a key
    inside the hull never wins, and would take every step)."""
    W, out = K.astype(np.float32), {}
    colmax = np.abs(W).max(axis=0)
    for i in tokens:
        q, best, idle = W[i].copy(), -np.inf, 0
        for _ in range(steps):
            s = W @ q
            own, s[i] = float(s[i]), -np.inf
            size = float(np.abs(q) @ colmax)
            j, need = int(np.argmax(s)), 64 * len(q) * 2.0**-24 * size
            d = W[i] - W[j]
            if own - s[j] > need or not np.all(np.isfinite(q)) or not d.any():
                break
            gain = (own - s[j]) / max(size, 1e-300)
            best, idle = (gain, 0) if gain > best else (best, idle + 1)
            if idle >= patience:
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
    if type(qs) is FreeQueries:
        from .certification import certify_results

        got = certify_results(K, indices=indices, seed=seed, progress=progress)
    else:
        got = proposer_for(qs).certify(K, qs, indices=indices, seed=seed, progress=progress)
    by_index = {int(r.index): r for r in got}  # a full list (free, box) or the chunk's (norm sets)
    return [by_index[i] for i in indices]


def certify_vocab_keys(
    keys, query_set=None, *, seed: int = 0, progress: bool = False, residue_limit: int | None = None, indices=None
) -> VocabCertificate:
    """A :class:`~lnproofs.certificates.vocab.VocabCertificate` for ``keys`` under ``query_set``
    (None: free queries; a ``box`` set with or without a bias; or any other kind, whose tokens all
    go to its proposer).  ``residue_limit``: at most this many residue tokens are searched (the
    others stay ``undecided``).  ``indices``: certify only these tokens, each against every key
    (a chunk of the vocabulary; the others stay ``undecided``)."""
    K = as_real_array(keys, name="keys", ndim=2)
    ek = ExactKeys(K)  # built once: both checks below read it
    qs = (
        FreeQueries()
        if query_set is None
        else (query_set_from_json(query_set) if isinstance(query_set, dict) else query_set)
    )
    n, d = K.shape
    evidence, scale = np.full(n, NONE, dtype=np.int8), np.ones(n)
    bias = np.asarray(qs.bias, dtype=np.float64) if getattr(qs, "bias", None) is not None else None
    proposed, rows = np.zeros(n, bool), None if indices is None else np.unique(np.asarray(indices, dtype=np.int64))
    wanted = np.ones(n, bool) if rows is None else np.isin(np.arange(n), rows)
    if type(qs) is FreeQueries:
        proposed = self_screen(K, rows=rows)
    elif isinstance(qs, BoxQuerySet) and bias is None:  # the box: t_i max|k_i| <= B, compared exactly by the kernel
        scale = box_scales(K, qs.bound)
        proposed = self_screen(K, rows=rows) & (scale * np.abs(K).max(axis=1) <= qs.bound)
    elif isinstance(qs, BoxQuerySet):
        proposed, scale = biased_self_scales(K, bias, qs.bound, tokens=rows)
    lifted = (
        isinstance(qs, NormQuerySet)
        and getattr(qs, "rotation", None) is None
        and getattr(qs, "radius", None) is None
        and np.isin(W := qs.arrays()["W_q"], (0, 1)).all()
        and (W.sum(axis=0) == 1).all()
    )  # an output layer's set
    if lifted:
        proposed, scale = norm_self_scales(K, qs, rows)
    qs_json = {k: v for k, v in query_set_to_json(qs).items() if k != "bias"}
    manifest, given = {"n_keys": n, "dim": d, "query_set": qs_json, "results": []}, {"bias": bias}
    if proposed.any():  # the kernel decides every proposed self witness
        arrays = dict(given, evidence=np.where(proposed, SELF, NONE), scale=scale)
        verdicts = check_vocab(ek, manifest, arrays)
        evidence[[v.index for v in verdicts if v.ok and v.status == "selectable" and proposed[v.index]]] = SELF
    todo = np.flatnonzero((evidence == NONE) & wanted).tolist()
    if residue_limit is not None:
        todo = todo[:residue_limit]
    homogeneous = lifted and is_homogeneous(qs)  # no offsets: the subspace question (theorem vocab.no_offset)
    found = (
        homogeneous_results(K, qs, todo, seed=seed)
        if homogeneous
        else relaxed_duals(K, qs, todo, seed=seed)
        if lifted
        else []
    )  # never output for any u, ball or not
    settled = {r.index for r in found}
    todo = [i for i in todo if i not in settled]
    nudged = (
        nudged_witnesses(K, todo, getattr(qs, "bound", None))
        if type(qs) is FreeQueries or (isinstance(qs, BoxQuerySet) and bias is None)
        else norm_nudged_witnesses(K, qs, todo)
        if lifted and not homogeneous
        else {}
    )
    found += _residue(K, qs, [i for i in todo if i not in nudged], seed=seed, progress=progress)
    found += [KeyResult(i, "selectable", tuple(q.tolist())) for i, q in nudged.items()]
    queries, rows, results = [], np.full(n, -1, dtype=np.int32), []
    for r in found:
        if (
            r.status == "selectable"
            and r.witness is not None
            and all(type(x) is float for x in r.witness)
            and (isinstance(qs, (FreeQueries, BoxQuerySet)) or r.index in nudged)
        ):  # a float query, or a float u of a norm set
            rows[r.index], evidence[r.index] = len(queries), QUERY
            queries.append(r.witness)
        elif r.status != "undecided":
            evidence[r.index] = RESULT
            results.append(r)
    Q = np.array(queries, dtype=np.float64).reshape(len(queries), -1) if queries else None
    probe = np.where(evidence == SELF, NONE, evidence)  # SELF was decided above
    arrays = dict(given, evidence=probe, queries=Q, rows=rows if Q is not None else None)
    verdicts = check_vocab(ek, dict(manifest, results=results), arrays)
    evidence[[v.index for v in verdicts if not v.ok]] = NONE
    results = tuple(r for r in results if evidence[r.index] == RESULT)
    return VocabCertificate(
        n,
        d,
        qs_json,
        evidence,
        scale if (bias is not None or isinstance(qs, BoxQuerySet) or isinstance(qs, NormQuerySet)) else None,
        Q,
        rows if Q is not None else None,
        bias,
        results,
    )


def _resumed_chunk(path, K, question, bias, span) -> VocabCertificate | None:
    """A chunk certificate found on disk, kept only when it is a vocabulary certificate of these
    keys under this query set with evidence for its own tokens alone, and the kernel holds every
    claim against the keys; else None, and the chunk is made again."""
    from ..certificates.limits import read_json_file
    from ..kernel import InputError

    try:
        cert = load_vocab(path, read_json_file(path))
        outside = np.ones(len(K), dtype=bool)
        outside[span[0] : span[1]] = False
        if (
            (cert.n_keys, cert.dim) != K.shape
            or cert.query_set != question
            or not np.array_equal(cert.bias, bias)
            or np.any(cert.evidence[outside] != 0)
        ):
            return None
        return cert if cert.check(K).ok else None
    except (InputError, ValueError, IndexError):  # unreadable, or not a certificate of this shape
        return None


def _chunk_task(span, shared) -> VocabCertificate:
    keys, query_set, seed, progress = shared
    whole = tuple(span) == (0, len(keys))  # every token: the symmetric screen, half the products
    return certify_vocab_keys(
        keys, query_set, seed=seed, progress=progress, indices=None if whole else np.arange(*span)
    )


def certify_vocab_chunks(
    keys,
    query_set=None,
    *,
    workers=None,
    scheduler=None,
    seed: int = 0,
    progress: bool = False,
    folder=None,
    chunk: int = CHUNK_TOKENS,
) -> VocabCertificate:
    """:func:`certify_vocab_keys` for every token, in chunks of ``chunk`` tokens (each against every
    key) on ``workers`` / ``scheduler`` (:func:`lnproofs.execution.run_tasks`; by default, or one
    worker: in this process, the whole vocabulary as one chunk), merged (:func:`lnproofs.certificates.vocab.merge_vocab`).
    ``folder``: each chunk's certificate is written there as it finishes and read back instead of
    being made again, so an interrupted run resumes.  The chunks do not depend on the workers."""
    from pathlib import Path

    from ..execution import resolve_workers, run_tasks

    K = as_real_array(keys, name="keys", ndim=2)
    qs = query_set_to_json(
        FreeQueries()
        if query_set is None
        else (query_set_from_json(query_set) if isinstance(query_set, dict) else query_set)
    )
    spread = scheduler is not None or resolve_workers(workers, worthwhile=False) > 1
    spans = [(a, min(a + chunk, len(K))) for a in range(0, len(K), chunk)] if spread else [(0, len(K))]
    path_of = (lambda span: None) if folder is None else (lambda span: Path(folder) / f"chunk-{span[0]}-{span[1]}.json")
    question = {k: v for k, v in qs.items() if k != "bias"}  # a chunk file's query set, the bias beside it
    done = {}
    for k, span in enumerate(spans):
        path = path_of(span)
        if path is not None and (path.exists() or path.is_symlink()):
            cert = _resumed_chunk(path, K, question, qs.get("bias"), span)
            if cert is not None:
                done[k] = cert  # a chunk of this very question, finished before, and every claim holds
    todo = [k for k in range(len(spans)) if k not in done]
    if folder is not None:
        Path(folder).mkdir(parents=True, exist_ok=True)

    def record(index, cert):
        if folder is not None:
            cert.save(path_of(spans[todo[index]]))

    got = run_tasks(
        _chunk_task,
        [spans[k] for k in todo],
        workers=workers if spread else 1,
        scheduler=scheduler,
        shared=(K, qs, seed, progress and not spread),  # one chunk in this process: the residue's bar
        on_result=record,
        progress=progress and spread,
        label="vocabulary chunks",
        unit="chunk",
    )
    done.update(zip(todo, got))
    return merge_vocab(done[k] for k in range(len(spans)))
