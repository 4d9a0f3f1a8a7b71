"""The report's sources: BibTeX entries (``report.bib``) and the same list for Markdown."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Source", "SOURCES", "bibtex", "markdown_references"]


@dataclass(frozen=True)
class Source:
    key: str
    kind: str  # BibTeX entry type
    fields: tuple  # (field, value) pairs, values as BibTeX text
    text: str  # the reference as a reader sees it (Markdown)


SOURCES = (
    Source(
        "brody2023",
        "inproceedings",
        (
            ("author", "Brody, Shaked and Alon, Uri and Yahav, Eran"),
            ("title", "On the Expressivity Role of {LayerNorm} in {Transformers}' Attention"),
            ("booktitle", "Findings of the Association for Computational Linguistics: ACL 2023"),
            ("year", "2023"),
        ),
        "Shaked Brody, Uri Alon and Eran Yahav. On the expressivity role of LayerNorm in Transformers' "
        "attention. Findings of the Association for Computational Linguistics: ACL 2023.",
    ),
    Source(
        "riechers2024",
        "misc",
        (
            ("author", "Riechers, Paul M."),
            ("title", "Geometry and Dynamics of {LayerNorm}"),
            ("year", "2024"),
            ("howpublished", "arXiv:2405.04134"),
        ),
        "Paul M. Riechers. Geometry and dynamics of LayerNorm. arXiv:2405.04134, 2024.",
    ),
    Source(
        "grivas2022",
        "inproceedings",
        (
            ("author", "Grivas, Andreas and Bogoychev, Nikolay and Lopez, Adam"),
            ("title", "Low-Rank Softmax Can Have Unargmaxable Classes in Theory but Rarely in Practice"),
            ("booktitle", "Proceedings of the 60th Annual Meeting of the Association for Computational Linguistics"),
            ("year", "2022"),
        ),
        "Andreas Grivas, Nikolay Bogoychev and Adam Lopez. Low-rank softmax can have unargmaxable classes in "
        "theory but rarely in practice. Proceedings of ACL 2022.",
    ),
    Source(
        "sympy",
        "article",
        (
            ("author", "Meurer, Aaron and others"),
            ("title", "{SymPy}: symbolic computing in {Python}"),
            ("journal", "PeerJ Computer Science"),
            ("volume", "3"),
            ("pages", "e103"),
            ("year", "2017"),
        ),
        "Aaron Meurer et al. SymPy: symbolic computing in Python. PeerJ Computer Science 3:e103, 2017.",
    ),
    Source(
        "flint",
        "misc",
        (
            ("author", "{The FLINT team}"),
            ("title", "{FLINT}: Fast Library for Number Theory"),
            ("howpublished", "https://flintlib.org, used through python-flint"),
            ("year", "2024"),
            ("note", "Version 3"),
        ),
        "The FLINT team. FLINT: Fast Library for Number Theory, used through python-flint.",
    ),
    Source(
        "pytorch",
        "inproceedings",
        (
            ("author", "Paszke, Adam and others"),
            ("title", "{PyTorch}: An Imperative Style, High-Performance Deep Learning Library"),
            ("booktitle", "Advances in Neural Information Processing Systems 32"),
            ("year", "2019"),
        ),
        "Adam Paszke et al. PyTorch: an imperative style, high-performance deep learning library. NeurIPS 2019.",
    ),
    Source(
        "numpy",
        "article",
        (
            ("author", "Harris, Charles R. and others"),
            ("title", "Array programming with {NumPy}"),
            ("journal", "Nature"),
            ("volume", "585"),
            ("pages", "357--362"),
            ("year", "2020"),
        ),
        "Charles R. Harris et al. Array programming with NumPy. Nature 585:357-362, 2020.",
    ),
    Source(
        "cvxpy",
        "article",
        (
            ("author", "Diamond, Steven and Boyd, Stephen"),
            ("title", "{CVXPY}: A {Python}-Embedded Modeling Language for Convex Optimization"),
            ("journal", "Journal of Machine Learning Research"),
            ("volume", "17"),
            ("number", "83"),
            ("pages", "1--5"),
            ("year", "2016"),
        ),
        "Steven Diamond and Stephen Boyd. CVXPY: a Python-embedded modeling language for convex optimization. "
        "Journal of Machine Learning Research 17(83):1-5, 2016.",
    ),
    Source(
        "highs",
        "article",
        (
            ("author", "Huangfu, Qi and Hall, J. A. Julian"),
            ("title", "Parallelizing the dual revised simplex method"),
            ("journal", "Mathematical Programming Computation"),
            ("volume", "10"),
            ("pages", "119--142"),
            ("year", "2018"),
        ),
        "Qi Huangfu and J. A. Julian Hall. Parallelizing the dual revised simplex method. Mathematical "
        "Programming Computation 10:119-142, 2018.",
    ),
    Source(
        "matplotlib",
        "article",
        (
            ("author", "Hunter, John D."),
            ("title", "Matplotlib: A {2D} Graphics Environment"),
            ("journal", "Computing in Science \\& Engineering"),
            ("volume", "9"),
            ("number", "3"),
            ("pages", "90--95"),
            ("year", "2007"),
        ),
        "John D. Hunter. Matplotlib: a 2D graphics environment. Computing in Science & Engineering 9(3):90-95, 2007.",
    ),
    Source(
        "gordan1873",
        "article",
        (
            ("author", "Gordan, Paul"),
            ("title", r"{\"U}ber die {A}ufl{\"o}sung linearer {G}leichungen mit reellen {C}oefficienten"),
            ("journal", "Mathematische Annalen"),
            ("volume", "6"),
            ("pages", "23--28"),
            ("year", "1873"),
        ),
        "Paul Gordan. Über die Auflösung linearer Gleichungen mit reellen Coefficienten. Mathematische Annalen "
        "6:23-28, 1873.",
    ),
    Source(
        "rudin1976",
        "book",
        (
            ("author", "Rudin, Walter"),
            ("title", "Principles of Mathematical Analysis"),
            ("edition", "Third"),
            ("publisher", "McGraw-Hill"),
            ("address", "New York"),
            ("year", "1976"),
        ),
        "Walter Rudin. Principles of Mathematical Analysis, third edition. McGraw-Hill, New York, 1976.",
    ),
    Source(
        "hornjohnson2013",
        "book",
        (
            ("author", "Horn, Roger A. and Johnson, Charles R."),
            ("title", "Matrix Analysis"),
            ("edition", "Second"),
            ("publisher", "Cambridge University Press"),
            ("address", "Cambridge"),
            ("year", "2013"),
        ),
        "Roger A. Horn and Charles R. Johnson. Matrix Analysis, second edition. Cambridge University Press, "
        "Cambridge, 2013.",
    ),
    Source(
        "scipy",
        "article",
        (
            ("author", "Virtanen, Pauli and others"),
            ("title", "{SciPy} 1.0: fundamental algorithms for scientific computing in {Python}"),
            ("journal", "Nature Methods"),
            ("volume", "17"),
            ("pages", "261--272"),
            ("year", "2020"),
        ),
        "Pauli Virtanen et al. SciPy 1.0: fundamental algorithms for scientific computing in Python. Nature "
        "Methods 17:261-272, 2020.",
    ),
    Source(
        "clarabel",
        "misc",
        (
            ("author", "Goulart, Paul J. and Chen, Yuwen"),
            ("title", "Clarabel: An interior-point solver for conic programs with quadratic objectives"),
            ("howpublished", "arXiv:2405.12762"),
            ("year", "2024"),
        ),
        "Paul J. Goulart and Yuwen Chen. Clarabel: an interior-point solver for conic programs with quadratic "
        "objectives. arXiv:2405.12762, 2024.",
    ),
)


def bibtex() -> str:
    """The text of ``report.bib``."""
    out = []
    for source in SOURCES:
        fields = ",\n".join(f"  {name} = {{{value}}}" for name, value in source.fields)
        out.append(f"@{source.kind}{{{source.key},\n{fields}\n}}\n")
    return "\n".join(out)


def markdown_references(keys=None) -> list[str]:
    """The references (those in ``keys``, all by default) as a numbered Markdown list."""
    chosen = [s for s in SOURCES if keys is None or s.key in keys]
    return [f"{i}. {s.text}" for i, s in enumerate(chosen, start=1)]
