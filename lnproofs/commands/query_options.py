"""Command-line options that choose the query set (shared by certify, uniform, attention-weight).

Default: every query in R^d.  ``--query-subspace`` and ``--query-layernorm`` exclude
each other; ``--query-ball R`` may be given alone or together with either (the query
must then also have norm at most R).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from ..kernel import (
    BallQuerySet,
    BoxQuerySet,
    FreeQueries,
    LayerNormQuerySet,
    OptionError,
    RMSNormQuerySet,
    RotaryLayerNormQuerySet,
    ShapeError,
    SubspaceQuerySet,
)

__all__ = ["OPTIONS", "KindOption", "add_query_set_options", "query_set_from_args", "describe_query_set"]


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
        return BoxQuerySet(box, tuple(float(b) for b in key_bias))
    if subspace is not None and layernorm is not None:
        raise OptionError("--query-subspace and --query-layernorm were both given; choose one of them")
    if radius is not None:
        from ..kernel import as_radius

        radius = as_radius(radius)
    if subspace is not None:
        from ..propose.querysets.subspace import load_subspace

        query_set = load_subspace(subspace, radius=radius)
    elif layernorm is not None:
        from ..propose.querysets.layernorm import load_layernorm

        query_set = load_layernorm(layernorm, radius=radius)
    elif radius is not None:
        query_set = BallQuerySet(radius)
    else:
        return None
    if dim is not None:
        query_set.validate(dim)
    return query_set


def _ball(query_set) -> str:
    radius = getattr(query_set, "radius", None)
    return "" if radius is None else f", ||q|| <= {radius:g}"


def _box(query_set) -> str:
    where = "every query in R^d" if query_set.bound is None else f"|q_l| <= {query_set.bound:g}"
    return where + ("" if query_set.bias is None else ", scores q.k_j + b_j (a bias per key)")


def _norm(query_set) -> str:
    extra = "" if query_set.eps == 0 else f" (eps = {query_set.eps:g}: closure used, an outer bound)"
    centred = "1.u = 0, " if query_set.centred else ""
    rotated = "" if getattr(query_set, "rotation", None) is None else "R "
    return (
        f"q = {rotated}W_q(g*u + beta) + b_q, n = {query_set.width}, d = {query_set.dim}, "
        f"{centred}||u|| <= sqrt(n){extra}{_ball(query_set)}"
    )


@dataclass(frozen=True)
class KindOption:
    """A query-set kind on the command line: the option that chooses it (None: none does, and
    ``source`` says where its sets come from) and its short description for people."""

    flag: str | None
    describe: Callable
    source: str = ""


#: each kernel kind -> its command-line option: the one line a new kind adds in this layer
OPTIONS = {
    FreeQueries: KindOption(None, lambda qs: "every query in R^d", "the default"),
    BallQuerySet: KindOption("--query-ball", lambda qs: f"||q|| <= {qs.radius:g}"),
    BoxQuerySet: KindOption("--box", _box),
    SubspaceQuerySet: KindOption(
        "--query-subspace", lambda qs: f"q = W^T z with W {qs.shape[0]} x {qs.shape[1]}{_ball(qs)}"
    ),
    LayerNormQuerySet: KindOption("--query-layernorm", _norm),
    RMSNormQuerySet: KindOption(None, _norm, "certify-model and certify-vocab make it from a model's layers"),
    RotaryLayerNormQuerySet: KindOption(None, _norm, "certify-model makes it from a model's layers"),
}


def describe_query_set(query_set) -> str:
    """A short human description, e.g. ``"q = W^T z with W 4 x 64"``."""
    return OPTIONS[FreeQueries if query_set is None else type(query_set)].describe(query_set)
