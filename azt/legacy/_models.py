"""The value types of the legacy Python Table SDK (azure-cosmosdb-table 1.0.x) and the
conversions between them and azt's: ``Entity``, ``EntityProperty``, ``EdmType``,
``TablePermissions``, ``AccessPolicy``, ``ListGenerator``, ``TableBatch`` and the
``azure.common`` error classes, with the legacy SDK's typing rules.

Writing (legacy rules): a Python ``int`` is sent as ``Edm.Int64``, ``float`` as
``Edm.Double``, ``bool``, ``str`` and ``datetime`` (naive = UTC) as themselves,
``None`` is left out; anything else (``bytes``, ``uuid.UUID``, ...) needs an
``EntityProperty`` and otherwise raises ``TypeError``. Reading: ``Edm.Int32`` comes back
as ``EntityProperty(EdmType.INT32, n)``, ``Edm.Int64`` as a plain ``int``, ``Edm.Guid``
as ``EntityProperty(EdmType.GUID, "<text>")``, ``Edm.Binary`` as
``EntityProperty(EdmType.BINARY, b"...")``, ``Edm.DateTime`` as an aware ``datetime``;
``entity.etag`` holds the ETag.

Example::

    >>> e = Entity(PartitionKey="p", RowKey="r")
    >>> e.Size = EntityProperty(EdmType.INT32, 5)
    >>> e["Size"].type, e.RowKey
    ('Edm.Int32', 'r')
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from azt._core.batch import BatchOperation
from azt._core.results import UpdateMode
from azt._edm.datetime import EdmDateTime
from azt._edm.entity import TableEntity
from azt._edm.types import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, Typed
from azt._edm.types import EdmType as _Edm

__all__ = [
    "AccessPolicy",
    "AzureBatchOperationError",
    "AzureBatchValidationError",
    "AzureConflictHttpError",
    "AzureException",
    "AzureHttpError",
    "AzureMissingResourceHttpError",
    "EdmType",
    "Entity",
    "EntityProperty",
    "ListGenerator",
    "Table",
    "TableBatch",
    "TablePayloadFormat",
    "TablePermissions",
    "from_azt_entity",
    "to_azt_entity",
]

# --------------------------------------------------------------------------- errors


class AzureException(Exception):
    """The root of the legacy SDK's errors (``azure.common.AzureException``).

    Example::

        try:
            service.set_table_acl("movies", {str(i): AccessPolicy() for i in range(6)})
        except AzureException as exc:
            print(exc)   # too many access policies
    """


class AzureHttpError(AzureException):
    """The service answered with an error status: ``status_code`` (HTTP status) and
    ``error_code`` (the service's code, e.g. ``"UpdateConditionNotSatisfied"``).

    As in the legacy SDK, constructing it with 404 gives an
    :class:`AzureMissingResourceHttpError` and with 409 an :class:`AzureConflictHttpError`.

    Example::

        >>> type(AzureHttpError("gone", 404)).__name__
        'AzureMissingResourceHttpError'
    """

    error_code: str | None = None

    def __new__(cls, message: str, status_code: int, *args: Any, **kwargs: Any) -> AzureHttpError:
        if cls is AzureHttpError:
            if status_code == 404:
                cls = AzureMissingResourceHttpError
            elif status_code == 409:
                cls = AzureConflictHttpError
        created: AzureHttpError = AzureException.__new__(cls, message, status_code, *args)
        return created

    def __init__(self, message: str, status_code: int) -> None:
        super().__init__(message)
        self.status_code = status_code


class AzureConflictHttpError(AzureHttpError):
    """HTTP 409: the table or entity already exists (or the table is being deleted).

    Example::

        try:
            service.insert_entity("movies", {"PartitionKey": "a", "RowKey": "1"})
        except AzureConflictHttpError as exc:
            print(exc.status_code, exc.error_code)   # 409 EntityAlreadyExists
    """


class AzureMissingResourceHttpError(AzureHttpError):
    """HTTP 404: the table or entity does not exist.

    Example::

        try:
            service.get_entity("movies", "a", "missing")
        except AzureMissingResourceHttpError as exc:
            print(exc.status_code)   # 404
    """


class AzureBatchValidationError(AzureException):
    """A batch was built wrongly: two partition keys, a row key twice, over 100 operations.

    Example::

        batch = TableBatch()
        batch.insert_entity({"PartitionKey": "a", "RowKey": "1"})
        batch.insert_entity({"PartitionKey": "b", "RowKey": "2"})   # raises
    """


class AzureBatchOperationError(AzureHttpError):
    """An operation of a committed batch failed (nothing was applied): ``status_code`` is
    the failing operation's status, ``code`` its error code.

    Example::

        try:
            service.commit_batch("movies", batch)
        except AzureBatchOperationError as exc:
            print(exc.status_code, exc.code)   # e.g. 409 EntityAlreadyExists
    """

    def __init__(self, message: str, status_code: int, batch_code: str | None) -> None:
        super().__init__(message, status_code)
        self.code = batch_code


# --------------------------------------------------------------------------- entities


class Entity(dict[str, Any]):
    """An entity: a dict whose keys can also be read and written as attributes; entities
    read from the service carry ``etag``.

    Example::

        >>> e = Entity()
        >>> e.PartitionKey = "p"
        >>> e["PartitionKey"], e.get("etag")
        ('p', None)
    """

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"'Entity' object has no attribute '{name}'") from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value

    def __delattr__(self, name: str) -> None:
        try:
            del self[name]
        except KeyError:
            raise AttributeError(f"'Entity' object has no attribute '{name}'") from None

    def __dir__(self) -> list[str]:
        return [*dir({}), *self.keys()]


class EntityProperty:
    """A property value with an explicit EDM type (``type`` is an :class:`EdmType`
    string). ``encrypt`` belongs to client-side encryption, which azt does not support.

    Example::

        >>> p = EntityProperty(EdmType.INT64, 7)
        >>> p.type, p.value
        ('Edm.Int64', 7)
    """

    def __init__(self, type: str | None = None, value: Any = None, encrypt: bool = False) -> None:
        self.type = type
        self.value = value
        self.encrypt = encrypt

    def __repr__(self) -> str:
        return f"EntityProperty({self.type!r}, {self.value!r})"


class EdmType:
    """The EDM type names, as plain strings (the legacy SDK's constants).

    Example::

        >>> EdmType.GUID
        'Edm.Guid'
    """

    BINARY = "Edm.Binary"
    INT64 = "Edm.Int64"
    GUID = "Edm.Guid"
    DATETIME = "Edm.DateTime"
    STRING = "Edm.String"
    INT32 = "Edm.Int32"
    DOUBLE = "Edm.Double"
    BOOLEAN = "Edm.Boolean"


class TablePayloadFormat:
    """The ``Accept`` values of reads (azt reads minimal metadata whatever is asked; the
    values are kept so that legacy calls passing ``accept=`` still work).

    Example::

        >>> TablePayloadFormat.JSON_NO_METADATA
        'application/json;odata=nometadata'
    """

    JSON_NO_METADATA = "application/json;odata=nometadata"
    JSON_MINIMAL_METADATA = "application/json;odata=minimalmetadata"
    JSON_FULL_METADATA = "application/json;odata=fullmetadata"


class Table:
    """A table, as ``list_tables`` yields it: ``name``.

    Example::

        for table in service.list_tables():
            print(table.name)
    """

    name: str


class TablePermissions:
    """SAS / access-policy permissions: query (``r``), add (``a``), update (``u``),
    delete (``d``); combine with ``+`` or ``|``.

    Example::

        >>> str(TablePermissions.QUERY + TablePermissions.ADD)
        'ra'
    """

    QUERY: TablePermissions
    ADD: TablePermissions
    UPDATE: TablePermissions
    DELETE: TablePermissions

    def __init__(
        self,
        query: bool = False,
        add: bool = False,
        update: bool = False,
        delete: bool = False,
        _str: str | None = None,
    ) -> None:
        text = _str or ""
        self.query = query or "r" in text
        self.add = add or "a" in text
        self.update = update or "u" in text
        self.delete = delete or "d" in text

    def __or__(self, other: object) -> TablePermissions:
        return TablePermissions(_str=str(self) + str(other))

    def __add__(self, other: object) -> TablePermissions:
        return TablePermissions(_str=str(self) + str(other))

    def __str__(self) -> str:
        return (
            ("r" if self.query else "")
            + ("a" if self.add else "")
            + ("u" if self.update else "")
            + ("d" if self.delete else "")
        )


TablePermissions.QUERY = TablePermissions(query=True)
TablePermissions.ADD = TablePermissions(add=True)
TablePermissions.UPDATE = TablePermissions(update=True)
TablePermissions.DELETE = TablePermissions(delete=True)


class AccessPolicy:
    """A stored access policy (``set_table_acl`` / ``get_table_acl``): ``permission``
    (a string or :class:`TablePermissions`), ``expiry`` and ``start`` (datetimes, naive =
    UTC, or strings sent as given).

    Example::

        >>> AccessPolicy(permission=TablePermissions.QUERY).permission.query
        True
    """

    def __init__(self, permission: Any = None, expiry: Any = None, start: Any = None) -> None:
        self.start = start
        self.expiry = expiry
        self.permission = permission


# --------------------------------------------------------------------------- paging


class ListGenerator(Iterable[Any]):
    """The items of a listing or query, fetched page by page as iteration goes on.

    ``next_marker`` is where the listing stopped: after a query, a dict with
    ``nextpartitionkey``/``nextrowkey`` (empty when it ran to the end); after
    ``list_tables``, the next table name or ``None``. With ``num_results`` the generator
    stops after that many items and leaves ``next_marker`` set for a later call's
    ``marker=``.

    Example::

        page = service.query_entities("movies", num_results=100)
        rows = list(page)
        more = service.query_entities("movies", num_results=100, marker=page.next_marker)
    """

    def __init__(
        self,
        items: list[Any],
        next_marker: Any,
        fetch: Callable[[Any, int | None], tuple[list[Any], Any]],
        max_results: int | None,
    ) -> None:
        self.items = items
        self.next_marker = next_marker
        self._fetch = fetch
        self._max_results = max_results

    def __iter__(self) -> Iterator[Any]:
        yield from self.items
        while self.next_marker:
            # the legacy accounting: what is left after the page just yielded
            if self._max_results is not None:
                self._max_results -= len(self.items)
                if self._max_results <= 0:
                    break
            self.items, self.next_marker = self._fetch(self.next_marker, self._max_results)
            yield from self.items


# --------------------------------------------------------------------------- writing


def _check_range(value: Any, low: int, high: int, edm: str) -> int:
    number = int(value)
    if number > high or number < low:
        raise TypeError(f"{value} is too large to be cast to type {edm}.")
    return number


def _aware(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def _typed_property(prop: EntityProperty) -> Any:
    edm, value = prop.type, prop.value
    if edm == EdmType.BINARY:
        return Typed(value.encode("utf-8") if isinstance(value, str) else value, _Edm.BINARY)
    if edm == EdmType.BOOLEAN:
        return Typed(value, _Edm.BOOLEAN)
    if edm == EdmType.DATETIME:
        return Typed(_aware(value), _Edm.DATETIME)
    if edm == EdmType.DOUBLE:
        return Typed(float(value), _Edm.DOUBLE)
    if edm == EdmType.GUID:
        return Typed(str(value), _Edm.GUID)
    if edm == EdmType.INT32:
        return Typed(_check_range(value, INT32_MIN, INT32_MAX, edm), _Edm.INT32)
    if edm == EdmType.INT64:
        return Typed(_check_range(value, INT64_MIN, INT64_MAX, edm), _Edm.INT64)
    if edm == EdmType.STRING:
        return Typed(value, _Edm.STRING)
    raise TypeError(f"Type not supported when sending data to the service: {edm}.")


def _typed_python(value: Any) -> Any:
    kind = type(value)
    if kind is int:
        return Typed(_check_range(value, INT64_MIN, INT64_MAX, EdmType.INT64), _Edm.INT64)
    if kind is datetime:
        return _aware(value)
    if kind in (bool, float, str) or value is None:
        return value
    raise TypeError(
        f"Cannot serialize the specified value ({kind.__name__}) to an entity.  Please use "
        "an EntityProperty (which can specify custom types), int, str, bool, or datetime."
    )


def to_azt_entity(entity: object) -> dict[str, Any]:
    """A legacy entity (dict or :class:`Entity`) as azt writes it, checked as the legacy
    SDK checks it (``TypeError`` / ``ValueError``). ``etag`` and ``Timestamp`` are the
    entity's metadata, not data, and are not sent.

    Example::

        >>> to_azt_entity({"PartitionKey": "p", "RowKey": "r", "n": 5})["n"]
        Typed(value=5, edm_type=<EdmType.INT64: 'Edm.Int64'>)
    """
    if entity is None:
        raise ValueError("entity should not be None.")
    if not isinstance(entity, dict):
        raise TypeError("The entity must be either in dict format or an entity object.")
    for key in ("PartitionKey", "RowKey"):
        if entity.get(key) is None:
            raise ValueError(f"{key} should not be None or empty.")
    if len(entity) > 255 or (len(entity) == 255 and "Timestamp" not in entity):
        raise ValueError("The entity contains more properties than allowed.")
    out: dict[str, Any] = {}
    for name, value in entity.items():
        if len(name) > 255:
            raise ValueError("The property name exceeds the maximum allowed length.")
        if name in ("etag", "Timestamp"):
            continue
        if isinstance(value, EntityProperty):
            out[name] = _typed_property(value)
        else:
            out[name] = _typed_python(value)
    return out


# --------------------------------------------------------------------------- reading


def _plain_datetime(value: Any) -> datetime:
    if isinstance(value, EdmDateTime):
        return value.to_datetime()
    if isinstance(value, datetime):
        return _aware(value)
    return EdmDateTime.parse(str(value)).to_datetime()


def from_azt_entity(entity: TableEntity) -> Entity:
    """An entity azt read, in the legacy SDK's shapes (see the module docstring).

    Example::

        >>> e = TableEntity(PartitionKey="p", RowKey="r", n=5)
        >>> from_azt_entity(e)["n"]
        EntityProperty('Edm.Int32', 5)
    """
    types = entity.edm_types
    meta = entity.metadata
    out = Entity()
    for key in ("PartitionKey", "RowKey"):
        if entity.get(key):
            out[key] = entity[key]
    stamp = entity.get("Timestamp", meta.timestamp)
    if stamp is not None:
        out["Timestamp"] = _plain_datetime(stamp)
    for name, value in entity.items():
        if name in ("PartitionKey", "RowKey", "Timestamp"):
            continue
        edm = types.get(name)
        if isinstance(value, bool) or value is None:
            out[name] = value
        elif isinstance(value, int):
            if edm is _Edm.INT64:
                out[name] = value
            else:
                out[name] = EntityProperty(EdmType.INT32, value)
        elif isinstance(value, uuid.UUID):
            out[name] = EntityProperty(EdmType.GUID, str(value))
        elif isinstance(value, bytes):
            out[name] = EntityProperty(EdmType.BINARY, value)
        elif isinstance(value, datetime):
            out[name] = _plain_datetime(value)
        else:
            out[name] = value
    out["etag"] = meta.etag
    return out


# --------------------------------------------------------------------------- batches


class TableBatch:
    """Operations on one partition, committed together with ``commit_batch`` (or by
    leaving a ``with service.batch(table) as batch:`` block): all succeed or none.

    At most 100 operations, one partition key, each row key once
    (:class:`AzureBatchValidationError` otherwise). The encryption arguments exist for
    signature compatibility; azt does not support client-side encryption.

    Example::

        batch = TableBatch()
        batch.insert_entity({"PartitionKey": "a", "RowKey": "1", "n": 1})
        batch.delete_entity("a", "0")
        etags = service.commit_batch("movies", batch)
    """

    def __init__(
        self,
        require_encryption: bool = False,
        key_encryption_key: object = None,
        encryption_resolver: object = None,
    ) -> None:
        # encryption_resolver stays in the signature for callers that pass it: the legacy
        # SDK reads it only with a key-encryption key, which is refused here
        if require_encryption or key_encryption_key is not None:
            raise AzureException("azt.legacy does not support client-side encryption")
        self._operations: list[BatchOperation] = []
        self._partition_key: str | None = None
        self._row_keys: list[str] = []

    def insert_entity(self, entity: Mapping[str, Any]) -> None:
        """Add an insert. Example: ``batch.insert_entity({"PartitionKey": "a", "RowKey": "1"})``"""
        self._add(BatchOperation("create", to_azt_entity(entity)))

    def update_entity(self, entity: Mapping[str, Any], if_match: str = "*") -> None:
        """Add a replace. Example: ``batch.update_entity(entity, if_match=entity.etag)``"""
        self._add(self._update(entity, if_match, UpdateMode.REPLACE))

    def merge_entity(self, entity: Mapping[str, Any], if_match: str = "*") -> None:
        """Add a merge. Example: ``batch.merge_entity({"PartitionKey": "a", "RowKey": "1"})``"""
        self._add(self._update(entity, if_match, UpdateMode.MERGE))

    def delete_entity(self, partition_key: str, row_key: str, if_match: str = "*") -> None:
        """Add a delete. Example: ``batch.delete_entity("a", "1")``"""
        if if_match is None:
            raise ValueError("if_match should not be None.")
        keys = {"PartitionKey": partition_key, "RowKey": row_key}
        self._add(BatchOperation("delete", keys, etag=if_match))

    def insert_or_replace_entity(self, entity: Mapping[str, Any]) -> None:
        """Add an upsert (replace). Example: ``batch.insert_or_replace_entity(entity)``"""
        self._add(BatchOperation("upsert", to_azt_entity(entity), mode=UpdateMode.REPLACE))

    def insert_or_merge_entity(self, entity: Mapping[str, Any]) -> None:
        """Add an upsert (merge). Example: ``batch.insert_or_merge_entity(entity)``"""
        self._add(BatchOperation("upsert", to_azt_entity(entity), mode=UpdateMode.MERGE))

    @staticmethod
    def _update(entity: Mapping[str, Any], if_match: str, mode: UpdateMode) -> BatchOperation:
        if if_match is None:
            raise ValueError("if_match should not be None.")
        return BatchOperation("update", to_azt_entity(entity), mode=mode, etag=if_match)

    def _add(self, operation: BatchOperation) -> None:
        pk, rk = operation.entity["PartitionKey"], operation.entity["RowKey"]
        if self._partition_key:
            if self._partition_key != pk:
                raise AzureBatchValidationError(
                    "Partition Key should be the same in a batch operations"
                )
        else:
            self._partition_key = pk
        if rk in self._row_keys:
            raise AzureBatchValidationError("Row Keys should not be the same in a batch operations")
        self._row_keys.append(rk)
        if len(self._operations) >= 100:
            raise AzureBatchValidationError("Batches may only contain 100 operations")
        self._operations.append(operation)

    @property
    def operations(self) -> list[BatchOperation]:
        """The operations added so far, as azt batch operations.

        Example::

            >>> b = TableBatch()
            >>> b.delete_entity("a", "1")
            >>> b.operations[0].kind
            'delete'
        """
        return list(self._operations)
