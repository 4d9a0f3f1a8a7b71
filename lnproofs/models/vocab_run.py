"""``certify-vocab``: which tokens a model can ever output, under three query sets.

* ``free``: every final hidden state (scores ``k_j . q + b_j``);
* ``box``: ``|q_l| <= B`` (Grivas et al.'s formulation, for comparison);
* ``realisable``: what the final norm can produce, ``q = g o u + beta`` with ``u`` in the
  norm's ball (theorem ``vocab.final_norm``; eps included as the closure).  An RMSNorm without a
  bias whose gain has no zero realises every direction (theorems ``coverage.every_direction``,
  ``coverage.argmax_direction``): its answers are the free ones, and the certificate is the free
  evidence plus the kernel-checked coverage claim.  Otherwise the keys are lifted to
  ``(k_j, b_j)`` when there is a bias, the set is the norm's own (``W_q = [I; 0]``,
  ``b_q = e_{d+1}``, theorem ``vocab.bias_lift``), and each token's own direction
  ``u_i ~ P (g o k_i)``, as long as the ball allows, is its first witness: one screen, one kernel
  check of every such witness (:func:`lnproofs.kernel.check_vocab`, its float filter first),
  then a nudge and the norm's search for the residue.

Every set runs in this process by default; ``--workers N`` (N > 1) or ``--scheduler`` spread it in
chunks of 10,000 tokens (each against every key) over Dask workers, each chunk's certificate
written to ``OUT/<set>.chunks`` as it finishes (``resume`` keeps them) and merged at the end.

Outputs in OUT: ``keys.npy`` (the unembedding, float32 when exact), one certificate per query set
(``free.json``, ``box.json``, ``realisable.json``: vocabulary certificates with ``.npy`` arrays beside them),
``table.parquet`` and ``table.csv`` (id, token, status per set, margin), ``summary.md`` and
``summary.json``.  A finished query set is not redone with ``resume``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from ..certificates.vocab import VocabCertificate, load_vocab
from ..certificates.writers import query_set_to_json
from ..certificates.writes import folder_entry, output_folder, replacing, run_lock, write_array, write_text
from ..kernel import BoxQuerySet, InputError, OptionError
from .vocab import read_output_layer, token_strings

__all__ = ["QUERY_SETS", "certify_vocab", "realisable_query_set", "margins"]

QUERY_SETS = ("free", "box", "realisable")


def realisable_query_set(layer, keys):
    """``(keys, query_set)`` of the realisable question: the keys lifted with the bias when there is one."""
    from ..kernel import LayerNormQuerySet, RMSNormQuerySet

    d = keys.shape[1]
    W, b_q = np.eye(d), np.zeros(d)
    if layer.bias is not None:  # (q, 1) . (k_j, b_j) = q . k_j + b_j
        keys = np.hstack([keys, layer.bias[:, None]])
        W, b_q = np.vstack([W, np.zeros((1, d))]), np.r_[b_q, 1.0]
    beta = np.zeros(d) if layer.beta is None else layer.beta
    if layer.norm == "layernorm":
        return keys, LayerNormQuerySet(tuple(layer.gain), tuple(beta), W, tuple(b_q), layer.eps)
    return keys, RMSNormQuerySet(
        tuple(layer.gain), W, tuple(b_q), layer.eps, beta=None if layer.beta is None else tuple(beta)
    )


def margins(keys: np.ndarray, block: int = 2048) -> np.ndarray:
    """``(k_i . k_i - max_j k_i . k_j) / ||k_i||``: the self witness's margin for a unit query (floats,
    for information; negative where the own key does not win).  One symmetric blocked Gram computation
    (each pair of blocks once), in single precision, each block rounded to float32 as it is needed."""
    n, top = len(keys), np.full(len(keys), -np.inf)
    for a in range(0, n, block):
        A = keys[a : a + block].astype(np.float32)  # a block at a time: no float32 copy of all the keys
        for b in range(a, n, block):
            S = A @ keys[b : b + block].astype(np.float32).T
            if a == b:
                np.fill_diagonal(S, -np.inf)
            np.maximum(top[a : a + block], S.max(axis=1), out=top[a : a + block])
            np.maximum(top[b : b + block], S.max(axis=0), out=top[b : b + block])
    norms = np.sqrt(np.einsum("ij,ij->i", keys, keys))  # no copy of the keys
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norms > 0, (norms**2 - top) / np.where(norms > 0, norms, 1), np.nan)


def _coverage(layer, keys):
    """The RMSNorm realisable set's coverage claim (checked by the kernel), or None."""
    if layer.norm != "rmsnorm" or layer.bias is not None or layer.beta is not None:
        return None, None
    from ..kernel import check_coverage
    from ..propose.querysets.coverage import propose_coverage

    _, qs = realisable_query_set(layer, keys)
    claim = propose_coverage(qs)
    if claim is None or not check_coverage(qs, claim.to_json(), keys.shape[1])[0]:
        return None, None
    return qs, claim


