"""The certificate people hold: the kernel's schema plus files and text.

:class:`Certificate` is :class:`lnproofs.kernel.certificates.Certificate` (the fields, their
validation and the exact JSON round-trip, all trusted) with what a person uses around it:
indexing by key, ``save``/``load`` (atomic writes, one-line errors), ``describe`` and the
notebook views, and the one-line warning when the keys lie on an affine subspace up to
rounding.  Nothing here reads a claim's evidence.
"""

from __future__ import annotations

import dataclasses
import html
import json
import os
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from ..kernel import certificates as schema
from ..kernel.errors import CertificateFormatError
from .keyfile import keys_reference, validate_reference
from .limits import DEFAULT_LIMITS, Limits, read_json_file

__all__ = ["Certificate"]


def _finite(value) -> bool:
    """A JSON number that is a finite float (ints of any length are refused past 2**1000)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return abs(value) < 2 ** 1000 if isinstance(value, int) else value == value and abs(value) != float("inf")


@dataclasses.dataclass(frozen=True)
class Certificate(schema.Certificate):
    """Per-key selectability results for N keys in R^d under a query set (see
    :mod:`lnproofs.kernel.certificates` for the fields and the JSON schema).

    ``keys_file`` (optional, JSON field ``keys_file``): ``{"path", "sha256"}`` of the keys file
    a certificate written apart from its keys is about (:mod:`.keyfile`); the kernel never reads it."""

    keys_file: Mapping[str, Any] | None = None

    def __post_init__(self):
        super().__post_init__()
        if self.keys_file is not None:
            object.__setattr__(self, "keys_file", MappingProxyType(dict(self.keys_file)))

    # ------------------------------------------------------------------ keys
    @property
    def statuses(self) -> tuple[str, ...]:
        return tuple(r.status for r in self.results)

    def indices(self, status: str) -> tuple[int, ...]:
        """Indices of the keys with ``status``."""
        return tuple(r.index for r in self.results if r.status == status)

    def __getitem__(self, index: int) -> schema.KeyResult:
        return self.results[index]

    def __len__(self) -> int:
        return len(self.results)

    def __iter__(self):
        return iter(self.results)

    @classmethod
    def from_json(cls, data) -> "Certificate":
        """The kernel's reading of the JSON, and the rank finding's fields (informational: the
        kernel does not read them, the rank warning does)."""
        if isinstance(data, (str, bytes)):
            data = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
            try:
                data = json.loads(data)
            except (ValueError, RecursionError) as exc:
                raise CertificateFormatError(f"certificate is not valid JSON ({str(exc)[:200]})") from None
        cert = super().from_json(data)
        if isinstance(data, dict) and data.get("keys_file") is not None:
            cert = dataclasses.replace(cert, keys_file=validate_reference(data["keys_file"]))
        if cert.rank is None:
            return cert
        for name in ("exact_affine_dimension", "numerical_affine_dimension"):
            value = cert.rank.get(name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise CertificateFormatError(f"certificate field rank.{name} is {value!r}; "
                                             "expected a non-negative integer")
        sv = cert.rank.get("singular_values")
        if not isinstance(sv, tuple) or not all(v is None or (_finite(v) and v >= 0) for v in sv):
            raise CertificateFormatError("certificate field rank.singular_values must be a list of finite numbers "
                                         ">= 0 (null for one beyond the float range)")
        return cert

    @property
    def below_min_margin(self) -> tuple[int, ...]:
        """Selectable keys whose witness margin is below ``min_margin`` (none without one)."""
        if self.min_margin is None:
            return ()
        return tuple(r.index for r in self.results if r.status == "selectable"
                     and r.margin is not None and r.margin < self.min_margin)

    def with_keys_file(self, certificate_path, keys_path) -> "Certificate":
        """This certificate naming ``keys_path`` (relative to where it will be saved) and its SHA-256."""
        return dataclasses.replace(self, keys_file=keys_reference(certificate_path, keys_path))

    def to_json(self) -> dict:
        """The kernel's JSON, with the keys file after the dimension and the count of keys below
        ``min_margin`` after the threshold."""
        data = super().to_json()
        if self.keys_file is not None:
            items = list(data.items())
            at = list(data).index("dim") + 1
            data = dict(items[:at] + [("keys_file", dict(self.keys_file))] + items[at:])
        if self.min_margin is None:
            return data
        at = list(data).index("min_margin") + 1
        items = list(data.items())
        return dict(items[:at] + [("below_min_margin", len(self.below_min_margin))] + items[at:])

    # ----------------------------------------------------------------- files
    def dumps(self, indent: int | None = None) -> str:
        return json.dumps(self.to_json(), indent=indent, allow_nan=False)   # JSON that 'check' reads

    def save(self, path: str | os.PathLike, indent: int | None = None) -> Path:
        """Write the JSON (atomically: a temporary file is renamed into place; only a regular
        file or nothing is replaced, see :mod:`lnproofs.certificates.writes`)."""
        from .writes import write_text

        return write_text(path, self.dumps(indent) + "\n")

    @classmethod
    def load(cls, path: str | os.PathLike, limits: Limits = DEFAULT_LIMITS,
             max_bytes: int | None = None) -> "Certificate":
        """Read a certificate file within ``limits`` (nesting, digits; at most ``max_bytes``)."""
        return cls.from_json(read_json_file(path, limits, max_bytes))

    # ------------------------------------------------------------------ text
    @property
    def rank_warning(self) -> str | None:
        """One line when the keys lie on an affine subspace up to rounding, else None."""
        rank = self.rank
        if not rank or rank["numerical_affine_dimension"] >= rank["exact_affine_dimension"]:
            return None
        ex, nu, sv = rank["exact_affine_dimension"], rank["numerical_affine_dimension"], rank["singular_values"]
        small = (float(sv[nu]) / float(sv[0]) if nu < len(sv) and sv[nu] is not None and sv[0] else 0.0)
        return (f"warning: the keys span {ex} dimensions exactly but only {nu} numerically (singular value "
                f"ratio {small:.1e} <= 2^-32): they lie on a {nu}-dimensional affine subspace up to rounding, "
                f"and keys that win only through the rounding do so by tiny margins (see --min-margin)")

    def _others(self, limit: int | None = 20) -> list:
        return [r for r in self.results if r.status != "selectable"][:limit]

    def _heading(self) -> str:
        return f"{self.n_keys} keys in R^{self.dim}"

    def describe(self, limit: int = 20) -> str:
        """A short human summary: counts, then each non-selectable key and its status."""
        parts = [f"{n} {s}" for s, n in self.summary.items() if n or s != "not-realisable"]
        if self.min_margin is not None:
            parts[0] += f" ({len(self.below_min_margin)} only by a margin below {self.min_margin:g})"
        source = " (LayerNorm outputs of the inputs given)" if self.keys_from else ""
        lines = [f"{self._heading()}{source}, {self.query_set.get('kind', 'free')} queries: {', '.join(parts)}"]
        if self.rank_warning:
            lines.insert(0, self.rank_warning)
        others = self._others(None)
        lines += [f"  key {r.index}: {r.status}" + (f" ({r.reason})" if r.reason else "") for r in others[:limit]]
        if len(others) > limit:
            lines.append(f"  ... and {len(others) - limit} more")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.describe()

    def _repr_markdown_(self) -> str:
        rows = ["| status | keys |", "|---|---|"] + [f"| {s} | {n} |" for s, n in self.summary.items()]
        text = (f"**Selectability certificate**: {self._heading()}, {self.query_set.get('kind', 'free')} queries\n\n"
                + "\n".join(rows))
        if self._others():
            text += "\n\nNot selectable: " + ", ".join(f"{r.index} ({r.status})" for r in self._others())
        return text

    def _repr_html_(self) -> str:
        cells = "".join(f"<tr><td>{html.escape(s)}</td><td>{n}</td></tr>" for s, n in self.summary.items())
        tail = ""
        if self._others():
            shown = ", ".join(f"{r.index} ({html.escape(r.status)})" for r in self._others())
            tail = f"<p>Not selectable: {shown}</p>"
        kind = html.escape(str(self.query_set.get("kind", "free")))
        return (f"<div><b>Selectability certificate</b>: {self.n_keys} keys in R<sup>{self.dim}</sup>, "
                f"{kind} queries<table><tr><th>status</th><th>keys</th></tr>{cells}</table>{tail}</div>")
