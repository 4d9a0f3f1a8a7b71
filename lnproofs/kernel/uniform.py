"""Uniform attention, trusted half: the exact checks of an answer (as data: :mod:`lnproofs.certificates.uniform`).

An answer says a non-zero query gives every key the same score (``feasible``: the query,
and for LayerNorm queries the ``u`` it is made from), that none exists (``infeasible``:
a proof checked directly on the equations), or ``undecided``.  For free and ball queries an
answer without a query is decided by the keys' exact affine rank alone: a non-zero q with
q.(k_j - k_0) = 0 for every j exists exactly when the differences do not span R^d, that is
when the rank is below d (theorem ``attention.simplex_vertices``: at most d keys always leave
room), so the pairs an ``infeasible`` proof names are not needed.  The search that makes the
answers is :mod:`lnproofs.propose.uniform`; everything here is exact rational arithmetic.

The equations.  With the keys written as integers times one power of two (``K * 2**e``), the key differences
``D = K[1:] - K[0]`` are an integer matrix; for norm-realisable queries
``q = A u + q0`` (``A = R W_q diag(g)``, ``q0 = R (W_q beta + b_q)``, ``R`` the rotation or ``I``)
the equations are

    M u = b,   M = [D A ; 1^T],   b = [-D q0 ; 0]        (N rows, n columns),

without the last row ``1 . u = 0`` when the set is not centred (RMSNorm).  Every product is
one python-flint matrix product, so the cost does not grow with Python loops over entries.
"""

from __future__ import annotations

import numpy as np
from flint import fmpq, fmpq_mat, fmpz_mat

from .certificates import same_shape
from .checker import ExactKeys
from .dyadic import fmpq_matrix, fmpq_of, integer_matrix, integer_vector_of_fractions
from .errors import CertificateFormatError, InputError, require
from .exact import to_fraction
from .querysets import query_set_from_json
from .querysets.free import BallQuerySet, FreeQueries
from .querysets.norm import ExactQueryMap, NormQuerySet, primal_queries
from .querysets.subspace import SubspaceQuerySet

UNIFORM_SCHEMA = "lnproofs.uniform/1"


def difference_matrix(keys):
    """``(D, K)``: the integer key differences ``K[1:] - K[0]`` and the integer keys (fmpz_mat),
    both in units of the keys' common power of two."""
    K, _ = integer_matrix(np.atleast_2d(np.asarray(keys, dtype=np.float64)))
    N, d = K.nrows(), K.ncols()
    e = K.entries()
    return fmpz_mat(max(N - 1, 0), d, [e[r * d + c] - e[c] for r in range(1, N) for c in range(d)]), K


def fmpq_column(values):
    """A column fmpq_mat of exact rationals (Fractions or ints)."""
    return fmpq_mat(len(values), 1, [fmpq_of(v) for v in values])


