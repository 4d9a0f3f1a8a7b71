"""Proposals for a vocabulary under a norm query set (an output layer's final RMSNorm or LayerNorm).

When ``W_q`` selects coordinates, a token's witness is an input ``u`` of the norm on the grid the
kernel reads (:func:`lnproofs.kernel.norm_directions`): :func:`norm_self_scales` screens each token's
own direction, :func:`norm_nudged_witnesses` moves from it toward a winning ``u`` where it loses.
Both only propose; :func:`lnproofs.kernel.check_vocab` decides.
"""

from __future__ import annotations

import numpy as np

from ..kernel import integer_rows, norm_directions

__all__ = ["norm_self_scales", "norm_nudged_witnesses"]


def norm_self_scales(K: np.ndarray, qs, tokens=None, block: int = 2048) -> tuple[np.ndarray, np.ndarray]:
    """``(proposed, t)`` under a norm query set whose ``W_q`` selects coordinates: the tokens whose own
    direction ``u_i = t_i J_i`` (:func:`lnproofs.kernel.norm_directions`: ``a_i = P (g * k_i)``
    on a grid of integers) should win, and ``t_i = T 2^f`` (``32 <= T < 64``), the largest with
    ``||u_i||^2 <= n`` (compared in integers), so ``u_i`` is as long as the ball allows (what
    the offsets ``c_j = k_j . q0`` need; theorems ``vocab.final_norm`` and ``vocab.self_witness``).
    The screen is one symmetric blocked float32 Gram computation of the ``a_j``: at ``u_i ~ s_i a_i``
    the scores are ``s_i a_j . a_i + c_j``.  A token is kept when its own score leads by more than
    the grid's rounding of ``u_i`` can move a score (3 per entry of ``J_i``, times ``t_i ||a_j||_1``)
    plus the screen's own float32 rounding: a proposal, the kernel decides."""
    n, arrays = qs.width, qs.arrays()
    W, g = arrays["W_q"], arrays[qs.G_NAME]
    tokens = np.arange(len(K)) if tokens is None else np.asarray(tokens, dtype=np.int64)
    J = norm_directions(K, qs, tokens)
    t, proposed = np.ones(len(K)), np.zeros(len(K), bool)
    for i, q in zip(tokens.tolist(), np.einsum("ij,ij->i", J, J).astype(np.int64).tolist()):  # exact: < 2^40
        if q > 0:
            f = int(np.floor(np.log2(np.sqrt(n / q)))) - 5
            T = min(63, int(np.sqrt(n / q) / 2.0**f))
            while T * T * q << max(2 * f, 0) > n << max(-2 * f, 0):
                T -= 1
            t[i], proposed[i] = T * 2.0**f, T > 0
    Z = K[:, W.argmax(axis=0)] * g
    A = Z - Z.mean(axis=1, keepdims=True) if qs.centred else Z.copy()
    # the kernel's c' = sum_l max_j |L_jl| |w_l| for the lifted keys L_j = (z_j, k_j) at w = (u, q0), per token
    size = np.zeros(len(K))
    size[tokens] = t[tokens] * (np.abs(J) @ np.abs(Z).max(axis=0))
    bound = 8 * 2.0**-24  # our float32 products' rounding (the kernel multiplies in doubles: far less)
    del Z
    q0 = W @ arrays["beta"] + arrays["b_q"]
    c = K @ q0
    norms2 = np.einsum("ij,ij->i", A, A)
    s = np.ones(len(K))  # tokens outside ``tokens``: computed, not used
    s[tokens] = t[tokens] * np.sqrt(np.einsum("ij,ij->i", J, J)) / np.sqrt(np.maximum(norms2[tokens], 1e-300))
    s[~(s > 0)] = 1.0  # no direction (J_i = 0): not proposed; 0 * -inf would be nan
    del J
    wanted = np.zeros(len(K), bool)
    wanted[tokens] = True
    Af, top, offsets = A.astype(np.float32), np.full(len(K), -np.inf), bool(c.any())
    s32, c32 = s.astype(np.float32), c.astype(np.float32)
    for a in range(0, len(K), block):
        for b in range(a, len(K), block):
            if not (wanted[a : a + block].any() or wanted[b : b + block].any()):
                continue
            G = Af[a : a + block] @ Af[b : b + block].T
            if a == b:
                np.fill_diagonal(G, -np.inf)
            # witnesses of block b against the keys of block a, and (a < b) those of block a against block b;
            # without offsets the largest score is s_i times the largest product (s_i > 0)
            col = (
                (s32[None, b : b + block] * G + c32[a : a + block, None]).max(axis=0)
                if offsets
                else s[b : b + block] * G.max(axis=0)
            )
            top[b : b + block] = np.maximum(top[b : b + block], col)
            if a < b:
                row = (
                    (s32[a : a + block, None] * G + c32[None, b : b + block]).max(axis=1)
                    if offsets
                    else s[a : a + block] * G.max(axis=1)
                )
                top[a : a + block] = np.maximum(top[a : a + block], row)
    own = s * norms2 + c
    size += float(np.abs(q0) @ np.abs(K).max(axis=0))
    tol = 6 * t * np.abs(A).sum(axis=1).max(initial=0.0) + bound * (n + np.count_nonzero(q0)) * size
    return proposed & wanted & (own - top > tol), t


