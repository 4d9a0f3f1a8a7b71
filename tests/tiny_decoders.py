"""Tiny random decoders of every supported family, built from configs (no download).

Width 16, 2 layers, 4 query heads; the Llama-layout families use 2 key heads (grouped
queries) and head dimension 4 (partial rotation for GPT-NeoX: 2 of 4 dimensions).
"""

import numpy as np

FAMILY_CONFIGS = {
    "gpt_neox": (
        "GPTNeoXConfig",
        "GPTNeoXModel",
        dict(rope_parameters={"rope_theta": 10000.0, "partial_rotary_factor": 0.5, "rope_type": "default"}),
    ),
    "opt": ("OPTConfig", "OPTModel", dict(ffn_dim=32, word_embed_proj_dim=16, enable_bias=True)),
    "llama": ("LlamaConfig", "LlamaModel", dict(num_key_value_heads=2, head_dim=4, attention_bias=True)),
    "mistral": ("MistralConfig", "MistralModel", dict(num_key_value_heads=2, head_dim=4, sliding_window=64)),
    "qwen2": ("Qwen2Config", "Qwen2Model", dict(num_key_value_heads=2)),
    "gemma": ("GemmaConfig", "GemmaModel", dict(num_key_value_heads=2, head_dim=4)),
}
DECODER_FAMILIES = tuple(FAMILY_CONFIGS)


def tiny_decoder(family, folder=None, *, layers=2, heads=4, width=16, positions=32, seed=0, dtype=None, **overrides):
    """A random model of ``family`` (float32), saved with save_pretrained into ``folder`` when given."""
    import torch
    import transformers

    config_name, model_name, extra = FAMILY_CONFIGS[family]
    torch.manual_seed(seed)
    common = dict(
        vocab_size=40,
        hidden_size=width,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=2 * width,
        max_position_embeddings=positions,
        pad_token_id=None,
        bos_token_id=0,
        eos_token_id=0,
    )
    if family == "opt":
        common.pop("intermediate_size")
    config = getattr(transformers, config_name)(**{**common, **extra, **overrides})
    config._attn_implementation = "eager"
    model = getattr(transformers, model_name)(config).eval()
    with torch.no_grad():
        for name, module in model.named_modules():
            weight = getattr(module, "weight", None)
            if "norm" in type(module).__name__.lower() and weight is not None and weight.ndim == 1:
                if family == "gemma":
                    weight.uniform_(-0.5, 0.5)  # the gain is 1 + weight
                else:
                    weight.uniform_(0.5, 1.5)
                if getattr(module, "bias", None) is not None:
                    module.bias.normal_(0.0, 0.1)
            bias = getattr(module, "bias", None)
            if isinstance(module, torch.nn.Linear) and bias is not None:
                bias.normal_(0.0, 0.2)
    if dtype is not None:
        model = model.to(getattr(torch, dtype))
    if folder is not None:
        model.save_pretrained(str(folder))
    return model


def attention_probabilities(capture, head, rows):
    """Softmax of the scaled scores of the extracted (rotated) queries and keys, causally masked."""
    q = capture.rotated_queries(head)[rows]
    k = capture.rotated_keys(head)[rows]
    scores = q @ k.T / np.sqrt(capture.head_dim)
    T = len(rows)
    scores = np.where(np.tril(np.ones((T, T), dtype=bool)), scores, -np.inf)
    scores -= scores.max(axis=1, keepdims=True)
    p = np.exp(scores)
    return p / p.sum(axis=1, keepdims=True)
