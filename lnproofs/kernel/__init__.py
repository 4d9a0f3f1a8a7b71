"""The trusted kernel's front door: every name the rest of lnproofs (and ``torch_backend``) may use.

Nothing outside the kernel imports one of its modules; ``from lnproofs.kernel import NAME`` for
the names of :data:`__all__`, each loaded from its module on first use (importing the kernel
imports nothing else).  ``tests/test_front_door.py`` and the ``protected`` contract of
``pyproject.toml`` hold every other module to it.
"""

from __future__ import annotations

import importlib

# each module of the kernel and the public names it defines
_MODULES = {
    "errors": "LnproofsError InputError FileFormatError ShapeError NonFiniteError OptionError "
    "CertificateFormatError ModelError LimitError require",
    "arrays": "as_real_array as_radius",
    "exact": "to_fraction parse_fraction mantissas dyadic_integers integer_matrix pow2 integer_vector_of_fractions fmpq_matrix fmpq_of "
    "fraction_of_fmpq",
    "checker": "ExactKeys Verdict check_witnesses check_combinations affine_rank",
    "certificates": "SELECTABILITY_SCHEMA STATUSES Combination KeyResult Certificate each_once freeze thaw",
    "layernorm_keys": "LayerNormKeys ExactLayerNormKeys check_ln_witnesses check_ln_interior",
    "querysets": "KINDS QuerySetSchema kind_of kinds query_set_from_json",
    "querysets.free": "FreeQueries BallQuerySet BoxQuerySet",
    "querysets.subspace": "SubspaceQuerySet ExactPoints",
    "querysets.norm": "Rotation NormQuerySet LayerNormQuerySet RMSNormQuerySet RotaryLayerNormQuerySet ExactQueryMap "
    "ExactLayer primal_query primal_queries check_dual",
    "querysets.coverage": "check_coverage integer_columns",
    "vocab": "VOCAB_SCHEMA EVIDENCE integer_rows norm_directions self_witnesses check_vocab",
    "causal": "CAUSAL_SCHEMA check_causal record_query_set",
    "uniform": "UNIFORM_SCHEMA LayerNormEquations difference_matrix check_uniform",
    "verify": "check_claims check_results",
}
_HOMES = {name: module for module, names in _MODULES.items() for name in names.split()}
__all__ = list(_HOMES)


def __getattr__(name: str):
    if name in _HOMES:
        return getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
