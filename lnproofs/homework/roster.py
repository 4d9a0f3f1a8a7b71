"""A class roster: the students a problem set is made for, read from a CSV file.

The format (documented in ``docs/homework.md``): UTF-8 text (a byte-order mark is
allowed), comma-separated, a header row naming the columns, then one row per student.
The column ``id`` is required; ``name`` and ``email`` are optional; no other column is
accepted (a misspelt header would otherwise be dropped without a word).  Header names
are read without surrounding spaces and case.  Rows whose every field is blank are
skipped.  Every field is validated, and every problem is one line naming the row:

- ``id``: 1 to 64 characters from ``A-Z a-z 0-9 . _ -``, starting with a letter or
  digit, not a name Windows reserves (``con``, ``nul``, ``com1`` ...), unique even when
  case is ignored (so two students never share a folder on a case-insensitive disk);
- ``name``: at most 200 characters, no control characters;
- ``email``: empty, or at most 254 characters of the form ``local@domain`` without spaces.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

from ..kernel import FileFormatError, InputError, require

__all__ = ["Student", "Roster", "read_roster", "check_student_id", "COLUMNS", "MAX_STUDENTS"]

#: the columns a roster may have (``id`` is required)
COLUMNS = ("id", "name", "email")
#: a roster is a class list, not a database
MAX_STUDENTS = 5000
_MAX_BYTES = 4 * 1024 * 1024
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+")
_RESERVED = {"con", "prn", "aux", "nul"} | {f"{p}{d}" for p in ("com", "lpt") for d in range(10)}
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def check_student_id(value, where: str = "student id") -> str:
    """``value`` if it is an acceptable student id (safe as a folder name), else InputError."""
    require(isinstance(value, str), InputError, f"{where} must be text, not {type(value).__name__}")
    shown = value if len(value) <= 40 else value[:40] + "..."
    require(
        _ID.fullmatch(value) is not None,
        InputError,
        f"{where} {shown!r} is not accepted; an id is 1 to 64 characters from A-Z a-z 0-9 . _ - "
        "starting with a letter or digit",
    )
    require(
        value.split(".")[0].lower() not in _RESERVED,
        InputError,
        f"{where} {value!r} is a name Windows reserves for a device; choose another id",
    )
    return value


@dataclass(frozen=True)
class Student:
    """One row of a roster."""

    id: str
    name: str = ""
    email: str = ""

    def to_json(self) -> dict:
        return {"id": self.id, "name": self.name, "email": self.email}

    @classmethod
    def from_json(cls, data, where: str = "student") -> Student:
        require(isinstance(data, dict), InputError, f"{where} must be an object with 'id', 'name' and 'email'")
        student = cls(
            id=check_student_id(data.get("id"), f"{where} id"),
            name=_name(data.get("name", ""), where),
            email=_email(data.get("email", ""), where),
        )
        return student

    @property
    def label(self) -> str:
        """``"Ada Lovelace (ada)"``, or the id alone when the roster gives no name."""
        return f"{self.name} ({self.id})" if self.name else self.id


def _name(value, where: str) -> str:
    require(isinstance(value, str), InputError, f"{where}: the name must be text")
    value = value.strip()
    require(len(value) <= 200, InputError, f"{where}: the name is longer than 200 characters")
    require(not _CONTROL.search(value), InputError, f"{where}: the name holds a control character")
    return value


def _email(value, where: str) -> str:
    require(isinstance(value, str), InputError, f"{where}: the email must be text")
    value = value.strip()
    if value:
        require(
            len(value) <= 254 and _EMAIL.fullmatch(value) is not None,
            InputError,
            f"{where}: email {value[:60]!r} is not an address of the form name@domain",
        )
    return value


@dataclass(frozen=True)
class Roster:
    """The students of a class, in the order of the roster file; ids unique."""

    students: tuple[Student, ...]

    def __post_init__(self):
        require(
            0 < len(self.students) <= MAX_STUDENTS,
            InputError,
            f"a roster must list 1 to {MAX_STUDENTS} students; it lists {len(self.students)}",
        )
        seen: dict[str, str] = {}
        for student in self.students:
            folded = student.id.lower()
            require(
                folded not in seen,
                InputError,
                f"student id {student.id!r} appears twice in the roster"
                + (
                    ""
                    if seen.get(folded) == student.id
                    else f" (as {seen.get(folded)!r}; ids must differ in more than case)"
                ),
            )
            seen[folded] = student.id
        emails = [s.email.lower() for s in self.students if s.email]
        if len(set(emails)) != len(emails):
            twice = next(e for e in emails if emails.count(e) > 1)
            raise InputError(f"email {twice!r} belongs to two students in the roster; emails must be unique")

    def by_id(self) -> dict[str, Student]:
        return {s.id: s for s in self.students}

    def by_email(self) -> dict[str, Student]:
        """Students by their email in lower case (students without an email are left out)."""
        return {s.email.lower(): s for s in self.students if s.email}

    def to_json(self) -> list:
        return [s.to_json() for s in self.students]

    @classmethod
    def from_json(cls, data, where: str = "roster") -> Roster:
        require(isinstance(data, list), InputError, f"{where} must be a list of students")
        return cls(tuple(Student.from_json(s, f"{where} entry {i}") for i, s in enumerate(data, 1)))


def read_roster(path) -> Roster:
    """Read and validate a roster CSV file (format in the module docstring); errors are one line."""
    path = Path(path)
    require(
        path.is_file(),
        FileFormatError,
        f"roster {path} does not exist or is not a file; give a CSV file with a header row and a column 'id'",
    )
    require(
        path.stat().st_size <= _MAX_BYTES,
        FileFormatError,
        f"roster {path} is larger than {_MAX_BYTES // (1024 * 1024)} MiB; a roster lists at most "
        f"{MAX_STUDENTS} students",
    )
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FileFormatError(f"roster {path} is not UTF-8 text (byte {exc.start}); save it as UTF-8 CSV") from None
    require("\x00" not in text, FileFormatError, f"roster {path} holds NUL bytes; it is not a CSV text file")
    try:
        rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    except csv.Error as exc:
        raise FileFormatError(f"roster {path} is not valid CSV: {exc}") from None
    rows = [(number, row) for number, row in enumerate(rows, 1) if any(cell.strip() for cell in row)]
    require(bool(rows), FileFormatError, f"roster {path} is empty; it needs a header row with a column 'id'")
    header_line, header = rows[0]
    names = [cell.strip().lower() for cell in header]
    for name in names:
        require(
            name in COLUMNS,
            FileFormatError,
            f"roster {path}: column {name[:40]!r} is not accepted; the columns are id (required), name, email",
        )
    require(len(set(names)) == len(names), FileFormatError, f"roster {path}: a column appears twice in the header")
    require("id" in names, FileFormatError, f"roster {path}: the header row has no column 'id'")
    students = []
    for number, row in rows[1:]:
        where = f"roster {path} line {number}"
        require(len(row) == len(names), FileFormatError, f"{where} has {len(row)} fields; the header has {len(names)}")
        require(len(students) < MAX_STUDENTS, FileFormatError, f"roster {path} lists more than {MAX_STUDENTS} students")
        fields = dict(zip(names, row))
        try:
            students.append(
                Student(
                    id=check_student_id(fields["id"].strip(), f"{where}: student id"),
                    name=_name(fields.get("name", ""), where),
                    email=_email(fields.get("email", ""), where),
                )
            )
        except InputError as err:
            raise FileFormatError(str(err)) from None
    require(bool(students), FileFormatError, f"roster {path} has a header but no students")
    try:
        return Roster(tuple(students))
    except InputError as err:
        raise FileFormatError(f"roster {path}: {err}") from None
