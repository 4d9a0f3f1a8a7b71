"""Load a locally stored transformer with no network access.

Accepted ``MODEL`` paths:

- a Hugging Face model folder (``config.json`` plus ``model.safetensors``,
  ``pytorch_model.bin`` or their sharded forms), loaded through ``transformers`` with
  ``local_files_only=True``, ``trust_remote_code=False`` and ``HF_HUB_OFFLINE=1``;
- a single ``.safetensors`` file;
- a PyTorch state dict (``.bin``, ``.pt``, ``.pth``), read with ``weights_only=True``.

A single file needs a configuration: ``config=`` (a ``config.json``) or a
``config.json`` beside the file.  Weight prefixes of task models (``bert.``,
``transformer.``) are stripped.  Weights stored in float16 or bfloat16 are refused
unless ``allow_half=True`` (they are then widened exactly, with one
:class:`HalfPrecisionWarning`; the result describes the widened model, not a
half-precision forward pass).  Configurations whose scores are not ``q . k`` (ALiBi,
relative position scores) are refused by name, and so is a folder or configuration
that names custom code (:mod:`.custom_code`: nothing from a model folder ever runs).  Everything that runs torch lives in
:mod:`torch_backend.models.loading`, called from inside the functions here.  The model is moved to ``dtype``
(float64 by default) on ``device``.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from pathlib import Path

from ..kernel import ModelError, OptionError, require
from .config_sizes import check_config_values, check_sizes
from .custom_code import read_json_config, refuse_custom_code, refuse_folder_code
from .families import SUPPORTED_MODEL_TYPES, family_of, refuse_unhandled
from .loaded import LoadedModel

__all__ = [
    "resolve_model_device",
    "device_problem",
    "LoadedModel",
    "HalfPrecisionWarning",
    "offline",
    "load_model",
    "load_tokenizer",
    "read_config",
    "weight_dtypes",
    "weight_tensors",
    "WEIGHT_SUFFIXES",
    "ACCEPTED_DTYPES",
]

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
ACCEPTED_DTYPES = ("float64", "float32")
_HALF = {
    "F16": "float16",
    "BF16": "bfloat16",
    "float16": "float16",
    "bfloat16": "bfloat16",
    "torch.float16": "float16",
    "torch.bfloat16": "bfloat16",
    "F8_E4M3": "float8",
    "F8_E5M2": "float8",
}
_FOLDER_WEIGHTS = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)


class HalfPrecisionWarning(UserWarning):
    """float16/bfloat16 weights were widened (one line; the command line prints it on stderr)."""


# ---- configuration -------------------------------------------------------------------
def _config_path(path: Path, config) -> Path:
    if config is not None:
        cfg = Path(config)
        require(
            cfg.is_file(),
            ModelError,
            f"config file {cfg} does not exist; give a config.json of a {'/'.join(SUPPORTED_MODEL_TYPES)} model",
        )
        return cfg
    cfg = (path if path.is_dir() else path.parent) / "config.json"
    where = f"folder {path}" if path.is_dir() else f"the folder of {path}"
    require(
        cfg.is_file(),
        ModelError,
        f"{where} has no config.json; give a Hugging Face model folder, "
        "or a weights file with a config.json beside it or --config config.json",
    )
    return cfg


def read_config(path, config=None) -> tuple[dict, Path]:
    """The configuration dictionary for ``path`` and the file it came from."""
    cfg = _config_path(Path(path), config)
    data = read_json_config(cfg)
    require(
        isinstance(data, dict) and "model_type" in data,
        ModelError,
        f"{cfg} has no model_type; accepted model types: {', '.join(SUPPORTED_MODEL_TYPES)}",
    )
    refuse_custom_code(data, cfg)
    return data, cfg


# ---- weights ---------------------------------------------------------------------------
def _weight_files(path: Path) -> list[Path]:
    if path.is_file():
        require(
            path.suffix.lower() in WEIGHT_SUFFIXES,
            ModelError,
            f"{path} has suffix {path.suffix or '(none)'!r}; give a model folder or a weights file "
            f"({', '.join(WEIGHT_SUFFIXES)})",
        )
        return [path]
    for name in _FOLDER_WEIGHTS:
        candidate = path / name
        if candidate.is_file():
            if name.endswith(".index.json"):
                index = read_json_config(candidate, "give the shard index saved with the weights")
                try:
                    shards = sorted(set(index["weight_map"].values()))
                except (KeyError, TypeError, AttributeError):
                    raise ModelError(f"{candidate} is not a valid shard index; it needs a 'weight_map'") from None
                files = [path / s for s in shards]
                missing = [f.name for f in files if not f.is_file()]
                require(not missing, ModelError, f"folder {path} lacks weight shard {missing[:1]} named in {name}")
                return files
            return [candidate]
    raise ModelError(f"folder {path} holds no weights; expected one of {', '.join(_FOLDER_WEIGHTS)}")


def _safetensors_header(path: Path) -> dict[str, tuple[str, tuple[int, ...]]]:
    """name -> (dtype, shape) from the header alone (the tensors' data is not read)."""
    from ..io.bounded import safetensors_entries
    from ..kernel import InputError

    try:
        header = safetensors_entries(path)  # the one reader of .safetensors headers: a regular file, bounded
    except InputError as err:
        raise ModelError(f"{path} could not be read as safetensors ({str(err)[-80:]})") from None
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__" or not isinstance(entry, dict):
            continue
        shape = entry.get("shape")
        require(
            isinstance(shape, list) and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape),
            ModelError,
            f"{path}: tensor {name} has shape {str(shape)[:40]} in the header; accepted: a list of sizes",
        )
        tensors[name] = (entry.get("dtype"), tuple(shape))
    return tensors


