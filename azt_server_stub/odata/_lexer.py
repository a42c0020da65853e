"""Lexer for the Table service's ``$filter`` dialect (OData v3 subset).

The lexer turns filter text into a list of :class:`Token`. It knows the literal
forms of the eight EDM types and reports malformed ones (an unterminated string,
a bad GUID, an Int32 that does not fit, ...) as ``400 InvalidInput`` with the
position in the text. Words (property names, operators, ``true``/``false``) are
all ``IDENT`` tokens: the parser decides what they mean.

Case rules (Azure's, as far as they can be established):

* operators and ``true``/``false``/``null`` are case-sensitive (``Or`` is a
  syntax error on Azure, unlike Azurite);
* the literal prefixes ``datetime``, ``guid``, ``binary`` and ``X`` and the
  numeric suffixes ``L``/``D`` are case-insensitive (as in the WCF Data
  Services lexer the service's parser derives from).
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import uuid
from enum import IntEnum
from typing import NamedTuple

from ..errors import StubError, invalid_input, not_implemented
from ..model import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, Edm, EdmName, Value, parse_datetime
from ..validation import extend_name, is_property_name


class Tok(IntEnum):
    """Token kinds."""

    IDENT = 1
    LITERAL = 2
    LPAREN = 3
    RPAREN = 4
    COMMA = 5
    SLASH = 6
    MINUS = 7
    COLON = 8
    EOF = 9


class Token(NamedTuple):
    """One token: kind, source text, 0-based position, and for literals the EDM type and value."""

    kind: Tok
    text: str
    pos: int
    edm: EdmName | None = None
    value: Value = None


_WS = re.compile(r"\s+")
_IDENT = re.compile(r"[^\W\d]\w*")
# A number, optionally with fraction, exponent and a one-letter type suffix.
_NUMBER = re.compile(r"-?[0-9]+(?:(\.[0-9]+)?([eE][+-]?[0-9]+)?)([A-Za-z]?)")
_STRING_BODY = re.compile(r"(?:[^']|'')*'")
# \Z, not $: $ also matches before a trailing newline (guid'...%0A' was a 500).
_GUID = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\Z")
_HEX = re.compile(r"(?:[0-9A-Fa-f]{2})*\Z")
_PREFIXES: dict[str, EdmName] = {
    "datetime": Edm.DATETIME,
    "guid": Edm.GUID,
    "binary": Edm.BINARY,
    "x": Edm.BINARY,
}
_UNSUPPORTED_PREFIXES = {"datetimeoffset", "time", "decimal", "single", "byte", "sbyte", "int16"}
_SPECIAL_DOUBLES = {"INF": math.inf, "NaN": math.nan}


def syntax_error(text: str, pos: int, what: str) -> StubError:
    """A ``400 InvalidInput`` naming the position in the filter text."""
    return invalid_input(f"Syntax error at position {pos} in '{text}': {what}")


def _unrecognized(edm: str, literal: str) -> StubError:
    # The service's own text for a literal that does not fit its type.
    return invalid_input(f"Unrecognized '{edm}' literal '{literal}'")


def tokenize(text: str) -> list[Token]:
    """Split ``text`` into tokens, ending with an ``EOF`` token.

    Raises :class:`~azt_server_stub.errors.StubError` (``400 InvalidInput``) for
    malformed input.

    Example::

        >>> [t.text for t in tokenize("Age ge 21L")]
        ['Age', 'ge', '21L', '']
    """
    tokens: list[Token] = []
    append = tokens.append
    pos = 0
    end = len(text)
    while pos < end:
        ch = text[pos]
        if ch.isspace():
            m = _WS.match(text, pos)
            assert m is not None
            pos = m.end()
            continue
        if ch == "'":
            lit_end, value = _read_quoted(text, pos)
            append(Token(Tok.LITERAL, text[pos:lit_end], pos, Edm.STRING, value))
            pos = lit_end
            continue
        if "0" <= ch <= "9" or (ch == "-" and pos + 1 < end and "0" <= text[pos + 1] <= "9"):
            token, pos = _read_number(text, pos)
            append(token)
            continue
        if ch == "-":
            if text.startswith("-INF", pos) and not _continues_word(text, pos + 4):
                append(Token(Tok.LITERAL, "-INF", pos, Edm.DOUBLE, -math.inf))
                pos += 4
                continue
            append(Token(Tok.MINUS, "-", pos))
            pos += 1
            continue
        m = _IDENT.match(text, pos)
        if m is not None:
            word_end = m.end()
            if word_end < end and not text[word_end].isascii():
                word_end = extend_name(text, word_end)
            word = text[pos:word_end]
            if not word.isascii() and not is_property_name(word):
                raise syntax_error(text, pos, f"'{word}' is not a valid property name")
            if word_end < end and text[word_end] == "'":
                token, pos = _read_prefixed(text, pos, word, word_end)
                append(token)
                continue
            special = _SPECIAL_DOUBLES.get(word)
            if special is not None:
                append(Token(Tok.LITERAL, word, pos, Edm.DOUBLE, special))
            else:
                append(Token(Tok.IDENT, word, pos))
            pos = word_end
            continue
        if ch == "(":
            append(Token(Tok.LPAREN, ch, pos))
        elif ch == ")":
            append(Token(Tok.RPAREN, ch, pos))
        elif ch == ",":
            append(Token(Tok.COMMA, ch, pos))
        elif ch == "/":
            append(Token(Tok.SLASH, ch, pos))
        elif ch == ":":
            append(Token(Tok.COLON, ch, pos))
        elif ch == '"':
            raise syntax_error(
                text,
                pos,
                "string literals are enclosed in single quotes ('...'), not double quotes",
            )
        else:
            raise syntax_error(text, pos, f"invalid character {ch!r}")
        pos += 1
    append(Token(Tok.EOF, "", end))
    return tokens


def _continues_word(text: str, pos: int) -> bool:
    return pos < len(text) and (text[pos].isalnum() or text[pos] == "_")


def _read_quoted(text: str, pos: int) -> tuple[int, str]:
    """Read ``'...'`` starting at the quote at ``pos``; return (end, unescaped value)."""
    m = _STRING_BODY.match(text, pos + 1)
    if m is None:
        raise syntax_error(text, pos, "unterminated string literal (a quote inside is written '')")
    body = text[pos + 1 : m.end() - 1]
    return m.end(), body.replace("''", "'")


def _read_number(text: str, pos: int) -> tuple[Token, int]:
    m = _NUMBER.match(text, pos)
    assert m is not None
    raw = m.group()
    fraction, exponent, suffix = m.group(1), m.group(2), m.group(3)
    digits = raw[: len(raw) - len(suffix)] if suffix else raw
    if _continues_word(text, m.end()) or (m.end() < len(text) and text[m.end()] == "."):
        bad_end = m.end() + 1
        while _continues_word(text, bad_end) or (bad_end < len(text) and text[bad_end] == "."):
            bad_end += 1
        raise syntax_error(text, pos, f"malformed numeric literal {text[pos:bad_end]!r}")
    lower = suffix.lower()
    if lower == "l":
        if fraction or exponent:
            raise _unrecognized("Edm.Int64", raw)
        value = _integer(digits)
        if not INT64_MIN <= value <= INT64_MAX:
            raise _unrecognized("Edm.Int64", raw)
        return Token(Tok.LITERAL, raw, pos, Edm.INT64, value), m.end()
    if lower == "d" or (not suffix and (fraction or exponent)):
        number = float(digits)
        if math.isinf(number):
            raise _unrecognized("Edm.Double", raw)
        return Token(Tok.LITERAL, raw, pos, Edm.DOUBLE, number), m.end()
    if lower in ("m", "f"):
        kind = "Edm.Decimal" if lower == "m" else "Edm.Single"
        raise invalid_input(
            f"Syntax error at position {pos} in '{text}': {kind} literals such as {raw!r} are "
            "not supported by the Table service; use a Double (2.5) or an Int64 (25L)"
        )
    if suffix:
        raise syntax_error(text, pos, f"malformed numeric literal {raw!r}")
    value = _integer(digits)
    if not INT32_MIN <= value <= INT32_MAX:
        raise _unrecognized("Edm.Int32", raw)
    return Token(Tok.LITERAL, raw, pos, Edm.INT32, value), m.end()


def _integer(digits: str) -> int:
    """``int(digits)``; past Int64 when there are more digits than ``int`` converts."""
    try:
        return int(digits)
    except ValueError:  # only the digit-count limit: ``digits`` matched the number pattern
        return INT64_MAX + 1


def _read_prefixed(text: str, pos: int, word: str, quote: int) -> tuple[Token, int]:
    """A word directly followed by a quote: a typed literal, or a word then a string."""
    lower = word.lower()
    edm = _PREFIXES.get(lower)
    if edm is None:
        if lower in _UNSUPPORTED_PREFIXES:
            raise invalid_input(
                f"Syntax error at position {pos} in '{text}': {word}'...' literals are not "
                "supported by the Table service"
            )
        # e.g. "RowKey eq'x'": the word ends here and a string literal follows.
        return Token(Tok.IDENT, word, pos), quote
    end, body = _read_quoted(text, quote)
    raw = text[pos:end]
    value: Value
    if edm is Edm.DATETIME:
        try:
            value = parse_datetime(body)
        except (ValueError, OverflowError):
            raise _unrecognized("Edm.DateTime", raw) from None
    elif edm is Edm.GUID:
        if _GUID.match(body) is None:
            raise _unrecognized("Edm.Guid", raw)
        value = uuid.UUID(body)
    else:
        if _HEX.match(body) is None:
            raise _unrecognized("Edm.Binary", raw)
        try:
            value = base64.b16decode(body, casefold=True)
        except binascii.Error:  # pragma: no cover - excluded by _HEX
            raise _unrecognized("Edm.Binary", raw) from None
    return Token(Tok.LITERAL, raw, pos, edm, value), end


def unsupported(what: str) -> StubError:
    """``501 NotImplemented`` for valid OData the Table service does not implement.

    Azure answers ``startswith(...)`` and the other functions this way (observed
    for Query Entities and Query Tables); the stub extends it to the other
    operator families it does not implement (arithmetic, navigation, lambdas).
    """
    err = not_implemented()
    return StubError(err.status, err.code, f"{err.message} ({what})")
