"""One forward pass per input with hooks on the norms feeding attention and on the rotary
table; the weights of the query and key maps, as float64 numpy arrays.

The family tables of :mod:`lnproofs.models.families` say where everything sits; this
module walks those paths.
"""

from __future__ import annotations

import contextlib

import numpy as np

__all__ = ["module_at", "numpy_of", "norm_parameters", "query_key_weights", "one_thread", "run_with_hooks"]


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
        return weight[:, :n].T.copy(), bias[:n].copy(), weight[:, n : 2 * n].T.copy(), bias[n : 2 * n].copy()
    if family.qk == "fused-per-head":
        weight, bias = _linear(module_at(root, q_path))  # 3n x n, rows grouped per head as [q, k, v]
        w = weight.reshape(n_heads, 3, head_dim, -1)
        b = bias.reshape(n_heads, 3, head_dim)
        width = weight.shape[1]
        return (
            w[:, 0].reshape(-1, width).copy(),
            b[:, 0].reshape(-1).copy(),
            w[:, 1].reshape(-1, width).copy(),
            b[:, 1].reshape(-1).copy(),
        )
    raise ValueError(f"unknown query/key layout {family.qk!r}")


@contextlib.contextmanager
def one_thread():
    """torch's intra-op threads held at 1 inside the block (restored after it).

    The forward passes that feed certificates run on one thread wherever they run: with two
    threads some of torch's CPU kernels split a product differently than with one, and a row's
    last bits then depend on how many threads the process has, that is, on the layout of the
    run (one process, or model workers holding a share of the cores; measured on a BERT layer
    in ``tests/test_corpus_layout.py``)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class _Recorded(Exception):
    """Raised by the last layer's norm hook: everything a pass is run for is recorded."""


def run_with_hooks(root, family, inputs, layers, device) -> dict:
    """Run every input and record the norms feeding ``layers``; returns ``{"norm": {layer:
    [(in, out), ...]}, "rotary": [(cos, sin), ...] or None}`` with float64 arrays per input.

    Each input goes through the model alone, unpadded: its records are the same bytes
    whatever other inputs a call holds or how a corpus is grouped.  A padded batch would
    change the shapes of the model's products, and with them the order of their sums and the
    last bits of every layer after the first (measured, ``docs/scaling.md``).  The pass stops
    once the last layer's norm is recorded (and the rotary table): nothing after it is read,
    and the rest of that layer and the layers above are a sixth of MiniLM's pass or more."""
    import torch

    seen: dict[int, list] = {layer: [] for layer in layers}
    tables: list = []
    handles = []
    last = max(layers, default=None)

    def norm_hook(layer):
        def hook(_mod, args, output):
            seen[layer].append((numpy_of(args[0])[0], numpy_of(output)[0]))
            if layer == last and (tables or not family.rotary_path):
                raise _Recorded

        return hook

    def rotary_hook(_mod, _args, output):
        cos, sin = output
        tables.append((numpy_of(cos)[0], numpy_of(sin)[0]))

    for layer in layers:
        handles.append(module_at(root, family.feeding_norm_name(layer)).register_forward_hook(norm_hook(layer)))
    if family.rotary_path:
        handles.append(module_at(root, family.rotary_path).register_forward_hook(rotary_hook))
    rotary: list = []
    try:
        with torch.no_grad(), one_thread():
            for seq in inputs:
                ids = torch.as_tensor(np.asarray(seq, dtype=np.int64).reshape(1, -1), device=device)
                kwargs = {"input_ids": ids, "attention_mask": torch.ones_like(ids), **dict(family.run_kwargs)}
                if family.name == "bert":
                    kwargs["token_type_ids"] = torch.zeros_like(ids)
                tables.clear()
                try:
                    root(**kwargs)
                except _Recorded:
                    pass
                if tables:
                    rotary.append(tables[0])  # the module may be called once per layer: the same table
    finally:
        for handle in handles:
            handle.remove()
    return {"norm": seen, "rotary": rotary if family.rotary_path else None}
