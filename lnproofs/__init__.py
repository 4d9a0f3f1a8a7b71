"""lnproofs: the geometry of LayerNorm and what it does to attention, proved exactly.

The public names below are loaded on first use, so ``import lnproofs`` is cheap and
imports neither SymPy, cvxpy nor torch.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # errors and input
    "LnproofsError": "kernel",
    "InputError": "kernel",
    "load_array": "io.arrays",
    # theorems, proved by SymPy
    "Theorem": "derive.theorem",
    "ProofResult": "derive.theorem",
    "all_theorems": "derive.registry",
    "prove_all": "derive.registry",
    "get_theorem": "derive.registry",
    "theorem_names": "derive.registry",
    # numeric LayerNorm geometry
    "layernorm": "derive.numeric",
    "rmsnorm": "derive.numeric",
    "ellipsoid": "derive.numeric",
    "EllipsoidInfo": "derive.numeric",
    # certified selectability
    "certify": "propose.certification",
    "has_unselectable": "propose.certification",
    "certify_layernorm_outputs": "propose.layernorm_inputs",
    "Certificate": "certificates.certificate",
    "KeyResult": "kernel",
    "Combination": "kernel",
    "check_certificate": "certificates.check",
    "CheckReport": "certificates.check",
    "SubspaceQuerySet": "kernel",
    "LayerNormQuerySet": "kernel",
    "BallQuerySet": "kernel",
    # softmax weights and uniform attention
    "max_weight": "propose.softmax",
    "min_norm": "propose.softmax",
    "uniform_attention": "propose.uniform",
    # reports, figures, demo
    "build_report": "report.build",
    "write_report": "report.build",
    "reproduce_figure1": "experiments.figure1",
    "reproduce_majority": "experiments.majority",
    "reproduce_lm_tables": "experiments.lm_tables",
    "write_demo": "experiments.demo",
    # real models
    "load_model": "models.loading",
    "capture_layers": "models.extract",
    "fold_layernorm": "models.folding",
    "certify_model": "models.certify_model",
    # homework
    "generate_homework": "homework",
    "write_homework": "homework",
    "check_answers": "homework",
}

__all__ = [
    "__version__",
    "LnproofsError",
    "InputError",
    "load_array",
    "Theorem",
    "ProofResult",
    "all_theorems",
    "prove_all",
    "get_theorem",
    "theorem_names",
    "layernorm",
    "rmsnorm",
    "ellipsoid",
    "EllipsoidInfo",
    "certify",
    "has_unselectable",
    "certify_layernorm_outputs",
    "Certificate",
    "KeyResult",
    "Combination",
    "check_certificate",
    "CheckReport",
    "SubspaceQuerySet",
    "LayerNormQuerySet",
    "BallQuerySet",
    "max_weight",
    "min_norm",
    "uniform_attention",
    "build_report",
    "write_report",
    "reproduce_figure1",
    "reproduce_majority",
    "reproduce_lm_tables",
    "write_demo",
    "load_model",
    "capture_layers",
    "fold_layernorm",
    "certify_model",
    "generate_homework",
    "write_homework",
    "check_answers",
]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'lnproofs' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(__all__)
