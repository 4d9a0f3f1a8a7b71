"""Independent numeric re-check of lnproofs' theorems and certificates with PyTorch.

Public entry points (loaded on first use, so ``import torch_backend`` stays cheap):

- :func:`run_checks` (:mod:`torch_backend.theorems`): one numeric check per theorem name;
- :func:`recheck_certificate` (:mod:`torch_backend.certificates`): a certificate re-checked in floating point;
- :func:`recheck_vocab` (:mod:`torch_backend.vocab`): a vocabulary certificate re-checked in floating point;
- :func:`layer_report` (:mod:`torch_backend.layers`): the geometry of a real LayerNorm layer on a batch.
"""

from __future__ import annotations

import importlib

__all__ = ["run_checks", "check_names", "recheck_certificate", "recheck_vocab", "layer_report", "CheckResult"]

_EXPORTS = {
    "run_checks": "theorems",
    "check_names": "theorems",
    "CheckResult": "theorems",
    "recheck_certificate": "certificates",
    "recheck_vocab": "vocab",
    "layer_report": "layers",
}


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'torch_backend' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)


def __dir__():
    return sorted(__all__)
