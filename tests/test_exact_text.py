"""Rationals as text: exact both ways, whatever their length."""

from fractions import Fraction

import pytest

from lnproofs.certificates.uniform import UniformResult
from lnproofs.certificates.writers import format_fraction
from lnproofs.kernel import InputError, parse_fraction


@pytest.mark.parametrize(
    "value",
    [
        Fraction(0),
        Fraction(-3),
        Fraction(5, 7),
        Fraction(-1, 6),
        Fraction(-(7**9000), 2 * 3**4000),
        Fraction(10**5000 + 1),
    ],
)
def test_rationals_round_trip_past_pythons_digit_limit(value):
    text = format_fraction(value)
    assert parse_fraction(text) == value
    assert ("/" in text) == (value.denominator != 1)


@pytest.mark.parametrize(
    "text,value",
    [
        ("1/3", Fraction(1, 3)),
        ("+7", Fraction(7)),
        ("-2/4", Fraction(-1, 2)),
        ("0.25", Fraction(1, 4)),
        ("1e-3", Fraction(1, 1000)),
        (" 3/6 ", Fraction(1, 2)),
    ],
)
def test_the_accepted_spellings(text, value):
    assert parse_fraction(text) == value


@pytest.mark.parametrize("text", ["1/0", "abc", "1/-3", "", "--3", "1/ 3"])
def test_what_is_not_a_rational_is_refused_in_words(text):
    with pytest.raises(InputError, match="is not a rational number"):
        parse_fraction(text)


def test_an_exact_query_of_thousands_of_digits_is_written():
    huge = Fraction(3**12000, 2**40000 + 1)
    result = UniformResult("feasible", query=(huge, Fraction(1)), query_set={"kind": "free"}, n_keys=2, dim=2)
    written = result.to_json()["query"][0]
    assert len(written) > 4300 and parse_fraction(written) == huge
