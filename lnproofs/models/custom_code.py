"""Model and tokenizer folders never run code: a folder that asks for its own Python is refused.

transformers runs Python shipped beside the weights when a configuration names it
(``auto_map``: "load this class from ``module.py`` of the folder"; ``custom_pipelines``)
and the caller trusts remote code, or a ``y`` reaches its prompt.  lnproofs passes
``trust_remote_code=False`` to every transformers call and, before any of them, reads the
JSON files transformers would consult and refuses, in one line, any that names custom code
(the key anywhere in the file, at any depth).  The JSON is read with a size limit, and no
prompt is ever shown, whatever arrives on standard input.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..kernel import ModelError

__all__ = [
    "CODE_KEYS",
    "FOLDER_FILES",
    "MAX_CONFIG_BYTES",
    "refuse_custom_code",
    "refuse_folder_code",
    "read_json_config",
]

#: configuration keys through which transformers loads Python from the model's own folder
CODE_KEYS = ("auto_map", "custom_pipelines")
#: the JSON files of a model or tokenizer folder that transformers' Auto classes read
FOLDER_FILES = (
    "config.json",
    "tokenizer_config.json",
    "processor_config.json",
    "preprocessor_config.json",
    "feature_extractor_config.json",
    "image_processor_config.json",
    "video_preprocessor_config.json",
)
#: the largest configuration file read (tokenizer configs of large vocabularies run to a few MB)
MAX_CONFIG_BYTES = 64 << 20


def read_json_config(path: Path, what: str = "give the config.json saved with the model"):
    """The parsed JSON of ``path``, read only when its size is within :data:`MAX_CONFIG_BYTES`."""
    from ..io.files import read_input
    from ..kernel import LimitError

    try:
        raw = read_input(path, str(path), MAX_CONFIG_BYTES)  # a regular file, its size checked first
    except LimitError as exc:
        raise ModelError(f"{exc}: more than a configuration file may have; {what}") from None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:80]
        raise ModelError(f"{path} is not valid JSON ({first}); {what}") from None


def _code_key(data, depth: int = 0):
    """The first key of :data:`CODE_KEYS` anywhere in ``data`` (iteratively bounded depth), or None."""
    stack = [(data, depth)]
    while stack:
        node, level = stack.pop()
        if level > 64:
            continue
        if isinstance(node, dict):
            for key, value in node.items():
                if key in CODE_KEYS:
                    return key
                stack.append((value, level + 1))
        elif isinstance(node, list):
            stack.extend((value, level + 1) for value in node)
    return None


def refuse_custom_code(data, where) -> None:
    """ModelError when the configuration ``data`` (read from ``where``) names code to run."""
    key = _code_key(data)
    if key is not None:
        raise ModelError(
            f"{where} names custom code ({key!r}), which lnproofs never runs; accepted: a "
            f"configuration of a model type transformers provides itself (remove {key!r}, or use "
            "the model's standard configuration)"
        )


def refuse_folder_code(folder: Path) -> None:
    """Refuse ``folder`` when one of its :data:`FOLDER_FILES` names custom code."""
    for name in FOLDER_FILES:
        path = folder / name
        if path.is_file():
            refuse_custom_code(read_json_config(path, f"give the {name} saved with the model"), path)
