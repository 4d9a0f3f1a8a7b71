"""What a report holds: its sections as frozen dataclasses, shared by every writer.

:mod:`.build` fills a :class:`Report`; :mod:`.markdown` and :mod:`.latex` render it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["CONVENTIONS", "Figure", "Recheck", "KeySection", "Report", "recheck_cell"]


#: LayerNorm conventions, as the report states them (prose with its mathematics in $...$)
CONVENTIONS = {
    "torch": r"$\operatorname{LN}(x) = a \odot (x - \bar{x}\mathbf{1}) / \sqrt{\operatorname{var}(x) + \epsilon} + b$, "
    "with the biased variance",
    "std": r"$\operatorname{LN}(x) = a \odot (x - \bar{x}\mathbf{1}) / (\operatorname{std}(x) + \epsilon) + b$, "
    "with the biased standard deviation",
}


@dataclass(frozen=True)
class Figure:
    """A figure file (relative to the report folder) and its caption."""

    path: str
    caption: str
    label: str = ""  # the LaTeX label, "fig:" and the file's stem by default

    def __post_init__(self):
        if not self.label:
            stem = self.path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
            object.__setattr__(self, "label", "fig:" + stem)


@dataclass(frozen=True)
class Recheck:
    """The numeric re-check of one theorem (from ``torch_backend.theorems``)."""

    name: str
    samples: int
    max_error: float
    tolerance: float
    passed: bool
    device: str
    dtype: str

    @classmethod
    def from_result(cls, result) -> Recheck:
        data = result.to_json() if hasattr(result, "to_json") else dict(result)
        return cls(
            data["name"],
            int(data["samples"]),
            float(data["max_error"]),
            float(data["tolerance"]),
            bool(data["passed"]),
            str(data["device"]),
            str(data.get("dtype", "")),
        )


@dataclass(frozen=True)
class KeySection:
    """Certification of the keys given with ``--keys``."""

    source: str
    n_keys: int
    dim: int
    summary: dict
    check_ok: bool
    rows: tuple  # (index, status, evidence text) for every key that is not selectable
    margins: tuple  # float margins of the selectable keys' witnesses (display only)
    figures: tuple
    certificate_file: str


@dataclass(frozen=True)
class Report:
    n: int
    convention: str
    generated: str
    versions: tuple  # (name, version) pairs
    proofs: tuple  # ProofResult objects
    rechecks: dict  # theorem name -> Recheck
    recheck_note: str
    figures: tuple
    keys: KeySection | None = None
    extras: dict = field(default_factory=dict)
    experiments: object = None  # an ExperimentsSection (lnproofs.report.experiments) or None

    @property
    def proved(self) -> int:
        return sum(1 for p in self.proofs if p.proved)


def recheck_cell(check: Recheck | None) -> str:
    """Short text for the summary table."""
    if check is None:
        return "-"
    verdict = "passed" if check.passed else "FAILED"
    return f"{verdict}: max error {check.max_error:.2e} (tol {check.tolerance:.1e})"
