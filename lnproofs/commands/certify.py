"""``lnproofs certify KEYS``: certify, for every key, whether some query makes it win."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from .execution_options import add_execution_options, execution_from_args
from .query_options import add_query_set_options, describe_query_set, query_set_from_args
from .read_limits import add_read_limit_options, read_limits_from_args

__all__ = ["configure", "run"]


def configure(parser) -> None:
    parser.add_argument(
        "keys",
        metavar="KEYS",
        help="N x d keys: .npy, .npz (array 'keys'), .csv, .pt or .safetensors "
        "(with --keys-from-layernorm-inputs: the N x d LayerNorm inputs)",
    )
    parser.add_argument(
        "--out",
        metavar="CERT.json",
        default=None,
        help="write the certificate here (results also go to CERT.json.partial.jsonl as they are proved)",
    )
    parser.add_argument(
        "--resume", action="store_true", help="continue an interrupted run from CERT.json.partial.jsonl (needs --out)"
    )
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar on stderr (default: for 2000 keys or more, on a terminal)",
    )
    parser.add_argument("--json", action="store_true", help="print the certificate JSON instead of a summary")
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the random directions tried first, 0 to 4294967295 (default 0)"
    )
    parser.add_argument(
        "--min-margin",
        metavar="DELTA",
        default=None,
        help="count apart the selectable keys that win only by a margin below DELTA "
        "(the score gap for a unit-norm query; DELTA >= 0)",
    )
    group = parser.add_argument_group("keys given as LayerNorm inputs")
    group.add_argument(
        "--keys-from-layernorm-inputs",
        action="store_true",
        help="KEYS are LayerNorm inputs; certify their exact outputs "
        "gain*(x-mean)/sqrt(var+eps)+bias (centring exact, scaling checked rigorously)",
    )
    group.add_argument(
        "--gain",
        metavar="G",
        default=None,
        help="LayerNorm gain: a vector file or comma-separated numbers (default: ones)",
    )
    group.add_argument(
        "--bias",
        metavar="B",
        default=None,
        help="LayerNorm bias: a vector file or comma-separated numbers (default: zeros)",
    )
    group.add_argument("--eps", metavar="EPS", default=None, help="LayerNorm eps >= 0 (default 0)")
    add_query_set_options(parser)
    add_read_limit_options(parser)
    add_execution_options(
        parser,
        automatic="this process, whole (its matrix products use every core); with --workers N or "
        "--scheduler, one task per chunk of 10000 keys, each against every key",
    )


def _is_file(text) -> bool:
    """Whether an option's value names an existing path (a list of numbers can be too long to be a name)."""
    try:
        return Path(text).exists()
    except (OSError, ValueError):
        return False


def _vector(text: str | None, name: str, limits=None, as_float64: bool = False):
    """``(values, scale)``: a vector from a file or from comma-separated numbers, the numbers as
    written times ``scale`` (:mod:`lnproofs.io.csv_numbers`); None stays ``(None, 1)``."""
    import numpy as np

    from ..io.arrays import read_numbers
    from ..io.csv_numbers import parse_number, scaled_numbers
    from ..kernel import InputError, OptionError

    if text is None:
        return None, 1
    if _is_file(text):
        values, scale, _ = read_numbers(text, name=name, ndim=None, limits=limits, as_float64=as_float64)
        return values.reshape(-1), scale
    try:
        numbers = [parse_number(v, f"--{name} value {i + 1}") for i, v in enumerate(text.split(","))]
        values, scale = scaled_numbers(numbers, f"--{name}", as_float64)
    except InputError as err:
        raise OptionError(str(err)) from None
    except ValueError:
        raise OptionError(
            f"--{name} {text[:60]!r} is neither a file nor comma-separated numbers; "
            f"give e.g. --{name} 1,1,1 or a .npy vector"
        ) from None
    return np.asarray(values, dtype=np.float64), scale


def _gain_and_bias(args, limits):
    """The LayerNorm gain and bias on one common scale (None when not given): the outputs
    ``g * u + b`` times a positive number have the same statuses."""
    from ..io.arrays import common_scale

    gain, gs = _vector(args.gain, "gain", limits, args.as_float64)
    bias, bs = _vector(args.bias, "bias", limits, args.as_float64)
    if gs == bs == 1:
        return gain, bias
    if gain is None:  # ones, on the bias's scale
        return [float(bs)] * len(bias), bias
    if bias is None:
        (gain,), _ = common_scale([(gain, gs, "--gain")])
        return gain, None
    (gain, bias), _ = common_scale([(gain, gs, "--gain"), (bias, bs, "--bias")])
    return gain, bias


