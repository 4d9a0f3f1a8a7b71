"""The exact solution of one homework problem (every problem kind's ``solve`` returns one)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Solution"]


@dataclass(frozen=True)
class Solution:
    """The exact solution of one problem.

    ``answers`` is a complete, correct answer in the documented answers format (so it
    passes ``check``); ``theorems`` names the library theorems whose proofs back it
    (``"name"`` for general n, ``"name@n"`` for the version expanded at width n);
    ``work`` holds worked lines (Markdown with ``$...$`` maths); ``certificate`` is the
    selectability certificate JSON where the problem has one.
    """

    problem_id: str
    answers: dict
    theorems: tuple[str, ...] = ()
    work: tuple[str, ...] = ()
    certificate: dict | None = None
    #: the exact status of each key (1-based key number -> status) where relevant
    statuses: dict = field(default_factory=dict)

    def _repr_markdown_(self) -> str:
        from .render import solution_markdown

        return solution_markdown(self)
