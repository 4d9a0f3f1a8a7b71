"""The proof report: a model built once, written as Markdown and LaTeX (and PDF).

:func:`build_report` proves every theorem (each step checked by SymPy), runs the
numeric re-check of :mod:`torch_backend` when torch is installed, draws the figures
and, given keys, certifies them.  :func:`write_report` writes ``report.md``,
``report.tex`` (and ``report.pdf`` when ``pdflatex`` is installed) and the figures.

Reports are deterministic: the same inputs give the same bytes except for the single
comment line that holds ``Generated:`` (set ``SOURCE_DATE_EPOCH`` to fix it too); the build
date is not printed on any page, it is the PDF's creation date.  Seeds are fixed, and
figures carry no software or date metadata.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import shutil
import subprocess
from pathlib import Path

import numpy as np

from ..certificates.writes import folder_entry, output_folder, write_text
from ..kernel import InputError, OptionError, require
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

    out = [
        ("lnproofs", __version__),
        ("Python", platform.python_version()),
        ("NumPy", np.__version__),
        ("SciPy", scipy.__version__),
        ("SymPy", sympy.__version__),
        ("matplotlib", matplotlib.__version__),
    ]
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
        return {}, "PyTorch is not installed, so the numeric re-check was not run.", None
    width = max(n, 4)
    results, torch_version = run_seeded_checks(width=width, samples=samples, device=device, seed=seed)
    checks = {r.name: Recheck.from_result(r) for r in results}
    label = next(iter(checks.values())).device if checks else device
    where = "the CPU" if label == "cpu" else ("a GPU" if str(label).startswith("cuda") else str(label))
    note = (
        f"Each result was re-checked numerically with PyTorch {torch_version} in double precision on {where}: "
        f"random and adversarial inputs of width {width} (and the small widths 2 and 3), seed {seed}. "
        "A re-check is evidence, not proof; the proofs are the checked steps."
    )
    return checks, note, torch_version


# ----------------------------------------------------------------------- figures
def _example_figures(folder: Path, prefix: str, seed: int) -> list[Figure]:
    from ..derive.numeric import ellipsoid, layernorm
    from ..experiments import figures, key_figures
    from ..experiments.demo import demo_state
    from ..propose.certification import certify

    out = []
    rng = np.random.default_rng([seed, 3])
    inputs = rng.standard_normal((10, 3)) * 1.1 + np.array([0.6, 0.6, 0.6])
    gain, bias = np.array(EXAMPLE_GAIN), np.array(EXAMPLE_BIAS)
    figures.layernorm_geometry(
        folder / "layernorm_n3.png", inputs, layernorm(inputs), layernorm(inputs, gain, bias), gain, bias
    )
    out.append(
        Figure(
            f"{prefix}layernorm_n3.png",
            r"LayerNorm for $n = 3$. Left: sample inputs (grey), the plane orthogonal to $(1, 1, 1)$ and "
            r"the circle of radius $\sqrt{3}$ onto which projection and scaling map them. Right: the "
            r"ellipse that the gain and bias make of the circle.",
        )
    )
    info = ellipsoid(gain, bias)
    figures.ellipse_axes(folder / "ellipse_axes.png", info.center, info.normal, info.axes, info.semi_axes, gain)
    semi = ", ".join(f"{s:.4f}" for s in info.semi_axes)
    out.append(
        Figure(
            f"{prefix}ellipse_axes.png",
            "The image of LayerNorm with gain $a = (" + ", ".join(f"{g:g}" for g in EXAMPLE_GAIN) + ")$: its "
            r"principal axes are the eigenvectors of $\operatorname{diag}(a) P \operatorname{diag}(a)$, "
            "and its semi-axes " + semi + r" are $\sqrt{n\lambda}$ for the non-zero eigenvalues "
            r"$\lambda$.",
        )
    )
    # 2-D keys: a square with an edge midpoint (tie-only), an interior point (unselectable) and more
    keys2 = np.array(
        [[1.0, 1.0], [-1.0, 1.0], [-1.0, -1.0], [1.0, -1.0], [1.0, 0.0], [0.25, -0.3], [0.0, 1.6], [-1.5, 0.2]]
    )
    cert2 = certify(keys2, seed=seed)
    key_figures.keys_hull(
        folder / "keys_2d.png",
        keys2,
        cert2.statuses,
        [r.witness for r in cert2.results],
    )
    out.append(
        Figure(
            f"{prefix}keys_2d.png",
            "Eight keys in two dimensions with their convex hull and the certified status of each: $k_4$, "
            "the midpoint of an edge, can only tie, and $k_5$, strictly inside, is unselectable. The "
            "arrows are the witness queries of the selectable keys.",
        )
    )
    corners = np.array([[x, y, z] for x in (-1.0, 1.0) for y in (-1.0, 1.0) for z in (-1.0, 1.0)])
    keys3 = np.vstack(
        [corners, [[0.0, 0.0, 1.0], [0.2, -0.1, 0.3], [-0.3, 0.4, -0.5], [0.0, 1.7, 0.2], [1.6, -0.2, -0.1]]]
    )
    cert3 = certify(keys3, seed=seed)
    key_figures.keys_hull(
        folder / "keys_3d.png",
        keys3,
        cert3.statuses,
        [r.witness for r in cert3.results],
    )
    out.append(
        Figure(
            f"{prefix}keys_3d.png",
            "Keys in three dimensions: the corners of a cube, the centre of a face (tie-only), two "
            "interior points (unselectable) and two points outside the cube, with the witness queries.",
        )
    )
    state = demo_state(45.0, 3.0, projection=False, scaling=False, query_length=3.0)
    key_figures.attention_bars(
        folder / "attention_weights.png",
        state.weights,
        highlight=1,
        labels=["key 1", "key 2", "key 3", "key 4"],
    )
    out.append(
        Figure(
            f"{prefix}attention_weights.png",
            "Softmax attention weights of the four keys of the example of Brody, Alon and Yahav, key 3 "
            "scaled by 3, for a query of length 3 pointing at key 2: key 2 lies inside the hull of the "
            "others and does not win even under the query aimed at it.",
        )
    )
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
        terms = ", ".join(
            f"k{j}: {_fmt_weight(w)}" for j, w in zip(result.combination.indices, result.combination.weights)
        )
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
    from ..certificates.check import check_certificate
    from ..experiments import key_figures
    from ..propose.certification import certify

    cert = certify(keys, seed=seed)
    report = check_certificate(cert, keys)
    cert_file = folder.parent / "certificate.json"
    cert.with_keys_file(cert_file, path).save(cert_file, indent=1)  # names the keys file and its SHA-256
    rows = tuple((r.index, r.status, _evidence(r)) for r in cert.results if r.status != "selectable")
    margins = tuple(
        m
        for r in cert.results
        if r.status == "selectable"
        for m in [_margin(keys, r.index, r.witness)]
        if m is not None
    )
    figs = []
    key_figures.margin_histogram(folder / "keys_margins.png", margins)
    figs.append(
        Figure(
            f"{prefix}keys_margins.png",
            r"Witness margins of the selectable keys: $\min_{j \ne i} q \cdot (k_i - k_j) / \|q\|$ "
            "(floating point, for display; the statuses themselves are exact).",
        )
    )
    view = "first three principal components" if keys.shape[1] > 3 else f"{keys.shape[1]}-D"
    witnesses = [r.witness if r.status == "selectable" else None for r in cert.results]
    key_figures.keys_hull(folder / "keys_view.png", keys, cert.statuses, witnesses)
    figs.append(Figure(f"{prefix}keys_view.png", f"The given keys ({view}) with their certified statuses."))
    return KeySection(
        str(Path(path).name),
        keys.shape[0],
        keys.shape[1],
        dict(cert.summary),
        report.ok,
        rows,
        margins,
        tuple(figs),
        cert_file.name,
    )


# ------------------------------------------------------------------------- build
def _check_options(n, convention, samples):
    require(
        not isinstance(n, bool) and isinstance(n, int), OptionError, f"--n {n!r} is not an integer; give a width n >= 2"
    )
    require(n >= 2, OptionError, f"--n {n} is too small; give a width n >= 2")
    require(n <= 12, OptionError, f"--n {n} is too large for symbolic proofs in a report; give 2 <= n <= 12")
    require(
        convention in CONVENTIONS,
        OptionError,
        f"convention {convention!r} is not known; accepted: {', '.join(CONVENTIONS)}",
    )
    require(
        isinstance(samples, int) and samples >= 16,
        OptionError,
        f"--samples {samples!r} is not accepted; give an integer >= 16",
    )


def _prepare_out(out) -> Path:
    out = output_folder(out)
    folder_entry(out, "figures", folder=True)
    if not os.access(out, os.W_OK):
        raise OptionError(f"cannot write the report to {str(out)!r}: permission denied; give a writable --out folder")
    return out


def build_report(
    out="reports",
    *,
    n: int = DEFAULT_N,
    convention: str = "torch",
    keys=None,
    recheck: bool = True,
    samples: int = DEFAULT_SAMPLES,
    device: str = "auto",
    seed: int = 0,
    experiments=None,
) -> Report:
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
        checks, note, torch_version = {}, "The numeric re-check was not run for this report.", None
        try:
            import importlib.metadata as md

            torch_version = md.version("torch")
        except Exception:
            torch_version = None
    names = {p.name for p in proofs}
    orphans = sorted(set(checks) - names)
    if orphans:
        checks = {k: v for k, v in checks.items() if k in names}
        note += f" {len(orphans)} numeric checks of results not in this report were left out."
    figs = tuple(_example_figures(folder, "figures/", seed))
    section = _key_section(keys, key_array, folder, "figures/", seed) if keys is not None else None
    from .experiments import read_experiments

    exp_folder = Path(experiments) if experiments is not None else out / "experiments"
    from .experiments import has_results

    if experiments is not None and not has_results(exp_folder):
        raise OptionError(
            f"--experiments {str(exp_folder)!r} holds no experiment results (majority/summary.json, "
            "majority_paper/summary.json or lm_tables/summary.json); give the folder that "
            "'lnproofs reproduce majority' or 'lnproofs reproduce lm-tables' wrote"
        )
    return Report(
        n=n,
        convention=convention,
        generated=generated_line(),
        versions=_versions(torch_version),
        proofs=proofs,
        rechecks=checks,
        recheck_note=note,
        figures=figs,
        keys=section,
        experiments=read_experiments(exp_folder, out),
    )


def _epoch(generated: str) -> str:
    """The build time of a ``Generated:`` line as seconds since 1970 (the PDF's creation date)."""
    try:
        when = _dt.datetime.strptime(generated, "Generated: %Y-%m-%d %H:%M:%S UTC")
    except ValueError:
        return "0"
    return str(int(when.replace(tzinfo=_dt.timezone.utc).timestamp()))


def _compile_pdf(tex: Path, epoch: str | None = None) -> tuple[Path | None, str]:
    """pdflatex, bibtex (for the references in ``report.bib``), then pdflatex twice; the PDF's
    dates are ``epoch`` (seconds since 1970; default ``SOURCE_DATE_EPOCH``, else 0)."""
    exe, bib = shutil.which("pdflatex"), shutil.which("bibtex")
    if exe is None:
        return None, "pdflatex is not installed; report.tex was written but not compiled"
    if bib is None:
        return None, "bibtex is not installed; report.tex was written but not compiled"
    for suffix in (
        ".pdf",
        ".log",
        ".aux",
        ".out",
        ".toc",
        ".bbl",
        ".blg",
        ".lof",
        ".lot",
    ):  # only regular files are replaced
        folder_entry(tex.parent, tex.stem + suffix)
    epoch = epoch or os.environ.get("SOURCE_DATE_EPOCH", "0")
    env = {**os.environ, "SOURCE_DATE_EPOCH": epoch, "FORCE_SOURCE_DATE": "1"}
    for command in ([exe], [bib], [exe], [exe]):
        args = command + (["-interaction=nonstopmode", "-halt-on-error", tex.name] if command[0] == exe else [tex.stem])
        proc = subprocess.run(
            args, cwd=tex.parent, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace", env=env
        )
        if proc.returncode != 0:
            tail = " | ".join(line for line in proc.stdout.splitlines() if line.startswith(("!", "I couldn't")))
            return None, f"{Path(command[0]).name} failed on {tex.name}: {tail[:300] or 'see report.log'}"
    for suffix in (".aux", ".out", ".log", ".toc", ".bbl", ".blg", ".lof", ".lot"):
        tex.with_suffix(suffix).unlink(missing_ok=True)
    return tex.with_suffix(".pdf"), "compiled with pdflatex and bibtex"


def write_report(report: Report, out="reports", *, pdf: bool = True) -> dict:
    """Write report.md, report.tex, the blueprint report.html (and report.pdf with pdflatex) into ``out``."""
    from .latex import to_latex
    from .markdown import to_markdown

    out = _prepare_out(out)
    from .bibliography import bibtex
    from .blueprint import to_html

    md = out / "report.md"
    tex = out / "report.tex"
    try:
        write_text(md, to_markdown(report))
        write_text(tex, to_latex(report))
        write_text(out / "report.html", to_html(report))
        write_text(out / "report.bib", bibtex())
    except OSError as err:
        raise OptionError(f"cannot write the report to {str(out)!r}: {err.strerror or err}") from None
    written = {
        "markdown": str(md),
        "latex": str(tex),
        "html": str(out / "report.html"),
        "pdf": None,
        "pdf_note": "no PDF: --no-pdf was given",
    }
    if pdf:
        path, note = _compile_pdf(tex, _epoch(report.generated))
        written["pdf"] = None if path is None else str(path)
        written["pdf_note"] = note
    return written
