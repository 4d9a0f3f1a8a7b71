"""Uniform attention, trusted half: the exact checks of an answer (as data: :mod:`lnproofs.certificates.uniform`).

An answer says a non-zero query gives every key the same score (``feasible``: the query,
and for LayerNorm queries the ``u`` it is made from), that none exists (``infeasible``:
a proof checked directly on the equations), or ``undecided``.  For free and ball queries an
answer without a query is decided by the keys' exact affine rank alone: a non-zero q with
q.(k_j - k_0) = 0 for every j exists exactly when the differences do not span R^d, that is
when the rank is below d (theorem ``attention.simplex_vertices``: at most d keys always leave
room), so the pairs an ``infeasible`` proof names are not needed.  The search that makes the
answers is :mod:`lnproofs.propose.uniform`; everything here is exact rational arithmetic.
"""

from __future__ import annotations

import numpy as np
from flint import fmpq, fmpq_mat, fmpz_mat

from .checker import ExactKeys
from .dyadic import fmpq_matrix, fmpq_of, integer_vector_of_fractions
from .errors import CertificateFormatError, InputError, ShapeError, require
from .exact import to_fraction
from .querysets import query_set_from_json
from .querysets.norm import ExactQueryMap, primal_query
from .uniform_exact import LayerNormEquations, difference_matrix, fmpq_column

__all__ = ["UNIFORM_SCHEMA", "check_uniform"]

UNIFORM_SCHEMA = "lnproofs.uniform/1"


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
    require(
        (data.get("n_keys", N), data.get("dim", d)) == (N, d),
        ShapeError,
        f"the answer is for {data.get('n_keys')} keys in R^{data.get('dim')} but the keys have shape ({N}, {d})",
    )
    query_set = query_set_from_json(data.get("query_set"))  # no query_set: free queries
    query_set.validate(d)
    kind = query_set.kind
    status = data.get("status")
    try:
        if kind in ("free", "ball") and status in ("feasible", "infeasible") and data.get("query") is None:
            rank = ExactKeys(keys).affine_rank()  # q != 0 with q.(k_j - k_0) = 0 for all j iff the rank is < d
            return (
                (True, "")
                if (rank < d) == (status == "feasible")
                else (
                    False,
                    f"the keys' affine rank is {rank}, {'not below' if status == 'feasible' else 'not'} d = {d}",
                )
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
            if kind == "subspace":
                W = fmpq_matrix(query_set.matrix)
                if fmpq_mat(W.nrows() + 1, d, W.entries() + [fmpq_of(x) for x in q]).rank() != W.rank():
                    return False, "q is not of the form W^T z"
            if hasattr(query_set, "centred"):  # a norm query set
                return _check_layernorm_feasible(query_set, q, data)
            return True, ""
        if status == "infeasible":
            return _check_infeasible(keys, query_set, kind, data.get("proof") or {})
        if status == "undecided":
            return True, ""
    except (KeyError, TypeError, ValueError, ZeroDivisionError, InputError) as err:
        return False, f"malformed answer ({err})"
    return False, f"status {status!r} is unknown"


def _check_layernorm_feasible(query_set, q, data) -> tuple[bool, str]:
    """``q`` is the query made from the answer's ``u``, or from its compact form ``w``
    (``u = P diag(g) W_q^T R^T w``, :meth:`ExactQueryMap.compact_u`): the norm sets' one exact path."""
    qm, w = ExactQueryMap(query_set), data.get("w")
    if w is not None and (not isinstance(w, list) or len(w) != query_set.dim):
        return False, f"w must be a list of {query_set.dim} numbers"
    made = primal_query(
        qm, -1, *(qm.compact_u(w) if w is not None else integer_vector_of_fractions(map(to_fraction, data["u"])))
    )
    if isinstance(made, tuple):
        return False, "u must satisfy 1.u = 0 (when centred) and ||u||^2 <= n"
    if made != fmpq_column(q):
        return False, "q is not W_q(gamma*u + beta) + b_q for the answer's u"
    return True, ""


def _check_infeasible(keys, query_set, kind, proof) -> tuple[bool, str]:
    N, d = keys.shape
    pairs = proof.get("pairs")
    if kind != "subspace":
        return _check_layernorm_infeasible(keys, query_set, proof)
    if not isinstance(pairs, list) or any(not (0 <= a < N and 0 <= b < N) for a, b in pairs):
        return False, "the proof needs pairs of key indices"
    K = difference_matrix(keys)[1].entries()  # the keys as integers (one common scale)
    rows = fmpz_mat(len(pairs), d, [K[a * d + c] - K[b * d + c] for a, b in pairs for c in range(d)])
    W = fmpq_matrix(query_set.matrix)
    if (fmpq_mat(rows) * W.transpose()).rank() != W.rank():
        return False, "the differences seen through W do not have full rank"
    return True, ""


def _check_layernorm_infeasible(keys, query_set, proof) -> tuple[bool, str]:
    """Check a proof that no query of the LayerNorm set gives every key the same score,
    on the equations ``M u = b`` (kept factored, see
    :class:`~.uniform_exact.LayerNormEquations`)."""
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
