"""What the fuzzing harness shares: hostile JSON values, mutations of a JSON document, a
watchdog against runs without end, and the assertion every command answer must pass."""

from __future__ import annotations

import contextlib
import json
import signal
import tempfile
from pathlib import Path

from conftest import _run as run_cli  # the command line in-process: status, stdout, stderr
from hypothesis import settings
from hypothesis import strategies as st

__all__ = [
    "EXAMPLES",
    "SECONDS",
    "fuzz_settings",
    "hostile_values",
    "mutated_json",
    "watchdog",
    "assert_clean_answer",
    "run_cli",
    "scratch",
    "numbers",
    "mutated_numbers",
]

#: examples per strategy: 200 in the suite, the profile's count under --hypothesis-profile=deep
EXAMPLES = max(200, settings.default.max_examples)
#: one example may run this long before the watchdog calls it a hang (never reached when limits hold)
SECONDS = 60


def fuzz_settings(examples: int = EXAMPLES):
    return settings(
        max_examples=examples,
        deadline=None,
        database=None,
        print_blob=True,
        suppress_health_check=list(settings.default.suppress_health_check),
    )


_EDGE_TEXTS = [
    "1E400",
    "-1e-400",
    "1e999999999",
    "1e1_000_000_000",
    "NaN",
    "nan",
    "inf",
    "-Infinity",
    "0/0",
    "1/0",
    "1/-2",
    "-0",
    "+3",
    " 1/2 ",
    "\t7\n",
    "\u0661\u0662/\u0663",
    "\u00b2",
    "\uff11/\uff12",
    "1_000",
    "0x10",
    "",
    " ",
    "/",
    "1//2",
    "--1",
    "3.",
    ".5",
    "1.5e-5",
    "4.9e-324",
    "1.7976931348623157e308",
    "1e309",
    "2**99999999",
    "9^9^9^9",
    "sqrt(" * 50,
    "1/(sqrt(2)-sqrt(2))",
    "\ufeff1",
    "\u00a0",
    "selectable",
    "tie-only",
    "layernorm",
    "free",
    "ball",
    "undecided",
]


def _nested(depth: int):
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


def hostile_values():
    """JSON values of every type, sizes and signs at the edges (rationals, digit runs, nesting)."""
    digits = st.builds(
        lambda n, c, sign: sign + c * n,
        st.integers(1, 25_000),
        st.sampled_from("0123456789"),
        st.sampled_from(["", "-"]),
    )
    rationals = st.builds(
        lambda s, p, q: f"{s}{p}/{q}", st.sampled_from(["", "-", "+"]), st.integers(0, 10**80), st.integers(-5, 10**80)
    )
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.integers(-(10**4000), 10**4000),
        st.floats(),
        st.text(max_size=12),
        st.sampled_from(_EDGE_TEXTS),
        digits,
        rationals,
    )
    return st.one_of(
        scalars,
        st.lists(scalars, max_size=6),
        st.dictionaries(st.text(max_size=6), scalars, max_size=3),
        st.integers(1, 300).map(_nested),
    )


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, prefix + (index,))


def _apply(doc, path, op, value):
    if not path:
        return value if op == "replace" else doc
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if op == "replace":
        parent[last] = value
    elif op == "delete":
        del parent[last]
    elif op == "duplicate" and isinstance(parent, list):
        parent.insert(last, json.loads(json.dumps(parent[last])))
    elif op == "extra" and isinstance(parent, dict):
        parent[f"extra_{len(parent)}"] = value
    return doc


