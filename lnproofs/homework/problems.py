"""The homework problem kinds: frozen dataclasses holding small exact data.

Every problem knows its topic, its answer fields, how to travel as JSON
(``to_json``/``from_json``) and how to solve itself exactly (``solve``).  Rationals
are :class:`fractions.Fraction`; irrational answers (square roots) are SymPy
expressions written as text such as ``"2*sqrt(3)"``.  Keys in the selectability and
threshold problems are numbered from 1, as a student reads them on the handout.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

from ..certificates.writers import format_fraction
from ..kernel.errors import InputError, require
from ..kernel.exact import parse_fraction
from .solution import Solution
from .vocabulary import VocabProblem

__all__ = [
    "TOPICS",
    "STATUSES",
    "Solution",
    "ProjectionProblem",
    "SphereProblem",
    "EllipsoidProblem",
    "SelectabilityProblem",
    "UniformProblem",
    "ThresholdProblem",
    "VocabProblem",
    "PROBLEM_CLASSES",
    "problem_from_json",
]

#: the topics, in the order they appear on a problem set
TOPICS = ("projection", "sphere", "ellipsoid", "selectability", "uniform", "threshold", "vocab")
#: the statuses a student may claim for a key
STATUSES = ("selectable", "tie-only", "unselectable")


def _fr_text(values) -> list[str]:
    return [format_fraction(Fraction(v)) for v in values]


def _matrix_text(rows) -> list[list[str]]:
    return [_fr_text(row) for row in rows]


#: problems are meant to be worked by hand: widths, key counts and entries stay small
_MAX_WIDTH, _MAX_KEYS, _MAX_ENTRY = 8, 30, 10**6


def _ints(values, what: str) -> tuple[int, ...]:
    require(
        isinstance(values, (list, tuple)) and 0 < len(values) <= _MAX_WIDTH,
        InputError,
        f"{what} must be a list of 1 to {_MAX_WIDTH} integers, not {values!r}",
    )
    out = []
    for v in values:
        require(
            isinstance(v, int) and not isinstance(v, bool) and abs(v) <= _MAX_ENTRY,
            InputError,
            f"{what} must hold integers of size at most {_MAX_ENTRY}; {v!r} is not one",
        )
        out.append(int(v))
    return tuple(out)


class _Problem:
    topic: ClassVar[str]
    fields: ClassVar[tuple[str, ...]]

    @property
    def id(self) -> str:
        return self.topic

    def _repr_markdown_(self) -> str:
        from .sheet import problem_markdown

        return problem_markdown(self, number=None)

    def _repr_latex_(self) -> str:
        from .sheet import problem_latex_display

        return problem_latex_display(self)


# --------------------------------------------------------------------------- projection
@dataclass(frozen=True)
class ProjectionProblem(_Problem):
    """Write down P = I - J/n, show P^2 = P entry by entry, and compute P x."""

    n: int
    x: tuple[int, ...]
    topic: ClassVar[str] = "projection"
    fields: ClassVar[tuple[str, ...]] = ("P", "P_squared", "Px")

    def to_json(self) -> dict:
        return {"id": self.id, "topic": self.topic, "n": self.n, "x": list(self.x)}

    @classmethod
    def from_json(cls, data: dict) -> ProjectionProblem:
        x = _ints(data.get("x"), "projection problem 'x'")
        require(len(x) >= 2, InputError, "projection problem 'x' needs at least 2 entries")
        return cls(n=len(x), x=x)

    def projection(self) -> tuple[tuple[Fraction, ...], ...]:
        n = self.n
        return tuple(tuple(Fraction(int(i == j)) - Fraction(1, n) for j in range(n)) for i in range(n))

    def solve_px(self) -> list[Fraction]:
        """P x = x - mean(x) 1, exactly."""
        mean = Fraction(sum(self.x), self.n)
        return [v - mean for v in self.x]

    def solve(self) -> Solution:
        P = self.projection()
        n = self.n
        P2 = tuple(tuple(sum((P[i][k] * P[k][j] for k in range(n)), Fraction(0)) for j in range(n)) for i in range(n))
        Px = tuple(sum((P[i][k] * self.x[k] for k in range(n)), Fraction(0)) for i in range(n))
        mean = Fraction(sum(self.x), n)
        diag, off = format_fraction(P[0][0]), format_fraction(P[0][1])
        work = (
            f"$P = I - \\tfrac{{1}}{{{n}}}J$ has diagonal entries ${diag}$ and off-diagonal entries ${off}$.",
            f"$(P^2)_{{ii}} = ({diag})^2 + {n - 1}\\cdot({off})^2 = {format_fraction(P2[0][0])}$ and "
            f"$(P^2)_{{ij}} = 2\\cdot({diag})({off}) + {n - 2}\\cdot({off})^2 = {format_fraction(P2[0][1])}$ for $i \\ne j$, so $P^2 = P$.",
            f"$\\operatorname{{mean}}(x) = {format_fraction(mean)}$, so $Px = x - ({format_fraction(mean)})\\,\\mathbf{{1}} = "
            f"({', '.join(_fr_text(Px))})$.",
        )
        answers = {"P": _matrix_text(P), "P_squared": _matrix_text(P2), "Px": _fr_text(Px)}
        return Solution(
            self.id,
            answers,
            ("projection.mean_subtraction", "projection.idempotent", f"projection.idempotent@{n}"),
            work,
        )


# --------------------------------------------------------------------------- sphere
@dataclass(frozen=True)
class SphereProblem(_Problem):
    """Follow one input through the projection and the radial scaling (eps = 0 and eps > 0)."""

    x: tuple[int, ...]
    eps: Fraction
    topic: ClassVar[str] = "sphere"
    fields: ClassVar[tuple[str, ...]] = ("Px", "norm_Px", "g", "norm_g_eps")

    @property
    def n(self) -> int:
        return len(self.x)

    def to_json(self) -> dict:
        return {"id": self.id, "topic": self.topic, "x": list(self.x), "eps": format_fraction(self.eps)}

    @classmethod
    def from_json(cls, data: dict) -> SphereProblem:
        x = _ints(data.get("x"), "sphere problem 'x'")
        require(len(set(x)) > 1, InputError, "sphere problem 'x' must not be constant (Px would be 0)")
        eps = parse_fraction(str(data.get("eps")))
        require(eps > 0, InputError, f"sphere problem 'eps' must be positive, not {data.get('eps')!r}")
        return cls(x=x, eps=eps)

    def exact(self) -> dict:
        """SymPy values: Px, ||Px||, g(Px) for eps = 0, and ||g(Px)|| for the given eps (torch convention)."""
        import sympy as sp

        n = self.n
        mean = sp.Rational(sum(self.x), n)
        Px = [sp.Integer(v) - mean for v in self.x]
        r = sp.sqrt(sum(v * v for v in Px))
        g = [sp.radsimp(sp.sqrt(n) * v / r) for v in Px]
        eps = sp.Rational(self.eps.numerator, self.eps.denominator)
        norm_eps = sp.radsimp(sp.sqrt(n) * r / sp.sqrt(r**2 + n * eps))
        return {"Px": Px, "norm_Px": r, "g": g, "norm_g_eps": norm_eps}

    def solve(self) -> Solution:
        import sympy as sp

        v = self.exact()
        n = self.n
        work = (
            f"$Px = x - \\operatorname{{mean}}(x)\\mathbf 1 = ({', '.join(str(e) for e in v['Px'])})$ and "
            f"$\\|Px\\| = {sp.latex(v['norm_Px'])}$.",
            f"With $\\varepsilon = 0$: $g(Px) = \\sqrt{{{n}}}\\,Px/\\|Px\\| = ({', '.join(sp.latex(e) for e in v['g'])})$, "
            f"of norm $\\sqrt{{{n}}}$ and with entries summing to $0$.",
            f"With $\\varepsilon = {format_fraction(self.eps)}$ (torch convention): $\\|g(Px)\\| = "
            f"\\sqrt{{n}}\\,r/\\sqrt{{r^2 + n\\varepsilon}} = {sp.latex(v['norm_g_eps'])} < \\sqrt{{{n}}}$.",
        )
        answers = {
            "Px": [str(e) for e in v["Px"]],
            "norm_Px": sp.sstr(v["norm_Px"]),
            "g": [sp.sstr(e) for e in v["g"]],
            "norm_g_eps": sp.sstr(v["norm_g_eps"]),
        }
        return Solution(self.id, answers, ("sphere.radius", "sphere.interior_torch"), work)


# --------------------------------------------------------------------------- ellipsoid
@dataclass(frozen=True)
class EllipsoidProblem(_Problem):
    """Centre, hyperplane normal and semi-axes of the image of a LayerNorm (eps = 0)."""

    gain: tuple[int, ...]
    bias: tuple[int, ...]
    topic: ClassVar[str] = "ellipsoid"
    fields: ClassVar[tuple[str, ...]] = ("center", "normal", "semi_axes")

    @property
    def n(self) -> int:
        return len(self.gain)

    def to_json(self) -> dict:
        return {"id": self.id, "topic": self.topic, "gain": list(self.gain), "bias": list(self.bias)}

    @classmethod
    def from_json(cls, data: dict) -> EllipsoidProblem:
        gain = _ints(data.get("gain"), "ellipsoid problem 'gain'")
        bias = _ints(data.get("bias"), "ellipsoid problem 'bias'")
        require(len(gain) == len(bias), InputError, "ellipsoid problem: 'gain' and 'bias' must have the same length")
        require(all(a != 0 for a in gain), InputError, "ellipsoid problem: every gain must be non-zero")
        return cls(gain=gain, bias=bias)

    def semi_axes(self) -> list:
        """Exact semi-axes sqrt(n * lambda) for the non-zero eigenvalues of diag(a) P diag(a), descending."""
        import sympy as sp

        n = self.n
        A = sp.diag(*[sp.Integer(a) for a in self.gain])
        P = sp.eye(n) - sp.ones(n, n) / n
        M = A * P * A
        axes = []
        for lam, mult in M.eigenvals().items():
            lam = sp.nsimplify(lam)
            if lam != 0:
                axes.extend([sp.sqrt(n * lam)] * mult)
        return sorted(axes, key=lambda e: float(e), reverse=True)

    def solve(self) -> Solution:
        import sympy as sp

        n = self.n
        axes = self.semi_axes()
        normal = [Fraction(1, a) for a in self.gain]
        a2 = ", ".join(str(a * a) for a in self.gain)
        work = (
            f"The centre is the bias $b = ({', '.join(str(b) for b in self.bias)})$; every output satisfies "
            f"$\\sum_i (z_i - b_i)/a_i = 0$, so a normal is $1/a = ({', '.join(_fr_text(normal))})$.",
            f"$\\operatorname{{diag}}(a)P\\operatorname{{diag}}(a) = \\operatorname{{diag}}({a2}) - aa^\\top/{n}$; its non-zero "
            "eigenvalues $\\lambda$ (roots of the secular equation $1 - \\tfrac1n\\sum_i a_i^2/(a_i^2-\\lambda) = 0$, "
            "interlacing the sorted $a_i^2$) give the semi-axes $\\sqrt{n\\lambda}$: "
            + ", ".join(f"${sp.latex(e)}$" for e in axes)
            + ".",
        )
        answers = {
            "center": [str(b) for b in self.bias],
            "normal": _fr_text(normal),
            "semi_axes": [sp.sstr(e) for e in axes],
        }
        return Solution(
            self.id, answers, ("ellipsoid.hyperplane", "ellipsoid.principal_axes", "ellipsoid.secular_equation"), work
        )


# --------------------------------------------------------------------------- selectability
@dataclass(frozen=True)
class SelectabilityProblem(_Problem):
    """Decide for each of a few lattice keys whether some query makes it win, with a certificate."""

    keys: tuple[tuple[int, ...], ...]
    topic: ClassVar[str] = "selectability"
    fields: ClassVar[tuple[str, ...]] = ("keys",)

    def to_json(self) -> dict:
        return {"id": self.id, "topic": self.topic, "keys": [list(k) for k in self.keys]}

    @classmethod
    def from_json(cls, data: dict) -> SelectabilityProblem:
        rows = data.get("keys")
        require(
            isinstance(rows, list) and 2 <= len(rows) <= _MAX_KEYS,
            InputError,
            f"selectability problem 'keys' must be a list of 2 to {_MAX_KEYS} integer vectors",
        )
        keys = tuple(_ints(r, "selectability problem key") for r in rows)
        require(len({len(k) for k in keys}) == 1, InputError, "selectability problem: keys must share one length")
        return cls(keys=keys)

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
                entry["query"] = _fr_text(q)
                work.append(
                    f"Key {number} is selectable: $q = ({', '.join(_fr_text(q))})$ scores it strictly above every other key."
                )
            elif status in ("tie-only", "unselectable"):
                comb = result.get("combination") or {}
                indices, weights = nice_combination(
                    self.keys,
                    number - 1,
                    comb.get("indices", []),
                    [parse_fraction(str(w)) for w in comb.get("weights", [])],
                )
                pairs = sorted(zip((int(i) + 1 for i in indices), (format_fraction(w) for w in weights)))
                idx, weights = [k for k, _ in pairs], [w for _, w in pairs]
                entry["combination"] = {"keys": idx, "weights": weights}
                terms = " + ".join(f"{w}\\,k_{{{i}}}" for i, w in zip(idx, weights))
                work.append(f"Key {number} is {status}: $k_{{{number}}} = {terms}$.")
                if status == "tie-only" and result.get("witness") is not None:
                    q = nice_witness(self.keys, number - 1, result.get("witness"), tie=True)
                    entry["query"] = _fr_text(q)
            else:
                work.append(f"Key {number}: undecided ({result.get('reason')}).")
            answers[str(number)] = entry
        return Solution(
            self.id,
            {"keys": answers},
            ("attention.selectable_iff_not_in_hull",),
            tuple(work),
            certificate=cert,
            statuses=statuses,
        )


# --------------------------------------------------------------------------- uniform
@dataclass(frozen=True)
class UniformProblem(_Problem):
    """Keys produced by one LayerNorm: find a non-zero query that scores them all equally."""

    gain: tuple[int, ...]
    bias: tuple[int, ...]
    keys: tuple[tuple[int, ...], ...]
    topic: ClassVar[str] = "uniform"
    fields: ClassVar[tuple[str, ...]] = ("query",)

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
        gain = _ints(data.get("gain"), "uniform problem 'gain'")
        bias = _ints(data.get("bias"), "uniform problem 'bias'")
        rows = data.get("keys")
        require(
            isinstance(rows, list) and 2 <= len(rows) <= _MAX_KEYS,
            InputError,
            f"uniform problem 'keys' must be a list of 2 to {_MAX_KEYS} integer vectors",
        )
        keys = tuple(_ints(r, "uniform problem key") for r in rows)
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

    def solve(self) -> Solution:
        from .library import uniform_check, uniform_search

        q = [Fraction(1, a) for a in self.gain]
        score = sum((qi * b for qi, b in zip(q, self.bias)), Fraction(0))
        ok, message = uniform_check(self.keys, q)
        require(ok, InputError, f"uniform problem: the query 1/a fails the exact check ({message})")
        found = uniform_search(self.keys)
        work = (
            "Each key is $k = \\operatorname{diag}(a)y + b$ with $\\mathbf 1^\\top y = 0$, so for $q = 1/a$: "
            "$q^\\top k = \\mathbf 1^\\top y + q^\\top b = q^\\top b$.",
            f"$q = ({', '.join(_fr_text(q))})$ gives every key the score $q^\\top b = {format_fraction(score)}$ "
            "(verified exactly by the library's uniform-attention checker).",
            "The library's search for uniform queries over these keys alone returns "
            f"$q = ({', '.join(_fr_text(found))})$; any non-zero query orthogonal to every key difference works.",
        )
        return Solution(self.id, {"query": _fr_text(q)}, ("ellipsoid.hyperplane", "attention.uniform_query"), work)


# --------------------------------------------------------------------------- threshold
@dataclass(frozen=True)
class ThresholdProblem(_Problem):
    """The demo configuration: the magnitude of key 3 at which key 2 stops being selectable."""

    magnitudes: tuple[Fraction, ...]
    topic: ClassVar[str] = "threshold"
    fields: ClassVar[tuple[str, ...]] = ("threshold", "status_at")

    def to_json(self) -> dict:
        return {"id": self.id, "topic": self.topic, "magnitudes": _fr_text(self.magnitudes)}

    @classmethod
    def from_json(cls, data: dict) -> ThresholdProblem:
        values = data.get("magnitudes")
        require(
            isinstance(values, list) and 0 < len(values) <= _MAX_KEYS,
            InputError,
            "threshold problem 'magnitudes' must be a short non-empty list",
        )
        mags = tuple(parse_fraction(str(v)) for v in values)
        require(all(m > 0 for m in mags), InputError, "threshold problem: every magnitude must be positive")
        return cls(magnitudes=mags)

    @staticmethod
    def threshold():
        """Solve for m: key 2 = (cos 45, sin 45) on the segment from key 1 = (1, 0) to m * key 3 = (0, m)."""
        import sympy as sp

        m = sp.Symbol("m", positive=True)
        s = sp.sqrt(2) / 2
        (root,) = sp.solve(sp.Eq(s + s / m, 1), m)  # the line x + y/m = 1 through (1,0) and (0,m)
        return sp.radsimp(root)

    def status(self, magnitude: Fraction) -> str:
        import sympy as sp

        m = sp.Rational(magnitude.numerator, magnitude.denominator)
        t = self.threshold()
        if sp.simplify(m - t) == 0:
            return "tie-only"
        return "selectable" if bool(m < t) else "unselectable"

    def solve(self) -> Solution:
        import sympy as sp

        t = self.threshold()
        status_at = {format_fraction(m): self.status(m) for m in self.magnitudes}
        work = (
            "Keys 1, 3, 4 are $(1,0)$, $(0,m)$, $(-1,0)$ and key 2 is $(\\tfrac{\\sqrt2}{2}, \\tfrac{\\sqrt2}{2})$. "
            "Key 2 is selectable exactly while it lies outside the triangle of the others, i.e. beyond the line "
            "$x + y/m = 1$ through keys 1 and 3.",
            f"$\\tfrac{{\\sqrt2}}{{2}}(1 + 1/m) = 1$ gives $m = {sp.latex(t)}$; below it key 2 is selectable, at it "
            "tie-only, above it unselectable.",
            "; ".join(f"$m = {k}$: {v}" for k, v in status_at.items()) + ".",
        )
        answers = {"threshold": sp.sstr(t), "status_at": status_at}
        return Solution(self.id, answers, ("attention.demo_threshold",), work)


PROBLEM_CLASSES = {
    cls.topic: cls
    for cls in (
        ProjectionProblem,
        SphereProblem,
        EllipsoidProblem,
        SelectabilityProblem,
        UniformProblem,
        ThresholdProblem,
        VocabProblem,
    )
}


def problem_from_json(data) -> _Problem:
    """A problem object from its JSON form (as stored in ``problems.json``)."""
    require(isinstance(data, dict), InputError, f"a problem must be a JSON object, not {type(data).__name__}")
    topic = data.get("topic")
    cls = PROBLEM_CLASSES.get(topic)
    require(cls is not None, InputError, f"unknown problem topic {topic!r}; accepted: {', '.join(TOPICS)}")
    return cls.from_json(data)
