"""Query sets that cover every direction: the exact check of the hypotheses of ``coverage.every_direction``.

A norm query set (``layernorm``, ``rmsnorm``, ``layernorm_rotary``; see :mod:`.norm`) is
``Q = R (A u + b)`` over the ball ``||u||^2 <= n`` (and ``1 . u = 0`` when centred), with
``A = W_q diag(g)`` (times the centring ``P = I - 11^T/n`` when centred) and ``b = W_q beta + b_q``.
If ``A`` has rank ``d`` and some ``u*`` of the domain has ``A u* = -b`` and ``||u*||^2 < n``, then
every direction ``v != 0`` has a positive multiple in ``A u + b`` over the sphere ``||u||^2 = n``
(theorem ``coverage.every_direction``), and since the argmax of ``q . k_j`` depends only on the
direction of ``q``, the keys the set can make win are exactly the keys free queries can make win.

Rotation does not matter: ``R`` is applied to the whole set, and a direction ``v`` of ``R Q`` is
``R w`` for the direction ``w = R^{-1} v`` of ``Q``.  The kernel builds ``R`` exactly from the
model's float cos/sin table, so it is not exactly orthogonal; what the argument needs is that
it is invertible, which is checked exactly here (each 2 x 2 block has ``c_a c_b + s_a s_b != 0``).

Nor does a radius bound ``||q|| <= R`` (``R > 0``) of a LayerNorm set, nor ``eps > 0``: every
multiple ``s' v`` with ``0 < s' < s`` is strictly inside the ellipsoid (the same theorem), and the
small ones inside the ball, so every direction stays realised.

A coverage claim (JSON ``{"kind", "prime", "rows", "u_star"}``; as data:
:class:`lnproofs.certificates.coverage.Coverage`) names a prime ``p`` and ``d`` columns of ``A``
whose ``d x d`` minor is non-zero modulo ``p``: the rank modulo ``p`` never exceeds the rank over
the rationals, so this proves rank ``d``; and ``u*`` as exact ``"p/q"`` strings (``None`` when
``b = 0``).  The claim's ``kind`` (``full-rank-centred`` or ``full-rank-interior``) tells people which
case it is; the check does not need it.
"""

from __future__ import annotations

from flint import fmpz, fmpz_mat, nmod_mat

from ..dyadic import integer_matrix, integer_vector_of_fractions
from ..errors import InputError
from ..exact import to_fraction
from .norm import ExactQueryMap, NormQuerySet


def integer_columns(qm: ExactQueryMap, columns) -> fmpz_mat:
    """Integers ``M`` (d x len(columns)) with ``M = c A[:, columns]`` for a positive rational ``c``
    (``2^-(ew+eg)``, times ``n`` when centred: column ``j`` is ``n g_j W_j - sum_k g_k W_k``)."""
    cols, n = list(columns), qm.n
    scale = fmpz_mat(len(cols), len(cols))  # diag(G) on the columns
    for k, c in enumerate(cols):
        scale[k, k] = qm.G[c]
    W, e = integer_matrix(qm.W_float[:, cols])  # the columns of Wq, without the whole matrix
    M = W * (1 << max(e - qm.ew, 0)) * scale  # e >= ew unless W = 0
    if qm.centred:
        S = qm.Wq * fmpz_mat(n, 1, qm.G)
        M = M * n - S * fmpz_mat(1, len(cols), [1] * len(cols))
    return M


def check_coverage(query_set, data, dim: int, query_map: ExactQueryMap | None = None, rotations=()) -> tuple[bool, str]:
    """``(ok, message)``: the set's queries live in R^dim, the keys' space (else a ShapeError); exactly,
    ``A`` has rank ``d`` (the minor on ``data["rows"]`` is non-zero modulo ``data["prime"]``, a prime)
    and the centre is inside (``b = 0``, or ``A u* = -b``, ``1 . u* = 0`` when centred,
    ``||u*||^2 < n``); the set's rotation and each of ``rotations`` (the other positions the claim
    is used at: the rank and the centre do not change with the position) are invertible.  ``data``
    is the claim's JSON object; ``query_map``, the set's exact forms when the caller has them."""
    if not isinstance(query_set, NormQuerySet):
        return False, f"coverage is checked for norm query sets, not {query_set!r:.40}"
    query_set.validate(dim)
    if (
        not isinstance(data, dict)
        or type(data.get("prime")) is not int
        or not 2 <= data["prime"] < 2**63
        or not isinstance(data.get("rows"), list)
        or any(type(r) is not int for r in data["rows"])
        or not isinstance(data.get("u_star"), (list, type(None)))
    ):
        return False, (
            "certificate field coverage must be an object with an integer prime in 2..2^63 - 1, a list of "
            "integer rows and u_star (null or a list)"
        )
    prime, rows, u_star = data["prime"], tuple(data["rows"]), data.get("u_star")
    try:
        u_star = None if u_star is None else [to_fraction(x) for x in u_star]
    except InputError as err:
        return False, f"certificate field coverage.u_star: {err}"
    qm = ExactQueryMap(query_set) if query_map is None else query_map
    n, d = qm.n, qm.d
    if len(rows) != d or len(set(rows)) != d or max(rows, default=0) >= n or min(rows, default=0) < 0:
        return False, f"coverage rows must be {d} distinct column indices in 0..{n - 1}"
    if not fmpz(prime).is_prime():
        return False, f"coverage prime {prime} is not a prime"
    if nmod_mat(integer_columns(qm, rows), prime).det() == 0:
        return False, f"the minor of A on the claimed columns is zero modulo {prime}: rank d is not shown"
    bad = next((r for r in (query_set.rotation, *rotations) if r is not None and not r.invertible()), False)
    if bad is not False:
        return False, f"the rotation at position {bad.position} is not invertible (a 2 x 2 block has determinant 0)"
    if u_star is None:  # the centre is 0 when b = 0
        ok = all(qm.q0[a, 0] == 0 for a in range(d))
        return ok, "" if ok else "without u_star the claim needs b = W_q beta + b_q = 0 exactly"
    if len(u_star) != n:
        return False, f"u_star must have {n} entries"
    U, D = integer_vector_of_fractions(u_star)
    if qm.centred and sum(U) != 0:
        return False, "u_star is not on the hyperplane 1 . u = 0"
    if sum(x * x for x in U) >= n * D * D:
        return False, f"||u_star||^2 >= n = {n}: the centre is not shown to be strictly inside"
    if any(x != 0 for x in qm.query(U, D).entries()):  # R (A u* + b) = 0 iff A u* + b = 0: R is invertible
        return False, "u_star is not a preimage: A u_star + b != 0"
    return True, ""
