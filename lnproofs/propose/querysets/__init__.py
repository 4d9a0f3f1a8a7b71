"""Query sets, untrusted half: one proposer module per kind.

A module ``lnproofs/propose/querysets/<kind>.py`` defines ``certify(keys, query_set,
**options) -> list[KeyResult]``: one :class:`~lnproofs.kernel.KeyResult` per
key, in index order.  ``keys`` is a validated float64 array of shape (N, d).  Options the
engine passes through (a module may ignore those it does not use): ``progress`` (bool),
``indices`` (an iterable of key indices to do, default all), ``seed`` (int).  Statuses
are those of :data:`lnproofs.kernel.STATUSES`; every status other than
``undecided`` must be backed by data that the kind's trusted module
(:mod:`lnproofs.kernel.querysets`) verifies.  The schema (``QUERY_SET``, ``KIND``) lives
in that trusted module; proposers import it from there.
"""

from __future__ import annotations

import importlib

from ...certificates.writers import query_set_to_json as _write
from ...kernel import KINDS as _TRUSTED_KINDS
from ...kernel import CertificateFormatError, query_set_from_json

__all__ = ["KINDS", "proposer_for", "query_set_from_json", "query_set_to_json"]

#: query-set kind -> proposer module under lnproofs.propose.querysets
KINDS: dict[str, str] = {kind: kind for kind in _TRUSTED_KINDS}


def proposer_for(kind: str):
    """The proposer module of query sets of ``kind`` (imported on first use)."""
    if kind not in KINDS:
        raise CertificateFormatError(f"query_set kind {kind!r} is unknown; known kinds: {', '.join(KINDS)}")
    return importlib.import_module(f".{KINDS[kind]}", __name__)


def query_set_to_json(query_set) -> dict:
    """The JSON object of a query set (``None`` means free queries; a dict is validated first)."""
    return _write(query_set_from_json(query_set) if isinstance(query_set, dict) else query_set)
