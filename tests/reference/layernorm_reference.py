"""LayerNorm-realisable queries, the slow reference: every key through the per-key search
(one cone program per key, after the free engine's hull certificates), each result checked
exactly.  The package runs the same search only for the keys its batch search
(:mod:`lnproofs.propose.querysets.layernorm_fast`) leaves; the tests compare the batch
search with this key-by-key answer."""

from __future__ import annotations

from lnproofs.propose.querysets.layernorm_perkey import per_key_results, propose

__all__ = ["propose", "reference_results"]


def reference_results(keys, query_set, *, progress=None, indices=None) -> list[dict]:
    """Result dictionaries (certificate JSON form) for the keys ``indices`` (default every
    key), each from the per-key search."""
    return per_key_results(keys, query_set, progress=progress, indices=indices)
