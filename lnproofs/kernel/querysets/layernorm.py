"""The ``layernorm`` query set ``q = W_q (gamma * u + beta) + b_q``, ``1 . u = 0``, ``||u|| <= sqrt(n)``:
its schema and exact checks are those of :mod:`.norm`."""

from .norm import ExactLayer, ExactQueryMap, LayerNormQuerySet, check_all, check_dual

__all__ = ["KIND", "ARRAYS", "QUERY_SET", "LayerNormQuerySet", "ExactQueryMap", "ExactLayer", "check_all",
           "check_dual"]

KIND, QUERY_SET, ARRAYS = "layernorm", LayerNormQuerySet, LayerNormQuerySet.ARRAYS
