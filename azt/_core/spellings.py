"""The ``azure-data-tables`` spellings the clients accept beside their own, in one place.

Code ported from Microsoft's SDK keeps a few of its spellings where they are unambiguous
and cheap to take (docs/porting-azure-data-tables.md says which, and why): the
``query_filter=`` keyword, ``select="A,B"``, ``match_condition=`` on conditional writes,
and the operation tuples of ``submit_transaction``. Each resolves here to azt's own form;
what cannot be resolved is refused with a :class:`azt.ValidationError` whose message names
azt's spelling.

Example::

    >>> merge_filter(None, "PartitionKey eq 'p'", "query_entities()")
    "PartitionKey eq 'p'"
"""

from __future__ import annotations

import enum
import urllib.parse
from collections.abc import Mapping
from typing import Any

from azt._core.base import check_etag, entity_source
from azt._core.batch import TableBatch
from azt._core.results import UpdateMode
from azt._edm.entity import TableEntity
from azt._errors import BatchValidationError, ValidationError

__all__ = ["add_transaction_tuple", "if_match", "merge_filter", "split_table_url"]

#: ``azure.core.MatchConditions`` members the Table service can honour, by name (azt reads
#: the member's ``name``, so azure-core need not be installed for azt to take them)
_UNCONDITIONALLY = "Unconditionally"
_IF_NOT_MODIFIED = "IfNotModified"


def merge_filter(filter: str | None, query_filter: str | None, what: str) -> str | None:
    """The filter of a query given as ``filter`` (azt) or ``query_filter``
    (``azure-data-tables``); both at once is refused.

    Example::

        >>> merge_filter("RowKey gt '5'", None, "query_entities()")
        "RowKey gt '5'"
    """
    if query_filter is None:
        return filter
    if filter is not None:
        raise ValidationError(
            f"{what} takes the filter once: as its first argument (or filter=), or as "
            "query_filter= (azure-data-tables' name), not both"
        )
    return query_filter


def split_table_url(table_url: str) -> tuple[str, str]:
    """``(endpoint, table name)`` of a table's URL, as ``azure-data-tables``'
    ``TableClient.from_table_url`` takes it: the last path segment is the table, the rest
    (with the query string, where a SAS token may ride) the endpoint.

    Example::

        >>> split_table_url("https://acct.table.core.windows.net/movies?sv=x&sig=y")
        ('https://acct.table.core.windows.net?sv=x&sig=y', 'movies')
        >>> split_table_url("http://127.0.0.1:10002/devstoreaccount1/movies")
        ('http://127.0.0.1:10002/devstoreaccount1', 'movies')
    """
    if not isinstance(table_url, str):
        raise ValidationError(f"table_url must be a str, got {type(table_url).__name__}")
    parts = urllib.parse.urlsplit(table_url.strip())
    head, _, name = parts.path.rstrip("/").rpartition("/")
    if parts.scheme not in ("http", "https") or not parts.netloc or not name:
        raise ValidationError(
            f"{table_url!r} is not a table URL (http(s)://host[/account]/table); azt: "
            "TableClient(endpoint, table_name, credential)"
        )
    endpoint = urllib.parse.urlunsplit((parts.scheme, parts.netloc, head, parts.query, ""))
    return endpoint, urllib.parse.unquote(name)


def _condition_name(match_condition: object) -> str:
    name = getattr(match_condition, "name", match_condition)
    return name if isinstance(name, str) else repr(match_condition)


def if_match(
    etag: str | None,
    match_condition: object,
    entity: object,
    own_etag: str | None,
    what: str,
) -> str:
    """The ``If-Match`` of a conditional write from azt's ``etag`` and, when given,
    ``azure-data-tables``' ``match_condition`` (an ``azure.core.MatchConditions``).

    Without ``match_condition`` it is azt's rule: ``etag``, else the entity object's own
    ETag (``own_etag``), else ``"*"``. ``MatchConditions.Unconditionally`` is ``"*"`` (an
    ETag beside it is refused, as azure-data-tables refuses it);
    ``MatchConditions.IfNotModified`` is ``etag``, else the ETag the entity was read with
    (``entity.metadata.etag`` of a ``TableEntity``, or an entity object's own); without one
    it is refused. Other conditions mean nothing to a Table write and are refused.

    Example::

        >>> import enum
        >>> class MatchConditions(enum.Enum):  # stands for azure.core.MatchConditions
        ...     Unconditionally = 1
        ...     IfNotModified = 2
        >>> if_match(None, MatchConditions.IfNotModified, None, None, "w") # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        azt._errors.ValidationError: w: match_condition=IfNotModified needs an ETag: ...
        >>> if_match('W/"1"', MatchConditions.IfNotModified, None, None, "w")
        'W/"1"'
        >>> if_match(None, MatchConditions.Unconditionally, None, 'W/"1"', "w")
        '*'
    """
    if match_condition is None:
        return check_etag(etag if etag is not None else own_etag or "*")
    name = _condition_name(match_condition)
    if name == _UNCONDITIONALLY:
        if etag is not None and etag != "*":
            raise ValidationError(
                f"{what}: an etag with match_condition=Unconditionally is contradictory; "
                "for a conditional write pass etag= alone (azt), for an unconditional one "
                "etag='*' or neither"
            )
        return "*"
    if name == _IF_NOT_MODIFIED:
        if etag is None:
            etag = own_etag
        if etag is None and isinstance(entity, TableEntity):
            etag = entity.metadata.etag
        if etag is None or etag == "*":
            raise ValidationError(
                f"{what}: match_condition=IfNotModified needs an ETag: pass etag=, or an "
                "entity read from the service (in azt, etag=entity.metadata.etag alone "
                "makes the write conditional)"
            )
        return check_etag(etag)
    raise ValidationError(
        f"{what}: match_condition={name} means nothing to a Table write; azt takes "
        "etag=<ETag> for a conditional write and etag='*' for an unconditional one "
        "(match_condition IfNotModified and Unconditionally are accepted as "
        "azure-data-tables spells them)"
    )


