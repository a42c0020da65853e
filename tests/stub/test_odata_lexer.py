"""Lexer of the stub's ``$filter`` engine: literal forms, positions, refusals."""

from __future__ import annotations

import math
import uuid

import pytest

from azt_server_stub.errors import StubError
from azt_server_stub.model import Edm, EdmName, parse_datetime
from azt_server_stub.odata._lexer import Tok, tokenize


def lit(text: str) -> tuple[EdmName | None, object]:
    tokens = tokenize(text)
    assert len(tokens) == 2, tokens
    assert tokens[0].kind is Tok.LITERAL
    return tokens[0].edm, tokens[0].value


@pytest.mark.parametrize(
    ("text", "edm", "value"),
    [
        ("'abc'", Edm.STRING, "abc"),
        ("''", Edm.STRING, ""),
        ("'O''Brien'", Edm.STRING, "O'Brien"),
        ("''''", Edm.STRING, "'"),
        ("'a b\tc'", Edm.STRING, "a b\tc"),
        ("'ünï ☃ \U0001f600'", Edm.STRING, "ünï ☃ \U0001f600"),
        ("0", Edm.INT32, 0),
        ("42", Edm.INT32, 42),
        ("-42", Edm.INT32, -42),
        ("007", Edm.INT32, 7),
        ("2147483647", Edm.INT32, 2**31 - 1),
        ("-2147483648", Edm.INT32, -(2**31)),
        ("42L", Edm.INT64, 42),
        ("42l", Edm.INT64, 42),
        ("2147483648L", Edm.INT64, 2**31),
        ("9223372036854775807L", Edm.INT64, 2**63 - 1),
        ("-9223372036854775808L", Edm.INT64, -(2**63)),
        ("2.5", Edm.DOUBLE, 2.5),
        ("-0.5", Edm.DOUBLE, -0.5),
        ("2.0", Edm.DOUBLE, 2.0),
        ("1e3", Edm.DOUBLE, 1000.0),
        ("1.5E-3", Edm.DOUBLE, 0.0015),
        ("1.5e+3", Edm.DOUBLE, 1500.0),
        ("2d", Edm.DOUBLE, 2.0),
        ("2.5D", Edm.DOUBLE, 2.5),
        ("INF", Edm.DOUBLE, math.inf),
        ("-INF", Edm.DOUBLE, -math.inf),
        ("datetime'2008-07-10T00:00:00Z'", Edm.DATETIME, parse_datetime("2008-07-10T00:00:00Z")),
        ("DateTime'2008-07-10T00:00:00.1234567Z'", Edm.DATETIME, 633512448001234567),
        ("datetime'2008-07-10T02:00:00+02:00'", Edm.DATETIME, 633512448000000000),
        ("datetime'2008-07-10T00:00:00'", Edm.DATETIME, 633512448000000000),
        (
            "guid'c9da6455-213d-42c9-9a79-3e9149a57833'",
            Edm.GUID,
            uuid.UUID("c9da6455-213d-42c9-9a79-3e9149a57833"),
        ),
        (
            "GUID'C9DA6455-213D-42C9-9A79-3E9149A57833'",
            Edm.GUID,
            uuid.UUID("c9da6455-213d-42c9-9a79-3e9149a57833"),
        ),
        ("X'0A1B2c'", Edm.BINARY, b"\x0a\x1b\x2c"),
        ("x'ff'", Edm.BINARY, b"\xff"),
        ("binary'0001'", Edm.BINARY, b"\x00\x01"),
        ("X''", Edm.BINARY, b""),
    ],
)
def test_literals(text: str, edm: EdmName, value: object) -> None:
    assert lit(text) == (edm, value)


def test_nan_literal() -> None:
    edm, value = lit("NaN")
    assert edm is Edm.DOUBLE
    assert isinstance(value, float)
    assert math.isnan(value)


