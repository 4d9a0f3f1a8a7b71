"""Query sets, untrusted half: one proposer module per kind, registered under the kernel's kind.

A module ``lnproofs/propose/querysets/<kind>.py`` defines ``certify(keys, query_set,
**options) -> list[KeyResult]``: one :class:`~lnproofs.kernel.KeyResult` per key, in index
order.  ``keys`` is a validated float64 array of shape (N, d).  Options the engine passes
through (a module may ignore those it does not use): ``progress`` (bool), ``indices`` (an
iterable of key indices to do, default all), ``seed`` (int).  Statuses are those of
:data:`lnproofs.kernel.STATUSES`; every status other than ``undecided`` must be backed by data
that the kind's exact checks (the kernel's class, ``query_set.check``) verify.

:data:`PROPOSERS` maps each kernel kind (the class of its query sets, :func:`lnproofs.kernel.kinds`)
to its module here: the one line a new kind adds in this layer (``tests/test_kinds.py`` fails when
a kind has none).
"""

from __future__ import annotations

import importlib

from ...certificates.writers import query_set_to_json as _write
from ...kernel import (
    BallQuerySet,
    BoxQuerySet,
    CertificateFormatError,
    FreeQueries,
    LayerNormQuerySet,
    RMSNormQuerySet,
    RotaryLayerNormQuerySet,
    SubspaceQuerySet,
    query_set_from_json,
)

__all__ = ["PROPOSERS", "proposer_for", "query_set_from_json", "query_set_to_json"]

#: each kernel kind -> its proposer module under lnproofs.propose.querysets
PROPOSERS = {
    FreeQueries: "free",
    BallQuerySet: "ball",
    BoxQuerySet: "box",
    SubspaceQuerySet: "subspace",
    LayerNormQuerySet: "layernorm",
    RMSNormQuerySet: "rmsnorm",
    RotaryLayerNormQuerySet: "layernorm_rotary",
}


def proposer_for(query_set):
    """The proposer module of ``query_set``'s kind (a query-set object, or None for free queries;
    imported on first use)."""
    kind = FreeQueries if query_set is None else type(query_set)
    if kind not in PROPOSERS:
        raise CertificateFormatError(f"query sets of kind {getattr(kind, 'kind', kind)!r} have no proposer")
    return importlib.import_module(f".{PROPOSERS[kind]}", __name__)


def query_set_to_json(query_set) -> dict:
    """The JSON object of a query set (``None`` means free queries; a dict is validated first)."""
    return _write(query_set_from_json(query_set) if isinstance(query_set, dict) else query_set)
