"""Model families as data: where the norm feeding each attention layer sits, and how to
read ``W_q``, ``W_k``, their biases, rotary positions and head grouping.

A family is one :class:`Family` row: module paths (``{l}`` is the layer, ``{prev}`` the
layer before it), the norm's kind and gain convention, the layout of the query/key
weights, the position scheme and the names of the configuration fields.  Adding a family
is adding a row to :data:`FAMILIES`.

Query/key layouts (``qk``):

- ``"linear"``: separate ``nn.Linear`` maps ``q_path`` and ``k_path`` (weight ``out x in``);
  query head ``h`` owns rows ``h*d_head ..``, key head ``g`` rows ``g*d_head ..``;
- ``"conv1d"`` (GPT-2): one ``Conv1D`` at ``q_path`` with weight ``in x 3n``: columns
  ``0..n-1`` are queries, ``n..2n-1`` keys;
- ``"fused-per-head"`` (GPT-NeoX): one ``nn.Linear`` at ``q_path`` with ``3n`` outputs
  grouped per head as ``[q_h, k_h, v_h]`` (``d_head`` rows each).

Norms: ``"layernorm"`` (``gain * (x - mean) / sqrt(var + eps) + bias``) or ``"rmsnorm"``
(``gain * x / sqrt(mean(x^2) + eps)``), where the effective gain is ``weight`` or, for
Gemma (``gain_offset = 1``), ``1 + weight``.  Positions: ``"absolute"`` (added to the
embeddings; scores are ``q . k``) or ``"rotary"`` (queries and keys rotated by the table
the module at ``rotary_path`` returns; scores ``q R(j - i) k``).

Nothing here touches torch: the model-running side (:mod:`torch_backend.models`) reads
these paths.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..kernel import ModelError

__all__ = [
    "Family",
    "FAMILIES",
    "SUPPORTED_MODEL_TYPES",
    "ALIBI_MODEL_TYPES",
    "family_of",
    "refuse_unhandled",
    "sliding_window",
]


@dataclass(frozen=True)
class Family:
    """How one family of models lays out its attention inputs (see the module docstring)."""

    name: str
    model_types: tuple[str, ...]
    model_class: str  # transformers class of the bare model
    config_class: str  # transformers configuration class
    placement: str  # "pre-norm" or "post-norm"
    norm: str  # "layernorm" or "rmsnorm"
    norm_path: str  # module path of the norm feeding layer {l}
    q_path: str
    k_path: str = ""
    qk: str = "linear"  # "linear", "conv1d", "fused-per-head"
    first_norm_path: str | None = None  # post-norm: the norm feeding layer 0
    norm_eps_attr: str = "eps"
    gain_offset: float = 0.0  # Gemma: effective gain = 1 + weight
    positions: str = "absolute"  # "absolute" or "rotary"
    rotary_path: str | None = None
    rotary_style: str = "half"  # "half" (rotate_half) or "interleaved" (adjacent pairs)
    causal: bool = True
    layers_key: str = "num_hidden_layers"
    heads_key: str = "num_attention_heads"
    kv_heads_key: str | None = None
    width_key: str = "hidden_size"
    positions_key: str = "max_position_embeddings"
    head_dim_key: str | None = None
    vocab_key: str = "vocab_size"
    model_kwargs: tuple = ()  # extra keyword arguments of model_class(config)
    run_kwargs: tuple = (("use_cache", False),)

    # ---- configuration -------------------------------------------------------------
    def n_layers(self, config) -> int:
        return int(getattr(config, self.layers_key))

    def n_heads(self, config) -> int:
        return int(getattr(config, self.heads_key))

    def n_kv_heads(self, config) -> int:
        value = getattr(config, self.kv_heads_key, None) if self.kv_heads_key else None
        return int(value) if value else self.n_heads(config)

    def width(self, config) -> int:
        return int(getattr(config, self.width_key))

    def head_dim(self, config) -> int:
        value = getattr(config, self.head_dim_key, None) if self.head_dim_key else None
        return int(value) if value else self.width(config) // self.n_heads(config)

    def max_positions(self, config) -> int:
        return int(getattr(config, self.positions_key))

    def vocab_size(self, config) -> int:
        return int(getattr(config, self.vocab_key))

    def max_positions_name(self) -> str:
        return self.positions_key

    # ---- module paths ------------------------------------------------------------------
    def feeding_norm_name(self, layer: int) -> str:
        """Module path of the norm whose output enters layer ``layer``'s attention."""
        if layer == 0 and self.first_norm_path is not None:
            return self.first_norm_path
        return self.norm_path.format(l=layer, prev=layer - 1)

    # the LayerNorm-era name, kept for callers of the two-family version
    feeding_layernorm_name = feeding_norm_name

    def weight_paths(self, layer: int) -> tuple[str, str]:
        return self.q_path.format(l=layer), self.k_path.format(l=layer)

    def describe(self) -> dict:
        return {
            "family": self.name,
            "norm": self.norm + (" (1 + weight)" if self.gain_offset else ""),
            "placement": self.placement,
            "positions": self.positions,
            "attention": ("causal" if self.causal else "bidirectional")
            + (", grouped queries" if self.kv_heads_key else ""),
        }


