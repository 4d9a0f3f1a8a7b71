"""The witness margins, one witness at a time (the reference of
``lnproofs.certificates.findings.witness_margins``, which must give the same floats)."""

from fractions import Fraction

import numpy as np

from lnproofs.kernel import ExactKeys, integer_vector_of_fractions

__all__ = ["witness_margins_one_by_one"]


def _rescaled(q):
    if all(type(x) is float for x in q):
        return q
    fr = [Fraction(x) for x in q]
    shift = max((x.numerator.bit_length() - x.denominator.bit_length() for x in fr if x), default=0)
    return [x / 2**shift if shift > 0 else x * 2**-shift for x in fr]


def witness_margins_one_by_one(keys, items) -> list:
    ek = ExactKeys.of(keys)
    n, d = ek.n, ek.dim
    if n < 2 or not items:
        return [None] * len(items)
    out = []
    colmax = ek.colmax
    for i, q in items:
        q = _rescaled(q)
        qf = np.array([float(x) for x in q], dtype=np.float64)
        top = float(np.max(np.abs(qf)))
        norm = top * float(np.linalg.norm(qf / top)) if top > 0 else 0.0
        if norm == 0:
            out.append(0.0)
            continue
        rational = not all(type(x) is float for x in q)  # scored through its rounded floats
        exact = rational and any(x == 0 and v != 0 for x, v in zip(qf, q))
        if not exact:
            s = ek.array @ qf
            own = s[i]
            s[i] = -np.inf
            gap = float(own - s.max())
            bound = 8.0 * (float(np.abs(qf) @ colmax) * (d + rational) * 2.0**-50 + d * 2.0**-1020)
            exact = not gap > bound
        if exact:
            Q, den = integer_vector_of_fractions(q)
            scale = Fraction(1, den)
            scores = ek.int_scores(Q)
            top = max(scores[:i] + scores[i + 1 :])
            gap = float(int(scores[i] - top) * scale * Fraction(2) ** ek.exponent)
        out.append(gap / norm)
    return out
