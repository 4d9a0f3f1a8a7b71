"""Vocabulary certificates (``lnproofs.vocab/1``): a JSON manifest and binary arrays beside it.

A vocabulary of tens of thousands of keys is certified mostly by references: a token whose
witness is its own key (``SELF``, with a scale per token when there is a bias, a box or a norm
set), or a row of a shared array of float queries (``QUERY``); under a final norm's set
(``layernorm``, ``rmsnorm``) the witnesses are the norm's inputs ``u``: ``SELF`` is the key's own
direction ``u_i = t_i J_i`` (:func:`norm_directions`) and ``QUERY`` a row of ``u``s; the few others carry a full result of the
``lnproofs.selectability/1`` schema (``RESULT``: exact weights, rational witnesses) inside the
manifest.  The arrays are ``.npy`` files next to the manifest, each named with its SHA-256::

    {"schema": "lnproofs.vocab/1", "n_keys": N, "dim": d,
     "keys_file": {"path": "keys.npy", "sha256": "..."},
     "query_set": {"kind": "box", "bound": 100.0},
     "arrays": {"evidence": {"path": "cert.evidence.npy", "sha256": "..."}, "bias": {...}, ...},
     "counts": {"selectable": ..., ...}, "results": [...]}

The kernel decides: a token's own key as its witness (``q = t_i k_i``, theorem
``vocab.self_witness``) is checked by the kernel's witness check like any other witness (one
blocked product of the keys with the witnesses, under its float filter, exact integers for what
the filter leaves), a norm set's float ``u`` by
:func:`lnproofs.kernel.querysets.norm.check_float_witnesses`, every other token by its query set's
checks; :func:`check_vocab` only turns the references into that evidence.  This module reads, writes and reports.  ``.npy`` files are read with ``allow_pickle=False``: nothing is ever unpickled.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np

from ..kernel.certificates import KeyResult
from ..kernel.checker import ExactKeys, Verdict, check_witnesses
from ..kernel.errors import CertificateFormatError, require
from ..kernel.querysets import module_for, query_set_from_json
from .check import CheckReport
from .keyfile import keys_reference, sha256_of, validate_reference
from .writers import result_to_json
from .writes import write_array, write_text

__all__ = [
    "SCHEMA",
    "ARRAYS",
    "NONE",
    "SELF",
    "QUERY",
    "RESULT",
    "NORM_SETS",
    "VocabCertificate",
    "load_vocab",
    "vocab_keys_path",
    "self_witnesses",
    "norm_directions",
    "integer_rows",
    "check_vocab",
    "merge_vocab",
]

#: the evidence codes: undecided, the key itself (``t_i k_i``), a row of the shared queries, a full result
NONE, SELF, QUERY, RESULT = 0, 1, 2, 3

SCHEMA = "lnproofs.vocab/1"
#: the norm query sets whose tokens may be certified by references (their own key's direction, a shared u)
NORM_SETS = ("layernorm", "rmsnorm")
#: the arrays a manifest may name, with the dtype each is stored in
ARRAYS = {"evidence": np.int8, "scale": np.float64, "queries": np.float64, "rows": np.int32, "bias": np.float64}


def self_witnesses(keys, selves, scale) -> list:
    """``(i, q)`` with ``q = t_i k_i`` for each token ``i`` of ``selves``: the float row itself where
    the product is exact (``t_i`` a power of two, nothing overflowing or underflowing), else exact
    rationals."""
    K = getattr(keys, "array", keys)
    selves, t = np.asarray(selves, dtype=np.int64), np.asarray(scale, dtype=np.float64)
    Q = K[selves] * t[selves, None]
    exact = (np.frexp(t[selves])[0] == 0.5) & np.all(
        np.isfinite(Q) & ((Q == 0) == (K[selves] == 0)) & ((np.abs(Q) >= 2.0**-1022) | (Q == 0)), axis=1
    )
    return [
        (int(i), Q[k] if exact[k] else tuple(Fraction(float(t[i])) * Fraction(x) for x in K[i].tolist()))
        for k, i in enumerate(selves)
    ]


def norm_directions(keys, query_set, tokens, block: int = 4096) -> np.ndarray:
    """Integer rows ``J_i`` (as floats, exactly) in the direction of ``z_i = g * W_q^T k_i`` for the
    ``tokens``, under a norm query set whose ``W_q`` selects coordinates (entries 0 and 1, one 1 per
    column; ``W_q^T k_i`` is then ``k_i``'s selected entries): ``z_i`` rounded to integers of at most
    12 bits (``2^12`` for its largest entry) and, for a centred set, moved onto ``1 . J = 0``
    (:func:`integer_rows`).  Every step after the product is on integers, so every machine makes the same rows; a token's self witness is
    ``u_i = t_i J_i`` (its ``scale``), which the kernel decides like any float witness
    (:func:`lnproofs.kernel.querysets.norm.check_float_witnesses`)."""
    K, arrays = getattr(keys, "array", keys), query_set.arrays()
    cols, g = arrays["W_q"].argmax(axis=0), arrays[query_set.G_NAME]
    tokens = np.asarray(tokens, dtype=np.int64)
    out = np.empty((len(tokens), len(g)))
    for a in range(0, len(tokens), block):
        out[a : a + block] = integer_rows(K[tokens[a : a + block]][:, cols] * g, 12, query_set.centred)[0]
    return out


def integer_rows(Z: np.ndarray, bits: int, centred: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(J, e)``: each row of ``Z`` as integers ``J`` (int64; ``2^bits`` at most for its largest entry)
    with ``Z ~ J 2^e`` row by row, and for ``centred`` moved onto ``1 . J = 0`` exactly (minus the
    floor of its mean, then minus 1 on its first ``1 . J`` entries): only the rounding is a float step."""
    top = np.abs(Z).max(axis=1, initial=0.0)
    e = np.where(top > 0, np.frexp(top)[1] - bits, 0)
    J = np.rint(np.ldexp(Z, -e[:, None])).astype(np.int64)
    if centred:
        J -= (J.sum(axis=1) // J.shape[1])[:, None]
        J -= np.arange(J.shape[1])[None, :] < J.sum(axis=1)[:, None]
    return J, e


def check_vocab(keys, query_set, selves, scale, results, shared=None) -> list:
    """The kernel's verdict on every token, in index order: the tokens of ``selves`` claim
    ``selectable`` with their own key's witness (``t_i k_i``; under a norm set ``u_i = t_i J_i``,
    :func:`norm_directions`), the tokens of ``shared`` (``(indices, rows)``) with a row of floats
    (a query; under a norm set a ``u``); every other token has one of ``results``.  Float witnesses
    go straight to the kernel's witness checks (no per-entry Python objects for tens of thousands
    of witnesses); other results to their query set's checks."""
    ek = ExactKeys.of(keys)
    t = np.asarray(scale, dtype=np.float64)
    norm = query_set.kind in NORM_SETS
    picked, rows = (np.zeros(0, np.int64), np.zeros((0, 0))) if shared is None else shared
    named = sorted([int(i) for i in selves] + [int(i) for i in picked] + [int(r.index) for r in results])
    require(named == list(range(ek.n)), CertificateFormatError, f"every key 0..{ek.n - 1} must be named once")
    require(
        not len(selves) or query_set.kind in ("free", "box", *NORM_SETS),
        CertificateFormatError,
        f"self witnesses are for free, box and norm query sets, not {query_set.kind!r}",
    )
    require(
        t.shape == (ek.n,) and bool(np.all(t[np.asarray(selves, dtype=np.int64)] > 0)) and bool(np.isfinite(t).all()),
        CertificateFormatError,
        "scale must give one finite t_i > 0 per key",
    )
    width = query_set.width if norm else ek.dim
    require(
        not len(picked) or (rows.ndim == 2 and rows.shape == (len(picked), width)),
        CertificateFormatError,
        f"the shared queries must be rows of {width} numbers",
    )
    if norm:
        from ..kernel.querysets.norm import check_float_witnesses

        selves = np.asarray(selves, dtype=np.int64)
        U = np.vstack([norm_directions(ek, query_set, selves) * t[selves, None], rows.reshape(len(picked), width)])
        verdicts = check_float_witnesses(ek, query_set, np.r_[selves, picked], U) if len(U) else []
        verdicts += module_for(query_set.kind).check_all(ek, query_set, list(results)) if results else []
        return sorted(verdicts, key=lambda v: v.index)
    results = list(results) + [
        KeyResult(int(i), "selectable", tuple(q.tolist()), None, "exact") for i, q in zip(picked, rows)
    ]
    items = self_witnesses(ek, selves, t)
    if query_set.kind == "free":
        verdicts = [
            Verdict(i, "selectable", m is None, m or "")
            for (i, _), m in zip(items, check_witnesses(ek, items, mode="strict"))
        ]
        verdicts += module_for("free").check_all(ek, query_set, list(results)) if results else []
    else:
        claims = list(results) + [
            KeyResult(i, "selectable", tuple(q.tolist()) if isinstance(q, np.ndarray) else q) for i, q in items
        ]
        verdicts = module_for(query_set.kind).check_all(ek, query_set, claims)
    return sorted(verdicts, key=lambda v: v.index)


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

    def _sets(self):
        """``(the set the evidence is checked under, the coverage check's verdict or None)``: with a coverage
        claim, a norm query set that realises every direction (kernel-checked) has the free answers."""
        if self.coverage is None:
            return self.query_set_object(), None
        from ..kernel.checker import Verdict
        from ..kernel.querysets.coverage import check_coverage
        from ..kernel.querysets.free import FreeQueries

        ok, message = check_coverage(query_set_from_json(self.query_set), self.coverage)
        return FreeQueries(), Verdict(-1, "coverage", ok, "" if ok else f"coverage claim: {message}")

    def query_set_object(self):
        data = dict(self.query_set)
        if self.bias is not None:
            data["bias"] = self.bias.tolist()
        return query_set_from_json(data)

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

    def check(self, keys) -> CheckReport:
        """The kernel's verdict on every token."""
        from ..kernel.errors import ShapeError

        shape = np.shape(getattr(keys, "array", keys))
        if tuple(shape) != (self.n_keys, self.dim):
            raise ShapeError(
                f"the certificate is for {self.n_keys} keys in R^{self.dim} but the keys have shape {tuple(shape)}"
            )
        ev = np.asarray(self.evidence)
        if ev.shape != (self.n_keys,) or not np.isin(ev, (NONE, SELF, QUERY, RESULT)).all():
            raise CertificateFormatError(f"the evidence array must give one code 0..3 per key ({self.n_keys} keys)")
        given = {int(r.index): r for r in self.results}
        if sorted(given) != np.flatnonzero(ev == RESULT).tolist() or len(given) != len(self.results):
            raise CertificateFormatError(
                "the results must be exactly the keys whose evidence is 3 (a full result), each once"
            )
        results = list(self.results) + [KeyResult(int(i), "undecided") for i in np.flatnonzero(ev == NONE)]
        shared = None
        if np.any(ev == QUERY):  # a shared query (or u) is this token's witness
            Q, rows = self.queries, self.rows
            if (
                Q is None
                or rows is None
                or rows.shape != (self.n_keys,)
                or Q.ndim != 2
                or not np.all((rows[ev == QUERY] >= 0) & (rows[ev == QUERY] < len(Q)))
            ):
                raise CertificateFormatError("evidence 2 (a shared query) needs the queries array and rows indexing it")
            shared = (np.flatnonzero(ev == QUERY), Q[rows[ev == QUERY]])
        scale = np.ones(self.n_keys) if self.scale is None else self.scale
        qs, cover = self._sets()
        verdicts = check_vocab(keys, qs, np.flatnonzero(ev == SELF), scale, results, shared) + (
            [cover] if cover else []
        )
        kind = self.query_set.get("kind", "free")
        return CheckReport(
            all(v.ok for v in verdicts),
            tuple(verdicts),
            int(self.n_keys),
            int(self.dim),
            f"{kind} queries" + ("" if self.bias is None else " with a bias per key"),
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
    )


def vocab_keys_path(path, cert: VocabCertificate, given=None) -> Path:
    """The keys file of a vocabulary certificate (``given``, else the one it names); the SHA-256 must match."""
    from .keyfile import resolve_keys

    if cert.keys_file is None:
        if given is None:
            raise CertificateFormatError(f"{path} names no keys file; give the KEYS file it is about")
        return Path(given)
    return resolve_keys(path, cert.keys_file, given)
