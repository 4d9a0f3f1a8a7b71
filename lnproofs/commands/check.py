"""``lnproofs check FILE [KEYS]`` and ``lnproofs check DIR``: re-verify certificates exactly.

One function checks one file, :func:`check_file`, for a file given alone and for every file of a
folder: it reads the file within the limits of :mod:`lnproofs.certificates.limits`, dispatches on
its schema once (selectability ``lnproofs.selectability/1``, vocabulary ``lnproofs.vocab/1``,
causal records ``lnproofs.causal/1``, uniform-attention answers ``lnproofs.uniform/1`` as
``lnproofs uniform --json`` prints them, and the ``lnproofs.model-*`` files of ``certify-model``),
and hands the data to the kernel's entry for that kind.  KEYS is the keys file the file is about;
a file that names its keys file (``keys_file``: a path relative to it and its SHA-256) finds it by
itself, and a given KEYS must match that hash; files written by ``lnproofs certify-model`` hold
their own keys.  With ``--numeric`` selectability and vocabulary certificates are also re-checked
in floating point by ``torch_backend`` (a second line of evidence; a disagreement makes the exit
status 1).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .execution_options import filter_product

__all__ = ["configure", "run", "check_file", "FileCheck", "EXIT_STATUSES"]

EXIT_STATUSES = """exit status:
  0  every claim holds
  1  some claim is refuted
  2  bad input: a file that cannot be read, does not follow the schema, names keys
     that do not match, or is past a limit
  3  an internal error (a bug of lnproofs; rerun with 'lnproofs --traceback check ...'
     and report it)
