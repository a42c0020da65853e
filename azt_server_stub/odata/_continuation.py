"""Continuation tokens (``NextPartitionKey``, ``NextRowKey``, ``NextTableName``).

Azure's form (PROTOCOL.md 7.7): ``1!<n>!<payload>`` where ``<payload>`` is the
standard base64 of the UTF-8 value with each padding ``=`` written as ``-`` and
``<n>`` is the payload's length. ``NextTableName`` payloads carry the table
name, a ``0x01`` byte and an opaque suffix.

Decoding is strict for anything shaped like ``<digits>!...`` (wrong version,
wrong length, bad base64 or UTF-8 -> ``400 InvalidInput`` "One of the request
inputs is not valid.", the service's answer to a bad token, including an empty
one such as ``NextRowKey=``). An empty key (legal for keys) encodes as
``1!0!``. Any other non-empty text is taken as the raw key itself, as
PROTOCOL.md recommends for clients that echo plain values. Plain
base64 (Azurite's form) is deliberately not guessed at: it cannot be told apart
from a raw key such as ``abcd``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re

from ..errors import invalid_input

_AZURE = re.compile(r"([0-9]+)!([0-9]+)!(.*)", re.DOTALL)
_VERSIONED = re.compile(r"[0-9]+!")
_TABLE_SEP = "\x01"


def encode_continuation(value: str) -> str:
    """Encode a key (or table name) as Azure's continuation token.

    Example::

        >>> encode_continuation("Smith")
        '1!8!U21pdGg-'
        >>> encode_continuation("pk121a1965")
        '1!16!cGsxMjFhMTk2NQ--'
    """
    payload = base64.b64encode(value.encode("utf-8")).decode("ascii").replace("=", "-")
    return f"1!{len(payload)}!{payload}"


def decode_continuation(token: str) -> str:
    """Decode a continuation token back to the key (raises ``400 InvalidInput`` if malformed).

    Accepts Azure-style tokens and, leniently, raw key values.

    Example::

        >>> decode_continuation("1!12!QmVuMTg5OA--")
        'Ben1898'
        >>> decode_continuation("Ben1898")
        'Ben1898'
    """
    if not token:
        raise invalid_input()
    m = _AZURE.fullmatch(token)
    if m is None:
        if _VERSIONED.match(token):
            raise invalid_input()
        return token
    version, length, payload = m.groups()
    if version != "1" or int(length) != len(payload):
        raise invalid_input()
    # '+' may arrive as a space when a client did not percent-encode it.
    payload = payload.replace(" ", "+")
    stripped = payload.rstrip("-")
    padding = len(payload) - len(stripped)
    if padding > 2 or (len(payload) % 4) != 0:
        raise invalid_input()
    try:
        raw = base64.b64decode(stripped + "=" * padding, validate=True)
        return raw.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise invalid_input() from None


def encode_table_continuation(name: str) -> str:
    """Encode ``NextTableName`` the way Azure does: the name, ``0x01`` and an opaque suffix.

    Example::

        >>> decode_table_continuation(encode_table_continuation("mytable"))
        'mytable'
    """
    suffix = hashlib.blake2b(name.lower().encode("utf-8"), digest_size=8).hexdigest()
    return encode_continuation(name + _TABLE_SEP + suffix)


def decode_table_continuation(token: str) -> str:
    """Decode ``NextTableName`` to the table name (raw names are accepted too).

    Example::

        >>> decode_table_continuation("1!48!bGlzdHRhYmxlM2NhYzE0YzMBMDFkNjhiYjQzYjkyNWUxOQ--")
        'listtable3cac14c3'
    """
    return decode_continuation(token).split(_TABLE_SEP, 1)[0]


#: The partition key range a Cosmos DB Table API token names: the whole (single) range
#: of a small table, as recorded.
_COSMOS_RANGE = {"min": "", "max": "FF"}

#: The NextRowKey the Cosmos DB Table API sends (the position is all in NextPartitionKey).
COSMOS_NEXT_ROW_KEY = "NA"


def encode_cosmos_continuation(key: tuple[str, str], rank: int) -> tuple[str, str]:
    """``(NextPartitionKey, NextRowKey)`` in the Cosmos DB Table API's shape: a JSON object
    with a base64 ``token`` and the partition key ``range``, and ``NA`` (recorded:
    ``{"token":"+iBeAJJv6IgCAAAAAAAAAA==","range":{"min":"","max":"FF"}}`` / ``NA``).
    The stub's token is the base64 of the next entity's creation rank and key, opaque to
    clients as Cosmos's is.

    Example::

        >>> npk, nrk = encode_cosmos_continuation(("p", "r"), 7)
        >>> npk, nrk
        ('{"token":"WzcsInAiLCJyIl0=","range":{"min":"","max":"FF"}}', 'NA')
        >>> decode_cosmos_continuation(npk)
        (7, ('p', 'r'))
    """
    payload = json.dumps([rank, *key], separators=(",", ":")).encode("ascii")
    token = {"token": base64.b64encode(payload).decode("ascii"), "range": _COSMOS_RANGE}
    return json.dumps(token, separators=(",", ":")), COSMOS_NEXT_ROW_KEY


def decode_cosmos_continuation(token: str) -> tuple[int, tuple[str, str]] | None:
    """The creation rank and key a Cosmos-shaped NextPartitionKey names; None when
    ``token`` is not Cosmos-shaped (a JSON object); ``400 InvalidInput`` when it is but
    does not decode.

    Example::

        >>> decode_cosmos_continuation("1!4!cA--") is None
        True
        >>> decode_cosmos_continuation('{"token":"!!","range":{}}')
        Traceback (most recent call last):
        ...
        azt_server_stub.errors.StubError: 400 InvalidInput: ...
    """
    if not token.lstrip().startswith("{"):
        return None
    try:
        outer = json.loads(token)
        # '+' may arrive as a space when a client did not percent-encode it.
        raw = base64.b64decode(str(outer["token"]).replace(" ", "+"), validate=True)
        rank, pk, rk = json.loads(raw.decode("ascii"))
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise invalid_input() from None
    if type(rank) is not int or not isinstance(pk, str) or not isinstance(rk, str):
        raise invalid_input()
    return rank, (pk, rk)
