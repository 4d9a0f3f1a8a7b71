"""Uniform attention: a non-zero query that gives every key the same score.

``q . k_j`` is the same for every j exactly when ``q`` is orthogonal to every key
difference ``k_j - k_0``.  For free queries such a ``q != 0`` exists iff the differences
span less than R^d; when they span R^d, ``d`` linearly independent differences prove
that none exists.  Projection (LayerNorm's mean subtraction) makes the differences
orthogonal to the all-ones vector, so ``q = 1`` always works there (the paper's
projection property).

Under a subspace query set (q = W^T z) the question is whether the differences, seen
through ``W``, still have a kernel; under norm-realisable queries (LayerNorm, RMSNorm,
rotary: :mod:`.uniform_norm`) the solutions ``u`` of the linear equations form an affine
space, and its point of least norm decides whether one lies in the ball ``||u||^2 <= n``.

Every step is python-flint exact linear algebra (null spaces, solves, ranks modulo a prime
confirmed exactly) of size d, whatever the weights; the element-by-element search these
answers are tested against lives beside the tests.

Statuses: ``"feasible"`` (a query is given and checked exactly), ``"infeasible"``
(a proof is given and checked exactly), ``"undecided"`` (with the reason).
"""

from __future__ import annotations

from fractions import Fraction

from ..certificates.uniform import UniformResult
from ..certificates.writers import query_set_to_json
from ..kernel import (
    BallQuerySet,
    FreeQueries,
    NormQuerySet,
    OptionError,
    SubspaceQuerySet,
    require,
)
from ..kernel import check_uniform as _check_uniform
from .uniform_linalg import full_column_rank, kept, kernel_vector, normalise, pivot_rows, rows_of, scale_into
from .uniform_norm import independent_first, uniform_norm

__all__ = ["UniformResult", "uniform_attention", "check_uniform"]


def check_uniform(keys, result) -> tuple[bool, str]:
    """The kernel's exact check (:func:`lnproofs.kernel.check_uniform`) of an answer:
    a :class:`UniformResult` or its JSON object."""
    return _check_uniform(keys, result.to_json() if hasattr(result, "to_json") else result)


def uniform_attention(
    keys, query_set=None, *, query_map=None, compact: bool = False, differences=None, query_set_ref: dict | None = None
) -> UniformResult:
    """Decide whether a non-zero query in the set gives every key the same score.

    For norm query sets (``layernorm``, ``rmsnorm``, ``layernorm_rotary``), ``query_map``
    (an :class:`~lnproofs.kernel.ExactQueryMap` of the same query set) is
    shared between calls.  ``compact=True`` is for runs that keep only the statuses: the
    answer's exact query and proof (rationals of thousands of digits for wide layers) are
    not returned; run without it for an answer that :func:`check_uniform` re-verifies
    (with a ball radius, a feasible compact answer carries ``w``,
    ``u = P diag(g) W_q^T R^T w``, d numbers instead of n).  ``differences``: a function
    giving what :func:`~lnproofs.propose.integer_keys.key_differences` gives for these keys,
    shared by several query sets over the same keys and called only when an answer reads
    them (the float64 proofs decide most questions first).  ``query_set_ref``: what
    the answer names as its query set instead of the set's JSON (a run's reference to a head;
    such an answer is checked against the set that reference rebuilds)."""
    from ..io.exact import exact_float64
    from ..kernel import as_real_array
    from .integer_keys import key_differences

    keys = as_real_array(exact_float64(keys, "keys"), name="keys", ndim=2)
    N, d = keys.shape
    if query_set is not None:
        query_set.validate(d)
    free = query_set is None or type(query_set) is FreeQueries
    require(
        free or isinstance(query_set, (BallQuerySet, SubspaceQuerySet, NormQuerySet)),
        OptionError,
        f"uniform attention is answered for free, ball, subspace and norm query sets, not {getattr(query_set, 'kind', '')!r} ones",
    )
    qs_json = (
        {"kind": "free"}
        if query_set is None
        else query_set_ref
        if query_set_ref is not None
        else kept(query_map, "query_set_json", lambda: query_set_to_json(query_set))
    )
    base = dict(query_set=qs_json, n_keys=N, dim=d)
    if isinstance(query_set, NormQuerySet):
        return uniform_norm(keys, query_set, base, query_map, compact, differences)
    if compact and query_set is None and N - 1 < d:
        # fewer differences than dimensions: their span misses some q != 0
        return UniformResult(
            "feasible", proof={"kind": "fewer differences than dimensions"}, extras={"query_stored": False}, **base
        )
    if free and N - 1 >= d and (answer := independent_first(keys, base)) is not None:
        return answer
    D, _ = key_differences(keys, with_keys=False) if differences is None else differences()
    if isinstance(query_set, SubspaceQuerySet):
        return _uniform_subspace(D, query_set, base)
    if D.nrows() == 0:
        q = [Fraction(1)] + [Fraction(0)] * (d - 1)
        return UniformResult("feasible", query=tuple(scale_into(normalise(q), query_set)), **base)
    q = None if full_column_rank(D) else kernel_vector(D)
    if q is not None:
        return UniformResult("feasible", query=tuple(scale_into(normalise(q), query_set)), **base)
    return UniformResult(
        "infeasible", proof={"kind": "independent differences", "pairs": [[j + 1, 0] for j in pivot_rows(D)]}, **base
    )


def _uniform_subspace(D, query_set, base) -> UniformResult:
    """``q = W^T z``: with independent rows ``B`` of ``W``, equal scores are ``(D B^T) z = 0``
    and ``q = B^T z`` is non-zero for every ``z != 0``."""
    from flint import fmpq, fmpq_mat, fmpz_mat

    from ..kernel import integer_matrix

    W, _ = integer_matrix(query_set.matrix)
    B = rows_of(W, pivot_rows(W))
    r = B.nrows()
    if r == 0:  # W = 0: the only query is q = 0
        return UniformResult("infeasible", proof={"kind": "rank through W", "pairs": []}, **base)
    if D.nrows() == 0:
        z = fmpz_mat(r, 1, [int(k == 0) for k in range(r)])
    else:
        DB = D * B.transpose()
        y = None if full_column_rank(DB) else kernel_vector(DB)
        if y is None:
            return UniformResult(
                "infeasible", proof={"kind": "rank through W", "pairs": [[j + 1, 0] for j in pivot_rows(DB)]}, **base
            )
        z = fmpq_mat(r, 1, [fmpq(v.numerator, v.denominator) for v in y])
    q = [Fraction(int(x.p), int(x.q)) for x in (fmpq_mat(B.transpose()) * z).entries()]
    return UniformResult("feasible", query=tuple(scale_into(normalise(q), query_set)), **base)
