"""A problem set for every student of a class: one folder to hand out per student, the
instructor's solutions kept apart.

``homework new --roster roster.csv --seed S --out hw7`` writes::

    hw7/class.json                 the seed, the topics and the roster (what 'grade' reads)
    hw7/students/ID/               hand this folder to student ID: problems.{md,tex,pdf}
                                   (and homework.ipynb with --notebook); no answers, no seed
    hw7/solutions/ID/              the instructor's: problems.json, solutions.{md,tex,pdf},
                                   the certificates and their keys
    hw7/answer_key.csv             the instructor's: every student's answer to every field

A student's problems are drawn from the seed and the student's id
(:func:`.generate.generate` with ``student``), so the same roster and seed give the same
bytes, and adding a student to the roster changes nobody else's problems.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..certificates.writes import folder_entry, output_folder, write_text
from ..kernel import FileFormatError, InputError, require
from .roster import Roster

__all__ = [
    "CLASS_SCHEMA",
    "CLASS_FILE",
    "STUDENTS_DIR",
    "SOLUTIONS_DIR",
    "NOTEBOOK_FILE",
    "ClassInfo",
    "write_class",
    "load_class",
    "student_problem_set",
    "student_sheet_texts",
]

CLASS_SCHEMA = "lnproofs.homework-class/1"
CLASS_FILE = "class.json"
ANSWER_KEY_FILE = "answer_key.csv"
STUDENTS_DIR = "students"
SOLUTIONS_DIR = "solutions"
NOTEBOOK_FILE = "homework.ipynb"
_STUDENT_STALE = ("problems.pdf", "problems.log", NOTEBOOK_FILE)


@dataclass(frozen=True)
class ClassInfo:
    """What ``class.json`` holds: the seed, the topics and the roster of a class."""

    seed: int
    topics: tuple[str, ...]
    roster: Roster
    attempt: int = 1

    def to_json(self) -> dict:
        data = {"schema": CLASS_SCHEMA, "seed": self.seed, "topics": list(self.topics)}
        if self.attempt != 1:
            data["attempt"] = self.attempt
        data["students"] = self.roster.to_json()
        return data

    @classmethod
    def from_json(cls, data) -> ClassInfo:
        from .generate import parse_topics

        require(
            isinstance(data, dict) and data.get("schema") == CLASS_SCHEMA,
            InputError,
            f'it must be a JSON object with "schema": "{CLASS_SCHEMA}"',
        )
        seed = data.get("seed")
        require(
            isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0,
            InputError,
            "'seed' must be a non-negative integer",
        )
        topics = data.get("topics")
        require(
            isinstance(topics, list) and topics and all(isinstance(t, str) for t in topics),
            InputError,
            "'topics' must be a non-empty list of topic names",
        )
        attempt = data.get("attempt", 1)
        require(
            isinstance(attempt, int) and not isinstance(attempt, bool) and attempt >= 1,
            InputError,
            "'attempt' must be >= 1",
        )
        return cls(seed, parse_topics(",".join(topics)), Roster.from_json(data.get("students")), attempt)


def student_sheet_texts(problem_set, student=None, notebook: bool = False) -> dict:
    """The files of a student's folder as name -> text: the problem sheet (and the notebook)."""
    from .sheet import problem_set_latex, problem_set_markdown

    texts = {"problems.md": problem_set_markdown(problem_set), "problems.tex": problem_set_latex(problem_set)}
    if notebook:
        from .notebook import notebook_text

        texts[NOTEBOOK_FILE] = notebook_text(problem_set, student)
    return texts


def _check_out_folder(out: Path, roster: Roster, seed: int, topics, attempt: int = 1) -> None:
    """A new or empty folder, or this class's own folder written with the same seed and topics
    (it is then completed and rewritten, byte for byte the same); anything else is refused."""
    output_folder(out)
    if not any(out.iterdir()):
        return
    require(
        (out / CLASS_FILE).is_file(),
        FileFormatError,
        f"output folder {out} is not empty and holds no {CLASS_FILE}; give a new folder with --out",
    )
    ids = {s.id for s in roster.students}
    for sub in (STUDENTS_DIR, SOLUTIONS_DIR):
        folder_entry(out, sub, folder=True)
        extra = sorted(p.name for p in (out / sub).iterdir() if p.name not in ids)
        if extra:
            raise FileFormatError(
                f"{out / sub} holds {extra[0]!r}, which is not on this roster; give a new folder with --out"
            )
    old = load_class(out)
    if old.seed != seed or tuple(old.topics) != tuple(topics) or old.attempt != attempt:
        raise FileFormatError(
            f"{out} holds a class drawn with seed {old.seed}, attempt {old.attempt} and topics {','.join(old.topics)}; "
            "run again with those to complete it, or give a new folder with --out"
        )


