"""LayerNorm-realisable queries, the fast search: propose cheaply for all keys, prove once.

With ``A = W_q diag(gamma)``, ``P = I - 11^T/n`` and ``H = A P A^T`` every useful ``u`` has
the form ``u = P A^T y`` (``y`` in R^d): then ``||u||^2 = y^T H y`` and the query is
``q = H y + q0``.  In the orthonormal coordinates ``w`` of the range of ``P A^T`` the
question for key ``i`` is ``max_{||w|| <= sqrt(n)} min_j (Y_i - Y_j) . w + (c_i - c_j) > 0``.

1. Candidates for every key at once: a few steps of projected ascent on a soft minimum
   of the margins, vectorised over keys (numpy).
2. One exact check for all candidates (the kernel's one path, with ``u = P diag(gamma) W_q^T y``
   made exactly: integer products); a verified key is ``selectable`` with the compact
   certificate ``y`` (d floats).
3. Keys left over (non-vertices, duplicates, candidates that failed) go through the
   per-key search of :mod:`.layernorm_perkey` (free hull certificates as duals, then the
   cone solver per key).
"""

from __future__ import annotations

import numpy as np

from ..twins import row_classes

__all__ = ["factored_basis", "propose_all", "certify_results_fast"]


def factored_basis(query_set):
    """``(V, root, q0)``: ``H = A P A^T = V diag(root^2) V^T`` on its range, and the query
    offset ``q0 = W_q beta + b_q`` (floats)."""
    arrays = query_set.arrays()
    M = arrays["gamma"][:, None] * arrays["W_q"].T  # n x d: A^T
    M = M - M.mean(axis=0, keepdims=True)  # P A^T
    values, vectors = np.linalg.eigh(M.T @ M)
    keep = values > max(values.max(initial=0.0), 0.0) * 1e-12 * max(M.shape)
    return vectors[:, keep], np.sqrt(values[keep]), arrays["W_q"] @ arrays["beta"] + arrays["b_q"]


def propose_all(keys, query_set, *, steps: int = 80, shrink: float = 1 - 1e-6, basis=None):
    """Float ``y`` (N x d) proposing a winning query for every key, and the float margins."""
    keys = np.asarray(keys, dtype=np.float64)
    N, n = len(keys), query_set.width
    V, root, q0 = factored_basis(query_set) if basis is None else basis
    # s_j = k_j . (H y + q0); y = V w / root  =>  s_j = (K V root) . w + c_j
    Y = (keys @ V) * root
    c = keys @ q0
    radius = np.sqrt(n) * shrink
    diff = Y[:, None, :] - Y[None, :, :]  # N x N x r
    cdiff = c[:, None] - c[None, :]
    eye = np.eye(N, dtype=bool)
    w = Y - Y.mean(axis=0)
    norms = np.linalg.norm(w, axis=1, keepdims=True)
    w = np.where(norms > 0, w / np.where(norms > 0, norms, 1), 0.0) * radius
    best_w, best_m = w.copy(), np.full(N, -np.inf)
    scale = max(float(np.abs(diff).max(initial=0.0)) * radius, float(np.abs(cdiff).max(initial=0.0)), 1e-300)
    for step in range(steps):
        m = np.einsum("ijr,ir->ij", diff, w) + cdiff
        m[eye] = np.inf
        low = m.min(axis=1) if N > 1 else np.full(N, np.inf)
        better = low > best_m
        best_w[better], best_m[better] = w[better], low[better]
        todo = best_m <= 1e-9 * scale
        if not todo.any():
            break
        tau = 0.05 * scale / (1 + step)
        z = -(m - low[:, None]) / tau
        p = np.exp(np.where(eye, -np.inf, z))
        p /= p.sum(axis=1, keepdims=True)
        g = np.einsum("ij,ijr->ir", p, diff)
        gn = np.linalg.norm(g, axis=1, keepdims=True)
        g = np.where(gn > 0, g / np.where(gn > 0, gn, 1), 0.0)
        w_new = w + (0.5 / np.sqrt(1 + step)) * radius * g
        wn = np.linalg.norm(w_new, axis=1, keepdims=True)
        w_new = np.where(wn > radius, w_new * (radius / np.where(wn > 0, wn, 1)), w_new)
        w = np.where(todo[:, None], w_new, w)
    y = (best_w / root) @ V.T
    # about 40 significant bits per candidate: the exact check then works on small integers
    top = np.abs(y).max(axis=1, keepdims=True)
    unit = np.where(top > 0, 2.0 ** (np.floor(np.log2(np.where(top > 0, top, 1.0))) - 40), 1.0)
    return np.round(y / unit) * unit, best_m


