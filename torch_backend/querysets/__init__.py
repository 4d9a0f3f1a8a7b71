"""The numeric re-check's side of each query-set kind, registered under the kernel's kind.

Every kind of :data:`lnproofs.kernel.KINDS` has a class here (one module per family of kinds, as
in the kernel): built from the kernel's query-set object (read by the kernel's schema, so this
layer has no reading of its own), it maps witnesses to queries, tests membership as far as floats
tell, samples queries of the set (random ones and ones aimed along given key-space directions)
and bounds ``q . v + c`` over the set for the dual of a ``not-realisable`` claim.  The selectability
re-check (:mod:`torch_backend.certificates`) and the vocabulary re-check (:mod:`torch_backend.vocab`)
read every kind through :data:`NUMERIC`: the one line a new kind adds in this layer
(``tests/test_kinds.py`` fails when a kind has none).
"""

from __future__ import annotations

from lnproofs.kernel import (
    BallQuerySet,
    BoxQuerySet,
    CertificateFormatError,
    FreeQueries,
    LayerNormQuerySet,
    RMSNormQuerySet,
    RotaryLayerNormQuerySet,
    SubspaceQuerySet,
)

from .free import BallSet, BoxSet, FreeSet
from .norm import NormSet, own_directions
from .subspace import SubspaceSet

__all__ = ["NUMERIC", "numeric_set", "own_directions"]

#: each kernel kind -> its numeric class
NUMERIC = {
    FreeQueries: FreeSet,
    BallQuerySet: BallSet,
    BoxQuerySet: BoxSet,
    SubspaceQuerySet: SubspaceSet,
    LayerNormQuerySet: NormSet,
    RMSNormQuerySet: NormSet,
    RotaryLayerNormQuerySet: NormSet,
}


def numeric_set(query_set, keys, t: dict):
    """The numeric view of ``query_set`` (a kernel query-set object) for ``keys`` (N x d), in torch ``t``."""
    kind = type(query_set)
    if kind not in NUMERIC:
        raise CertificateFormatError(f"query set kind {query_set.kind!r} has no numeric re-check")
    query_set.validate(keys.shape[1])
    return NUMERIC[kind](query_set, keys, t)
