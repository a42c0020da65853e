"""Resource paths and query strings for the Table service (PROTOCOL.md 2, 2.2, 7.1).

Paths are relative to the account endpoint (no leading ``/``); the client core joins
them to the endpoint and sends the URL pre-encoded, exactly as signed.

Example::

    >>> entity_path("mytable", "pk", "RK'@*$!%")
    "mytable(PartitionKey='pk',RowKey='RK%27%27%40%2A%24%21%25')"
    >>> encode_query({"$filter": "PartitionKey eq 'a b'", "$top": "10"})
    '$filter=PartitionKey%20eq%20%27a%20b%27&$top=10'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final
from urllib.parse import quote

__all__ = [
    "BATCH_PATH",
    "TABLES_PATH",
    "encode_query",
    "entity_path",
    "escape_key",
    "table_entity_path",
    "table_path",
]

TABLES_PATH: Final = "Tables"
"""Path of Query Tables and Create Table."""
BATCH_PATH: Final = "$batch"
"""Path of entity group transactions."""


def escape_key(key: str) -> str:
    """Escape a PartitionKey/RowKey value for the inside of ``'...'`` in a URL path.

    Single quotes are doubled (OData string literal rule), then every character outside
    the RFC 3986 unreserved set is percent-encoded as UTF-8, quotes included.

    Example::

        >>> escape_key("O'Brien")
        'O%27%27Brien'
        >>> escape_key("é ~")
        '%C3%A9%20~'
    """
    if key.isalnum() and key.isascii():  # letters and digits: nothing to escape
        return key
    return quote(key.replace("'", "''"), safe="")


def entity_path(table: str, partition_key: str, row_key: str) -> str:
    """Path of one entity: ``table(PartitionKey='…',RowKey='…')`` with escaped keys.

    Example::

        >>> entity_path("t", "a'b", "")
        "t(PartitionKey='a%27%27b',RowKey='')"
    """
    # ASCII letters and digits (every table name, most keys) are left as they are, as
    # quote would leave them, without its call
    pk = (
        partition_key
        if partition_key.isalnum() and partition_key.isascii()
        else quote(partition_key.replace("'", "''"), safe="")
    )
    rk = (
        row_key
        if row_key.isalnum() and row_key.isascii()
        else quote(row_key.replace("'", "''"), safe="")
    )
    if not (table.isalnum() and table.isascii()):
        table = quote(table, safe="")
    return f"{table}(PartitionKey='{pk}',RowKey='{rk}')"


def table_path(table: str) -> str:
    """Path of a table's entity collection (query, insert, ACL with ``?comp=acl``).

    Example::

        >>> table_path("mytable")
        'mytable'
    """
    if table.isalnum() and table.isascii():  # (every valid table name)
        return table
    return quote(table, safe="")


def table_entity_path(table: str) -> str:
    """Path of the table resource itself: ``Tables('name')`` (Delete Table, get table).

    Example::

        >>> table_entity_path("mytable")
        "Tables('mytable')"
    """
    return f"Tables('{escape_key(table)}')"


def encode_query(params: Mapping[str, str]) -> str:
    """Encode query parameters; spaces become ``%20`` (never ``+``).

    Values are percent-encoded outside the RFC 3986 unreserved set (so ``/ ? : @ & = +
    , $ '`` are all encoded); names keep ``$`` (``$filter``, ``$top``, ``$select``).
    The result has no leading ``?``; an empty mapping gives ``""``.

    Example::

        >>> encode_query({"$select": "a,b", "NextRowKey": "1!8!U21pdGg-"})
        '$select=a%2Cb&NextRowKey=1%218%21U21pdGg-'
    """
    return "&".join(f"{quote(k, safe='$')}={quote(v, safe='')}" for k, v in params.items())
