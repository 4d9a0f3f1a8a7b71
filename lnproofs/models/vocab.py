"""A language model's output layer, read from its weights: the unembedding, the output bias and
the final norm (gain, bias, eps), for every family of :mod:`lnproofs.models.families`.

The next token is the argmax of ``W_U (g o u + beta) + b_U`` over the rows of ``W_U`` (theorem
``vocab.final_norm``): ``u`` is the final norm's normalised input.  Tensors are found by name
(with or without the task head's prefix) in the weights files of a model folder, without
building the model: a tied head is the input embedding (``tie_word_embeddings``).  BERT's head
normalises ``gelu(dense(h))``: its LayerNorm ball is an outer bound of what the model produces
(stated as a caveat).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..kernel import ModelError, require
from .families import family_of, refuse_unhandled

__all__ = ["OutputLayer", "HEADS", "read_output_layer"]


@dataclass(frozen=True)
class Head:
    """Where one family keeps its output layer (candidate tensor names, first found wins)."""

    norm: tuple  # module names of the final norm (".weight" and ".bias" appended)
    head: tuple  # unembedding weights (V x d)
    embed: tuple  # input embedding (the head when tied)
    bias: tuple = ()  # output bias
    eps_attr: str = "layer_norm_eps"
    eps_default: float = 1e-5
    caveat: str | None = None


_LLAMA = Head(
    ("model.norm", "norm"),
    ("lm_head.weight",),
    ("model.embed_tokens.weight", "embed_tokens.weight"),
    eps_attr="rms_norm_eps",
    eps_default=1e-6,
)
#: family name -> where its output layer lives
HEADS = {
    "gpt2": Head(
        ("transformer.ln_f", "ln_f"),
        ("lm_head.weight",),
        ("transformer.wte.weight", "wte.weight"),
        eps_attr="layer_norm_epsilon",
    ),
    "gpt_neox": Head(
        ("gpt_neox.final_layer_norm", "final_layer_norm"),
        ("embed_out.weight",),
        ("gpt_neox.embed_in.weight", "embed_in.weight"),
    ),
    "opt": Head(
        ("model.decoder.final_layer_norm", "decoder.final_layer_norm"),
        ("lm_head.weight",),
        ("model.decoder.embed_tokens.weight", "decoder.embed_tokens.weight"),
        eps_attr="",
    ),
    "llama": _LLAMA,
    "mistral": _LLAMA,
    "qwen2": _LLAMA,
    "gemma": _LLAMA,
    "bert": Head(
        ("cls.predictions.transform.LayerNorm",),
        ("cls.predictions.decoder.weight",),
        ("bert.embeddings.word_embeddings.weight", "embeddings.word_embeddings.weight"),
        ("cls.predictions.bias", "cls.predictions.decoder.bias"),
        caveat="BERT's head normalises gelu(dense(h)): the LayerNorm ball is an outer bound of its queries, "
        "so 'not-realisable' is exact and 'selectable' is for the ball",
    ),
}


@dataclass(frozen=True)
class OutputLayer:
    """The output layer of one model: keys (the unembedding rows), bias and final norm."""

    family: str
    keys: np.ndarray
    bias: np.ndarray | None
    norm: str
    gain: np.ndarray
    beta: np.ndarray | None
    eps: float
    tied: bool
    names: dict
    caveat: str | None = None

    @property
    def vocab_size(self) -> int:
        return int(self.keys.shape[0])

    def describe(self) -> dict:
        return {
            "family": self.family,
            "vocab": self.vocab_size,
            "width": int(self.keys.shape[1]),
            "tied": self.tied,
            "output bias": self.bias is not None,
            "final norm": self.norm,
            "eps": self.eps,
            "tensors": dict(self.names),
            **({"caveat": self.caveat} if self.caveat else {}),
        }


def _tensors(files) -> dict:
    """name -> a loader of that tensor as float64 (read with torch_backend, lazily, weights only)."""
    from torch_backend.models.tensors import read_tensor, tensor_names

    return {name: (lambda f=f, name=name: read_tensor(f, name)) for name, f in tensor_names(files).items()}


def _first(tensors: dict, names) -> tuple[str | None, np.ndarray | None]:
    for name in names:
        if name in tensors:
            return name, tensors[name]()
    return None, None


def read_output_layer(path) -> OutputLayer:
    """The output layer of the model folder (or weights file beside a config) at ``path``."""
    from .loading import _weight_files, read_config

    path = Path(path)
    require(path.exists(), ModelError, f"model {path} does not exist; give a Hugging Face model folder stored locally")
    data, cfg_path = read_config(path)
    family = family_of(data.get("model_type"), where=str(cfg_path))
    refuse_unhandled(data, str(cfg_path))
    if family.name == "opt":
        proj = data.get("word_embed_proj_dim", data.get("hidden_size"))
        require(
            proj == data.get("hidden_size"),
            ModelError,
            f"{cfg_path}: word_embed_proj_dim {proj} differs from hidden_size {data.get('hidden_size')}; the "
            "projection after the final norm is not handled",
        )
    spec = HEADS[family.name]
    tensors = _tensors(_weight_files(path))
    norm_name = next((n for n in spec.norm if f"{n}.weight" in tensors), None)
    head_name, keys = _first(tensors, spec.head)
    tied = bool(data.get("tie_word_embeddings", True))
    if keys is None and tied:
        head_name, keys = _first(tensors, spec.embed)
    require(
        norm_name is not None and keys is not None,
        ModelError,
        f"{path} has no output layer: "
        + (
            f"no final norm ({spec.norm[0]})"
            if norm_name is None
            else f"no unembedding ({' or '.join(spec.head)})"
            + ("" if tied else ", and its embeddings are not tied (tie_word_embeddings is false)")
        )
        + "; save the model with its language-modelling head (e.g. AutoModelForCausalLM)",
    )
    bias_name, bias = _first(tensors, spec.bias)
    gain = tensors[f"{norm_name}.weight"]() + family.gain_offset
    beta = tensors[f"{norm_name}.bias"]() if f"{norm_name}.bias" in tensors else None
    eps = float(data.get(spec.eps_attr, spec.eps_default)) if spec.eps_attr else spec.eps_default
    require(
        keys.ndim == 2 and keys.shape[1] == gain.shape[0],
        ModelError,
        f"{path}: the unembedding {head_name} has shape {keys.shape} but the final norm has width {gain.shape[0]}",
    )
    require(
        bias is None or bias.shape == (keys.shape[0],),
        ModelError,
        f"{path}: the output bias {bias_name} has {None if bias is None else bias.size} entries but there are "
        f"{keys.shape[0]} tokens",
    )
    names = {"unembedding": head_name, "final norm": norm_name, **({"output bias": bias_name} if bias_name else {})}
    return OutputLayer(
        family.name,
        np.ascontiguousarray(keys),
        bias,
        family.norm,
        gain,
        beta,
        eps,
        head_name in spec.embed,
        names,
        spec.caveat,
    )


def token_strings(path, size: int) -> list[str]:
    """The tokenizer's string for every id (empty strings when the folder has no tokenizer)."""
    from .loading import load_tokenizer

    try:
        tokenizer = load_tokenizer(path)
    except ModelError:
        return [""] * size
    tokens = tokenizer.convert_ids_to_tokens(list(range(size)))
    return ["" if t is None else str(t) for t in tokens]


def config_of(path) -> dict:
    from .loading import read_config

    return json.loads(json.dumps(read_config(Path(path))[0]))