def _save_keys(out: Path, keys: np.ndarray, name: str) -> Path:
    blocks = range(0, len(keys), 8192)  # a block of rows at a time: no float32 copy of all the keys
    exact = all(np.array_equal(keys[a : a + 8192].astype(np.float32), keys[a : a + 8192]) for a in blocks)
    return write_array(out / name, keys, dtype=np.float32 if exact else None)


def _vocab_set(name, out, keys, qs, keys_path, *, resume, seed, progress, workers, scheduler, matmul=None):
    """Certify one query set (:func:`lnproofs.propose.vocab.certify_vocab_chunks`: in chunks on workers,
    each chunk written as it finishes under ``OUT/<name>.chunks`` and kept for ``resume``); write
    ``OUT/<name>.json``."""
    import shutil

    from ..propose.vocab import certify_vocab_chunks

    chunks = folder_entry(out, f"{name}.chunks", folder=True)  # a link out of the output is refused
    if not resume:
        shutil.rmtree(chunks, ignore_errors=True)
    cert = certify_vocab_chunks(
        keys, qs, workers=workers, scheduler=scheduler, seed=seed, progress=progress, folder=chunks, matmul=matmul
    )
    cert.save(out / f"{name}.json", keys_path)
    shutil.rmtree(chunks, ignore_errors=True)
    return cert.statuses()


def _realisable(out, layer, K, free_statuses, *, resume, seed, progress, workers, scheduler, matmul=None):
    from ..certificates.limits import read_json_file

    qs, claim = _coverage(layer, K)
    if qs is not None and free_statuses is not None:  # every direction: the free answers
        free = load_vocab(out / "free.json", read_json_file(out / "free.json"))
        cert = VocabCertificate(
            free.n_keys,
            free.dim,
            query_set_to_json(qs),
            free.evidence,
            free.scale,
            free.queries,
            free.rows,
            None,
            free.results,
            coverage=claim.to_json(),
        )
        cert.save(out / "realisable.json", out / "keys.npy")
        return cert.statuses(), "coverage: every direction is realised, so the free answers hold"
    keys, qs = realisable_query_set(layer, K)
    keys_path = _save_keys(out, keys, "keys_lifted.npy") if keys.shape[1] != K.shape[1] else out / "keys.npy"
    statuses = _vocab_set(
        "realisable",
        out,
        keys,
        qs,
        keys_path,
        resume=resume,
        seed=seed,
        progress=progress,
        workers=workers,
        scheduler=scheduler,
        matmul=matmul,
    )
    return statuses, (
        f"{qs.kind} query set: each token's own direction in the norm's ball, checked by one "
        "product; the residue by a nudge and the norm's search"
    )


def _plain_set(name: str, layer, bound):
    """The query set of ``free`` or ``box`` for this output layer (None: free queries, no output bias)."""
    bias = None if layer.bias is None else tuple(layer.bias.tolist())
    return None if name == "free" and bias is None else BoxQuerySet(None if name == "free" else bound, bias)


