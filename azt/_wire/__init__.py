"""Client-side wire formats: sans-I/O encoders and decoders. No aiohttp here.

CONTRACT between the wire owner and the client core (``azt/client.py``, ``_pipeline``):

``azt._wire.urls``
    ``entity_path(table, pk, rk) -> str``: ``"mytable(PartitionKey='a%27%27b',RowKey='')"``
    escaped per PROTOCOL.md 2.2 (double quotes, percent-encode outside RFC 3986
    unreserved). ``encode_query(params: Mapping[str, str]) -> str``: query string with
    ``%20`` for spaces, ``$`` kept, everything a value must encode encoded.

``azt._wire.json``
    ``encode_entity(entity, *, types=None) -> bytes``: a flat JSON object with
    ``@odata.type`` annotations for Int64/DateTime/Guid/Binary/Double (always for
    Double so integral floats stay Double), nulls omitted.
    ``decode_entity(obj: dict) -> TableEntity`` and ``decode_feed(body: bytes) ->
    list[TableEntity]`` for no/minimal/full metadata (nometadata needs no types: values
    stay as JSON gave them). ``decode_tables(body) -> list[str]``.
    ``encode_table(name) -> bytes``. ``decode_error(body) -> tuple[str | None, str | None]``
    (code, message).

``azt._wire.atom``
    The same functions for AtomPub (lxml): ``encode_entity``, ``decode_entry``,
    ``decode_feed``, ``decode_tables``, ``encode_table``, ``decode_error``.

``azt._wire.batch``
    ``BatchPart(method, url, headers, body)``;
    ``encode_batch(parts) -> tuple[str, bytes]`` (content type with boundary, body; CRLF,
    one change set, Content-ID per part); ``decode_batch_response(content_type, body) ->
    list[BatchResponsePart]`` with ``status``, ``headers``, ``body``.

``azt._wire.xml``
    Storage XML for ACLs (``SignedIdentifiers``), service properties and stats, and the
    storage ``<Error>`` body.
"""
