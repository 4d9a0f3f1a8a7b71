"""Causal prefixes: re-verify, key by key, the first query position at which a key stops winning.

The query at position t of a sequence sees keys 0..t.  For a query set that does not change
with the position (free queries, rotated or not; norm query sets without a rotation), a key
that cannot win over keys 0..t cannot win over any longer prefix, so each key j has one
``stop`` in j..T-1 (or None: it can win at every position).  A record
(schema ``lnproofs.causal/1``) holds, per key, evidence for both sides:

* ``cannot_win`` (when ``stop`` is not None): free queries: ``{"combination": ...}``, exact
  convex weights over keys 0..stop other than j reproducing k_j (so k_j never wins strictly
  there); other query sets: a result of a non-winning status (``not-realisable``, ...) of
  that set, checked by the set's own ``check_all`` on keys 0..stop;
* ``win`` (when ``t* = stop - 1``, or T - 1 when ``stop`` is None, is >= j): a ``selectable``
  result of the query set checked on keys 0..t*; a query making k_j the strict winner over
  0..t* does so over every shorter prefix containing j, so it covers the positions j..t*.

Keys listed under ``undecided`` carry no claim.  Everything is decided by the existing checks
(:func:`.checker.check_combinations` and each query set's ``check_all``), exactly.
"""

from __future__ import annotations

from .certificates import Combination, KeyResult, _bad, _int, each_once, same_shape
from .checker import ExactKeys, Verdict, check_combinations
from .errors import CertificateFormatError, require
from .querysets import query_set_from_json
from .querysets.free import FreeQueries

CAUSAL_SCHEMA = "lnproofs.causal/1"
_ENTRY = ("index", "stop", "win", "cannot_win")


def _prefix(ek: ExactKeys, m: int) -> ExactKeys:
    """Keys 0..m-1 (their exact forms are built only when a check needs them)."""
    return ek if m == ek.n else ExactKeys(ek.array[:m])


def record_query_set(record: dict, query_set=None):
    """The query-set object a record is about (its JSON; null: free queries).  A record may instead hold
    a reference (an object without ``kind``) that the caller resolves by passing ``query_set``."""
    stored = record.get("query_set")
    if isinstance(stored, dict) and "kind" not in stored:
        require(
            query_set is not None,
            CertificateFormatError,
            f"the causal record refers to a query set it does not hold ({stored}); pass that set to check_causal",
        )
        return query_set
    parsed = query_set_from_json(stored)
    require(
        query_set is None or query_set == parsed,
        CertificateFormatError,
        "the query set given differs from the one the causal record holds",
    )
    return parsed


def _entries(record, n: int, dim: int) -> tuple[list[dict], list[int]]:
    """The validated key entries and the undecided indices; every key exactly once."""
    if not isinstance(record, dict) or record.get("schema") != CAUSAL_SCHEMA:
        raise CertificateFormatError(f"a causal record must be a JSON object with schema {CAUSAL_SCHEMA!r}")
    same_shape(record, n, dim, "causal record")
    keys, undecided = record.get("keys"), record.get("undecided", [])
    if not isinstance(keys, list) or not isinstance(undecided, list) or len(keys) + len(undecided) != n:
        raise _bad("keys", f"and undecided must be lists holding {n} entries together")
    entries, open_ = [], []
    for pos, e in enumerate(keys):
        where = f"keys[{pos}]"
        if not isinstance(e, dict) or set(e) - set(_ENTRY) or "index" not in e or "stop" not in e:
            raise _bad(where, f"must be an object with fields {', '.join(_ENTRY)} (and no others)")
        _int(e["index"], f"{where}.index", f"an integer in 0..{n - 1}", 0, n - 1)
        if e["stop"] is not None and (isinstance(e["stop"], bool) or not isinstance(e["stop"], int)):
            raise _bad(f"{where}.stop", f"is {e['stop']!r}; expected an integer key index or null")
        for name in ("win", "cannot_win"):
            if e.get(name) is not None and not isinstance(e[name], dict):
                raise _bad(f"{where}.{name}", "must be an object or null")
        entries.append(e)
    for pos, u in enumerate(undecided):
        if not isinstance(u, dict) or not isinstance(u.get("reason"), str):
            raise _bad(f"undecided[{pos}]", "must be an object with an index and a string reason")
        open_.append(_int(u.get("index"), f"undecided[{pos}].index", f"an integer in 0..{n - 1}", 0, n - 1))
    each_once([e["index"] for e in entries] + open_, n, "causal record fields keys and undecided")
    return entries, open_