BERT = Family(
    "bert",
    ("bert",),
    "BertModel",
    "BertConfig",
    "post-norm",
    "layernorm",
    norm_path="encoder.layer.{prev}.output.LayerNorm",
    first_norm_path="embeddings.LayerNorm",
    q_path="encoder.layer.{l}.attention.self.query",
    k_path="encoder.layer.{l}.attention.self.key",
    causal=False,
    model_kwargs=(("add_pooling_layer", False),),
    run_kwargs=(),
)
GPT2 = Family(
    "gpt2",
    ("gpt2",),
    "GPT2Model",
    "GPT2Config",
    "pre-norm",
    "layernorm",
    norm_path="h.{l}.ln_1",
    q_path="h.{l}.attn.c_attn",
    qk="conv1d",
    layers_key="n_layer",
    heads_key="n_head",
    width_key="n_embd",
    positions_key="n_positions",
)
GPT_NEOX = Family(
    "gpt_neox",
    ("gpt_neox",),
    "GPTNeoXModel",
    "GPTNeoXConfig",
    "pre-norm",
    "layernorm",
    norm_path="layers.{l}.input_layernorm",
    q_path="layers.{l}.attention.query_key_value",
    qk="fused-per-head",
    positions="rotary",
    rotary_path="rotary_emb",
)
OPT = Family(
    "opt",
    ("opt",),
    "OPTModel",
    "OPTConfig",
    "pre-norm",
    "layernorm",
    norm_path="decoder.layers.{l}.self_attn_layer_norm",
    q_path="decoder.layers.{l}.self_attn.q_proj",
    k_path="decoder.layers.{l}.self_attn.k_proj",
)
_LLAMA_LAYOUT = dict(
    norm_path="layers.{l}.input_layernorm",
    q_path="layers.{l}.self_attn.q_proj",
    k_path="layers.{l}.self_attn.k_proj",
    positions="rotary",
    rotary_path="rotary_emb",
    kv_heads_key="num_key_value_heads",
    head_dim_key="head_dim",
)
LLAMA = Family(
    "llama",
    ("llama",),
    "LlamaModel",
    "LlamaConfig",
    "pre-norm",
    "rmsnorm",
    norm_eps_attr="variance_epsilon",
    **_LLAMA_LAYOUT,
)
MISTRAL = Family(
    "mistral",
    ("mistral",),
    "MistralModel",
    "MistralConfig",
    "pre-norm",
    "rmsnorm",
    norm_eps_attr="variance_epsilon",
    **_LLAMA_LAYOUT,
)
QWEN2 = Family(
    "qwen2",
    ("qwen2",),
    "Qwen2Model",
    "Qwen2Config",
    "pre-norm",
    "rmsnorm",
    norm_eps_attr="variance_epsilon",
    **_LLAMA_LAYOUT,
)
GEMMA = Family(
    "gemma", ("gemma",), "GemmaModel", "GemmaConfig", "pre-norm", "rmsnorm", gain_offset=1.0, **_LLAMA_LAYOUT
)

#: family name -> Family
FAMILIES: dict[str, Family] = {f.name: f for f in (BERT, GPT2, GPT_NEOX, OPT, LLAMA, MISTRAL, QWEN2, GEMMA)}
SUPPORTED_MODEL_TYPES: tuple[str, ...] = tuple(t for f in FAMILIES.values() for t in f.model_types)

#: model types whose attention adds position biases to q.k (ALiBi): refused by name
ALIBI_MODEL_TYPES = ("bloom", "mpt", "falcon", "baichuan")


def family_of(model_type, *, where: str = "the model") -> Family:
    """The family for a config's ``model_type``, or a ModelError naming the accepted ones."""
    for family in FAMILIES.values():
        if model_type in family.model_types:
            return family
    if model_type in ALIBI_MODEL_TYPES:
        raise ModelError(
            f"{where} has model_type {model_type!r}, whose attention adds ALiBi position biases to "
            f"q.k, which is not handled; accepted model types: {', '.join(SUPPORTED_MODEL_TYPES)}"
        )
    raise ModelError(
        f"{where} has model_type {model_type!r}, which is not supported; "
        f"accepted model types: {', '.join(SUPPORTED_MODEL_TYPES)}"
    )


def refuse_unhandled(data: dict, where: str) -> None:
    """Refuse configurations whose scores are not ``q . k`` (or ``q R k``): ALiBi, relative
    position scores, post-norm OPT (no norm before layer 0)."""
    if data.get("alibi") or data.get("use_alibi") or data.get("position_embedding_type") == "alibi":
        raise ModelError(f"{where} uses ALiBi attention biases, which are not handled: its scores are not q.k alone")
    position = data.get("position_embedding_type", "absolute")
    if position not in ("absolute", "rotary", None):
        raise ModelError(
            f"{where} has position_embedding_type {position!r}: its attention scores are not q.k alone; "
            "accepted: absolute"
        )
    if data.get("model_type") == "opt" and data.get("do_layer_norm_before") is False:
        raise ModelError(
            f"{where} is a post-norm OPT (do_layer_norm_before false): layer 0's attention reads the "
            "embeddings with no norm before it, which is not handled; accepted: do_layer_norm_before true"
        )


def sliding_window(config, layer: int) -> int | None:
    """The sliding-window width of layer ``layer``'s attention, or None for full attention."""
    window = getattr(config, "sliding_window", None)
    if not window or getattr(config, "use_sliding_window", True) is False:
        return None
    types = getattr(config, "layer_types", None)
    if types is not None and layer < len(types) and types[layer] != "sliding_attention":
        return None
    return int(window)
