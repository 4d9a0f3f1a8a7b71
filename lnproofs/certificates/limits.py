"""Limits on the work a certificate file may cause, and the bounded reading of JSON files.

A certificate is checked by anyone and may be written by anyone, carelessly or on purpose, so
the checker bounds what one file can make it do before any arithmetic:

* ``max_digits``: the digits of one number (a numerator or a denominator, an integer, the
  exponent of a decimal); the checker's exact arithmetic grows with them;
* ``max_dim``: the dimension of the keys (and of the certificate that speaks of them);
* ``bytes_per_entry``: the size of the certificate file relative to its keys, at most
  ``slack_bytes + bytes_per_entry * N * d`` bytes for N keys in R^d;
* ``max_depth``: the nesting of JSON arrays and objects;
* ``max_array_bytes``: one keys array once read, as float64 (keys files are read by
  :mod:`lnproofs.io.bounded` within it, checked from their headers; a keys file on disk may
  hold at most 8 times as many bytes, compared before it is hashed), and a certificate file,
  compared before it is read.

The defaults are generous for every certificate this package writes (the largest are the exact
uniform-attention queries of wide layers, about 1,700 digits a number and 2,000 bytes a key
entry); ``lnproofs check --max-digits/--max-dim/--max-bytes-per-entry/--max-array-bytes`` raise them.  A file past
a limit is refused with one line naming the limit (:class:`~lnproofs.kernel.LimitError`,
exit status 2).  Nothing here decides a claim.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..io.files import read_input
from ..kernel import CertificateFormatError, LimitError

__all__ = ["Limits", "DEFAULT_LIMITS", "read_json_file", "parse_json"]

_DIGITS = re.compile(r"\d+")  # runs of digits, found in linear time
_EXPONENT = re.compile(r"\s*[+-]?[\d_.]*[eE][+-]?([\d_]+)\s*")  # a decimal string with an exponent


@dataclass(frozen=True)
class Limits:
    """The bounds above; ``DEFAULT_LIMITS`` holds the documented defaults."""

    max_digits: int = 10_000
    max_dim: int = 65_536
    bytes_per_entry: int = 65_536
    slack_bytes: int = 1 << 16
    max_depth: int = 64
    max_array_bytes: int = 1 << 30

    @property
    def max_keys_file_bytes(self) -> int:
        return 8 * self.max_array_bytes

    def allowed_bytes(self, n_keys: int, dim: int) -> int:
        return self.slack_bytes + self.bytes_per_entry * max(n_keys, 1) * max(dim, 1)

    def check_dim(self, dim: int, where: str) -> None:
        if dim > self.max_dim:
            raise LimitError(f"{where} has dimension {dim}, past the limit of {self.max_dim} (raise it with --max-dim)")

    def check_size(self, nbytes: int, n_keys: int, dim: int, where: str, what: str | None = None) -> None:
        """Refuse a file of ``nbytes`` about ``n_keys`` keys in R^``dim`` past the size limit."""
        allowed = self.allowed_bytes(n_keys, dim)
        if nbytes > allowed:
            raise LimitError(
                f"{where} has {nbytes} bytes for {what or f'{n_keys} keys in R^{dim}'}, past the limit of "
                f"{allowed} bytes ({self.slack_bytes} plus {self.bytes_per_entry} per key entry; "
                "raise it with --max-bytes-per-entry)"
            )

    def check_tree(self, data, where: str) -> None:
        """Walk parsed JSON without recursion: nesting depth, and the digits of every number
        (JSON integers, and the digit runs and exponents of strings such as ``"p/q"``)."""
        stack = [(data, 1)]
        while stack:
            value, depth = stack.pop()
            if isinstance(value, (dict, list)):
                if depth > self.max_depth:
                    raise LimitError(
                        f"{where} nests arrays and objects {depth} deep, past the limit of {self.max_depth}"
                    )
                items = value.values() if isinstance(value, dict) else value
                stack.extend((v, depth + 1) for v in items)
            elif isinstance(value, int) and not isinstance(value, bool):
                if value.bit_length() > 3.33 * self.max_digits:
                    self._too_long(where, "an integer")
            elif isinstance(value, str):
                self._check_string(value, where)

    def _check_string(self, text: str, where: str) -> None:
        if len(text) > self.max_digits and max(map(len, _DIGITS.findall(text)), default=0) > self.max_digits:
            self._too_long(where, "a number")
        exponent = _EXPONENT.fullmatch(text) if len(text) < 2 * self.max_digits else None
        digits = "" if exponent is None else exponent.group(1).replace("_", "").lstrip("0")
        if len(digits) > 9 or (digits and int(digits) > self.max_digits):
            self._too_long(where, "a decimal exponent")

    def _too_long(self, where: str, what: str) -> None:
        raise LimitError(
            f"{where} holds {what} past the limit of {self.max_digits} digits (raise it with --max-digits)"
        )


DEFAULT_LIMITS = Limits()


def parse_json(text: str, where: str, limits: Limits = DEFAULT_LIMITS):
    """Decode ``text`` and check its nesting and digits; bad JSON is a CertificateFormatError."""
    if text.startswith("\ufeff"):
        text = text[1:]  # a byte-order mark is not part of the JSON
    try:
        data = json.loads(text)
    except RecursionError:
        raise LimitError(f"{where} nests arrays and objects past the limit of {limits.max_depth}") from None
    except ValueError as exc:
        raise CertificateFormatError(f"{where} is not valid JSON ({' '.join(str(exc).split())[:160]})") from None
    limits.check_tree(data, where)
    return data


def read_json_file(path: str | os.PathLike, limits: Limits = DEFAULT_LIMITS, max_bytes: int | None = None):
    """The parsed JSON of the file at ``path``: a regular file (never a link, a FIFO or a device,
    :func:`lnproofs.io.files.open_input`), read only when it is at most ``max_bytes`` long (and at
    most ``max_array_bytes``, whose keys are not known yet), both compared before a byte is read."""
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        raise CertificateFormatError(f"{path} is a folder; give a certificate file (or use 'lnproofs check DIR')")
    if not path.exists() and not path.is_symlink():
        raise CertificateFormatError(f"certificate file {path} does not exist")
    bound, note = limits.max_array_bytes, "for a file read whole; raise it with --max-array-bytes"
    if max_bytes is not None and max_bytes < bound:
        bound, note = max_bytes, "for its keys; raise it with --max-bytes-per-entry"
    raw = read_input(path, f"certificate file {path}", bound, note)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CertificateFormatError(f"certificate file {path} is not UTF-8 text") from None
    return parse_json(text, f"certificate file {path}", limits)
