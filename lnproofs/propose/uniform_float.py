"""The compact uniform-attention decision in float64 with proved error bounds (no tolerance).

The question (see :mod:`.uniform_norm`): with the key differences ``D`` (m x d, ``0 < m < d``),
``H = A P A^T`` (d x d, invertible) and the offset ``q0``, the least-norm solution is
``lambda = G^{-1} r`` with ``G = D H D^T`` and ``r = -D q0``; then ``||u*||^2 = lambda . r``
and ``q* = q0 + H D^T lambda``.  The status is ``infeasible`` when ``||u*||^2 > n`` and
``feasible`` when ``||u*||^2 < n``: then even ``q* = 0`` leaves room, since a non-zero ``w'``
with ``D H w' = 0`` exists (``m < d``), ``H w' != 0`` (``H`` invertible) and ``w*^T H w' = 0``,
so ``w* + t w'`` gives ``q = t H w' != 0`` with ``||u||^2 = ||u*||^2 + t^2 w'^T H w' < n`` for
small ``t`` (the step :mod:`.uniform_norm` takes for ``q* = 0``).

Here every quantity is computed in float64 and enclosed by a bound that holds whatever the
order of summation (numpy's products may use any order, with or without fused multiply-add):

* inputs: ``Df = fl(k_i - k_0)``, within ``u |D|`` of the exact differences (``u = 2^-53``; a
  subtraction whose result is subnormal is exact); ``Hf`` and ``q0f`` with bounds ``eH``, ``eq``
  of their errors: correctly rounded from the exact values (:func:`float_data`), or, for a
  rotary position, rotated in floats from those of the position-free set (:func:`rotated_data`:
  ``R H R^T`` costs two small float products instead of d^2 exact roundings);
* a product of inner length ``k`` computed in floats is within ``gamma_k |A| |B|`` of the
  exact product of its float operands (``gamma_k = k u / (1 - k u)``), plus at most ``k``
  underflows of ``2^-1075`` each;
* the solve is verified, not trusted: with any approximate inverse ``R`` of ``Gf``, every
  ``G`` within the enclosure of ``Gf`` has ``||I - R G||_inf <= beta``; ``beta < 1`` proves
  ``G`` invertible, and ``|lambda - lambda_f| <= ||R (r - G lambda_f)||_inf / (1 - beta)``
  for every coordinate (the Neumann series of ``I - R G``); and since ``G`` is symmetric,
  ``||u*||^2 = lambda . r = lambda_f . r + lambda . (r - G lambda_f)``, whose last term is
  bounded by the residual, not by the condition of ``G``.

Each bound below uses a relative factor per product (:func:`_gamma`), larger than the sum of
the ``gamma`` and input terms it covers, an absolute term :data:`TINY` far above any sum of
underflows, and rounds every bound it computes upwards by :func:`_up` (nonnegative sums and
products in floats are within ``gamma_k`` of their exact values).  A bound that does not
separate the threshold, a non-finite value, or ``beta >= 1/2`` gives None: the Arb balls and
then the exact rationals of :mod:`.uniform_norm` answer instead.  About 0.1 to 0.2 ms for a
head of width 32, where the 128-bit balls take about 0.9 ms and need the integer key
differences.
"""

from __future__ import annotations

import numpy as np

__all__ = ["float_data", "rotated_data", "float_decision", "first_differences_independent"]

U = 2.0**-53
#: an absolute term above every possible sum of underflow errors (each at most 2^-1075)
TINY = 2.0**-900
#: the upward rounding of a computed bound: a nonnegative float sum or product of fewer than
#: 2^20 terms is within (1 + 2^-33) of its exact value
UPWARD = 1.0 + 2.0**-30


def _up(x):
    """An upper bound of the exact value of a nonnegative float expression ``x`` (see above)."""
    return x * UPWARD + TINY


def _gamma(k: int) -> float:
    """A bound above ``gamma_k`` and the input errors that come with a product of inner length
    ``k``: ``(2 k + 16) u``, twice what the analysis needs for ``k`` below 2^20."""
    return (2 * k + 16) * U * 2.0


