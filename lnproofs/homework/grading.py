"""Grading a folder of answers files: each matched to its student and checked exactly against
that student's own problems (with :func:`.answers.check_answers`, the checker of ``homework check``).

Which files are submissions (``docs/homework.md`` says the same):

- every ``*.json`` file directly in the folder, and every ``*.json`` file one folder down
  (``SUBMISSIONS/ID/anything.json``, as exported per student by many course systems);
- names starting with ``.`` (and ``__MACOSX``) are skipped; any other file, a link, or a
  folder nested deeper is listed as not graded, with the reason.

Whose answers a file holds: the field ``"student_id"`` inside the file, else the file's
name without ``.json`` (or, one folder down, the folder's name), matched to a roster id
ignoring case.  When both name a roster student and disagree, the file is not graded.
Two files for one student are both listed as not graded.  A file that cannot be read,
is not an answers file, or names an unknown problem or answer field is listed with the
reason; nothing is ever given a zero in silence.

Points: one per answer field (for ``selectability``, one per key; for ``vocab``, one per
token), so a problem with some fields right gets partial credit; a problem not answered earns
0 of its points and is named in the feedback.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..kernel import FileFormatError, InputError, LnproofsError, require
from .roster import Roster, Student, check_student_id

__all__ = [
    "ProblemSource",
    "ProblemScore",
    "StudentGrade",
    "NotGraded",
    "Gradebook",
    "possible_points",
    "score",
    "find_submissions",
    "grade_file",
    "grade_folder",
    "metadata_student",
    "MAX_ANSWERS_BYTES",
]

#: an answers file is a few kilobytes; a larger one is refused unread
MAX_ANSWERS_BYTES = 1024 * 1024
_SKIPPED = ("__MACOSX",)


@dataclass(frozen=True)
class ProblemSource:
    """Where the problems come from: a class folder (one problem set per roster student) or a
    folder with one ``problems.json`` that every submission is checked against."""

    folder: Path
    roster: Roster | None
    topics: tuple[str, ...]
    single: object = None  # the one ProblemSet when there is no roster

    @classmethod
    def open(cls, folder) -> ProblemSource:
        from .answers import load_problem_set
        from .classroom import load_class

        folder = Path(folder)
        require(
            folder.is_dir(),
            FileFormatError,
            f"problems folder {folder} does not exist; pass the folder "
            "written by 'lnproofs homework new' with --problems",
        )
        info = load_class(folder)
        if info is not None:
            return cls(folder, info.roster, info.topics)
        single = load_problem_set(folder)
        return cls(folder, None, tuple(p.id for p in single.problems), single)

    def problems_for(self, student_id: str):
        from .classroom import student_problem_set

        return self.single if self.roster is None else student_problem_set(self.folder, student_id)


def possible_points(problem) -> int:
    """The points a problem is worth: one per answer field, one per key for selectability and causal,
    one per token for vocab, the matrix and one per key for rotary."""
    return problem.points()


@dataclass(frozen=True)
class ProblemScore:
    problem: str
    points: int
    possible: int
    answered: bool
    wrong: tuple = ()  # (part, message) for every wrong part
    too_complex: tuple = ()  # the parts among them that were too complex to check (0 points; for the teacher)
    hidden: tuple = ()  # (part, message without the expected answer) for every wrong part

    @property
    def output(self) -> str:
        """The feedback text of this problem."""
        return self.output_at("full")

    def lines_at(self, level: str) -> list[str]:
        """The message lines of the wrong parts at a feedback level (see :mod:`.policy`)."""
        if level == "score-only":
            return []
        return [f"{part}: {message}" for part, message in (self.hidden if level == "hide-answer" else self.wrong)]

    def output_at(self, level: str) -> str:
        if not self.answered:
            return "not answered"
        if not self.wrong:
            return "all correct"
        if level == "score-only":
            return f"{len(self.wrong)} part{'s' if len(self.wrong) != 1 else ''} wrong (the messages are not shown)"
        return "\n".join(self.lines_at(level))


@dataclass(frozen=True)
class StudentGrade:
    """A graded submission."""

    student: Student
    file: str
    scores: tuple[ProblemScore, ...]
    notes: tuple[str, ...] = ()  # misspelt problem ids and fields, with the nearest valid name
    written: tuple = ()  # (problem, part, prompt, text): the parts answered in words

    @property
    def total(self) -> int:
        return sum(s.points for s in self.scores)

    @property
    def possible(self) -> int:
        return sum(s.possible for s in self.scores)


@dataclass(frozen=True)
class NotGraded:
    """A submission that could not be graded, or a student without a submission; ``file`` is '' for those."""

    file: str
    student: str
    reason: str


@dataclass(frozen=True)
class Gradebook:
    """The outcome of grading a folder; ``rows`` follow the roster (or the file names without one)."""

    problems: tuple[str, ...]
    grades: tuple[StudentGrade, ...]
    not_graded: tuple[NotGraded, ...]
    students: tuple[Student, ...]

    def grade_of(self, student_id: str):
        return next((g for g in self.grades if g.student.id == student_id), None)

    @property
    def too_complex(self) -> tuple[NotGraded, ...]:
        """The answers that were too complex to check, one entry each, for the teacher to check by hand."""
        out = []
        for grade in self.grades:
            for s in grade.scores:
                why = dict(s.wrong)
                out += [
                    NotGraded(
                        grade.file,
                        grade.student.id,
                        f"answer {s.problem} {part} was {why[part]}; it got 0 points: check it by hand",
                    )
                    for part in s.too_complex
                ]
        return tuple(out)

    @property
    def missing(self) -> tuple[Student, ...]:
        named = {n.student for n in self.not_graded}
        graded = {g.student.id for g in self.grades}
        return tuple(s for s in self.students if s.id not in graded and s.id not in named)


def score(problem_set, result) -> tuple[ProblemScore, ...]:
    """Points per problem from a :class:`.answers.CheckResult` (partial credit per answer field)."""
    by_id = {p.problem: p for p in result.problems}
    scores = []
    for problem in problem_set.problems:
        possible = possible_points(problem)
        checked = by_id.get(problem.id)
        if checked is None:
            scores.append(ProblemScore(problem.id, 0, possible, False))
            continue
        points = sum(1 for p in checked.parts if p.ok)
        require(points <= possible, InputError, f"problem {problem.id!r} scored {points} of {possible} points")
        scores.append(
            ProblemScore(
                problem.id,
                points,
                possible,
                True,
                tuple((p.part, p.message) for p in checked.parts if not p.ok),
                tuple(p.part for p in checked.parts if p.too_complex),
                tuple((p.part, p.hidden) for p in checked.parts if not p.ok),
            )
        )
    return tuple(scores)


def _is_hidden(path: Path) -> bool:
    return path.name.startswith(".") or path.name in _SKIPPED


def find_submissions(folder) -> tuple[list[tuple[Path, str]], list[NotGraded]]:
    """([(answers file, the id its place suggests)], [entries that are not answers files, with why])."""
    folder = Path(folder)
    require(folder.is_dir(), FileFormatError, f"submissions folder {folder} does not exist or is not a folder")
    found, skipped = [], []

    def visit(path: Path, name_id: str | None, depth: int):
        shown = str(path.relative_to(folder))
        if _is_hidden(path):
            return
        if path.is_symlink():
            skipped.append(NotGraded(shown, "", "is a link, not a file; hand in the answers file itself"))
        elif path.is_dir():
            if depth > 0:
                skipped.append(
                    NotGraded(shown, "", "is a folder nested too deep; answers files go at most one folder down")
                )
                return
            for child in sorted(path.iterdir()):
                visit(child, path.name, depth + 1)
        elif path.is_file() and path.suffix.lower() == ".json":
            found.append((path, name_id if name_id is not None else path.name[: -len(path.suffix)]))
        elif path.is_file():
            what = (
                "a notebook; run its last cell and hand in the .json file it writes"
                if path.suffix.lower() == ".ipynb"
                else "not a .json answers file"
            )
            skipped.append(NotGraded(shown, "", f"is {what}"))
        else:
            skipped.append(NotGraded(shown, "", "is not a regular file"))

    for entry in sorted(folder.iterdir()):
        visit(entry, None, 0)
    return found, skipped


def _read(path: Path) -> dict:
    from .answers import load_answers

    require(
        path.stat().st_size <= MAX_ANSWERS_BYTES,
        FileFormatError,
        f"is larger than {MAX_ANSWERS_BYTES // 1024} KiB; an answers file is a few kilobytes",
    )
    return load_answers(path)


def _whose(data: dict, name_id: str, roster: Roster | None, forced: Student | None) -> Student:
    """The student a submission belongs to (rules in the module docstring); InputError says why not."""
    inner = data.get("student_id")
    if inner is not None:
        check_student_id(inner, 'its "student_id"')
    if roster is None:
        ident = inner if inner is not None else name_id
        try:
            return Student(check_student_id(ident, "its file name"))
        except InputError:
            raise InputError(
                f'its file name {name_id[:40]!r} is not a student id and it has no "student_id"; '
                'name it ID.json or add "student_id"'
            ) from None
    folded = {s.id.lower(): s for s in roster.students}
    by_inner = folded.get(inner.lower()) if inner is not None else None
    by_name = folded.get(name_id.lower())
    require(inner is None or by_inner is not None, InputError, f'its "student_id" {inner!r} is not on the roster')
    if forced is not None:
        require(
            by_inner is None or by_inner == forced,
            InputError,
            f"it says it holds the answers of {inner!r}, but it was submitted by {forced.id!r}",
        )
        return forced
    if by_inner is not None:
        if by_name is not None and by_name != by_inner:
            raise InputError(f'its name says student {by_name.id!r} but its "student_id" says {inner!r}')
        return by_inner
    require(
        by_name is not None,
        InputError,
        f"cannot tell whose answers these are: {name_id[:40]!r} is not a roster id and the file has no "
        '"student_id"; name it ID.json or add "student_id"',
    )
    return by_name


def _roster_id(name_id: str, roster: Roster | None) -> str:
    if roster is None:
        return ""
    return next((s.id for s in roster.students if s.id.lower() == name_id.lower()), "")


def grade_file(path: Path, name_id: str, source: ProblemSource, forced: Student | None = None):
    """A :class:`StudentGrade`, or (student id or '', reason) when the file cannot be graded."""
    from .answers import check_answers

    # until the file says otherwise, it is whose its name (or the uploader) says, so that its
    # student is told why it was not graded
    student_id = forced.id if forced is not None else _roster_id(name_id, source.roster)
    try:
        data = _read(path)
        student = _whose(data, name_id, source.roster, forced)
        student_id = student.id
        problem_set = source.problems_for(student.id)
        result = check_answers(problem_set, data)
        return StudentGrade(student, path.name, score(problem_set, result), result.notes, result.written)
    except LnproofsError as err:
        reason = str(err)
        # the readers name the file; the listing names it already
        reason = reason.replace(f"answers file {path} ", "").replace(str(path), path.name)
        return student_id, reason
    except (RecursionError, MemoryError, OSError) as err:
        return student_id, f"could not be read ({type(err).__name__}: {str(err)[:200]})"
    except Exception as err:  # one odd file must not stop a class's grading; say so, never a silent zero
        return student_id, (
            f"could not be graded: an internal error ({type(err).__name__}: {str(err)[:200]}); "
            "please report it with this file"
        )


def grade_folder(folder, source: ProblemSource, forced: Student | None = None, progress=None) -> Gradebook:
    """Grade every answers file under ``folder`` (rules in the module docstring).

    ``forced`` is the student the whole folder belongs to (a Gradescope submission whose
    uploader is known); ``progress(done, total)`` is called after each file.
    """
    files, not_graded = find_submissions(folder)
    base = Path(folder)
    graded: dict[str, list] = {}
    for done, (path, name_id) in enumerate(files, 1):
        outcome = grade_file(path, name_id, source, forced)
        shown = str(path.relative_to(base))
        if isinstance(outcome, StudentGrade):
            outcome = StudentGrade(outcome.student, shown, outcome.scores, outcome.notes, outcome.written)
            graded.setdefault(outcome.student.id, []).append(outcome)
        else:
            not_graded.append(NotGraded(shown, *outcome))
        if progress is not None:
            progress(done, len(files))
    grades = []
    for student_id, items in graded.items():
        if len(items) == 1:
            grades.append(items[0])
            continue
        names = ", ".join(g.file for g in items)
        not_graded += [
            NotGraded(
                g.file, student_id, f"{len(items)} submissions for student {student_id!r} ({names}); keep exactly one"
            )
            for g in items
        ]
    if source.roster is not None:
        students = source.roster.students
        order = {s.id: i for i, s in enumerate(students)}
        grades.sort(key=lambda g: order[g.student.id])
    else:
        grades.sort(key=lambda g: g.student.id)
        students = tuple(g.student for g in grades)
    return Gradebook(source.topics, tuple(grades), tuple(not_graded), tuple(students))


def metadata_student(path, roster: Roster | None) -> Student | None:
    """The roster student who made a Gradescope submission, from its ``submission_metadata.json``.

    The submitters are ``users`` (each with an ``email``); the first whose email is on the
    roster is returned, None when none is (then the files themselves say whose they are).
    """
    import json

    path = Path(path)
    require(
        path.is_file() and path.stat().st_size <= MAX_ANSWERS_BYTES,
        FileFormatError,
        f"--metadata {path} does not exist or is larger than {MAX_ANSWERS_BYTES // 1024} KiB",
    )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise FileFormatError(
            f"--metadata {path} is not valid JSON; give Gradescope's /autograder/submission_metadata.json"
        ) from None
    users = data.get("users") if isinstance(data, dict) else None
    require(
        isinstance(users, list),
        FileFormatError,
        f"--metadata {path} has no list 'users'; give Gradescope's /autograder/submission_metadata.json",
    )
    if roster is None:
        return None
    emails = roster.by_email()
    for user in users:
        email = user.get("email") if isinstance(user, dict) else None
        if isinstance(email, str) and email.strip().lower() in emails:
            return emails[email.strip().lower()]
    return None
