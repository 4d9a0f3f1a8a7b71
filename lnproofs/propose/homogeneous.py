"""A norm set without offsets is a subspace question (theorem ``vocab.no_offset``).

When ``q0 = W_q beta + b_q = 0`` the logits are ``a_j . u`` with ``a_j = g o W_q^T k_j`` and ``u``
in the ball (in ``1``-perp for LayerNorm): scaling ``u`` scales every score alike, so the radius
never matters, and writing ``u = L^T z`` (``u_l = z_l`` for ``l < n``, ``u_n = -sum z``) turns
``a . u`` into ``(L a) . z`` with ``(L a)_l = a_l - a_n``.  A token can be output exactly when its
point ``L a_i`` is a vertex of the hull of the points ``L a_j``: the subspace query set
``q = M^T z`` with ``M = L diag(g) W_q^T`` (:mod:`lnproofs.propose.querysets.subspace`, whose
engine proposes on float points and keeps only what holds for the exact points ``M k_j``).
Its answers become the norm set's: a witness ``z`` gives ``u = L^T z`` exactly, halved into the
ball; the exact convex weights of a point that is not a vertex are the dual the kernel's
:func:`lnproofs.kernel.check_dual` reads (``P (g o W_q^T v) = 0``, no offset).
Nothing here decides: the vocabulary's kernel check does.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

__all__ = ["is_homogeneous", "difference_map", "homogeneous_results", "offset_points", "relaxed_duals"]


def is_homogeneous(qs) -> bool:
    """A norm set whose queries ``W_q (g o u)`` have no offset, ``W_q`` a selection of distinct
    coordinates (so ``M``'s entries are the floats ``g_l`` and ``-g_n`` themselves), without
    rotation or radius."""
    if getattr(qs, "rotation", None) is not None or getattr(qs, "radius", None) is not None:
        return False
    arrays = qs.arrays()
    W = arrays["W_q"]
    selection = np.isin(W, (0, 1)).all() and (W.sum(axis=0) == 1).all() and (W.sum(axis=1) <= 1).all()
    return bool(selection and not np.any(W @ arrays["beta"] + arrays["b_q"]))


def difference_map(qs) -> np.ndarray:
    """``M`` (``m x d``): row ``l`` is ``g_l W_q[:, l] - g_n W_q[:, n]`` for a centred set (``m = n - 1``),
    ``g_l W_q[:, l]`` otherwise (``m = n``); exact, since the rows' supports are disjoint."""
    arrays = qs.arrays()
    M = (arrays["W_q"] * arrays[qs.G_NAME][None, :]).T
    return M[:-1] - M[-1] if qs.centred else M


def _u_of(z, n: int, centred: bool) -> list[str]:
    """``u = L^T z`` exactly (``z`` itself when not centred), halved until ``||u||^2 <= n``, as text."""
    from ..kernel import integer_vector_of_fractions
    from .querysets.layernorm_perkey import u_text

    Z, D = integer_vector_of_fractions([x if type(x) is Fraction else Fraction(x) for x in z])
    U = Z + [-sum(Z)] if centred else Z
    total = sum(x * x for x in U)
    while total > n * D * D:
        D *= 2
    return u_text(U, D)


def homogeneous_results(keys, qs, tokens, *, seed: int = 0) -> list:
    """Norm-set :class:`~lnproofs.kernel.KeyResult` proposals for ``tokens`` (an
    :func:`is_homogeneous` set): ``selectable`` with ``u``, ``not-realisable`` with the exact convex
    weights as the dual; tokens the subspace road leaves ``undecided`` are not returned."""
    from ..kernel import KeyResult, SubspaceQuerySet
    from .querysets.subspace import certify

    if not len(tokens):
        return []
    n, wanted = qs.width, {int(i) for i in tokens}
    exact = offset_points(keys, qs)  # a_j exact: one subtraction rounds each point once
    floats = None if exact is None else exact[0][:, :-1] - exact[0][:, -1:] if qs.centred else exact[0]
    got = certify(
        np.asarray(keys, dtype=np.float64),
        SubspaceQuerySet(difference_map(qs)),
        floats=floats,
        indices=sorted(wanted),
        seed=seed,
    )
    out = []
    for r in got:
        if r.index not in wanted:
            continue
        if r.status == "selectable" and r.extras.get("z") is not None:
            out.append(
                KeyResult(
                    r.index,
                    "selectable",
                    None,
                    None,
                    "exact",
                    r.margin,
                    None,
                    {"u": _u_of(r.extras["z"], n, qs.centred)},
                )
            )
        elif r.status in ("unselectable", "tie-only") and r.combination is not None:
            out.append(_dual(r.index, r.combination))
    return out


def _dual(index: int, combination):
    """A norm set's ``not-realisable`` proposal whose dual is the exact convex ``combination``."""
    from ..certificates.writers import format_fraction
    from ..kernel import KeyResult

    return KeyResult(
        index,
        "not-realisable",
        None,
        None,
        "exact",
        None,
        None,
        {"dual": {"indices": list(combination.indices), "weights": [format_fraction(w) for w in combination.weights]}},
    )


def offset_points(keys, qs):
    """``(A, c)``: the points ``a_j = g o W_q^T k_j`` and offsets ``c_j = k_j . q0`` of a norm set whose
    ``W_q`` selects coordinates, when every ``a_j`` is exact in doubles (``g``'s entries powers of
    two, or ``g`` and the keys float32 numbers); else None."""
    arrays = qs.arrays()
    W, g, K = arrays["W_q"], arrays[qs.G_NAME], np.asarray(keys, dtype=np.float64)
    powers = np.all(np.abs(np.frexp(g)[0]) == 0.5)
    single = np.array_equal(g.astype(np.float32), g) and np.array_equal(K.astype(np.float32), K)
    if not (powers or single) or getattr(qs, "rotation", None) is not None:
        return None
    A = K[:, W.argmax(axis=0)] * g
    tiny = (np.abs(A) < 2.0**-1022) & (A != 0)
    return None if tiny.any() or not np.all(np.isfinite(A)) else (A, K @ (W @ arrays["beta"] + arrays["b_q"]))


def relaxed_duals(keys, qs, tokens, *, seed: int = 0) -> list:
    """``not-realisable`` proposals for the ``tokens`` that no query at all makes the argmax of
    ``a_j . u + c_j`` (``u`` anywhere in ``R^n``, a superset of the norm's ball): the free LP with
    the offsets as a bias (:mod:`lnproofs.propose.querysets.box`) gives weights with
    ``sum_j lambda_j a_j = a_i`` exactly and ``sum_j lambda_j c_j >= c_i``, which is the dual the
    kernel reads (``P (g o W_q^T v) = 0``, ``q0 . v <= 0``; theorem ``vocab.bias_lift``)."""
    from ..kernel import BoxQuerySet
    from .querysets.box import certify

    points = offset_points(keys, qs) if len(tokens) else None
    if points is None:
        return []
    A, c = points
    wanted = {int(i) for i in tokens}
    out = [
        _dual(r.index, r.combination)
        for r in certify(A, BoxQuerySet(None, tuple(c.tolist())), indices=sorted(wanted), seed=seed)
        if r.index in wanted and r.status == "not-realisable" and r.combination is not None
    ]
    # the offsets were rounded to doubles (c_j = k_j . q0): a dual the exact offsets refuse is dropped
    # here, so that its token still goes to the norm's own search
    return [r for r, v in zip(out, qs.check(keys, out)) if v.ok] if out else []
