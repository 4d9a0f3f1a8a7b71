"""Certify a whole vocabulary: every token's own witness to the kernel, the existing engine on the residue.

For free queries (and the box) without a bias, every token's own key is proposed as its witness
``q = t_i k_i`` (theorem ``vocab.self_witness``; ``t_i`` the box's power of two) and the kernel decides
them all at once (:func:`lnproofs.kernel.check_vocab`: its self filter, one symmetric Gram computation
in single precision for float32 keys, then exact integers for the few it leaves open); zero rows and
equal rows, whose own witness never wins (:func:`tied_rows`), go to the engine instead.  With a bias,
``q = t_i k_i`` with ``t_i`` a power of two large enough (or the largest that fits the box) is proposed
from one pass of products, and checked the same way.  For free queries and the box without a bias, a
token whose own key loses is nudged next (:func:`nudged_witnesses`: a few float32 steps from
``q = k_i`` past its best rivals).  What is left (the residue) goes to the query set's own proposer
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
    query_set_from_json,
)
from .homogeneous import homogeneous_results, is_homogeneous, relaxed_duals
from .vocab_norm import norm_nudged_witnesses, norm_self_scales

__all__ = [
    "certify_vocab_keys",
    "certify_vocab_chunks",
    "biased_self_scales",
    "box_scales",
    "tied_rows",
    "nudged_witnesses",
    "CHUNK_TOKENS",
]

#: tokens per task when a vocabulary is spread over workers (each token against every key)
CHUNK_TOKENS = 10000


def tied_rows(K: np.ndarray) -> np.ndarray:
    """Rows that are zero or equal to another row (0.0 and -0.0 alike): their own witness never wins
    strictly (equal rows tie for every query, theorem ``vocab.duplicate_rows``; at ``q = 0`` every key
    scores 0), so they are not proposed to the kernel's self filter, which could only leave them to
    exact integers over every key; the engine settles them.  Rows are grouped by the hash of their
    bytes, without a copy of the keys, and compared within a group."""
    tied, groups = ~K.any(axis=1), {}
    for i in np.flatnonzero(~tied).tolist():
        groups.setdefault(hash((K[i] + 0.0).tobytes()), []).append(i)
    for group in (g for g in groups.values() if len(g) > 1):
        for a, i in enumerate(group):
            for j in group[a + 1 :]:
                if np.array_equal(K[i], K[j]):
                    tied[i] = tied[j] = True
    return tied


def box_scales(K: np.ndarray, bound) -> np.ndarray:
    """The largest power of two ``t_i`` with ``t_i max_l |k_il| <= bound`` (1 without a bound or for a zero key)."""
    if bound is None:
        return np.ones(len(K))
    top = np.maximum(K.max(axis=1), -K.min(axis=1))  # max |k_il|, without a copy of the keys
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


def nudged_witnesses(K: np.ndarray, tokens, bound=None, steps: int = 300, patience: int = 16) -> dict:
    """Float witnesses for tokens whose own key does not win (a proposal: the kernel decides).
    From ``q = k_i``, each step moves ``q`` along ``k_i - k_j``, ``j`` the best rival at ``q``, just
    past the point where ``k_i`` beats ``k_j`` (in float32, with a margin well above float32's
    rounding of the scores); a witness is scaled by a power of two into the box ``|q_l| <= bound``
    (exactly: the argmax does not change).  A trained model's few such tokens take a step or five
    each, where the engine's LPs over every key take seconds.  A token whose gap to its best rival,
    relative to the scores' size, has not grown for ``patience`` steps is left to the engine (a key
    inside the hull never wins, and would take every step)."""
    if not len(tokens):
        return {}
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


def _float_keys(keys) -> np.ndarray:
    """``keys`` as a finite float64 matrix: the array itself when it is one already (a vocabulary's
    keys are held once, by its reader, not once more per call), else :func:`as_real_array`'s copy."""
    if isinstance(keys, np.ndarray) and keys.dtype == np.float64 and keys.ndim == 2 and keys.size:
        if all(np.isfinite(keys[a : a + 4096]).all() for a in range(0, len(keys), 4096)):
            return keys
    return as_real_array(keys, name="keys", ndim=2)


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


def _settle(K, qs, todo, *, lifted, plain, seed, progress) -> tuple[list, dict]:
    """``(results, nudged)`` for tokens ``todo`` whose own witness was not accepted: the norm set's
    duals (never output, ball or not), a nudge (float witnesses), the query set's engine for the rest."""
    homogeneous = lifted and is_homogeneous(qs)  # no offsets: the subspace question (theorem vocab.no_offset)
    found = (
        homogeneous_results(K, qs, todo, seed=seed)
        if homogeneous
        else relaxed_duals(K, qs, todo, seed=seed)
        if lifted
        else []
    )
    settled = {r.index for r in found}
    todo = [i for i in todo if i not in settled]
    nudged = (
        nudged_witnesses(K, todo, getattr(qs, "bound", None))
        if type(qs) is FreeQueries or (isinstance(qs, BoxQuerySet) and plain)
        else norm_nudged_witnesses(K, qs, todo)
        if lifted and not homogeneous
        else {}
    )
    found += _residue(K, qs, [i for i in todo if i not in nudged], seed=seed, progress=progress)
    return found + [KeyResult(i, "selectable", tuple(q.tolist())) for i, q in nudged.items()], nudged


