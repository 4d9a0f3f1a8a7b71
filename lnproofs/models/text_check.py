"""What ``lnproofs check`` re-verifies in a text file of a ``certify-model`` run
(``texts/textNNNNN.json``): the full-width norm outputs' certificates, and every head's
evidence (:mod:`.evidence`, the one check of every file kind) with its keys and its query
sets put back from ``params.npz`` and, for rotary sets, the text's own cos/sin table.

:func:`text_evidence` reads a text file into :class:`~.evidence.HeadEvidence` entries (the
head files are written from them); :func:`text_file_certificates` gives the certificates
(``(name, Certificate, keys)``, the form every checked file takes) and
:func:`text_file_checks` the other evidence already checked, as ``(name, CheckReport)``.
"""

from __future__ import annotations

from pathlib import Path

from ..kernel.errors import CertificateFormatError, ModelError
from .evidence import HeadEvidence, SetSource, evidence_certificates, evidence_checks

__all__ = ["run_params", "run_arrays", "params_sets", "text_evidence", "text_file_certificates", "text_file_checks"]


def run_params(path) -> dict:
    """The arrays of the run's ``params.npz`` (beside the folder that holds ``path``), read within the
    readers' limits (checked from the headers)."""
    from ..io.bounded import DEFAULT_READ_LIMITS, read_npz

    params_path = Path(path).resolve().parent.parent / "params.npz"
    if not params_path.is_file():
        raise ModelError(f"{path} needs {params_path.name} from the same run beside its folder")
    return read_npz(params_path, limits=DEFAULT_READ_LIMITS)


def run_arrays(path, data) -> dict:
    """The arrays file a text or pooled file names (``"arrays"``, a path checked like ``keys_file``)."""
    from ..certificates.keyfile import inner_file
    from ..io.bounded import DEFAULT_READ_LIMITS, read_npz

    arrays_path = inner_file(Path(path).resolve(), data.get("arrays", ""), "arrays file",
                             DEFAULT_READ_LIMITS.max_file_bytes)
    return read_npz(arrays_path, limits=DEFAULT_READ_LIMITS)


def _keys(arrays, h):
    for name in (f"keys_l{h['layer']}_kv{h.get('key_head', h['head'])}", f"keys_l{h['layer']}_h{h['head']}"):
        if name in arrays:
            return arrays[name]
    raise CertificateFormatError(f"the arrays file holds no keys for layer {h['layer']} head {h['head']}")


def params_sets(params, arrays, layer: int, head: int, d: int, invertible=None) -> SetSource:
    """Head ``head``'s :class:`~.evidence.SetSource` from a run's ``params.npz`` and, for
    rotary sets, the table ``rotary_cos``/``rotary_sin`` of ``arrays``."""
    from .head_sets import params_query_set

    style = str(params[f"l{layer}_style"]) if f"l{layer}_style" in params else "half"
    cos, sin = (arrays["rotary_cos"], arrays["rotary_sin"]) if "rotary_cos" in arrays else (None, None)
    return SetSource(params_query_set(params, layer, head, d), style, cos, sin,
                     {} if invertible is None else invertible)


def text_evidence(path, data, params=None, arrays=None) -> list[HeadEvidence]:
    """Every head entry of a text file as :class:`~.evidence.HeadEvidence` (name
    ``layer{L}/head{H}``), every ``same_as_head`` reference resolved."""
    params = run_params(path) if params is None else params
    arrays = run_arrays(path, data) if arrays is None else arrays
    holders = {(h["layer"], h["head"]): h for h in data["heads"] if "same_as_head" not in h["free"]}
    invertible: dict = {}                          # one table per text: each position tested once
    out = []
    for h in data["heads"]:
        layer, head = h["layer"], h["head"]
        owns = "same_as_head" not in h["free"]
        holder = h if owns else holders[(layer, h["free"]["same_as_head"])]
        causal = h.get("causal")
        if causal and "same_as_head" in causal["free"]:
            causal = dict(causal, free=holder["causal"]["free"])
        keys = _keys(arrays, h)
        out.append(HeadEvidence(f"layer{layer}/head{head}", layer, head, keys, holder["free"],
                                h.get("realisable", h.get("layernorm")),
                                params_sets(params, arrays, layer, head, keys.shape[1], invertible), causal, owns))
    return out


def _read(path, data, what):
    try:
        return what(path, data)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise CertificateFormatError(f"{path} is malformed ({exc!r})") from None


def _certificates(path, data) -> list:
    from ..certificates.certificate import Certificate
    from .corpus_heads import with_own_rows

    arrays = run_arrays(path, data)
    out = []
    for layer in data["layers"]:
        Y = arrays[f"ln_outputs_l{layer['layer']}"]
        out.append((f"layer{layer['layer']}/outputs", Certificate.from_json(with_own_rows(layer["outputs"], Y)), Y))
    for ev in text_evidence(path, data, arrays=arrays):
        out += evidence_certificates(ev)
    return out


def text_file_certificates(path, data) -> list:
    """``(name, Certificate, keys)`` for every certificate of a text file (query sets put back)."""
    return _read(path, data, _certificates)


def text_file_checks(path, data) -> list:
    """``(name, CheckReport)`` for the coverage and causal evidence of a text file."""
    return _read(path, data, lambda p, d: [item for ev in text_evidence(p, d) for item in evidence_checks(ev)])
