"""The trusted kernel's front door: every name the rest of lnproofs (and ``torch_backend``) may use.

Nothing outside the kernel imports one of its modules: ``from lnproofs.kernel import NAME`` for the
names of :data:`__all__`, each loaded from its module on first use (importing the kernel imports
nothing else).  ``tests/test_front_door.py`` and the ``protected`` contract of ``pyproject.toml``
hold every other module to it.

Every status lnproofs prints or writes is decided here, from the data a file holds (already read:
JSON objects and arrays) and the keys it is about, one entry per file kind:

* ``check_claims``: a selectability certificate (``lnproofs.selectability/1``), under its query set
  or as LayerNorm outputs of the keys given (``keys_from``);
* ``check_vocab``: a vocabulary certificate (``lnproofs.vocab/1``, its manifest and arrays): what
  each reference claims, the bias lift, the coverage reduction to free queries;
* ``check_causal``: a causal record (``lnproofs.causal/1``);
* ``check_uniform``: a uniform-attention answer (``lnproofs.uniform/1``);
* ``check_coverage``: a coverage claim, against the keys' dimension and every query position it is
  used at (the text, head and pooled files of ``certify-model`` hold certificates, coverage claims
  and causal records, each checked by the entries above).

Every entry compares the file's shape with the keys' and the query set's dimension with theirs
before any arithmetic.  The query-set kinds are classes registered once (:data:`KINDS`,
:func:`kind_of`); each carries its JSON form, its dimension check and its exact checks (``check``).
"""

from __future__ import annotations

import importlib

# each module of the kernel and the public names it defines
_MODULES = {
    "errors": "LnproofsError InputError FileFormatError ShapeError NonFiniteError OptionError "
    "CertificateFormatError ModelError LimitError require",
    "arrays": "as_real_array as_radius",
    "exact": "to_fraction parse_fraction",
    "dyadic": "mantissas dyadic_integers integer_matrix pow2 integer_vector_of_fractions fmpq_matrix fmpq_of "
    "fraction_of_fmpq",
    "checker": "ExactKeys Verdict check_witnesses self_filter check_combinations affine_rank",
    "certificates": "SELECTABILITY_SCHEMA STATUSES Combination KeyResult Certificate each_once freeze thaw",
    "layernorm_keys": "LayerNormKeys ExactLayerNormKeys check_ln_witnesses check_ln_interior",
    "querysets": "KINDS QuerySetSchema kind_of query_set_from_json",
    "querysets.free": "FreeQueries BallQuerySet BoxQuerySet",
    "querysets.subspace": "SubspaceQuerySet ExactPoints",
    "querysets.norm": "Rotation NormQuerySet LayerNormQuerySet RMSNormQuerySet RotaryLayerNormQuerySet ExactQueryMap "
    "ExactLayer primal_queries check_dual",
    "querysets.coverage": "check_coverage integer_columns",
    "vocab": "VOCAB_SCHEMA EVIDENCE integer_rows norm_directions self_witnesses check_vocab",
    "causal": "CAUSAL_SCHEMA check_causal record_query_set",
    "uniform": "UNIFORM_SCHEMA LayerNormEquations difference_matrix check_uniform",
    "verify": "check_claims",
}
_HOMES = {name: module for module, names in _MODULES.items() for name in names.split()}
__all__ = list(_HOMES)


def __getattr__(name: str):
    if name in _HOMES:
        return getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