def certify_vocab_keys(
    keys,
    query_set=None,
    *,
    seed: int = 0,
    progress: bool = False,
    residue_limit: int | None = None,
    indices=None,
    block: int | None = None,
    matmul=None,
) -> VocabCertificate:
    """A :class:`~lnproofs.certificates.vocab.VocabCertificate` for ``keys`` under ``query_set``
    (None: free queries; a ``box`` set with or without a bias; or any other kind, whose tokens all
    go to its proposer).  ``residue_limit``: at most this many residue tokens are searched (the
    others stay ``undecided``).  ``indices``: certify only these tokens, each against every key
    (a chunk of the vocabulary; the others stay ``undecided``).  The tokens left to the engine go to it
    in blocks ``[a, a + block)`` (default :data:`CHUNK_TOKENS`), one call each: what it learns within a
    block depends on that block alone, so a run in chunks that are unions of blocks makes the same
    certificate as one run.  ``matmul``: the float filter's product (:class:`lnproofs.kernel.ExactKeys`;
    None: numpy's); the certificate does not depend on it."""
    K = _float_keys(keys)
    ek = ExactKeys(K, matmul)  # built once: both checks below read it
    qs = (
        FreeQueries()
        if query_set is None
        else (query_set_from_json(query_set) if isinstance(query_set, dict) else query_set)
    )
    n, d = K.shape
    evidence, scale = np.full(n, NONE, dtype=np.int8), np.ones(n)
    bias = np.asarray(qs.bias, dtype=np.float64) if getattr(qs, "bias", None) is not None else None
    proposed, rows = np.zeros(n, bool), None if indices is None else np.unique(np.asarray(indices, dtype=np.int64))
    every = rows is not None and len(rows) == n and rows[0] == 0 and rows[-1] == n - 1  # every token, once
    rows = None if every else rows  # the symmetric road of the norm screen and of the kernel's self filter
    wanted = np.ones(n, bool) if rows is None else np.isin(np.arange(n), rows)
    if type(qs) is FreeQueries or (type(qs) is BoxQuerySet and bias is None):  # every own witness, to the kernel
        proposed, scale = wanted & ~tied_rows(K), box_scales(K, getattr(qs, "bound", None))
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
    block = CHUNK_TOKENS if block is None else block
    found, nudged = [], {}
    for a in range(0, n, block):  # the engine learns as it goes: one call per block of the vocabulary
        part = [i for i in todo if a <= i < a + block]
        if part:
            got, pushed = _settle(K, qs, part, lifted=lifted, plain=bias is None, seed=seed, progress=progress)
            found += got
            nudged.update(pushed)
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
    results = tuple(sorted((r for r in results if evidence[r.index] == RESULT), key=lambda r: r.index))
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
    keys, query_set, seed, block, matmul, progress = shared
    if isinstance(keys, tuple):  # the keys' file on this machine, its SHA-256 and its size: mapped, not copied
        from ..io.bounded import ReadLimits, read_npy

        keys = read_npy(keys[0], ReadLimits(max(keys[2], 1 << 30)), sha256=keys[1], what="the keys", mapped=True)
    return certify_vocab_keys(
        keys, query_set, seed=seed, indices=np.arange(*span), block=block, matmul=matmul, progress=progress
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
    chunk: int | None = None,
    matmul=None,
) -> VocabCertificate:
    """:func:`certify_vocab_keys` for every token, in chunks of ``chunk`` tokens (default :data:`CHUNK_TOKENS`;
    each against every key) on ``workers`` / ``scheduler`` (:func:`lnproofs.execution.run_tasks`; by default,
    or one worker: in this process, the whole vocabulary as one chunk, its residue in blocks of ``chunk``),
    merged (:func:`lnproofs.certificates.vocab.merge_vocab`).
    ``folder``: each chunk's certificate is written there as it finishes and read back instead of
    being made again, so an interrupted run resumes; with local workers (``workers``, no ``scheduler``)
    the float64 keys are written there once and each worker maps that file, so the workers of this
    machine share one copy of the keys (its SHA-256 checked by each).  The chunks do not depend on the
    workers, nor on ``matmul`` (the kernel's float-filter product, :class:`lnproofs.kernel.ExactKeys`)."""
    from pathlib import Path

    from ..execution import resolve_workers, run_tasks

    K, chunk = _float_keys(keys), CHUNK_TOKENS if chunk is None else chunk
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
    shared_keys = K
    if spread and scheduler is None and folder is not None and todo:  # one copy of the keys for this machine
        from ..certificates.keyfile import sha256_of
        from ..certificates.writes import write_array

        path = write_array(Path(folder) / "keys-float64.npy", K)
        shared_keys = (str(path), sha256_of(path), K.nbytes)

    def record(index, cert):
        if folder is not None:
            cert.save(path_of(spans[todo[index]]))

    got = run_tasks(
        _chunk_task,
        [spans[k] for k in todo],
        workers=workers if spread else 1,
        scheduler=scheduler,
        shared=(shared_keys, qs, seed, chunk, matmul, progress and not spread),  # one chunk here: the residue's bar
        on_result=record,
        progress=progress and spread,
        label="vocabulary chunks",
        unit="chunk",
    )
    done.update(zip(todo, got))
    return merge_vocab(done[k] for k in range(len(spans)))