@st.composite
def mutated_json(draw, document):
    """``document`` (JSON-ready) with 1 to 3 fields replaced, deleted, duplicated or added, then
    written as text, possibly cut, with a byte-order mark, or with a number token rewritten."""
    doc = json.loads(json.dumps(document))
    for _ in range(draw(st.integers(1, 3))):
        paths = list(_paths(doc))[1:] or [()]  # the root is replaced by a "cut" below
        path = draw(st.sampled_from(paths))
        op = draw(st.sampled_from(["replace", "replace", "replace", "delete", "duplicate", "extra"]))
        doc = _apply(doc, path, op, draw(hostile_values()))
    text = json.dumps(doc)
    edit = draw(st.sampled_from(["none", "none", "none", "cut", "bom", "literal", "spaces"]))
    if edit == "cut":
        text = text[: draw(st.integers(0, max(len(text) - 1, 0)))]
    elif edit == "bom":
        text = "\ufeff" + text
    elif edit == "literal":
        literal = draw(
            st.sampled_from(
                ["1E400", "-1e-400", "NaN", "Infinity", "1e309", "-0", "7" * 5000, "0.1e-99999", "[" * 2000]
            )
        )
        at = [i for i, c in enumerate(text) if c in "0123456789"]
        if at:
            i = draw(st.sampled_from(at))
            text = text[:i] + literal + text[i + 1 :]
    elif edit == "spaces":
        text = text.replace(",", draw(st.sampled_from([",\n", " ,\t", ",\u3000"])))
    return text


@contextlib.contextmanager
def scratch():
    """A fresh folder for one example (pytest's tmp_path is shared by all examples of a test)."""
    with tempfile.TemporaryDirectory(prefix="lnproofs-fuzz-") as folder:
        yield Path(folder)


def numbers():
    """Numbers as a certificate writes them, at the edges: floats, integers and "p/q" strings of
    extreme size and sign, decimal strings with exponents, unicode digits and whitespace."""
    big = st.integers(-(10**400), 10**400)
    return st.one_of(
        st.floats(allow_nan=False, allow_infinity=False),
        st.integers(-(2**60), 2**60),
        big,
        st.builds(lambda p, q: f"{p}/{q}", big, st.integers(1, 10**400)),
        st.builds(lambda p, q: f"{p}/{q}", st.integers(-10, 10), st.integers(-3, 3)),
        st.builds(lambda m, e: f"{m}e{e}", st.integers(-99, 99), st.integers(-20_000, 20_000)),
        st.builds(lambda n: "1" + "0" * n, st.integers(0, 19_999)),
        st.sampled_from(["\u0661\u0662/\u0663", " 3/4 ", "\t-1\n", "0/1", "-0", "+7", "1_0/3", "0.5", ".5e1"]),
    )


@st.composite
def mutated_numbers(draw, document, keys=("witness", "weights", "indices", "index", "margin", "radius")):
    """``document`` with 1 to 4 numbers under the fields ``keys`` replaced by :func:`numbers`
    (valid types, so that the arithmetic behind them runs)."""
    doc = json.loads(json.dumps(document))
    spots = [p for p in _paths(doc) if any(k in p for k in keys) and not isinstance(_get(doc, p), (dict, list))]
    for path in draw(st.lists(st.sampled_from(spots), min_size=1, max_size=4)) if spots else []:
        doc = _apply(doc, path, "replace", draw(numbers()))
    return json.dumps(doc)


def _get(doc, path):
    for step in path:
        doc = doc[step]
    return doc


class Hang(Exception):
    pass


@contextlib.contextmanager
def watchdog(seconds: int = SECONDS):
    """Raise :class:`Hang` in this thread when the block runs longer than ``seconds``."""

    def ring(signum, frame):
        raise Hang(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def assert_clean_answer(result, allowed=(0, 1, 2)):
    """Exit 0, 1 or 2, never 3 (an internal error); bad input is one line and no traceback."""
    assert result.status in allowed, (result.status, result.err[-2000:], result.out[-500:])
    assert "Traceback" not in result.err and "internal error" not in result.err, result.err[-2000:]
    if result.status == 2:
        lines = [line for line in result.err.splitlines() if line.strip() and not line.startswith("usage:")]
        assert len(lines) == 1, result.err[-2000:]
        assert len(lines[0]) <= 1200, lines[0][:300]
