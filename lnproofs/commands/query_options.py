"""Command-line options that choose the query set (shared by certify, uniform, attention-weight).

Default: every query in R^d.  ``--query-subspace`` and ``--query-layernorm`` exclude
each other; ``--query-ball R`` may be given alone or together with either (the query
must then also have norm at most R).
"""

from __future__ import annotations

import argparse

from ..kernel.errors import OptionError, ShapeError

__all__ = ["add_query_set_options", "query_set_from_args", "describe_query_set"]


def add_query_set_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("query set (default: every query in R^d)")
    group.add_argument(
        "--query-subspace",
        metavar="W.npy",
        default=None,
        help="queries q = W^T z for the m x d matrix W (.npy, .npz array 'W', .csv, .pt, .safetensors)",
    )
    group.add_argument(
        "--query-layernorm",
        metavar="PARAMS.npz",
        default=None,
        help="queries a layer can produce, q = W_q(gamma*u + beta) + b_q, u in the closure of the "
        "LayerNorm image; arrays gamma, beta, W_q (d x n), b_q and optional eps",
    )
    group.add_argument(
        "--query-ball",
        metavar="R",
        default=None,
        help="queries with ||q|| <= R (R > 0, a float64 as written); may be combined with the options above",
    )
    group.add_argument(
        "--box",
        metavar="B",
        default=None,
        help="queries in the box |q_l| <= B (B > 0, a float64 as written), the query set of Grivas et al.'s "
        "unargmaxable search; with or without --key-bias",
    )
    group.add_argument(
        "--key-bias",
        metavar="b.npy",
        default=None,
        help="scores q.k_j + b_j with one bias per key (a vector file: .npy, .csv, ...): free queries, "
        "or the box with --box",
    )


def query_set_from_args(args: argparse.Namespace, dim: int | None = None, n_keys: int | None = None, *, key_bias=None):
    """``None`` for free queries, else the query-set object; ``dim`` (and ``n_keys``, for a key
    bias) if given check shapes.  ``key_bias``: the bias already read (on the keys' scale), else
    ``--key-bias`` is read here, as floats."""
    from ..io.csv_numbers import option_float

    rounding = getattr(args, "as_float64", None)
    subspace = getattr(args, "query_subspace", None)
    layernorm = getattr(args, "query_layernorm", None)
    radius = option_float(getattr(args, "query_ball", None), "--query-ball", rounding)
    box = option_float(getattr(args, "box", None), "--box", rounding)
    key_bias_path = getattr(args, "key_bias", None)
    if box is not None or key_bias_path is not None:
        if subspace is not None or layernorm is not None or radius is not None:
            raise OptionError(
                "--box and --key-bias cannot be combined with --query-subspace, --query-layernorm "
                "or --query-ball; choose one query set"
            )
        from ..propose.querysets.box import load_box

        if key_bias is None:
            return load_box(box, key_bias_path, n_keys)
        if n_keys is not None and len(key_bias) != n_keys:
            raise ShapeError(
                f"key bias {key_bias_path} has {len(key_bias)} entries but there are {n_keys} keys; give one bias per key"
            )
        from ..kernel.querysets.free import BoxQuerySet

        return BoxQuerySet(box, tuple(float(b) for b in key_bias))
    if subspace is not None and layernorm is not None:
        raise OptionError("--query-subspace and --query-layernorm were both given; choose one of them")
    if radius is not None:
        from ..kernel.arrays import as_radius

        radius = as_radius(radius)
    if subspace is not None:
        from ..propose.querysets.subspace import load_subspace

        query_set = load_subspace(subspace, radius=radius)
    elif layernorm is not None:
        from ..propose.querysets.layernorm import load_layernorm

        query_set = load_layernorm(layernorm, radius=radius)
    elif radius is not None:
        from ..kernel.querysets.free import BallQuerySet

        query_set = BallQuerySet(radius)
    else:
        return None
    if dim is not None:
        query_set.validate(dim)
    return query_set


def describe_query_set(query_set) -> str:
    """A short human description, e.g. ``"q = W^T z, W 4 x 64"``."""
    if query_set is None:
        return "every query in R^d"
    kind = query_set.kind
    ball = "" if getattr(query_set, "radius", None) is None or kind == "ball" else f", ||q|| <= {query_set.radius:g}"
    if kind == "ball":
        return f"||q|| <= {query_set.radius:g}"
    if kind == "box":
        where = "every query in R^d" if query_set.bound is None else f"|q_l| <= {query_set.bound:g}"
        return where + ("" if query_set.bias is None else ", scores q.k_j + b_j (a bias per key)")
    if kind == "subspace":
        m, d = query_set.shape
        return f"q = W^T z with W {m} x {d}{ball}"
    if kind == "layernorm":
        extra = "" if query_set.eps == 0 else f" (eps = {query_set.eps:g}: closure used, an outer bound)"
        return (
            f"q = W_q(gamma*u + beta) + b_q, n = {query_set.width}, d = {query_set.dim}, "
            f"1.u = 0, ||u|| <= sqrt(n){extra}{ball}"
        )
    return kind