for a folder: 3 if any file met an internal error, else 1 if any claim is refuted,
else 2 if anything is unreadable (a certificate file, a file that looks like one but has
a schema this version does not read, a sub-folder that cannot be listed, a link to nothing),
else 0; every unreadable entry is named in the summary."""
#: schemas of lnproofs that are not certificates a folder check reads (skipped, as other JSON)
_NOT_CERTIFICATES = (
    "lnproofs.homework/1",
    "lnproofs.homework-answers/1",
    "lnproofs.homework-class/1",
    "lnproofs.model-coverage/1",
)  # (coverage: read with the texts naming it)


def _folder_entries(folder: Path) -> tuple[list[Path], list[tuple[str, str]], list[tuple[str, str]]]:
    """(the .json files under ``folder`` to read, [(entry, why) that could not be read], [(entry, why)
    not followed]).  Sub-folders that cannot be listed, links that lead nowhere or to something that
    is not a regular file, and .json entries that are not regular files are named, never skipped in
    silence; links to folders are not followed (named apart)."""
    import os
    import stat

    files, unreadable, not_followed = [], [], []

    def failed(err: OSError) -> None:
        unreadable.append((str(err.filename or folder), f"cannot be listed ({err.strerror or err})"))

    for top, dirs, names in os.walk(folder, onerror=failed):
        for name in sorted(dirs):
            path = Path(top) / name
            if path.is_symlink():
                not_followed.append((str(path), "a link to a folder, not followed"))
        dirs[:] = sorted(d for d in dirs if not (Path(top) / d).is_symlink())
        for name in sorted(names):
            if not name.lower().endswith(".json"):
                continue
            path = Path(top) / name
            try:
                mode = os.stat(path).st_mode
            except OSError as err:
                what = "a link to nothing" if path.is_symlink() else f"cannot be read ({err.strerror or err})"
                unreadable.append((str(path), what))
                continue
            if not stat.S_ISREG(mode):
                unreadable.append((str(path), "is not a regular file"))
                continue
            files.append(path)
    return files, unreadable, not_followed


def _near_miss(data) -> str | None:
    """Why a JSON value that looks like an lnproofs certificate is not one this version reads, or None."""
    if not isinstance(data, dict):
        return None
    schema = data.get("schema")
    if schema is None:
        return (
            'it has certificate fields (n_keys, results) but no "schema"'
            if {"n_keys", "results"} <= set(data)
            else None
        )
    if not isinstance(schema, str) or not schema.strip().lower().startswith("lnproofs"):
        return None
    if _handler(schema) is not None or schema in _NOT_CERTIFICATES:
        return None
    return (
        f"its schema {schema[:60]!r} is not one this lnproofs reads (certificates: lnproofs.selectability/1, "
        "lnproofs.vocab/1, lnproofs.causal/1, lnproofs.uniform/1, lnproofs.model-*)"
    )


def configure(parser) -> None:
    from ..certificates.limits import DEFAULT_LIMITS as D

    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = EXIT_STATUSES
    parser.add_argument(
        "certificate",
        metavar="CERT.json|DIR",
        help="a certificate written by 'lnproofs certify' or 'certify-vocab', a file written by "
        "'lnproofs certify-model', a causal record, an answer of 'lnproofs uniform --json', or a folder: "
        "every certificate under it is checked",
    )
    parser.add_argument(
        "keys",
        metavar="KEYS",
        nargs="?",
        default=None,
        help="the keys it is about: .npy, .npz (array 'keys'), .csv, .pt or .safetensors "
        "(left out when the certificate names its keys file or holds its keys)",
    )
    parser.add_argument(
        "--numeric", action="store_true", help="also re-check every claim numerically with PyTorch (needs torch)"
    )
    parser.add_argument(
        "--device",
        default=None,
        help="where the float filter of a vocabulary certificate's exact check multiplies: cpu (numpy; the default), "
        "cuda, cuda:N or auto (a CUDA GPU when present; the verdicts are the same); also the device of --numeric "
        "(default auto)",
    )
    parser.add_argument("--json", action="store_true", help="print the verdicts as JSON")
    limits = parser.add_argument_group("limits on the work one file may cause (a file past one is refused, exit 2)")
    limits.add_argument(
        "--max-digits",
        type=int,
        default=D.max_digits,
        metavar="N",
        help=f"digits of one number, numerator or denominator (default {D.max_digits})",
    )
    limits.add_argument(
        "--max-dim", type=int, default=D.max_dim, metavar="N", help=f"dimension of the keys (default {D.max_dim})"
    )
    limits.add_argument(
        "--max-bytes-per-entry",
        type=int,
        default=D.bytes_per_entry,
        metavar="B",
        help=f"size of a certificate file: {D.slack_bytes} bytes plus B per key entry, "
        f"N*d entries for N keys in R^d (default {D.bytes_per_entry})",
    )
    limits.add_argument(
        "--max-array-bytes",
        type=int,
        default=D.max_array_bytes,
        metavar="B",
        help=f"one keys array once read, as float64 (default {D.max_array_bytes}); a keys file may "
        "hold 8*B bytes on disk",
    )


def _limits(args):
    from ..certificates.limits import DEFAULT_LIMITS, Limits
    from ..kernel import OptionError

    for name in ("max_digits", "max_dim", "max_bytes_per_entry", "max_array_bytes"):
        if getattr(args, name) < 1:
            raise OptionError(f"--{name.replace('_', '-')} {getattr(args, name)} is not accepted; give a count >= 1")
    return Limits(
        args.max_digits,
        args.max_dim,
        args.max_bytes_per_entry,
        DEFAULT_LIMITS.slack_bytes,
        DEFAULT_LIMITS.max_depth,
        args.max_array_bytes,
    )


def _numeric(keys, cert_json, device, vocab: bool = False):
    """The numeric re-check of a selectability certificate's JSON, or (``vocab``) of the vocabulary
    certificate ``cert_json`` as :func:`lnproofs.certificates.vocab.load_vocab` read it."""
    from ..kernel import OptionError

    try:
        from torch_backend.certificates import recheck_certificate
        from torch_backend.vocab import recheck_vocab
    except ImportError as exc:
        raise OptionError(
            f"--numeric needs torch and the torch_backend package ({exc}); install torch==2.13.0 or drop --numeric"
        ) from None
    return (recheck_vocab if vocab else recheck_certificate)(keys, cert_json, device=device)


def _print_numeric(prefix: str, numeric) -> None:
    state = "agrees" if numeric.get("ok") else "DISAGREES"
    print(f"{prefix}numeric re-check on {numeric.get('device', '?')}: {state}")
    for line in numeric.get("messages", [])[:20]:
        print(f"  {line}")


def _keys(path, limits, reading=None):
    from ..certificates.keyfile import load_keys

    keys = load_keys(path, limits, reading)  # as the certificate's keys_reading says
    limits.check_dim(keys.shape[1], f"keys file {path}")
    return keys


def _model_file(path, limits) -> list:
    from ..kernel import CertificateFormatError, InputError
    from ..models.certify_model import model_file_certificates

    try:
        targets = model_file_certificates(path)
    except InputError:
        raise
    except (ValueError, TypeError, KeyError, AttributeError) as exc:  # arrays of the wrong shape or type
        raise CertificateFormatError(
            f"{path} could not be read as a certify-model file ({type(exc).__name__}: {str(exc)[:120]})"
        ) from None
    entries = sum(int(getattr(keys, "size", 0)) for _, _, keys in targets)
    for _, _, keys in targets:
        limits.check_dim(keys.shape[-1] if getattr(keys, "ndim", 0) else 0, f"{path}")
    limits.check_size(Path(path).stat().st_size, max(entries, 1), 1, f"{path}", f"the {entries} key entries it holds")
    return targets


@dataclass
class FileCheck:
    """One report on a file: ``label`` (a part of the file, or None), the kernel's ``report``, the
    ``numeric`` re-check (or None), a ``note`` printed after it and ``extra`` fields of its JSON."""

    label: str | None
    report: object
    numeric: dict | None = None
    note: str | None = None
    extra: dict = field(default_factory=dict)


def _their_keys(path, data, keys_arg, keys, limits):
    """The keys a file is about: the keys file it names (a given KEYS must match its SHA-256), or KEYS;
    read as its ``keys_reading`` says."""
    from ..certificates.keyfile import resolve_keys, validate_reference
    from ..kernel import OptionError

    reference = data.get("keys_file")
    if reference is not None:
        keys_path = resolve_keys(path, validate_reference(reference), keys_arg, limits.max_keys_file_bytes)
        return _keys(keys_path, limits, data.get("keys_reading")) if keys is None else keys
    if keys is None:
        raise OptionError(
            f"{path} holds no keys and names no keys file; give the KEYS file it is about (lnproofs check FILE KEYS)"
        )
    return keys


def _no_numeric(device, path, what: str) -> None:
    from ..kernel import OptionError

    if device is not None:
        raise OptionError(
            f"--numeric re-checks selectability and vocabulary certificates; drop it for {what} ({path}), "
            "whose claims the exact check covers"
        )


def _certificate(label, cert, keys, device) -> FileCheck:
    from ..certificates.check import check_certificate
    from ..kernel import OptionError

    if device is not None and cert.keys_from is not None:
        raise OptionError(
            "--numeric re-checks keys given as floats; this certificate is about the exact "
            "LayerNorm outputs of its inputs (keys_from), which the exact check covers: drop --numeric"
        )
    report = check_certificate(cert, keys)
    return FileCheck(label, report, None if device is None else _numeric(keys, cert.to_json(), device))


def _selectability(path, data, keys_arg, keys, limits, device, matmul=None) -> list[FileCheck]:
    from ..certificates.certificate import Certificate

    keys = _their_keys(path, data, keys_arg, keys, limits)
    limits.check_size(Path(path).stat().st_size, keys.shape[0], keys.shape[1], f"certificate file {path}")
    return [_certificate(None, Certificate.from_json(data), keys, device)]


def _causal(path, data, keys_arg, keys, limits, device, matmul=None) -> list[FileCheck]:
    from ..certificates.causal import check_record, describe_stops

    _no_numeric(device, path, "a causal record")
    report = check_record(data, _their_keys(path, data, keys_arg, keys, limits))
    claims = [{"index": v.index, "claim": v.status, "ok": v.ok} for v in report.verdicts]
    return [FileCheck(None, report, note=describe_stops(report), extra={"claims": claims})]


def _uniform(path, data, keys_arg, keys, limits, device, matmul=None) -> list[FileCheck]:
    from ..certificates.uniform import check_answer

    _no_numeric(device, path, "a uniform-attention answer")
    return [FileCheck(None, check_answer(data, _their_keys(path, data, keys_arg, keys, limits)))]


def _vocab(path, data, keys_arg, keys, limits, device, matmul=None) -> list[FileCheck]:
    from ..certificates.vocab import load_vocab, vocab_keys_path

    cert = load_vocab(path, data, limits)
    keys = _keys(vocab_keys_path(path, cert, keys_arg), limits, cert.keys_reading)
    numeric = None if device is None else _numeric(keys, cert, device, True)
    return [FileCheck(None, cert.check(keys, matmul), numeric)]


def _model(path, data, keys_arg, keys, limits, device, matmul=None) -> list[FileCheck]:
    from ..kernel import OptionError
    from ..models.certify_model import model_file_checks

    if keys_arg is not None:
        raise OptionError(f"{path} is a certify-model file ({data['schema']}) that holds its own keys; leave KEYS out")
    targets = _model_file(path, limits)
    checks = [FileCheck(label, report) for label, report in model_file_checks(path)]
    return checks + [_certificate(label, cert, keys, device) for label, cert, keys in targets]


def _handler(schema):
    """The one dispatch by schema: the check of each file kind lnproofs writes (None: not a certificate)."""
    from ..kernel import CAUSAL_SCHEMA, SELECTABILITY_SCHEMA, UNIFORM_SCHEMA, VOCAB_SCHEMA

    kinds = {
        SELECTABILITY_SCHEMA: _selectability,
        CAUSAL_SCHEMA: _causal,
        VOCAB_SCHEMA: _vocab,
        UNIFORM_SCHEMA: _uniform,
    }
    if not isinstance(schema, str):
        return None
    if schema in kinds:
        return kinds[schema]
    return _model if schema.startswith("lnproofs.model-") and schema not in _NOT_CERTIFICATES else None


def check_file(
    path, keys_arg, limits, device=None, *, skip_foreign: bool = False, matmul=None
) -> list[FileCheck] | None:
    """Every report on the file at ``path`` (``keys_arg``: the KEYS given, or None; ``device``: where to
    re-check numerically, or None; ``matmul``: the float filter's product in a vocabulary certificate's
    check, :func:`.execution_options.filter_product`), by the one dispatch on its schema; with
    ``skip_foreign``, None for a JSON file that is not a certificate of ours.  ``lnproofs check FILE`` and each file of
    ``lnproofs check DIR`` run this same code."""
    from ..certificates.certificate import Certificate
    from ..certificates.limits import read_json_file

    keys = _keys(keys_arg, limits) if keys_arg is not None else None
    data = read_json_file(path, limits, None if keys is None else limits.allowed_bytes(*keys.shape))
    reading = data.get("keys_reading") if isinstance(data, dict) else None
    if keys_arg is not None and reading is not None:  # KEYS read again as the file says it was read
        keys = _keys(keys_arg, limits, reading)
    handler = _handler(data.get("schema") if isinstance(data, dict) else None)
    if handler is None:
        if skip_foreign:
            return None
        Certificate.from_json(data)  # raises the schema's one-line error
    return handler(path, data, keys_arg, keys, limits, device, matmul)


def _json(check: FileCheck, name: str | None = None) -> dict:
    out = dict(check.report.to_json(), **check.extra)
    if check.numeric is not None:
        out["numeric"] = check.numeric
    if name is not None:
        out["name"] = name
    return out


def _print(check: FileCheck, prefix: str) -> None:
    print(f"{prefix}{check.report}")
    if check.note:
        print(check.note)
    if check.numeric is not None:
        _print_numeric(prefix, check.numeric)


def _numeric_device(args):
    return (args.device or "auto") if args.numeric else None


def _check_folder(folder: Path, args, limits) -> int:
    from tqdm import tqdm

    from ..kernel import InputError, LnproofsError, OptionError

    if args.keys is not None:
        raise OptionError(f"{folder} is a folder: each certificate in it names or holds its keys; leave KEYS out")
    files, entries, not_followed = _folder_entries(folder)
    matmul = filter_product(args.device)
    counts = {"checked": 0, "held": 0, "refuted": 0, "unreadable": 0, "internal": 0, "skipped": 0}
    rows, unreadable = [], []

    def refuse(name: str, reason: str) -> None:
        counts["checked"] += 1
        counts["unreadable"] += 1
        unreadable.append(name)
        rows.append({"file": name, "status": "unreadable", "reason": reason})
        if not args.json:
            print(f"{name}: unreadable: {reason}")

    for name, reason in entries:
        refuse(name, reason)
    for name, reason in not_followed:
        rows.append({"file": name, "status": "skipped", "reason": reason})
        if not args.json:
            print(f"{name}: skipped: {reason}")
    for path in tqdm(files, desc="certificates", unit="file", disable=not sys.stderr.isatty(), leave=False):
        try:
            checks = check_file(path, None, limits, _numeric_device(args), skip_foreign=True, matmul=matmul)
            if checks is None:
                why = _near_miss(_read_quietly(path, limits))
                if why is not None:
                    refuse(str(path), why)
                else:
                    counts["skipped"] += 1
                continue
        except (LnproofsError, InputError, OSError) as err:
            refuse(str(path), str(err) if isinstance(err, LnproofsError) else f"cannot be read ({err})")
            continue
        except Exception as err:  # a bug of ours: counted, reported, and the rest checked
            counts["checked"] += 1
            counts["internal"] += 1
            reason = f"{type(err).__name__}: {' '.join(str(err).split())[:200]}"
            rows.append({"file": str(path), "status": "internal error", "reason": reason})
            print(f"{path}: internal error: {reason}", file=sys.stderr)
            continue
        counts["checked"] += 1
        ok = all(c.report.ok and (c.numeric is None or bool(c.numeric.get("ok"))) for c in checks)
        counts["held" if ok else "refuted"] += 1
        outputs = [_json(c, None if c.label is None else f"{path} {c.label}") for c in checks]
        rows.append({"file": str(path), "status": "holds" if ok else "refuted", "checks": outputs})
        if not args.json:
            for c in checks:
                _print(c, f"{path}: " if c.label is None else f"{path} {c.label}: ")
    if counts["checked"] == 0:
        raise OptionError(f"{folder} holds no certificate (no .json file with a lnproofs schema under it)")
    summary = (
        f"checked {counts['checked']} certificate file{'s' if counts['checked'] != 1 else ''} under {folder}: "
        f"{counts['held']} held, {counts['refuted']} refuted, {counts['unreadable']} unreadable"
        + (f", {counts['internal']} internal errors" if counts["internal"] else "")
        + (f" ({counts['skipped']} other JSON files skipped)" if counts["skipped"] else "")
        + (
            f"; unreadable: {', '.join(unreadable[:5])}"
            + (f" and {len(unreadable) - 5} more" if len(unreadable) > 5 else "")
            if unreadable
            else ""
        )
        + (f"; not followed: {', '.join(name for name, _ in not_followed[:5])}" if not_followed else "")
    )
    if args.json:
        print(json.dumps({"summary": counts, "files": rows}, default=str))
    else:
        print(summary)
    if unreadable:  # the bad input, in one line on stderr as for one file
        first = next(r["reason"] for r in rows if r["status"] == "unreadable")
        print(
            f"lnproofs check: error: {len(unreadable)} unreadable under {folder}: {', '.join(unreadable[:5])}"
            + (f" and {len(unreadable) - 5} more" if len(unreadable) > 5 else "")
            + f" (the first: {first})",
            file=sys.stderr,
        )
    if counts["internal"]:
        return 3
    return 1 if counts["refuted"] else 2 if counts["unreadable"] else 0


def _read_quietly(path, limits):
    """The JSON of a file already read once within ``limits`` (None if it cannot be read again)."""
    from ..certificates.limits import read_json_file
    from ..kernel import LnproofsError

    try:
        return read_json_file(path, limits)
    except (LnproofsError, OSError):
        return None


def run(args) -> int:
    limits = _limits(args)
    path = Path(args.certificate)
    if path.is_dir():
        return _check_folder(path, args, limits)
    checks = check_file(path, args.keys, limits, _numeric_device(args), matmul=filter_product(args.device))
    if args.json:
        outputs = [_json(c, c.label) for c in checks]
        print(json.dumps(outputs[0] if len(outputs) == 1 and checks[0].label is None else outputs, default=str))
    else:
        for c in checks:
            _print(c, "" if c.label is None else f"{c.label}: ")
    return 0 if all(c.report.ok and (c.numeric is None or bool(c.numeric.get("ok"))) for c in checks) else 1
