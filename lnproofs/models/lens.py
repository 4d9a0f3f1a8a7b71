"""TransformerLens models held in Python: ``load_model(model)`` for a ``TransformerBridge``
(TransformerLens 4) or a ``HookedTransformer`` (earlier versions).

The model's ``cfg`` gives the shape (``n_layers``, ``n_heads``, ``n_key_value_heads``,
``d_head``, ``d_model``, ``n_ctx``, ``d_vocab``), the norm (``normalization_type``: LN,
LNPre, RMS, RMSPre; the ``Pre`` forms and folded models have gain 1 and bias 0), the
positions (``standard`` or ``rotary``; native TransformerLens models rotate adjacent
pairs) and the mask (``attention_dir``).  Nothing here imports torch; the forward pass
runs in :mod:`torch_backend.models.lens`.
"""

from __future__ import annotations

from pathlib import Path

from ..kernel import ModelError, require
from .families import Family

__all__ = ["is_transformer_lens", "lens_family", "from_transformer_lens"]

NORMS = {"LN": "layernorm", "LNPre": "layernorm", "RMS": "rmsnorm", "RMSPre": "rmsnorm"}
POSITIONS = {"standard": "absolute", "rotary": "rotary"}


def is_transformer_lens(model) -> bool:
    return hasattr(model, "cfg") and hasattr(model, "blocks") and hasattr(model, "run_with_cache")


def lens_family(cfg, rotary_style: str = "half") -> Family:
    """A :class:`~lnproofs.models.families.Family` row for one TransformerLens configuration."""
    norm = getattr(cfg, "normalization_type", None)
    require(
        norm in NORMS,
        ModelError,
        f"the TransformerLens model has normalization_type {norm!r}: no norm feeds "
        f"its attention in a way lnproofs handles; accepted: {', '.join(NORMS)}",
    )
    positions = getattr(cfg, "positional_embedding_type", "standard")
    require(
        positions in POSITIONS,
        ModelError,
        f"the TransformerLens model has positional_embedding_type {positions!r}, which is not handled "
        f"(its scores are not q.k or q R k); accepted: {', '.join(POSITIONS)}",
    )
    require(
        not getattr(cfg, "rotary_adjacent_pairs", False) or positions == "rotary",
        ModelError,
        "rotary_adjacent_pairs is set without rotary positions",
    )
    return Family(
        name="transformer_lens",
        model_types=(),
        model_class="TransformerBridge",
        config_class=type(cfg).__name__,
        placement="pre-norm",
        norm=NORMS[norm],
        norm_path="blocks.{l}.ln1",
        q_path="blocks.{l}.attn.W_Q",
        k_path="blocks.{l}.attn.W_K",
        qk="transformer-lens",
        positions=POSITIONS[positions],
        rotary_path=None,
        rotary_style=rotary_style,
        causal=getattr(cfg, "attention_dir", "causal") == "causal",
        layers_key="n_layers",
        heads_key="n_heads",
        kv_heads_key="n_key_value_heads",
        width_key="d_model",
        positions_key="n_ctx",
        head_dim_key="d_head",
        vocab_key="d_vocab",
    )


def from_transformer_lens(model, *, dtype: str | None = None):
    """A :class:`~lnproofs.models.loading.LoadedModel` for a TransformerLens model object."""
    from .loaded import LoadedModel

    require(
        is_transformer_lens(model),
        ModelError,
        f"{type(model).__name__} is not a TransformerLens model (no cfg/blocks/run_with_cache); give a "
        "TransformerBridge or HookedTransformer, or a model folder",
    )
    native = type(getattr(getattr(model, "original_model", None), "rotary", None)).__name__ == "NativeRotary"
    style = "interleaved" if native or getattr(model.cfg, "rotary_adjacent_pairs", False) else "half"
    family = lens_family(model.cfg, style)
    param = next(iter(model.parameters()))
    stored = str(param.dtype).replace("torch.", "")
    return LoadedModel(model, model.cfg, family, Path("transformer_lens"), stored, str(param.device), stored)
