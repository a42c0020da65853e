"""The value types of the legacy Python Table SDK (azure-cosmosdb-table 1.0.x):
``Entity``, ``EntityProperty``, ``EdmType``, ``TablePermissions``, ``AccessPolicy``,
``ResourceTypes``, ``AccountPermissions``, ``ListGenerator`` and the ``azure.common``
error classes. How entities are written and read is :mod:`azt.legacy._wire`.

Example::

    >>> e = Entity(PartitionKey="p", RowKey="r")
    >>> e.Size = EntityProperty(EdmType.INT32, 5)
    >>> e["Size"].type, e.RowKey
    ('Edm.Int32', 'r')
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

__all__ = [
    "AccessPolicy",
    "AccountPermissions",
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
    "ResourceTypes",
    "Table",
    "TablePayloadFormat",
    "TablePermissions",
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
    string). ``encrypt=True`` marks a string property for client-side encryption (the
    ``azt-tables[legacy-encryption]`` extra).

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
    """The ``Accept`` values of reads (``accept=`` of ``get_entity``/``query_entities``):
    with no metadata, values come back untyped (an Int64 as a string, a date as its text,
    binary as base64) unless a ``property_resolver`` types them.

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


class _Letters:
    """Flags written as a string of letters (``str()``), combined with ``+`` or ``|``."""

    _LETTERS = ""

    def __init__(self, _str: str | None = None, **flags: bool) -> None:
        self._on = {letter for letter in self._LETTERS if letter in (_str or "")}
        for letter, name in zip(self._LETTERS, self._NAMES, strict=True):
            if flags.get(name):
                self._on.add(letter)

    _NAMES: tuple[str, ...] = ()

    def __add__(self, other: object) -> Any:
        return type(self)(_str=str(self) + str(other))

    __or__ = __add__

    def __str__(self) -> str:
        return "".join(letter for letter in self._LETTERS if letter in self._on)


class ResourceTypes(_Letters):
    """The resource types of an account SAS: ``SERVICE`` (``s``), ``CONTAINER``
    (``c``), ``OBJECT`` (``o``).

    Example::

        >>> str(ResourceTypes.OBJECT + ResourceTypes.SERVICE)
        'so'
    """

    _LETTERS = "sco"
    _NAMES = ("service", "container", "object")
    SERVICE: ResourceTypes
    CONTAINER: ResourceTypes
    OBJECT: ResourceTypes


class AccountPermissions(_Letters):
    """The permissions of an account SAS: ``READ`` (``r``), ``WRITE`` (``w``),
    ``DELETE`` (``d``), ``LIST`` (``l``), ``ADD`` (``a``), ``CREATE`` (``c``),
    ``UPDATE`` (``u``), ``PROCESS`` (``p``).

    Example::

        >>> str(AccountPermissions.READ | AccountPermissions.LIST)
        'rl'
    """

    _LETTERS = "rwdlacup"
    _NAMES = ("read", "write", "delete", "list", "add", "create", "update", "process")
    READ: AccountPermissions
    WRITE: AccountPermissions
    DELETE: AccountPermissions
    LIST: AccountPermissions
    ADD: AccountPermissions
    CREATE: AccountPermissions
    UPDATE: AccountPermissions
    PROCESS: AccountPermissions


for _cls in (ResourceTypes, AccountPermissions):
    for _letter, _name in zip(_cls._LETTERS, _cls._NAMES, strict=True):
        setattr(_cls, _name.upper(), _cls(_str=_letter))