def _expanded(layer, entry) -> dict:
    """The reference form of a compact result: ``u`` (exact) and the witness query ``q``."""
    from ...certificates.writers import format_fraction
    from ...kernel import dyadic_integers, fraction_of_fmpq
    from .layernorm_perkey import u_text

    ints, ey = dyadic_integers(np.asarray(entry["y"], dtype=np.float64))
    v = [int(x) for x in (layer.WqT * _column(ints)).entries()]  # W_q^T y / 2^(ew + ey)
    g = [a * b for a, b in zip(layer.G, v)]  # gamma * W_q^T y / 2^(ew + eg + ey)
    total, n = sum(g), layer.n
    U = [n * x - total for x in g]  # u = U 2^e / n
    e = layer.ew + layer.eg + ey
    U, D = ([x << e for x in U], n) if e >= 0 else (U, n << -e)
    q = layer.query(U, D)
    out = {k: v for k, v in entry.items() if k != "y"}
    out.update(u=u_text(U, D), witness=[format_fraction(fraction_of_fmpq(q[a, 0])) for a in range(layer.d)])
    return out


def _column(ints):
    from flint import fmpz_mat

    return fmpz_mat(len(ints), 1, ints)


def certify_results_fast(
    keys, query_set, *, indices=None, query_map=None, basis=None, compact: bool = False
) -> list[dict]:
    """Result dictionaries (certificate JSON form) for the keys ``indices`` (default all).

    ``query_map`` (:class:`~lnproofs.kernel.ExactQueryMap`) and ``basis``
    (:func:`factored_basis`) depend on the query set only: pass them to share them between
    many key sets of the same head.  ``compact``: selectable keys carry ``y`` (d floats,
    ``u = P diag(gamma) W_q^T y``) instead of the exact ``u`` and witness query."""
    from ...kernel import ExactLayer
    from ..exact_checks import check_primals, exact_margins
    from .layernorm_perkey import per_key_results

    keys = np.asarray(keys, dtype=np.float64)
    query_set.validate(keys.shape[1])
    N = len(keys)
    todo = list(range(N)) if indices is None else sorted({int(j) for j in indices})
    results: dict[int, dict] = {}
    if N > 1 and todo:
        _, inverse, counts = row_classes(keys)
        single = [i for i in todo if counts[inverse[i]] == 1]  # duplicates can never win strictly
        if single and N * N * query_set.dim <= 2**27:  # propose_all holds N x N x d floats: else per key
            y, _ = propose_all(keys, query_set, basis=basis)
            layer = ExactLayer(keys, query_set, query_map)
            verdicts = check_primals(layer, [(i, *layer.compact_u(y[i])) for i in single])
            passed = [(i, q) for i, (ok, _msg, q) in zip(single, verdicts) if ok]
            for (i, _), margin in zip(passed, exact_margins(layer, passed)):
                results[i] = {
                    "index": i,
                    "status": "selectable",
                    "witness": None,
                    "combination": None,
                    "verified": "exact",
                    "margin": None if margin is None else int(margin.p) / int(margin.q),
                    "reason": None,
                    "y": [float(v) for v in y[i]],
                }
                if not compact:
                    results[i] = _expanded(layer, results[i])
    rest = [i for i in todo if i not in results]
    if rest:
        for entry in per_key_results(keys, query_set, indices=rest):
            results[entry["index"]] = entry
    return [results[i] for i in todo]
