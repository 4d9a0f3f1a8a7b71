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

A :class:`Coverage` claim names a prime ``p`` and ``d`` columns of ``A`` whose ``d x d`` minor is
non-zero modulo ``p``: the rank modulo ``p`` never exceeds the rank over the rationals, so this
proves rank ``d``; and ``u*`` as exact ``"p/q"`` strings (``None`` when ``b = 0``, kind
``full-rank-centred``).
"""

from __future__ import annotations

from dataclasses import dataclass

from flint import fmpq, fmpz, fmpz_mat, nmod_mat

from ..dyadic import fmpq_of, integer_vector_of_fractions, pow2, residues
from ..errors import CertificateFormatError, require
from ..exact import format_fraction, to_fraction
from .norm import ExactQueryMap

__all__ = ["COVERAGE_KINDS", "SETS", "Coverage", "check_coverage", "integer_columns", "minor_nonzero",
           "rotation_invertible"]

COVERAGE_KINDS = ("full-rank-centred", "full-rank-interior")
SETS = ("layernorm", "rmsnorm", "layernorm_rotary")


@dataclass(frozen=True)
class Coverage:
    """The claim that a norm query set covers every direction (see the module docstring)."""

    kind: str
    prime: int
    rows: tuple
    u_star: tuple | None = None

    def __post_init__(self):
        bad = "certificate field coverage"
        require(self.kind in COVERAGE_KINDS, CertificateFormatError,
                f"{bad}.kind {self.kind!r} is not known; accepted: {', '.join(COVERAGE_KINDS)}")
        require(type(self.prime) is int and 2 <= self.prime < 2**63, CertificateFormatError,
                f"{bad}.prime {self.prime!r} is not an integer in 2..2^63 - 1")
        require(isinstance(self.rows, (list, tuple)) and all(type(r) is int and r >= 0 for r in self.rows),
                CertificateFormatError, f"{bad}.rows must be a list of column indices (integers >= 0)")
        require(self.u_star is None or isinstance(self.u_star, (list, tuple)) and all(
            isinstance(x, str) for x in self.u_star), CertificateFormatError,
            f"{bad}.u_star must be null or a list of 'p/q' strings")
        object.__setattr__(self, "rows", tuple(self.rows))
        if self.u_star is not None:
            try:
                object.__setattr__(self, "u_star", tuple(format_fraction(to_fraction(x)) for x in self.u_star))
            except (ValueError, ZeroDivisionError, ArithmeticError) as err:
                raise CertificateFormatError(f"{bad}.u_star holds a value that is not a 'p/q' string ({err})") from None

    def to_json(self) -> dict:
        return {"kind": self.kind, "prime": self.prime, "rows": list(self.rows),
                "u_star": None if self.u_star is None else list(self.u_star)}

    @classmethod
    def from_json(cls, data) -> "Coverage":
        require(isinstance(data, dict) and {"kind", "prime", "rows"} <= set(data), CertificateFormatError,
                "certificate field coverage must be an object with 'kind', 'prime', 'rows' and 'u_star'")
        return cls(data["kind"], data["prime"], data["rows"], data.get("u_star"))


def integer_columns(qm: ExactQueryMap, columns) -> fmpz_mat:
    """Integers ``M`` (d x len(columns)) with ``M = c A[:, columns]`` for a positive rational ``c``
    (``2^-(ew+eg)``, times ``n`` when centred: column ``j`` is ``n g_j W_j - sum_k g_k W_k``)."""
    cols, n = list(columns), qm.n
    scale = fmpz_mat(len(cols), len(cols))                 # diag(G) on the columns
    for k, c in enumerate(cols):
        scale[k, k] = qm.G[c]
    M = qm.columns(cols) * scale
    if qm.centred:
        S = qm.Wq * fmpz_mat(n, 1, qm.G)
        M = M * n - S * fmpz_mat(1, len(cols), [1] * len(cols))
    return M


def minor_nonzero(qm: ExactQueryMap, columns, prime: int) -> bool:
    """Whether the minor of ``M = c A`` on ``columns`` (``d`` of them) is non-zero modulo ``prime``.
    Without centring ``M = Wq[:, columns] diag(G)``, whose determinant is ``det(Wq[:, columns])``
    times the product of those ``G``: neither factor may vanish (no product is formed)."""
    if qm.centred:
        return nmod_mat(integer_columns(qm, columns), prime).det() != 0
    columns = list(columns)
    if not all(qm.G[c] % prime for c in columns):
        return False
    if prime < 2**31:                                  # residues of Wq straight from the floats
        W = residues(qm.W_float[:, columns], qm.ew, prime)
        return nmod_mat(*W.shape, W.ravel().tolist(), prime).det() != 0
    return nmod_mat(qm.columns(columns), prime).det() != 0


def rotation_invertible(rot) -> bool:
    """Whether the rotary matrix of ``rot`` is invertible: every 2 x 2 block ``c_a c_b + s_a s_b != 0``."""
    c, s, h = [fmpq_of(x) for x in rot.cos], [fmpq_of(x) for x in rot.sin], len(rot.cos) // 2
    pairs = [(i, i + h) for i in range(h)] if rot.style == "half" else [(i, i + 1) for i in range(0, 2 * h, 2)]
    return all(c[a] * c[b] + s[a] * s[b] != 0 for a, b in pairs)


def check_coverage(query_set, coverage, query_map: ExactQueryMap | None = None) -> tuple[bool, str]:
    """``(ok, message)``: exactly, ``A`` has rank ``d`` (the minor on ``coverage.rows`` is non-zero
    modulo ``coverage.prime``, a prime) and the centre is inside (``b = 0``, or ``A u* = -b``,
    ``1 . u* = 0`` when centred, ``||u*||^2 < n``); any rotation is invertible.  ``coverage`` may
    be its JSON object; ``query_map``, the set's exact forms when the caller has them already."""
    if getattr(query_set, "kind", None) not in SETS:
        return False, f"coverage is checked for the query sets {', '.join(SETS)}, not {query_set!r:.40}"
    try:
        coverage = coverage if isinstance(coverage, Coverage) else Coverage.from_json(coverage)
    except CertificateFormatError as err:
        return False, str(err)
    qm = ExactQueryMap(query_set) if query_map is None else query_map
    n, d, rows = qm.n, qm.d, coverage.rows
    if len(rows) != d or len(set(rows)) != d or max(rows, default=0) >= n:
        return False, f"coverage rows must be {d} distinct column indices in 0..{n - 1}"
    if not fmpz(coverage.prime).is_prime():
        return False, f"coverage prime {coverage.prime} is not a prime"
    if not minor_nonzero(qm, rows, coverage.prime):
        return False, f"the minor of A on the claimed columns is zero modulo {coverage.prime}: rank d is not shown"
    if query_set.rotation is not None and not rotation_invertible(query_set.rotation):
        return False, "the rotation of the query set is not invertible (a 2 x 2 block has determinant 0)"
    centred_b = all(qm.q0[a, 0] == 0 for a in range(d))
    if coverage.kind == "full-rank-centred":
        ok = centred_b and coverage.u_star is None
        return ok, "" if ok else "kind full-rank-centred needs b = W_q beta + b_q = 0 exactly and u_star null"
    if centred_b or coverage.u_star is None or len(coverage.u_star) != n:
        return False, f"kind full-rank-interior needs b != 0 and u_star with {n} entries (b = 0: full-rank-centred)"
    U, D = integer_vector_of_fractions([to_fraction(x) for x in coverage.u_star])
    if qm.centred and sum(U) != 0:
        return False, "u_star is not on the hyperplane 1 . u = 0"
    if sum(x * x for x in U) >= n * D * D:
        return False, f"||u_star||^2 >= n = {n}: the centre is not shown to be strictly inside"
    q = qm.Wq * fmpz_mat(n, 1, [g * x for g, x in zip(qm.G, U)])
    if any(q[a, 0] * pow2(qm.ew + qm.eg) / fmpq(D) + qm.q0[a, 0] != 0 for a in range(d)):
        return False, "u_star is not a preimage: A u_star + b != 0"
    return True, ""
