"""A language model's output layer, read from its weights: the unembedding, the output bias, the
final norm (gain, bias, eps) and the final logits' soft cap, for every family of :data:`HEADS`.

The next token is the argmax of ``W_U (g o u + beta) + b_U`` over the rows of ``W_U`` (theorem
``vocab.final_norm``): ``u`` is the final norm's normalised input.  Tensors are found by name
(with or without the task head's prefix) in the weights files of a model folder, without
building the model: a tied head is the input embedding (``tie_word_embeddings``).  The family is
the config's ``model_type``; its ``architectures``, when given, must name a model whose output is
the language-modelling head (a classification head is refused).  Gemma-2 caps its logits,
``z -> c tanh(z / c)``: a strictly increasing map, which changes no argmax (theorem
``vocab.soft_cap``), so the cap is recorded and the certificates are those of the logits.  BERT's
head normalises ``gelu(dense(h))``: its LayerNorm ball is an outer bound of what the model
produces (stated as a caveat).

The unembedding is read in chunks of rows (:func:`unembedding_rows`; from safetensors, sharded or
not, only those rows' bytes), each widened into the float64 keys in place, so reading it holds the
keys once and one chunk's rows as stored.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..kernel import ModelError, OptionError, require
from .families import family_of, refuse_unhandled

__all__ = ["OutputLayer", "HEADS", "CHUNK_BYTES", "read_output_layer", "unembedding_rows"]

#: the float64 bytes of one chunk of unembedding rows read at a time (64 MiB)
CHUNK_BYTES = 1 << 26


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
    final: tuple | None = None  # (norm kind, gain offset) of a family only read here, not in families.py
    softcap_attr: str = ""  # the config field of the final logits' soft cap c (z -> c tanh(z / c))


_LLAMA = Head(
    ("model.norm", "norm"),
    ("lm_head.weight",),
    ("model.embed_tokens.weight", "embed_tokens.weight"),
    eps_attr="rms_norm_eps",
    eps_default=1e-6,
)
#: family name (the config's model_type) -> where its output layer lives
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
    "llama": _LLAMA,  # Llama 2 and 3 (3.2's small models tie their head)
    "mistral": _LLAMA,
    "qwen2": _LLAMA,  # Qwen2 and Qwen2.5
    "gemma": _LLAMA,
    "gemma2": replace(_LLAMA, final=("rmsnorm", 1.0), softcap_attr="final_logit_softcapping"),
    "phi3": replace(_LLAMA, eps_default=1e-5, final=("rmsnorm", 0.0)),
    "phi": Head(
        ("model.final_layernorm", "final_layernorm"),
        ("lm_head.weight",),
        ("model.embed_tokens.weight", "embed_tokens.weight"),
        ("lm_head.bias",),
        final=("layernorm", 0.0),
    ),
    "bert": Head(
        ("cls.predictions.transform.LayerNorm",),
        ("cls.predictions.decoder.weight",),
        ("bert.embeddings.word_embeddings.weight", "embeddings.word_embeddings.weight"),
        ("cls.predictions.bias", "cls.predictions.decoder.bias"),
        caveat="BERT's head normalises gelu(dense(h)): the LayerNorm ball is an outer bound of its queries, "
        "so 'not-realisable' is exact and 'selectable' is for the ball",
    ),
}

#: endings of transformers class names whose output is not the language-modelling head
_OTHER_HEADS = (
    "ForSequenceClassification",
    "ForTokenClassification",
    "ForQuestionAnswering",
    "ForMultipleChoice",
    "ForNextSentencePrediction",
)


@dataclass(frozen=True)
class OutputLayer:
    """The output layer of one model: keys (the unembedding rows), bias, final norm and soft cap."""

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
    softcap: float | None = None  # logits z -> c tanh(z / c): strictly increasing, no argmax changes

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
            **({"logit soft cap": self.softcap} if self.softcap is not None else {}),
            **({"caveat": self.caveat} if self.caveat else {}),
        }


@dataclass(frozen=True)
class _Located:
    """Where a model folder keeps its output layer, before any of its values is read."""

    family: str
    norm: str  # "layernorm" or "rmsnorm"
    gain_offset: float
    spec: Head
    data: dict
    tensors: dict  # name -> the weights file holding it
    head_name: str
    norm_name: str


def _family(data: dict, where: str) -> tuple[str, str, float, Head]:
    """``(family, norm kind, gain offset, Head)`` of a configuration, or a ModelError."""
    model_type = data.get("model_type")
    spec = HEADS.get(model_type) if isinstance(model_type, str) else None
    if spec is None:
        raise ModelError(
            f"{where} has model_type {model_type!r}, whose output layer is not read; accepted model types: "
            + ", ".join(sorted(HEADS))
        )
    architectures = data.get("architectures") or []
    other = [a for a in architectures if isinstance(a, str) and a.endswith(_OTHER_HEADS)]
    require(
        not other,
        ModelError,
        f"{where} names the architecture {other[0] if other else ''}, whose output is a task head, not the "
        "language-modelling head; give the model saved with its language-modelling head (e.g. AutoModelForCausalLM)",
    )
    if spec.final is not None:
        return model_type, spec.final[0], float(spec.final[1]), spec
    family = family_of(model_type, where=where)
    return family.name, family.norm, family.gain_offset, spec


def _locate(path) -> _Located:
    from torch_backend.models.tensors import tensor_names

    from .loading import _weight_files, read_config

    path = Path(path)
    require(path.exists(), ModelError, f"model {path} does not exist; give a Hugging Face model folder stored locally")
    data, cfg_path = read_config(path)
    name, norm, offset, spec = _family(data, str(cfg_path))
    refuse_unhandled(data, str(cfg_path))
    if name == "opt":
        proj = data.get("word_embed_proj_dim", data.get("hidden_size"))
        require(
            proj == data.get("hidden_size"),
            ModelError,
            f"{cfg_path}: word_embed_proj_dim {proj} differs from hidden_size {data.get('hidden_size')}; the "
            "projection after the final norm is not handled",
        )
    tensors = tensor_names(_weight_files(path))
    norm_name = next((n for n in spec.norm if f"{n}.weight" in tensors), None)
    head_name = next((n for n in spec.head if n in tensors), None)
    tied = bool(data.get("tie_word_embeddings", True))
    if head_name is None and tied:
        head_name = next((n for n in spec.embed if n in tensors), None)
    require(
        norm_name is not None and head_name is not None,
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
    return _Located(name, norm, offset, spec, data, tensors, head_name, norm_name)


def _chunks(where: _Located, rows: int | None, into: np.ndarray | None = None) -> Iterator[tuple[int, int, np.ndarray]]:
    """``(a, b, rows a..b as float64)``: new arrays, or views of ``into`` (the whole unembedding) filled in place."""
    from torch_backend.models.tensors import read_rows, tensor_shape

    source = where.tensors[where.head_name]
    shape = tensor_shape(source, where.head_name)
    require(
        len(shape) == 2,
        ModelError,
        f"{source}: the unembedding {where.head_name} has shape {shape}; expected a matrix (tokens x width)",
    )
    n, d = shape
    step = max(1, CHUNK_BYTES // (8 * max(d, 1))) if rows is None else int(rows)
    require(step >= 1, OptionError, f"rows = {rows} per chunk; give a positive number of rows")
    if source.suffix.lower() != ".safetensors":  # a PyTorch pickle is read whole, once, then cut
        whole = read_rows(source, where.head_name, 0, n, into)
        yield from ((a, min(a + step, n), whole[a : a + step]) for a in range(0, n, step))
        return
    for a in range(0, n, step):
        b = min(a + step, n)
        yield a, b, read_rows(source, where.head_name, a, b, None if into is None else into[a:b])


def unembedding_rows(path, rows: int | None = None) -> Iterator[tuple[int, int, np.ndarray]]:
    """The unembedding of the model at ``path`` in chunks: ``(a, b, rows a..b as float64)``, in order.

    ``rows`` per chunk (default: :data:`CHUNK_BYTES` of float64).  From safetensors (one file or a
    sharded ``model.safetensors.index.json``) each chunk reads only its own rows; a PyTorch pickle
    is read whole and sliced.  The same tensor as :func:`read_output_layer`'s keys, chunk by chunk;
    a consumer that lets go of each chunk before the next holds one chunk and the rows being read."""
    return _chunks(_locate(path), rows)


def read_output_layer(path, *, rows: int | None = None) -> OutputLayer:
    """The output layer of the model folder (or weights file beside a config) at ``path``; the
    unembedding is read in chunks of ``rows`` (:func:`unembedding_rows`) into one float64 array."""
    from torch_backend.models.tensors import empty_float64, read_tensor, tensor_shape

    where = _locate(path)
    spec, data, tensors = where.spec, where.data, where.tensors
    shape = tensor_shape(tensors[where.head_name], where.head_name)
    keys = empty_float64(shape if len(shape) == 2 else (0, 0))
    for _ in _chunks(where, rows, keys):  # each chunk's rows widened into the keys, in place
        pass
    bias_name = next((n for n in spec.bias if n in tensors), None)
    bias = None if bias_name is None else read_tensor(tensors[bias_name], bias_name)
    norm_name = where.norm_name
    gain = read_tensor(tensors[f"{norm_name}.weight"], f"{norm_name}.weight") + where.gain_offset
    beta = read_tensor(tensors[f"{norm_name}.bias"], f"{norm_name}.bias") if f"{norm_name}.bias" in tensors else None
    eps = float(data.get(spec.eps_attr, spec.eps_default)) if spec.eps_attr else spec.eps_default
    head_name = where.head_name
    require(
        keys.shape[1] == gain.shape[0],
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
        where.family,
        keys,
        bias,
        where.norm,
        gain,
        beta,
        eps,
        head_name in spec.embed,
        names,
        spec.caveat,
        _softcap(data, spec, path),
    )


def _softcap(data: dict, spec: Head, path) -> float | None:
    """The final logits' soft cap ``c`` of the configuration (None when the family or model has none)."""
    value = data.get(spec.softcap_attr) if spec.softcap_attr else None
    if value is None:
        return None
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and np.isfinite(value) and value > 0
    require(
        ok,
        ModelError,
        f"{path}: {spec.softcap_attr} is {value!r}; accepted: a positive number (the cap c of c tanh(z / c)) or null",
    )
    return float(value)


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
