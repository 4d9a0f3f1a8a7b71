"""The ``layernorm_rotary`` query set ``q = R (W_q (gain * u + beta) + b_q)``, ``1 . u = 0``,
``||u|| <= sqrt(n)`` (a LayerNorm head at one rotary position): schema and exact checks of :mod:`.norm`."""

from .norm import RotaryLayerNormQuerySet, Rotation, check_all

__all__ = ["KIND", "QUERY_SET", "RotaryLayerNormQuerySet", "Rotation", "check_all"]

KIND, QUERY_SET = "layernorm_rotary", RotaryLayerNormQuerySet
