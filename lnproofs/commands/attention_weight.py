"""``lnproofs attention-weight KEYS --target i (--max-weight --query-ball R | --min-norm --weight TAU)``."""

from __future__ import annotations

import json

from .query_options import add_query_set_options, describe_query_set, query_set_from_args

__all__ = ["configure", "run"]


def configure(parser) -> None:
    parser.add_argument("keys", metavar="KEYS", help="N x d keys (.npy, .npz array 'keys', .csv, .pt, .safetensors)")
    parser.add_argument("--target", type=int, required=True, metavar="I", help="index of the key (0-based)")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument(
        "--max-weight",
        action="store_true",
        help="the largest softmax weight key I can get (needs a bounded set, e.g. --query-ball R)",
    )
    mode.add_argument(
        "--min-norm", action="store_true", help="the smallest ||q|| that gives key I weight at least --weight TAU"
    )
    parser.add_argument("--weight", type=float, default=None, metavar="TAU", help="required weight, 0 < TAU < 1")
    scale = parser.add_mutually_exclusive_group()
    scale.add_argument("--temperature", type=float, default=None, metavar="T", help="softmax(q.k / T)")
    scale.add_argument("--scaled", action="store_true", help="softmax(q.k / sqrt(d)), as in attention")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    add_query_set_options(parser)
    from .read_limits import add_read_limit_options

    add_read_limit_options(parser)


def run(args) -> int:
    from ..io.arrays import load_array
    from ..kernel import OptionError
    from ..propose.softmax import max_weight, min_norm
    from .read_limits import read_limits_from_args

    limits = read_limits_from_args(args)  # softmax weights change with the keys' scale: floats as written
    keys = load_array(args.keys, name="keys", ndim=2, limits=limits, as_float64=args.as_float64)
    n, d = keys.shape
    if not 0 <= args.target < n:
        raise OptionError(f"--target {args.target} is out of range; the keys are numbered 0..{n - 1}")
    query_set = query_set_from_args(args, d)
    if args.min_norm:
        if args.weight is None:
            raise OptionError("--min-norm needs --weight TAU with 0 < TAU < 1")
        result = min_norm(keys, args.target, args.weight, query_set, temperature=args.temperature, scaled=args.scaled)
    else:
        if args.weight is not None:
            raise OptionError("--weight is used with --min-norm; --max-weight takes no --weight")
        result = max_weight(keys, args.target, query_set, temperature=args.temperature, scaled=args.scaled)
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(f"query set: {describe_query_set(query_set)}")
        print(result.describe())
    return 0
