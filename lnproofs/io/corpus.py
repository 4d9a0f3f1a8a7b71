"""Read a corpus of texts, one at a time: a text file (one text per line), a folder of
``.txt`` files (one text per file, in name order) or a JSON Lines file (field ``text``).

Texts are yielded lazily as ``(number, text)`` so memory stays bounded whatever the
corpus size.  Bad input raises :class:`~lnproofs.kernel.InputError` with one line
naming the file, the line and what is accepted.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..kernel import InputError, require

__all__ = ["iter_corpus", "count_texts", "MAX_LINE_BYTES"]

#: the longest line (one text, or one JSON Lines record) read; a longer one is refused, not loaded
MAX_LINE_BYTES = 16 << 20


def _lines(path: Path):
    from .files import open_input

    with open_input(path, f"corpus file {path}") as (handle, _):
        number = 0
        while raw := handle.readline(MAX_LINE_BYTES + 1):
            number += 1
            if len(raw) > MAX_LINE_BYTES:
                raise InputError(
                    f"{path} line {number} is longer than {MAX_LINE_BYTES} bytes, the limit of one text; "
                    "split it into shorter texts"
                )
            try:
                yield number, raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError:
                raise InputError(f"{path} line {number} is not UTF-8; give the corpus as UTF-8 text") from None


def iter_corpus(path, *, max_texts: int | None = None):
    """Yield ``(number, text)`` for the non-empty texts of the corpus at ``path``."""
    path = Path(path)
    require(
        path.exists(),
        InputError,
        f"corpus {path} does not exist; give a .txt file (one text per line), "
        "a folder of .txt files or a .jsonl file with a 'text' field",
    )
    if max_texts is not None:
        require(max_texts >= 1, InputError, f"--max-texts {max_texts} is not accepted; give a count >= 1")
    count = 0

    def take(text):
        nonlocal count
        count += 1
        return count - 1, text

    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix.lower() == ".txt" and p.is_file())
        require(files, InputError, f"corpus folder {path} holds no .txt files")
        for file in files:
            text = "\n".join(line for _, line in _lines(file)).strip()
            if text:
                yield take(text)
                if max_texts is not None and count >= max_texts:
                    return
    elif path.suffix.lower() in (".jsonl", ".ndjson"):
        for number, line in _lines(path):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):
                raise InputError(
                    f"{path} line {number} is not valid JSON; each line must be an object with a 'text' field"
                ) from None
            require(
                isinstance(record, dict) and isinstance(record.get("text"), str),
                InputError,
                f"{path} line {number} has no string field 'text'; each line must be an object with a 'text' field",
            )
            if record["text"].strip():
                yield take(record["text"])
                if max_texts is not None and count >= max_texts:
                    return
    else:
        for _, line in _lines(path):
            if line.strip():
                yield take(line.strip())
                if max_texts is not None and count >= max_texts:
                    return
    require(count > 0, InputError, f"corpus {path} is empty; give at least one non-empty text")


def count_texts(path, *, max_texts: int | None = None) -> int:
    """How many texts :func:`iter_corpus` yields (reads the corpus once, keeps nothing)."""
    return sum(1 for _ in iter_corpus(path, max_texts=max_texts))
