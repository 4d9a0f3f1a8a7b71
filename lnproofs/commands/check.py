"""``lnproofs check CERT.json KEYS``: re-verify a certificate exactly (and numerically)."""

from __future__ import annotations

import json

__all__ = ["configure", "run"]


def configure(parser) -> None:
    parser.add_argument("certificate", metavar="CERT.json", help="a certificate written by 'lnproofs certify'")
    parser.add_argument("keys", metavar="KEYS",
                        help="the keys it is about: .npy, .npz (array 'keys'), .csv, .pt or .safetensors")
    parser.add_argument("--numeric", action="store_true",
                        help="also re-check every claim numerically with PyTorch (needs torch)")
    parser.add_argument("--device", default="auto",
                        help="device for --numeric: auto (a CUDA GPU when present), cpu, cuda or cuda:N")
    parser.add_argument("--json", action="store_true", help="print the verdicts as JSON")


def _numeric(keys, cert_json, device):
    from ..errors import OptionError

    try:
        from torch_backend.certificates import recheck_certificate
    except ImportError as exc:
        raise OptionError(f"--numeric needs torch and the torch_backend package ({exc}); "
                          "install torch==2.13.0 or drop --numeric") from None
    return recheck_certificate(keys, cert_json, device=device)


def run(args) -> int:
    from ..arrays import load_array
    from ..certificates import Certificate
    from ..checker import check_certificate

    cert = Certificate.load(args.certificate)
    keys = load_array(args.keys, name="keys", ndim=2)
    report = check_certificate(cert, keys)
    numeric = _numeric(keys, cert.to_json(), args.device) if args.numeric else None
    if args.json:
        out = report.to_json()
        if numeric is not None:
            out["numeric"] = numeric
        print(json.dumps(out, default=str))
    else:
        print(report)
        if numeric is not None:
            state = "agrees" if numeric.get("ok") else "DISAGREES"
            print(f"numeric re-check on {numeric.get('device', '?')}: {state}")
            for line in numeric.get("messages", [])[:20]:
                print(f"  {line}")
    ok = report.ok and (numeric is None or bool(numeric.get("ok")))
    return 0 if ok else 1
