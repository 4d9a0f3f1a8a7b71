"""Certify every chosen layer and head of a model over a corpus, text by text, streaming.

Two kinds of task: a forward task passes one group of texts through the model (on a
worker that holds it) and captures every layer's norm outputs; a certification task takes
one text x layer and certifies the full-width LayerNorm outputs (free queries) and for
every head its keys under free queries and under the layer's LayerNorm-realisable
queries, plus uniform attention.  Each finished
text is written at once (``texts/textNNNNN.json``, schema ``lnproofs.model-text/1``, and
its table rows ``rows/textNNNNN.parquet``), so an interrupted run keeps every finished
text and ``resume=True`` restarts at the first unfinished one.  The exact data of each
head's query set is built once per run and shared by all texts.

The text file holds, per layer, ``outputs`` (a certificate over ``ln_outputs``) and per
head ``keys``, ``free`` and ``layernorm`` certificates (selectable LayerNorm keys carry the
compact ``y``: ``u = P diag(gamma) W_q^T y``) and ``uniform``.  LayerNorm certificates
name their query set as ``{"kind": "layernorm", "layer": l, "head": h}``; the arrays are in
``params.npz`` beside the ``texts`` folder (:func:`text_file_certificates` puts them back).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from ..kernel.errors import InputError, ModelError
from .corpus_heads import (HeadCache, _certificate, _write_json, free_certificate, head_query_set, layer_query_set,
                           outputs_certificate, setup_heads)

__all__ = ["TEXT_SCHEMA", "PARALLEL_MIN_TEXTS", "FORWARD_BATCH", "HeadCache", "resolve_model_device", "device_problem", "setup_heads", "certify_corpus", "check_corpus_model", "text_file_certificates", "layer_query_set", "head_query_set", "free_certificate"]

TEXT_SCHEMA = "lnproofs.model-text/1"


def _certify_layer(cap, ids, number, heads, cache, uniform):
    """Every chosen head of one layer of one text: ``(layer entry, head entries, rows, arrays)``."""
    from ..kernel.uniform_exact import difference_matrix
    from ..propose.querysets.layernorm_fast import certify_results_fast
    from ..propose.uniform import uniform_attention

    layer = cap.layer
    entries, rows, arrays = [], [], {}
    outputs = outputs_certificate(cap.ln_out)
    arrays[f"ln_outputs_l{layer}"] = cap.ln_out
    out_status = [r["status"] for r in outputs["results"]]
    for head in heads:
        qs, qmap, basis, H = cache.get(cap, head)
        keys = cap.keys(head)
        ln = certify_results_fast(keys, qs, query_map=qmap, basis=basis, compact=True)
        free = free_certificate(keys, ln, H, basis[2])
        ln_cert = _certificate(len(keys), keys.shape[1], {"kind": "layernorm", "layer": layer, "head": head}, ln)
        skipped = {"status": "skipped"}
        diffs = difference_matrix(keys) if uniform != "none" and len(keys) > keys.shape[1] else None
        uni_free = uniform_attention(keys, compact=True, differences=diffs).to_json() if uniform != "none" else skipped
        uni_ln = uniform_attention(keys, qs, query_map=qmap, compact=True, differences=diffs).to_json() \
            if uniform == "both" else skipped
        if uni_ln.get("query_set"):
            uni_ln["query_set"] = {"kind": "layernorm", "layer": layer, "head": head}
        uni = {"free": uni_free["status"], "layernorm": uni_ln["status"]}
        arrays[f"keys_l{layer}_h{head}"] = keys
        entries.append({"layer": layer, "head": head, "free": free, "layernorm": ln_cert,
                        "uniform": {"free": uni_free, "layernorm": uni_ln}})
        groups = {}
        for pos, row in enumerate(keys):
            groups.setdefault((row + 0.0).tobytes(), []).append(pos)
        for pos in range(len(keys)):
            fr, lr = free["results"][pos], ln[pos]
            twins = groups[(keys[pos] + 0.0).tobytes()]
            rows.append({"text": number, "layer": layer, "head": head, "position": pos, "token_id": int(ids[pos]),
                         "status_free": fr["status"], "status_layernorm": lr["status"],
                         "status_outputs": out_status[pos],
                         "margin_free": fr.get("margin"), "margin_layernorm": lr.get("margin"),
                         "ties_identical_token": any(int(ids[j]) == int(ids[pos]) for j in twins if j != pos),
                         "uniform_free": uni["free"], "uniform_layernorm": uni["layernorm"]})
    return {"layer": layer, "outputs": outputs}, entries, rows, arrays


def _merge_layers(number, text, ids, parts):
    """A text's record, rows and arrays from its layers' parts (in layer order)."""
    record = {"schema": TEXT_SCHEMA, "text_index": number, "text": text, "tokens": ids.tolist(),
              "arrays": f"text{number:05d}.npz", "layers": [], "heads": []}
    rows, arrays = [], {}
    for layer_entry, entries, layer_rows, layer_arrays in parts:
        record["layers"].append(layer_entry)
        record["heads"].extend(entries)
        rows.extend(layer_rows)
        arrays.update(layer_arrays)
    return record, rows, arrays


def _certify_text(captures, ids, number, text, layers, heads, cache, uniform):
    """Every chosen layer and head of one text, in this process: ``(record, rows, arrays)``."""
    return _merge_layers(number, text, ids, [_certify_layer(captures[layer], ids, number, heads, cache, uniform)
                                             for layer in layers])


def _write_rows(path: Path, rows, tokens) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    for r in rows:
        r["token"] = tokens[r["position"]]
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(pa.Table.from_pylist(rows), tmp)
    os.replace(tmp, path)


#: with the default ``workers=None``, corpora of at least this many texts use a local cluster
PARALLEL_MIN_TEXTS = 16
#: texts that go through the model together, by default (one group = one forward task)
FORWARD_BATCH = 8


def _worker_model(path, dtype, device, config):
    """The model, made once on each model worker (:func:`lnproofs.execution.run_pipeline`)."""
    from .loading import load_model

    return load_model(path, config=config, dtype=dtype, device=device, allow_half=True)


def _given(model):
    return model


def _forward_group(item, loaded):
    """Forward task: one padded pass over a group of texts; one piece per unfinished text and
    layer, ``(number, layer, ids, ln_out)`` with the layer's norm outputs widened exactly to
    float64 (the keys and queries are computed from them by the certifying worker)."""
    from .extract import capture_layers

    members, layers = item
    captures = capture_layers(loaded, [ids for _, ids, _ in members], layers, batch_size=len(members))
    pieces = []
    for k, (number, ids, todo) in enumerate(members):
        if todo:
            for layer in layers:
                ln_out = np.ascontiguousarray(captures[layer].of_input(k).ln_out, dtype=np.float64)
                pieces.append((number, layer, ids, ln_out))
    return pieces


def _certify_piece(piece, state):
    """Certification task: one text x layer, from its captured norm outputs and the layer's
    query-set parameters (``state``: a capture of the layer's weights, a head cache, the
    chosen heads and the uniform option)."""
    from dataclasses import replace

    number, layer, ids, ln_out = piece
    template, cache, heads, uniform = state
    cap = replace(template, ln_out=ln_out, hidden_in=ln_out[:0], sources=template.sources[:0])
    return number, layer, _certify_layer(cap, ids, number, heads, cache, uniform)


def resolve_model_device(device) -> str:
    """``auto`` -> ``cuda`` when torch sees a GPU, else ``cpu``; ``cpu``, ``cuda``, ``cuda:N``
    as given; one line (OptionError) for a device that is not on this machine.
    Certification always runs on CPUs."""
    from torch_backend.models.loading import resolve_device

    return str(resolve_device(str(device or "cpu")))


def device_problem(device):
    """None when this machine can run the forward pass on ``device``, else the reason (one
    line); run on each model worker of an existing cluster before any file is written."""
    from ..kernel.errors import OptionError

    try:
        resolve_model_device(device)
    except OptionError as err:
        return str(err)
    return None


def check_corpus_model(loaded) -> None:
    """Corpus runs certify keys under LayerNorm-realisable queries, without rotary positions."""
    family = loaded.family
    has = [what for what, present in (("RMSNorm", family.norm != "layernorm"),
                                      ("rotary positions", family.rotary_path is not None)) if present]
    if has:
        raise ModelError(f"--corpus handles models with LayerNorm and no rotary positions (BERT, GPT-2, OPT); "
                         f"this {family.name} model has {' and '.join(has)}: certify its texts one at a time with --text")


def certify_corpus(loaded, tokenizer, corpus, out_dir, *, layers=None, heads=None, max_texts=None,
                   max_tokens=None, resume=False, uniform="both", progress=True, warn=None,
                   head_cache: HeadCache | None = None, workers=1, scheduler=None, config=None,
                   batch_size: int = FORWARD_BATCH, pool: bool = False, model_workers=None, device=None,
                   context=None) -> dict:
    """Certify the texts of ``corpus`` (see :mod:`lnproofs.io.corpus`) into ``out_dir``.

    Two kinds of task (:func:`lnproofs.execution.run_pipeline`): a forward task passes one
    group of ``batch_size`` texts through the model, on a worker offering the Dask resource
    ``MODEL`` (which loads the model once from its path); a certification task certifies one
    text x layer (every chosen head) from that layer's captured norm outputs, on any worker.
    ``workers`` 1 (the default) does both in this process; ``workers`` N or None (a local
    cluster for corpora of at least :data:`PARALLEL_MIN_TEXTS` texts) starts
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
    same bit for bit whatever the workers and wherever a run resumed.  Padding changes the
    order of floating-point sums, so keys can differ in their last bits from a run of the
    text alone (``batch_size=1``); the certificates are about the keys stored.

    ``pool=True``: once every text is finished, the keys of all texts are also certified
    together per layer and head (:mod:`lnproofs.models.corpus_pool`)."""
    check_corpus_model(loaded)
    import contextlib

    from tqdm import tqdm

    from ..execution import (Load, check_model_workers, open_client, resolve_model_workers, resolve_workers,
                             run_pipeline)
    from ..io.corpus import count_texts, iter_corpus
    from .extract import capture_layers

    out = Path(out_dir)
    layers = list(range(loaded.n_layers)) if layers is None else list(layers)
    heads = list(range(loaded.n_heads)) if heads is None else list(heads)
    limit = loaded.max_positions if max_tokens is None else min(int(max_tokens), loaded.max_positions)
    options = {"layers": layers, "heads": heads, "uniform": uniform, "max_tokens": limit}
    total = count_texts(corpus, max_texts=max_texts)
    if context is None:
        local = None if workers is None or scheduler is not None else resolve_workers(workers)
        model_workers = resolve_model_workers(model_workers, local, scheduler)
    device = loaded.device if device is None else device
    cache = HeadCache() if head_cache is None else head_cache
    truncated, done, kept = 0, 0, 0
    texts_of, tokens_of, parts_of = {}, {}, {}
    bar = None

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

    def on_piece(group, index, result):
        number, layer, part = result
        have = parts_of.setdefault(number, {})
        have[layer] = part
        if len(have) == len(layers):
            del parts_of[number]
            write(number, _merge_layers(number, texts_of.pop(number), tokens_of[number],
                                        [have[layer] for layer in layers]))

    def groups():
        nonlocal truncated, kept
        step = max(1, int(batch_size))
        group: list = []

        def close():
            members = list(group)
            group.clear()
            todo = sum(1 for *_, t in members if t)
            return ((members, layers), [i for _ in range(todo) for i in range(len(layers))]) if todo else None

        try:
            for number, text in iter_corpus(corpus, max_texts=max_texts):
                todo = not (resume and _finished(out / "texts" / f"text{number:05d}.json", options))
                if not todo:
                    kept += 1
                    bar.update(1)
                ids = np.asarray(tokenizer(text)["input_ids"], dtype=np.int64)
                if ids.size > limit:
                    truncated += 1 if todo else 0          # counted for the texts this run certifies
                    ids = ids[:limit]
                if ids.size < 2:
                    raise InputError(f"text {number} ({text[:40]!r}) tokenizes to {ids.size} token(s); "
                                     "each text needs at least 2 tokens")
                if todo:
                    tokens_of[number], texts_of[number] = ids, text
                group.append((number, ids, todo))
                if (number + 1) % step == 0:
                    closed = close()
                    if closed:
                        yield closed
        except InputError:
            closed = close()                            # the texts before the bad one are finished first
            if closed:
                yield closed
            raise
        closed = close()
        if closed:
            yield closed

    opened = contextlib.nullcontext(context) if context is not None else \
        open_client(workers, scheduler, worthwhile=total >= PARALLEL_MIN_TEXTS, n_tasks=total,
                    model_workers=model_workers)
    record, started = {}, False
    try:
        with opened as ctx:
            if not ctx.in_process:       # before any file is written: model workers, and their device
                check_model_workers(ctx, device_problem if ctx.scheduler else None, device)
            started = True
            (out / "texts").mkdir(parents=True, exist_ok=True)
            (out / "rows").mkdir(exist_ok=True)
            templates = capture_layers(loaded, [np.array([0, 1], dtype=np.int64)], layers)
            _write_params(out / "params.npz", templates)
            states = [(templates[layer], cache, heads, uniform) for layer in layers]
            if ctx.in_process:
                model = loaded
            elif getattr(loaded, "path", None) is None:
                model = Load(_given, loaded)      # a model object made in Python travels from here
            else:
                model = Load(_worker_model, loaded.path, loaded.dtype, device, config)
            bar = tqdm(total=total, unit="text", disable=not progress, dynamic_ncols=True)
            record = run_pipeline(_forward_group, _certify_piece, groups(), context=ctx, model=model,
                                  states=states, on_result=on_piece)
    finally:
        if bar is not None:
            bar.close()
        if truncated and warn:
            warn(f"{truncated} text(s) longer than {limit} tokens were truncated to {limit}")
        tables = {}
        if started:
            from .corpus_figures import write_figures
            from .table import write_tables
            tables = write_tables(out)
            tables["figures"] = [str(p) for p in write_figures(out)]
    if pool:
        from .corpus_pool import pool_corpus

        tables.update(pool_corpus(out, cache, templates, layers, heads, progress=progress))
    return {"texts": total, "certified": done, "kept": kept, "truncated": truncated, "model_loads": record,
            **tables}


def _finished(path: Path, options) -> bool:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return data.get("schema") == TEXT_SCHEMA and data.get("options") == options


def _write_params(path: Path, captures) -> None:
    if path.exists():
        return
    arrays = {}
    for layer, cap in captures.items():
        ln = cap.layernorm
        arrays.update({f"l{layer}_gamma": ln.gain, f"l{layer}_beta": ln.bias, f"l{layer}_eps": np.array(ln.eps),
                       f"l{layer}_W_q": cap.W_q, f"l{layer}_b_q": cap.b_q, f"l{layer}_heads": np.array(cap.n_heads)})
    tmp = path.with_name("params.tmp.npz")
    np.savez(tmp, **arrays)
    os.replace(tmp, path)


def text_file_certificates(path, data) -> list:
    """``(name, Certificate, keys)`` for every certificate of a text file (query sets put back)."""
    from ..certificates.certificate import Certificate

    params_path = Path(path).resolve().parent.parent / "params.npz"
    if not params_path.exists():
        raise ModelError(f"{path} needs {params_path.name} from the same run beside its texts folder")
    with np.load(params_path) as p:
        params = {k: p[k] for k in p.files}
    arrays_path = Path(path).resolve().parent / str(data.get("arrays", ""))
    if not arrays_path.is_file():
        raise ModelError(f"{path} needs its arrays file {arrays_path.name} beside it")
    with np.load(arrays_path) as a:
        arrays = {k: a[k] for k in a.files}
    out = []
    for layer in data["layers"]:
        out.append((f"layer{layer['layer']}/outputs", Certificate.from_json(layer["outputs"]),
                    arrays[f"ln_outputs_l{layer['layer']}"]))
    for h in data["heads"]:
        keys = arrays[f"keys_l{h['layer']}_h{h['head']}"]
        l, head = h["layer"], h["head"]
        ln = dict(h["layernorm"], query_set=layer_query_set(params, l, head, keys.shape[1]).to_json())
        out.append((f"layer{l}/head{head}/free", Certificate.from_json(h["free"]), keys))
        out.append((f"layer{l}/head{head}/layernorm", Certificate.from_json(ln), keys))
    return out
