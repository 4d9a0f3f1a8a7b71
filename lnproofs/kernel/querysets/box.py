"""The ``box`` query set (scores with a per-key bias, ``|q_l| <= B``): its schema and exact checks are in :mod:`.free`."""

from .free import BoxQuerySet, check_all

__all__ = ["KIND", "QUERY_SET", "BoxQuerySet", "check_all"]

KIND, QUERY_SET = "box", BoxQuerySet
