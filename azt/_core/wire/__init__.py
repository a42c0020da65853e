"""Client-side wire formats: sans-I/O encoders and decoders. No aiohttp here.

Nothing in this package does I/O; every function maps Python values to bytes or
bytes to Python values, so it is tested without a network. Encoders raise
:class:`azt._errors.ValidationError` for input the service would refuse; decoders
raise :class:`WireDecodeError` for a response body that does not parse.

``azt._core.wire.urls``
    ``entity_path(table, pk, rk) -> str``: ``"mytable(PartitionKey='a%27%27b',RowKey='')"``
    escaped per PROTOCOL.md 2.2 (double quotes, percent-encode outside RFC 3986
    unreserved); ``table_path``, ``table_entity_path`` (``Tables('name')``),
    ``TABLES_PATH``, ``BATCH_PATH``. ``encode_query(params: Mapping[str, str]) -> str``:
    query string with ``%20`` for spaces, ``$`` kept in names, everything else outside
    the unreserved set encoded in values.

``azt._core.wire.json``
    ``encode_entity(entity, *, types=None) -> bytes``: a flat JSON object with
    ``@odata.type`` annotations for Int64/DateTime/Guid/Binary/Double (always for
    Double so integral floats stay Double), nulls omitted, ``Timestamp`` not sent.
    ``decode_entity(obj: dict) -> TableEntity``, ``decode_entry(body) -> TableEntity``
    and ``decode_feed(body: bytes) -> list[TableEntity]`` for no/minimal/full metadata
    (nometadata needs no types: values stay as JSON gave them). ``decode_tables(body)
    -> list[str]``, ``decode_table(body) -> str``, ``encode_table(name) -> bytes``,
    ``decode_error(body) -> tuple[str | None, str | None]`` (code, message).

``azt._core.wire.atom``
    The same functions for AtomPub (lxml): ``encode_entity``, ``decode_entry``,
    ``decode_feed``, ``decode_tables``, ``decode_table``, ``encode_table``,
    ``decode_error``.

``azt._core.wire.batch``
    ``BatchPart(method, url, headers, body)``;
    ``encode_batch(parts) -> tuple[str, bytes]`` (content type with boundary, body; CRLF,
    one change set, Content-ID per part), ``encode_query_batch(part)``;
    ``decode_batch_response(content_type, body) -> list[BatchResponsePart]`` with
    ``status``, ``reason``, ``headers`` (case-insensitive), ``body``, ``content_id``;
    ``decode_part_error(part) -> (code, message, index)``, ``parse_error_index``.

``azt._core.wire.xml``
    Storage XML as typed attrs classes: ``AccessPolicy`` with
    ``encode_signed_identifiers`` / ``decode_signed_identifiers``; ``ServiceProperties``
    (``Logging``, ``Metrics``, ``RetentionPolicy``, ``CorsRule``) with
    ``encode_service_properties`` / ``decode_service_properties``; ``ServiceStats``
    (``GeoReplication``) with ``decode_service_stats``; ``decode_storage_error``.
"""

from __future__ import annotations

import binascii
import uuid

from azt._errors import AztError

__all__ = ["WireDecodeError", "decode_base64", "decode_guid"]


def decode_base64(text: str) -> bytes:
    """An ``Edm.Binary`` wire value: standard base64 with padding, read strictly (a lenient
    decoder skips characters outside the alphabet and would read a Guid or a DateTime text
    as bytes). Every decoder of binary values (JSON, AtomPub, the entity codecs) uses it,
    so that all paths accept and refuse the same texts. Raises ``binascii.Error``.

    Example::

        >>> decode_base64("AAEC/w==")
        b'\\x00\\x01\\x02\\xff'
        >>> decode_base64("AA E=")
        Traceback (most recent call last):
        ...
        binascii.Error: Only base64 data is allowed
    """
    return _a2b_base64(text, strict_mode=True)


_a2b_base64 = binascii.a2b_base64


def decode_guid(text: str) -> uuid.UUID:
    """An ``Edm.Guid`` wire value: exactly the canonical 8-4-4-4-12 hex form (``uuid.UUID``
    also takes braces, ``urn:uuid:`` and bare hex, and ``int`` would take a sign or ``_``
    inside a group), built without ``uuid.UUID``'s parsing. Every decoder of Guid values
    uses it. Raises ``ValueError``.

    Example::

        >>> decode_guid("c9da6455-213d-42c9-9a79-3e9149a57833")
        UUID('c9da6455-213d-42c9-9a79-3e9149a57833')
        >>> decode_guid("c9da_455-213d-42c9-9a79-3e9149a57833")
        Traceback (most recent call last):
        ...
        ValueError: not an 8-4-4-4-12 GUID: 'c9da_455-213d-42c9-9a79-3e9149a57833'
    """
    if (
        len(text) == 36
        and text[8] == "-"
        and text[13] == "-"
        and text[18] == "-"
        and text[23] == "-"
    ):
        digits = text.replace("-", "")
        if len(digits) == 32 and digits.isascii() and digits.isalnum():
            try:
                n = int(digits, 16)
            except ValueError:
                pass
            else:
                u = _new_uuid(_UUID)
                _set_uuid_int(u, n)
                _set_uuid_safe(u, _SAFE_UNKNOWN)
                return u
    raise ValueError(f"not an 8-4-4-4-12 GUID: {text!r}")


_UUID = uuid.UUID
_new_uuid = object.__new__
_set_uuid_int = _UUID.__dict__["int"].__set__
_set_uuid_safe = _UUID.__dict__["is_safe"].__set__
_SAFE_UNKNOWN = uuid.SafeUUID.unknown


class WireDecodeError(AztError, ValueError):
    """A response body did not have the shape the protocol promises.

    Example::

        >>> from azt._core.wire.json import decode_feed
        >>> try:
        ...     decode_feed(b"not json")
        ... except WireDecodeError as exc:
        ...     print(type(exc).__name__)
        WireDecodeError
    """
