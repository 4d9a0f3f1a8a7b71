"""The attention exercises: which keys can win, uniform attention, and the demo's threshold.

Each kind draws its own instances (``draw``), states what they must satisfy (``claims``, decided
exactly, independently of the certifier that solves them) and solves itself exactly (``solve``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations
from typing import ClassVar

from ..certificates.writers import format_fraction
from ..kernel import InputError, parse_fraction, require
from .problem_base import MAX_KEYS, Claim, ProblemKind, fr_text, rank, read_ints
from .solution import Solution

__all__ = ["SelectabilityProblem", "UniformProblem", "ThresholdProblem", "plane_statuses"]


def _cross(o, a, b):
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def _on_segment(p, a, b) -> bool:
    return (
        _cross(a, b, p) == 0
        and min(a[0], b[0]) <= p[0] <= max(a[0], b[0])
        and min(a[1], b[1]) <= p[1] <= max(a[1], b[1])
    )


def _in_triangle(p, a, b, c) -> bool:
    signs = [_cross(a, b, p), _cross(b, c, p), _cross(c, a, p)]
    return all(s >= 0 for s in signs) or all(s <= 0 for s in signs)


def plane_statuses(points) -> list[str]:
    """The status of each of distinct points of the plane, decided exactly from first principles: a point
    in no closed triangle or segment of the others is a vertex (selectable); a point on a segment of two
    others with every point on one side of their line is on the boundary (tie-only); else unselectable."""
    out = []
    for i, p in enumerate(points):
        others = [q for j, q in enumerate(points) if j != i]
        inside = any(_on_segment(p, a, b) for a, b in combinations(others, 2)) or any(
            _in_triangle(p, a, b, c) for a, b, c in combinations(others, 3) if _cross(a, b, c) != 0
        )
        if not inside:
            out.append("selectable")
            continue
        edge = any(
            _on_segment(p, a, b)
            and (all(_cross(a, b, q) >= 0 for q in others) or all(_cross(a, b, q) <= 0 for q in others))
            for a, b in combinations(others, 2)
        )
        out.append("tie-only" if edge else "unselectable")
    return out


# --------------------------------------------------------------------------- selectability
@dataclass(frozen=True)
class SelectabilityProblem(ProblemKind):
    """Decide for each of a few lattice keys whether some query makes it win, with a certificate."""

    keys: tuple[tuple[int, ...], ...]
    topic: ClassVar[str] = "selectability"
    fields: ClassVar[tuple[str, ...]] = ("keys",)

    def to_json(self) -> dict:
        return {"id": self.id, "topic": self.topic, "keys": [list(k) for k in self.keys]}

    def points(self) -> int:
        return len(self.keys)  # one per key

    @classmethod
    def from_json(cls, data: dict) -> SelectabilityProblem:
        rows = data.get("keys")
        require(
            isinstance(rows, list) and 2 <= len(rows) <= MAX_KEYS,
            InputError,
            f"selectability problem 'keys' must be a list of 2 to {MAX_KEYS} integer vectors",
        )
        keys = tuple(read_ints(r, "selectability problem key") for r in rows)
        require(len({len(k) for k in keys}) == 1, InputError, "selectability problem: keys must share one length")
        return cls(keys=keys)

    @classmethod
    def draw(cls, rng: random.Random) -> SelectabilityProblem:
        """6 to 9 lattice keys with every status present (drawn again until they are)."""
        count = rng.randint(6, 9)
        size = 2 if count <= 7 else 3
        lattice = [(x, y) for x in range(-size, size + 1) for y in range(-size, size + 1)]
        while True:
            points = rng.sample(lattice, count)
            if len(set(plane_statuses(points))) == 3:
                return cls(keys=tuple(points))

    def claims(self) -> tuple[Claim, ...]:
        keys = self.keys
        statuses = plane_statuses(keys)
        return (
            Claim("6 to 9 distinct keys in the plane", 6 <= len(keys) <= 9 and len(set(keys)) == len(keys)),
            Claim("the keys are not all on one line", rank([[a - keys[0][0], b - keys[0][1]] for a, b in keys]) == 2),
            Claim("every status occurs: selectable, tie-only and unselectable", len(set(statuses)) == 3),
        )

    def certificate(self) -> dict:
        """The library's exactly checked selectability certificate for these keys (JSON form)."""
        from .library import certify_keys

        return certify_keys([list(k) for k in self.keys])

    def solve(self) -> Solution:
        from .library import nice_combination, nice_witness

        cert = self.certificate()
        answers, statuses, work = {}, {}, []
        for result in cert["results"]:
            number = int(result["index"]) + 1
            status = result["status"]
            statuses[str(number)] = status
            entry = {"status": status}
            if status == "selectable":
                q = nice_witness(self.keys, number - 1, result.get("witness"))
                entry["query"] = fr_text(q)
                work.append(
                    f"Key {number} is selectable: $q = ({', '.join(fr_text(q))})$ scores it strictly above "
                    "every other key."
                )
            elif status in ("tie-only", "unselectable"):
                comb = result.get("combination") or {}
                weights = [parse_fraction(str(w)) for w in comb.get("weights", [])]
                indices, weights = nice_combination(self.keys, number - 1, comb.get("indices", []), weights)
                pairs = sorted(zip((int(i) + 1 for i in indices), (format_fraction(w) for w in weights)))
                idx, weights = [k for k, _ in pairs], [w for _, w in pairs]
                entry["combination"] = {"keys": idx, "weights": weights}
                terms = " + ".join(f"{w}\\,k_{{{i}}}" for i, w in zip(idx, weights))
                work.append(f"Key {number} is {status}: $k_{{{number}}} = {terms}$.")
                if status == "tie-only" and result.get("witness") is not None:
                    q = nice_witness(self.keys, number - 1, result.get("witness"), tie=True)
                    entry["query"] = fr_text(q)
            else:
                work.append(f"Key {number}: undecided ({result.get('reason')}).")
            answers[str(number)] = entry
        theorems = ("attention.selectable_iff_not_in_hull",)
        return Solution(self.id, {"keys": answers}, theorems, tuple(work), certificate=cert, statuses=statuses)


