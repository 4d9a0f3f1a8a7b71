"""The slow reference for causal prefixes: certify every prefix 0..t (T certifications).

Adapted from the per-prefix path that certified decoders before causal prefixes were found in
one pass (``lnproofs.propose.causal``); tests compare the new answers with it key by key.
Key j's first stop is the first t >= j at which the certificate of prefix 0..t gives it a
status other than ``selectable`` and ``undecided``.
"""

from __future__ import annotations

import numpy as np

from lnproofs.propose.certification import certify

__all__ = ["reference_stops"]


def reference_stops(keys: np.ndarray, query_set=None) -> dict:
    """``{"first_unselectable": [stop or None per key], "undecided_at": {t: [keys]}}``."""
    keys = np.asarray(keys, dtype=np.float64)
    T = len(keys)
    first: list = [None] * T
    undecided: dict[int, list[int]] = {}
    for t in range(T):
        cert = certify(keys[: t + 1], query_set=query_set).to_json()
        for r in cert["results"]:
            j = r["index"]
            if r["status"] == "undecided":
                undecided.setdefault(t, []).append(j)
            elif r["status"] != "selectable" and first[j] is None:
                first[j] = t
    return {"first_unselectable": first, "undecided_at": undecided}
