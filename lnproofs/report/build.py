"""The proof report: a model built once, written as Markdown and LaTeX (and PDF).

:func:`build_report` proves every theorem (each step checked by SymPy), runs the
numeric re-check of :mod:`torch_backend` when torch is installed, draws the figures
and, given keys, certifies them.  :func:`write_report` writes ``report.md``,
``report.tex`` (and ``report.pdf`` when ``pdflatex`` is installed) and the figures.

Reports are deterministic: the same inputs give the same bytes except for the single
line that starts with ``Generated:`` (set ``SOURCE_DATE_EPOCH`` to fix it too).  Seeds
are fixed, and figures carry no software or date metadata.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import shutil
import subprocess
from pathlib import Path

import numpy as np

from ..kernel.errors import InputError, OptionError, require
from .model import CONVENTIONS, Figure, KeySection, Recheck, Report

__all__ = [
    "DEFAULT_N",
    "DEFAULT_SAMPLES",
    "CONVENTIONS",
    "Figure",
    "Recheck",
    "KeySection",
    "Report",
    "build_report",
    "write_report",
    "generated_line",
]

DEFAULT_N = 4
DEFAULT_SAMPLES = 512
#: the n = 3 example of the figures: gain and bias of the LayerNorm whose image is drawn
EXAMPLE_GAIN = (1.6, 1.0, 0.5)
EXAMPLE_BIAS = (0.5, 0.0, -0.3)


def generated_line(now: _dt.datetime | None = None) -> str:
    """The one line that may differ between two runs with the same inputs."""
    if now is None:
        epoch = os.environ.get("SOURCE_DATE_EPOCH")
        if epoch and epoch.strip().isdigit():
            now = _dt.datetime.fromtimestamp(int(epoch), tz=_dt.timezone.utc)
        else:
            now = _dt.datetime.now(tz=_dt.timezone.utc)
    return "Generated: " + now.strftime("%Y-%m-%d %H:%M:%S UTC")


def _versions(torch_version: str | None) -> tuple:
    import matplotlib
    import scipy
    import sympy

    from .. import __version__

    out = [("lnproofs", __version__), ("Python", platform.python_version()), ("NumPy", np.__version__),
           ("SciPy", scipy.__version__), ("SymPy", sympy.__version__), ("matplotlib", matplotlib.__version__)]
    try:
        import flint

        out.append(("python-flint", flint.__version__))
    except ImportError:
        pass
    out.append(("PyTorch", torch_version or "not installed"))
    return tuple(out)


def _rechecks(n: int, samples: int, device: str, seed: int):
    """(name -> Recheck, note, torch version or None)."""
    try:
        from torch_backend.theorems import run_seeded_checks
    except ImportError:
        return {}, "PyTorch is not installed, so the numeric re-check was skipped.", None
    width = max(n, 4)
    results, torch_version = run_seeded_checks(width=width, samples=samples, device=device, seed=seed)
    checks = {r.name: Recheck.from_result(r) for r in results}
    label = next(iter(checks.values())).device if checks else device
    note = (f"Each theorem was re-checked numerically with PyTorch {torch_version} in float64 on {label}: "
            f"random and adversarial inputs of width {width} (and the small widths 2 and 3), seed {seed}. "
            "A re-check is evidence, not proof; the proofs above are the SymPy-checked steps.")
    return checks, note, torch_version


# ----------------------------------------------------------------------- figures
def _example_figures(folder: Path, prefix: str, seed: int) -> list[Figure]:
    from ..experiments import figures
    from ..propose.certification import certify
    from ..experiments.demo import demo_state
    from ..derive.numeric import ellipsoid, layernorm

    out = []
    rng = np.random.default_rng([seed, 3])
    inputs = rng.standard_normal((10, 3)) * 1.1 + np.array([0.6, 0.6, 0.6])
    gain, bias = np.array(EXAMPLE_GAIN), np.array(EXAMPLE_BIAS)
    figures.layernorm_geometry(folder / "layernorm_n3.png", inputs, layernorm(inputs), layernorm(inputs, gain, bias),
                               gain, bias)
    out.append(Figure(f"{prefix}layernorm_n3.png",
                      r"$n = 3$: sample inputs (grey), the plane orthogonal to $(1, 1, 1)$, the circle of radius "
                      r"$\sqrt{3}$ that LayerNorm maps onto (left) and the ellipse after the gain and bias (right)."))
    info = ellipsoid(gain, bias)
    figures.ellipse_axes(folder / "ellipse_axes.png", info.center, info.normal, info.axes, info.semi_axes, gain)
    semi = ", ".join(f"{s:.4f}" for s in info.semi_axes)
    out.append(Figure(f"{prefix}ellipse_axes.png",
                      f"The image of LayerNorm with gain {EXAMPLE_GAIN}: principal axes (eigenvectors of "
                      r"$\operatorname{diag}(a) P \operatorname{diag}(a)$) and semi-axes " + f"{semi}."))
    # 2-D keys: a square with an edge midpoint (tie-only), an interior point (unselectable) and more
    keys2 = np.array([[1.0, 1.0], [-1.0, 1.0], [-1.0, -1.0], [1.0, -1.0], [1.0, 0.0], [0.25, -0.3],
                      [0.0, 1.6], [-1.5, 0.2]])
    cert2 = certify(keys2, seed=seed)
    figures.keys_hull(folder / "keys_2d.png", keys2, cert2.statuses, [r.witness for r in cert2.results],
                      title="Eight keys in 2-D: certified statuses")
    out.append(Figure(f"{prefix}keys_2d.png",
                      "Keys in 2-D with their convex hull; the status of every key is certified ($k_4$, the midpoint "
                      "of an edge, can only tie; $k_5$ lies strictly inside). Arrows show witness query directions."))
    corners = np.array([[x, y, z] for x in (-1.0, 1.0) for y in (-1.0, 1.0) for z in (-1.0, 1.0)])
    keys3 = np.vstack([corners, [[0.0, 0.0, 1.0], [0.2, -0.1, 0.3], [-0.3, 0.4, -0.5], [0.0, 1.7, 0.2],
                                 [1.6, -0.2, -0.1]]])
    cert3 = certify(keys3, seed=seed)
    figures.keys_hull(folder / "keys_3d.png", keys3, cert3.statuses, [r.witness for r in cert3.results],
                      title="Keys in 3-D: certified statuses")
    out.append(Figure(f"{prefix}keys_3d.png",
                      "Keys in 3-D: the corners of a cube, the centre of a face (tie-only), two interior points "
                      "(unselectable), two points outside the cube, and witness query directions."))
    state = demo_state(45.0, 3.0, projection=False, scaling=False, query_length=3.0)
    figures.attention_bars(folder / "attention_weights.png", state.weights, highlight=1,
                           labels=["key 1", "key 2", "key 3", "key 4"],
                           title="Query pointing at key 2 (45 degrees), key 3 magnitude 3")
    out.append(Figure(f"{prefix}attention_weights.png",
                      "Softmax attention weights of the demo keys (key 3 scaled by 3) for the query of length 3 "
                      "pointing at key 2: key 2 is inside the hull and does not win even here."))
    return out


def _margin(keys: np.ndarray, i: int, witness) -> float | None:
    if witness is None:
        return None
    q = np.array([float(x) for x in witness])
    norm = float(np.linalg.norm(q))
    if norm == 0:
        return None
    scores = keys @ q / norm
    others = np.delete(scores, i)
    return float(scores[i] - others.max()) if others.size else None


def _fmt_weight(w) -> str:
    """Exact "p/q" when short; otherwise a decimal (the exact value is in the certificate file)."""
    from ..certificates.writers import format_fraction

    text = format_fraction(w)
    return text if len(text) <= 21 else f"~{float(w):.6g}"


def _evidence(result) -> str:
    if result.status in ("unselectable", "tie-only") and result.combination is not None:
        terms = ", ".join(f"k{j}: {_fmt_weight(w)}" for j, w in zip(result.combination.indices,
                                                                    result.combination.weights))
        text = f"convex weights {{{terms}}}"
        if result.status == "tie-only" and result.witness is not None:
            text += "; tying query (" + ", ".join(f"{float(x):.4g}" for x in result.witness) + ")"
        return text
    return result.reason or "no certificate"


def _load_keys(path) -> np.ndarray:
    from ..io.arrays import load_array

    keys = load_array(path, name="keys", ndim=2)
    require(keys.shape[0] >= 2, InputError, f"--keys {path} holds {keys.shape[0]} key; give at least 2 keys")
    return keys


def _key_section(path, keys: np.ndarray, folder: Path, prefix: str, seed: int) -> KeySection:
    from ..experiments import figures
    from ..propose.certification import certify
    from ..certificates.check import check_certificate

    cert = certify(keys, seed=seed)
    report = check_certificate(cert, keys)
    cert_file = folder.parent / "certificate.json"
    cert.with_keys_file(cert_file, path).save(cert_file, indent=1)      # names the keys file and its SHA-256
    rows = tuple((r.index, r.status, _evidence(r)) for r in cert.results if r.status != "selectable")
    margins = tuple(m for r in cert.results if r.status == "selectable"
                    for m in [_margin(keys, r.index, r.witness)] if m is not None)
    figs = []
    figures.margin_histogram(folder / "keys_margins.png", margins)
    figs.append(Figure(f"{prefix}keys_margins.png",
                       r"Witness margins of the selectable keys: $\min_{j \ne i} q \cdot (k_i - k_j) / \|q\|$ "
                       "(floating point, for display; the statuses themselves are exact)."))
    view = "first three principal components" if keys.shape[1] > 3 else f"{keys.shape[1]}-D"
    witnesses = [r.witness if r.status == "selectable" else None for r in cert.results]
    figures.keys_hull(folder / "keys_view.png", keys, cert.statuses, witnesses,
                      title=f"{keys.shape[0]} keys in R^{keys.shape[1]}")
    figs.append(Figure(f"{prefix}keys_view.png", f"The given keys ({view}) with their certified statuses."))
    return KeySection(str(Path(path).name), keys.shape[0], keys.shape[1], dict(cert.summary), report.ok, rows,
                      margins, tuple(figs), cert_file.name)


# ------------------------------------------------------------------------- build
def _check_options(n, convention, samples):
    require(not isinstance(n, bool) and isinstance(n, int), OptionError,
            f"--n {n!r} is not an integer; give a width n >= 2")
    require(n >= 2, OptionError, f"--n {n} is too small; give a width n >= 2")
    require(n <= 12, OptionError, f"--n {n} is too large for symbolic proofs in a report; give 2 <= n <= 12")
    require(convention in CONVENTIONS, OptionError,
            f"convention {convention!r} is not known; accepted: {', '.join(CONVENTIONS)}")
    require(isinstance(samples, int) and samples >= 16, OptionError,
            f"--samples {samples!r} is not accepted; give an integer >= 16")


def _prepare_out(out) -> Path:
    out = Path(out)
    try:
        (out / "figures").mkdir(parents=True, exist_ok=True)
        probe = out / ".write-test"
        probe.write_text("", encoding="utf-8")
        probe.unlink()
    except OSError as err:
        raise OptionError(f"cannot write the report to {str(out)!r}: {err.strerror or err}; "
                          "give a writable --out folder") from None
    return out


def build_report(out="reports", *, n: int = DEFAULT_N, convention: str = "torch", keys=None,
                 recheck: bool = True, samples: int = DEFAULT_SAMPLES, device: str = "auto",
                 seed: int = 0, experiments=None) -> Report:
    """Prove, re-check, draw and certify; figures are written under ``out/figures``.
    ``experiments``: the folder of ``lnproofs reproduce majority / lm-tables`` (default
    ``out/experiments``, included when it holds a ``summary.md``)."""
    from ..derive.registry import prove_all

    _check_options(n, convention, samples)
    key_array = _load_keys(keys) if keys is not None else None
    out = _prepare_out(out)
    folder = out / "figures"
    proofs = tuple(prove_all(n, convention))
    if recheck:
        checks, note, torch_version = _rechecks(n, samples, device, seed)
    else:
        checks, note, torch_version = {}, "The numeric re-check was not requested (--no-recheck).", None
        try:
            import importlib.metadata as md

            torch_version = md.version("torch")
        except Exception:
            torch_version = None
    names = {p.name for p in proofs}
    orphans = sorted(set(checks) - names)
    if orphans:
        checks = {k: v for k, v in checks.items() if k in names}
        note += (" Numeric checks whose theorem is not in this report were left out: "
                 + ", ".join(orphans) + ".")
    figs = tuple(_example_figures(folder, "figures/", seed))
    section = _key_section(keys, key_array, folder, "figures/", seed) if keys is not None else None
    from .experiments import read_experiments

    exp_folder = Path(experiments) if experiments is not None else out / "experiments"
    if experiments is not None and not (exp_folder / "summary.md").is_file():
        raise OptionError(f"--experiments {str(exp_folder)!r} holds no summary.md; give the folder that "
                          "'lnproofs reproduce majority' or 'lnproofs reproduce lm-tables' wrote")
    return Report(n=n, convention=convention, generated=generated_line(), versions=_versions(torch_version),
                  proofs=proofs, rechecks=checks, recheck_note=note, figures=figs, keys=section,
                  experiments=read_experiments(exp_folder, out))


def _compile_pdf(tex: Path) -> tuple[Path | None, str]:
    exe = shutil.which("pdflatex")
    if exe is None:
        return None, "pdflatex is not installed; report.tex was written but not compiled"
    for _ in range(2):  # twice, so references settle
        proc = subprocess.run([exe, "-interaction=nonstopmode", "-halt-on-error", tex.name], cwd=tex.parent,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                              env={**os.environ, "SOURCE_DATE_EPOCH": os.environ.get("SOURCE_DATE_EPOCH", "0"),
                                   "FORCE_SOURCE_DATE": "1"})
        if proc.returncode != 0:
            tail = " | ".join(line for line in proc.stdout.splitlines() if line.startswith("!"))[:300]
            return None, f"pdflatex failed on {tex.name}: {tail or 'see report.log'}"
    for suffix in (".aux", ".out", ".log"):
        tex.with_suffix(suffix).unlink(missing_ok=True)
    return tex.with_suffix(".pdf"), "compiled with pdflatex"


def write_report(report: Report, out="reports", *, pdf: bool = True) -> dict:
    """Write report.md and report.tex (and report.pdf with pdflatex) into ``out``."""
    from .latex import to_latex
    from .markdown import to_markdown

    out = _prepare_out(out)
    md = out / "report.md"
    tex = out / "report.tex"
    try:
        md.write_text(to_markdown(report), encoding="utf-8")
        tex.write_text(to_latex(report), encoding="utf-8")
    except OSError as err:
        raise OptionError(f"cannot write the report to {str(out)!r}: {err.strerror or err}") from None
    written = {"markdown": str(md), "latex": str(tex), "pdf": None, "pdf_note": "no PDF: --no-pdf was given"}
    if pdf:
        path, note = _compile_pdf(tex)
        written["pdf"] = None if path is None else str(path)
        written["pdf_note"] = note
    return written


