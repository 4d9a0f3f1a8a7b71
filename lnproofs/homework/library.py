"""Where the homework meets the rest of the library: the certifier, the exact checker, the theorems.

Solutions are produced here by the library itself: selectability certificates come
from :mod:`lnproofs.propose.certification` and are accepted only after :mod:`lnproofs.kernel.checker` has
verified them exactly; proof steps come from the theorem registry.  A student's claimed
witness or convex combination is judged by the same trusted checker.
"""

from __future__ import annotations

from fractions import Fraction

from ..kernel import InputError

__all__ = [
    "certify_keys",
    "checker_verdict",
    "uniform_check",
    "uniform_search",
    "nice_witness",
    "nice_combination",
    "theorem_for",
    "proved_theorem",
]


def _array(keys):
    import numpy as np

    return np.asarray([[float(v) for v in row] for row in keys], dtype=np.float64)


def certify_keys(keys) -> dict:
    """Certify every key (free queries) and return the certificate JSON, verified exactly."""
    from ..certificates.certificate import Certificate
    from ..certificates.check import check_certificate
    from ..propose.certification import certify

    array = _array(keys)
    result = certify(array)
    cert = result if isinstance(result, Certificate) else getattr(result, "certificate", result)
    report = check_certificate(cert, array)
    if not report.ok:  # a certifier bug must never reach a solution sheet
        raise InputError(f"the certificate for these keys failed the exact check: {report}")
    return cert.to_json()


def checker_verdict(keys, index: int, status: str, witness=None, combination=None) -> bool:
    """Ask the trusted checker whether one claim about key ``index`` (0-based) holds exactly.

    ``status`` "selectable" checks ``witness`` (Fractions) strictly; "tie-only" checks it
    as a tie; otherwise ``combination`` = (0-based indices, Fraction weights) is checked as
    a convex combination of the other keys.
    """
    from ..kernel import Combination, check_witnesses
    from ..propose.exact_checks import check_combination

    array = _array(keys)
    if status in ("selectable", "tie-only") and witness is not None:
        mode = "strict" if status == "selectable" else "tie"
        (message,) = check_witnesses(array, [(index, tuple(witness))], mode=mode)
        return message is None
    comb = Combination(tuple(combination[0]), tuple(combination[1]))
    return check_combination(array, index, comb, strict=False) is None


def uniform_check(keys, query) -> tuple[bool, str]:
    """The library's exact check that ``query`` (Fractions) gives every key the same score."""
    from ..propose.uniform import UniformResult, check_uniform

    array = _array(keys)
    claim = UniformResult("feasible", {"kind": "free"}, len(keys), len(keys[0]), query=tuple(query))
    return check_uniform(array, claim)


def uniform_search(keys) -> tuple[Fraction, ...]:
    """A uniform query found by :func:`lnproofs.propose.uniform.uniform_attention` (free queries)."""
    from ..propose.uniform import uniform_attention

    result = uniform_attention(_array(keys))
    if result.status != "feasible":
        raise InputError(f"no uniform query for these keys: {result.describe()}")
    return tuple(Fraction(x) for x in result.query)


def _scores(keys, q):
    return [sum((Fraction(a) * b for a, b in zip(q, k)), Fraction(0)) for k in keys]


def _wins(keys, index, q, tie):
    scores = _scores(keys, q)
    others = [s for j, s in enumerate(scores) if j != index]
    if tie:
        return scores[index] == max(scores) and min(scores) < scores[index]
    return all(scores[index] > s for s in others)


def nice_witness(keys, index: int, witness, tie: bool = False) -> tuple[Fraction, ...]:
    """A small integer query doing the same job as the certifier's ``witness`` (checked exactly).

    The certifier's witness is often a float with many digits; a student reads small
    integers more easily.  Scaled and rounded copies are proposed and the first one that
    passes the exact test is returned; otherwise the exact value of the witness itself.
    """
    from ..kernel import to_fraction

    keys = [[Fraction(v) for v in row] for row in keys]
    exact = tuple(to_fraction(w) for w in witness)
    biggest = max(abs(w) for w in exact)
    if biggest > 0:
        for scale in range(1, 13):
            candidate = tuple(Fraction(round(w * scale / biggest)) for w in exact)
            if any(candidate) and _wins(keys, index, candidate, tie):
                return candidate
    if not _wins(keys, index, exact, tie):
        raise InputError(f"the certifier's query for key {index + 1} does not pass the exact test")
    return exact


def _solve_exact(rows: list[list[Fraction]], rhs: list[Fraction]) -> list[Fraction] | None:
    """The unique solution of a square-or-tall exact linear system, or None (singular or inconsistent)."""
    m, n = len(rows), len(rows[0])
    a = [row[:] + [b] for row, b in zip(rows, rhs)]
    r = 0
    for c in range(n):
        p = next((i for i in range(r, m) if a[i][c] != 0), None)
        if p is None:
            return None
        a[r], a[p] = a[p], a[r]
        for i in range(m):
            if i != r and a[i][c] != 0:
                f = a[i][c] / a[r][c]
                a[i] = [x - f * y for x, y in zip(a[i], a[r])]
        r += 1
    if any(a[i][n] != 0 for i in range(r, m)):
        return None
    return [a[i][n] / a[i][i] for i in range(n)]


def nice_combination(keys, index: int, indices, weights) -> tuple[list[int], list[Fraction]]:
    """Convex weights with small denominators reproducing key ``index`` (0-based), checked exactly.

    The certifier's weights are exact but may be dyadic rationals with 16-digit numerators;
    a student reads 3/7 more easily.  When every given weight already has a denominator of
    at most 1000 they are kept; otherwise the exact barycentric weights over the fewest keys
    of the given support (Caratheodory: at most dim + 1 of them) are returned.  The result
    is accepted only if the trusted checker verifies it; else the given weights are returned.
    """
    from itertools import combinations

    given = [Fraction(w) for w in weights]
    if all(w.denominator <= 1000 for w in given):
        return list(indices), given
    exact = [[Fraction(v) for v in row] for row in keys]
    target = exact[index]
    support = [i for i, w in zip(indices, given) if w > 0]
    for size in range(1, len(target) + 2):
        for subset in combinations(sorted(support), size):
            rows = [[exact[j][c] for j in subset] for c in range(len(target))] + [[Fraction(1)] * size]
            solution = _solve_exact(rows, target + [Fraction(1)])
            if solution is None or any(w < 0 for w in solution):
                continue
            if checker_verdict(keys, index, "unselectable", combination=(list(subset), solution)):
                return list(subset), solution
    return list(indices), given


def _split(reference: str) -> tuple[str, int | None]:
    """``"projection.idempotent@4"`` -> ("projection.idempotent", 4); no ``@`` means general n."""
    name, _, width = reference.partition("@")
    return name, (int(width) if width else None)


def theorem_for(reference: str):
    """The registered theorem ``name`` or ``name@n`` (concrete width n), or None when not registered."""
    from ..derive import registry

    name, n = _split(reference)
    try:
        return registry.get_theorem(name, n=n)
    except InputError:  # a name whose theorem module is not installed
        return None


def proved_theorem(reference: str):
    """The proof result of theorem ``name`` (general n) or ``name@n``, or None when it is not registered."""
    theorem = theorem_for(reference)
    if theorem is None:
        return None
    return theorem.prove()
