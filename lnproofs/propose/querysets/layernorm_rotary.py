"""Proposals for the rotated LayerNorm query set (:mod:`lnproofs.kernel.querysets.norm`):
the proposer of :mod:`.rmsnorm`, which keeps ``u`` on the hyperplane ``1 . u = 0`` for centred sets."""

from __future__ import annotations

from ...kernel import RotaryLayerNormQuerySet
from .rmsnorm import certify, certify_results

__all__ = ["KIND", "QUERY_SET", "RotaryLayerNormQuerySet", "certify", "certify_results"]

KIND, QUERY_SET = "layernorm_rotary", RotaryLayerNormQuerySet
