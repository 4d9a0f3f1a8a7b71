"""Transformers stored on disk or held in Python: loading, the norm feeding each attention
layer, per-head queries and keys, LayerNorm folding, and per-layer/head certification.

Submodules (none imports torch; the model-running parts live in :mod:`torch_backend.models`,
called inside functions):

- :mod:`.loading` -- local weights with no network (folders, safetensors, state dicts);
- :mod:`.families` -- one table row per family: where the norm and the query/key maps sit;
- :mod:`.lens` -- TransformerLens model objects;
- :mod:`.extract` -- one forward pass with hooks: norm inputs/outputs, queries, keys;
- :mod:`.rotary` -- rotary position embeddings as the models apply them;
- :mod:`.folding` -- folding a LayerNorm's gain and bias into the next linear map;
- :mod:`.head_sets` -- the queries each head can produce (LayerNorm, RMSNorm, rotary);
- :mod:`.text_heads`, :mod:`.text_causal` -- one text through every layer and head (the
  per-head code every run shares), with the causal answers of decoders;
- :mod:`.corpus_run` -- the one road: texts in groups through the model, written as they finish;
- :mod:`.corpus_pool` -- ``--pool``: the keys of all texts together, per head, on the same road;
- :mod:`.evidence` -- the one check of a head's evidence, for text, head and pooled files;
- :mod:`.text_check` -- what ``lnproofs check`` re-verifies in a text file;
- :mod:`.certify_model` -- the Python form for a few inputs, the per-layer summary, reading files back.
"""

__all__ = [
    "loading",
    "families",
    "lens",
    "extract",
    "rotary",
    "folding",
    "head_sets",
    "text_heads",
    "text_causal",
    "corpus_run",
    "corpus_pool",
    "evidence",
    "text_check",
    "certify_model",
]
