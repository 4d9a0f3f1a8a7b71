"""The class roster: headers read ignoring case, spaces and a byte-order mark, and every bad field
refused with one line."""

from __future__ import annotations

import pytest

from lnproofs.homework.roster import read_roster
from lnproofs.kernel import FileFormatError


def test_roster_reads_header_case_spaces_bom_and_optional_columns(tmp_path):
    path = tmp_path / "r.csv"
    path.write_bytes("\ufeff Email , ID\r\nada@example.org,ada\r\n,\r\n,bob\r\n".encode("utf-8"))
    roster = read_roster(path)
    assert [(s.id, s.email, s.name) for s in roster.students] == [("ada", "ada@example.org", ""), ("bob", "", "")]
    assert roster.by_email() == {"ada@example.org": roster.students[0]}


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("id\nada\nAda\n", "differ in more than case"),
        ("id\nada\nada\n", "appears twice"),
        ("id\n../up\n", "not accepted"),
        ("id\ncon\n", "Windows reserves"),
        ("id,phone\nada,1\n", "column 'phone' is not accepted"),
        ("name\nAda\n", "no column 'id'"),
        ("id,email\nada,not-an-address\n", "not an address"),
        ("id,email\nada,a@x.org\nbob,A@X.org\n", "belongs to two students"),
        ("id,name\nada\n", "has 1 fields; the header has 2"),
        ("id\n", "no students"),
        ('id,name\nada,"unclosed\n', "not valid CSV"),
    ],
)
def test_roster_refuses_each_bad_field_with_one_line(tmp_path, text, fragment):
    path = tmp_path / "r.csv"
    path.write_text(text)
    with pytest.raises(FileFormatError) as err:
        read_roster(path)
    assert fragment in str(err.value) and "\n" not in str(err.value)
