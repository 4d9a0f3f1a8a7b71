"""What ``lnproofs check`` re-verifies in a text file of a ``certify-model`` run
(``texts/textNNNNN.json``): every certificate with its keys and its query set put back
from ``params.npz`` (and, for rotary sets, the text's own cos/sin table), the coverage
of covering heads, and the causal records.

:func:`text_file_certificates` gives the certificates (``(name, Certificate, keys)``, the
form every checked file takes); :func:`text_file_checks` gives the other evidence already
checked, as ``(name, CheckReport)``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..kernel.errors import CertificateFormatError, ModelError

__all__ = ["text_file_certificates", "text_file_checks"]


def _load(path, data):
    params_path = Path(path).resolve().parent.parent / "params.npz"
    if not params_path.exists():
        raise ModelError(f"{path} needs {params_path.name} from the same run beside its texts folder")
    with np.load(params_path) as p:
        params = {k: p[k] for k in p.files}
    arrays_path = Path(path).resolve().parent / str(data.get("arrays", ""))
    if not arrays_path.is_file():
        raise ModelError(f"{path} needs its arrays file {arrays_path.name} beside it")
    with np.load(arrays_path) as a:
        arrays = {k: a[k] for k in a.files}
    return params, arrays


def _keys(arrays, h):
    for name in (f"keys_l{h['layer']}_kv{h.get('key_head', h['head'])}", f"keys_l{h['layer']}_h{h['head']}"):
        if name in arrays:
            return arrays[name]
    raise CertificateFormatError(f"the arrays file holds no keys for layer {h['layer']} head {h['head']}")


def _rotary(arrays):
    return (arrays["rotary_cos"], arrays["rotary_sin"]) if "rotary_cos" in arrays else None


def _query_set(params, arrays, h, d, position=None):
    from .head_sets import params_query_set

    ref = h.get("realisable", h.get("layernorm", {})).get("query_set", {})
    pos = ref.get("position") if position is None else position
    return params_query_set(params, h["layer"], h["head"], d, _rotary(arrays), pos)


def _invertible_at(params, arrays, layer, t, cache) -> bool:
    """Whether the text's rotary matrix at position ``t`` (in ``layer``'s style) is invertible,
    checked by the kernel once per style and position (every layer reads one table)."""
    from ..kernel.querysets.coverage import rotation_invertible
    from .head_sets import _rotation

    style = str(params[f"l{layer}_style"]) if f"l{layer}_style" in params else "half"
    if (style, t) not in cache:
        cos, sin = _rotary(arrays)
        cache[(style, t)] = rotation_invertible(_rotation(cos[t], sin[t], style, t))
    return cache[(style, t)]


def _heads(data):
    """Head entries with the free certificate of the query head that holds it for its key head."""
    holders = {}
    for h in data["heads"]:
        if "same_as_head" not in h["free"]:
            holders[(h["layer"], h["head"])] = h
    out = []
    for h in data["heads"]:
        free = h["free"]
        if "same_as_head" in free:
            free = holders[(h["layer"], free["same_as_head"])]["free"]
        out.append((h, free))
    return out


def text_file_certificates(path, data) -> list:
    """``(name, Certificate, keys)`` for every certificate of a text file (query sets put back)."""
    from ..certificates.certificate import Certificate
    from ..certificates.writers import query_set_to_json
    from .corpus_heads import _certificate, with_own_rows

    params, arrays = _load(path, data)
    out = []
    try:
        for layer in data["layers"]:
            Y = arrays[f"ln_outputs_l{layer['layer']}"]
            out.append((f"layer{layer['layer']}/outputs", Certificate.from_json(with_own_rows(layer["outputs"], Y)), Y))
        for h, free in _heads(data):
            keys = _keys(arrays, h)
            l, head = h["layer"], h["head"]
            if "same_as_head" not in h["free"]:
                out.append((f"layer{l}/head{head}/free", Certificate.from_json(free), keys))
            real = h.get("realisable", h.get("layernorm"))
            if "coverage" not in real:
                qs = _query_set(params, arrays, h, keys.shape[1])
                out.append((f"layer{l}/head{head}/realisable", Certificate.from_json(dict(real, query_set=query_set_to_json(qs))),
                            keys))
            positions = (h.get("causal") or {}).get("realisable", {}).get("positions")
            for t, results in sorted((positions or {}).items(), key=lambda kv: int(kv[0])):
                t = int(t)
                if t == len(keys) - 1:
                    continue                                 # the realisable certificate above
                qs = _query_set(params, arrays, h, keys.shape[1], t)
                done = {r["index"] for r in results}
                filled = list(results) + [{"index": j, "status": "undecided", "verified": "none", "witness": None,
                                           "combination": None, "margin": None, "reason": "stopped by the free record"}
                                          for j in range(t + 1) if j not in done]
                cert = _certificate(t + 1, keys.shape[1], query_set_to_json(qs), sorted(filled, key=lambda r: r["index"]))
                out.append((f"layer{l}/head{head}/causal/realisable/t{t}", Certificate.from_json(cert), keys[:t + 1]))
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise CertificateFormatError(f"{path} is malformed ({exc!r})") from None
    return out


def _report(verdicts, n, d, kind):
    from ..certificates.check import CheckReport

    return CheckReport(all(v.ok for v in verdicts), tuple(verdicts), n, d, kind)


def text_file_checks(path, data) -> list:
    """``(name, CheckReport)`` for the coverage and causal evidence of a text file."""
    params, arrays = _load(path, data)
    out, invertible = [], {}
    try:
        for h, free in _heads(data):
            keys = _keys(arrays, h)
            l, head = h["layer"], h["head"]
            real = h.get("realisable", {})
            if "coverage" in real:
                from ..kernel.checker import Verdict
                from ..certificates.coverage import Coverage
                from ..kernel.querysets.coverage import check_coverage

                from ..kernel.querysets.norm import ExactQueryMap

                qs = _query_set(params, arrays, h, keys.shape[1])
                claim, query_map = Coverage.from_json(real["coverage"]), ExactQueryMap(qs)
                ok, message = check_coverage(qs, claim, query_map)
                verdicts = [Verdict(len(keys) - 1, "coverage", ok, message or "")]
                if h.get("causal") and qs.rotation is not None and ok:
                    # the causal answers use the coverage at every query position: the rank and the
                    # centre do not change with it, the rotation does (one check per position and text)
                    for t in range(len(keys) - 1):
                        ok = _invertible_at(params, arrays, h["layer"], t, invertible)
                        verdicts.append(Verdict(t, "coverage", ok, "" if ok else f"position {t}: the rotation "
                                                "of the query set is not invertible (a 2 x 2 block has determinant 0)"))
                out.append((f"layer{l}/head{head}/coverage", _report(verdicts, len(keys), keys.shape[1],
                                                                     "coverage of every direction")))
            causal = h.get("causal")
            if not causal:
                continue
            from ..kernel.causal import check_causal
            from .text_causal import with_free_wins

            if "same_as_head" not in causal["free"]:
                verdicts = check_causal(keys, with_free_wins(causal["free"], free))
                out.append((f"layer{l}/head{head}/causal/free", _report(verdicts, len(keys), keys.shape[1],
                                                                        "causal, free queries")))
            record = causal.get("realisable", {})
            if "positions" not in record and "same_as" not in record:
                qs = _query_set(params, arrays, h, keys.shape[1])
                verdicts = check_causal(keys, record, qs)
                out.append((f"layer{l}/head{head}/causal/realisable",
                            _report(verdicts, len(keys), keys.shape[1], f"causal, {qs.kind} queries")))
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise CertificateFormatError(f"{path} is malformed ({exc!r})") from None
    return out
