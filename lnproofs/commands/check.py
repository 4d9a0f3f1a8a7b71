"""``lnproofs check CERT.json [KEYS]``: re-verify a certificate exactly (and numerically).

KEYS is the keys file a ``lnproofs certify`` certificate (or a causal record,
schema ``lnproofs.causal/1``: each key's first stopping position) is about.  Files written by
``lnproofs certify-model`` hold their own keys, so for them KEYS is left out and every
certificate in the file is checked.
"""

from __future__ import annotations

import json

__all__ = ["configure", "run"]


def configure(parser) -> None:
    parser.add_argument("certificate", metavar="CERT.json",
                        help="a certificate written by 'lnproofs certify', or a file written by 'lnproofs certify-model'")
    parser.add_argument("keys", metavar="KEYS", nargs="?", default=None,
                        help="the keys it is about: .npy, .npz (array 'keys'), .csv, .pt or .safetensors "
                             "(left out for certify-model files, which hold their keys)")
    parser.add_argument("--numeric", action="store_true",
                        help="also re-check every claim numerically with PyTorch (needs torch)")
    parser.add_argument("--device", default="auto",
                        help="device for --numeric: auto (a CUDA GPU when present), cpu, cuda or cuda:N")
    parser.add_argument("--json", action="store_true", help="print the verdicts as JSON")


def _numeric(keys, cert_json, device):
    from ..kernel.errors import OptionError

    try:
        from torch_backend.certificates import recheck_certificate
    except ImportError as exc:
        raise OptionError(f"--numeric needs torch and the torch_backend package ({exc}); "
                          "install torch==2.13.0 or drop --numeric") from None
    return recheck_certificate(keys, cert_json, device=device)


def _targets(args) -> list:
    """``(label, Certificate, keys)`` for every certificate to check."""
    from ..io.arrays import load_array
    from ..certificates.certificate import Certificate
    from ..kernel.errors import OptionError

    schema = _schema(args.certificate)
    if schema is not None and schema.startswith("lnproofs.model-"):
        if args.keys is not None:
            raise OptionError(f"{args.certificate} is a certify-model file ({schema}) that holds its own keys; "
                              "leave KEYS out")
        from ..models.certify_model import model_file_certificates
        return model_file_certificates(args.certificate)
    cert = Certificate.load(args.certificate)
    if args.keys is None:
        raise OptionError(f"{args.certificate} holds no keys; give the KEYS file it is about "
                          "(lnproofs check CERT.json KEYS)")
    return [(None, cert, load_array(args.keys, name="keys", ndim=2))]


def _schema(path):
    """The ``schema`` field of a JSON file, or None (Certificate.load reports unreadable files)."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return data.get("schema") if isinstance(data, dict) else None


def _run_causal(args) -> int:
    """A causal record: the kernel's verdict per key (0 every claim holds, 1 one is refuted)."""
    from ..certificates.causal import check_record, describe_stops, load_record
    from ..io.arrays import load_array
    from ..kernel.errors import OptionError

    if args.numeric:
        raise OptionError("--numeric re-checks selectability certificates; drop it for a causal record "
                          f"({args.certificate}), whose claims the exact check covers")
    record = load_record(args.certificate)
    if args.keys is None:
        raise OptionError(f"{args.certificate} holds no keys; give the KEYS file it is about "
                          "(lnproofs check RECORD.json KEYS)")
    report = check_record(record, load_array(args.keys, name="keys", ndim=2))
    if args.json:
        out = report.to_json()
        out["claims"] = [{"index": v.index, "claim": v.status, "ok": v.ok} for v in report.verdicts]
        print(json.dumps(out))
    else:
        print(report)
        print(describe_stops(report))
    return 0 if report.ok else 1


def run(args) -> int:
    from ..certificates.check import check_certificate

    if _schema(args.certificate) == "lnproofs.causal/1":
        return _run_causal(args)
    outputs, ok = [], True
    targets = _targets(args)
    extra = []
    if targets and targets[0][0] is not None:              # a certify-model file: its other evidence too
        from ..models.certify_model import model_file_checks
        extra = model_file_checks(args.certificate)
    for label, report in extra:
        ok = ok and report.ok
        if args.json:
            outputs.append(dict(report.to_json(), name=label))
        else:
            print(f"{label}: {report}")
    for label, cert, keys in targets:
        if args.numeric and cert.keys_from is not None:
            from ..kernel.errors import OptionError
            raise OptionError("--numeric re-checks keys given as floats; this certificate is about the exact "
                              "LayerNorm outputs of its inputs (keys_from), which the exact check covers: drop --numeric")
        report = check_certificate(cert, keys)
        numeric = _numeric(keys, cert.to_json(), args.device) if args.numeric else None
        ok = ok and report.ok and (numeric is None or bool(numeric.get("ok")))
        if args.json:
            out = report.to_json()
            if numeric is not None:
                out["numeric"] = numeric
            if label is not None:
                out["name"] = label
            outputs.append(out)
            continue
        prefix = "" if label is None else f"{label}: "
        print(f"{prefix}{report}")
        if numeric is not None:
            state = "agrees" if numeric.get("ok") else "DISAGREES"
            print(f"{prefix}numeric re-check on {numeric.get('device', '?')}: {state}")
            for line in numeric.get("messages", [])[:20]:
                print(f"  {line}")
    if args.json:
        print(json.dumps(outputs[0] if len(outputs) == 1 and "name" not in outputs[0] else outputs, default=str))
    return 0 if ok else 1
