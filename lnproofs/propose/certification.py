"""Certify, for every key, whether some query makes it win the attention argmax.

:func:`certify` is the public entry point: it validates the keys, dispatches on the
query set (free queries here, other kinds to :mod:`lnproofs.propose.querysets`), writes results
as they are proved to a sidecar file (``CERT.json.partial.jsonl``) so an interrupted run
resumes, and returns an immutable :class:`~lnproofs.certificates.Certificate`.  Every
status other than ``undecided`` has passed :mod:`lnproofs.kernel.checker`.  Exact duplicate
keys are handled here; the search over distinct keys is :mod:`lnproofs.propose.engine`.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from pathlib import Path

import numpy as np

from ..certificates.certificate import Certificate
from ..certificates.writers import result_to_json
from ..certificates.writes import open_append, output_file, remove_quietly
from ..kernel import (
    Combination,
    ExactKeys,
    FreeQueries,
    InputError,
    KeyResult,
    OptionError,
    as_real_array,
)
from .progress import KeyProgress
from .twins import row_classes

__all__ = [
    "certify",
    "certify_results",
    "check_min_margin",
    "has_unselectable",
    "partial_path",
    "key_chunks",
    "PARALLEL_MIN_KEYS",
    "CHUNK_KEYS",
]

#: key sets of at least this many keys are certified in chunks of :data:`CHUNK_KEYS` keys,
#: one task per chunk (in parallel on Dask workers); smaller ones in this process, whole
PARALLEL_MIN_KEYS = 20000
#: keys per task; a chunk is proposed and exactly checked on the same worker
CHUNK_KEYS = 10000


# ---------------------------------------------------------------- free queries
def certify_results(
    keys,
    *,
    progress: bool = False,
    indices=None,
    seed: int = 0,
    stop_at_first: bool = False,
    known=None,
    on_results=None,
    finding: dict | None = None,
    improve_below: float = 0.0,
    margins: bool = True,
) -> list[KeyResult]:
    """One :class:`KeyResult` per key under free queries, in index order.

    ``indices``: keys to do (default all; the others come back ``undecided``);
    ``known``: results already proved (from a resumed run), kept as they are;
    ``stop_at_first``: stop once some key is certified not selectable;
    ``on_results``: called with each batch of new results (for sidecar files);
    ``finding``: :func:`lnproofs.certificates.findings.rank_finding` of the keys (searched in
    stretched coordinates when they lie on a subspace up to rounding); ``improve_below``:
    look again for a larger margin where a witness's margin is below this; ``margins``: state
    each witness's margin (False: statuses and their evidence only, for callers that read no margin).
    Each call works on the keys of ``indices`` alone, so chunks of keys can be
    certified separately (with the same ``finding``) and their results joined.
    """
    K = as_real_array(keys, name="keys", ndim=2)
    n, d = K.shape
    known = {r.index: r for r in (known or [])}
    wanted = set(range(n)) if indices is None else {int(i) for i in indices}
    todo_orig = [i for i in sorted(wanted) if i not in known]
    prog = KeyProgress(len(todo_orig), progress)
    results: dict[int, KeyResult] = dict(known)

    first, inverse, counts = row_classes(K)
    same = len(first) == n  # no twins: the distinct keys are the keys themselves, in their order
    if same:
        first = inverse = np.arange(n)
    reps = first  # original index of each distinct key
    members: dict[int, list[int]] = {}
    for orig, u in enumerate(inverse.tolist()):
        members.setdefault(u, []).append(orig)

    def lift(res: KeyResult) -> list[KeyResult]:
        u = res.index
        if same:  # its own index already: nothing to change
            return [res] if u in wanted and u not in known else []
        comb = (
            None
            if res.combination is None
            else Combination(tuple(int(reps[j]) for j in res.combination.indices), res.combination.weights)
        )
        lifted = []
        for orig in members[u]:
            if orig not in wanted or orig in known:
                continue
            twins = [o for o in members[u] if o != orig]
            if not twins and orig == u and comb == res.combination and not res.extras:
                lifted.append(res)  # its own index already: nothing to change
            elif not twins or res.status == "undecided":
                lifted.append(KeyResult(orig, res.status, res.witness, comb, res.verified, res.margin, res.reason))
            elif res.status == "selectable":
                lifted.append(KeyResult(orig, "tie-only", res.witness, Combination((twins[0],), (1,)), "exact"))
            else:
                lifted.append(KeyResult(orig, res.status, res.witness, comb, res.verified, res.margin, res.reason))
        return lifted

    def emit(batch):
        new = [r for res in batch for r in lift(res)]
        for r in new:
            results[r.index] = r
        prog.add(len(new))
        if on_results is not None and new:
            on_results(new)

    if len(reps) == 1 and n > 1:  # every key is the same point
        emit_all = [KeyResult(i, "unselectable", None, Combination(((i + 1) % n,), (1,)), "exact") for i in todo_orig]
        for r in emit_all:
            results[r.index] = r
        prog.add(len(emit_all))
        if on_results is not None and emit_all:
            on_results(emit_all)
    elif todo_orig:
        todo_unique = np.unique(inverse[todo_orig])
        from .engine import unique_results

        unique_results(
            K[reps],
            todo_unique,
            seed=seed,
            progress=prog,
            stop_at_first=stop_at_first,
            emit=emit,
            finding=finding,
            improve_below=improve_below,
            margins=margins,
        )
    _recheck_twins(K, results, [i for i in todo_orig if counts[inverse[i]] > 1])
    reason = "stopped after the first key certified not selectable" if stop_at_first else "not requested"
    return [results.get(i) or KeyResult(i, "undecided", reason=reason) for i in range(n)]


def _recheck_twins(K, results: dict, indices: list) -> None:
    """Results of duplicated keys are derived from their distinct key's verified result;
    put them through the checker too, so that every claim returned has passed it."""
    claimed = [results[i] for i in indices if i in results and results[i].status != "undecided"]
    if not claimed:
        return
    for r, verdict in zip(claimed, FreeQueries().check(ExactKeys(K), claimed)):
        if not verdict.ok:
            results[r.index] = KeyResult(
                r.index,
                "undecided",
                reason=f"the certificate derived for a duplicated key failed the checker: {verdict.message}",
            )


def has_unselectable(keys, *, seed: int = 0) -> bool | None:
    """True if some key is certified not selectable (unselectable or tie-only), False if
    every key is certified selectable, None if neither could be proved.

    At most d + 1 keys that are affinely independent are the vertices of their simplex
    (theorem ``attention.simplex_vertices``): the kernel accepts ``selectable`` without a
    witness once it has computed their exact affine rank, so no search runs for them."""
    K = as_real_array(keys, name="keys", ndim=2)
    n, d = K.shape
    if 1 < n <= d + 1:
        claims = [KeyResult(i, "selectable", None, None, "exact") for i in range(n)]
        if all(verdict.ok for verdict in FreeQueries().check(ExactKeys(K), claims)):
            return False
    results = certify_results(K, stop_at_first=True, seed=seed, margins=False)
    statuses = {r.status for r in results}
    if statuses & {"unselectable", "tie-only"}:
        return True
    if statuses == {"selectable"}:
        return False
    return None


# ------------------------------------------------------------------- sidecar and API
def partial_path(out) -> Path:
    """The sidecar file that collects results as they are proved."""
    out = Path(out)
    return out.with_name(out.name + ".partial.jsonl")


def _fingerprint(K: np.ndarray, query_set: dict) -> str:
    digest = hashlib.sha256(np.ascontiguousarray(K, dtype=np.float64).tobytes())
    digest.update(json.dumps(query_set, sort_keys=True).encode())
    return digest.hexdigest()


def _read_partial(path: Path, fingerprint: str, n: int) -> list[KeyResult]:
    """The results an interrupted run wrote for these keys and this query set (a proposal: the
    kernel checks them again before they are kept), read as a regular file within the file limit."""
    from ..io.bounded import DEFAULT_READ_LIMITS
    from ..io.files import read_input

    limit = DEFAULT_READ_LIMITS
    lines = read_input(path, f"{path}", limit.max_file_bytes, limit.file_note).decode("utf-8", "replace").splitlines()
    if not lines:
        return []
    try:
        head = json.loads(lines[0])
    except ValueError:
        head = {}
    if head.get("fingerprint") != fingerprint:
        raise OptionError(f"{path} was written for other keys or another query set; delete it or run without --resume")
    found = {}
    for line in lines[1:]:
        try:
            result = KeyResult.from_json(json.loads(line))
        except Exception:
            break  # a line cut short by an interruption
        if 0 <= result.index < n:
            found[result.index] = result
    return list(found.values())


def _other_kind(module, K, qs, known, on_results, *, progress, seed, chunked, chunk: int = 1000):
    """Results from a query-set module, in chunks of keys: written as they come for long
    runs (``chunked``), and counted on one progress bar whatever the query set."""
    n = len(K)
    done = {r.index: r for r in known}
    todo = [i for i in range(n) if i not in done]
    bar = KeyProgress(len(todo), bool(progress), label=f"certify ({getattr(qs, 'kind', 'query set')})")
    if not chunked:
        chunk = max(1, -(-len(todo) // 20)) if progress else max(1, len(todo))
    for s in range(0, len(todo), chunk):
        part = todo[s : s + chunk]
        got = module.certify(K, qs, progress=False, seed=seed, indices=part)
        by_index = {r.index: r for r in got}
        new = [by_index[i] for i in part]
        for r in new:
            done[r.index] = r
        if chunked:
            on_results(new)
        bar.add(len(part))
    return [done[i] for i in range(n)]


def key_chunks(n: int, known=(), size: int | None = None) -> list[list[int]]:
    """The keys still to do, in chunks whose boundaries depend only on ``n`` and ``size``
    (never on the number of workers), so every run of the same keys splits them alike."""
    size = CHUNK_KEYS if size is None else size
    known = set(known)
    chunks = []
    for start in range(0, n, size):
        part = [i for i in range(start, min(n, start + size)) if i not in known]
        if part:
            chunks.append(part)
    return chunks


def _certify_chunk(indices, shared) -> list[KeyResult]:
    """One task: propose and exactly check the keys ``indices`` of ``shared["keys"]``."""
    K, qs, seed = shared["keys"], shared["query_set"], shared["seed"]
    if qs is None:
        results = certify_results(
            K, indices=indices, seed=seed, finding=shared["finding"], improve_below=shared["improve_below"]
        )
    else:
        from .querysets import proposer_for

        results = proposer_for(qs).certify(K, qs, progress=False, seed=seed, indices=indices)
    by_index = {r.index: r for r in results}
    return [by_index[i] for i in indices]


def _chunked(
    K, qs, known, on_results, *, progress, seed, context, finding=None, improve_below: float = 0.0
) -> list[KeyResult]:
    from ..execution import run_tasks

    n = len(K)
    done = {r.index: r for r in known}
    chunks = key_chunks(n, done)

    def record(_index, batch):
        for r in batch:
            done[r.index] = r
        on_results(batch)

    shared = {"keys": K, "query_set": qs, "seed": seed, "finding": finding, "improve_below": improve_below}
    run_tasks(
        _certify_chunk,
        chunks,
        context=context,
        shared=shared,
        on_result=record,
        progress=progress,
        label="certify",
        unit="chunk",
    )
    return [done[i] for i in range(n)]


def check_min_margin(value) -> float | None:
    """``value`` as a float >= 0 (None stays None), else an OptionError naming it."""
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if isinstance(value, bool) or not number >= 0 or number == float("inf"):
        raise OptionError(
            f"min margin (--min-margin) {value!r} is not allowed; give a finite number >= 0 "
            "(the smallest score gap, for a unit query, that counts)"
        )
    return number


def certify(
    keys,
    query_set=None,
    *,
    progress: bool | None = None,
    out=None,
    resume: bool = False,
    stop_at_first: bool = False,
    seed: int = 0,
    min_margin: float | None = None,
    workers=None,
    scheduler=None,
) -> Certificate:
    """Certify every key: a :class:`~lnproofs.certificates.Certificate` whose claims have
    all passed the exact checker.

    ``query_set``: None (every query in R^d) or a query-set object / JSON of
    :mod:`lnproofs.propose.querysets`.  ``out``: write the certificate there; results are also
    appended to ``partial_path(out)`` as they are proved, and ``resume=True`` picks up
    from that file.  ``progress``: a progress bar on stderr (default: for N >= 2000 on a
    terminal).  ``stop_at_first``: stop once some key is certified not selectable.

    Key sets of at least :data:`PARALLEL_MIN_KEYS` keys are split into chunks of
    :data:`CHUNK_KEYS` keys, each proposed and exactly checked by one task of
    :func:`lnproofs.execution.run_tasks`: ``workers`` (default: a local Dask cluster
    sized to the machine; 1: this process) or ``scheduler`` (an existing cluster) say
    where.  The chunks do not depend on the number of workers, so the certificate is
    the same with 1, 2 or 4.  Smaller key sets, and ``stop_at_first``, run in this
    process whole (a ``scheduler`` is still reached and checked).
    ``min_margin``: count apart the selectable keys whose witness margin (the score gap
    for a unit query) is below it; for free queries the certificate also carries the
    rank finding (:func:`lnproofs.certificates.findings.rank_finding`).
    """
    from ..execution import open_client, resolve_workers
    from ..io.exact import exact_float64
    from .querysets import proposer_for, query_set_from_json, query_set_to_json

    K = as_real_array(exact_float64(keys, "keys"), name="keys", ndim=2)
    n, d = K.shape
    min_margin = check_min_margin(min_margin)
    qs_json = query_set_to_json(query_set)
    if progress is None:
        progress = n >= 2000 and sys.stderr.isatty()
    if resume and out is None:
        raise OptionError("resume=True needs out=PATH (the sidecar file lives next to it)")
    parsed = query_set_from_json(qs_json)
    module = proposer_for(parsed)
    if min_margin is not None and type(parsed) is not FreeQueries:
        raise OptionError(
            f"min margin (--min-margin) is measured for free queries only; drop it for {qs_json['kind']} queries"
        )
    qs = None if type(parsed) is FreeQueries else (parsed if isinstance(query_set, dict) else query_set)
    chunked = n >= PARALLEL_MIN_KEYS and not stop_at_first
    if not chunked:
        resolve_workers(workers, scheduler)  # bad options are refused whatever the size
        workers = 1 if scheduler is None else None
    with open_client(workers, scheduler, worthwhile=chunked) as context:  # before any file is touched
        return _certify(
            K,
            qs,
            qs_json,
            module,
            out=out,
            resume=resume,
            progress=progress,
            seed=seed,
            stop_at_first=stop_at_first,
            min_margin=min_margin,
            context=context if chunked else None,
        )


def _out_of_range(K: np.ndarray, err: Exception) -> InputError:
    """One line for keys whose floats defeat the floating-point search (an overflow or a NaN in it)."""
    size = np.abs(K[K != 0])
    span = (
        f"from about 2^{math.frexp(float(size.min()))[1]} to 2^{math.frexp(float(size.max()))[1]}"
        if size.size
        else "all zero"
    )
    return InputError(
        f"the floating-point search failed on these keys ({type(err).__name__}: {str(err)[:80]}); "
        f"their non-zero entries range {span}: scale them by a power of two (selectability does "
        "not change) so that the entries and their differences stay within the float range"
    )


def _certify(K, qs, qs_json, module, *, out, resume, progress, seed, stop_at_first, min_margin, context) -> Certificate:
    n, d = K.shape
    finding = None
    if qs is None:
        from ..certificates.findings import rank_finding

        finding = rank_finding(K)
    known, writer, created = [], None, False
    if out is not None:
        side = partial_path(out)
        output_file(out)
        output_file(side, None)
        fingerprint = _fingerprint(K, qs_json)
        if resume and side.is_file():
            known = _read_partial(side, fingerprint, n)
            writer = open_append(side)
        else:
            if side.is_file() and side.stat().st_size:
                raise OptionError(
                    f"{side} holds the results of an interrupted run: add --resume to continue "
                    "it, or delete it to start over"
                )
            writer, created = open_append(side, truncate=True), True
            writer.write(json.dumps({"fingerprint": fingerprint, "n_keys": n, "dim": d}) + "\n")
            writer.flush()
    if known:  # results read back are re-checked
        verdicts = (FreeQueries() if qs is None else qs).check(ExactKeys(K), known)
        known = [r for r, v in zip(known, verdicts) if v.ok and r.status != "undecided"]

    def on_results(batch):
        if writer is not None:
            writer.write("".join(json.dumps(result_to_json(r)) + "\n" for r in batch))
            writer.flush()

    try:
        if context is not None:
            results = _chunked(
                K,
                qs,
                known,
                on_results,
                progress=progress,
                seed=seed,
                context=context,
                finding=finding,
                improve_below=min_margin or 0.0,
            )
        elif qs is None:
            results = certify_results(
                K,
                progress=progress,
                seed=seed,
                stop_at_first=stop_at_first,
                known=known,
                on_results=on_results,
                finding=finding,
                improve_below=min_margin or 0.0,
            )
        else:
            results = _other_kind(
                module, K, qs, known, on_results, progress=progress, seed=seed, chunked=out is not None and n > 2000
            )
    except Exception as err:
        if created:  # a failed run leaves nothing; an interrupted one keeps its results
            writer.close()
            remove_quietly(side)
        if isinstance(err, (ArithmeticError, ValueError, np.linalg.LinAlgError)) and not isinstance(err, InputError):
            raise _out_of_range(K, err) from err
        raise
    finally:
        if writer is not None:
            writer.close()
    cert = Certificate(n, d, qs_json, tuple(results), rank=finding, min_margin=min_margin)
    if out is not None:
        cert.save(out)
        remove_quietly(partial_path(out))
    return cert
