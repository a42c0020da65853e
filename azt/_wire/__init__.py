"""Client-side wire formats: sans-I/O encoders and decoders. No aiohttp here.

Nothing in this package does I/O; every function maps Python values to bytes or
bytes to Python values, so it is tested without a network. Encoders raise
:class:`azt._exceptions.ValidationError` for input the service would refuse; decoders
raise :class:`WireDecodeError` for a response body that does not parse.

``azt._wire.urls``
    ``entity_path(table, pk, rk) -> str``: ``"mytable(PartitionKey='a%27%27b',RowKey='')"``
    escaped per PROTOCOL.md 2.2 (double quotes, percent-encode outside RFC 3986
    unreserved); ``table_path``, ``table_entity_path`` (``Tables('name')``),
    ``TABLES_PATH``, ``BATCH_PATH``. ``encode_query(params: Mapping[str, str]) -> str``:
    query string with ``%20`` for spaces, ``$`` kept in names, everything else outside
    the unreserved set encoded in values.

``azt._wire.json``
    ``encode_entity(entity, *, types=None) -> bytes``: a flat JSON object with
    ``@odata.type`` annotations for Int64/DateTime/Guid/Binary/Double (always for
    Double so integral floats stay Double), nulls omitted, ``Timestamp`` not sent.
    ``decode_entity(obj: dict) -> TableEntity``, ``decode_entry(body) -> TableEntity``
    and ``decode_feed(body: bytes) -> list[TableEntity]`` for no/minimal/full metadata
    (nometadata needs no types: values stay as JSON gave them). ``decode_tables(body)
    -> list[str]``, ``decode_table(body) -> str``, ``encode_table(name) -> bytes``,
    ``decode_error(body) -> tuple[str | None, str | None]`` (code, message).

``azt._wire.atom``
    The same functions for AtomPub (lxml): ``encode_entity``, ``decode_entry``,
    ``decode_feed``, ``decode_tables``, ``decode_table``, ``encode_table``,
    ``decode_error``.

``azt._wire.batch``
    ``BatchPart(method, url, headers, body)``;
    ``encode_batch(parts) -> tuple[str, bytes]`` (content type with boundary, body; CRLF,
    one change set, Content-ID per part), ``encode_query_batch(part)``;
    ``decode_batch_response(content_type, body) -> list[BatchResponsePart]`` with
    ``status``, ``reason``, ``headers`` (case-insensitive), ``body``, ``content_id``;
    ``decode_part_error(part) -> (code, message, index)``, ``parse_error_index``.

``azt._wire.xml``
    Storage XML as typed attrs classes: ``AccessPolicy`` with
    ``encode_signed_identifiers`` / ``decode_signed_identifiers``; ``ServiceProperties``
    (``Logging``, ``Metrics``, ``RetentionPolicy``, ``CorsRule``) with
    ``encode_service_properties`` / ``decode_service_properties``; ``ServiceStats``
    (``GeoReplication``) with ``decode_service_stats``; ``decode_storage_error``.
"""

from __future__ import annotations

import binascii

from azt._exceptions import AztError

__all__ = ["WireDecodeError", "decode_base64"]


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


class WireDecodeError(AztError, ValueError):
    """A response body did not have the shape the protocol promises.

    Example::

        >>> from azt._wire.json import decode_feed
        >>> try:
        ...     decode_feed(b"not json")
        ... except WireDecodeError as exc:
        ...     print(type(exc).__name__)
        WireDecodeError
    """
