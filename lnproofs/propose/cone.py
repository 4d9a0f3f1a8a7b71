"""The cone program behind the norm-realisable query sets (LayerNorm, RMSNorm, rotary).

With scores ``s_j = Y[j] . y + c[j]`` linear in ``y`` (coordinates of ``u`` in an
orthonormal basis ``Q``), key ``i`` wins for some allowed query when

    max t  subject to  s_i - s_j >= t  for every j != i,   ||y|| <= radius
           (and, for a ball of queries, ||AQ y + q0|| <= R)

is positive.  Clarabel solves it in floats; its answer is only a proposal (``u = Q y`` and
the dual weights ``lambda``), checked exactly by the query set's kernel module.
"""

from __future__ import annotations

import numpy as np

__all__ = ["solve_margin_cone"]


def solve_margin_cone(Y, c, index: int, radius: float, Q, *, ball=None):
    """``(t, u, lambda)`` in floats, or None when the solver gives no usable answer.

    ``ball``: ``(AQ, q0, R)`` to also require ``||AQ y + q0|| <= R``."""
    import clarabel
    import scipy.sparse as sp

    N, r = len(Y), Q.shape[1]
    others = np.array([j for j in range(N) if j != index], dtype=np.int64)
    D = Y[index] - Y[others]
    e = c[index] - c[others]
    m = len(others)
    scale = max(1.0, float(np.abs(D).max(initial=0.0)), float(np.abs(e).max(initial=0.0)))
    # variables x = (y (r), t); minimise -t
    rows = [
        sp.hstack([sp.csc_matrix(-D / scale), sp.csc_matrix(np.ones((m, 1)))]),
        sp.vstack([sp.csc_matrix((1, r + 1)), sp.hstack([-sp.identity(r), sp.csc_matrix((r, 1))])]),
    ]
    b = [e / scale, np.concatenate([[radius * (1 - 1e-9)], np.zeros(r)])]
    cones = [clarabel.NonnegativeConeT(m), clarabel.SecondOrderConeT(r + 1)]
    if ball is not None:
        AQ, q0, R = ball
        dq = AQ.shape[0]
        rows.append(sp.vstack([sp.csc_matrix((1, r + 1)), sp.hstack([sp.csc_matrix(-AQ), sp.csc_matrix((dq, 1))])]))
        b.append(np.concatenate([[R * (1 - 1e-9)], q0]))
        cones.append(clarabel.SecondOrderConeT(dq + 1))
    cost = np.zeros(r + 1)
    cost[-1] = -1.0
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    try:
        solution = clarabel.DefaultSolver(
            sp.csc_matrix((r + 1, r + 1)), cost, sp.vstack(rows).tocsc(), np.concatenate(b), cones, settings
        ).solve()
    except Exception:  # a solver failure is only a missing proposal
        return None
    if str(solution.status) not in ("Solved", "AlmostSolved"):
        return None
    x = np.asarray(solution.x)
    lam = np.zeros(N)
    lam[others] = np.maximum(np.asarray(solution.z)[:m], 0.0)
    return float(x[-1]) * scale, Q @ x[:r], lam