class LayerNormEquations:
    """The equations ``M u = b`` of one key set and one norm query set (LayerNorm, RMSNorm,
    rotary), kept factored: ``M`` is never formed.  ``A = R WG * scale`` with the integer matrix
    ``WG`` (fmpz_mat; ``query`` gives ``A u + q0``), ``q0`` (fmpq_mat), ``H = A P A^T = Hn * c``
    with the integer ``Hn``, the integer key differences ``D``.  Every question about the
    solution set reduces to ``d``-dimensional linear algebra, because ``q = A u + q0``
    only depends on the part of ``u`` in the range of ``P A^T``.  Vectors ``u`` are kept
    as ``(U, den)``: an integer column and one positive denominator."""

    def __init__(self, keys, query_set, query_map=None, differences=None):
        qm = ExactQueryMap(query_set) if query_map is None else query_map
        self.query_set, self.centred, self.R = query_set, query_set.centred, qm.R
        self.n, self.d = query_set.width, query_set.dim
        self.Hn, self.c, self.q0 = qm.gram()
        self.WGT, self.scale, self.query = qm.WGT, qm.scale, qm.query  # query(U, den) = A u + q0, u = U / den
        self.D, self.K = difference_matrix(keys) if differences is None else differences
        self.N = self.D.nrows() + int(self.centred)  # equations: the differences (and 1.u = 0)

    def AT_times(self, v):
        """``(U, den)`` with ``A^T v = U / den`` for a rational column ``v`` (fmpq_mat)."""
        vi, dv = (v if self.R is None else self.R.transpose() * v).numer_denom()
        f = self.scale / dv
        return self.WGT * vi * int(f.p), int(f.q)

    # ---- M^T y and M u without forming M ----
    def combine(self, y):
        """``(U, den)`` with ``M^T y = U / den``, and ``y . b``, for N rational weights ``y`` (fmpq)."""
        m = self.D.nrows()
        v = (fmpq_mat(1, m, list(y[:m])) * fmpq_mat(self.D)).transpose() if m else fmpq_mat(self.d, 1)
        U, den = self.AT_times(v)
        yb = -(v.transpose() * self.q0)[0, 0]
        if not self.centred:
            return (U, den), yb
        last = fmpq(y[-1]) * den
        U = U * int(last.q) + fmpz_mat(self.n, 1, [1] * self.n) * int(last.p)
        return (U, den * int(last.q)), yb

    def residual_free(self, U, den) -> bool:
        """True when ``M u = b`` for ``u = U / den``: ``D (A u + q0) = 0`` and ``1.u = 0``."""
        if self.centred and sum(U.entries()) != 0:
            return False
        q = self.query(U.entries(), den)
        return self.D.nrows() == 0 or all(x == 0 for x in (fmpq_mat(self.D) * q).entries())

    def directions_keep_query(self) -> bool:
        """True when every direction of the solution set leaves ``q`` unchanged: range(H) meets
        {q : D q = 0} only in 0, that is ``D`` is one-to-one on range(H): ``rank(D Hn) = rank(Hn)``."""
        return int((self.D * self.Hn).rank()) == int(self.Hn.rank())


def check_uniform(keys, data) -> tuple[bool, str]:
    """Re-verify a uniform-attention answer (its JSON object, schema ``lnproofs.uniform/1``) exactly,
    for the keys it is about (their shape and the query set's dimension first)."""
    keys = np.asarray(keys, dtype=np.float64)
    N, d = keys.shape
    require(
        isinstance(data, dict) and data.get("schema", UNIFORM_SCHEMA) == UNIFORM_SCHEMA,
        CertificateFormatError,
        f"a uniform-attention answer must be a JSON object with schema {UNIFORM_SCHEMA!r}",
    )
    same_shape({"n_keys": N, "dim": d, **data}, N, d, "answer")
    query_set = query_set_from_json(data.get("query_set"))  # no query_set: free queries
    norm = isinstance(query_set, NormQuerySet)
    query_set.validate(d)
    status, free = data.get("status"), isinstance(query_set, (FreeQueries, BallQuerySet))
    require(
        free or norm or isinstance(query_set, SubspaceQuerySet),
        CertificateFormatError,
        f"uniform attention is answered for free, ball, subspace and norm query sets, not {query_set.kind!r} ones",
    )
    try:
        if free and status == "feasible" and data.get("query") is None or status == "infeasible" and not norm:
            # q = W^T z != 0 (W = I: free, ball) with q.(k_j - k_0) = 0 for all j exists iff rank(D W^T) < rank W
            W = None if free else fmpq_matrix(query_set.matrix)
            rank = (
                ExactKeys(keys).affine_rank() if free else (fmpq_mat(difference_matrix(keys)[0]) * W.transpose()).rank()
            )
            full = d if free else W.rank()
            if (rank < full) == (status == "feasible"):
                return True, ""
            what = "the keys' affine rank" if free else "the rank of the key differences seen through W"
            return (
                False,
                f"{what} is {rank}, {'not below' if status == 'feasible' else 'not'} {'d' if free else 'rank W'} = {full}",
            )
        if status == "feasible":
            q = [to_fraction(x) for x in data["query"]]
            if len(q) != d or not any(q):
                return False, "the query must be non-zero with d entries"
            diffs = fmpq_mat(difference_matrix(keys)[0]) * fmpq_column(q)
            bad = next((j for j, x in enumerate(diffs.entries()) if x != 0), None)
            if bad is not None:
                return False, f"q.k_{bad + 1} - q.k_0 is not 0"
            radius = getattr(query_set, "radius", None)
            if radius is not None and sum(x * x for x in q) > to_fraction(radius) ** 2:
                return False, "||q|| exceeds the ball radius"
            if isinstance(query_set, SubspaceQuerySet):
                W = fmpq_matrix(query_set.matrix)
                if fmpq_mat(W.nrows() + 1, d, W.entries() + [fmpq_of(x) for x in q]).rank() != W.rank():
                    return False, "q is not of the form W^T z"
            if norm:
                return _check_layernorm_feasible(query_set, q, data)
            return True, ""
        if status == "infeasible":
            return _check_layernorm_infeasible(keys, query_set, data.get("proof") or {})
        if status == "undecided":
            return True, ""
    except (KeyError, TypeError, ValueError, ZeroDivisionError, InputError) as err:
        return False, f"malformed answer ({err})"
    return False, f"status {status!r} is unknown"


