"""One forward pass per input with hooks on the norms feeding attention and on the rotary
table; the weights of the query and key maps, as float64 numpy arrays.

The family tables of :mod:`lnproofs.models.families` say where everything sits; this
module walks those paths.
"""

from __future__ import annotations

import numpy as np

__all__ = ["module_at", "numpy_of", "norm_parameters", "query_key_weights", "run_with_hooks"]


def numpy_of(tensor) -> np.ndarray:
    import torch

    return tensor.detach().to("cpu", torch.float64).numpy().copy()


def module_at(root, path: str):
    """The submodule at a dotted ``path`` (numbers index module lists)."""
    module = root
    for part in path.split("."):
        module = module[int(part)] if part.isdigit() else getattr(module, part)
    return module


def norm_parameters(family, root, layer: int) -> dict:
    """``{"kind", "gain", "bias", "eps", "weight"}`` of the norm feeding ``layer`` (effective gain)."""
    norm = module_at(root, family.feeding_norm_name(layer))
    weight = numpy_of(norm.weight)
    eps = float(getattr(norm, family.norm_eps_attr))
    if family.norm == "layernorm":
        bias = numpy_of(norm.bias) if getattr(norm, "bias", None) is not None else np.zeros_like(weight)
        return {"kind": "layernorm", "gain": weight, "bias": bias, "eps": eps, "weight": weight}
    gain = weight + family.gain_offset if family.gain_offset else weight
    return {"kind": "rmsnorm", "gain": gain, "bias": None, "eps": eps, "weight": weight}


def _linear(module) -> tuple[np.ndarray, np.ndarray]:
    weight = numpy_of(module.weight)
    bias = numpy_of(module.bias) if getattr(module, "bias", None) is not None else np.zeros(weight.shape[0])
    return weight, bias


def query_key_weights(family, root, layer: int, n_heads: int, head_dim: int):
    """``(W_q, b_q, W_k, b_k)`` with ``W`` shaped ``(heads*d_head) x n`` (keys: key heads)."""
    q_path, k_path = family.weight_paths(layer)
    if family.qk == "linear":
        return (*_linear(module_at(root, q_path)), *_linear(module_at(root, k_path)))
    if family.qk == "conv1d":
        c_attn = module_at(root, q_path)
        weight, bias = numpy_of(c_attn.weight), numpy_of(c_attn.bias)  # in x 3n, 3n
        n = weight.shape[0]
        return weight[:, :n].T.copy(), bias[:n].copy(), weight[:, n:2 * n].T.copy(), bias[n:2 * n].copy()
    if family.qk == "fused-per-head":
        weight, bias = _linear(module_at(root, q_path))  # 3n x n, rows grouped per head as [q, k, v]
        w = weight.reshape(n_heads, 3, head_dim, -1)
        b = bias.reshape(n_heads, 3, head_dim)
        width = weight.shape[1]
        return (w[:, 0].reshape(-1, width).copy(), b[:, 0].reshape(-1).copy(),
                w[:, 1].reshape(-1, width).copy(), b[:, 1].reshape(-1).copy())
    raise ValueError(f"unknown query/key layout {family.qk!r}")


def run_with_hooks(root, family, inputs, layers, device, batch_size: int = 1) -> dict:
    """Run every input and record the norms feeding ``layers``; returns ``{"norm": {layer:
    [(in, out), ...]}, "rotary": [(cos, sin), ...] or None}`` with float64 arrays per input.

    ``batch_size`` inputs go through the model at a time, right-padded to the longest with
    an attention mask: every real token keeps its position and attends to the same real
    tokens as alone, and the records are cut back to each input's length.  With 1 (the
    default) each input runs alone, without padding."""
    import torch

    seen: dict[int, list] = {layer: [] for layer in layers}
    tables: list = []
    handles = []
    lengths: list[int] = []

    def split(tensor):
        """One float64 array per input of the running batch (a broadcast batch of 1 is shared)."""
        rows = numpy_of(tensor)
        return [rows[b if rows.shape[0] > 1 else 0, :length] for b, length in enumerate(lengths)]

    def norm_hook(layer):
        def hook(_mod, args, output):
            seen[layer].extend(zip(split(args[0]), split(output)))
        return hook

    def rotary_hook(_mod, _args, output):
        cos, sin = output
        tables.append(list(zip(split(cos), split(sin))))

    for layer in layers:
        handles.append(module_at(root, family.feeding_norm_name(layer)).register_forward_hook(norm_hook(layer)))
    if family.rotary_path:
        handles.append(module_at(root, family.rotary_path).register_forward_hook(rotary_hook))
    rotary: list = []
    try:
        with torch.no_grad():
            step = max(1, int(batch_size))
            for first in range(0, len(inputs), step):
                batch = [np.asarray(seq, dtype=np.int64) for seq in inputs[first:first + step]]
                lengths[:] = [len(seq) for seq in batch]
                ids = np.zeros((len(batch), max(lengths)), dtype=np.int64)
                mask = np.zeros_like(ids)
                for b, seq in enumerate(batch):
                    ids[b, :len(seq)], mask[b, :len(seq)] = seq, 1
                ids = torch.as_tensor(ids, device=device)
                kwargs = {"input_ids": ids, "attention_mask": torch.as_tensor(mask, device=device),
                          **dict(family.run_kwargs)}
                if family.name == "bert":
                    kwargs["token_type_ids"] = torch.zeros_like(ids)
                tables.clear()
                root(**kwargs)
                if tables:
                    rotary.extend(tables[0])  # one table per input (the module may be called per layer)
    finally:
        for handle in handles:
            handle.remove()
    return {"norm": seen, "rotary": rotary if family.rotary_path else None}