def write_class(
    roster: Roster,
    seed: int,
    topics=None,
    out="homework",
    *,
    pdf: bool = True,
    notebook: bool = False,
    progress=None,
    attempt: int = 1,
) -> dict:
    """Write every student's folder and the instructor's solutions (layout in the module docstring).

    ``progress(done, total)``, when given, is called after each student.  Returns a summary:
    ``{"seed", "topics", "students", "class_file", "students_dir", "solutions_dir", "pdf_failed"}``.
    """
    from .generate import generate, parse_topics
    from .render import STALE, compile_pdf, instructor_texts, write_files

    out = Path(out)
    chosen = parse_topics(topics if isinstance(topics, str) or topics is None else ",".join(topics))
    _check_out_folder(out, roster, seed, chosen, attempt)
    proofs: dict = {}  # every student's solutions rest on the same theorems: prove each once
    pdf_failed, key = [], []
    for done, student in enumerate(roster.students, 1):
        problem_set = generate(seed, chosen, student=student.id, attempt=attempt)
        solutions = [problem.solve() for problem in problem_set.problems]
        key.append((student, problem_set, solutions))
        solutions_dir = folder_entry(out, Path(SOLUTIONS_DIR) / student.id, folder=True)
        student_dir = folder_entry(out, Path(STUDENTS_DIR) / student.id, folder=True)
        write_files(solutions_dir, instructor_texts(problem_set, solutions, proofs), STALE)
        write_files(student_dir, student_sheet_texts(problem_set, student, notebook), _STUDENT_STALE)
        if pdf:
            for folder, stem in ((student_dir, "problems"), (solutions_dir, "problems"), (solutions_dir, "solutions")):
                made = compile_pdf(folder, stem)
                pdf_failed += [str(path) for name, path in made.items() if name.endswith(".log")]
        if progress is not None:
            progress(done, len(roster.students))
    from .exports import answer_key_csv

    info = ClassInfo(seed=seed, topics=chosen, roster=roster, attempt=attempt)
    write_text(folder_entry(out, ANSWER_KEY_FILE), answer_key_csv(key))
    write_text(folder_entry(out, CLASS_FILE), json.dumps(info.to_json(), indent=2) + "\n")
    return {
        "seed": seed,
        "topics": list(chosen),
        "students": [s.id for s in roster.students],
        "class_file": str(out / CLASS_FILE),
        "answer_key": str(out / ANSWER_KEY_FILE),
        "students_dir": str(out / STUDENTS_DIR),
        "solutions_dir": str(out / SOLUTIONS_DIR),
        "pdf_failed": pdf_failed,
    }


def load_class(folder):
    """The :class:`ClassInfo` of a folder written by :func:`write_class`, or None when it has no class.json."""
    path = Path(folder) / CLASS_FILE
    if not path.exists():
        return None
    require(
        path.is_file() and path.stat().st_size <= 16 * 1024 * 1024,
        FileFormatError,
        f"{path} is not a class file of at most 16 MiB",
    )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise FileFormatError(
            f"{path} is not valid JSON ({type(exc).__name__}); it is written by 'lnproofs homework new --roster'"
        ) from None
    try:
        return ClassInfo.from_json(data)
    except InputError as err:
        raise FileFormatError(f"{path}: {err}") from None


def student_problem_set(folder, student_id: str):
    """The problem set of one student, read from ``folder/solutions/ID/problems.json`` and checked to be theirs."""
    from .answers import load_problem_set

    problem_set = load_problem_set(Path(folder) / SOLUTIONS_DIR / student_id)
    require(
        problem_set.student == student_id,
        FileFormatError,
        f"{Path(folder) / SOLUTIONS_DIR / student_id / 'problems.json'} was drawn for "
        f"{problem_set.student!r}, not for {student_id!r}",
    )
    return problem_set