def float_data(Hn, c, q0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(Hf, eH, q0f, eq)``: ``H = Hn * c`` and ``q0`` as float64, each entry correctly rounded
    (Python's division of integers is; infinite beyond the float range), and bounds ``eH``,
    ``eq`` of their errors (``u |.|`` of the exact value, so ``u / (1 - u)`` of the float)."""
    from flint import fmpq

    def rounded(p: int, q: int) -> float:
        try:
            return p / q  # integers: correctly rounded
        except OverflowError:
            return float("inf")

    d = Hn.nrows()
    cf = fmpq(c)
    num, den = int(cf.p), int(cf.q)  # H_ij = Hn_ij num / den, whatever its lowest terms
    H = np.array([rounded(int(e) * num, den) for e in Hn.entries()], dtype=np.float64).reshape(d, d)
    q = np.array([rounded(int(x.p), int(x.q)) for x in q0.entries()], dtype=np.float64)
    return H, _up(np.abs(H) * (2 * U)), q, _up(np.abs(q) * (2 * U))


def rotated_data(R, data) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`float_data` of ``R H R^T`` and ``R q0`` from that of ``H`` and ``q0`` (``data``) and the
    exact rotation ``R`` (fmpq_mat, d x d): ``R`` rounded entry by entry (exact for the float
    cos/sin tables rotary sets are built from), the products in floats, every rounding bounded."""
    Hf, eH, qf, eq = data
    num, den = R.numer_denom()
    # exact for a float table (dyadic entries: den a power of two, each numerator 53 bits);
    # otherwise each entry within a few units in the last place (fmpz to float may truncate)
    Rf = np.array(num.tolist(), dtype=np.float64) / float(int(den))
    aR, k = np.abs(Rf) * (1 + 16 * U) + TINY, _gamma(2 * len(Rf))  # >= |R|
    H = Rf @ Hf @ Rf.T
    q = Rf @ qf
    eH2 = _up(_up(aR @ eH @ aR.T) * (1 + 4 * U) + k * _up(aR @ np.abs(Hf) @ aR.T))
    eq2 = _up(_up(aR @ eq) * (1 + 4 * U) + k * _up(aR @ np.abs(qf)))
    return H, eH2, q, eq2


def float_decision(keys, Hf, eH, q0f, eq, n: int):
    """``("feasible" | "infeasible", ||u*||^2 as a float)`` proved in float64 (module docstring),
    or None when the bounds do not decide.  ``keys``: the float64 keys (N x d, ``1 < N <= d``);
    ``Hf``, ``q0f`` with the bounds ``eH``, ``eq`` of their errors (:func:`float_data`)."""
    keys = np.asarray(keys, dtype=np.float64)
    Df = keys[1:] - keys[0]
    m, d = Df.shape
    with np.errstate(all="ignore"):
        return _decide(Df, Hf, eH, q0f, eq, n, m, d)


def _decide(Df, Hf, eH, q0f, eq, n, m, d):
    aD = np.abs(Df)
    G = Df @ (Hf @ Df.T)  # m x m
    r = -(Df @ q0f)
    kG, kr = _gamma(2 * d), _gamma(d)
    # |G - Gf|: the rounding of D and both products (relative to |D| (|H| + eH) |D|^T), and eH
    EG = _up(kG * _up(aD @ _up((np.abs(Hf) + eH) @ aD.T)) + _up(aD @ _up(eH @ aD.T)) * (1 + 4 * U))
    Er = _up(kr * _up(aD @ (np.abs(q0f) + eq)) + _up(aD @ eq) * (1 + 4 * U))  # |r - rf|
    if not (np.isfinite(G).all() and np.isfinite(EG).all() and np.isfinite(r).all() and np.isfinite(Er).all()):
        return None
    try:
        R = np.linalg.inv(G)
    except np.linalg.LinAlgError:
        return None
    lam = R @ r
    aR, km = np.abs(R), _gamma(m)
    C = R @ G - np.eye(m)
    beta = _up(np.max(_up(np.abs(C) * UPWARD + km * _up(aR @ np.abs(G)) + _up(aR @ EG)).sum(axis=1)))
    if not np.isfinite(beta) or not beta < 0.5:
        return None
    z = r - G @ lam
    zeta = _up(np.abs(z) * UPWARD + Er + _up(EG @ np.abs(lam)) + km * _up(np.abs(r) + _up(np.abs(G) @ np.abs(lam))))
    rho = _up(np.max(_up(aR @ zeta)))
    eps = _up(rho / (1.0 - beta) * UPWARD)  # |lambda - lam| <= eps, every coordinate
    norm2 = float(lam @ r)
    # lambda . r exactly = lam . r + lambda . (r - G lam) (G symmetric: r . G^{-1} z = lambda . z)
    aL = np.abs(lam)
    spread = _up(km * _up(aL @ np.abs(r)) + _up(aL @ Er) + _up((aL * UPWARD + eps) @ zeta))
    if not (np.isfinite(norm2) and np.isfinite(spread)):
        return None
    if norm2 - spread > n and (norm2 - spread) * (1 - 2 * U) > n:
        return "infeasible", norm2
    if (norm2 + spread) * (1 + 2 * U) < n:
        return "feasible", norm2
    return None


def first_differences_independent(keys) -> bool:
    """True when the first ``d`` key differences ``k_1 - k_0, ..., k_d - k_0`` are proved linearly
    independent in float64 (``keys``: N x d, N > d): with ``M`` their float matrix (within
    ``u |M|`` of the exact one) and any approximate inverse ``R``, ``||I - R M'||_inf < 1`` for
    every ``M'`` within that bound proves each such ``M'`` invertible.  False when the bound does
    not prove it (nothing is claimed then)."""
    keys = np.asarray(keys, dtype=np.float64)
    d = keys.shape[1]
    if len(keys) <= d:
        return False
    M = keys[1 : d + 1] - keys[0]
    with np.errstate(all="ignore"):
        if not np.isfinite(M).all():
            return False
        try:
            R = np.linalg.inv(M)
        except np.linalg.LinAlgError:
            return False
        aR, aM = np.abs(R), np.abs(M)
        C = np.abs(R @ M - np.eye(d)) * UPWARD
        beta = _up(np.max(_up(C + _gamma(d) * _up(aR @ aM) + _up(aR @ _up(aM * (2 * U)))).sum(axis=1)))
    return bool(np.isfinite(beta) and beta < 0.5)
