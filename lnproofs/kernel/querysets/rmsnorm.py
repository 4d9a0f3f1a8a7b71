"""The ``rmsnorm`` query set ``q = R (W_q (gain * u) + b_q)``, ``||u|| <= sqrt(n)``: its schema and
exact checks are those of :mod:`.norm`."""

from .norm import ExactLayer, RMSNormQuerySet, Rotation, check_all, check_dual

__all__ = ["KIND", "QUERY_SET", "Rotation", "RMSNormQuerySet", "ExactLayer", "check_dual", "check_all"]

KIND, QUERY_SET = "rmsnorm", RMSNormQuerySet