def _result(data: dict, j: int, where: str) -> KeyResult:
    return KeyResult.from_json({"status": "undecided", "verified": "none", **data, "index": j}, where)


def check_causal(keys, record: dict, query_set=None) -> list[Verdict]:
    """One verdict per key (in index order) on a ``lnproofs.causal/1`` record for ``keys``
    (see the module docstring); ``query_set`` resolves a record that refers to its set."""
    ek = ExactKeys.of(keys)
    n, dim = ek.n, ek.dim
    entries, open_ = _entries(record, n, dim)
    qs = record_query_set(record, query_set)
    qs.validate(dim)
    free = type(qs) is FreeQueries  # evidence that k_j cannot win: convex weights, else a result of the set
    messages: dict[int, str] = {}
    claims: dict[int, str] = {j: "undecided" for j in open_}
    wins: dict[int, list] = {}  # t* -> [(j, KeyResult)]
    stops: dict[int, list] = {}  # stop -> [(j, KeyResult or Combination)]
    for pos, e in enumerate(entries):
        j, stop = e["index"], e["stop"]
        claims[j] = "wins to the end" if stop is None else f"stops at {stop}"
        if stop is not None and not j <= stop < n:
            messages[j] = f"key {j}: stop {stop} is out of range; a key can stop only at a position in {j}..{n - 1}"
            continue
        last = n - 1 if stop is None else stop - 1
        win, cannot = e.get("win"), e.get("cannot_win")
        if (win is None) != (last < j) or (cannot is None) != (stop is None):
            messages[j] = (
                f"key {j} (stop {stop}): a witness over keys 0..{last} is given exactly when {last} >= {j}, "
                "evidence that it cannot win exactly when the stop is not null"
            )
            continue
        if win is not None:
            result = _result(win, j, f"keys[{pos}].win")
            if result.status != "selectable":
                messages[j] = f"key {j}: the witness over keys 0..{last} must be a selectable result"
                continue
            wins.setdefault(last, []).append((j, result))
        if cannot is None:
            continue
        if free:  # weights on a key after the stop are out of range of the prefix's check
            evidence = Combination.from_json(cannot.get("combination"), f"keys[{pos}].cannot_win.combination")
        else:
            evidence = _result(cannot, j, f"keys[{pos}].cannot_win")
            if evidence.status in ("selectable", "undecided"):
                messages[j] = (
                    f"key {j}: the evidence at stop {stop} has status {evidence.status}; it must show k_{j} cannot win"
                )
                continue
        stops.setdefault(stop, []).append((j, evidence))
    for last, items in wins.items():
        for (j, _), v in zip(items, qs.check(_prefix(ek, last + 1), [r for _, r in items])):
            if not v.ok:
                messages.setdefault(j, f"over keys 0..{last}: {v.message}")
    for stop, items in stops.items():
        prefix = _prefix(ek, stop + 1)
        if free:
            got = check_combinations(prefix, items, strict=False)
        else:
            got = [None if v.ok else v.message for v in qs.check(prefix, [r for _, r in items])]
        for (j, _), message in zip(items, got):
            if message is not None:
                messages.setdefault(j, f"over keys 0..{stop}: {message}")
    return [Verdict(j, claims[j], j not in messages, messages.get(j, "")) for j in range(n)]
