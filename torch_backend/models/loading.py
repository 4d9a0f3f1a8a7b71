"""Weights into a transformers model, offline, with PyTorch (see :mod:`lnproofs.models.loading`)."""

from __future__ import annotations

from pathlib import Path

from lnproofs.kernel import ModelError, OptionError, require

__all__ = ["torch_state_dict", "state_dtypes", "state_tensors", "build_model", "resolve_device", "check_shapes"]


def torch_state_dict(path: Path) -> dict:
    """A PyTorch state dict read with ``weights_only=True`` (ModelError when it is not one)."""
    import torch

    try:
        obj = torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as exc:
        reason = str(exc).splitlines()[0][:100] if str(exc) else type(exc).__name__
        raise ModelError(f"{path} could not be read as a PyTorch state dict ({reason})") from None
    if isinstance(obj, dict) and "state_dict" in obj and isinstance(obj["state_dict"], dict):
        obj = obj["state_dict"]
    require(
        isinstance(obj, dict) and obj and all(hasattr(v, "dtype") for v in obj.values()),
        ModelError,
        f"{path} does not hold a state dict (a mapping of names to tensors); save model.state_dict()",
    )
    return obj


def state_dtypes(path: Path) -> dict[str, str]:
    """name -> dtype (``torch.float32`` ...) of every tensor of a state dict file."""
    return {k: str(v.dtype) for k, v in torch_state_dict(path).items()}


def state_tensors(path: Path) -> dict[str, tuple[str, tuple[int, ...]]]:
    """name -> (dtype, shape) of every tensor of a state dict file."""
    return {k: (str(v.dtype), tuple(v.shape)) for k, v in torch_state_dict(path).items()}


def resolve_device(device: str):
    """A torch device for ``device``: ``auto`` (a CUDA GPU when torch sees one, else the CPU),
    ``cpu``, ``cuda`` or ``cuda:N``; one line (OptionError) for a device that is not here."""
    import torch

    if str(device).strip().lower() == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        torch_device = torch.device(device)
    except (RuntimeError, TypeError):
        raise OptionError(f"device {device!r} is not a torch device; use cpu or cuda") from None
    require(
        torch_device.type != "cuda" or torch.cuda.is_available(),
        OptionError,
        f"device {device!r} is not available here (no CUDA GPU); use cpu",
    )
    require(
        torch_device.type != "cuda" or torch_device.index is None or torch_device.index < torch.cuda.device_count(),
        OptionError,
        f"device {device!r} is not available here (torch sees {torch.cuda.device_count()} CUDA GPU(s)); "
        "use cuda, cuda:N for one of them, or cpu",
    )
    return torch_device


def _strip_prefix(state: dict, model_keys: set, prefixes: tuple[str, ...]) -> dict:
    out = {}
    for key, value in state.items():
        if key not in model_keys:
            for prefix in prefixes:
                if key.startswith(prefix) and key[len(prefix) :] in model_keys:
                    key = key[len(prefix) :]
                    break
        out[key] = value
    return out


def _load_state(model, files: list[Path], source: Path) -> None:
    import torch

    state: dict = {}
    for f in files:
        if f.suffix.lower() == ".safetensors":
            from safetensors.torch import load_file

            try:
                state.update(load_file(str(f)))
            except Exception as exc:
                raise ModelError(
                    f"{f} could not be read as safetensors ({str(exc)[:80]}); is the file complete?"
                ) from None
        else:
            state.update(torch_state_dict(f))
    own = model.state_dict()
    state = _strip_prefix(state, set(own), (f"{model.base_model_prefix}.", "model.", "module.", "gpt_neox."))
    state = {k: v for k, v in state.items() if k in own}
    params = {name for name, _ in model.named_parameters()}
    missing = sorted(params - set(state))
    require(
        not missing,
        ModelError,
        f"{source} lacks {len(missing)} weight(s) the configuration needs "
        f"(first: {missing[0] if missing else ''}); give the weights saved with this config.json",
    )
    for key, value in state.items():
        require(
            tuple(value.shape) == tuple(own[key].shape),
            ModelError,
            f"{source}: weight {key} has shape {tuple(value.shape)} but the config needs "
            f"{tuple(own[key].shape)}; give the config.json saved with these weights",
        )
    with torch.no_grad():
        model.load_state_dict(state, strict=False)


