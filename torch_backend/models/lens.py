"""TransformerLens models (``TransformerBridge``, and the older ``HookedTransformer``):
the norm feeding each attention layer, its weights, and a forward pass with TL hooks.

Same three functions, same return values, as :mod:`.forward`, so
:func:`lnproofs.models.extract.capture_layers` treats both alike.  Weights are read
through TransformerLens' own views (``attn.W_Q``: heads x d_model x d_head, ``q = x W_Q + b_Q``),
so a model whose LayerNorm was folded (``enable_compatibility_mode()``, or
``fold_ln=True`` in older versions) gives gain 1 and bias 0 and the folded ``W_Q``.
"""

from __future__ import annotations

import numpy as np

from lnproofs.kernel import ModelError

from .forward import numpy_of, one_thread

__all__ = ["norm_parameters", "query_key_weights", "run_with_hooks", "rotary_table"]


def norm_parameters(family, root, layer: int) -> dict:
    ln = root.blocks[layer].ln1
    width = int(root.cfg.d_model)
    weight = getattr(ln, "w", None)
    gain = numpy_of(weight) if weight is not None else np.ones(width)
    eps = float(getattr(ln, "eps", getattr(root.cfg, "eps", 1e-5)))
    if family.norm == "layernorm":
        bias = getattr(ln, "b", None)
        return {
            "kind": "layernorm",
            "gain": gain,
            "bias": numpy_of(bias) if bias is not None else np.zeros(width),
            "eps": eps,
            "weight": gain,
        }
    return {"kind": "rmsnorm", "gain": gain, "bias": None, "eps": eps, "weight": gain}


def _rows(W, b):
    """TL's heads x d_model x d_head (and heads x d_head) as (heads*d_head) x d_model rows."""
    W = numpy_of(W)
    heads, width, d = W.shape
    rows = W.transpose(0, 2, 1).reshape(heads * d, width)
    bias = numpy_of(b).reshape(-1) if b is not None else np.zeros(heads * d)
    return rows, bias


def query_key_weights(family, root, layer: int, n_heads: int, head_dim: int):
    attn = root.blocks[layer].attn
    W_q, b_q = _rows(attn.W_Q, getattr(attn, "b_Q", None))
    W_k, b_k = _rows(attn.W_K, getattr(attn, "b_K", None))
    kv = family.n_kv_heads(root.cfg)
    if kv < n_heads and W_k.shape[0] == n_heads * head_dim:  # a view repeated to every query head
        group = n_heads // kv
        W_k = W_k.reshape(n_heads, head_dim, -1)[::group].reshape(kv * head_dim, -1)
        b_k = b_k.reshape(n_heads, head_dim)[::group].reshape(-1)
    return W_q, b_q, W_k, b_k


def rotary_table(root, length: int):
    """``(cos, sin)`` (length x r) of a rotary TransformerLens model, from the model's own buffers."""
    for owner in (getattr(root, "original_model", None), root):
        rotary = getattr(owner, "rotary", None)
        if rotary is not None and hasattr(rotary, "cos_cached"):
            return numpy_of(rotary.cos_cached[:length]), numpy_of(rotary.sin_cached[:length])
    attn = root.blocks[0].attn
    if hasattr(attn, "rotary_cos"):  # HookedTransformer (TransformerLens 3 and earlier)
        return numpy_of(attn.rotary_cos[:length]), numpy_of(attn.rotary_sin[:length])
    raise ModelError(
        "this TransformerLens model has rotary positions but no cos/sin table lnproofs can read "
        "(supported: TransformerBridge native models); certify its Hugging Face folder instead"
    )


def _hook_names(root, layer: int) -> tuple[str, str]:
    names = set(root.hook_dict) if hasattr(root, "hook_dict") else set()
    if f"blocks.{layer}.ln1.hook_in" in names:
        return f"blocks.{layer}.ln1.hook_in", f"blocks.{layer}.ln1.hook_out"
    return f"blocks.{layer}.hook_resid_pre", f"blocks.{layer}.ln1.hook_normalized"


def run_with_hooks(root, family, inputs, layers, device) -> dict:
    import torch

    seen: dict[int, list] = {layer: [] for layer in layers}
    tables = [] if family.positions == "rotary" else None
    wanted = {layer: _hook_names(root, layer) for layer in layers}
    names = {n for pair in wanted.values() for n in pair}
    with torch.no_grad(), one_thread():
        for seq in inputs:
            ids = torch.as_tensor(np.asarray(seq), dtype=torch.long).reshape(1, -1)
            _, cache = root.run_with_cache(ids, names_filter=lambda name: name in names)
            for layer, (before, after) in wanted.items():
                seen[layer].append((numpy_of(cache[before][0]), numpy_of(cache[after][0])))
            if tables is not None:
                tables.append(rotary_table(root, len(seq)))
    return {"norm": seen, "rotary": tables}
