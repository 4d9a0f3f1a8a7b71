"""A configuration's sizes checked against the weights' shapes before any model is built.

A ``config.json`` comes from whoever wrote it: ``num_hidden_layers: 1e9`` would have
transformers build a billion layers, ``num_attention_heads: 0`` divides by zero, a width
or vocabulary larger than the weights allocates what no file holds.  Before a model is
built, every size the family reads (layers, width, attention heads, key/value heads, head
dimension, vocabulary, intermediate size, positions) must be a positive integer; the layer
count must be the number of layers the weights hold (read from the tensor names); no size
may exceed every dimension of the stored tensors; the heads must divide the width (or the
head dimension be given) and the key/value heads the query heads.  The shapes come from
the safetensors headers (or the state dict), never from the tensors' data; the model is then
built on PyTorch's ``meta`` device and every tensor's shape compared
(:func:`torch_backend.models.loading.build_model`), still before any weight is allocated.
"""

from __future__ import annotations

import re

from ..kernel import ModelError, require
from .families import Family

__all__ = ["OPTIONAL_SIZES", "INTERMEDIATE_KEYS", "size_fields", "check_config_values", "weight_layers", "check_sizes"]

#: size fields a configuration may leave null (the family's default then applies)
OPTIONAL_SIZES = ("num_key_value_heads", "head_dim", "n_inner")
#: the intermediate (feed-forward) width under the names the supported families use
INTERMEDIATE_KEYS = ("intermediate_size", "n_inner", "ffn_dim")
_ACCEPT = "give the config.json saved with these weights"


def size_fields(family: Family) -> list[tuple[str, str]]:
    """``(config key, what it counts)`` for every size ``family`` reads."""
    fields = [
        (family.layers_key, "layers"),
        (family.heads_key, "attention heads"),
        (family.width_key, "the width"),
        (family.vocab_key, "the vocabulary"),
        (family.positions_key, "positions"),
    ]
    if family.kv_heads_key:
        fields.append((family.kv_heads_key, "key/value heads"))
    if family.head_dim_key:
        fields.append((family.head_dim_key, "the head dimension"))
    return fields + [(key, "the intermediate size") for key in INTERMEDIATE_KEYS]


def _positive(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def check_config_values(family: Family, data: dict, where) -> None:
    """Every size of the configuration dictionary ``data`` that is given is a positive integer."""
    for key, what in size_fields(family):
        if key not in data or (data[key] is None and key in OPTIONAL_SIZES):
            continue
        require(
            _positive(data[key]),
            ModelError,
            f"{where} has {key} {data[key]!r} ({what}); accepted: a positive integer; {_ACCEPT}",
        )


def weight_layers(family: Family, names) -> set[int]:
    """The layer indices the tensor names hold (the family's query-map path, any prefix)."""
    container = family.q_path.split("{l}")[0]
    pattern = re.compile(r"(?:^|\.)" + re.escape(container) + r"(\d+)\.")
    return {int(m.group(1)) for name in names if (m := pattern.search(name))}


def check_sizes(family: Family, config, shapes: dict, where) -> None:
    """The sizes of ``config`` (a transformers configuration) against ``shapes`` (tensor name -> shape)."""
    values = {}
    for key, what in size_fields(family):
        value = getattr(config, key, None)
        if value is None and (key in OPTIONAL_SIZES or key in INTERMEDIATE_KEYS):
            continue
        require(
            _positive(value),
            ModelError,
            f"{where} has {key} {value!r} ({what}); accepted: a positive integer; {_ACCEPT}",
        )
        values[key] = value
    require(shapes, ModelError, f"{where}: the weights hold no tensors; {_ACCEPT}")
    layers = weight_layers(family, shapes)
    n_layers = values[family.layers_key]
    exact = len(layers) == n_layers and min(layers) == 0 and max(layers) == n_layers - 1 if layers else False
    require(
        exact,
        ModelError,  # n distinct indices from 0 to n - 1: exactly 0..n-1
        f"{where} has {family.layers_key} {n_layers} but the weights hold "
        + (f"{len(layers)} layer(s) (indices {min(layers)}..{max(layers)})" if layers else "no layers")
        + f"; {_ACCEPT}",
    )
    largest = max((d for shape in shapes.values() for d in shape), default=0)
    for key, value in values.items():
        if key not in (family.layers_key, family.positions_key):
            require(
                value <= largest,
                ModelError,
                f"{where} has {key} {value}, more than any dimension of the weights (the largest is "
                f"{largest}); {_ACCEPT}",
            )
    heads, width = values[family.heads_key], values[family.width_key]
    if values.get(family.head_dim_key) is None:
        require(
            width % heads == 0,
            ModelError,
            f"{where} has {family.heads_key} {heads}, which does not divide {family.width_key} {width}; {_ACCEPT}",
        )
    kv = values.get(family.kv_heads_key) if family.kv_heads_key else None
    if kv is not None:
        require(
            heads % kv == 0,
            ModelError,
            f"{where} has {family.kv_heads_key} {kv}, which does not divide {family.heads_key} {heads}; {_ACCEPT}",
        )
