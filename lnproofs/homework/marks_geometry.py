"""Marking the geometry problems: projection, sphere and ellipsoid (exact comparisons)."""

from __future__ import annotations

from fractions import Fraction

from ..certificates.writers import format_fraction
from .values import (
    _expression,
    _is_zero,
    _matrix,
    _mismatch,
    _part,
    _rational,
    _same,
    _show,
    _vec_text,
    _vector,
    _Wrong,
    unmatched,
)
from .values import expected as expected_

__all__ = ["check_projection", "check_sphere", "check_ellipsoid"]


def check_projection(problem, answer):
    P = problem.projection()
    n = problem.n

    def matrix(name, expected, hint):
        def check(value):
            given = _matrix(value, n, name)
            wrong = [(i, j) for i in range(n) for j in range(n) if given[i][j] != expected[i][j]]
            if not wrong:
                return None
            i, j = wrong[0]
            return (
                f"entry ({i + 1}, {j + 1}) should be {expected_(format_fraction(expected[i][j]))}, you gave "
                f"{format_fraction(given[i][j])} ({len(wrong)} of {n * n} entries wrong); {expected_(hint)}"
            )

        return check

    def px(value):
        given = _vector(value, n, _rational, "Px")
        expected = problem.solve_px()
        if given == expected:
            return None
        total = sum(given, Fraction(0))
        extra = (
            f"; Px must sum to 0 (it is orthogonal to the all-ones vector) but yours sums to {format_fraction(total)}"
            if total != 0
            else ""
        )
        k = next(i for i in range(n) if given[i] != expected[i])
        return (
            f"entry {k + 1} should be {expected_(format_fraction(expected[k]))} = x_{k + 1} - mean(x), you gave "
            f"{format_fraction(given[k])}{extra}"
        )

    return [
        _part(
            problem,
            "P",
            answer,
            matrix(
                "P",
                P,
                f"P = I - J/{n} has {format_fraction(P[0][0])} on the diagonal "
                f"and {format_fraction(P[0][1])} elsewhere",
            ),
        ),
        _part(
            problem,
            "P_squared",
            answer,
            matrix("P_squared", P, "multiplying out, every entry of P^2 equals the entry of P (P is idempotent)"),
        ),
        _part(problem, "Px", answer, px),
    ]


def _expr_check(expected, hints=()):
    def check(value):
        given = _expression(value)
        if _same(given, expected):
            return None
        for alternative, hint in hints:
            if _same(given, alternative):
                return f"expected {expected_(_show(expected))}, you gave {_show(given)}: {hint}"
        note = ""
        if given.is_Rational and not expected.is_Rational:
            note = "; the exact value is irrational, so no decimal or fraction equals it"
        return f"expected {expected_(_show(expected))}, you gave {_show(given)}{note}"

    return check


def vector_check(name, expected, n, tail=None):
    """A check of n numbers or expressions against the exact ``expected``, naming the first wrong entry;
    ``tail(given)`` may add a hint about the whole vector."""

    def check(value):
        given = _vector(value, n, _expression, name)
        wrong = [i for i in range(n) if not _same(given[i], expected[i])]
        if not wrong:
            return None
        i = wrong[0]
        return (
            f"entry {i + 1} should be {expected_(_show(expected[i]))}, you gave {_show(given[i])} "
            f"({len(wrong)} of {n} entries wrong)" + (tail(given) if tail is not None else "")
        )

    return check


def multiset_check(expected, rule: str):
    """A check of a list of expressions, in any order and with repeats, against ``expected``."""

    def check(value):
        if not isinstance(value, list):
            raise _Wrong('give a list of expressions such as ["2*sqrt(3)", "sqrt(6)"]')
        if len(value) != len(expected):
            return f"there are {len(expected)} of them, repeats included; you gave {len(value)}"
        missing, _ = unmatched([_expression(v) for v in value], expected)
        if not missing:
            return None
        return f"{_show(missing[0])} is not one of them; they are {expected_(', '.join(_show(e) for e in expected))} ({rule})"

    return check


def check_sphere(problem, answer):
    import sympy as sp

    v = problem.exact()
    n = problem.n
    r = v["norm_Px"]

    def off_sphere(given) -> str:
        norm = sp.sqrt(sum(g**2 for g in given))
        return "" if _same(norm, sp.sqrt(n)) else f"; your vector has norm {_show(norm)}, not sqrt({n})"

    def vector(name, expected):
        return vector_check(name, expected, n, off_sphere if name == "g" else None)

    return [
        _part(problem, "Px", answer, vector("Px", v["Px"])),
        _part(problem, "norm_Px", answer, _expr_check(r, [(r**2, "that is the squared norm; take its square root")])),
        _part(problem, "g", answer, vector("g", v["g"])),
        _part(
            problem,
            "norm_g_eps",
            answer,
            _expr_check(
                v["norm_g_eps"],
                [
                    (
                        sp.sqrt(n),
                        "that is the radius for eps = 0; with eps > 0 the point lies strictly "
                        "inside, at sqrt(n) r / sqrt(r^2 + n eps)",
                    )
                ],
            ),
        ),
    ]


def check_ellipsoid(problem, answer):
    n = problem.n
    gain = problem.gain

    def center(value):
        given = _vector(value, n, _rational, "center")
        if given == [Fraction(b) for b in problem.bias]:
            return None
        return f"the centre is {expected_(f'the bias b = {_vec_text(problem.bias)}')} (g(Px) is centred at 0); you gave {_vec_text(given)}"

    def normal(value):
        given = _vector(value, n, _expression, "normal")
        if _is_zero(given):
            return "the zero vector is not a normal; give a non-zero vector"
        i = _mismatch(given, gain)  # parallel to 1/a iff every g_i a_i agrees (any non-zero multiple)
        if i is None:
            return None
        return (
            f"{_vec_text(given)} is not normal to the hyperplane sum_i (z_i - b_i)/a_i = 0: the normal is "
            f"parallel to {expected_(f'1/a = {_vec_text([Fraction(1, a) for a in gain])}')}, but your entries 1 and {i + 1} "
            f"times the gains give {_show(given[0] * gain[0])} and {_show(given[i] * gain[i])}, not equal"
        )

    def semi_axes(value):
        expected = problem.semi_axes()
        if not isinstance(value, list):
            raise _Wrong('semi_axes must be a list of expressions such as ["2*sqrt(3)", "sqrt(6)"]')
        if len(value) != len(expected):
            return (
                f"the image is an ellipsoid of dimension {n - 1} with {len(expected)} semi-axes; you gave {len(value)}"
            )
        missing, remaining = unmatched([_expression(v) for v in value], expected)
        if not missing:
            return None
        g = missing[0]
        hint = ""
        for e in remaining:
            if _same(g**2, e**2 / n):
                hint = f"; {_show(g)} is sqrt(lambda): the semi-axis is sqrt(n * lambda) with n = {n}"
            elif _same(g, e**2):
                hint = f"; {_show(g)} is n * lambda: take its square root"
        return (
            f"{_show(g)} is not a semi-axis; the semi-axes are "
            f"{expected_(', '.join(_show(e) for e in expected))} (sqrt(n * lambda) for the non-zero eigenvalues "
            f"lambda of diag(a) P diag(a)){hint}"
        )

    return [
        _part(problem, "center", answer, center),
        _part(problem, "normal", answer, normal),
        _part(problem, "semi_axes", answer, semi_axes),
    ]
