"""Is a student's number equal to the expected one?  Decided exactly, in an order that never
runs an expensive operation on a large input, and within a time budget that really stops.

1. ``a - b`` as SymPy evaluates it: zero, or a non-zero rational, decides at once.
2. Complex balls (python-flint ``acb``, principal branches as in SymPy) at 128 and then 1,024
   bits: a ball of ``a - b`` that excludes zero proves the numbers differ.  The balls contain
   the exact values, so this is a proof, not a tolerance.
3. Otherwise the numbers are probably equal and SymPy must show ``a - b = 0``
   (``simplify``, then ``equals``).  For a small difference (at most :data:`SMALL_TERMS` terms
   multiplied out) that runs here, stopped by a timer (SIGALRM) after :data:`SECONDS_PER_ANSWER`
   seconds; a larger one (or any, outside the main thread) runs in a separate Python process
   that is killed after as long.  Past the budget the answer is "too complex to check"
   (:class:`.expressions.TooComplex`), never a hang.

The difference travels to that process as a JSON tree of rationals, sums, products and powers
(built from SymPy's own tree, never a string to evaluate).
"""

from __future__ import annotations

import json
import subprocess
import sys

from .expressions import TooComplex, term_bound

__all__ = ["same", "SMALL_TERMS", "SECONDS_PER_ANSWER", "main"]

#: a difference of at most this many terms (multiplied out) is compared in this process
SMALL_TERMS = 64
#: wall-clock seconds one comparison may take in its own process
SECONDS_PER_ANSWER = 5.0


def _ball(expr, bits: int):
    """A complex ball containing ``expr``, or None when a node is not one we evaluate."""
    import sympy as sp
    from flint import acb, ctx, fmpq

    def walk(node):
        if node.is_Rational:
            return acb(fmpq(int(node.p), int(node.q)))
        if node is sp.I:
            return acb(0, 1)
        if node.is_Add:
            total = acb(0)
            for a in node.args:
                total += walk(a)
            return total
        if node.is_Mul:
            total = acb(1)
            for a in node.args:
                total *= walk(a)
            return total
        if node.is_Pow and node.args[1].is_Rational:
            base, exponent = walk(node.args[0]), node.args[1]
            if exponent.q == 1:
                return base ** int(exponent.p)
            return base ** acb(fmpq(int(exponent.p), int(exponent.q)))
        raise LookupError

    with ctx.workprec(bits):
        try:
            return walk(expr)
        except (LookupError, ZeroDivisionError, ValueError):
            return None


def _differ(difference) -> bool:
    """True when complex balls prove ``difference`` non-zero."""
    for bits in (128, 1024):
        ball = _ball(difference, bits)
        if ball is None:
            return False
        if not ball.real.contains(0) or not ball.imag.contains(0):
            return True
    return False


def _is_zero(difference) -> bool:
    import sympy as sp

    return sp.simplify(difference) == 0 or bool(difference.equals(0))


def _tree(expr):
    if expr.is_Rational:
        return ["q", str(expr.p), str(expr.q)]
    if expr.is_Add or expr.is_Mul:
        return ["+" if expr.is_Add else "*", *[_tree(a) for a in expr.args]]
    if expr.is_Pow:
        return ["^", _tree(expr.args[0]), _tree(expr.args[1])]
    import sympy as sp

    if expr is sp.I:
        return ["i"]
    raise TooComplex(f"it holds {type(expr).__name__}, which the separate check does not read")


def _untree(data):
    import sympy as sp

    kind = data[0]
    if kind == "q":
        return sp.Rational(int(data[1]), int(data[2]))
    if kind == "i":
        return sp.I
    if kind == "+":
        return sp.Add(*[_untree(a) for a in data[1:]])
    if kind == "*":
        return sp.Mul(*[_untree(a) for a in data[1:]])
    if kind == "^":
        return sp.Pow(_untree(data[1]), _untree(data[2]))
    raise ValueError(f"unknown node {kind!r}")


def main() -> None:
    """The separate process: read a JSON tree on stdin, print whether it is zero."""
    difference = _untree(json.loads(sys.stdin.read()))
    print(json.dumps(_is_zero(difference)))


def _zero_elsewhere(difference, seconds: float) -> bool:
    payload = json.dumps(_tree(difference))
    code = "from lnproofs.homework.compare import main; main()"
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], input=payload, capture_output=True, text=True, timeout=seconds
        )
    except subprocess.TimeoutExpired:
        raise TooComplex(f"showing that it equals the expected value took more than {seconds:g} s") from None
    if done.returncode != 0 or done.stdout.strip() not in ("true", "false"):
        raise TooComplex("the separate check of its value failed")
    return done.stdout.strip() == "true"


def same(a, b, seconds: float = SECONDS_PER_ANSWER) -> bool:
    """Whether the SymPy numbers ``a`` and ``b`` are equal (the order of checks is in the module docstring)."""
    difference = a - b
    if difference == 0:
        return True
    if difference.is_Rational:
        return False
    if _differ(difference):
        return False
    if term_bound(difference) <= SMALL_TERMS:
        return _zero_here(difference, seconds)
    return _zero_elsewhere(difference, seconds)


class _Stopped(Exception):
    """Raised by the timer inside a comparison that ran past its budget."""


def _zero_here(difference, seconds: float) -> bool:
    """:func:`_is_zero` in this process, stopped by a timer after ``seconds`` (in the main thread,
    where signals arrive; elsewhere the separate process is used)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        return _zero_elsewhere(difference, seconds)

    def stop(_signum, _frame):
        raise _Stopped

    previous = signal.signal(signal.SIGALRM, stop)
    try:
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            return _is_zero(difference)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _Stopped:
        raise TooComplex(f"showing that it equals the expected value took more than {seconds:g} s") from None
    finally:
        signal.signal(signal.SIGALRM, previous)
