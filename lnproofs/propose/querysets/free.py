"""Free queries: every q in R^d is allowed (the query set of the plain argmax question).

Certificates are made by :mod:`lnproofs.propose.certification` and checked by
:mod:`lnproofs.kernel.querysets.free`.
"""

from __future__ import annotations

from ...kernel import FreeQueries

__all__ = ["KIND", "FreeQueries", "QUERY_SET", "certify"]

KIND, QUERY_SET = "free", FreeQueries


def certify(keys, query_set=None, **options):
    """Per-key results under free queries (see :func:`lnproofs.propose.certification.certify_results`)."""
    from ..certification import certify_results

    return certify_results(keys, **options)
