"""The certificate people hold: the kernel's schema plus files and text.

:class:`Certificate` is :class:`lnproofs.kernel.Certificate` (the fields, their
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
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..kernel import STATUSES, CertificateFormatError, InputError, KeyResult, freeze, parse_fraction, thaw
from ..kernel import Certificate as KernelCertificate
from .keyfile import keys_reference, reading_note, validate_reading, validate_reference
from .limits import DEFAULT_LIMITS, Limits, read_json_file
from .writers import result_to_json

__all__ = ["Certificate"]


def read_float(value, where: str) -> float:
    """An informational float (a margin, ``min_margin``): a finite number or a ``"p/q"`` string in
    the float range (the kernel does not read these)."""
    try:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise InputError("not a number")
        number = float(parse_fraction(value) if isinstance(value, str) else value)
    except (InputError, OverflowError):
        number = float("nan")
    if number != number or abs(number) == float("inf"):
        raise CertificateFormatError(
            f"certificate field {where} is {value!r:.60}; expected a finite number or a 'p/q' string in the float range"
        )
    return number


def _informational(results, raw) -> tuple:
    """The results with their margins read as floats and their reasons checked to be text."""
    out = list(results)
    for n, (r, data) in enumerate(zip(results, raw)):
        if r.reason is not None and not isinstance(r.reason, str):
            raise CertificateFormatError(f"certificate field results[{n}].reason must be a string or null")
        if r.margin is not None and type(r.margin) is not float:
            out[n] = dataclasses.replace(r, margin=read_float(data["margin"], f"results[{n}].margin"))
        elif r.margin is not None:
            read_float(r.margin, f"results[{n}].margin")
    return tuple(out)


def _finite(value) -> bool:
    """A JSON number that is a finite float (ints of any length are refused past 2**1000)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return abs(value) < 2**1000 if isinstance(value, int) else value == value and abs(value) != float("inf")