def _config_object(family, data: dict):
    import transformers

    cls = getattr(transformers, family.config_class)
    try:  # transformers validates the outside file's values
        config = cls.from_dict({k: v for k, v in data.items() if k != "model_type"})
    except Exception as exc:
        reason = " ".join(str(exc).split())[:160] or type(exc).__name__
        raise ModelError(f"config.json is not a valid {family.config_class} ({reason})") from None
    config._attn_implementation = "eager"
    return config


def check_shapes(family, cls, config, shapes: dict, where, extra: dict, source, check_sizes=None) -> None:
    """The model ``cls(config)`` built on the ``meta`` device (no memory) against the stored
    ``shapes``: every tensor the model needs is stored, with the shape the configuration gives.
    ``check_sizes(family, config, shapes, where)`` bounds the sizes first (the caller's,
    :func:`lnproofs.models.config_sizes.check_sizes`: this package imports nothing of the models layer)."""
    import torch

    if check_sizes is not None:
        check_sizes(family, config, shapes, where)
    try:
        with torch.device("meta"):
            model = cls(config, **extra)
    except Exception as exc:  # transformers' own checks of the values
        reason = " ".join(str(exc).split())[:160] or type(exc).__name__
        raise ModelError(f"{where} does not describe a model transformers can build ({reason})") from None
    own = {name: tuple(t.shape) for name, t in model.state_dict().items()}
    stored = _strip_prefix(shapes, set(own), (f"{model.base_model_prefix}.", "model.", "module.", "gpt_neox."))
    embedding = model.get_input_embeddings().weight
    embedding_name = next((n for n, p in model.named_parameters() if p is embedding), None)
    for name, shape in stored.items():
        if name in own and shape != own[name]:
            fields = (
                (
                    f" ({family.vocab_key} {getattr(config, family.vocab_key)}, {family.width_key} "
                    f"{getattr(config, family.width_key)})"
                )
                if name == embedding_name
                else ""
            )
            raise ModelError(
                f"{where} does not fit the weights: {name} is stored with shape {shape} but the "
                f"configuration{fields} gives {own[name]}; give the config.json saved with these weights"
            )
    missing = sorted(n for n, _ in model.named_parameters() if n not in stored)
    require(
        not missing,
        ModelError,
        f"{source} lacks {len(missing)} weight(s) the configuration needs "
        f"(first: {missing[0] if missing else ''}); give the weights saved with this config.json",
    )


def build_model(
    family,
    data: dict,
    path: Path,
    files: list[Path],
    *,
    from_folder: bool,
    dtype: str,
    device: str,
    shapes: dict | None = None,
    where=None,
    check_sizes=None,
):
    """``(module, config)``: the bare transformers model of ``family`` with the weights of
    ``files`` (or the folder ``path`` through ``from_pretrained``), on ``device`` in ``dtype``.  The caller keeps
    the network off (:func:`lnproofs.models.loading.offline`).  ``shapes`` (tensor name -> stored shape,
    from the files' headers): the configuration's sizes are checked against them first (:func:`check_shapes`)."""
    import torch
    import transformers

    torch_device = resolve_device(device)
    cls = getattr(transformers, family.model_class)
    extra = dict(family.model_kwargs)
    config_obj = _config_object(family, data)
    if shapes is not None:
        check_shapes(family, cls, config_obj, shapes, where or path, extra, path, check_sizes)
    if from_folder:
        try:
            module, info = cls.from_pretrained(
                str(path),
                config=config_obj,
                local_files_only=True,
                trust_remote_code=False,
                output_loading_info=True,
                **extra,
            )
        except (
            OSError,
            ValueError,
            RuntimeError,
            TypeError,
            AttributeError,
            KeyError,
            IndexError,
            OverflowError,
            MemoryError,
        ) as exc:  # a config.json that does not fit its weights
            reason = (str(exc).splitlines() or [type(exc).__name__])[0][:100]
            raise ModelError(f"folder {path} could not be loaded offline ({reason})") from None
        params = {name for name, _ in module.named_parameters()}
        missing = sorted(k for k in info.get("missing_keys", ()) if k in params)
        require(
            not missing,
            ModelError,
            f"folder {path} lacks {len(missing)} weight(s) the configuration needs "
            f"(first: {missing[0] if missing else ''}); give the weights saved with this config.json",
        )
        mismatched = list(info.get("mismatched_keys", ()))
        require(not mismatched, ModelError, f"folder {path}: weight {mismatched[:1]} does not match the config")
    else:
        module = cls(config_obj, **extra)
        _load_state(module, files, path)
    module = module.to(device=torch_device, dtype=getattr(torch, dtype)).eval()
    return module, config_obj, str(torch_device)
