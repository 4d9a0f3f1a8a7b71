"""Checking a whole selectability certificate: every key's claim, by the checks of its query set's kind.

:func:`check_claims` reads the certificate (``lnproofs.selectability/1``), checks that it
speaks of these keys (shape, every key once), and sends each result to the checks of its
query set (:mod:`.querysets`) or of LayerNorm-input keys (:mod:`.layernorm_keys`).  The
primitives those rely on are in :mod:`.checker`.  Informational floats (margins, the
numerical rank) are not claims; :mod:`lnproofs.certificates.findings` measures them again.
"""

from __future__ import annotations

from . import layernorm_keys
from .certificates import Certificate, each_once, same_shape, thaw
from .checker import ExactKeys, Verdict
from .errors import CertificateFormatError
from .querysets import query_set_from_json
from .querysets.free import FreeQueries


def check_claims(certificate, keys) -> list[Verdict]:
    """One verdict per result of ``certificate`` (a Certificate or its JSON) against ``keys``, in order."""
    cert = certificate if isinstance(certificate, Certificate) else Certificate.from_json(certificate)
    ek = ExactKeys.of(keys)
    same_shape({"n_keys": cert.n_keys, "dim": cert.dim}, ek.n, ek.dim, "certificate")
    each_once([r.index for r in cert.results], ek.n, "certificate field results")
    query_set = query_set_from_json(thaw(cert.query_set))
    if cert.keys_from is None:
        return list(query_set.check(ek, cert.results))
    if type(query_set) is not FreeQueries:  # the keys are LayerNorm outputs of ``keys``
        raise CertificateFormatError("certificate field keys_from is only used with free queries")
    spec = layernorm_keys.LayerNormKeys.from_json(thaw(cert.keys_from))
    return layernorm_keys.check_all(ek.array, spec, cert.results)