def _question(name: str, layer, K, bound):
    """``(keys, query set JSON without the bias, bias or None)`` the query set ``name`` is asked about,
    as its certificate states it."""
    if name == "realisable":
        keys, qs = realisable_query_set(layer, K)
        coverage, _ = _coverage(layer, K)
        return (K if coverage is not None else keys), query_set_to_json(qs), None
    qs = query_set_to_json(_plain_set(name, layer, bound))
    bias = None if layer.bias is None else np.asarray(layer.bias, dtype=np.float64)
    return K, {k: v for k, v in qs.items() if k != "bias"}, bias


def _same_keys(out: Path, K: np.ndarray) -> None:
    """Refuse to resume in a folder whose ``keys.npy`` holds other keys (another model's run)."""
    from ..io.bounded import read_npy
    from ..io.files import input_kind

    path = out / "keys.npy"
    if not path.exists() and not path.is_symlink():
        return
    if input_kind(path.lstat().st_mode) is None and np.array_equal(read_npy(path).astype(np.float64), K):
        return
    raise OptionError(
        f"--resume: {out} holds the run of other keys ({path} is not this model's output layer); "
        "resume a run of the same model, or drop --resume (or choose another --out) to start over"
    )


def _finished(out: Path, name: str, keys: np.ndarray, question: dict, bias):
    """The statuses of the finished query set ``name`` in ``out``, re-checked, or None to redo it.

    A certificate read back is a proposal: it must be a vocabulary certificate (else one line,
    exit 2) naming the keys file of this run with its SHA-256 and asking this query set (else the
    set is done again: another ``--box``, say), and the kernel must hold every claim against the
    keys (else one line: the file was changed, or planted)."""
    from ..certificates.limits import read_json_file
    from ..certificates.vocab import SCHEMA, vocab_keys_path

    path = out / f"{name}.json"
    if not path.exists() and not path.is_symlink():
        return None
    data = read_json_file(path)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise OptionError(
            f"--resume: {path} is not a vocabulary certificate ({SCHEMA}); delete it, or drop --resume to start over"
        )
    cert = load_vocab(path, data)
    same = cert.query_set == question and (
        (cert.bias is None and bias is None)
        or (cert.bias is not None and bias is not None and np.array_equal(cert.bias, bias))
    )
    try:
        same = same and (cert.n_keys, cert.dim) == keys.shape and bool(cert.keys_file and vocab_keys_path(path, cert))
    except InputError:  # it names another keys file, or one whose SHA-256 is not this run's
        same = False
    if not same:
        return None
    report = cert.check(keys)
    if not report.ok:
        first = report.failures[0].message if report.failures else ""
        raise OptionError(
            f"--resume: {path} does not hold for these keys ({len(report.failures)} claims refuted; the first: "
            f"{first[:120]}); delete it, or drop --resume to start over"
        )
    return cert.statuses()


def certify_vocab(
    model,
    out,
    *,
    sets=QUERY_SETS,
    bound: float = 100.0,
    resume: bool = False,
    seed: int = 0,
    progress: bool = False,
    workers=None,
    scheduler=None,
    matmul=None,
) -> dict:
    """Certify every token of ``model``'s vocabulary under ``sets``; write OUT; return the summary.
    With ``resume``, what OUT holds is a proposal: a finished query set is kept only when it is
    about these keys and this query set and the kernel holds every claim (:func:`_finished`).
    ``matmul``: the float filter's product (:class:`lnproofs.kernel.ExactKeys`); the certificates do not
    depend on it."""
    unknown = [s for s in sets if s not in QUERY_SETS]
    if unknown or not sets:
        raise OptionError(
            f"query set {unknown[0] if unknown else '(none)'!r} is not known; choose from {', '.join(QUERY_SETS)}"
        )
    BoxQuerySet(bound)  # a bad bound is refused before any work
    layer = read_output_layer(model)
    out = output_folder(out)
    with run_lock(out):  # a second run on this folder is refused meanwhile
        if resume:
            _same_keys(out, layer.keys)  # a folder of another model is refused before anything is written
        _save_keys(out, layer.keys, "keys.npy")
        return _certify_sets(model, out, layer, sets, bound, resume, seed, progress, workers, scheduler, matmul)