def _check_layernorm_feasible(query_set, q, data) -> tuple[bool, str]:
    """``q`` is the query made from the answer's ``u``, or from its compact form ``w``
    (``u = P diag(g) W_q^T R^T w``, :meth:`ExactQueryMap.compact_u`): the norm sets' one exact path."""
    qm, w = ExactQueryMap(query_set), data.get("w")  # a w of another length: malformed (ValueError)
    U, den = qm.compact_u(w) if w is not None else integer_vector_of_fractions(map(to_fraction, data["u"]))
    made = primal_queries(qm, [(-1, U, den)])[0]
    if isinstance(made, tuple):
        return False, "u must satisfy 1.u = 0 (when centred) and ||u||^2 <= n"
    if made != fmpq_column(q):
        return False, "q is not W_q(gamma*u + beta) + b_q for the answer's u"
    return True, ""


def _check_layernorm_infeasible(keys, query_set, proof) -> tuple[bool, str]:
    """Check a proof that no query of the LayerNorm set gives every key the same score,
    on the equations ``M u = b`` (kept factored, see
    :class:`LayerNormEquations`)."""
    kind = proof.get("kind")
    if kind == "independent differences":
        # no non-zero query at all gives equal scores, so none of the layer's queries does
        return check_uniform(keys, {"status": "infeasible"})
    eq = LayerNormEquations(keys, query_set)
    n = query_set.width
    if kind == "inconsistent equations":
        y = [fmpq_of(x) for x in proof.get("combination", [])]
        if len(y) != eq.N:
            return False, f"the combination needs one weight per equation ({eq.N})"
        (U, _), yb = eq.combine(y)
        if any(x != 0 for x in U.entries()):
            return False, "the combination of the equations does not cancel u"
        if yb == 0:
            return False, "the combination of the equations reads 0 = 0, not a contradiction"
        return True, ""
    rows, y = proof.get("rows"), [fmpq_of(x) for x in proof.get("y", [])]
    if (
        not isinstance(rows, list)
        or len(rows) != len(y)
        or any(not (isinstance(r, int) and 0 <= r < eq.N) for r in rows)
    ):
        return False, "the proof needs equation indices 'rows' and one weight 'y' for each"
    # u = M_rows^T y lies in the row space of M, so if it solves M u = b it is the least-norm solution
    weights = [fmpq(0)] * eq.N  # M_rows^T y (row N - 1 is the equation 1.u = 0)
    for r, w in zip(rows, y):
        weights[r] += w
    (U, den), _ = eq.combine(weights)
    if not eq.residual_free(U, den):
        return False, "u = M_rows^T y does not solve every equation"
    norm2 = fmpq(int((U.transpose() * U)[0, 0]), den * den)
    if kind == "least-norm solution outside the ball":
        return (True, "") if norm2 > n else (False, f"the least-norm solution has ||u||^2 <= n = {n}")
    if kind == "every solution in the ball gives q = 0":
        if any(x != 0 for x in eq.query(U.entries(), den).entries()):
            return False, "the least-norm solution gives a non-zero query"
        if norm2 >= n:
            return True, ""  # at most the least-norm solution itself lies in the ball
        if not eq.directions_keep_query():
            return False, "some solution direction changes the query, so a non-zero query exists in the ball"
        return True, ""
    return False, f"unknown proof kind {kind!r}"
