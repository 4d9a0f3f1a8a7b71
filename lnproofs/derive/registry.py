"""Every theorem lnproofs proves, by name, for general n and for a concrete width.

The theorem names are a fixed contract: :func:`theorem_names` lists them, and the
PyTorch re-check registers a numeric check under each.  Each theorem module
(:mod:`lnproofs.derive.theorems.projection`, ...) has ``theorems(n=None, convention="torch")``.
"""

from __future__ import annotations

import importlib
import numbers

from ..kernel import OptionError

__all__ = ["THEOREM_NAMES", "MODULES", "theorem_names", "all_theorems", "prove_all", "get_theorem"]

#: theorem modules under lnproofs.derive.theorems, in the order their theorems are listed
MODULES = (
    "projection",
    "decomposition",
    "sphere",
    "ellipsoid",
    "axes",
    "secular",
    "rmsnorm",
    "rotary",
    "attention",
    "caveats",
    "demo",
    "simplex",
    "coverage",
    "vocab",
    "softcap",
)

THEOREM_NAMES = (
    "projection.mean_subtraction",
    "projection.symmetric",
    "projection.idempotent",
    "projection.trace",
    "projection.kernel",
    "projection.eigenvalues",
    "decomposition.torch",
    "decomposition.std",
    "sphere.radius",
    "sphere.interior_torch",
    "sphere.interior_std",
    "ellipsoid.hyperplane",
    "ellipsoid.equation",
    "ellipsoid.principal_axes",
    "ellipsoid.riechers_form",
    "ellipsoid.secular_equation",
    "ellipsoid.interlacing",
    "ellipsoid.zero_gains",
    "ellipsoid.equal_gains",
    "rmsnorm.sphere",
    "rmsnorm.ellipsoid",
    "rmsnorm.interior",
    "rmsnorm.ball_image",
    "rmsnorm.support",
    "rotary.relative",
    "attention.uniform_query",
    "attention.sphere_witness",
    "attention.ellipsoid_witness",
    "attention.selectable_iff_not_in_hull",
    "attention.eps_caveat",
    "attention.rank_deficient_caveat",
    "attention.duplicate_caveat",
    "attention.demo_threshold",
    "attention.simplex_vertices",
    "coverage.argmax_direction",
    "coverage.every_direction",
    "vocab.self_witness",
    "vocab.duplicate_rows",
    "vocab.bias_lift",
    "vocab.final_norm",
    "vocab.no_offset",
    "vocab.soft_cap",
)


def theorem_names() -> tuple:
    """The fixed theorem names, in listing order."""
    return THEOREM_NAMES


def _check_n(n):
    if n is None:
        return None
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise OptionError(f"n = {n!r} is not an integer; give a width n >= 2")
    if n < 2:
        raise OptionError(f"n = {n} is too small; LayerNorm's geometry needs a width n >= 2")
    return int(n)


def _check_convention(convention):
    if convention not in ("torch", "std"):
        raise OptionError(f"convention {convention!r} is not known; use 'torch' or 'std'")
    return convention


def all_theorems(n: int | None = None, convention: str = "torch", names=None) -> list:
    """Theorems for general n, plus their explicit versions for width ``n`` when given.

    ``convention`` picks the epsilon convention of the convention-dependent ellipsoid
    and attention statements; the decomposition and interior theorems of both
    conventions are always included.  ``names`` (optional) keeps only those names.
    """
    n = _check_n(n)
    convention = _check_convention(convention)
    wanted = None if names is None else set(names)
    if wanted is not None:
        unknown = sorted(wanted - set(THEOREM_NAMES))
        if unknown:
            raise OptionError(f"unknown theorem name {unknown[0]!r}; see lnproofs.derive.registry.theorem_names()")
    out = []
    for module_name in MODULES:
        module = importlib.import_module(f".theorems.{module_name}", __package__)
        found = list(module.theorems(None, convention))
        if n is not None:
            found += list(module.theorems(n, convention))
        out += [t for t in found if wanted is None or t.name in wanted]
    return out


def get_theorem(name: str, n: int | None = None, convention: str = "torch"):
    """The theorem called ``name`` for general n (``n=None``) or for width ``n``."""
    for theorem in all_theorems(n, convention, names=[name]):
        if theorem.n == n:
            return theorem
    raise OptionError(f"theorem {name!r} has no version for n = {n}")


def prove_all(n: int | None = None, convention: str = "torch", names=None) -> list:
    """``[theorem.prove() for theorem in all_theorems(n, convention, names)]``."""
    return [theorem.prove() for theorem in all_theorems(n, convention, names)]
