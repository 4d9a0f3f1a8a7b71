"""One forward pass with hooks: what enters each attention layer, head by head.

For every chosen layer ``l`` this records, over all tokens of all inputs (rows):

- the norm feeding the attention: a LayerNorm (gain, bias, eps, convention ``"torch"``:
  ``y = gain * (x - mean(x)) / sqrt(var(x) + eps) + bias`` with the biased variance) or an
  RMSNorm (``y = gain * x / sqrt(mean(x^2) + eps)``, gain ``1 + weight`` for Gemma);
- the hidden states entering that norm and its outputs (forward hooks on the norm);
- the query and key maps of every head: ``q = W_q y + b_q`` and ``k = W_k y + b_k`` for the
  head's ``d_head`` rows (with grouped queries, query head ``h`` reads key head
  ``h // (n_heads / n_kv_heads)``);
- with rotary positions, the model's own cos/sin table at every row's position.

Scores are ``q . k / sqrt(d_head)`` (rotated queries and keys with RoPE); the scale does
not change which key wins.  The forward pass itself runs in :mod:`torch_backend.models`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ..kernel import ModelError, ShapeError, as_real_array, require
from .row_products import row_products

__all__ = ["LayerNormParams", "RMSNormParams", "LayerCapture", "parse_selection", "prepare_inputs", "capture_layers"]


@dataclass(frozen=True)
class LayerNormParams:
    """A LayerNorm: ``gain * (x - mean) / sqrt(var + eps) + bias`` (biased variance)."""

    gain: np.ndarray
    bias: np.ndarray
    eps: float
    convention: str = "torch"

    @property
    def width(self) -> int:
        return int(self.gain.shape[0])

    def apply(self, x: np.ndarray) -> np.ndarray:
        """The LayerNorm of the rows of ``x`` (float64)."""
        x = np.asarray(x, dtype=np.float64)
        centred = x - x.mean(axis=-1, keepdims=True)
        var = (centred * centred).mean(axis=-1, keepdims=True)
        return centred / np.sqrt(var + self.eps) * self.gain + self.bias

    def to_json(self) -> dict:
        return {
            "gain": self.gain.tolist(),
            "bias": self.bias.tolist(),
            "eps": float(self.eps),
            "convention": self.convention,
        }


@dataclass(frozen=True)
class RMSNormParams:
    """An RMSNorm: ``gain * x / sqrt(mean(x^2) + eps)``; ``convention`` ``"gemma"`` means the
    module stores ``weight = gain - 1`` (``gain`` here is already ``1 + weight``)."""

    gain: np.ndarray
    eps: float
    convention: str = "llama"
    kind = "rmsnorm"

    @property
    def width(self) -> int:
        return int(self.gain.shape[0])

    @property
    def bias(self) -> np.ndarray:
        return np.zeros_like(self.gain)

    def apply(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + self.eps) * self.gain

    def to_json(self) -> dict:
        return {"kind": "rmsnorm", "gain": self.gain.tolist(), "eps": float(self.eps), "convention": self.convention}


@dataclass(frozen=True)
class LayerCapture:
    """What one attention layer sees, for every token row of the inputs."""

    layer: int
    layernorm_module: str
    layernorm: LayerNormParams
    hidden_in: np.ndarray  # N x n: entering the LayerNorm
    ln_out: np.ndarray  # N x n: leaving it (the attention input)
    W_q: np.ndarray  # (heads*d_head) x n
    b_q: np.ndarray
    W_k: np.ndarray
    b_k: np.ndarray
    n_heads: int
    sources: np.ndarray  # N x 3 integers: input index, position, token id
    n_kv_heads: int | None = None  # grouped-query attention: key heads (None: one per query head)
    rotary_cos: np.ndarray | None = None  # N x r: the model's table at each row's position
    rotary_sin: np.ndarray | None = None
    causal: bool = False
    sliding_window: int | None = None
    rotary_style: str = "half"
    #: N x (key heads * d_head): every key head's keys, when computed with the rows (by the forward
    #: task, for all texts of a group at once: the same bytes, each row a function of its own row)
    key_rows: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def head_dim(self) -> int:
        return self.W_q.shape[0] // self.n_heads

    @property
    def norm_kind(self) -> str:
        return getattr(self.layernorm, "kind", "layernorm")

    @property
    def key_heads(self) -> int:
        return self.n_kv_heads or self.n_heads

    def key_head(self, head: int) -> int:
        """The key head query head ``head`` reads (grouped-query attention)."""
        return head // (self.n_heads // self.key_heads)

    @property
    def rotary(self) -> bool:
        return self.rotary_cos is not None

    def rows(self, head: int) -> slice:
        require(
            0 <= head < self.n_heads,
            ModelError,
            f"head {head} is out of range; this layer has {self.n_heads} heads: accepted 0..{self.n_heads - 1}",
        )
        return slice(head * self.head_dim, (head + 1) * self.head_dim)

    def of_input(self, number: int) -> LayerCapture:
        """The rows of input ``number`` alone (renumbered as input 0)."""
        from dataclasses import replace

        rows = self.sources[:, 0] == number
        sources = self.sources[rows].copy()
        sources[:, 0] = 0
        cut = lambda a: None if a is None else a[rows]
        return replace(
            self,
            hidden_in=self.hidden_in[rows],
            ln_out=self.ln_out[rows],
            sources=sources,
            rotary_cos=cut(self.rotary_cos),
            rotary_sin=cut(self.rotary_sin),
            key_rows=cut(self.key_rows),
        )

    def head_weights(self, head: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(W_q, b_q, W_k, b_k)`` of one head, ``W`` shaped ``d_head x n``."""
        r = self.rows(head)
        g = self.key_head(head)
        kr = slice(g * self.head_dim, (g + 1) * self.head_dim)
        return self.W_q[r], self.b_q[r], self.W_k[kr], self.b_k[kr]

    def queries(self, head: int) -> np.ndarray:
        """``W_q y + b_q`` of every row: each row a function of its norm output alone
        (:func:`~lnproofs.models.row_products.row_products`), whatever the other rows."""
        W, b, _, _ = self.head_weights(head)
        return row_products(self.ln_out, W, b)

    @cached_property
    def _all_keys(self) -> np.ndarray:
        """The keys of every key head at once (:attr:`key_rows` when given, else
        :meth:`key_rows_now`, computed once per capture)."""
        return self.key_rows if self.key_rows is not None else self.key_rows_now()

    def key_rows_now(self, slices=None) -> np.ndarray:
        """The keys of every key head, computed now: each entry depends on its row of ``ln_out``
        and its row of ``W_k`` alone, so these are the bytes a head's own product would give.
        (Not through the cached property: before Python 3.12 its lock is one per class, and a
        forward thread computing a group's keys would hold every capture's property.)  ``slices``:
        :func:`~.row_products.weight_slices` of ``W_k``, made for an earlier capture."""
        return row_products(self.ln_out, self.W_k, self.b_k, slices=slices)

    def keys(self, head: int) -> np.ndarray:
        """``W_k y + b_k`` of every row, row by row as :meth:`queries` (every key head's keys
        are computed once per capture)."""
        self.rows(head)
        g = self.key_head(head)
        return np.ascontiguousarray(self._all_keys[:, g * self.head_dim : (g + 1) * self.head_dim])

    def rotated_queries(self, head: int) -> np.ndarray:
        """Queries as the scores use them: rotated by each row's position with RoPE."""
        from .rotary import rotate

        q = self.queries(head)
        return rotate(q, self.rotary_cos, self.rotary_sin, self.rotary_style) if self.rotary else q

    def rotated_keys(self, head: int) -> np.ndarray:
        """Keys as the scores use them: rotated by each row's position with RoPE."""
        from .rotary import rotate

        k = self.keys(head)
        return rotate(k, self.rotary_cos, self.rotary_sin, self.rotary_style) if self.rotary else k


