"""``lnproofs uniform KEYS [--query-...]``: a non-zero query giving every key the same score?"""

from __future__ import annotations

import json

from .query_options import add_query_set_options, describe_query_set, query_set_from_args

__all__ = ["configure", "run"]


def configure(parser) -> None:
    parser.add_argument("keys", metavar="KEYS", help="N x d keys (.npy, .npz array 'keys', .csv, .pt, .safetensors)")
    parser.add_argument("--json", action="store_true", help="print the answer as JSON")
    add_query_set_options(parser)
    from .read_limits import add_read_limit_options

    add_read_limit_options(parser)


def run(args) -> int:
    from ..certificates.keyfile import reading_of
    from ..io.arrays import read_numbers
    from ..propose.uniform import check_uniform, uniform_attention
    from .read_limits import read_limits_from_args

    # a query gives every key the same score exactly when it does for the keys times a positive
    # number: decimals are read as written, as integers times their common denominator
    keys, scale, rounded = read_numbers(
        args.keys, name="keys", ndim=2, limits=read_limits_from_args(args), as_float64=args.as_float64
    )
    query_set = query_set_from_args(args, keys.shape[1])
    result = uniform_attention(keys, query_set)
    ok, message = check_uniform(keys, result)
    if not ok:  # the exact re-check disagrees: never report an unchecked answer
        from ..propose.uniform import UniformResult

        result = UniformResult(
            "undecided", result.query_set, result.n_keys, result.dim, reason=f"the exact re-check failed: {message}"
        )
    if args.json:  # with the reading of KEYS that 'lnproofs check ANSWER.json KEYS' repeats
        reading = reading_of(scale, rounded)
        print(json.dumps(dict(result.to_json(), **({} if reading is None else {"keys_reading": reading})), indent=2))
    else:
        print(f"query set: {describe_query_set(query_set)}")
        print(result.describe())
        note = result.extras.get("eps_note")
        if note:
            print(f"  note: {note}")
    return 0