def _certify_sets(model, out, layer, sets, bound, resume, seed, progress, workers, scheduler, matmul) -> dict:
    from tqdm import tqdm

    K = layer.keys
    tokens = token_strings(model, layer.vocab_size)
    statuses, notes, seconds = {}, {}, {}
    todo = list(sets) if "realisable" not in sets or "free" in sets else ["free", *sets]
    for name in tqdm(todo, desc="certify-vocab", unit="set", disable=not progress, leave=False):
        start = time.perf_counter()
        found = _finished(out, name, *_question(name, layer, K, bound)) if resume else None
        if found is not None and len(found) == layer.vocab_size:
            statuses[name], notes[name] = found, "resumed: read back from the finished certificate"
        elif name == "realisable":
            statuses[name], notes[name] = _realisable(
                out,
                layer,
                K,
                statuses.get("free"),
                resume=resume,
                seed=seed,
                progress=progress,
                workers=workers,
                scheduler=scheduler,
                matmul=matmul,
            )
        else:
            statuses[name] = _vocab_set(
                name,
                out,
                K,
                _plain_set(name, layer, bound),
                out / "keys.npy",
                resume=resume,
                seed=seed,
                progress=progress,
                workers=workers,
                scheduler=scheduler,
                matmul=matmul,
            )
            notes[name] = (
                "own keys decided by the kernel from one symmetric Gram computation, the residue by the engine"
            )
        seconds[name] = round(time.perf_counter() - start, 3)
    return _write_outputs(out, layer, tokens, statuses, notes, seconds, bound, model)


def _write_outputs(out, layer, tokens, statuses, notes, seconds, bound, model) -> dict:
    import pandas as pd

    table = pd.DataFrame(
        {
            "id": np.arange(layer.vocab_size),
            "token": tokens,
            **{name: statuses[name] for name in QUERY_SETS if name in statuses},
            "margin": margins(layer.keys),
        }
    )
    with replacing(out / "table.parquet", binary=True) as handle:
        table.to_parquet(handle, index=False)
    write_text(out / "table.csv", table.to_csv(index=False))
    counts = {name: {k: int(v) for k, v in table[name].value_counts().sort_index().items()} for name in statuses}
    summary = {
        "model": str(model),
        "output layer": layer.describe(),
        "box bound": bound,
        "counts": counts,
        "seconds": seconds,
        "how": notes,
        "never output": {
            name: [int(i) for i in table.index[~table[name].isin(["selectable", "undecided"])]][:50]
            for name in statuses
        },
    }
    write_text(out / "summary.json", json.dumps(summary, indent=1))
    lines = [
        f"# Which tokens can {Path(str(model)).name} output",
        "",
        f"{layer.family}, vocabulary {layer.vocab_size}, width {layer.keys.shape[1]}, "
        f"{'tied' if layer.tied else 'untied'} head, {'an' if layer.bias is not None else 'no'} output bias, "
        f"final {layer.norm} (eps {layer.eps:g}).",
        "",
    ]
    if layer.softcap is not None:
        lines += [
            f"Logits soft-capped, c tanh(z / c) with c = {layer.softcap:g}: a strictly increasing map, so every "
            "status below holds for the capped logits too (theorem vocab.soft_cap).",
            "",
        ]
    if layer.caveat:
        lines += [f"Caveat: {layer.caveat}.", ""]
    lines += ["| query set | " + " | ".join(sorted({s for c in counts.values() for s in c})) + " | seconds | how |"]
    keys = sorted({s for c in counts.values() for s in c})
    lines += ["|---" * (len(keys) + 3) + "|"]
    for name in statuses:
        label = f"box [-{bound:g}, {bound:g}]^d" if name == "box" else name
        lines += [
            f"| {label} | "
            + " | ".join(str(counts[name].get(k, 0)) for k in keys)
            + f" | {seconds[name]} | {notes[name]} |"
        ]
    write_text(out / "summary.md", "\n".join(lines) + "\n")
    return summary
