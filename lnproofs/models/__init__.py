"""Transformers stored on disk: loading, the LayerNorm feeding each attention layer,
per-head queries and keys, LayerNorm folding, and per-layer/head certification.

Submodules (each imports torch and transformers only inside its functions):

- :mod:`.loading` -- local weights with no network (folders, safetensors, state dicts);
- :mod:`.families` -- where the LayerNorm and the query/key maps sit in BERT and GPT-2;
- :mod:`.extract` -- one forward pass with hooks: LayerNorm inputs/outputs, queries, keys;
- :mod:`.folding` -- folding a LayerNorm's gain and bias into the next linear map;
- :mod:`.certify_model` -- certification of every chosen layer and head, with a summary.
"""

__all__ = ["loading", "families", "extract", "folding", "certify_model"]