@dataclasses.dataclass(frozen=True)
class Certificate(KernelCertificate):
    """Per-key selectability results for N keys in R^d under a query set (see
    :mod:`lnproofs.kernel.certificates` for the fields the kernel reads and the JSON schema).

    Informational fields (the kernel never reads them; :mod:`.findings` measures them again):

    * ``min_margin`` (optional): a threshold DELTA chosen by the user; ``below_min_margin``
      counts the selectable keys whose witness margin is below it ("selectable only by a margin
      below DELTA").  Such keys are still selectable: the witness is exact about the keys given.
    * ``rank`` (optional): ``exact_affine_dimension`` of the keys (exact) next to
      ``numerical_affine_dimension`` (singular values of the centred keys above a stated multiple
      of the float precision, ``threshold``, with ``singular_values`` and ``rule``).  A numerical
      dimension below the exact one means the keys lie on an affine subspace up to rounding.
    * ``keys_file`` (JSON field ``keys_file``): ``{"path", "sha256"}`` of the keys file a
      certificate written apart from its keys is about (:mod:`.keyfile`).
    * ``keys_reading`` (optional): how the keys file's decimals were read, when that is not the
      numbers as floats: ``{"reading": "exact", "scale": "10"}`` (the rationals written, times that
      positive integer) or ``{"reading": "float64"}`` (each decimal as its nearest float64).  Not
      informational: ``lnproofs check`` reads the keys file the same way (:mod:`.keyfile`)."""

    rank: Mapping[str, Any] | None = None
    min_margin: float | None = None
    keys_file: Mapping[str, Any] | None = None
    keys_reading: Mapping[str, Any] | None = None

    def __post_init__(self):
        super().__post_init__()
        if self.rank is not None:
            object.__setattr__(self, "rank", freeze(dict(self.rank)))
        if self.min_margin is not None:
            object.__setattr__(self, "min_margin", float(self.min_margin))
        if self.keys_file is not None:
            object.__setattr__(self, "keys_file", MappingProxyType(dict(self.keys_file)))
        if self.keys_reading is not None:
            object.__setattr__(self, "keys_reading", MappingProxyType(validate_reading(self.keys_reading)))

    @property
    def summary(self) -> dict[str, int]:
        """Counts per status (``not-realisable`` only when present)."""
        counts = {s: 0 for s in STATUSES if s != "not-realisable"}
        for r in self.results:
            counts[r.status] = counts.get(r.status, 0) + 1
        return counts

    # ------------------------------------------------------------------ keys
    @property
    def statuses(self) -> tuple[str, ...]:
        return tuple(r.status for r in self.results)

    def indices(self, status: str) -> tuple[int, ...]:
        """Indices of the keys with ``status``."""
        return tuple(r.index for r in self.results if r.status == status)

    def __getitem__(self, index: int) -> KeyResult:
        return self.results[index]

    def __len__(self) -> int:
        return len(self.results)

    def __iter__(self):
        return iter(self.results)

    @classmethod
    def from_json(cls, data) -> Certificate:
        """The kernel's reading of the JSON, and the rank finding's fields (informational: the
        kernel does not read them, the rank warning does)."""
        if isinstance(data, (str, bytes)):
            data = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
            try:
                data = json.loads(data)
            except (ValueError, RecursionError) as exc:
                raise CertificateFormatError(f"certificate is not valid JSON ({str(exc)[:200]})") from None
        cert = super().from_json(data)
        extra = {"results": _informational(cert.results, data["results"])}
        if data.get("min_margin") is not None:
            extra["min_margin"] = read_float(data["min_margin"], "min_margin")
            if extra["min_margin"] < 0:
                raise CertificateFormatError(
                    f"certificate field min_margin is {extra['min_margin']!r}; expected a number >= 0"
                )
        if data.get("rank") is not None:
            if not isinstance(data["rank"], dict):
                raise CertificateFormatError("certificate field rank must be an object or null")
            extra["rank"] = data["rank"]
        if data.get("keys_file") is not None:
            extra["keys_file"] = validate_reference(data["keys_file"])
        if data.get("keys_reading") is not None:
            extra["keys_reading"] = validate_reading(data["keys_reading"])
        cert = dataclasses.replace(cert, **extra)
        if cert.rank is None:
            return cert
        for name in ("exact_affine_dimension", "numerical_affine_dimension"):
            value = cert.rank.get(name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise CertificateFormatError(
                    f"certificate field rank.{name} is {value!r}; expected a non-negative integer"
                )
        sv = cert.rank.get("singular_values")
        if not isinstance(sv, tuple) or not all(v is None or (_finite(v) and v >= 0) for v in sv):
            raise CertificateFormatError(
                "certificate field rank.singular_values must be a list of finite numbers "
                ">= 0 (null for one beyond the float range)"
            )
        return cert

    @property
    def below_min_margin(self) -> tuple[int, ...]:
        """Selectable keys whose witness margin is below ``min_margin`` (none without one)."""
        if self.min_margin is None:
            return ()
        return tuple(
            r.index
            for r in self.results
            if r.status == "selectable" and r.margin is not None and r.margin < self.min_margin
        )

    def query_set_json(self) -> dict:
        """The query set as a plain JSON object."""
        return thaw(self.query_set)

    def with_keys_file(self, certificate_path, keys_path) -> Certificate:
        """This certificate naming ``keys_path`` (relative to where it will be saved) and its SHA-256."""
        return dataclasses.replace(self, keys_file=keys_reference(certificate_path, keys_path))

    def to_json(self) -> dict:
        """The JSON (schema ``lnproofs.selectability/1``): the kernel's fields, the keys file after
        the dimension, the counts per status, and the count of keys below ``min_margin`` after it."""
        extra = (
            {}
            if self.min_margin is None
            else {"min_margin": self.min_margin, "below_min_margin": len(self.below_min_margin)}
        )
        return {
            "schema": self.schema,
            "n_keys": int(self.n_keys),
            "dim": int(self.dim),
            **({} if self.keys_file is None else {"keys_file": dict(self.keys_file)}),
            **({} if self.keys_reading is None else {"keys_reading": dict(self.keys_reading)}),
            "query_set": thaw(self.query_set),
            "summary": self.summary,
            **extra,
            **({} if self.rank is None else {"rank": thaw(self.rank)}),
            **({} if self.keys_from is None else {"keys_from": thaw(self.keys_from)}),
            "results": [result_to_json(r) for r in self.results],
        }

    # ----------------------------------------------------------------- files
    def dumps(self, indent: int | None = None) -> str:
        return json.dumps(self.to_json(), indent=indent, allow_nan=False)  # JSON that 'check' reads

    def save(self, path: str | os.PathLike, indent: int | None = None) -> Path:
        """Write the JSON (atomically: a temporary file is renamed into place; only a regular
        file or nothing is replaced, see :mod:`lnproofs.certificates.writes`)."""
        from .writes import write_text

        return write_text(path, self.dumps(indent) + "\n")

    @classmethod
    def load(
        cls, path: str | os.PathLike, limits: Limits = DEFAULT_LIMITS, max_bytes: int | None = None
    ) -> Certificate:
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
        small = float(sv[nu]) / float(sv[0]) if nu < len(sv) and sv[nu] is not None and sv[0] else 0.0
        return (
            f"warning: the keys span {ex} dimensions exactly but only {nu} numerically (singular value "
            f"ratio {small:.1e} <= 2^-32): they lie on a {nu}-dimensional affine subspace up to rounding, "
            f"and keys that win only through the rounding do so by tiny margins (see --min-margin)"
        )

    def _others(self, limit: int | None = 20) -> list:
        return [r for r in self.results if r.status != "selectable"][:limit]

    def _heading(self) -> str:
        return f"{self.n_keys} keys in R^{self.dim}"

    def describe(self, limit: int = 20) -> str:
        """A short human summary: counts, then each non-selectable key and its status."""
        parts = [f"{n} {s}" for s, n in self.summary.items() if n or s != "not-realisable"]
        if self.min_margin is not None:
            parts[0] += f" ({len(self.below_min_margin)} only by a margin below {self.min_margin:g})"
        source = (" (LayerNorm outputs of the inputs given)" if self.keys_from else "") + reading_note(
            self.keys_reading
        )
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
        text = (
            f"**Selectability certificate**: {self._heading()}, {self.query_set.get('kind', 'free')} queries\n\n"
            + "\n".join(rows)
        )
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
        return (
            f"<div><b>Selectability certificate</b>: {self.n_keys} keys in R<sup>{self.dim}</sup>, "
            f"{kind} queries<table><tr><th>status</th><th>keys</th></tr>{cells}</table>{tail}</div>"
        )