def weight_tensors(files: list[Path]) -> dict[str, tuple[str, tuple[int, ...]]]:
    """name -> (stored dtype, shape) of every tensor (safetensors headers are read without torch)."""
    tensors: dict[str, tuple[str, tuple[int, ...]]] = {}
    for f in files:
        if f.suffix.lower() == ".safetensors":
            tensors.update(_safetensors_header(f))
        else:
            from torch_backend.models.loading import state_tensors

            tensors.update(state_tensors(f))
    return tensors


def weight_dtypes(files: list[Path]) -> dict[str, str]:
    """name -> stored dtype of every tensor (safetensors headers are read without torch)."""
    return {name: dtype for name, (dtype, _) in weight_tensors(files).items()}


def _stored_dtype(dtypes: dict[str, str], source: Path, allow_half: bool) -> str:
    half = sorted({_HALF[d] for d in dtypes.values() if d in _HALF})
    if half and not allow_half:
        example = next(k for k, d in dtypes.items() if d in _HALF)
        raise ModelError(
            f"{source} stores weights in {', '.join(half)} (e.g. {example}); accepted weight dtypes: "
            "float32, float64 (convert the weights, or pass allow_half=True to widen them exactly)"
        )
    floats = sorted({d for d in dtypes.values() if d in ("F32", "F64", "torch.float32", "torch.float64")})
    names = {"F32": "float32", "F64": "float64", "torch.float32": "float32", "torch.float64": "float64"}
    return ",".join(sorted({names[d] for d in floats} | set(half))) or "unknown"


