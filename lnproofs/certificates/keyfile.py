"""The keys file a certificate names: a path relative to the certificate and the SHA-256 of its bytes.

A certificate written apart from its keys (``lnproofs certify --out``, ``reproduce lm-tables``)
carries ``"keys_file": {"path": "text0001_layer1_keys.npy", "sha256": "..."}``, so that
``lnproofs check CERT.json`` finds its keys and knows they are the ones it was made for.  A
keys file that does not match (another file, an edited or truncated one) is refused with one
line naming both files.  The hash binds the file to the certificate; the claims are still
decided by the kernel against whatever keys are read.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from ..io.files import open_input, sha256_input
from ..kernel import CertificateFormatError, FileFormatError

_LIMIT_NOTE = "8 times --max-array-bytes; raise that"

__all__ = [
    "sha256_of",
    "keys_reference",
    "validate_reference",
    "validate_reading",
    "reading_note",
    "reading_of",
    "load_keys",
    "resolve_keys",
    "validate_inner_path",
    "inner_file",
]

_HEX = re.compile(r"[0-9a-f]{64}")


def sha256_of(path: str | os.PathLike, max_bytes: int | None = None, what: str = "") -> str:
    """The SHA-256 of the file's bytes, as 64 lowercase hex digits: a regular file (never a link, a
    FIFO or a device), its size compared with ``max_bytes`` before a byte is hashed
    (:func:`lnproofs.io.files.sha256_input`)."""
    return sha256_input(path, what, max_bytes, _LIMIT_NOTE)


def keys_reference(certificate_path: str | os.PathLike, keys_path: str | os.PathLike) -> dict:
    """``{"path": ..., "sha256": ...}`` for a certificate to be written at ``certificate_path``
    about the keys in ``keys_path`` (the path relative to the certificate's folder, with ``/``)."""
    folder = Path(os.path.abspath(certificate_path)).parent
    relative = os.path.relpath(os.path.abspath(keys_path), folder)
    return {"path": PurePosixPath(*Path(relative).parts).as_posix(), "sha256": sha256_of(keys_path)}


def validate_inner_path(path, field: str) -> str:
    """A path written inside a file (``keys_file.path``, a text file's ``arrays``), checked: a
    non-empty string of at most 4096 characters, relative (no ``/``, ``\\`` or drive at its
    start), no NUL.  The one check of every such path."""
    if (
        not isinstance(path, str)
        or not path
        or len(path) > 4096
        or "\x00" in path
        or PurePosixPath(path).is_absolute()
        or path.startswith("\\")
        or re.match(r"[A-Za-z]:", path)
    ):
        raise CertificateFormatError(
            f"{field} is {str(path)[:80]!r}; expected a path relative to the file that names it"
        )
    return path


def inner_file(owner: str | os.PathLike, path, field: str, max_bytes: int | None = None) -> Path:
    """The regular file that ``owner`` names at ``path`` (relative to ``owner``'s folder), checked by
    :func:`validate_inner_path`, and refused when missing, not a regular file (a link, a FIFO, a
    device) or, with ``max_bytes``, larger."""
    target = Path(owner).parent / validate_inner_path(path, field)
    if not target.exists() and not target.is_symlink():
        raise FileFormatError(f"{owner} names {field} {path}, and {target} does not exist")
    with open_input(target, f"{target} (named by {owner} as {field})", max_bytes, _LIMIT_NOTE):
        pass
    return target


def validate_reference(value) -> dict:
    """The ``keys_file`` field as read from JSON, checked: a relative path and a SHA-256."""
    if not isinstance(value, dict) or set(value) != {"path", "sha256"}:
        raise CertificateFormatError("certificate field keys_file must be an object with exactly 'path' and 'sha256'")
    path, digest = validate_inner_path(value["path"], "certificate field keys_file.path"), value["sha256"]
    if not isinstance(digest, str) or not _HEX.fullmatch(digest):
        raise CertificateFormatError(
            f"certificate field keys_file.sha256 is {str(digest)[:80]!r}; expected 64 lowercase hex digits"
        )
    return {"path": path, "sha256": digest}


def resolve_keys(
    certificate_path: str | os.PathLike, reference, given: str | os.PathLike | None = None, max_bytes: int | None = None
) -> Path:
    """The keys file for a certificate naming ``reference``: ``given`` when the user gave one, else
    the named path next to the certificate; either way its SHA-256 must be the one named.  With
    ``max_bytes``, a larger file is refused from its size before a byte is hashed."""
    certificate_path = Path(certificate_path)
    path = Path(given) if given is not None else certificate_path.parent / reference["path"]
    if not path.exists() and not path.is_symlink():
        raise FileFormatError(
            f"{certificate_path} names its keys file {reference['path']}, and {path} "
            "does not exist; give the KEYS file (lnproofs check CERT.json KEYS)"
        )
    digest = sha256_of(path, max_bytes, f"keys file {path} of {certificate_path}")
    if digest != reference["sha256"]:
        raise FileFormatError(
            f"keys file {path} does not match certificate {certificate_path}: its SHA-256 is "
            f"{digest[:16]}..., the certificate names {reference['sha256'][:16]}... "
            "(another file, or an edited or truncated one)"
        )
    return path


def reading_of(scale: int, rounded: bool = False) -> dict | None:
    """The ``keys_reading`` a certificate states for keys read with ``scale`` (or ``rounded`` to the
    nearest float64), or None when the keys are the file's numbers as floats."""
    if rounded:
        return {"reading": "float64"}
    return None if scale == 1 else {"reading": "exact", "scale": str(int(scale))}


def validate_reading(value) -> dict:
    """The ``keys_reading`` field, checked: ``{"reading": "exact", "scale": "<positive integer>"}`` or
    ``{"reading": "float64"}``."""
    value = dict(value) if isinstance(value, Mapping) else value
    if isinstance(value, dict) and value == {"reading": "float64"}:
        return {"reading": "float64"}
    scale = value.get("scale") if isinstance(value, dict) else None
    if (
        not isinstance(value, dict)
        or set(value) != {"reading", "scale"}
        or value.get("reading") != "exact"
        or not isinstance(scale, str)
        or not re.fullmatch(r"[1-9][0-9]{0,1999}", scale)
    ):
        raise CertificateFormatError(
            f"certificate field keys_reading is {str(value)[:80]!r}; expected "
            '{"reading": "exact", "scale": "<a positive integer>"} or {"reading": "float64"}'
        )
    return {"reading": "exact", "scale": scale}


def reading_note(reading) -> str:
    """How a summary names a ``keys_reading`` (``""`` for none: the keys read as floats)."""
    if not reading:
        return ""
    if reading.get("reading") == "exact":
        return f" (the decimals written, times {reading['scale']})"
    return " (decimals read as their nearest float64)"


def load_keys(path, limits=None, reading=None):
    """The keys of ``path`` as a certificate's ``keys_reading`` says (the file's own exact reading
    without one): the same float64 array that ``lnproofs certify`` handed the kernel.  ``limits``:
    a :class:`lnproofs.io.bounded.ReadLimits` or anything with its ``max_array_bytes`` and
    ``max_dim`` (the certificate limits of ``lnproofs check``)."""
    from ..io.arrays import read_numbers, rescale
    from ..io.bounded import as_read_limits

    limits = as_read_limits(limits)
    reading = None if reading is None else validate_reading(reading)
    rounded = reading is not None and reading["reading"] == "float64"
    keys, scale, _ = read_numbers(path, name="keys", ndim=2, limits=limits, as_float64=rounded)
    if reading is not None and not rounded:
        keys = rescale(keys, scale, int(reading["scale"]), f"keys file {path}")
    return keys