def parse_selection(text, count: int, what: str) -> list[int]:
    """``"all"`` or ``"0,2,5"`` -> sorted distinct indices in ``0..count-1`` (ModelError otherwise)."""
    accepted = f"accepted: all, or comma-separated {what}s in 0..{count - 1}"
    if text is None or str(text).strip().lower() == "all":
        return list(range(count))
    picked = []
    for part in str(text).split(","):
        part = part.strip()
        try:
            value = int(part)
        except ValueError:
            raise ModelError(f"{what} {part!r} is not an integer; {accepted}") from None
        require(
            0 <= value < count,
            ModelError,
            f"{what} {value} is out of range; the model has {count} {what}s ({accepted})",
        )
        picked.append(value)
    require(picked, ModelError, f"no {what} given; {accepted}")
    return sorted(set(picked))


def prepare_inputs(loaded, *, texts=None, token_ids=None, tokenizer=None) -> list[np.ndarray]:
    """Token id sequences to run: from ``texts`` (through ``tokenizer``) or ``token_ids``
    (1-D: one input, 2-D: one input per row).  Lengths and ids are checked against the model."""
    family, config = loaded.family, loaded.config
    limit, vocab = loaded.max_positions, family.vocab_size(config)
    sequences: list[np.ndarray] = []
    if texts:
        for text in texts:
            ids = tokenizer(text)["input_ids"]
            sequences.append(np.asarray(ids, dtype=np.int64))
    if token_ids is not None:
        arr = as_real_array(token_ids, name="token ids")
        require(
            arr.ndim in (1, 2),
            ShapeError,
            f"token ids have shape {arr.shape}; give a 1-D array (one input) or a 2-D array (one input per row)",
        )
        require(np.all(arr == np.round(arr)), ModelError, "token ids must be integers")
        arr = arr.astype(np.int64)
        sequences.extend(arr.reshape(1, -1) if arr.ndim == 1 else list(arr))
    require(sequences, ModelError, "no input given; give --text TEXT or --tokens ids.npy")
    for number, seq in enumerate(sequences):
        require(seq.size > 0, ModelError, f"input {number} has no tokens; give non-empty text or ids")
        require(
            seq.size <= limit,
            ModelError,
            f"input {number} has {seq.size} tokens but the model accepts at most {limit} "
            f"({family.max_positions_name()}); shorten the text to {limit} tokens or fewer",
        )
        bad = seq[(seq < 0) | (seq >= vocab)]
        require(
            bad.size == 0,
            ModelError,
            f"input {number} holds token id {int(bad[0]) if bad.size else 0}; accepted ids: 0..{vocab - 1}",
        )
    return sequences


