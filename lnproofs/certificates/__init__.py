"""Certificates as people hold them, around the trusted kernel.

The kernel (:mod:`lnproofs.kernel`) defines the certificate schema and decides every claim.
This package adds what is for people and decides no status:

* :mod:`.certificate`: :class:`Certificate`, the kernel's schema plus files (``save``/``load``)
  and text (``describe``, notebook views, the rank warning);
* :mod:`.findings`: the informational floats a certificate states (the numerical affine
  dimension and witness margins), measured and re-measured;
* :mod:`.check`: :func:`check_certificate`, the kernel's verdicts on every claim plus the
  re-measured findings, as one :class:`CheckReport`;
* :mod:`.writers`: the JSON writers of what the kernel reads (results, combinations, query
  sets, rotations, ``keys_from``, exact rationals as ``"p/q"``);
* :mod:`.uniform`: uniform-attention answers with their description;
* :mod:`.limits`: the limits on the work one certificate file may cause, and its bounded reading;
* :mod:`.keyfile`: the keys file a certificate names (a relative path and its SHA-256);
* :mod:`.writes`: how every command writes its outputs (only regular files of ours are replaced).

The names below are loaded when first used, so that importing :mod:`.writes` stays light.
"""

from __future__ import annotations

import importlib

__all__ = ["Certificate", "CheckReport", "check_certificate"]

_HOMES = {"Certificate": ".certificate", "CheckReport": ".check", "check_certificate": ".check"}


def __getattr__(name: str):
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
