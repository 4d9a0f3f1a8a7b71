"""Vocabulary certificates (``lnproofs.vocab/1``): a JSON manifest and binary arrays beside it.

A vocabulary of tens of thousands of keys is certified mostly by references: a token whose
witness is its own key (``SELF``, with a scale per token when there is a bias, a box or a norm
set), or a row of a shared array of float queries (``QUERY``); under a final norm's set the
witnesses are the norm's inputs ``u``; the few others carry a full result of the
``lnproofs.selectability/1`` schema (``RESULT``: exact weights, rational witnesses) inside the
manifest.  The arrays are ``.npy`` files next to the manifest, each named with its SHA-256::

    {"schema": "lnproofs.vocab/1", "n_keys": N, "dim": d,
     "keys_file": {"path": "keys.npy", "sha256": "..."},
     "query_set": {"kind": "box", "bound": 100.0},
     "arrays": {"evidence": {"path": "cert.evidence.npy", "sha256": "..."}, "bias": {...}, ...},
     "counts": {"selectable": ..., ...}, "results": [...]}

What each reference claims and every verdict are the kernel's
(:func:`lnproofs.kernel.check_vocab`, from the manifest and the arrays as read); this module
reads, writes, merges and reports.  ``.npy`` files are read with ``allow_pickle=False``: nothing
is ever unpickled.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..kernel import EVIDENCE, VOCAB_SCHEMA, CertificateFormatError, KeyResult, check_vocab, require
from .check import CheckReport
from .keyfile import keys_reference, reading_note, sha256_of, validate_reading, validate_reference
from .writers import result_to_json
from .writes import write_array, write_text

__all__ = [
    "SCHEMA",
    "ARRAYS",
    "NONE",
    "SELF",
    "QUERY",
    "RESULT",
    "VocabCertificate",
    "load_vocab",
    "vocab_keys_path",
    "merge_vocab",
]

#: the evidence codes (the kernel's): undecided, the key itself (``t_i k_i``), a row of the shared queries, a full result
NONE, SELF, QUERY, RESULT = EVIDENCE
SCHEMA = VOCAB_SCHEMA
#: the arrays a manifest may name, with the dtype each is stored in
ARRAYS = {"evidence": np.int8, "scale": np.float64, "queries": np.float64, "rows": np.int32, "bias": np.float64}


@dataclass(frozen=True)
class VocabCertificate:
    """Every token's evidence (see the module docstring); ``query_set`` is its JSON without the bias."""

    n_keys: int
    dim: int
    query_set: dict
    evidence: np.ndarray
    scale: np.ndarray | None = None
    queries: np.ndarray | None = None
    rows: np.ndarray | None = None
    bias: np.ndarray | None = None
    results: tuple = ()
    keys_file: dict | None = field(default=None, compare=False)
    coverage: dict | None = None
    #: how the keys file's numbers were read when not as floats (:func:`.keyfile.validate_reading`)
    keys_reading: dict | None = None

    def statuses(self) -> list[str]:
        """The status each token's evidence claims, in index order."""
        out = np.full(self.n_keys, "undecided", dtype=object)
        out[(self.evidence == SELF) | (self.evidence == QUERY)] = "selectable"
        for r in self.results:
            out[r.index] = r.status
        return out.tolist()

    def counts(self) -> dict:
        return dict(sorted(Counter(self.statuses()).items()))

    def evidence_counts(self) -> dict:
        names = {NONE: "none", SELF: "own key", QUERY: "shared query", RESULT: "full result"}
        return {names[k]: int(v) for k, v in zip(*np.unique(self.evidence, return_counts=True))}

    def manifest(self) -> dict:
        """What the kernel reads of the manifest (the results as data)."""
        fields = ("n_keys", "dim", "query_set", "results", "coverage")
        return {name: list(self.results) if name == "results" else getattr(self, name) for name in fields}

    def arrays(self) -> dict:
        """The arrays the manifest names, by name."""
        return {name: getattr(self, name) for name in ARRAYS if getattr(self, name) is not None}

    def check(self, keys, matmul=None) -> CheckReport:
        """The kernel's verdict on every token (and on the coverage claim); ``matmul``: the float
        filter's product (:class:`lnproofs.kernel.ExactKeys`; None: numpy's), which changes no verdict."""
        verdicts = check_vocab(keys, self.manifest(), self.arrays(), matmul)
        kind = self.query_set.get("kind", "free")
        return CheckReport(
            all(v.ok for v in verdicts),
            tuple(verdicts),
            int(self.n_keys),
            int(self.dim),
            f"{kind} queries" + ("" if self.bias is None else " with a bias per key"),
        )

    def describe(self, limit: int = 20) -> str:
        """A short human summary: the counts per status and by evidence, then each key that is not
        ``selectable`` and its status (the reason of an ``undecided`` one is not kept)."""
        parts = [f"{n} {s}" for s, n in self.counts().items()]
        evidence = ", ".join(f"{v} {k}" for k, v in self.evidence_counts().items())
        lines = [
            f"{self.n_keys} keys in R^{self.dim}{reading_note(self.keys_reading)}, "
            f"{self.query_set.get('kind', 'free')} queries"
            + ("" if self.bias is None else " with a bias per key")
            + f": {', '.join(parts)} (evidence: {evidence})"
        ]
        others = [(i, s) for i, s in enumerate(self.statuses()) if s != "selectable"]
        lines += [f"  key {i}: {s}" for i, s in others[:limit]]
        if len(others) > limit:
            lines.append(f"  ... and {len(others) - limit} more")
        return "\n".join(lines)

    def key_results(self, keys) -> list[KeyResult]:
        """One :class:`~lnproofs.kernel.KeyResult` per key, in index order: each reference written
        out as the witness it stands for (``t_i k_i``, a row of the shared queries, or under a norm
        set the input ``u`` as the extra ``u``), the full results as they are, the others
        ``undecided``.  The selectability certificate of these results makes the same claims."""
        from ..kernel import NormQuerySet, norm_directions, query_set_from_json, self_witnesses

        require(self.coverage is None, CertificateFormatError, "a coverage claim has no per-key form")
        qs = query_set_from_json(dict(self.query_set, **({} if self.bias is None else {"bias": self.bias.tolist()})))
        t = np.ones(self.n_keys) if self.scale is None else self.scale
        selves, picked = np.flatnonzero(self.evidence == SELF), np.flatnonzero(self.evidence == QUERY)
        out = [KeyResult(i, "undecided", reason="no evidence was found") for i in range(self.n_keys)]
        for r in self.results:
            out[r.index] = r
        if isinstance(qs, NormQuerySet):
            U = norm_directions(keys, qs, selves) * t[selves, None]
            for i, u in [*zip(selves.tolist(), U), *((i, self.queries[self.rows[i]]) for i in picked.tolist())]:
                out[i] = KeyResult(i, "selectable", verified="exact", extras={"u": u.tolist()})
            return out
        items = self_witnesses(keys, selves, t) + [(i, self.queries[self.rows[i]]) for i in picked.tolist()]
        for i, q in items:
            out[i] = KeyResult(i, "selectable", tuple(q.tolist()) if isinstance(q, np.ndarray) else q, verified="exact")
        return out

    def selectability(self, keys):
        """The same claims as a selectability certificate (``lnproofs.selectability/1``, per key:
        :meth:`key_results`), naming the same keys file and reading."""
        from .certificate import Certificate

        qs = dict(self.query_set, **({} if self.bias is None else {"bias": self.bias.tolist()}))
        return Certificate(
            self.n_keys,
            self.dim,
            qs,
            tuple(self.key_results(keys)),
            keys_file=self.keys_file,
            keys_reading=self.keys_reading,
        )

    def save(self, path, keys_path=None) -> Path:
        """Write the manifest at ``path`` and its arrays beside it (``<stem>.<name>.npy``)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        arrays = {}
        for name, dtype in ARRAYS.items():
            value = getattr(self, name)
            if value is None:
                continue
            target = path.with_name(f"{path.stem}.{name}.npy")
            write_array(target, np.ascontiguousarray(value, dtype=dtype))
            arrays[name] = {"path": target.name, "sha256": sha256_of(target)}
        data = {
            "schema": SCHEMA,
            "n_keys": int(self.n_keys),
            "dim": int(self.dim),
            "keys_file": keys_reference(path, keys_path) if keys_path is not None else self.keys_file,
            **({} if self.keys_reading is None else {"keys_reading": dict(self.keys_reading)}),
            "query_set": self.query_set,
            "arrays": arrays,
            "counts": self.counts(),
            "evidence": self.evidence_counts(),
            "results": [result_to_json(r) for r in self.results],
            **({"coverage": self.coverage} if self.coverage is not None else {}),
        }
        return write_text(path, json.dumps(data, indent=1))


def merge_vocab(certs) -> VocabCertificate:
    """One certificate from certificates of disjoint chunks of the same keys and query set (each
    token's evidence from the chunk that has it; shared queries renumbered).  Every claim was
    checked by the kernel in its chunk, against every key; the merged certificate is checked again
    by whoever reads it."""
    certs = list(certs)
    first = certs[0]
    require(
        all((c.n_keys, c.dim, c.query_set) == (first.n_keys, first.dim, first.query_set) for c in certs),
        CertificateFormatError,
        "the chunks must certify the same keys under the same query set",
    )
    evidence, scale = np.full(first.n_keys, NONE, dtype=np.int8), np.ones(first.n_keys)
    rows, queries, results = np.full(first.n_keys, -1, dtype=np.int32), [], []
    for c in certs:
        mine = c.evidence != NONE
        require(not np.any(mine & (evidence != NONE)), CertificateFormatError, "two chunks give evidence for one token")
        evidence[mine] = c.evidence[mine]
        if c.scale is not None:
            scale[mine] = c.scale[mine]
        if c.queries is not None:
            picked = c.evidence == QUERY
            rows[picked] = c.rows[picked] + sum(len(q) for q in queries)
            queries.append(c.queries)
        results += list(c.results)
    has_scale = any(c.scale is not None for c in certs)
    return VocabCertificate(
        first.n_keys,
        first.dim,
        first.query_set,
        evidence,
        scale if has_scale else None,
        np.vstack(queries) if queries else None,
        rows if queries else None,
        first.bias,
        tuple(sorted(results, key=lambda r: r.index)),
        first.keys_file,
        first.coverage,
        first.keys_reading,
    )


def _array(folder: Path, name: str, ref, limits=None) -> np.ndarray:
    """The array ``name`` a manifest names: a regular file next to it, its SHA-256 compared from the
    same open file before it is parsed, its header checked within ``limits`` before its data is
    read (:func:`lnproofs.io.bounded.read_npy`), its dtype the one of :data:`ARRAYS`, every float
    finite."""
    from ..io.bounded import as_read_limits, read_npy

    ref = validate_reference(ref)
    if Path(ref["path"]).name != ref["path"]:
        raise CertificateFormatError(f"arrays.{name}.path {ref['path']!r} must be a file name next to the manifest")
    target = folder / ref["path"]
    if not target.exists() and not target.is_symlink():
        raise CertificateFormatError(f"the {name} array {target} named by the certificate does not exist")
    where = f"the {name} array {target}"
    value = read_npy(target, as_read_limits(limits), sha256=ref["sha256"], what=where)
    if value.dtype != ARRAYS[name]:
        raise CertificateFormatError(f"{where} has dtype {value.dtype}; expected {np.dtype(ARRAYS[name])}")
    if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(value))[0])
        raise CertificateFormatError(f"{where} holds {value[bad]} at index {bad}; only finite numbers are accepted")
    return value


def load_vocab(path, data: dict, limits=None) -> VocabCertificate:
    """The certificate of the manifest ``data`` read from ``path`` (its arrays read and their hashes
    compared; ``limits``: the :class:`lnproofs.io.bounded.ReadLimits` of each array, the defaults
    when None)."""
    path = Path(path)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise CertificateFormatError(f"{path} is not a vocabulary certificate; expected schema {SCHEMA!r}")
    for name, kind in (("n_keys", int), ("dim", int), ("query_set", dict), ("arrays", dict), ("results", list)):
        if not isinstance(data.get(name), kind) or isinstance(data.get(name), bool):
            raise CertificateFormatError(f"certificate field {name} is missing or not {kind.__name__}")
    unknown = sorted(set(data["arrays"]) - set(ARRAYS))
    if unknown or "evidence" not in data["arrays"]:
        raise CertificateFormatError(
            f"certificate field arrays names {unknown[0]!r}; known: {', '.join(ARRAYS)}"
            if unknown
            else "certificate field arrays has no 'evidence'"
        )
    qs = dict(data["query_set"])
    if "bias" in qs:
        raise CertificateFormatError("certificate field query_set holds a bias; it belongs in arrays.bias")
    arrays = {name: _array(path.parent, name, ref, limits) for name, ref in data["arrays"].items()}
    results = tuple(KeyResult.from_json(r, f"results[{n}]") for n, r in enumerate(data["results"]))
    ref = validate_reference(data["keys_file"]) if data.get("keys_file") is not None else None
    reading = validate_reading(data["keys_reading"]) if data.get("keys_reading") is not None else None
    return VocabCertificate(
        data["n_keys"],
        data["dim"],
        qs,
        arrays["evidence"],
        arrays.get("scale"),
        arrays.get("queries"),
        arrays.get("rows"),
        arrays.get("bias"),
        results,
        ref,
        data.get("coverage"),
        reading,
    )


def vocab_keys_path(path, cert: VocabCertificate, given=None) -> Path:
    """The keys file of a vocabulary certificate (``given``, else the one it names); the SHA-256 must match."""
    from .keyfile import resolve_keys

    if cert.keys_file is None:
        if given is None:
            raise CertificateFormatError(f"{path} names no keys file; give the KEYS file it is about")
        return Path(given)
    return resolve_keys(path, cert.keys_file, given)
