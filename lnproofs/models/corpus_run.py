"""Certify every chosen layer and head of a model, text by text, streaming: the one road of
``certify-model`` (``--corpus``, and ``--text``/``--tokens``, a corpus of one or a few).

One task = a group of texts: one forward pass, then each text through
:func:`lnproofs.models.text_heads.certify_text` (every family: free and realisable
queries, uniform attention, causal answers for decoders).  Each finished text is written
at once (``texts/textNNNNN.json``, schema ``lnproofs.model-text/2``, its arrays
``texts/textNNNNN.npz`` and its table rows ``rows/textNNNNN.parquet``), so an interrupted
run keeps every finished text and ``resume=True`` restarts at the first unfinished one.
The exact data of each head's query set is built once per run and shared by all texts;
the weights the query sets need are in ``params.npz`` beside the ``texts`` folder
(:func:`lnproofs.models.text_check.text_file_certificates` puts them back).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from ..kernel.errors import InputError, ModelError, OptionError, require
from .corpus_heads import HeadCache, _write_json, free_certificate, head_query_set, layer_query_set, setup_heads
from .head_sets import HeadSets
from .text_heads import TEXT_SCHEMA, certify_text

__all__ = ["TEXT_SCHEMA", "PARALLEL_MIN_TEXTS", "HeadCache", "HeadSets", "setup_heads", "certify_corpus",
           "layer_query_set", "head_query_set", "free_certificate", "sliding_limit"]


def _write_rows(path: Path, rows, tokens) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .table import ROW_SCHEMA

    for r in rows:
        r["token"] = tokens[r["position"]]
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(pa.Table.from_pylist(rows, schema=ROW_SCHEMA()), tmp)
    os.replace(tmp, path)


#: with the default ``workers=None``, corpora of at least this many texts use a local cluster
PARALLEL_MIN_TEXTS = 16
#: groups of texts handed to the workers at a time (memory stays bounded whatever the corpus size)
GROUPS_PER_WORKER = 2
#: texts that go through the model together, by default (one group = one task)
FORWARD_BATCH = 8


def _worker_state(path, dtype, device, config):
    """What every task needs, made once on each worker: the model and its head sets."""
    from .loading import load_model

    return load_model(path, config=config, dtype=dtype, device=device, allow_half=True), HeadSets()


def _group_task(item, state):
    """One task: one forward pass over a group of texts, then certify its unfinished texts
    one by one (runs on a worker, or in this process).  Returns ``[(number, result), ...]``."""
    from .extract import capture_layers

    members, layers, heads, options = item
    loaded, cache = state
    options = dict(options)
    captures = capture_layers(loaded, [ids for _, _, ids, _ in members], layers, batch_size=len(members))
    if options.pop("fold", False):
        from .folding import fold_capture

        captures = {layer: fold_capture(cap) for layer, cap in captures.items()}
    out = []
    try:
        for k, (number, text, ids, todo) in enumerate(members):
            if todo:
                mine = {layer: cap.of_input(k) for layer, cap in captures.items()}
                out.append((number, certify_text(mine, ids, number, text, layers, heads, cache, **options)))
    except KeyboardInterrupt:
        raise GroupInterrupted(out) from None
    return out


class GroupInterrupted(KeyboardInterrupt):
    """Ctrl-C inside a group task, with the texts of the group already finished (written
    before the interruption goes on)."""

    def __init__(self, finished):
        super().__init__()
        self.finished = finished


def sliding_limit(loaded, layers) -> int | None:
    """The narrowest sliding window of ``layers`` (None: full attention everywhere).  A window
    at least as long as a text changes nothing for it (every query sees every earlier key)."""
    from .families import sliding_window

    windows = [w for w in (sliding_window(loaded.config, layer) for layer in layers) if w is not None]
    return min(windows) if windows else None


def _texts(corpus, max_texts):
    """``(number, text, ids or None)``: from a corpus path, or from a list of ``(text, ids)``."""
    if isinstance(corpus, (list, tuple)):
        for number, (text, ids) in enumerate(corpus[:max_texts] if max_texts else corpus):
            yield number, text, ids
        return
    from ..io.corpus import iter_corpus

    for number, text in iter_corpus(corpus, max_texts=max_texts):
        yield number, text, None


def certify_corpus(loaded, tokenizer, corpus, out_dir, *, layers=None, heads=None, max_texts=None,
                   max_tokens=None, resume=False, uniform="both", progress=True, warn=None,
                   head_cache: HeadSets | None = None, workers=1, scheduler=None, config=None,
                   batch_size: int = FORWARD_BATCH, pool: bool = False, causal: bool = True,
                   fold: bool = False) -> dict:
    """Certify the texts of ``corpus`` one by one into ``out_dir``.

    ``corpus``: a path (see :mod:`lnproofs.io.corpus`), or a list of ``(text, token ids)``
    (``--text``/``--tokens``: the ids are used as given; ``text`` may be None).
    One group of texts is one task of :func:`lnproofs.execution.run_tasks`: ``workers`` 1
    (the default) works in this process; ``workers`` N or None (a local cluster for corpora
    of at least :data:`PARALLEL_MIN_TEXTS` texts) or ``scheduler`` run the groups on Dask
    workers, each loading the model once from its path.  Each finished text is written at
    once, by this process, and the tables are rebuilt from the files, so the outputs are
    the same whatever the number of workers.  ``config``: the ``config=`` that
    :func:`~lnproofs.models.loading.load_model` was given, for the workers' own loads.

    Texts go through the model ``batch_size`` at a time (right-padded, one task per group);
    groups are fixed by text number (texts 0..7, 8..15, ... by default) and a resumed run
    still passes a group's finished texts through the model, so every text's keys are the
    same bit for bit whatever the workers and wherever a run resumed.  Padding changes the
    order of floating-point sums, so keys can differ in their last bits from a run of the
    text alone (``batch_size=1``); the certificates are about the keys stored.

    Texts longer than the model's context (or ``max_tokens``) are truncated (counted for
    one warning); a text longer than a chosen layer's sliding window is refused
    (:class:`~lnproofs.kernel.errors.InputError`) after the texts before it are written.
    ``causal``: the causal answers of decoders (:mod:`.text_causal`).  ``fold``: certify the
    folded form of LayerNorm layers (:func:`lnproofs.models.folding.fold_capture`: gain and
    bias folded into ``W_q`` and ``W_k``, centred; the statuses are the same).
    ``pool=True``: once every text is finished, the keys of all texts are also certified
    together per layer and head (:mod:`lnproofs.models.corpus_pool`)."""
    from tqdm import tqdm

    from ..execution import Load, open_client, run_tasks, share
    from ..io.corpus import count_texts

    out = Path(out_dir)
    try:
        (out / "texts").mkdir(parents=True, exist_ok=True)
        (out / "rows").mkdir(exist_ok=True)
    except OSError as exc:
        raise ModelError(f"output folder {out} cannot be created ({exc.strerror}); give a writable --out") from None
    layers = list(range(loaded.n_layers)) if layers is None else list(layers)
    heads = list(range(loaded.n_heads)) if heads is None else list(heads)
    limit = loaded.max_positions if max_tokens is None else min(int(max_tokens), loaded.max_positions)
    window = sliding_limit(loaded, layers)
    causal = bool(causal and loaded.family.causal)
    if fold and loaded.family.norm != "layernorm":
        raise OptionError(f"--fold folds a LayerNorm; this {loaded.family.name} model normalises with "
                          f"{loaded.family.norm}: certify it without --fold")
    options = {"layers": layers, "heads": heads, "uniform": uniform, "max_tokens": limit, "causal": causal}
    if fold:
        options["fold"] = True
    text_options = {"uniform": uniform, "causal": causal, "fold": bool(fold)}
    _write_params(out / "params.npz", loaded, layers, fold)
    total = len(corpus[:max_texts] if max_texts else corpus) if isinstance(corpus, (list, tuple)) \
        else count_texts(corpus, max_texts=max_texts)
    cache = HeadSets() if head_cache is None else head_cache
    truncated, done, kept = 0, 0, 0
    bar = tqdm(total=total, unit="text", disable=not progress, dynamic_ncols=True)

    tokens_of = {}

    def write(number, result):
        nonlocal done
        ids = tokens_of.pop(number)
        record, rows, arrays = result
        record["options"] = options
        tokens = tokenizer.convert_ids_to_tokens(ids.tolist()) if hasattr(tokenizer, "convert_ids_to_tokens") \
            else [str(i) for i in ids.tolist()]
        _write_rows(out / "rows" / f"text{number:05d}.parquet", rows, tokens)
        path = out / "texts" / f"text{number:05d}.json"
        tmp = path.with_name(f"text{number:05d}.tmp.npz")
        np.savez(tmp, **arrays)
        os.replace(tmp, path.with_suffix(".npz"))
        _write_json(path, record)                       # written last: its presence marks the text finished
        done += 1
        bar.update(1)

    try:
        with open_client(workers, scheduler, worthwhile=total >= PARALLEL_MIN_TEXTS, n_tasks=total) as ctx:
            if ctx.in_process or getattr(loaded, "path", None) is None:
                state = share(ctx, (loaded, cache))
            else:
                state = share(ctx, Load(_worker_state, loaded.path, loaded.dtype, loaded.device, config))
            step = max(1, int(batch_size))
            pending: list = []
            group: list = []

            def close_group():
                if any(todo for *_, todo in group):
                    pending.append((list(group), layers, heads, text_options))
                group.clear()

            def flush():
                try:
                    run_tasks(_group_task, pending, context=ctx, shared=state,
                              on_result=lambda index, results: [write(number, r) for number, r in results])
                except GroupInterrupted as stop:
                    for number, result in stop.finished:
                        write(number, result)
                    raise KeyboardInterrupt from None
                pending.clear()

            try:
                for number, text, given in _texts(corpus, max_texts):
                    ids = np.asarray(tokenizer(text)["input_ids"] if given is None else given, dtype=np.int64)
                    longer = ids.size > limit
                    ids = ids[:limit]
                    todo = not (resume and _finished(out / "texts" / f"text{number:05d}.json", options, ids))
                    if not todo:
                        kept += 1
                        bar.update(1)
                    elif longer:
                        truncated += 1                         # counted for the texts this run certifies
                    if ids.size < 2:
                        raise InputError(f"text {number} ({str(text)[:40]!r}) tokenizes to {ids.size} token(s); "
                                         "each text needs at least 2 tokens")
                    require(window is None or ids.size <= window, InputError,
                            f"text {number} has {ids.size} tokens but the model uses sliding-window attention "
                            f"(window {window}), which is not handled beyond the window: give texts of at most "
                            f"{window} tokens (--max-tokens {window})")
                    if todo:
                        tokens_of[number] = ids
                    group.append((number, text, ids, todo))
                    if (number + 1) % step == 0:
                        close_group()
                        if len(pending) >= GROUPS_PER_WORKER * max(1, ctx.workers):
                            flush()
            except InputError:
                close_group()                            # the texts before the bad one are finished first
                if pending:
                    flush()
                raise
            close_group()
            if pending:
                flush()
    finally:
        bar.close()
        if truncated and warn:
            warn(f"{truncated} text(s) longer than {limit} tokens were truncated to {limit}")
        from .corpus_figures import write_figures
        from .table import write_tables
        tables = write_tables(out)
        tables["figures"] = [str(p) for p in write_figures(out)]
    if pool:
        from .corpus_pool import pool_corpus
        from .extract import capture_layers

        captures = capture_layers(loaded, [np.array([0, 1], dtype=np.int64)], layers)
        tables.update(pool_corpus(out, HeadCache(), captures, layers, heads, progress=progress))
    return {"texts": total, "certified": done, "kept": kept, "truncated": truncated, **tables}


def _finished(path: Path, options, ids) -> bool:
    """Whether ``path`` holds a finished text made with these options from these tokens."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (data.get("schema") == TEXT_SCHEMA and data.get("options") == options
            and data.get("tokens") == [int(i) for i in ids])


def _write_params(path: Path, loaded, layers, fold: bool = False) -> None:
    from .extract import capture_layers
    from .head_sets import params_arrays

    if path.exists():
        with np.load(path) as old:
            if all(f"l{layer}_kind" in old.files for layer in layers) and bool(old.get("folded", False)) == fold:
                return
    caps = capture_layers(loaded, [np.array([0, 1], dtype=np.int64)], layers)
    if fold:
        from .folding import fold_capture

        caps = {layer: fold_capture(cap) for layer, cap in caps.items()}
    tmp = path.with_name("params.tmp.npz")
    np.savez(tmp, folded=np.array(bool(fold)), **params_arrays(caps))
    os.replace(tmp, path)
