"""What ``lnproofs check`` re-verifies in a text file of a ``certify-model`` run
(``texts/textNNNNN.json``): the full-width norm outputs' certificates, and every head's
evidence (:mod:`.evidence`, the one check of every file kind) with its keys and its query
sets put back from ``params.npz`` and, for rotary sets, the text's own cos/sin table, and
the coverage evidence a head names from the run's ``coverage`` folder.

:func:`text_evidence` reads a text file into :class:`~.evidence.HeadEvidence` entries (the
head files are written from them); :func:`text_file_certificates` gives the certificates
(``(name, Certificate, keys)``, the form every checked file takes) and
:func:`text_file_checks` the other evidence already checked, as ``(name, CheckReport)``.
"""

from __future__ import annotations

from pathlib import Path

from ..kernel import CertificateFormatError, ModelError
from .evidence import HeadEvidence, SetSource, evidence_certificates, evidence_checks

__all__ = [
    "run_params",
    "run_arrays",
    "run_coverage",
    "params_sets",
    "text_evidence",
    "text_file_certificates",
    "text_file_checks",
]


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

    arrays_path = inner_file(
        Path(path).resolve(), data.get("arrays", ""), "arrays file", DEFAULT_READ_LIMITS.max_file_bytes
    )
    return read_npz(arrays_path, limits=DEFAULT_READ_LIMITS)


def _keys(arrays, h):
    for name in (f"keys_l{h['layer']}_kv{h.get('key_head', h['head'])}", f"keys_l{h['layer']}_h{h['head']}"):
        if name in arrays:
            return arrays[name]
    raise CertificateFormatError(f"the arrays file holds no keys for layer {h['layer']} head {h['head']}")


def params_sets(params, arrays, layer: int, head: int, d: int) -> SetSource:
    """Head ``head``'s :class:`~.evidence.SetSource` from a run's ``params.npz`` and, for
    rotary sets, the table ``rotary_cos``/``rotary_sin`` of ``arrays``."""
    from .head_sets import params_query_set

    style = str(params[f"l{layer}_style"]) if f"l{layer}_style" in params else "half"
    cos, sin = (arrays["rotary_cos"], arrays["rotary_sin"]) if "rotary_cos" in arrays else (None, None)
    return SetSource(params_query_set(params, layer, head, d), style, cos, sin)


def text_evidence(path, data, params=None, arrays=None) -> list[HeadEvidence]:
    """Every head entry of a text file as :class:`~.evidence.HeadEvidence` (name
    ``layer{L}/head{H}``), every ``same_as_head`` reference resolved."""
    params = run_params(path) if params is None else params
    arrays = run_arrays(path, data) if arrays is None else arrays
    holders = {(h["layer"], h["head"]): h for h in data["heads"] if "same_as_head" not in h["free"]}
    out = []
    for h in data["heads"]:
        layer, head = h["layer"], h["head"]
        owns = "same_as_head" not in h["free"]
        holder = h if owns else holders[(layer, h["free"]["same_as_head"])]
        causal = h.get("causal")
        if causal and "same_as_head" in causal["free"]:
            causal = dict(causal, free=holder["causal"]["free"])
        keys = _keys(arrays, h)
        realisable = h.get("realisable", h.get("layernorm"))
        if isinstance(realisable, dict) and isinstance(realisable.get("coverage"), str):
            realisable = dict(realisable, coverage=run_coverage(path, layer, head, realisable["coverage"]))
        out.append(
            HeadEvidence(
                f"layer{layer}/head{head}",
                layer,
                head,
                keys,
                holder["free"],
                realisable,
                params_sets(params, arrays, layer, head, keys.shape[1]),
                causal,
                owns,
            )
        )
    return out


def run_coverage(path, layer: int, head: int, name: str) -> dict:
    """The coverage evidence a text file names (``name``, which must be the run's file of that
    head, :func:`~.text_heads.coverage_name`), read from the run's folder within the readers' limits."""
    from ..certificates.limits import read_json_file
    from .text_heads import COVERAGE_SCHEMA, coverage_name

    if name != coverage_name(layer, head):
        raise CertificateFormatError(
            f"{path}: layer {layer} head {head} names coverage {name!r}; a text file names "
            f"its run's file {coverage_name(layer, head)!r}"
        )
    target = Path(path).resolve().parent.parent / name
    if not target.is_file():
        raise ModelError(f"{path} needs {name} from the same run beside its folder")
    data = read_json_file(target)
    if not (
        isinstance(data, dict)
        and data.get("schema") == COVERAGE_SCHEMA
        and data.get("layer") == layer
        and data.get("head") == head
        and isinstance(data.get("coverage"), dict)
    ):
        raise CertificateFormatError(
            f"{target} is not the coverage file of layer {layer} head {head} (schema "
            f"{COVERAGE_SCHEMA}, with its layer, head and coverage)"
        )
    return data["coverage"]


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
