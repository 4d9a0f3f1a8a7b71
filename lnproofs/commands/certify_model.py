"""``lnproofs certify-model MODEL (--corpus PATH | --text TEXT | --tokens ids.npy) [options]``.

Certifies, for every chosen layer and head of a locally stored model (BERT, GPT-2,
GPT-NeoX, OPT, Llama, Mistral, Qwen2, Gemma), which keys can win the attention argmax:
with free queries, with the queries the layer can produce (LayerNorm or RMSNorm, rotated
by RoPE at the query position), for the full-width norm outputs; for decoders each key's
causal answers; plus uniform-attention feasibility.  ``--text`` and ``--tokens`` are
repeatable (every text, every file's inputs, in order); ``--text``, ``--tokens`` and
``--corpus`` take one road (a single text is a corpus of one): per-text files, the tidy
table and the summaries in ``--out``; ``--resume`` keeps finished texts.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from ..kernel import LnproofsError, ModelError, OptionError, require
from .execution_options import add_execution_options, execution_from_args

__all__ = ["configure", "run"]


def configure(parser) -> None:
    parser.add_argument(
        "model",
        metavar="MODEL",
        help="a Hugging Face model folder, a .safetensors file or a PyTorch state dict (.bin/.pt/.pth)",
    )
    parser.add_argument(
        "--text",
        action="append",
        default=None,
        metavar="TEXT",
        help="input text (repeatable: each text is certified on its own, as a corpus of a few texts)",
    )
    parser.add_argument(
        "--corpus",
        metavar="PATH",
        default=None,
        help="a corpus: a text file (one text per line), a folder of .txt files, or a .jsonl file "
        "with a 'text' field; certified text by text into --out (table.parquet, table.csv)",
    )
    parser.add_argument("--max-texts", type=int, default=None, metavar="N", help="with --corpus: the first N texts")
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=None,
        metavar="N",
        help="with --corpus: truncate texts to N tokens (default: the model's maximum)",
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=None,
        metavar="N",
        help="with --corpus: texts per forward task (default 8); each text passes through "
        "the model alone, so its keys equal a --text run bit for bit",
    )
    parser.add_argument(
        "--tokens",
        metavar="IDS",
        action="append",
        default=None,
        help="token ids: .npy/.npz/.csv/.pt/.safetensors, 1-D (one input) or 2-D (one input per row), "
        "integers (or integer-valued floats); repeatable: the inputs of every file, in the order "
        "given",
    )
    parser.add_argument("--layers", default="all", help="'all' or comma-separated layer indices, e.g. 0,2,5")
    parser.add_argument("--heads", default="all", help="'all' or comma-separated head indices, e.g. 0,3")
    parser.add_argument(
        "--out",
        default="model-certificates",
        metavar="DIR",
        help="folder for texts/, table.parquet, table.csv, summary.md, summary.csv, summary_heads.csv",
    )
    parser.add_argument(
        "--pool",
        action="store_true",
        help="after the texts, the keys of all texts certified together per layer and head "
        "(pooled.parquet, pooled/; identical keys then tie); every family, causal answers "
        "stay per text",
    )
    parser.add_argument(
        "--tokenizer", metavar="PATH", default=None, help="tokenizer folder (default: the model folder)"
    )
    parser.add_argument(
        "--config",
        metavar="CONFIG",
        default=None,
        help="config.json for a single weights file (default: config.json beside it)",
    )
    parser.add_argument("--resume", action="store_true", help="keep the texts already finished with these options")
    parser.add_argument(
        "--head-files",
        action="store_true",
        help="also one file per head, heads/layer{L}_head{H}.json: every text's keys and evidence "
        "for that head, checkable on its own",
    )
    parser.add_argument(
        "--fold",
        action="store_true",
        help="certify the folded form (LayerNorm gain and bias folded into W_q, W_k, centred)",
    )
    parser.add_argument(
        "--uniform",
        default="both",
        choices=("both", "free", "none"),
        help="uniform attention with free and layer-realisable queries (both, default), "
        "free queries only (faster for wide layers), or none",
    )
    parser.add_argument(
        "--no-causal",
        action="store_true",
        help="decoders: skip the causal answers (each key's first stopping position)",
    )
    parser.add_argument(
        "--dtype", default="float64", help="compute dtype of the forward pass: float64 (default) or float32"
    )
    parser.add_argument(
        "--device",
        default="cpu",
        help="torch device for the forward pass: cpu (default), cuda, cuda:N or auto (a CUDA GPU "
        "when torch sees one); with --corpus on a cluster, the model workers' device "
        "(certification always runs on CPUs)",
    )
    parser.add_argument(
        "--allow-half",
        action="store_true",
        help="kept for older command lines: float16/bfloat16 weights are always widened exactly "
        "to float64, with one warning line (the certificates describe the widened model)",
    )
    parser.add_argument("--quiet", action="store_true", help="only warnings and errors on stderr")
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="a progress bar on stderr (default: when stderr is a terminal and not --quiet)",
    )
    add_execution_options(
        parser,
        automatic="with 16 texts or more, a local cluster sized to the "
        "machine: one model worker running the forward passes, the others "
        "certifying; otherwise this process",
    )
    parser.add_argument(
        "--model-workers",
        metavar="K",
        default=None,
        help="on a local cluster: K of the --workers hold the model and run the forward "
        "passes (default 1); the others only certify.  On --scheduler, the workers started "
        "with --resources MODEL=1 hold the model",
    )


def _show_progress(args) -> bool:
    """--progress / --no-progress when given; else a bar only on a terminal, and never with --quiet."""
    return args.progress if args.progress is not None else (not args.quiet and sys.stderr.isatty())


def _inputs(args, loaded) -> list:
    """``(text, ids)`` for ``--text``/``--tokens`` (lengths and ids checked against the model)."""
    from ..io.arrays import load_token_ids
    from ..models.extract import prepare_inputs
    from ..models.loading import load_tokenizer

    require(
        bool(args.text) != (args.tokens is not None),
        OptionError,
        "give exactly one of --corpus PATH, --text TEXT (repeatable) or --tokens ids.npy",
    )
    if args.text:
        tokenizer = load_tokenizer(args.model, args.tokenizer)
        inputs = prepare_inputs(loaded, texts=args.text, tokenizer=tokenizer)
        return list(zip(args.text, inputs)), tokenizer
    inputs = []
    for path in args.tokens:
        try:
            inputs += prepare_inputs(loaded, token_ids=load_token_ids(path))
        except LnproofsError as err:
            raise type(err)(f"--tokens {path}: {err}" if len(args.tokens) > 1 else str(err)) from None
    for number, ids in enumerate(inputs):
        require(len(ids) >= 2, OptionError, f"input {number} has {len(ids)} token; give at least 2 tokens per input")
    return [(None, ids) for ids in inputs], None


def _check_options(args, loaded) -> None:
    if args.corpus is not None:
        require(
            not args.text and args.tokens is None, OptionError, "give either --corpus PATH or --text/--tokens, not both"
        )
    family = loaded.family
    require(
        not args.fold or family.norm == "layernorm",
        OptionError,
        f"--fold folds a LayerNorm; this {family.name} model normalises with {family.norm}: certify it without --fold",
    )
    if args.max_texts is not None:
        require(args.max_texts >= 1, OptionError, f"--max-texts {args.max_texts} is not accepted; give a count >= 1")
    if args.max_tokens is not None:
        require(args.max_tokens >= 2, OptionError, f"--max-tokens {args.max_tokens} is not accepted; give at least 2")
    if args.batch_size is not None:
        require(args.batch_size >= 1, OptionError, f"--batch-size {args.batch_size} is not accepted; give a count >= 1")


def _model_workers(args, workers, scheduler):
    from ..execution import resolve_model_workers, resolve_workers

    if args.model_workers is None:
        return None
    local = None if scheduler is not None else resolve_workers(workers, worthwhile=True)
    return resolve_model_workers(args.model_workers, local, scheduler)


def run(args) -> int:
    from ..models.certify_model import summarize, write_summary
    from ..models.corpus_run import FORWARD_BATCH, certify_corpus
    from ..models.extract import parse_selection
    from ..models.loading import HalfPrecisionWarning, load_model, load_tokenizer

    if not Path(args.model).exists():
        raise ModelError(
            f"model {args.model} does not exist; give a Hugging Face model folder or a weights file "
            "(.safetensors, .bin, .pt, .pth) stored locally"
        )
    from ..certificates.writes import output_folder, run_lock
    from ..models.corpus_run import resolve_model_device

    output_folder(args.out, create=False)  # before any work: a folder (or nothing), never a device or a dangling link
    # on an existing cluster the model workers' device is checked there; this process reads
    # the model's shape and layer weights on the CPU
    here = "cpu" if args.scheduler is not None else resolve_model_device(args.device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", HalfPrecisionWarning)
        loaded = load_model(args.model, config=args.config, dtype=args.dtype, device=here, allow_half=True)
    for warning in caught:
        if issubclass(warning.category, HalfPrecisionWarning):
            print(f"lnproofs certify-model: warning: {warning.message}", file=sys.stderr, flush=True)
    layers = parse_selection(args.layers, loaded.n_layers, "layer")
    heads = parse_selection(args.heads, loaded.n_heads, "head")
    _check_options(args, loaded)
    workers, scheduler = execution_from_args(args)
    model_workers = _model_workers(args, workers, scheduler)
    if args.corpus is not None:
        from ..io.corpus import count_texts
        from ..models.token_bound import BoundedTokenizer

        count_texts(args.corpus, max_texts=args.max_texts)  # bad corpora fail before any work
        keep = loaded.max_positions if args.max_tokens is None else min(args.max_tokens, loaded.max_positions)
        corpus, tokenizer = args.corpus, BoundedTokenizer(load_tokenizer(args.model, args.tokenizer), keep)
    else:
        corpus, tokenizer = _inputs(args, loaded)

    def warn(message):
        print(f"lnproofs certify-model: warning: {message}", file=sys.stderr, flush=True)

    with run_lock(args.out):  # a second run on this folder is refused meanwhile
        try:
            result = certify_corpus(
                loaded,
                tokenizer,
                corpus,
                args.out,
                layers=layers,
                heads=heads,
                max_texts=args.max_texts,
                max_tokens=args.max_tokens,
                resume=args.resume,
                uniform=args.uniform,
                progress=_show_progress(args),
                warn=warn,
                workers=workers,
                scheduler=scheduler,
                config=args.config,
                batch_size=FORWARD_BATCH if args.batch_size is None else args.batch_size,
                pool=args.pool,
                causal=not args.no_causal,
                fold=args.fold,
                model_workers=model_workers,
                device=args.device,
            )
        except KeyboardInterrupt:
            print(
                f"lnproofs certify-model: interrupted; every finished text is in {args.out} "
                "(run again with --resume to go on)",
                file=sys.stderr,
                flush=True,
            )
            return 130
        layer_rows, _ = summarize(args.out)
        write_summary(args.out, layer_rows, norm=loaded.family.norm)
        if args.head_files:
            from ..models.head_files import write_head_files

            write_head_files(args.out)
        pooled = f"; pooled over {result['pooled_texts']} text(s): pooled.parquet, pooled/" if args.pool else ""
        print(
            f"{loaded.family.name} model, {result['texts']} text(s): {result['certified']} certified, "
            f"{result['kept']} kept from an earlier run; {result['rows']} table rows in {args.out}{pooled}"
        )
        if args.corpus is None:
            print((Path(args.out) / "summary.md").read_text(encoding="utf-8"), end="")
        return 0
