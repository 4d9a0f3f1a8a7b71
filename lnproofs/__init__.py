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
    "LnproofsError": "errors",
    "InputError": "errors",
    "load_array": "arrays",
    # theorems, proved by SymPy
    "Theorem": "theorem",
    "ProofResult": "theorem",
    "all_theorems": "registry",
    "prove_all": "registry",
    "get_theorem": "registry",
    "theorem_names": "registry",
    # numeric LayerNorm geometry
    "layernorm": "numeric",
    "rmsnorm": "numeric",
    "ellipsoid": "numeric",
    "EllipsoidInfo": "numeric",
    # certified selectability
    "certify": "certification",
    "has_unselectable": "certification",
    "Certificate": "certificates",
    "KeyResult": "certificates",
    "Combination": "certificates",
    "check_certificate": "checker",
    "CheckReport": "checker",
    "SubspaceQuerySet": "querysets.subspace",
    "LayerNormQuerySet": "querysets.layernorm",
    "BallQuerySet": "querysets.ball",
    # softmax weights and uniform attention
    "max_weight": "softmax",
    "min_norm": "softmax",
    "uniform_attention": "uniform",
    # reports, figures, demo
    "build_report": "report",
    "write_report": "report",
    "reproduce_figure1": "reproduce",
    "write_demo": "demo",
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

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'lnproofs' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(__all__)
