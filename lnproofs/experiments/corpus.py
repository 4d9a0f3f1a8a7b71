"""Offline text corpora for the language-model experiment.

``--corpus PATH`` takes a text file (split into documents at blank-line runs, a few
thousand characters each) or a folder (every ``.txt``/``.md``/``.rst`` file below it, in
sorted order, one document per file).  Without a path the corpus is the English
docstrings of the Python standard library that runs the command: modules are parsed with
:mod:`ast` (never imported), one document per module.  It ships with every Python, needs
no network, and is under the Python Software Foundation licence.

Documents are split into training and held-out sets deterministically (every tenth
document is held out).
"""

from __future__ import annotations

import ast
import os
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from ..kernel import FileFormatError

__all__ = ["Corpus", "load_corpus", "stdlib_docstrings", "TEXT_SUFFIXES", "DEFAULT_CORPUS_NAME"]

TEXT_SUFFIXES = (".txt", ".md", ".rst", ".text")
DEFAULT_CORPUS_NAME = "Python standard library docstrings"
_SKIP_DIRS = {
    "site-packages",
    "dist-packages",
    "test",
    "tests",
    "idlelib",
    "lib2to3",
    "__pycache__",
    "turtledemo",
    "ensurepip",
    "venv",
}
_HELD_OUT_EVERY = 10
_CHUNK_CHARS = 6000


@dataclass(frozen=True)
class Corpus:
    """Training and held-out documents, and where they came from."""

    name: str
    train: tuple[str, ...]
    held_out: tuple[str, ...]

    @property
    def characters(self) -> int:
        return sum(map(len, self.train)) + sum(map(len, self.held_out))


def _module_docstrings(path: Path) -> str:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError, OSError):
        return ""
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    docs = (ast.get_docstring(node) for node in ast.walk(tree) if isinstance(node, kinds))
    return "\n\n".join(doc for doc in docs if doc and doc.strip())


def stdlib_docstrings() -> list[str]:
    """One document per standard-library module: its docstrings, in a fixed order."""
    root = Path(sysconfig.get_paths()["stdlib"])
    documents = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        for name in sorted(files):
            if name.endswith(".py"):
                text = _module_docstrings(Path(folder) / name)
                if text:
                    documents.append(text)
    return documents


def _chunks(text: str) -> list[str]:
    """A long text cut into documents of about ``_CHUNK_CHARS`` characters at blank lines."""
    docs, current, size = [], [], 0
    for para in text.split("\n\n"):
        if not para.strip():
            continue
        current.append(para)
        size += len(para) + 2
        if size >= _CHUNK_CHARS:
            docs.append("\n\n".join(current))
            current, size = [], 0
    if current:
        docs.append("\n\n".join(current))
    return docs


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        raise FileFormatError(f"corpus file {path} could not be read ({err.strerror or err})") from None


def load_corpus(path=None) -> Corpus:
    """The corpus at ``path`` (a text file or a folder), or the default one."""
    if path is None:
        documents, name = stdlib_docstrings(), DEFAULT_CORPUS_NAME
    else:
        p = Path(path)
        if not p.exists():
            raise FileFormatError(
                f"corpus {p} does not exist; give a text file or a folder of {', '.join(TEXT_SUFFIXES)} files"
            )
        if p.is_dir():
            files = sorted(f for f in p.rglob("*") if f.is_file() and f.suffix.lower() in TEXT_SUFFIXES)
            documents = [t for t in (_read_text(f) for f in files) if t.strip()]
            if len(documents) == 1:
                documents = _chunks(documents[0])
        else:
            documents = _chunks(_read_text(p))
        name = p.name
        if not documents:
            raise FileFormatError(
                f"corpus {p} holds no text; give a non-empty text file or a folder of {', '.join(TEXT_SUFFIXES)} files"
            )
    held = tuple(doc for i, doc in enumerate(documents) if i % _HELD_OUT_EVERY == _HELD_OUT_EVERY - 1)
    train = tuple(doc for i, doc in enumerate(documents) if i % _HELD_OUT_EVERY != _HELD_OUT_EVERY - 1)
    if not held:  # fewer than ten documents: hold out the last one
        train, held = train[:-1] or train, train[-1:]
    return Corpus(name, train, held)