# --------------------------------------------------------------------------- uniform
def _small_centred(rng: random.Random, n: int) -> tuple[int, ...]:
    """A small integer vector with entries summing to 0 and squared norm below n."""
    while True:
        y = [0] * n
        i, j = rng.sample(range(n), 2)
        y[i], y[j] = 1, -1
        if n >= 5 and rng.random() < 0.5:
            k, m = rng.sample([t for t in range(n) if t not in (i, j)], 2)
            y[k], y[m] = 1, -1
        if sum(v * v for v in y) < n:
            return tuple(y)


@dataclass(frozen=True)
class UniformProblem(ProblemKind):
    """Keys produced by one LayerNorm (eps > 0): find a non-zero query that scores every output equally."""

    gain: tuple[int, ...]
    bias: tuple[int, ...]
    keys: tuple[tuple[int, ...], ...]
    topic: ClassVar[str] = "uniform"
    fields: ClassVar[tuple[str, ...]] = ("query",)
    written: ClassVar[tuple[tuple[str, str], ...]] = (
        ("explain", "Explain why your query gives the same score to every output of this LayerNorm."),
    )

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "topic": self.topic,
            "gain": list(self.gain),
            "bias": list(self.bias),
            "keys": [list(k) for k in self.keys],
        }

    @classmethod
    def from_json(cls, data: dict) -> UniformProblem:
        gain = read_ints(data.get("gain"), "uniform problem 'gain'", low=3)
        bias = read_ints(data.get("bias"), "uniform problem 'bias'", low=3)
        rows = data.get("keys")
        require(
            isinstance(rows, list) and 2 <= len(rows) <= MAX_KEYS,
            InputError,
            f"uniform problem 'keys' must be a list of 2 to {MAX_KEYS} integer vectors",
        )
        keys = tuple(read_ints(r, "uniform problem key") for r in rows)
        require(
            all(len(k) == len(gain) for k in keys) and len(bias) == len(gain),
            InputError,
            "uniform problem: gain, bias and every key must have the same length",
        )
        require(all(a != 0 for a in gain), InputError, "uniform problem: every gain must be non-zero")
        for number, key in enumerate(keys, 1):
            offset = sum((Fraction(k - b, a) for k, b, a in zip(key, bias, gain)), Fraction(0))
            require(
                offset == 0,
                InputError,
                f"uniform problem: key {number} is not an output of this LayerNorm "
                f"(sum_i (k_i - b_i)/a_i = {format_fraction(offset)}, not 0)",
            )
        return cls(gain=gain, bias=bias, keys=keys)

    @classmethod
    def draw(cls, rng: random.Random) -> UniformProblem:
        """n keys whose differences span the output hyperplane, so only multiples of 1/a tie them."""
        n = rng.randint(3, 6)
        while True:
            gain = tuple(rng.choice([-3, -2, -1, 1, 2, 3]) for _ in range(n))
            if len(set(gain)) > 1:
                break
        bias = tuple(rng.randint(-2, 2) for _ in range(n))
        while True:
            ys = [_small_centred(rng, n) for _ in range(n)]
            if len(set(ys)) == n and rank([[a - b for a, b in zip(y, ys[0])] for y in ys[1:]]) == n - 1:
                break
        keys = tuple(tuple(a * y + b for a, y, b in zip(gain, row, bias)) for row in ys)
        return cls(gain=gain, bias=bias, keys=keys)

    def _inputs(self) -> list[list[Fraction]]:
        return [[Fraction(k - b, a) for k, b, a in zip(key, self.bias, self.gain)] for key in self.keys]

    def claims(self) -> tuple[Claim, ...]:
        n, ys = len(self.gain), self._inputs()
        return (
            Claim("n is between 3 and 6, every gain non-zero", 3 <= n <= 6 and all(self.gain)),
            Claim("every key is b + diag(a) y with 1.y = 0", all(sum(y) == 0 for y in ys)),
            Claim(
                "every key is an output of the LayerNorm (eps > 0): |y|^2 < n",
                all(sum(v * v for v in y) < n for y in ys),
            ),
            Claim(
                "the key differences span the output hyperplane, so only multiples of 1/a tie the keys",
                rank([[a - b for a, b in zip(y, ys[0])] for y in ys[1:]]) == n - 1,
            ),
        )

    def solve(self) -> Solution:
        from .library import uniform_check, uniform_search

        q = [Fraction(1, a) for a in self.gain]
        score = sum((qi * b for qi, b in zip(q, self.bias)), Fraction(0))
        ok, message = uniform_check(self.keys, q)
        require(ok, InputError, f"uniform problem: the query 1/a fails the exact check ({message})")
        found = uniform_search(self.keys)
        work = (
            "Each output is $z = \\operatorname{diag}(a)y + b$ with $\\mathbf 1^\\top y = 0$, so for $q = 1/a$: "
            "$q^\\top z = \\mathbf 1^\\top y + q^\\top b = q^\\top b$, the same for every output.",
            f"$q = ({', '.join(fr_text(q))})$ gives every key the score $q^\\top b = {format_fraction(score)}$ "
            "(verified exactly by the library's uniform-attention checker).",
            "The key differences span the hyperplane $\\mathbf 1^\\top y = 0$, so a query tying these keys is a "
            "multiple of $1/a$; the library's search over the keys alone returns "
            f"$q = ({', '.join(fr_text(found))})$, such a multiple.",
        )
        return Solution(self.id, {"query": fr_text(q)}, ("ellipsoid.hyperplane", "attention.uniform_query"), work)


