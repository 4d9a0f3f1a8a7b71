"""The ``ball`` query set ``||q|| <= R``: its schema and exact checks are in :mod:`.free`."""

from .free import BallQuerySet, check_all

__all__ = ["KIND", "QUERY_SET", "BallQuerySet", "check_all"]

KIND, QUERY_SET = "ball", BallQuerySet
