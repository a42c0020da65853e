"""Values at the edge of what the service reads: an annotated Double string past the range
is refused (not stored as Infinity), and an ACL time written with non-ASCII digits is an
XML value error (not a crash, not accepted)."""

from __future__ import annotations

import math

import pytest

from azt_server_stub.errors import StubError
from azt_server_stub.formats import json as json_fmt
from azt_server_stub.formats import xml as xml_fmt


@pytest.mark.parametrize("text", ["1e400", "-1e400", "9" * 400])
def test_a_double_string_past_the_range_is_invalid_input(text: str) -> None:
    with pytest.raises(StubError) as info:
        json_fmt.convert_value("D", "Edm.Double", text)
    assert info.value.code == "InvalidInput"


@pytest.mark.parametrize("text", ["1.5", "1e300", "-0.0"])
def test_a_double_string_in_range_is_read(text: str) -> None:
    got = json_fmt.convert_value("D", "Edm.Double", text)
    assert got is not None
    assert got[1] == float(text)


def test_the_spelled_infinities_stay_infinite() -> None:
    got = json_fmt.convert_value("D", "Edm.Double", "Infinity")
    assert got is not None
    assert math.isinf(got[1])


@pytest.mark.parametrize(
    "start",
    [
        "\u0662\u0660\u0662\u0666-01-01T00:00:00Z",  # Arabic-Indic digits
        "2026-\uff10\uff11-01T00:00:00Z",  # fullwidth digits
    ],
)
def test_an_acl_time_with_other_digits_is_an_xml_value_error(start: str) -> None:
    body = (
        '<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers><SignedIdentifier>'
        f"<Id>p</Id><AccessPolicy><Start>{start}</Start>"
        "<Expiry>2027-01-01T00:00:00Z</Expiry><Permission>r</Permission>"
        "</AccessPolicy></SignedIdentifier></SignedIdentifiers>"
    ).encode()
    with pytest.raises(StubError) as info:
        xml_fmt.parse_acl(body)
    assert info.value.code == "InvalidXmlNodeValue"
