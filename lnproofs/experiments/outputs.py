"""Shared plumbing of the experiment commands: CSV rows written as they come, finished
runs kept, the configuration file, and the combined ``summary.md``."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

from ..certificates.writes import created_parents, open_append, output_file, write_text

__all__ = [
    "RowWriter",
    "read_rows",
    "finished",
    "write_json",
    "write_summary",
    "device_name",
    "SECTION_FILES",
    "parse_seeds",
    "positive_int",
]

#: the section files that make up OUT/summary.md, in order
SECTION_FILES = ("majority/summary.md", "majority_paper/summary.md", "lm_tables/summary.md")


class RowWriter:
    """Rows of one run go to ``PATH.partial`` as they come; :meth:`finish` renames it to
    ``PATH``, so a finished run is never redone and an unfinished one restarts."""

    def __init__(self, path: Path, fields: list[str], keep_until: float = 0):
        """``keep_until``: keep the rows of an unfinished ``PATH.partial`` up to that ``step``
        (a run resumed from its checkpoint) instead of starting the file over."""
        self.path = Path(path)
        self.path = output_file(self.path, None)
        self.partial = output_file(self.path.with_name(self.path.name + ".partial"), None)
        kept = []
        if keep_until and self.partial.is_file():
            with open(self.partial, newline="", encoding="utf-8") as handle:
                kept = [r for r in csv.DictReader(handle) if r.get("step") and float(r["step"]) <= keep_until]
        self.handle = open_append(self.partial, truncate=True)
        self.writer = csv.DictWriter(self.handle, fieldnames=fields, extrasaction="ignore")
        self.writer.writeheader()
        self.writer.writerows(kept)

    def __call__(self, row: dict) -> None:
        self.writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in row.items()})
        self.handle.flush()

    def finish(self) -> None:
        self.handle.close()
        os.replace(self.partial, self.path)

    def abandon(self) -> None:
        self.handle.close()


def finished(path: Path) -> bool:
    return Path(path).is_file()


def read_rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        return [
            {k: (float(v) if v not in ("", None) else None) for k, v in row.items()} for row in csv.DictReader(handle)
        ]


def write_json(path: Path, data) -> None:
    created_parents(path)
    write_text(Path(path), json.dumps(data, indent=2, sort_keys=True) + "\n")


def write_summary(out: Path) -> Path:
    """OUT/summary.md: the sections written so far by either command."""
    out = Path(out)
    parts = ["# Reproduced experiments\n"]
    for name in SECTION_FILES:
        section = out / name
        if section.is_file():
            parts.append(section.read_text(encoding="utf-8").strip() + "\n")
    path = out / "summary.md"
    write_text(path, "\n".join(parts))
    return path


def positive_int(text, option: str, minimum: int = 1) -> int:
    """The command-line option ``option`` as a whole number >= ``minimum``, or one clear error."""
    from ..kernel import OptionError

    try:
        value = int(str(text).strip())
    except ValueError:
        raise OptionError(f"{option} {text!r} is not a whole number; give an integer >= {minimum}") from None
    if value < minimum:
        raise OptionError(f"{option} {value} is not accepted; give an integer >= {minimum}")
    return value


def parse_seeds(text) -> tuple[int, ...]:
    """``"11,123,42"`` -> (11, 123, 42); one clear error otherwise."""
    from ..kernel import OptionError as InputError

    if isinstance(text, (list, tuple)):
        text = ",".join(map(str, text))
    items = [s.strip() for s in str(text).split(",")]
    try:
        seeds = tuple(int(s) for s in items)
    except ValueError:
        raise InputError(
            f"--seeds {text!r} does not parse; give comma-separated whole numbers >= 0, e.g. 11,123,42"
        ) from None
    if not seeds or any(s < 0 for s in seeds) or len(set(seeds)) != len(seeds):
        raise InputError(f"--seeds {text!r} is not accepted; give distinct comma-separated whole numbers >= 0")
    return seeds


def device_name(name: str) -> str:
    """``auto``: the GPU when torch sees one, else the CPU; any other name as given."""
    if name != "auto":
        return name
    from torch_backend.device import resolve_device

    return str(resolve_device("auto"))