def _norm_params(raw: dict, family):
    if raw["bias"] is None:  # an RMSNorm (a LayerNorm without a bias has zeros)
        return RMSNormParams(raw["gain"], raw["eps"], "gemma" if family.gain_offset else "llama")
    return LayerNormParams(raw["gain"], raw["bias"], raw["eps"])


def capture_layers(loaded, inputs: list[np.ndarray], layers: list[int]) -> dict[int, LayerCapture]:
    """Run every input once and record ``layers`` (see module docstring).  Each input runs
    alone, unpadded (:func:`torch_backend.models.forward.run_with_hooks`), so its rows are
    the same bytes in any call; with the row-by-row keys and queries of :class:`LayerCapture`
    the same holds for them (``docs/scaling.md``, *The same input, the same key*)."""
    from .families import sliding_window

    family, module = loaded.family, loaded.module
    if family.name == "transformer_lens":
        from torch_backend.models.lens import norm_parameters, query_key_weights, run_with_hooks
    else:
        from torch_backend.models.forward import norm_parameters, query_key_weights, run_with_hooks
    for layer in layers:
        require(
            0 <= layer < loaded.n_layers,
            ModelError,
            f"layer {layer} is out of range; the model has {loaded.n_layers} layers: accepted 0..{loaded.n_layers - 1}",
        )
        window = sliding_window(loaded.config, layer)
        longest = max(len(seq) for seq in inputs)
        require(
            window is None or longest <= window,
            ModelError,
            f"layer {layer} uses sliding-window attention (window {window}) and an input has {longest} tokens; "
            f"sliding windows are not handled: give inputs of at most {window} tokens",
        )
    seen = run_with_hooks(module, family, inputs, layers, loaded.device)
    sources = [
        np.stack([np.full(len(seq), number), np.arange(len(seq)), np.asarray(seq)], axis=1)
        for number, seq in enumerate(inputs)
    ]
    source_table = np.concatenate(sources).astype(np.int64)
    cos = sin = None
    if seen["rotary"] is not None:
        cos = np.concatenate([c for c, _ in seen["rotary"]])
        sin = np.concatenate([s for _, s in seen["rotary"]])
    captures = {}
    for layer in layers:
        params = _norm_params(norm_parameters(family, module, layer), family)
        W_q, b_q, W_k, b_k = query_key_weights(family, module, layer, loaded.n_heads, loaded.head_dim)
        captures[layer] = LayerCapture(
            layer=layer,
            layernorm_module=family.feeding_norm_name(layer),
            layernorm=params,
            hidden_in=np.concatenate([a for a, _ in seen["norm"][layer]]),
            ln_out=np.concatenate([b for _, b in seen["norm"][layer]]),
            W_q=W_q,
            b_q=b_q,
            W_k=W_k,
            b_k=b_k,
            n_heads=loaded.n_heads,
            sources=source_table,
            n_kv_heads=loaded.n_kv_heads,
            rotary_cos=cos,
            rotary_sin=sin,
            causal=family.causal,
            sliding_window=sliding_window(loaded.config, layer),
            rotary_style=family.rotary_style,
        )
    return captures
