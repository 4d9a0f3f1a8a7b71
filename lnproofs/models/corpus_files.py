"""The files of a corpus run (``certify-model``) beside the certification: a finished text's
record put together from its layers and its heads' coverage moved to the run's coverage files,
the texts of a corpus, the run's parameters (``params.npz``), and what a resumed run finds.

A resumed run meets the texts already in its folder as proposals: a text is kept only when it
was made from the same tokens with the same options and the same weights (``options.weights``,
the SHA-256 of every chosen layer's norm, query and key weights: :func:`weights_digest`), and
the kernel holds every claim it makes (what ``lnproofs check`` runs on it:
:mod:`lnproofs.models.text_check`); a text of other tokens, options or weights is made again,
and a text whose claims do not hold is refused in one line.  A folder whose ``params.npz``
holds other weights is refused in one line on ``resume`` (it is another model's run) and
rewritten otherwise.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from ..certificates.writes import write_arrays
from ..kernel import InputError, OptionError
from .corpus_heads import _write_json
from .text_heads import COVERAGE_SCHEMA, TEXT_SCHEMA, coverage_name

__all__ = ["merge_layers", "texts_of_corpus", "coverage_files", "finished_text", "weights_digest", "write_params"]


def merge_layers(number, text, parts):
    """A text's record, rows and arrays from its layers' parts (in layer order)."""
    record, rows, arrays = None, {}, {}
    for part_record, part_rows, part_arrays in parts:
        if record is None:
            record = dict(part_record, text=text)
        else:
            record["layers"].extend(part_record["layers"])
            record["heads"].extend(part_record["heads"])
        for name, values in part_rows.items():
            rows.setdefault(name, []).extend(values)
        arrays.update(part_arrays)
    return record, rows, arrays


def texts_of_corpus(corpus, max_texts):
    """``(number, text, ids or None)``: from a corpus path, or from a list of ``(text, ids)``."""
    if isinstance(corpus, (list, tuple)):
        for number, (text, ids) in enumerate(corpus[:max_texts] if max_texts else corpus):
            yield number, text, ids
        return
    from ..io.corpus import iter_corpus

    for number, text in iter_corpus(corpus, max_texts=max_texts):
        yield number, text, None


def coverage_files(out: Path, record: dict, covered: set) -> None:
    """Move each head's coverage evidence out of ``record`` into the run's coverage file (written
    once per head and run: the same evidence for every text), leaving the file's name."""
    for entry in record["heads"]:
        real = entry.get("realisable") or {}
        if isinstance(real.get("coverage"), dict):
            layer, head = entry["layer"], entry["head"]
            if (layer, head) not in covered:
                _write_json(
                    out / coverage_name(layer, head),
                    {"schema": COVERAGE_SCHEMA, "layer": layer, "head": head, "coverage": real["coverage"]},
                )
                covered.add((layer, head))
            real["coverage"] = coverage_name(layer, head)


def finished_text(path: Path, options, ids) -> bool:
    """Whether ``path`` holds a finished text made with these options (weights included) from these
    tokens whose every claim holds (the kernel's check, as ``lnproofs check`` runs it); a text of
    this run whose claims do not hold is refused in one line."""
    from ..certificates.check import check_certificate
    from ..certificates.limits import read_json_file
    from .text_check import text_file_certificates, text_file_checks

    if not path.exists() and not path.is_symlink():
        return False
    try:
        data = read_json_file(path)
    except InputError:
        return False  # cut short by an interruption, say: made again
    if not (
        isinstance(data, dict)
        and data.get("schema") == TEXT_SCHEMA
        and data.get("options") == options
        and data.get("tokens") == [int(i) for i in ids]
    ):
        return False
    try:  # what 'lnproofs check' runs on a text file: its certificates, coverage and causal records
        reports = [(name, check_certificate(cert, keys)) for name, cert, keys in text_file_certificates(path, data)]
        failed = [(name, report) for name, report in reports + text_file_checks(path, data) if not report.ok]
    except InputError as err:
        failed = [("its files", str(err))]
    if failed:
        name, report = failed[0]
        why = str(report).splitlines()[-1].strip() if not isinstance(report, str) else report
        raise OptionError(
            f"--resume: {path} does not hold ({name}: {why[:160]}); delete it, or drop --resume to start over"
        )
    return True


def _weights(captures, fold: bool) -> dict:
    from .head_sets import params_arrays

    if fold:
        from .folding import fold_capture

        captures = {layer: fold_capture(cap) for layer, cap in captures.items()}
    return {"folded": np.array(bool(fold)), **params_arrays(captures)}


def weights_digest(captures, fold: bool = False) -> str:
    """The SHA-256 of the weights a run's texts depend on at its chosen layers: every array of
    ``params.npz`` (norm, ``W_q``, ``b_q``, head layout) and each layer's ``W_k`` and ``b_k``."""
    digest = hashlib.sha256()
    arrays = _weights(captures, fold)
    for layer, cap in sorted(captures.items()):
        for name in ("W_k", "b_k"):
            if getattr(cap, name, None) is not None:
                arrays[f"l{layer}_{name}"] = np.asarray(getattr(cap, name), dtype=np.float64)
    for name in sorted(arrays):
        value = np.ascontiguousarray(arrays[name])
        digest.update(f"{name}:{value.dtype.str}:{value.shape};".encode())
        digest.update(value.tobytes())
    return digest.hexdigest()


def write_params(path: Path, captures, fold: bool = False, resume: bool = False) -> None:
    """Write the run's ``params.npz`` (kept when it already holds the same arrays); on ``resume``
    a ``params.npz`` of other weights is refused in one line: the folder is another model's run."""
    from ..io.bounded import read_npz

    arrays = _weights(captures, fold)
    if path.exists() or path.is_symlink():
        old = read_npz(path)
        if set(arrays) <= set(old) and all(np.array_equal(old[k], v) for k, v in arrays.items()):
            return
        if resume:
            raise OptionError(
                f"--resume: {path} holds other weights than this model's at these layers: the folder is "
                "another run's; resume a run of the same model, or drop --resume (or choose another --out)"
            )
    write_arrays(path, arrays)