@contextlib.contextmanager
def offline():
    """No network, and transformers' progress bars and load reports kept quiet, for this call only."""
    saved = {k: os.environ.get(k) for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    from transformers.utils import logging as hf_logging

    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def load_model(
    path, *, config=None, dtype: str = "float64", device: str = "cpu", allow_half: bool = False
) -> LoadedModel:
    """Load ``path`` (folder or weights file, see the module docstring) for extraction.

    ``path`` may also be a TransformerLens model object (``TransformerBridge`` or
    ``HookedTransformer``): it is used as it is (see :mod:`lnproofs.models.lens`)."""
    if not isinstance(path, (str, os.PathLike)):
        from .lens import from_transformer_lens

        return from_transformer_lens(path)
    require(
        dtype in ACCEPTED_DTYPES,
        OptionError,
        f"dtype {dtype!r} is not accepted; use one of {', '.join(ACCEPTED_DTYPES)}",
    )
    path = Path(path)
    require(
        path.exists(),
        ModelError,
        f"model {path} does not exist; give a Hugging Face model folder or a "
        f"weights file ({', '.join(WEIGHT_SUFFIXES)}) stored locally",
    )
    data, cfg_path = read_config(path, config)
    if path.is_dir():
        refuse_folder_code(path)
    family = family_of(data.get("model_type"), where=str(cfg_path))
    refuse_unhandled(data, str(cfg_path))
    check_config_values(family, data, cfg_path)
    files = _weight_files(path)
    tensors = weight_tensors(files)
    weights_dtype = _stored_dtype({name: dtype for name, (dtype, _) in tensors.items()}, path, allow_half)
    if any(h in weights_dtype for h in ("float16", "bfloat16", "float8")):
        warnings.warn(
            f"{path} stores {weights_dtype} weights; they are widened exactly to {dtype}, and the "
            "certificates describe the widened model",
            HalfPrecisionWarning,
            stacklevel=2,
        )

    from torch_backend.models.loading import build_model

    with offline():
        module, config_obj, device_name = build_model(
            family,
            data,
            path,
            files,
            dtype=dtype,
            device=device,
            from_folder=path.is_dir() and config is None,
            shapes={n: shape for n, (_, shape) in tensors.items()},
            where=cfg_path,
            check_sizes=check_sizes,
        )
    return LoadedModel(module, config_obj, family, path, dtype, device_name, weights_dtype)


def load_tokenizer(model_path, tokenizer=None):
    """A tokenizer from ``tokenizer`` or else the model's folder, offline; ModelError if none."""
    base = Path(tokenizer) if tokenizer is not None else Path(model_path)
    folder = base if base.is_dir() else base.parent
    require(
        folder.is_dir(),
        ModelError,
        f"tokenizer folder {folder} does not exist; give --tokenizer FOLDER or --tokens ids.npy",
    )
    files = (
        "tokenizer.json",
        "tokenizer_config.json",
        "vocab.txt",
        "vocab.json",
        "spiece.model",
        "sentencepiece.bpe.model",
    )
    require(
        any((folder / f).is_file() for f in files),
        ModelError,
        f"no tokenizer in {folder} (none of {', '.join(files[:4])}); give --tokenizer FOLDER "
        "or token ids with --tokens ids.npy",
    )
    refuse_folder_code(folder)
    from transformers import AutoTokenizer

    with offline():
        try:
            return AutoTokenizer.from_pretrained(str(folder), local_files_only=True, trust_remote_code=False)
        except Exception as exc:  # transformers raises many types for a folder without tokenizer files
            reason = str(exc).splitlines()[0][:80] if str(exc) else type(exc).__name__
            raise ModelError(
                f"no tokenizer could be loaded from {folder} ({reason}); give --tokenizer FOLDER "
                "(with tokenizer.json or vocab files) or token ids with --tokens ids.npy"
            ) from None


def resolve_model_device(device) -> str:
    """``auto`` -> ``cuda`` when torch sees a GPU, else ``cpu``; ``cpu``, ``cuda``, ``cuda:N``
    as given; one line (OptionError) for a device that is not on this machine.
    Certification always runs on CPUs."""
    from torch_backend.models.loading import resolve_device

    return str(resolve_device(str(device or "cpu")))


def device_problem(device):
    """None when this machine can run the forward pass on ``device``, else the reason (one
    line); run on each model worker of an existing cluster before any file is written."""
    from ..kernel import OptionError

    try:
        resolve_model_device(device)
    except OptionError as err:
        return str(err)
    return None
