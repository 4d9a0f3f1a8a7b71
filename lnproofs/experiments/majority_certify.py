"""Certificates for the trained Majority models: uniform attention and the C distinct keys.

The paper measures an angle; the point of the angle is uniform attention (a query that gives
every key the same score, so attention averages the sequence, which solves Majority).  For
each trained model this decides exactly, with :func:`lnproofs.uniform_attention` and
:func:`lnproofs.certify`:

- ``free``: is there any query at all (every direction in the space of ``norm1``'s outputs,
  which is every query a layer with an invertible ``W_K`` can aim at the keys) giving the C
  keys the same score?  With projection the keys lie on the hyperplane ``1 . u = 0`` and the
  all-ones direction does it; on the sphere the key differences span the whole space and no
  non-zero query does;
- ``realisable``: the same question for the queries the trained layer can produce,
  ``M u`` with ``M = W_K^T W_Q`` (scores ``(W_Q u) . (W_K k) = (M u) . k``) and ``u`` in the
  closure of ``norm1``'s image: the LayerNorm query set (projection arm), the RMSNorm query
  set with gain ``1/n`` (sphere arm: radius ``1/sqrt(n)``), the column space of ``M`` (no norm);
- the certified selectability status of each of the C keys under the realisable set.

Keys are taken in the space of ``norm1``'s outputs.  Projection arm: the embeddings centred
exactly (``n x - sum(x)``, each row then scaled by a power of two, so the sum is exactly 0);
the radial scaling to ``sqrt(n)`` is left out, which cannot change whether a query gives every
key the score 0, the only equal score possible when the differences span the hyperplane.
Sphere arm: ``norm1``'s float32 outputs as the model computed them.  No norm: the embeddings.
``M`` is evaluated in float64 from the float32 weights (``exact_m`` says whether that is exact).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

__all__ = ["certify_majority_model", "normalised_keys", "realisable_query_set"]


def _exactly_centred(embedding: np.ndarray) -> np.ndarray:
    """``n x - sum(x)`` per row in exact arithmetic, scaled by a power of two to radius about
    ``sqrt(n)``; every row sums to exactly 0 (checked)."""
    n = embedding.shape[1]
    rows = []
    for x in embedding.astype(np.float64):
        fx = [Fraction(float(v)) for v in x]
        total = sum(fx)
        z = [n * v - total for v in fx]
        norm = float(np.sqrt(sum(float(v) ** 2 for v in z))) or 1.0
        scale = Fraction(2) ** int(np.round(np.log2(np.sqrt(n) / norm)))
        row = [v * scale for v in z]
        as_float = [float(v) for v in row]
        if any(Fraction(f) != v for f, v in zip(as_float, row)) or sum(map(Fraction, as_float)) != 0:
            raise ArithmeticError("an exactly centred embedding row is not a float64 vector")
        rows.append(as_float)
    return np.asarray(rows, dtype=np.float64)


def normalised_keys(arm: str, weights: dict) -> np.ndarray:
    """The C distinct keys in the space of ``norm1``'s outputs (see the module docstring)."""
    emb = np.asarray(weights["embedding.weight"], dtype=np.float32)
    if arm == "layernorm":
        return _exactly_centred(emb)
    if arm == "no-projection":
        return np.asarray(weights["norm1_keys"], dtype=np.float32).astype(np.float64)
    return emb.astype(np.float64)


def _query_map(weights: dict) -> tuple[np.ndarray, bool]:
    w = np.asarray(weights["layer.self_attn.in_proj_weight"], dtype=np.float32).astype(np.float64)
    d = w.shape[1]
    w_q, w_k = w[:d], w[d : 2 * d]
    m = w_k.T @ w_q
    exact = all(
        Fraction(float(m[i, j])) == sum(Fraction(float(w_k[r, i])) * Fraction(float(w_q[r, j])) for r in range(d))
        for i in range(d)
        for j in range(d)
    )
    return m, exact


def realisable_query_set(arm: str, m: np.ndarray):
    """The closure of the queries ``M u`` the trained layer produces (``u`` = norm1's output)."""
    from ..kernel import LayerNormQuerySet, RMSNormQuerySet, SubspaceQuerySet

    n = m.shape[1]
    rows = tuple(tuple(float(v) for v in r) for r in m)
    zeros = (0.0,) * m.shape[0]
    if arm == "layernorm":
        return LayerNormQuerySet((1.0,) * n, (0.0,) * n, rows, zeros)
    if arm == "no-projection":
        return RMSNormQuerySet((1.0 / n,) * n, rows, zeros)
    return SubspaceQuerySet(tuple(tuple(float(v) for v in r) for r in m.T))


def _uniform(keys, query_set) -> dict:
    from ..propose.uniform import check_uniform, uniform_attention

    result = uniform_attention(keys, query_set)
    ok, message = check_uniform(keys, result)
    if not ok:
        return {"status": "undecided", "reason": f"the exact re-check failed: {message}"}
    out = {"status": result.status}
    if result.status == "infeasible":
        out["proof"] = result.proof.get("kind")
    if result.status == "undecided":
        out["reason"] = result.reason
    return out


def certify_majority_model(arm: str, weights: dict) -> dict:
    """Uniform attention (free and realisable queries) and the C keys' certified statuses."""
    from ..propose.certification import certify

    keys = normalised_keys(arm, weights)
    m, exact = _query_map(weights)
    query_set = realisable_query_set(arm, m)
    cert = certify(keys, query_set, workers=1, progress=False)
    statuses = [r.status for r in cert.results]
    counts = {s: statuses.count(s) for s in sorted(set(statuses))}
    return {
        "arm": arm,
        "keys": len(keys),
        "uniform_free": _uniform(keys, None),
        "uniform_realisable": _uniform(keys, query_set),
        "key_statuses": counts,
        "exact_m": exact,
    }