def norm_nudged_witnesses(K: np.ndarray, qs, tokens, steps: int = 200, block: int = 64) -> dict:
    """Float witnesses ``u`` (on the grid the kernel reads: 20-bit integers, ``1 . u = 0`` exactly when
    centred, ``||u||^2 <= n`` compared in integers) for tokens whose own direction does not win
    under a norm set whose ``W_q`` selects coordinates (a proposal: the kernel decides).  From
    ``u = r a_i / ||a_i||`` (``r`` just inside the ball), each step moves ``u`` toward the soft
    minimum of the score gaps ``s_i - s_j`` (``s_j = a_j . u + c_j``; a softmax over the rivals
    with a temperature that falls), back onto the ball: the keys enter through products only, so a
    block of tokens against 50,000 keys takes a few matrix products per step."""
    if not len(tokens):
        return {}
    n, arrays = qs.width, qs.arrays()
    W, g = arrays["W_q"], arrays[qs.G_NAME]
    A = K[:, W.argmax(axis=0)] * g
    if qs.centred:
        A -= A.mean(axis=1, keepdims=True)  # in 1-perp the centred keys give the same scores
    c = K @ (W @ arrays["beta"] + arrays["b_q"])
    radius, out = np.sqrt(n) * (1 - 2.0**-8), {}
    tokens = np.asarray(tokens, dtype=np.int64)
    scale = 2 * radius * float(np.sqrt(np.einsum("ij,ij->i", A, A).max(initial=0.0))) + float(np.ptp(c)) + 1e-300
    for a in range(0, len(tokens), block):
        R = tokens[a : a + block]
        ar = np.arange(len(R))
        u = A[R] * (radius / np.maximum(np.linalg.norm(A[R], axis=1), 1e-300))[:, None]
        best_u, best = u.copy(), np.full(len(R), -np.inf)
        for step in range(steps):
            gap = (u @ A[R].T)[ar, ar][:, None] + c[R, None] - (u @ A.T) - c[None, :]
            gap[ar, R] = np.inf
            low = gap.min(axis=1)
            better = low > best
            best_u[better], best[better] = u[better], low[better]
            if np.all(best > 2.0**-16 * scale):
                break
            p = np.exp(-(gap - low[:, None]) / (0.05 * scale / (1 + step)))
            p /= p.sum(axis=1, keepdims=True)
            grad = A[R] - p @ A  # the gradient of s_i - sum_j p_j s_j
            grad /= np.maximum(np.linalg.norm(grad, axis=1), 1e-300)[:, None]
            u = u + (0.5 / np.sqrt(1 + step)) * radius * grad
            u *= np.minimum(1.0, radius / np.maximum(np.linalg.norm(u, axis=1), 1e-300))[:, None]
        out.update(
            (i, u)
            for i, v, m in zip(R.tolist(), best_u, best)
            if m > 2.0**-16 * scale and (u := _on_grid(v, n, qs.centred)) is not None
        )
    return out


def _on_grid(v: np.ndarray, n: int, centred: bool):
    """``v`` rounded to the grid the kernel reads (20-bit integers times a power of two), moved onto
    ``1 . u = 0`` exactly when ``centred``; None when it is zero or leaves the ball ``||u||^2 <= n``."""
    if not v.any() or not np.all(np.isfinite(v)):
        return None
    J, e = integer_rows(v[None, :], 19, centred)
    J, e = J[0], int(e[0])
    return np.ldexp(J.astype(np.float64), e) if int((J * J).sum()) << max(2 * e, 0) <= n << max(-2 * e, 0) else None
