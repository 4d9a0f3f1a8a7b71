"""lnproofs: the geometry of LayerNorm and what it does to attention, proved exactly.

The public names below are loaded on first use, so ``import lnproofs`` is cheap and
imports neither SymPy, cvxpy nor torch.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # errors
    "LnproofsError": "errors",
    "InputError": "errors",
    # arrays
    "load_array": "arrays",
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