def _layernorm(args, min_margin):
    from ..io.arrays import read_numbers
    from ..kernel import OptionError
    from ..propose.layernorm_inputs import certify_layernorm_outputs

    if args.resume:
        raise OptionError("--resume is not used with --keys-from-layernorm-inputs (the run is not resumable); drop it")
    if query_set_from_args(args) is not None:
        raise OptionError("--keys-from-layernorm-inputs certifies free queries; drop the --query-* options")
    limits = read_limits_from_args(args)
    inputs, scale, rounded = read_numbers(
        args.keys, name="LayerNorm inputs", ndim=2, limits=limits, as_float64=args.as_float64
    )
    eps = 0.0 if args.eps is None else args.eps
    try:
        without_eps = float(eps) == 0
    except ValueError:
        without_eps = True  # a bad eps is refused, in one line, where it is read
    if scale != 1 and not without_eps:
        raise OptionError(
            f"{args.keys} holds decimals that no float64 equals, and LayerNorm with eps > 0 changes when its "
            "inputs are scaled, so the exact reading is not supported here yet: give --as-float64 to read "
            "them as their nearest float64, or save the inputs as floats"
        )
    gain, bias = _gain_and_bias(args, limits)
    cert = certify_layernorm_outputs(inputs, gain, bias, eps, min_margin=min_margin, seed=args.seed)
    if rounded:
        cert = dataclasses.replace(cert, keys_reading={"reading": "float64"})
    if args.out:
        cert = cert.with_keys_file(args.out, args.keys)  # 'lnproofs check CERT.json' finds the inputs
        cert.save(args.out)
    return cert, None


def _check_seed(seed: int) -> None:
    from ..kernel import OptionError

    if not 0 <= seed < 2**32:
        raise OptionError(f"--seed {seed} is not accepted; give a whole number from 0 to 4294967295")


def _keys_and_bias(args):
    """``(keys, key bias or None, keys_reading)``: the keys (and the ``--key-bias`` vector) as the
    numbers written times one common scale; free-query and box statuses do not change when keys and
    biases are multiplied by the same positive number (the witness is the same query)."""
    from ..certificates.keyfile import reading_of
    from ..io.arrays import common_scale, read_numbers

    limits = read_limits_from_args(args)
    keys, scale, rounded = read_numbers(args.keys, name="keys", ndim=2, limits=limits, as_float64=args.as_float64)
    bias = None
    if args.key_bias is not None:
        bias, bias_scale, bias_rounded = read_numbers(
            args.key_bias, name="key bias", ndim=None, limits=limits, as_float64=args.as_float64
        )
        (keys, bias), scale = common_scale([(keys, scale, args.keys), (bias.reshape(-1), bias_scale, args.key_bias)])
        rounded = rounded or bias_rounded
    return keys, bias, reading_of(scale, rounded)


def run(args) -> int:
    import contextlib

    from ..certificates.writes import output_file, run_lock
    from ..propose.certification import partial_path

    if args.out is not None:  # before any work: only a regular file of ours is replaced
        inputs = [args.keys] + [v for v in (args.gain, args.bias) if v is not None and _is_file(v)]
        inputs += [
            getattr(args, n) for n in ("query_subspace", "query_layernorm", "key_bias") if getattr(args, n, None)
        ]
        output_file(args.out, inputs=inputs)
        output_file(partial_path(args.out), None, inputs=inputs)
    # one run at a time writes CERT.json and its .partial.jsonl: a second is refused in one line
    with run_lock(args.out, folder=False) if args.out is not None else contextlib.nullcontext():
        return _run(args)


def _chunks_folder(out) -> Path:
    """Where a run writing ``out`` keeps each chunk's certificate as it finishes (for ``--resume``):
    a folder beside it, or nothing there yet (a link or a file there is refused)."""
    from ..certificates.writes import folder_entry

    out = Path(out)
    return folder_entry(out.parent, out.name + ".chunks", folder=True)