def test_token_sequence_and_positions() -> None:
    tokens = tokenize("(PartitionKey eq'a')and not(Age ge 21L)")
    assert [(t.kind, t.text, t.pos) for t in tokens] == [
        (Tok.LPAREN, "(", 0),
        (Tok.IDENT, "PartitionKey", 1),
        (Tok.IDENT, "eq", 14),
        (Tok.LITERAL, "'a'", 16),
        (Tok.RPAREN, ")", 19),
        (Tok.IDENT, "and", 20),
        (Tok.IDENT, "not", 24),
        (Tok.LPAREN, "(", 27),
        (Tok.IDENT, "Age", 28),
        (Tok.IDENT, "ge", 32),
        (Tok.LITERAL, "21L", 35),
        (Tok.RPAREN, ")", 38),
        (Tok.EOF, "", 39),
    ]


def test_identifiers_allow_unicode_letters_and_underscores() -> None:
    tokens = tokenize("_privé_2 Größe")
    assert [(t.kind, t.text) for t in tokens[:2]] == [(Tok.IDENT, "_privé_2"), (Tok.IDENT, "Größe")]


def test_whitespace_of_any_kind_separates_tokens() -> None:
    assert [t.text for t in tokenize(" \tA\r\neq\n1 ")] == ["A", "eq", "1", ""]


def test_minus_before_a_word_is_its_own_token() -> None:
    assert [t.kind for t in tokenize("-Age")][:2] == [Tok.MINUS, Tok.IDENT]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("2147483648", "Unrecognized 'Edm.Int32' literal '2147483648'"),
        ("-2147483649", "Unrecognized 'Edm.Int32' literal '-2147483649'"),
        ("5454161346626", "Unrecognized 'Edm.Int32' literal '5454161346626'"),
        ("9223372036854775808L", "Unrecognized 'Edm.Int64' literal '9223372036854775808L'"),
        ("1.5L", "Unrecognized 'Edm.Int64' literal '1.5L'"),
        ("1e999", "Unrecognized 'Edm.Double' literal '1e999'"),
        ("datetime'2008-13-10T00:00:00Z'", "Unrecognized 'Edm.DateTime' literal"),
        ("datetime'yesterday'", "Unrecognized 'Edm.DateTime' literal"),
        ("datetime''", "Unrecognized 'Edm.DateTime' literal"),
        ("guid'c9da6455213d42c99a793e9149a57833'", "Unrecognized 'Edm.Guid' literal"),
        ("guid'c9da6455-213d-42c9-9a79-3e9149a5783'", "Unrecognized 'Edm.Guid' literal"),
        ("guid'{c9da6455-213d-42c9-9a79-3e9149a57833}'", "Unrecognized 'Edm.Guid' literal"),
        ("X'0A1'", "Unrecognized 'Edm.Binary' literal"),
        ("binary'zz'", "Unrecognized 'Edm.Binary' literal"),
        ("'abc", "unterminated string literal"),
        ("'it''s", "unterminated string literal"),
        ("datetime'2008", "unterminated string literal"),
        ('"abc"', "not double quotes"),
        ("1.", "malformed numeric literal '1.'"),
        ("1.2.3", "malformed numeric literal '1.2.3'"),
        ("12abc", "malformed numeric literal '12abc'"),
        ("1e", "malformed numeric literal '1e'"),
        ("12Lx", "malformed numeric literal '12Lx'"),
        ("12q", "malformed numeric literal '12q'"),
        ("1.5m", "Edm.Decimal literals"),
        ("1.5f", "Edm.Single literals"),
        ("decimal'1.5'", "not supported"),
        ("datetimeoffset'2008-07-10T00:00:00Z'", "not supported"),
        ("A eq 1 & B", "invalid character '&'"),
        ("A eq $x", "invalid character '$'"),
        ("A == 1", "invalid character '='"),
        ("A eq .5", "invalid character '.'"),
        ("A eq +5", "invalid character '+'"),
    ],
)
def test_malformed_input_is_invalid_input(text: str, message: str) -> None:
    with pytest.raises(StubError) as info:
        tokenize(text)
    assert (info.value.status, info.value.code) == (400, "InvalidInput")
    assert message in info.value.message


def test_error_positions_point_at_the_problem() -> None:
    with pytest.raises(StubError) as info:
        tokenize("Name eq 'O'Brien'")
    # 'O' is a complete string; "Brien" is a word; the last quote opens an unterminated string.
    assert "position 16" in info.value.message
    assert "'Name eq 'O'Brien''" in info.value.message
