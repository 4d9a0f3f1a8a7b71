"""Certify every chosen layer and head of a model, text by text, streaming: the one road of
``certify-model`` (``--corpus``, and ``--text``/``--tokens``, a corpus of one or a few).

Two kinds of task (:func:`lnproofs.execution.run_pipeline`): a forward task passes one
group of texts through the model (on a worker that holds it) and captures every layer's
per-token arrays; a certification task takes one text x layer through
:func:`lnproofs.models.text_heads.certify_text` (every family: free and realisable queries,
uniform attention, causal answers for decoders), on any worker.  Each finished text is written
at once (``texts/textNNNNN.json``, schema ``lnproofs.model-text/4``, its arrays
``texts/textNNNNN.npz`` and its table rows ``rows/textNNNNN.parquet``), so an interrupted
run keeps every finished text and ``resume=True`` restarts at the first unfinished one.
The exact data of each head's query set is built once per run and shared by all texts;
the weights the query sets need are in ``params.npz`` beside the ``texts`` folder
(:func:`lnproofs.models.text_check.text_file_certificates` puts them back), and the coverage
evidence of each head that covers every direction in ``coverage/layer{L}_head{H}.json``,
written with the first text that uses it (the text files name it).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np

from ..certificates.writes import folder_entry, write_arrays
from ..kernel import InputError, ModelError, OptionError, require
from . import corpus_files as files
from .corpus_figures import tables_and_figures, tokens_figure
from .corpus_heads import _write_json
from .head_sets import HeadSets, narrow_exactly
from .loading import device_problem, resolve_model_device
from .table import write_rows
from .text_heads import TEXT_SCHEMA, certify_text, key_head_answers

__all__ = [
    "TEXT_SCHEMA",
    "PARALLEL_MIN_TEXTS",
    "PARALLEL_MIN_CORES",
    "FORWARD_BATCH",
    "HeadSets",
    "resolve_model_device",
    "device_problem",
    "certify_corpus",
    "sliding_limit",
]

#: a capture's fields that differ from text to text (the rest is the layer's weights)
PER_TEXT = ("ln_out", "hidden_in", "sources", "rotary_cos", "rotary_sin", "key_rows")


#: with the default ``workers=None``, corpora of at least this many texts use a local cluster,
#: on a machine of at least :data:`PARALLEL_MIN_CORES` cores: on two, a cluster's model worker,
#: certifying worker and this process share them, and the texts' records travel between
#: processes (MiniLM, 100 texts on 2 cores: 33 s with two workers, 22 s in this process)
PARALLEL_MIN_TEXTS = 16
PARALLEL_MIN_CORES = 3
#: texts that go through the model together, by default (one group = one task)
FORWARD_BATCH = 8


def _worker_model(path, dtype, device, config):
    """The model, made once on each model worker (:func:`lnproofs.execution.run_pipeline`)."""
    from .loading import load_model

    return load_model(path, config=config, dtype=dtype, device=device, allow_half=True)


def _given(model):
    return model


def _forward_group(item, loaded, held=None):
    """Forward task: a group of texts, each passed alone; one piece per unfinished text and
    layer, ``(number, layer, ids, fields)`` with the text's per-token arrays of that layer
    (:data:`PER_TEXT`, floats widened exactly to float64; the norm's inputs only if folded).
    ``item``: ``(members, layers, fold, beside)``: a forked forward side has time to spare, and
    ``beside`` gives it work of the certifying side, the same functions (checked by the kernel
    there, as on any worker): with ``outputs``, each piece carries the norm outputs certificate
    (:func:`~.corpus_heads.outputs_certificate`); with ``cover`` (``{layer: heads}``, first group),
    the first text's carry those heads' coverage (:func:`~.head_sets.coverage_of`), made while
    the certifying side makes the other layers' (:func:`_prepare_heads`).  ``held``: a dict
    kept from group to group by the run's forward side, for each layer's key weight slices."""
    from dataclasses import replace

    from .corpus_heads import outputs_certificate
    from .extract import capture_layers
    from .head_sets import capture_query_set, coverage_of
    from .row_products import weight_slices

    members, layers, fold, beside = item
    cover, held = beside.get("cover"), {} if held is None else held
    captures = capture_layers(loaded, [ids for _, ids, _ in members], layers)
    for layer, cap in captures.items():  # the group's keys, one product per layer, row by row
        if layer not in held:
            held[layer] = weight_slices(cap.W_k)
        captures[layer] = replace(cap, key_rows=cap.key_rows_now(held[layer]))
    pieces = []
    for k, (number, ids, todo) in enumerate(members):
        if todo:
            for layer in layers:
                mine = captures[layer].of_input(k)
                fields = {name: getattr(mine, name) for name in PER_TEXT}
                for name in ("ln_out", "hidden_in"):
                    fields[name] = np.ascontiguousarray(fields[name], dtype=np.float64)
                if not fold:
                    fields["hidden_in"] = fields["hidden_in"][:0]
                if beside.get("outputs"):
                    fields["outputs"] = outputs_certificate(fields["ln_out"])
                if cover and layer in cover:
                    fields["coverage"] = {
                        head: coverage_of(capture_query_set(captures[layer], head)) for head in cover[layer]
                    }
                pieces.append((number, layer, ids, fields))
            cover = None  # with the first text's pieces only
    return pieces


#: a template capture's weights, the bulk of a layer's state on every worker
WEIGHTS = ("W_q", "b_q", "W_k", "b_k")


def _compact(template):
    """``template`` with each weight array held in float32 where that is exact (the weights of
    a float32 or float16 model, widened to float64 by the capture): half the bytes that every
    worker keeps per layer.  :func:`_widen` gives back the float64 arrays, bit for bit."""
    from dataclasses import replace

    narrow = {name: narrow_exactly(getattr(template, name)) for name in WEIGHTS}
    return replace(template, **narrow, hidden_in=template.hidden_in[:0], ln_out=template.ln_out[:0])


def _widen(template, fields, sets=None):
    """The layer's capture of one text: ``template``'s weights in float64 again (exact) and
    the text's arrays ``fields`` (the keys among them: :func:`_forward_group` makes them).  With
    ``sets`` (:class:`HeadSets`), the float64 weights are made once per layer and kept with
    its query sets (read-only), instead of for every text."""
    from dataclasses import replace

    def make():
        wide = {name: np.asarray(getattr(template, name), dtype=np.float64) for name in WEIGHTS}
        for array in wide.values():
            array.flags.writeable = False
        return wide

    held = make() if sets is None else sets.layer_item(template, "weights", make)
    return replace(template, **held, **fields)


def _layer_templates(loaded, layers):
    """Every chosen layer's template capture (:func:`_compact`), in the order of ``layers``:
    the slots' data of :func:`lnproofs.execution.run_pipeline`, made from the model (on a
    model worker)."""
    from .extract import capture_layers

    templates = capture_layers(loaded, [np.array([0, 1], dtype=np.int64)], list(layers))
    return [_compact(templates[layer]) for layer in layers]


def _prepare_heads(sets, templates, heads, fold, elsewhere=None) -> None:
    """In one process, while the first forward task runs: :meth:`HeadSets.prepare` from the
    layers' templates (the same weights as every text's capture, so the same sets), unless the
    layers are folded; ``elsewhere``: ``{layer: heads}`` whose coverage the forward side makes."""
    if not fold and isinstance(templates, list):
        sets.prepare((_widen(template, {}, sets) for template in templates), heads, elsewhere)


def _certify_piece(piece, state, template):
    """Certification task: one text x layer, from its captured arrays and the layer's template
    capture (:func:`_compact`); ``state``: the head sets (one per worker), the chosen heads
    and the options of :func:`~lnproofs.models.text_heads.certify_text`, with ``fold``."""
    number, layer, ids, fields = piece
    sets, heads, options = state
    options = dict(options)
    fields = dict(fields)
    if "coverage" in fields:  # made beside the first forward pass
        sets.given_coverage(layer, fields.pop("coverage"))
    made = fields.pop("outputs", None)  # made beside the forward pass
    lent = fields.pop("free", None)  # made there while it had time (_lent_free)
    cap = _widen(template, fields, sets)
    if options.pop("fold", False):
        from .folding import fold_capture

        cap = fold_capture(cap)
    # one BLAS thread, as in a Dask worker: the float proposers (least squares at the full
    # width, for instance) give other, equally valid witnesses when BLAS splits their sums
    # over more threads, and the files must not depend on the process that certified
    with sets.one_blas_thread():
        return (
            number,
            layer,
            certify_text(
                {layer: cap},
                ids,
                number,
                None,
                [layer],
                heads,
                sets,
                outputs={layer: made} if made else None,
                made_free={layer: lent} if lent else None,
                **options,
            ),
        )


def _lent_free(templates, layers, heads, options, piece):
    """Lent to a forked forward side with time to spare: the free answers of the piece's key
    heads (:func:`~.text_heads.key_head_answers`; the keys come with the piece, as here), which
    come back as its field ``free``."""
    from dataclasses import replace

    cap = replace(templates[layers.index(piece[1])], **{name: piece[3][name] for name in PER_TEXT})
    return key_head_answers(cap, heads, uniform=options["uniform"], causal=options["causal"])


def sliding_limit(loaded, layers) -> int | None:
    """The narrowest sliding window of ``layers`` (None: full attention everywhere).  A window
    at least as long as a text changes nothing for it (every query sees every earlier key)."""
    from .families import sliding_window

    windows = [w for w in (sliding_window(loaded.config, layer) for layer in layers) if w is not None]
    return min(windows) if windows else None


def certify_corpus(
    loaded,
    tokenizer,
    corpus,
    out_dir,
    *,
    layers=None,
    heads=None,
    max_texts=None,
    max_tokens=None,
    resume=False,
    uniform="both",
    progress=True,
    warn=None,
    head_cache: HeadSets | None = None,
    workers=1,
    scheduler=None,
    config=None,
    batch_size: int = FORWARD_BATCH,
    pool: bool = False,
    causal: bool = True,
    fold: bool = False,
    model_workers=None,
    device=None,
    context=None,
) -> dict:
    """Certify the texts of ``corpus`` into ``out_dir``.

    ``corpus``: a path (see :mod:`lnproofs.io.corpus`), or a list of ``(text, token ids)``
    (``--text``/``--tokens``: the ids are used as given; ``text`` may be None).

    Two kinds of task (:func:`lnproofs.execution.run_pipeline`): a forward task passes one
    group of ``batch_size`` texts through the model, on a worker offering the Dask resource
    ``MODEL`` (which loads the model once from its path); a certification task certifies one
    text x layer (every chosen head) from that layer's captured arrays, on any worker.
    ``workers`` 1 (the default) does both in this process; ``workers`` N or None (a local
    cluster for corpora of at least :data:`PARALLEL_MIN_TEXTS` texts on a machine of at least
    :data:`PARALLEL_MIN_CORES` cores, or when ``model_workers`` is given) starts
    ``model_workers`` (default 1) model workers and N - ``model_workers`` certifying ones;
    ``scheduler`` uses an existing cluster, whose model workers were started with
    ``--resources MODEL=1``; ``context`` an open
    :class:`~lnproofs.execution.ExecutionContext` instead.  ``device``: where model workers
    run the forward pass (``cpu``, ``cuda``, ``auto``; default ``loaded.device``).  Each
    finished text is written at once, by this process, and the tables are rebuilt from the
    files, so the outputs are the same whatever the layout.  ``config``: the ``config=``
    that :func:`~lnproofs.models.loading.load_model` was given, for the workers' own loads.

    Groups are fixed by text number (texts 0..7, 8..15, ... by default) and a resumed run
    still passes a group's finished texts through the model, so every text's keys are the
    same bit for bit whatever the workers and wherever a run resumed.  Each text of a group
    goes through the model alone, so its keys are those of a run of the text alone, bit for
    bit, whatever ``batch_size``.

    Texts longer than the model's context (or ``max_tokens``) are truncated (counted for
    one warning); a text longer than a chosen layer's sliding window is refused
    (:class:`~lnproofs.kernel.InputError`) after the texts before it are written.
    ``causal``: the causal answers of decoders (:mod:`.text_causal`).  ``fold``: certify the
    folded form of LayerNorm layers (:func:`lnproofs.models.folding.fold_capture`: gain and
    bias folded into ``W_q`` and ``W_k``, centred; the statuses are the same).
    ``pool=True``: once every text is finished, the keys of all texts are also certified
    together per layer and head, with the same head sets (:mod:`lnproofs.models.corpus_pool`)."""
    import contextlib

    from tqdm import tqdm

    from ..execution import (
        Load,
        check_model_workers,
        machine_workers,
        open_client,
        resolve_model_workers,
        resolve_workers,
        run_pipeline,
    )
    from ..execution.forked import forward_forks
    from ..io.corpus import count_texts
    from .extract import capture_layers

    out = Path(out_dir)
    layers = list(range(loaded.n_layers)) if layers is None else list(layers)
    heads = list(range(loaded.n_heads)) if heads is None else list(heads)
    limit = loaded.max_positions if max_tokens is None else min(int(max_tokens), loaded.max_positions)
    window = sliding_limit(loaded, layers)
    causal = bool(causal and loaded.family.causal)
    if fold and loaded.family.norm != "layernorm":
        raise OptionError(
            f"--fold folds a LayerNorm; this {loaded.family.name} model normalises with "
            f"{loaded.family.norm}: certify it without --fold"
        )
    options = {"layers": layers, "heads": heads, "uniform": uniform, "max_tokens": limit, "causal": causal}
    if fold:
        options["fold"] = True
    text_options = {"uniform": uniform, "causal": causal, "fold": bool(fold)}
    total = (
        len(corpus[:max_texts] if max_texts else corpus)
        if isinstance(corpus, (list, tuple))
        else count_texts(corpus, max_texts=max_texts)
    )
    # automatic: a cluster for a corpus big enough, on a machine with cores to spare (or as asked)
    worthwhile = total >= PARALLEL_MIN_TEXTS and (machine_workers() >= PARALLEL_MIN_CORES or model_workers is not None)
    if context is None:
        local = None if workers is None or scheduler is not None else resolve_workers(workers)
        model_workers = resolve_model_workers(model_workers, local, scheduler)
    device = loaded.device if device is None else device
    cache = HeadSets() if head_cache is None else head_cache
    truncated, done, kept = 0, 0, 0
    texts_of, tokens_of, parts_of = {}, {}, {}
    covered: set = set()  # heads whose coverage file this run wrote
    bar = None

    def write(number, result):
        nonlocal done
        ids = tokens_of.pop(number)
        record, rows, arrays = result
        record["options"] = options
        files.coverage_files(out, record, covered)
        tokens = (
            tokenizer.convert_ids_to_tokens(ids.tolist())
            if hasattr(tokenizer, "convert_ids_to_tokens")
            else [str(i) for i in ids.tolist()]
        )
        write_rows(out / "rows" / f"text{number:05d}.parquet", rows, tokens)
        path = out / "texts" / f"text{number:05d}.json"
        write_arrays(path.with_suffix(".npz"), arrays)
        _write_json(path, record)  # written last: its presence marks the text finished
        done += 1
        bar.update(1)

    def on_piece(group, index, result):
        number, layer, part = result
        have = parts_of.setdefault(number, {})
        have[layer] = part
        if len(have) == len(layers):
            del parts_of[number]
            write(number, files.merge_layers(number, texts_of.pop(number), [have[layer] for layer in layers]))

    def groups():
        nonlocal truncated, kept
        step = max(1, int(batch_size))
        group: list = []

        def close():
            members = list(group)
            group.clear()
            todo = sum(1 for *_, t in members if t)
            if not todo:
                return None
            beside = dict(handed)
            handed["cover"] = None  # with the first group only
            return (members, layers, bool(fold), beside), [i for _ in range(todo) for i in range(len(layers))]

        try:
            for number, text, given in files.texts_of_corpus(corpus, max_texts):
                ids = np.asarray(tokenizer(text)["input_ids"] if given is None else given, dtype=np.int64)
                longer = ids.size > limit
                ids = ids[:limit]
                todo = not (resume and files.finished_text(out / "texts" / f"text{number:05d}.json", options, ids))
                if not todo:
                    kept += 1
                    bar.update(1)
                elif longer:
                    truncated += 1  # counted for the texts this run certifies
                if ids.size < 2:
                    raise InputError(
                        f"text {number} ({str(text)[:40]!r}) tokenizes to {ids.size} token(s); "
                        "each text needs at least 2 tokens"
                    )
                require(
                    window is None or ids.size <= window,
                    InputError,
                    f"text {number} has {ids.size} tokens but the model uses sliding-window attention "
                    f"(window {window}), which is not handled beyond the window: give texts of at most "
                    f"{window} tokens (--max-tokens {window})",
                )
                if todo:
                    tokens_of[number], texts_of[number] = ids, text
                group.append((number, ids, todo))
                if (number + 1) % step == 0:
                    closed = close()
                    if closed:
                        yield closed
        except InputError:
            closed = close()  # the texts before the bad one are finished first
            if closed:
                yield closed
            raise
        closed = close()
        if closed:
            yield closed

    opened = (
        contextlib.nullcontext(context)
        if context is not None
        else open_client(workers, scheduler, worthwhile=worthwhile, n_tasks=total, model_workers=model_workers)
    )
    record, started, templates, handed, ended = {}, False, None, {"cover": None, "outputs": False}, {}
    try:
        with opened as ctx:
            if not ctx.in_process:  # before any file is written: model workers, and their device
                check_model_workers(ctx, device_problem if ctx.scheduler else None, device)
            try:
                for name in ("texts", "rows", "coverage"):
                    folder_entry(out, name, folder=True)
            except OSError as exc:
                raise ModelError(
                    f"output folder {out} cannot be created ({exc.strerror}); give a writable --out"
                ) from None
            started = True
            templates = capture_layers(loaded, [np.array([0, 1], dtype=np.int64)], layers)
            options["weights"] = files.weights_digest(templates, fold)  # a text of other weights is not this run's
            files.write_params(out / "params.npz", templates, fold, resume)
            states = [(cache, heads, text_options)] * len(layers)  # small: every worker holds them
            if ctx.in_process:
                model, slot_data = loaded, [_compact(templates[layer]) for layer in layers]
            else:
                # each layer's weights are made on a model worker and fetched by its certifiers only
                slot_data = Load(_layer_templates, layers)
                if getattr(loaded, "path", None) is None:
                    model = Load(_given, loaded)  # a model object made in Python travels from here
                else:
                    model = Load(_worker_model, loaded.path, loaded.dtype, device, config)
            bar = tqdm(total=total, desc="certify-model", unit="text", disable=not progress, dynamic_ncols=True)
            # a forked forward side makes the norm outputs' certificates and the later layers' coverage,
            # and key heads' free answers whenever it would wait (decoders: half of every group)
            apart = total > max(1, int(batch_size))  # several groups: a forked forward side pays
            if ctx.in_process and apart and not fold and forward_forks():
                handed["outputs"] = True
                handed["cover"] = {
                    layer: todo
                    for layer in layers[len(layers) // 2 :]
                    if (todo := tuple(h for h in heads if not cache.has_coverage(layer, h)))
                } or None
            record = run_pipeline(
                partial(_forward_group, held={}),
                _certify_piece,
                groups(),
                context=ctx,
                model=model,
                states=states,
                on_result=on_piece,
                slot_data=slot_data,
                prepare=partial(_prepare_heads, cache, slot_data, heads, fold, handed["cover"] or {}),
                apart=apart,
                idle=partial(tokens_figure, out),
                finish=lambda beside, drawn: ended.update(tables_and_figures(out, beside, (drawn,))),
                lend=(
                    partial(_lent_free, slot_data, layers, heads, text_options),
                    lambda piece, made: (*piece[:3], {**piece[3], "free": made}),
                    2 * len(layers),
                )
                if handed["outputs"]
                else None,
            )
    finally:
        if bar is not None:
            bar.close()
        if truncated and warn:
            warn(f"{truncated} text(s) longer than {limit} tokens were truncated to {limit}")
        tables = ended if ended or not started else tables_and_figures(out)  # stopped early: its texts so far
    if pool:
        from .corpus_pool import pool_corpus

        if fold:
            from .folding import fold_capture

            templates = {layer: fold_capture(cap) for layer, cap in templates.items()}
        tables.update(pool_corpus(out, cache, templates, layers, heads, progress=progress))
    return {"texts": total, "certified": done, "kept": kept, "truncated": truncated, "model_loads": record, **tables}