# --------------------------------------------------------------------------- threshold
#: where key 2 may sit on the unit circle: rational points, and the angles 30, 45 and 60 degrees
_KEY2 = (
    ("3/5", "4/5"),
    ("4/5", "3/5"),
    ("5/13", "12/13"),
    ("12/13", "5/13"),
    ("8/17", "15/17"),
    ("15/17", "8/17"),
    ("sqrt(2)/2", "sqrt(2)/2"),
    ("sqrt(3)/2", "1/2"),
    ("1/2", "sqrt(3)/2"),
)


def _read_key2(texts):
    from .expressions import Refused, read_expression

    require(
        isinstance(texts, (list, tuple)) and len(texts) == 2, InputError, "threshold problem 'key2' must be 2 numbers"
    )
    try:
        c, s = (read_expression(t) for t in texts)
    except Refused as err:
        raise InputError(f"threshold problem 'key2': {err}") from None
    require(
        (c**2 + s**2 - 1).equals(0) and bool(0 < c < 1) and bool(s > 0),
        InputError,
        "threshold problem 'key2' must be a unit vector (c, s) with 0 < c < 1 and s > 0",
    )
    return c, s


@dataclass(frozen=True)
class ThresholdProblem(ProblemKind):
    """The demo configuration: the magnitude of key 3 at which key 2 stops being selectable."""

    magnitudes: tuple[Fraction, ...]
    key2: tuple[str, str] = ("sqrt(2)/2", "sqrt(2)/2")
    topic: ClassVar[str] = "threshold"
    fields: ClassVar[tuple[str, ...]] = ("threshold", "status_at")
    written: ClassVar[tuple[tuple[str, str], ...]] = (
        ("explain", "Explain why key 2 stops being selectable at that magnitude."),
    )

    def to_json(self) -> dict:
        return {"id": self.id, "topic": self.topic, "key2": list(self.key2), "magnitudes": fr_text(self.magnitudes)}

    @classmethod
    def from_json(cls, data: dict) -> ThresholdProblem:
        values = data.get("magnitudes")
        require(
            isinstance(values, list) and 0 < len(values) <= MAX_KEYS,
            InputError,
            "threshold problem 'magnitudes' must be a short non-empty list",
        )
        mags = tuple(parse_fraction(str(v)) for v in values)
        require(all(m > 0 for m in mags), InputError, "threshold problem: every magnitude must be positive")
        key2 = tuple(data.get("key2", cls.key2))
        _read_key2(key2)
        return cls(magnitudes=mags, key2=key2)

    @classmethod
    def draw(cls, rng: random.Random) -> ThresholdProblem:
        """Key 2 at one of nine places; one magnitude below the threshold, one above, and the threshold
        itself when it is rational (then key 2 can only tie)."""
        key2 = rng.choice(_KEY2)
        t = cls(magnitudes=(Fraction(1),), key2=key2).threshold()
        grid = sorted({Fraction(k, d) for d in (1, 2, 4, 5) for k in range(1, 12 * d)})
        low = rng.choice([m for m in grid if 0.3 * float(t) <= m <= 0.9 * float(t)])
        high = rng.choice([m for m in grid if 1.1 * float(t) <= m <= 2.5 * float(t)])
        mags = [low, high]
        if t.is_Rational and rng.random() < 0.5:
            mags.append(Fraction(int(t.p), int(t.q)))
        rng.shuffle(mags)
        return cls(magnitudes=tuple(mags), key2=key2)

    def threshold(self):
        """Solve for m: key 2 = (c, s) on the segment from key 1 = (1, 0) to m * key 3 = (0, m)."""
        import sympy as sp

        c, s = _read_key2(self.key2)
        m = sp.Symbol("m", positive=True)
        (root,) = sp.solve(sp.Eq(c + s / m, 1), m)  # the line x + y/m = 1 through (1, 0) and (0, m)
        return sp.radsimp(root)

    def status(self, magnitude: Fraction) -> str:
        import sympy as sp

        m = sp.Rational(magnitude.numerator, magnitude.denominator)
        gap = sp.radsimp(m - self.threshold())
        if gap == 0 or gap.equals(0):
            return "tie-only"
        return "selectable" if bool(gap < 0) else "unselectable"

    def claims(self) -> tuple[Claim, ...]:
        import sympy as sp

        c, s = _read_key2(self.key2)
        t = self.threshold()
        side = []  # independently: the side of the line through key 1 and m * key 3 on which key 2 lies
        for mag in self.magnitudes:
            m = sp.Rational(mag.numerator, mag.denominator)
            cross = sp.radsimp(m * (1 - c) - s)  # (k3 - k1) x (k2 - k1)
            side.append("tie-only" if cross.equals(0) else "selectable" if bool(cross < 0) else "unselectable")
        return (
            Claim("key 2 is a unit vector between keys 1 and 3", (c**2 + s**2 - 1).equals(0) and bool(0 < c < 1)),
            Claim("the threshold puts key 2 on the line through keys 1 and 3", (c + s / t - 1).equals(0)),
            Claim("each status agrees with the side of that line", side == [self.status(m) for m in self.magnitudes]),
            Claim("a magnitude on each side of the threshold", {"selectable", "unselectable"} <= set(side)),
        )

    def solve(self) -> Solution:
        import sympy as sp

        t = self.threshold()
        c, s = _read_key2(self.key2)
        status_at = {format_fraction(m): self.status(m) for m in self.magnitudes}
        work = (
            "Keys 1, 3, 4 are $(1,0)$, $(0,m)$, $(-1,0)$ and key 2 is "
            f"$({sp.latex(c)}, {sp.latex(s)})$. Key 2 is selectable exactly while it lies outside the triangle of "
            "the others, i.e. beyond the line $x + y/m = 1$ through keys 1 and 3.",
            f"${sp.latex(c)} + {sp.latex(s)}/m = 1$ gives $m = {sp.latex(t)}$; below it key 2 is selectable, at it "
            "tie-only, above it unselectable.",
            "; ".join(f"$m = {k}$: {v}" for k, v in status_at.items()) + ".",
        )
        answers = {"threshold": sp.sstr(t), "status_at": status_at}
        return Solution(self.id, answers, ("attention.demo_threshold",), work)