_TUPLE_KINDS = ("create", "upsert", "update", "delete")
_TUPLE_OPTIONS = {
    "create": frozenset(),
    "upsert": frozenset({"mode"}),
    "update": frozenset({"mode", "etag", "match_condition"}),
    "delete": frozenset({"etag", "match_condition"}),
}


def add_transaction_tuple(batch: TableBatch, item: tuple[Any, ...], index: int) -> None:
    """Add an ``azure-data-tables`` transaction operation, ``(kind, entity)`` or ``(kind,
    entity, options)``, to ``batch`` as azt's own operation: ``kind`` is ``"create"``,
    ``"upsert"``, ``"update"`` or ``"delete"`` (or an ``azure.data.tables
    .TransactionOperation``), ``options`` a mapping of ``mode`` (upsert, update), ``etag``
    and ``match_condition`` (update, delete). Anything else is refused with a
    :class:`azt.BatchValidationError` naming the ``table.batch()`` method to use.

    Example::

        >>> batch = TableBatch("movies")
        >>> add_transaction_tuple(batch, ("upsert", {"PartitionKey": "p", "RowKey": "1"},
        ...                               {"mode": "replace"}), 0)
        >>> batch.operations[0].kind, batch.operations[0].mode.value
        ('upsert', 'replace')
    """
    if not 2 <= len(item) <= 3:
        raise BatchValidationError(
            f"operation {index}: a transaction tuple is (kind, entity) or (kind, entity, "
            f"options), got {len(item)} items; or build azt's own: table.batch() and its "
            "create / upsert / update / delete",
            index=index,
        )
    raw_kind, entity = item[0], item[1]
    options: Any = item[2] if len(item) == 3 else {}
    kind = raw_kind.value if isinstance(raw_kind, enum.Enum) else raw_kind
    kind = kind.lower() if isinstance(kind, str) else kind
    if kind not in _TUPLE_KINDS:
        raise BatchValidationError(
            f"operation {index}: unknown transaction operation {raw_kind!r}; the kinds are "
            "'create', 'upsert', 'update' and 'delete' (azt: table.batch() and its methods "
            "of those names)",
            index=index,
        )
    if not isinstance(options, Mapping):
        raise BatchValidationError(
            f"operation {index}: the third item of a transaction tuple is a mapping of "
            f"options, got {type(options).__name__}",
            index=index,
        )
    unknown = sorted(set(options) - _TUPLE_OPTIONS[kind])
    if unknown:
        allowed = ", ".join(sorted(_TUPLE_OPTIONS[kind])) or "none"
        raise BatchValidationError(
            f"operation {index}: {kind} takes no option {', '.join(map(repr, unknown))} "
            f"(its options: {allowed}); azt: batch.{kind}(...) states them as arguments",
            index=index,
        )
    what = f"transaction operation {index} ({kind})"
    mode = UpdateMode.MERGE
    if "mode" in options:
        try:
            mode = UpdateMode(options["mode"])
        except ValueError:
            raise BatchValidationError(
                f"{what}: mode is UpdateMode.MERGE or UpdateMode.REPLACE ('merge' or "
                f"'replace'), got {options['mode']!r}",
                index=index,
            ) from None
    if kind == "create":
        batch.create(entity)
    elif kind == "upsert":
        batch.upsert(entity, mode)
    else:
        _, _, own_etag = entity_source(entity)
        etag = if_match(options.get("etag"), options.get("match_condition"), entity, own_etag, what)
        if kind == "update":
            batch.update(entity, mode, etag=etag)
        else:
            batch.delete(entity, etag=etag)
