"""Checking a whole certificate: every key's claim, by the module of its query set.

:func:`check_claims` is the kernel's front door: it reads the certificate, checks that it
speaks of these keys (shape, every key once), and sends each result to the checks of its
query set (:mod:`.querysets`) or of LayerNorm-input keys (:mod:`.layernorm_keys`).  The
primitives those rely on are in :mod:`.checker`.  Informational floats (margins, the
numerical rank) are not claims; :mod:`lnproofs.certificates.findings` measures them again.
"""

from __future__ import annotations

from . import layernorm_keys
from .certificates import Certificate, each_once, thaw
from .checker import ExactKeys, Verdict
from .errors import CertificateFormatError, ShapeError
from .querysets import module_for, query_set_from_json

__all__ = ["check_claims", "check_results"]


def check_claims(certificate, keys) -> list[Verdict]:
    """One verdict per result of ``certificate`` (a Certificate or its JSON) against ``keys``, in order."""
    cert = certificate if isinstance(certificate, Certificate) else Certificate.from_json(certificate)
    ek = ExactKeys.of(keys)
    if (cert.n_keys, cert.dim) != (ek.n, ek.dim):
        raise ShapeError(
            f"the certificate is for {cert.n_keys} keys in R^{cert.dim} but the keys have shape ({ek.n}, {ek.dim})"
        )
    each_once([r.index for r in cert.results], ek.n, "certificate field results")
    kind = cert.query_set.get("kind", "free")
    module = module_for(kind)
    query_set = query_set_from_json(thaw(cert.query_set))
    if cert.keys_from is None:
        return list(module.check_all(ek, query_set, cert.results))
    if kind != "free":  # the keys are LayerNorm outputs of ``keys``
        raise CertificateFormatError("certificate field keys_from is only used with free queries")
    spec = layernorm_keys.LayerNormKeys.from_json(thaw(cert.keys_from))
    return layernorm_keys.check_all(ek.array, spec, cert.results)


def check_results(keys, query_set, results) -> list[Verdict]:
    """One verdict per result under ``query_set`` (a query-set object; None: free queries), by the checks of its kind."""
    kind = "free" if query_set is None else query_set.kind
    return module_for(kind).check_all(
        keys, query_set_from_json({"kind": "free"}) if query_set is None else query_set, results
    )