def _vocabulary_road(args, keys, query_set):
    """The certificate of every key by the vocabulary engine
    (:func:`lnproofs.propose.vocab.certify_vocab_chunks`: every own key to the kernel's self filter, nudges, the
    residue to the query set's proposer), the kernel deciding every claim; with ``--out`` and
    :data:`~lnproofs.propose.vocab.CHUNK_TOKENS` keys or more, each chunk is kept under
    ``CERT.json.chunks`` until the certificate is written, so ``--resume`` continues a run."""
    import shutil

    import numpy as np

    from ..io.exact import exact_float64
    from ..kernel import InputError, OptionError, as_real_array
    from ..propose.certification import _out_of_range
    from ..propose.vocab import CHUNK_TOKENS, certify_vocab_chunks

    K = as_real_array(exact_float64(keys, "keys"), name="keys", ndim=2)
    workers, scheduler = execution_from_args(args)
    folder = _chunks_folder(args.out) if args.out is not None and len(K) >= CHUNK_TOKENS else None
    if folder is not None and not args.resume and folder.exists() and any(folder.iterdir()):
        raise OptionError(
            f"{folder} holds the chunks of an interrupted run: add --resume to continue it, or delete it to start over"
        )
    progress = (len(K) >= 2000 and sys.stderr.isatty()) if args.progress is None else args.progress
    try:
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):  # floats that overflow decide nothing
            cert = certify_vocab_chunks(
                K, query_set, workers=workers, scheduler=scheduler, seed=args.seed, progress=progress, folder=folder
            )
    except (ArithmeticError, ValueError, np.linalg.LinAlgError) as err:
        if isinstance(err, InputError):
            raise
        raise _out_of_range(K, err) from err
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
    return K, cert


def _run(args) -> int:
    from ..kernel import OptionError
    from ..propose.certification import certify, check_min_margin

    min_margin = check_min_margin(args.min_margin)
    _check_seed(args.seed)
    if args.keys_from_layernorm_inputs:
        cert, query_set = _layernorm(args, min_margin)
    else:
        for name in ("gain", "bias", "eps"):
            if getattr(args, name) is not None:
                raise OptionError(f"--{name} is only used with --keys-from-layernorm-inputs; add that flag or drop it")
        keys, bias, reading = _keys_and_bias(args)
        query_set = query_set_from_args(args, keys.shape[1], keys.shape[0], key_bias=bias)
        if args.resume and not args.out:
            raise OptionError("--resume needs --out CERT.json (the partial results live next to it)")
        if min_margin is None:  # the vocabulary engine, for every key set
            return _report(args, query_set, *_vocabulary_road(args, keys, query_set), reading)
        workers, scheduler = execution_from_args(args)
        scale = 1 if reading is None or reading["reading"] != "exact" else int(reading["scale"])
        cert = certify(
            keys,
            query_set,
            progress=args.progress,
            out=args.out,
            resume=args.resume,
            seed=args.seed,
            min_margin=min_margin * scale,  # margins of the scaled keys
            workers=workers,
            scheduler=scheduler,
        )
        if reading is not None:
            cert = dataclasses.replace(cert, keys_reading=reading)
        if args.out:  # 'lnproofs check CERT.json' finds the keys
            cert = cert.with_keys_file(args.out, args.keys)
            cert.save(args.out)
    if args.json:
        print(cert.dumps())
        return 0
    return _summary(args, query_set, cert)


def _summary(args, query_set, cert) -> int:
    """Print a certificate's summary: the query set, the counts and every key that is not selectable."""
    if query_set is not None:
        print(f"queries: {describe_query_set(query_set)}")
    print(cert.describe(limit=50))
    if args.out:
        print(f"wrote {args.out}")
    return 0


def _report(args, query_set, K, cert, reading) -> int:
    """Write the vocabulary certificate (``--out``) and print it: a summary with every key that is
    not selectable, or (``--json``) the same claims per key as a selectability certificate, which
    ``lnproofs check FILE KEYS`` reads."""
    from ..certificates.keyfile import keys_reference

    if reading is not None:
        cert = dataclasses.replace(cert, keys_reading=reading)
    if args.out:  # 'lnproofs check CERT.json' finds the keys
        cert = dataclasses.replace(cert, keys_file=keys_reference(args.out, args.keys))
        cert.save(args.out)
    if args.json:
        print(cert.selectability(K).dumps())
        return 0
    return _summary(args, query_set, cert)
