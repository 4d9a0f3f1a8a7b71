"""``lnproofs certify KEYS``: certify, for every key, whether some query makes it win."""

from __future__ import annotations

import argparse
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
        automatic="for 20000 keys or more, a local cluster sized to the machine, one "
        "task per chunk of 10000 keys; smaller key sets always run in this process",
    )


def _is_file(text) -> bool:
    """Whether an option's value names an existing path (a list of numbers can be too long to be a name)."""
    try:
        return Path(text).exists()
    except (OSError, ValueError):
        return False


def _vector(text: str | None, name: str, limits=None):
    """A vector from a file or from comma-separated numbers, each exactly a float64 (None stays None)."""
    from ..io.arrays import load_array
    from ..io.csv_numbers import exact_number
    from ..kernel import FileFormatError, OptionError

    if text is None:
        return None
    if _is_file(text):
        return load_array(text, name=name, ndim=None, limits=limits).reshape(-1)
    try:
        return [exact_number(v, f"--{name} value {i + 1}") for i, v in enumerate(text.split(","))]
    except FileFormatError as err:
        raise OptionError(str(err)) from None
    except ValueError:
        raise OptionError(
            f"--{name} {text!r} is neither a file nor comma-separated numbers; "
            "give e.g. --{name} 1,1,1 or a .npy vector"
        ) from None


def _layernorm(args, min_margin):
    from ..io.arrays import load_array
    from ..kernel import OptionError
    from ..propose.layernorm_inputs import certify_layernorm_outputs

    if args.resume:
        raise OptionError("--resume is not used with --keys-from-layernorm-inputs (the run is not resumable); drop it")
    if query_set_from_args(args) is not None:
        raise OptionError("--keys-from-layernorm-inputs certifies free queries; drop the --query-* options")
    limits = read_limits_from_args(args)
    inputs = load_array(args.keys, name="LayerNorm inputs", ndim=2, limits=limits)
    eps = 0.0 if args.eps is None else args.eps
    cert = certify_layernorm_outputs(
        inputs,
        _vector(args.gain, "gain", limits),
        _vector(args.bias, "bias", limits),
        eps,
        min_margin=min_margin,
        seed=args.seed,
    )
    if args.out:
        cert = cert.with_keys_file(args.out, args.keys)  # 'lnproofs check CERT.json' finds the inputs
        cert.save(args.out)
    return cert, None


def _check_seed(seed: int) -> None:
    from ..kernel import OptionError

    if not 0 <= seed < 2**32:
        raise OptionError(f"--seed {seed} is not accepted; give a whole number from 0 to 4294967295")


def run(args) -> int:
    from ..io.arrays import load_array
    from ..kernel import OptionError
    from ..propose.certification import certify, check_min_margin

    min_margin = check_min_margin(args.min_margin)
    _check_seed(args.seed)
    if args.out is not None:  # before any work: only a regular file of ours is replaced
        from ..certificates.writes import output_file
        from ..propose.certification import partial_path

        inputs = [args.keys] + [v for v in (args.gain, args.bias) if v is not None and _is_file(v)]
        inputs += [getattr(args, n) for n in ("query_subspace", "query_layernorm") if getattr(args, n, None)]
        output_file(args.out, inputs=inputs)
        output_file(partial_path(args.out), None, inputs=inputs)
    if args.keys_from_layernorm_inputs:
        cert, query_set = _layernorm(args, min_margin)
    else:
        for name in ("gain", "bias", "eps"):
            if getattr(args, name) is not None:
                raise OptionError(f"--{name} is only used with --keys-from-layernorm-inputs; add that flag or drop it")
        keys = load_array(args.keys, name="keys", ndim=2, limits=read_limits_from_args(args))
        query_set = query_set_from_args(args, keys.shape[1], keys.shape[0])
        if args.resume and not args.out:
            raise OptionError("--resume needs --out CERT.json (the partial results live next to it)")
        workers, scheduler = execution_from_args(args)
        cert = certify(
            keys,
            query_set,
            progress=args.progress,
            out=args.out,
            resume=args.resume,
            seed=args.seed,
            min_margin=min_margin,
            workers=workers,
            scheduler=scheduler,
        )
        if args.out:  # 'lnproofs check CERT.json' finds the keys
            cert = cert.with_keys_file(args.out, args.keys)
            cert.save(args.out)
    if args.json:
        print(cert.dumps())
    else:
        if query_set is not None:
            print(f"queries: {describe_query_set(query_set)}")
        print(cert.describe(limit=50))
        if args.out:
            print(f"wrote {args.out}")
    return 0
