"""``TableServiceClient`` and ``TableClient``: plain async operations on tables and entities.

Entities are dict-shaped (:class:`azt.edm.TableEntity`) with explicit EDM types where a
Python type is ambiguous (:class:`azt.edm.Typed`). Every operation is a coroutine (queries
return an :class:`azt._core.pagination.AsyncPager`). Writes send ``Prefer: return-no-content``
unless the caller asks for the entity back; results carry the ETag and the service's
request id; errors are the typed :mod:`azt` exceptions.

Example::

    async with TableServiceClient.from_connection_string("UseDevelopmentStorage=true") as svc:
        table = await svc.create_table_if_not_exists("movies")
        await table.insert_entity({"PartitionKey": "Action", "RowKey": "Heat", "Rating": 4.5})
        async for movie in table.query_entities(
            "PartitionKey eq @genre and Rating ge @r", parameters={"genre": "Action", "r": 4.0}
        ):
            print(movie["RowKey"])
"""

from __future__ import annotations

import copy
import enum
import functools
import logging
import math
import random
import re
import urllib.parse
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import datetime
from types import ModuleType
from typing import Any, Literal, Self, TypeVar, overload

import attrs

from azt._core.auth import (
    SasCredential,
    SharedKeyCredential,
    resolve_credential,
)
from azt._core.config import (
    ATOM_API_VERSION,
    DEFAULT_API_VERSION,
    AmbiguousOutcomePolicy,
    LocationMode,
    PoolLimits,
    RetryPolicy,
    Timeouts,
    WireFormat,
    validate_server_timeout,
)
from azt._core.connection_string import Endpoint, parse_connection_string
from azt._core.pagination import AsyncPager, ContinuationToken, Page
from azt._core.pipeline import Pipeline
from azt._core.retry import Sleep, is_retryable
from azt._core.transport import AiohttpTransport, HttpResponse, Transport
from azt._core.wire import atom as wire_atom
from azt._core.wire import batch as wire_batch
from azt._core.wire import json as wire_json
from azt._core.wire import urls
from azt._core.wire import xml as wire_xml
from azt._core.wire.batch import MAX_BATCH_OPERATIONS
from azt._core.wire.xml import AccessPolicy, ServiceProperties, ServiceStats
from azt._edm.datetime import EdmDateTime
from azt._edm.entity import EntityMetadata, TableEntity
from azt._edm.types import Typed, format_literal
from azt._edm.validation import validate_entity, validate_key
from azt._errors import (
    AmbiguousOutcomeError,
    BatchValidationError,
    ClientClosedError,
    EntityAlreadyExistsError,
    EntityNotFoundError,
    PreconditionFailedError,
    ResourceKind,
    ServiceError,
    TableAlreadyExistsError,
    TableNotFoundError,
    TransactionError,
    TransportError,
    ValidationError,
)

__all__ = [
    "AccessPolicies",
    "BatchOperation",
    "ResponseMetadata",
    "TableBatch",
    "TableClient",
    "TableServiceClient",
    "UpdateMode",
    "WriteResult",
    "format_filter",
]

logger = logging.getLogger("azt")

_R = TypeVar("_R")

_TABLE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9]{2,62}$")
_API_VERSION = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_PARAM = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_JSON_CONTENT_TYPE = "application/json"
_ATOM_CONTENT_TYPE = "application/atom+xml"
_XML = "application/xml"


class UpdateMode(enum.Enum):
    """How an update or upsert treats properties not in the request.

    ``MERGE`` keeps stored properties the request does not mention (MERGE verb);
    ``REPLACE`` replaces the whole entity (PUT), so absent properties disappear.

    Example::

        >>> UpdateMode("replace") is UpdateMode.REPLACE
        True
    """

    MERGE = "merge"
    REPLACE = "replace"


@attrs.frozen(slots=True)
class ResponseMetadata(EntityMetadata):
    """Entity metadata plus the ``x-ms-request-id`` of the response that returned it
    (set on entities returned by ``get_entity``).

    Example::

        >>> ResponseMetadata(etag='W/"1"', request_id="r1").request_id
        'r1'
    """

    request_id: str | None = None


@attrs.frozen
class WriteResult:
    """The outcome of a write: ``etag`` (``None`` for deletes), the service's
    ``request_id``, the HTTP ``status``, the echoed ``entity`` when asked for, and
    ``ambiguity_resolved``: true when the write was retried after a lost answer, met a
    conflict, and was judged to have succeeded (``AmbiguousOutcomePolicy.ASSUME_SUCCEEDED``).

    Example::

        >>> WriteResult(etag='W/"x"', request_id="r1", status=204).entity is None
        True
    """

    etag: str | None
    request_id: str | None
    status: int
    entity: TableEntity | None = None
    ambiguity_resolved: bool = False


class AccessPolicies(dict[str, AccessPolicy | None]):
    """A table's stored access policies by id (a plain ``dict``), plus the
    ``request_id`` of the response they were read from.

    Example::

        >>> policies = AccessPolicies({"readers": None}, request_id="r1")
        >>> policies == {"readers": None}, policies.request_id
        (True, 'r1')
    """

    __slots__ = ("request_id",)

    def __init__(
        self,
        policies: Mapping[str, AccessPolicy | None] | None = None,
        *,
        request_id: str | None = None,
    ) -> None:
        super().__init__(policies or {})
        self.request_id = request_id


def validate_table_name(name: str) -> str:
    """Check a table name (3-63 letters/digits, starting with a letter; not ``Tables``).

    Example::

        >>> validate_table_name("movies")
        'movies'
        >>> validate_table_name("1abc")
        Traceback (most recent call last):
        ...
        azt._errors.ValidationError: invalid table name '1abc': ...
    """
    if not isinstance(name, str):
        raise ValidationError(f"a table name must be a str, got {type(name).__name__}")
    if not _TABLE_NAME.match(name):
        raise ValidationError(
            f"invalid table name {name!r}: 3-63 letters and digits, starting with a letter"
        )
    if name.lower() == "tables":
        raise ValidationError("'tables' is a reserved table name")
    return name


def format_filter(filter: str, parameters: Mapping[str, Any] | None = None) -> str:
    """Substitute ``@name`` placeholders in an OData filter with escaped literals.

    Placeholders inside quoted literals are left alone. Each value is rendered by
    :func:`azt.edm.format_literal` (so ``"O'Brien"`` becomes ``'O''Brien'``, ``2**40``
    becomes ``1099511627776L`` and a :class:`azt.edm.Typed` value keeps its type). A
    placeholder without a value, or a value without a placeholder, raises
    :class:`azt.ValidationError`.

    Example::

        >>> format_filter("PartitionKey eq @pk and Rating ge @r", {"pk": "O'Brien", "r": 4})
        "PartitionKey eq 'O''Brien' and Rating ge 4"
    """
    if not isinstance(filter, str):
        raise ValidationError(f"a filter must be a str, got {type(filter).__name__}")
    params = dict(parameters or {})
    if not params and "@" not in filter:
        return filter
    out: list[str] = []
    used: set[str] = set()
    i = 0
    n = len(filter)
    in_string = False
    while i < n:
        ch = filter[i]
        if in_string:
            out.append(ch)
            if ch == "'":
                if i + 1 < n and filter[i + 1] == "'":
                    out.append("'")
                    i += 2
                    continue
                in_string = False
            i += 1
            continue
        if ch == "'":
            in_string = True
            out.append(ch)
            i += 1
            continue
        if ch == "@":
            match = _PARAM.match(filter, i + 1)
            if match is None:
                raise ValidationError(f"'@' at position {i} of the filter is not a parameter name")
            name = match.group(0)
            if name not in params:
                raise ValidationError(f"the filter uses @{name} but no value was given for it")
            out.append(format_literal(params[name]))
            used.add(name)
            i = match.end()
            continue
        out.append(ch)
        i += 1
    if in_string:
        raise ValidationError("the filter has an unterminated string literal")
    unused = set(params) - used
    if unused:
        raise ValidationError("parameters not used in the filter: " + ", ".join(sorted(unused)))
    return "".join(out)


# --- shared client state ------------------------------------------------------------------


class _Core:
    """What a service client and its table clients share: pipeline, format, policies.
    Built from the clients' constructor arguments (see :class:`TableServiceClient`)."""

    def __init__(
        self,
        endpoint: str,
        credential: object,
        *,
        secondary_endpoint: str | None,
        wire_format: WireFormat,
        api_version: str,
        retry: RetryPolicy | None,
        timeouts: Timeouts | None,
        limits: PoolLimits | None,
        ambiguous_outcome: AmbiguousOutcomePolicy,
        transport: Transport | None,
        sleep: Sleep | None,
        uniform: Callable[[float, float], float] | None,
        user_agent: str | None,
        server_timeout: int | None,
        location_mode: LocationMode,
    ) -> None:
        if not isinstance(endpoint, str):
            raise ValidationError(f"endpoint must be a str URL, got {type(endpoint).__name__}")
        url, _, sas = endpoint.partition("?")
        if credential is None:
            if not sas:
                raise ValidationError(
                    "no credential: pass credential= (key, SAS or token credential) or use "
                    "from_connection_string()"
                )
            credential = sas
        elif sas:
            raise ValidationError(
                "the endpoint carries a SAS token and a credential was also given"
            )
        resolved = resolve_credential(credential)
        self.endpoint = Endpoint.parse(url)
        self.secondary = Endpoint.parse(secondary_endpoint) if secondary_endpoint else None
        self.owns_transport = transport is None
        if transport is None:
            transport = AiohttpTransport(timeouts=timeouts, limits=limits)
        retry = retry or RetryPolicy()
        if not isinstance(wire_format, WireFormat):
            raise ValidationError(f"wire_format must be a WireFormat, got {wire_format!r}")
        if not isinstance(api_version, str) or not _API_VERSION.match(api_version):
            raise ValidationError(f"api_version must look like 2019-02-02, got {api_version!r}")
        if wire_format.is_json and api_version < "2013-08-15":
            raise ValidationError(
                f"JSON payloads need x-ms-version 2013-08-15 or later (got {api_version}); "
                "use WireFormat.ATOM for older versions"
            )
        if not isinstance(ambiguous_outcome, AmbiguousOutcomePolicy):
            raise ValidationError(
                f"ambiguous_outcome must be an AmbiguousOutcomePolicy, got {ambiguous_outcome!r}"
            )
        self.server_timeout = validate_server_timeout(server_timeout)
        self.location_mode = self.check_location_mode(location_mode)
        self.credential = resolved
        self.transport = transport
        self.wire_format = wire_format
        self.ambiguous_outcome = ambiguous_outcome
        # One recipe for both pipelines: the secondary's is built on first use.
        self._new_pipeline = functools.partial(
            Pipeline,
            credential=resolved,
            transport=transport,
            retry=retry,
            api_version=api_version,
            sleep=sleep,
            uniform=uniform or random.uniform,
            user_agent=user_agent,
        )
        self.pipeline = self._new_pipeline(self.endpoint)
        self._secondary_pipeline: Pipeline | None = None
        # Static OData headers, computed once.
        self.is_atom = wire_format is WireFormat.ATOM
        if self.is_atom:
            self.codec: ModuleType = wire_atom
            self.body_type = _ATOM_CONTENT_TYPE
            version = api_version if api_version < "2015-12-11" else ATOM_API_VERSION
        else:
            self.codec = wire_json
            self.body_type = _JSON_CONTENT_TYPE
            version = api_version
        self.odata_read = {
            "Accept": wire_format.accept,
            "DataServiceVersion": "3.0",
            "MaxDataServiceVersion": "3.0;NetFx",
            "x-ms-version": version,
        }
        self.odata_write = dict(self.odata_read)
        self.odata_write["Content-Type"] = self.body_type
        # A minimal-metadata JSON read, used to verify ambiguous writes with full types.
        self.typed_read = dict(self.odata_read)
        if wire_format is WireFormat.JSON_NONE:
            self.typed_read["Accept"] = WireFormat.JSON_MINIMAL.accept
        self.closed = False

    def secondary_pipeline(self) -> Pipeline:
        if self._secondary_pipeline is None:
            secondary = self.secondary or self.endpoint.secondary()
            if secondary is None:
                raise ValidationError(
                    "the secondary endpoint is unknown; pass secondary_endpoint= to the client"
                )
            self._secondary_pipeline = self._new_pipeline(secondary)
        return self._secondary_pipeline

    def check_open(self) -> None:
        if self.closed or self.transport.closed:
            raise ClientClosedError("the client has been closed; create a new one")

    async def send(
        self,
        method: str,
        path: str,
        *,
        query: str = "",
        headers: Mapping[str, str] | None = None,
        body: bytes | None = None,
        comp: str | None = None,
        resource: ResourceKind | None = None,
        location: Literal["primary", "read", "secondary"] = "primary",
    ) -> HttpResponse:
        """Send through the primary pipeline (``location="primary"``), the secondary one
        (``"secondary"``), or where the location mode sends reads (``"read"``; a 404 on
        the secondary is retried against the primary). Adds ``timeout=`` when set."""
        if self.closed:
            raise ClientClosedError("the client has been closed; create a new one")
        if self.server_timeout is not None:
            extra = f"timeout={self.server_timeout}"
            query = f"{query}&{extra}" if query else extra

        def via(pipeline: Pipeline) -> Awaitable[HttpResponse]:
            return pipeline.send(
                method, path, query=query, headers=headers, body=body, comp=comp, resource=resource
            )

        mode = self.location_mode
        if location == "primary" or (location == "read" and mode is LocationMode.PRIMARY):
            return await via(self.pipeline)
        if location == "secondary":
            return await via(self.secondary_pipeline())
        if mode is LocationMode.PRIMARY_THEN_SECONDARY:
            try:
                return await via(self.pipeline)
            except (ServiceError, TransportError) as exc:
                if not is_retryable(exc):
                    raise
                logger.warning(
                    "%s %s: the primary failed (%s); reading from the secondary",
                    method,
                    path,
                    exc,
                )
            return await via(self.secondary_pipeline())
        try:  # LocationMode.SECONDARY: a 404 there may be data not yet replicated
            return await via(self.secondary_pipeline())
        except ServiceError as exc:
            if exc.status != 404:
                raise
            logger.info(
                "%s %s: 404 %s on the secondary; retrying against the primary",
                method,
                path,
                exc.code,
            )
        return await via(self.pipeline)

    def check_location_mode(self, location_mode: object) -> LocationMode:
        if not isinstance(location_mode, LocationMode):
            raise ValidationError(f"location_mode must be a LocationMode, got {location_mode!r}")
        if (
            location_mode is not LocationMode.PRIMARY
            and (self.secondary or self.endpoint.secondary()) is None
        ):
            raise ValidationError(
                f"{location_mode} needs a secondary endpoint; pass secondary_endpoint="
            )
        return location_mode

    def view(self) -> _Core:
        """A copy sharing pipeline and connections, with its own closed flag and options;
        closing it never closes the borrowed connections."""
        view = copy.copy(self)
        view.owns_transport = False
        view.closed = False
        return view

    async def aclose(self) -> None:
        self.closed = True
        if self.owns_transport:
            await self.transport.aclose()

    # -- ambiguity handling ---------------------------------------------------------------

    def ambiguous(self, operation: str, exc: ServiceError) -> bool:
        """Whether ``exc`` (a conflict-type answer) may stem from our own earlier attempt,
        raising ``AmbiguousOutcomeError`` under the RAISE policy."""
        if not exc.earlier_attempt_may_have_applied:
            return False
        policy = self.ambiguous_outcome
        if policy is AmbiguousOutcomePolicy.RAISE:
            raise AmbiguousOutcomeError(operation, exc, attempts=exc.attempts) from exc
        if policy is AmbiguousOutcomePolicy.REPORT_ERROR:
            return False
        logger.warning(
            "%s: attempt %d met %s %s after an earlier attempt got no answer; "
            "resolving it as the ambiguous-outcome policy says (%s)",
            operation,
            exc.attempts,
            exc.status,
            exc.code,
            policy.value,
        )
        return True


def _from_connection_string(
    connection_string: str, use_lite: bool, kwargs: dict[str, Any]
) -> tuple[str, SharedKeyCredential | SasCredential]:
    """The endpoint and credential a connection string names; its secondary endpoint goes
    into ``kwargs`` unless the caller gave one."""
    settings = parse_connection_string(connection_string)
    kwargs.setdefault("secondary_endpoint", settings.secondary_endpoint)
    if settings.account_key is not None and settings.account_name is not None:
        cls = SharedKeyCredential
        if use_lite:
            from azt._core.auth import SharedKeyLiteCredential

            cls = SharedKeyLiteCredential
        return settings.endpoint, cls(settings.account_name, settings.account_key)
    assert settings.sas_token is not None
    return settings.endpoint, SasCredential(settings.sas_token)


class _Keep(enum.Enum):
    KEEP = "keep"


_KEEP = _Keep.KEEP


class _ClientBase:
    _core: _Core

    async def __aenter__(self) -> Self:
        self._core.check_open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._core.aclose()

    def with_options(
        self,
        *,
        server_timeout: int | _Keep | None = _KEEP,
        location_mode: LocationMode | _Keep = _KEEP,
    ) -> Self:
        """A copy of this client with other per-request options, sharing its connections.

        ``server_timeout`` (seconds, or ``None`` for none) is sent as the ``timeout=``
        query parameter: the service gives up on the request after that long (it allows
        at most 30 s in all) and answers ``500 OperationTimedOut``, which is retried.
        ``location_mode`` chooses where reads go (:class:`azt.LocationMode`). Options not
        given are kept. Closing the copy leaves the original (and its connections) open.

        Example::

            quick = table.with_options(server_timeout=5)
            movie = await quick.get_entity("Action", "Heat")   # GET ...?timeout=5
            replica = table.with_options(location_mode=LocationMode.SECONDARY)
        """
        core = self._core.view()
        if server_timeout is not _KEEP:
            core.server_timeout = validate_server_timeout(server_timeout)
        if location_mode is not _KEEP:
            core.location_mode = core.check_location_mode(location_mode)
        clone = copy.copy(self)
        clone._core = core
        return clone

    @property
    def server_timeout(self) -> int | None:
        """The ``timeout=`` (seconds) sent with every request, or ``None``.

        Example::

            table.with_options(server_timeout=5).server_timeout  # 5
        """
        return self._core.server_timeout

    @property
    def location_mode(self) -> LocationMode:
        """Where this client sends its reads.

        Example::

            table.location_mode  # LocationMode.PRIMARY
        """
        return self._core.location_mode

    @property
    def endpoint(self) -> str:
        """The primary table endpoint URL (no trailing slash).

        Example::

            service.endpoint  # 'http://127.0.0.1:10002/devstoreaccount1'
        """
        return self._core.endpoint.url

    @property
    def account_name(self) -> str | None:
        """The storage account name (from the credential, else the URL).

        Example::

            service.account_name  # 'devstoreaccount1'
        """
        cred = self._core.credential
        if isinstance(cred, SharedKeyCredential):
            return cred.account_name
        return self._core.endpoint.account_name

    @property
    def wire_format(self) -> WireFormat:
        """The payload format this client speaks.

        Example::

            table.wire_format  # WireFormat.JSON_MINIMAL
        """
        return self._core.wire_format

    @property
    def closed(self) -> bool:
        """True after ``aclose()`` (or after the owning service client was closed).

        Example::

            await table.aclose()
            assert table.closed
        """
        return self._core.closed or self._core.transport.closed


# --- batches ------------------------------------------------------------------------------


@attrs.frozen
class BatchOperation:
    """One operation of an entity group transaction.

    ``kind`` is ``"create"``, ``"update"``, ``"upsert"`` or ``"delete"``; ``mode`` is the
    :class:`UpdateMode` of updates and upserts; ``etag`` the ``If-Match`` of updates and
    deletes (``"*"`` for unconditional).

    Example::

        >>> op = BatchOperation("create", {"PartitionKey": "p", "RowKey": "r"})
        >>> op
        create(PartitionKey='p', RowKey='r')
    """

    kind: Literal["create", "update", "upsert", "delete"]
    entity: Mapping[str, Any]
    mode: UpdateMode | None = None
    etag: str | None = None

    @property
    def partition_key(self) -> str:
        """The operation's PartitionKey.

        Example::

            >>> BatchOperation("delete", {"PartitionKey": "p", "RowKey": "r"}).partition_key
            'p'
        """
        return str(_plain(self.entity["PartitionKey"]))

    @property
    def row_key(self) -> str:
        """The operation's RowKey.

        Example::

            >>> BatchOperation("delete", {"PartitionKey": "p", "RowKey": "r"}).row_key
            'r'
        """
        return str(_plain(self.entity["RowKey"]))

    def __repr__(self) -> str:
        mode = f" {self.mode.value}" if self.mode is not None else ""
        return f"{self.kind}{mode}(PartitionKey={self.partition_key!r}, RowKey={self.row_key!r})"


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, Typed) else value


class TableBatch:
    """A builder for one entity group transaction, checked as it grows.

    Every operation must target the same PartitionKey, each RowKey may appear once, and
    there may be at most 100 operations: a violation raises
    :class:`azt.BatchValidationError` naming the offending operation's index before
    anything is sent. Entities are checked against the service limits as they are added.

    Example::

        >>> batch = TableBatch("movies")
        >>> batch.create({"PartitionKey": "Action", "RowKey": "Heat"})
        >>> batch.delete("Action", "Ronin")
        >>> len(batch), batch.operations[1]
        (2, delete(PartitionKey='Action', RowKey='Ronin'))
        >>> batch.create({"PartitionKey": "Drama", "RowKey": "x"})
        Traceback (most recent call last):
        ...
        azt._errors.BatchValidationError: operation 2 (create(...)): PartitionKey 'Drama' ...
    """

    def __init__(self, table_name: str) -> None:
        self.table_name = validate_table_name(table_name)
        self.operations: list[BatchOperation] = []
        self._partition_key: str | None = None
        self._row_keys: set[str] = set()

    def __len__(self) -> int:
        return len(self.operations)

    def _add(self, op: BatchOperation) -> None:
        index = len(self.operations)
        label = f"operation {index} ({op.kind}(...))"
        if index >= MAX_BATCH_OPERATIONS:
            raise BatchValidationError(
                f"{label}: a transaction holds at most {MAX_BATCH_OPERATIONS} operations",
                index=index,
            )
        pk = op.partition_key
        rk = op.row_key
        if self._partition_key is not None and pk != self._partition_key:
            raise BatchValidationError(
                f"{label}: PartitionKey {pk!r} differs from the transaction's "
                f"{self._partition_key!r}; all operations must share one PartitionKey",
                index=index,
            )
        if rk in self._row_keys:
            raise BatchValidationError(
                f"{label}: RowKey {rk!r} already appears in this transaction; an entity may "
                "appear only once",
                index=index,
            )
        self._partition_key = pk
        self._row_keys.add(rk)
        self.operations.append(op)

    def add(self, operation: BatchOperation) -> None:
        """Add a prepared :class:`BatchOperation`, checked exactly like the builder methods
        (entity limits, keys, a ``mode`` for updates and upserts; an ``etag`` of ``None``
        on an update or delete means ``"*"``).

        Example::

            batch.add(BatchOperation("upsert", {"PartitionKey": "p", "RowKey": "1"},
                                     mode=UpdateMode.REPLACE))
        """
        if not isinstance(operation, BatchOperation):
            raise ValidationError(f"expected a BatchOperation, got {type(operation).__name__}")
        op = operation
        kind = op.kind
        if kind == "create":
            if op.mode is not None or op.etag is not None:
                raise ValidationError("a create operation takes no mode and no etag")
            self.create(op.entity)
        elif kind == "update" or kind == "upsert":
            if not isinstance(op.mode, UpdateMode):
                raise ValidationError(
                    f"an {kind} operation needs mode=UpdateMode.MERGE or UpdateMode.REPLACE"
                )
            if kind == "update":
                self.update(op.entity, op.mode, etag="*" if op.etag is None else op.etag)
            elif op.etag is not None:
                raise ValidationError("an upsert operation takes no etag (it is unconditional)")
            else:
                self.upsert(op.entity, op.mode)
        elif kind == "delete":
            entity = op.entity
            if not isinstance(entity, Mapping):
                raise ValidationError(f"an entity must be a mapping, got {type(entity).__name__}")
            self.delete(
                _plain(entity.get("PartitionKey")),
                _plain(entity.get("RowKey")),
                etag="*" if op.etag is None else op.etag,
            )
        else:
            raise ValidationError(
                f"unknown operation kind {kind!r}: create, update, upsert or delete"
            )

    def create(self, entity: Mapping[str, Any]) -> None:
        """Insert ``entity`` (fails the transaction if it exists).

        Example::

            batch.create({"PartitionKey": "p", "RowKey": "1", "n": 1})
        """
        _check_entity(entity)
        self._add(BatchOperation("create", entity))

    def update(
        self, entity: Mapping[str, Any], mode: UpdateMode = UpdateMode.MERGE, *, etag: str = "*"
    ) -> None:
        """Merge or replace an existing entity (conditional on ``etag`` unless ``"*"``).

        Example::

            batch.update(movie, UpdateMode.REPLACE, etag=movie.metadata.etag)
        """
        _check_entity(entity)
        self._add(BatchOperation("update", entity, mode=UpdateMode(mode), etag=_check_etag(etag)))

    def upsert(self, entity: Mapping[str, Any], mode: UpdateMode = UpdateMode.MERGE) -> None:
        """Insert or merge/replace ``entity``.

        Example::

            batch.upsert({"PartitionKey": "p", "RowKey": "2"}, UpdateMode.MERGE)
        """
        _check_entity(entity)
        self._add(BatchOperation("upsert", entity, mode=UpdateMode(mode)))

    def delete(self, partition_key: str, row_key: str, *, etag: str = "*") -> None:
        """Delete an entity (conditional on ``etag`` unless ``"*"``).

        Example::

            batch.delete("p", "3")
        """
        validate_key("PartitionKey", partition_key)
        validate_key("RowKey", row_key)
        self._add(
            BatchOperation(
                "delete",
                {"PartitionKey": partition_key, "RowKey": row_key},
                etag=_check_etag(etag),
            )
        )


def _check_entity(entity: Mapping[str, Any]) -> tuple[str, str]:
    """Check ``entity`` against the service limits; return its (valid) PartitionKey and
    RowKey, so callers need not check the keys a second time."""
    if not isinstance(entity, Mapping):
        raise ValidationError(f"an entity must be a mapping, got {type(entity).__name__}")
    validate_entity(entity)
    return _plain(entity["PartitionKey"]), _plain(entity["RowKey"])


def _check_etag(etag: str) -> str:
    if not isinstance(etag, str) or not etag:
        raise ValidationError(f"etag must be '*' or an ETag string, got {etag!r}")
    return etag


# --- value comparison for ambiguous-write verification ------------------------------------


def _same_value(sent: Any, stored: Any) -> bool:
    sent = _plain(sent)
    if isinstance(sent, float) and isinstance(stored, float):
        if math.isnan(sent) and math.isnan(stored):
            return True
        return sent == stored
    if isinstance(sent, datetime) and isinstance(stored, datetime):
        try:
            return EdmDateTime.from_datetime(sent) == EdmDateTime.from_datetime(stored)
        except (ValueError, ValidationError):
            return False
    if isinstance(sent, bytearray | memoryview):
        sent = bytes(sent)
    if isinstance(sent, bool) != isinstance(stored, bool):
        return False
    if isinstance(sent, int | float) and type(sent) is not type(stored):
        return False  # 5 (Int32/Int64) and 5.0 (Double) are different stored values
    return bool(sent == stored)


def _entity_matches(sent: Mapping[str, Any], stored: Mapping[str, Any], *, exact: bool) -> bool:
    sent_names = set()
    for name, value in sent.items():
        if value is None or name == "Timestamp":
            continue
        sent_names.add(name)
        if name not in stored or not _same_value(value, stored[name]):
            return False
    if exact:
        extra = {n for n, v in stored.items() if v is not None} - sent_names
        return not extra
    return True


# --- the table client ---------------------------------------------------------------------


class TableClient(_ClientBase):
    """Operations on one table and its entities.

    Create one with :meth:`TableServiceClient.get_table_client` (sharing that client's
    connections), :meth:`from_connection_string`, or directly from an endpoint and a
    credential. Use ``async with`` or call :meth:`aclose` when done with a client that owns
    its connections.

    Example::

        async with TableClient.from_connection_string(conn_str, "movies") as table:
            await table.upsert_entity({"PartitionKey": "Action", "RowKey": "Heat"})
            movie = await table.get_entity("Action", "Heat")
    """

    def __init__(
        self,
        endpoint: str,
        table_name: str,
        credential: object = None,
        *,
        secondary_endpoint: str | None = None,
        wire_format: WireFormat = WireFormat.JSON_MINIMAL,
        api_version: str = DEFAULT_API_VERSION,
        retry: RetryPolicy | None = None,
        timeouts: Timeouts | None = None,
        limits: PoolLimits | None = None,
        ambiguous_outcome: AmbiguousOutcomePolicy = AmbiguousOutcomePolicy.RAISE,
        transport: Transport | None = None,
        sleep: Sleep | None = None,
        uniform: Callable[[float, float], float] | None = None,
        user_agent: str | None = None,
        server_timeout: int | None = None,
        location_mode: LocationMode = LocationMode.PRIMARY,
    ) -> None:
        self.table_name = validate_table_name(table_name)
        self._core = _Core(
            endpoint,
            credential,
            secondary_endpoint=secondary_endpoint,
            wire_format=wire_format,
            api_version=api_version,
            retry=retry,
            timeouts=timeouts,
            limits=limits,
            ambiguous_outcome=ambiguous_outcome,
            transport=transport,
            sleep=sleep,
            uniform=uniform,
            user_agent=user_agent,
            server_timeout=server_timeout,
            location_mode=location_mode,
        )
        self._init_paths()

    @classmethod
    def _from_core(cls, core: _Core, table_name: str) -> TableClient:
        self = cls.__new__(cls)
        self.table_name = validate_table_name(table_name)
        # A view of the service client's core: same pipeline and connections, but its own
        # closed flag, and closing it never closes the connections it borrows.
        self._core = core.view()
        self._init_paths()
        return self

    def _init_paths(self) -> None:
        self._table_path = "/" + urls.table_path(self.table_name)
        self._query_path = self._table_path + "()"

    @classmethod
    def from_connection_string(
        cls,
        connection_string: str,
        table_name: str,
        *,
        use_shared_key_lite: bool = False,
        **kwargs: Any,
    ) -> TableClient:
        """A table client from a storage connection string (PROTOCOL.md 1.4).

        Keyword arguments are those of the constructor (``wire_format``, ``retry``, ...).

        Example::

            table = TableClient.from_connection_string("UseDevelopmentStorage=true", "movies")
        """
        endpoint, credential = _from_connection_string(
            connection_string, use_shared_key_lite, kwargs
        )
        return cls(endpoint, table_name, credential, **kwargs)

    async def aclose(self) -> None:
        """Close the client (and its connections, if it owns them). Idempotent.

        A table client from :meth:`TableServiceClient.get_table_client` borrows the service
        client's connections: closing it leaves them (and the service client) open.

        Example::

            await table.aclose()  # or: async with TableClient(...) as table: ...
        """
        await self._core.aclose()

    def __repr__(self) -> str:
        return f"TableClient({self.endpoint!r}, {self.table_name!r})"

    # -- table level ------------------------------------------------------------------------

    async def create_table(self) -> WriteResult:
        """Create this table; raises :class:`azt.TableAlreadyExistsError` if it exists.

        The result carries the service's request id and status (``etag`` is ``None``).

        Example::

            result = await table.create_table()
            print(result.request_id)
        """
        result = await _create_table(self._core, self.table_name, if_not_exists=False)
        assert result is not None
        return result

    async def create_table_if_not_exists(self) -> bool:
        """Create this table unless it exists; return whether it was created.

        Example::

            created = await table.create_table_if_not_exists()
        """
        return await _create_table(self._core, self.table_name, if_not_exists=True) is not None

    async def delete_table(self) -> WriteResult:
        """Delete this table; raises :class:`azt.TableNotFoundError` if it does not exist.

        The result carries the service's request id (``etag`` is ``None``).

        Example::

            result = await table.delete_table()
            print(result.request_id)
        """
        result = await _delete_table(self._core, self.table_name, if_exists=False)
        assert result is not None
        return result

    async def delete_table_if_exists(self) -> bool:
        """Delete this table if it exists; return whether it was deleted.

        Example::

            deleted = await table.delete_table_if_exists()
        """
        return await _delete_table(self._core, self.table_name, if_exists=True) is not None

    async def get_access_policy(self) -> AccessPolicies:
        """The table's stored access policies: ``{id: AccessPolicy or None}`` (an
        :class:`AccessPolicies` dict that also carries the response's ``request_id``).

        Example::

            policies = await table.get_access_policy()
        """
        resp = await self._core.send(
            "GET",
            self._table_path,
            query="comp=acl",
            headers={"Accept": _XML},
            comp="acl",
            resource="table",
        )
        return AccessPolicies(
            wire_xml.decode_signed_identifiers(resp.body),
            request_id=resp.headers.get("x-ms-request-id"),
        )

    async def set_access_policy(self, policies: Mapping[str, AccessPolicy | None]) -> WriteResult:
        """Replace the table's stored access policies (at most 5; ``{}`` clears them).

        Example::

            await table.set_access_policy(
                {"readers": AccessPolicy(permission="r", expiry=datetime(2030, 1, 1, tzinfo=UTC))}
            )
        """
        if len(policies) > 5:
            raise ValidationError("a table has at most 5 stored access policies")
        for policy_id in policies:
            if not policy_id or len(policy_id) > 64:
                raise ValidationError(f"a policy id has 1-64 characters, got {policy_id!r}")
        body = wire_xml.encode_signed_identifiers(policies)
        resp = await self._core.send(
            "PUT",
            self._table_path,
            query="comp=acl",
            headers={"Content-Type": _XML, "Accept": _XML},
            body=body,
            comp="acl",
            resource="table",
        )
        return _written(resp)

    # -- entities ---------------------------------------------------------------------------

    def _encode(self, entity: Mapping[str, Any]) -> bytes:
        body: bytes = self._core.codec.encode_entity(entity)
        return body

    async def insert_entity(
        self, entity: Mapping[str, Any], *, return_content: bool = False
    ) -> WriteResult:
        """Insert a new entity; :class:`azt.EntityAlreadyExistsError` if the keys exist.

        With ``return_content=True`` the service echoes the stored entity (with its
        Timestamp) in ``result.entity``.

        Example::

            result = await table.insert_entity({"PartitionKey": "p", "RowKey": "r", "n": 1})
            print(result.etag, result.request_id)
        """
        pk, rk = _check_entity(entity)
        core = self._core
        headers = dict(core.odata_write)
        headers["Prefer"] = "return-content" if return_content else "return-no-content"
        body = self._encode(entity)
        try:
            resp = await core.send(
                "POST", self._table_path, headers=headers, body=body, resource="entity"
            )
        except EntityAlreadyExistsError as exc:
            if core.ambiguous(f"insert_entity({pk!r}, {rk!r})", exc):
                return await self._verify(
                    pk, rk, entity, exc, exact=True, return_entity=return_content
                )
            raise
        echoed = None
        etag = resp.headers.get("ETag")
        if return_content and resp.body:
            echoed = core.codec.decode_entry(resp.body, etag=etag)
        return WriteResult(
            etag=etag,
            request_id=resp.headers.get("x-ms-request-id"),
            status=resp.status,
            entity=echoed,
        )

    async def _verify(
        self,
        pk: str,
        rk: str,
        entity: Mapping[str, Any],
        exc: ServiceError,
        *,
        exact: bool,
        return_entity: bool = False,
    ) -> WriteResult:
        try:
            stored = await self._get(pk, rk, None, self._core.typed_read)
        except EntityNotFoundError:
            raise exc from None
        if _entity_matches(entity, stored, exact=exact):
            meta = stored.metadata
            return WriteResult(
                etag=meta.etag,
                request_id=meta.request_id if isinstance(meta, ResponseMetadata) else None,
                status=200,
                entity=stored if return_entity else None,
                ambiguity_resolved=True,
            )
        raise exc

    async def update_entity(
        self,
        entity: Mapping[str, Any],
        mode: UpdateMode = UpdateMode.MERGE,
        *,
        etag: str = "*",
    ) -> WriteResult:
        """Merge into or replace an existing entity.

        ``etag="*"`` (default) updates unconditionally (the entity must exist); pass the
        entity's ETag (``entity.metadata.etag``) for optimistic concurrency:
        :class:`azt.PreconditionFailedError` when it changed meanwhile,
        :class:`azt.EntityNotFoundError` when it is gone.

        Example::

            movie["Rating"] = 5.0
            await table.update_entity(movie, UpdateMode.MERGE, etag=movie.metadata.etag)
        """
        pk, rk = _check_entity(entity)
        etag = _check_etag(etag)
        mode = UpdateMode(mode)
        core = self._core
        headers = dict(core.odata_write)
        headers["If-Match"] = etag
        method = "MERGE" if mode is UpdateMode.MERGE else "PUT"
        try:
            resp = await core.send(
                method,
                "/" + urls.entity_path(self.table_name, pk, rk),
                headers=headers,
                body=self._encode(entity),
                resource="entity",
            )
        except PreconditionFailedError as exc:
            if etag != "*" and core.ambiguous(f"update_entity({pk!r}, {rk!r})", exc):
                return await self._verify(pk, rk, entity, exc, exact=mode is UpdateMode.REPLACE)
            raise
        return _written(resp, resp.headers.get("ETag"))

    async def upsert_entity(
        self, entity: Mapping[str, Any], mode: UpdateMode = UpdateMode.MERGE
    ) -> WriteResult:
        """Insert the entity, or merge into / replace the existing one.

        Example::

            await table.upsert_entity({"PartitionKey": "p", "RowKey": "r", "n": 2},
                                      UpdateMode.REPLACE)
        """
        pk, rk = _check_entity(entity)
        mode = UpdateMode(mode)
        core = self._core
        method = "MERGE" if mode is UpdateMode.MERGE else "PUT"
        resp = await core.send(
            method,
            "/" + urls.entity_path(self.table_name, pk, rk),
            headers=core.odata_write,
            body=self._encode(entity),
            resource="entity",
        )
        return _written(resp, resp.headers.get("ETag"))

    async def delete_entity(
        self, partition_key: str, row_key: str, *, etag: str = "*"
    ) -> WriteResult:
        """Delete an entity (conditional on ``etag`` unless ``"*"``).

        :class:`azt.EntityNotFoundError` if it does not exist.

        Example::

            await table.delete_entity("Action", "Heat", etag=movie.metadata.etag)
        """
        pk = validate_key("PartitionKey", partition_key)
        rk = validate_key("RowKey", row_key)
        etag = _check_etag(etag)
        core = self._core
        headers = dict(core.odata_read)
        headers["If-Match"] = etag
        try:
            resp = await core.send(
                "DELETE",
                "/" + urls.entity_path(self.table_name, pk, rk),
                headers=headers,
                resource="entity",
            )
        except EntityNotFoundError as exc:
            if core.ambiguous(f"delete_entity({pk!r}, {rk!r})", exc):
                return _resolved(exc, status=204)
            raise
        return _written(resp)

    async def get_entity(
        self, partition_key: str, row_key: str, *, select: Sequence[str] | None = None
    ) -> TableEntity:
        """Read one entity; :class:`azt.EntityNotFoundError` if it does not exist.

        ``select`` limits the properties returned (system properties are not added).
        ``entity.metadata`` is a :class:`ResponseMetadata` (ETag, Timestamp, request id).

        Example::

            movie = await table.get_entity("Action", "Heat", select=["Rating"])
        """
        pk = validate_key("PartitionKey", partition_key)
        rk = validate_key("RowKey", row_key)
        return await self._get(pk, rk, select, self._core.odata_read, location="read")

    async def _get(
        self,
        pk: str,
        rk: str,
        select: Sequence[str] | None,
        headers: Mapping[str, str],
        *,
        location: Literal["primary", "read"] = "primary",
    ) -> TableEntity:
        core = self._core
        query = ""
        if select:
            query = urls.encode_query({"$select": _select_text(select)})
        resp = await core.send(
            "GET",
            "/" + urls.entity_path(self.table_name, pk, rk),
            query=query,
            headers=headers,
            resource="entity",
            location=location,
        )
        etag = resp.headers.get("ETag")
        codec = core.codec if headers is not core.typed_read or core.is_atom else wire_json
        entity: TableEntity = codec.decode_entry(resp.body, etag=etag)
        meta = entity.metadata
        entity.metadata = ResponseMetadata(
            etag=meta.etag or etag,
            timestamp=meta.timestamp,
            request_id=resp.headers.get("x-ms-request-id"),
        )
        return entity

    @overload
    def query_entities(
        self,
        filter: str | None = None,
        *,
        parameters: Mapping[str, Any] | None = None,
        select: Sequence[str] | None = None,
        results_per_page: int | None = None,
        continuation: ContinuationToken | str | None = None,
        page_decoder: None = None,
    ) -> AsyncPager[TableEntity]: ...

    @overload
    def query_entities(
        self,
        filter: str | None = None,
        *,
        parameters: Mapping[str, Any] | None = None,
        select: Sequence[str] | None = None,
        results_per_page: int | None = None,
        continuation: ContinuationToken | str | None = None,
        page_decoder: Callable[[list[dict[str, Any]]], list[_R]],
    ) -> AsyncPager[_R]: ...

    def query_entities(
        self,
        filter: str | None = None,
        *,
        parameters: Mapping[str, Any] | None = None,
        select: Sequence[str] | None = None,
        results_per_page: int | None = None,
        continuation: ContinuationToken | str | None = None,
        page_decoder: Callable[[list[dict[str, Any]]], list[Any]] | None = None,
    ) -> AsyncPager[Any]:
        """Query entities with an OData filter; iterate for entities or page by page.

        ``parameters`` fill ``@name`` placeholders with escaped literals (see
        :func:`format_filter`); ``select`` projects properties; ``results_per_page`` sets
        ``$top`` (1-1000, per page); ``continuation`` resumes where an earlier page ended.

        ``page_decoder`` (optional) replaces the :class:`~azt.edm.TableEntity` decoding:
        it receives each page's rows as JSON objects (``json.loads(body)["value"]``: a
        list of dicts with ``odata.etag``, ``Timestamp``, the properties and their
        ``@odata.type`` annotations, exactly as the service sent them) and returns the
        page's items, so the pager's item type is the decoder's. Under
        ``WireFormat.JSON_NONE`` a row without ``odata.etag`` gets the one the service
        derives from its ``Timestamp`` (PROTOCOL.md 8.1). Under ``WireFormat.ATOM`` the
        entries are decoded as usual and handed over in the same JSON shape (minimal
        metadata: typed values annotated).

        Example::

            pager = table.query_entities("PartitionKey eq @pk and Rating ge @r",
                                         parameters={"pk": "O'Brien", "r": 4})
            async for page in pager.by_page():
                save(page.continuation)   # str(page.continuation) is storable
                for entity in page: ...
            names = await table.query_entities(
                page_decoder=lambda rows: [row["RowKey"] for row in rows]).to_list()
        """
        self._core.check_open()
        if page_decoder is not None and not callable(page_decoder):
            raise ValidationError(f"page_decoder must be callable, got {page_decoder!r}")
        params = _query_params(filter, parameters, select, results_per_page)
        core = self._core
        codec = core.codec
        if page_decoder is None:
            decode: Callable[[bytes], list[Any]] = codec.decode_feed
            if core.wire_format is WireFormat.JSON_NONE:
                decode = _decode_feed_etags_from_timestamps
        elif core.is_atom:
            decode = _atom_rows_decoder(codec, page_decoder)
        elif core.wire_format is WireFormat.JSON_NONE:

            def decode(body: bytes) -> list[Any]:
                rows = wire_json.decode_rows(body)
                for row in rows:
                    if "odata.etag" not in row:
                        etag = _etag_for(row.get("Timestamp"))
                        if etag is not None:
                            row["odata.etag"] = etag
                return page_decoder(rows)

        else:

            def decode(body: bytes) -> list[Any]:
                return page_decoder(wire_json.decode_rows(body))

        return _query_pager(core, self._query_path, params, continuation, "table", decode)

    def list_entities(
        self,
        *,
        select: Sequence[str] | None = None,
        results_per_page: int | None = None,
        continuation: ContinuationToken | str | None = None,
    ) -> AsyncPager[TableEntity]:
        """All entities of the table (a query without a filter).

        Example::

            everything = await table.list_entities().to_list()
        """
        return self.query_entities(
            None, select=select, results_per_page=results_per_page, continuation=continuation
        )

    # -- transactions -----------------------------------------------------------------------

    def batch(self) -> TableBatch:
        """A new, empty :class:`TableBatch` for this table.

        Example::

            batch = table.batch()
            batch.create({"PartitionKey": "p", "RowKey": "1"})
            batch.upsert({"PartitionKey": "p", "RowKey": "2"}, UpdateMode.REPLACE)
            results = await table.submit_transaction(batch)
        """
        return TableBatch(self.table_name)

    async def submit_transaction(
        self, batch: TableBatch | Iterable[BatchOperation]
    ) -> list[WriteResult]:
        """Run an entity group transaction: all operations succeed or none is applied.

        Returns one :class:`WriteResult` per operation, in order. A failure raises
        :class:`azt.TransactionError` naming the failing operation (``index``,
        ``operation``) with the specific error in ``error``.

        Example::

            batch = table.batch()
            batch.create({"PartitionKey": "p", "RowKey": "1"})
            batch.delete("p", "0")
            try:
                results = await table.submit_transaction(batch)
            except TransactionError as exc:
                print(exc.index, exc.operation, type(exc.error).__name__)
        """
        if not isinstance(batch, TableBatch):
            builder = TableBatch(self.table_name)
            for op in batch:
                builder.add(op)
            batch = builder
        if batch.table_name.lower() != self.table_name.lower():
            raise BatchValidationError(
                f"the batch was built for table {batch.table_name!r}, not {self.table_name!r}"
            )
        operations = batch.operations
        if not operations:
            raise BatchValidationError("the transaction has no operations")
        core = self._core
        table_url = core.pipeline.url_for(self._table_path)
        parts = [self._batch_part(op, table_url) for op in operations]
        content_type, body = wire_batch.encode_batch(parts)  # BatchValidationError over 4 MiB
        headers = dict(core.odata_read)
        headers["Content-Type"] = content_type
        resp = await core.send("POST", "/$batch", headers=headers, body=body, resource="table")
        return self._batch_results(resp, operations)

    def _batch_part(self, op: BatchOperation, table_url: str) -> wire_batch.BatchPart:
        core = self._core
        headers = {
            "Accept": core.odata_read["Accept"],
            "DataServiceVersion": "3.0",
        }
        if op.kind == "create":
            headers["Content-Type"] = core.body_type
            headers["Prefer"] = "return-no-content"
            return wire_batch.BatchPart("POST", table_url, headers, self._encode(op.entity))
        url = core.pipeline.url_for(
            "/" + urls.entity_path(self.table_name, op.partition_key, op.row_key)
        )
        if op.kind == "delete":
            headers["If-Match"] = op.etag or "*"
            return wire_batch.BatchPart("DELETE", url, headers, None)
        headers["Content-Type"] = core.body_type
        if op.kind == "update":
            headers["If-Match"] = op.etag or "*"
        method = "MERGE" if op.mode is UpdateMode.MERGE else "PUT"
        return wire_batch.BatchPart(method, url, headers, self._encode(op.entity))

    def _batch_results(
        self, resp: HttpResponse, operations: list[BatchOperation]
    ) -> list[WriteResult]:
        request_id = resp.headers.get("x-ms-request-id")
        parts = wire_batch.decode_batch_response(resp.headers.get("Content-Type", ""), resp.body)
        for position, part in enumerate(parts):
            if part.status >= 300:
                inner = Pipeline.error_for(
                    HttpResponse(part.status, part.headers, part.body or b"", part.reason or ""),
                    "entity",
                )
                if inner.request_id is None:
                    inner.request_id = request_id
                index = _failed_index(inner.message, len(operations), position, len(parts))
                operation = operations[index] if index is not None else None
                error = TransactionError.from_error(inner, index=index, operation=operation)
                error.attempts = resp.attempts
                error.earlier_attempt_may_have_applied = resp.earlier_attempt_may_have_applied
                self._raise_batch(error)
        if len(parts) != len(operations):
            raise TransactionError(
                f"the service answered {len(parts)} parts for {len(operations)} operations",
                status=resp.status,
                request_id=request_id,
                headers=resp.headers,
            )
        return [
            WriteResult(etag=part.headers.get("ETag"), request_id=request_id, status=part.status)
            for part in parts
        ]

    def _raise_batch(self, error: TransactionError) -> None:
        inner = error.error
        if (
            error.earlier_attempt_may_have_applied
            and inner is not None
            and isinstance(
                inner, EntityAlreadyExistsError | EntityNotFoundError | PreconditionFailedError
            )
            and self._core.ambiguous_outcome is not AmbiguousOutcomePolicy.REPORT_ERROR
        ):
            # A transaction cannot be verified cheaply: report it as ambiguous.
            raise AmbiguousOutcomeError(
                f"submit_transaction({self.table_name!r})",
                error,
                attempts=error.attempts,
            ) from error
        raise error


def _failed_index(message: str, n_ops: int, position: int, n_parts: int) -> int | None:
    head = message.split(":", 1)[0].strip() if message else ""
    if head.isdigit():
        index = int(head)
        if 0 <= index < n_ops:
            return index
    if n_parts == n_ops:
        return position
    return None


def _select_text(select: Sequence[str]) -> str:
    if isinstance(select, str):
        select = [select]
    names = []
    for name in select:
        if not isinstance(name, str) or not name or "," in name:
            raise ValidationError(f"invalid $select property name {name!r}")
        names.append(name.strip())
    return ",".join(names)


def _check_top(top: int) -> int:
    if not isinstance(top, int) or isinstance(top, bool) or not 1 <= top <= 1000:
        raise ValidationError(f"results_per_page must be an int from 1 to 1000, got {top!r}")
    return top


def _query_params(
    filter: str | None,
    parameters: Mapping[str, Any] | None,
    select: Sequence[str] | None,
    results_per_page: int | None,
) -> dict[str, str]:
    """The ``$filter``, ``$select`` and ``$top`` of a query, checked."""
    params: dict[str, str] = {}
    if filter is not None and filter.strip():
        params["$filter"] = format_filter(filter, parameters)
    elif parameters:
        raise ValidationError("parameters were given without a filter")
    if select:
        params["$select"] = _select_text(select)
    if results_per_page is not None:
        params["$top"] = str(_check_top(results_per_page))
    return params


def _query_pager(
    core: _Core,
    path: str,
    params: Mapping[str, str],
    continuation: ContinuationToken | str | None,
    resource: ResourceKind,
    decode: Callable[[bytes], list[Any]],
) -> AsyncPager[Any]:
    """A pager of GET ``path`` pages (read location), each decoded by ``decode`` and
    followed by the continuation headers of the one before."""
    if isinstance(continuation, str):
        continuation = ContinuationToken.from_string(continuation)
    base_query = urls.encode_query(params)
    headers = core.odata_read

    async def fetch(token: ContinuationToken | None) -> Page[Any]:
        query = base_query
        if token is not None:
            extra = urls.encode_query(token.query_params())
            query = f"{query}&{extra}" if query else extra
        resp = await core.send(
            "GET", path, query=query, headers=headers, resource=resource, location="read"
        )
        rh = resp.headers
        return Page(
            decode(resp.body),
            ContinuationToken.from_headers(rh),
            request_id=rh.get("x-ms-request-id"),
        )

    return AsyncPager(fetch, continuation=continuation)


# --- query page decoding ------------------------------------------------------------------


def etag_from_timestamp(timestamp: str) -> str:
    """The ETag the service gives an entity whose ``Timestamp`` is ``timestamp`` (the wire
    string), for responses that carry none (JSON no metadata): ``W/"datetime'<Timestamp,
    percent-encoded>'"`` (PROTOCOL.md 8.1), as the legacy Python SDK derives it.

    Example::

        >>> print(etag_from_timestamp("2020-09-15T23:02:10.4363943Z"))
        W/"datetime'2020-09-15T23%3A02%3A10.4363943Z'"
    """
    return "W/\"datetime'" + urllib.parse.quote(timestamp, safe="") + "'\""


def _decode_feed_etags_from_timestamps(body: bytes) -> list[TableEntity]:
    entities = wire_json.decode_feed(body)
    for entity in entities:
        if getattr(entity, "_etag", None) is None:
            entity._etag = _etag_for(getattr(entity, "_ts", None))
    return entities


def _etag_for(timestamp: object) -> str | None:
    """The derived ETag of a row without one (JSON no metadata), if its Timestamp is a
    wire string."""
    return etag_from_timestamp(timestamp) if type(timestamp) is str else None


def _atom_rows_decoder(
    codec: ModuleType, page_decoder: Callable[[list[dict[str, Any]]], list[Any]]
) -> Callable[[bytes], list[Any]]:
    def decode(body: bytes) -> list[Any]:
        rows: list[dict[str, Any]] = []
        for entity in codec.decode_feed(body):
            row: dict[str, Any] = {}
            meta = entity.metadata
            if meta.etag is not None:
                row["odata.etag"] = meta.etag
            pk, rk = entity.get("PartitionKey"), entity.get("RowKey")
            if pk is not None:
                row["PartitionKey"] = pk
            if rk is not None:
                row["RowKey"] = rk
            if meta.timestamp is not None:
                row["Timestamp"] = meta.timestamp.to_wire()
            row.update(wire_json.entity_json(entity))
            rows.append(row)
        return page_decoder(rows)

    return decode


# --- table operations shared by both clients ----------------------------------------------


async def _create_table(core: _Core, name: str, *, if_not_exists: bool) -> WriteResult | None:
    """Create a table: its result, or ``None`` when it existed and ``if_not_exists``."""
    validate_table_name(name)
    headers = dict(core.odata_write)
    headers["Prefer"] = "return-no-content"
    try:
        resp = await core.send(
            "POST",
            "/" + urls.TABLES_PATH,
            headers=headers,
            body=core.codec.encode_table(name),
            resource="table",
        )
    except TableAlreadyExistsError as exc:
        if if_not_exists:
            return None
        if core.ambiguous(f"create_table({name!r})", exc):
            return _resolved(exc)
        raise
    return _written(resp)


async def _delete_table(core: _Core, name: str, *, if_exists: bool) -> WriteResult | None:
    """Delete a table: its result, or ``None`` when it was missing and ``if_exists``."""
    validate_table_name(name)
    try:
        resp = await core.send(
            "DELETE",
            "/" + urls.table_entity_path(name),
            headers=core.odata_read,
            resource="table",
        )
    except TableNotFoundError as exc:
        if if_exists:
            return None
        if core.ambiguous(f"delete_table({name!r})", exc):
            return _resolved(exc, status=204)
        raise
    return _written(resp)


def _written(resp: HttpResponse, etag: str | None = None) -> WriteResult:
    """The result of a write the service answered with ``resp``."""
    return WriteResult(
        etag=etag, request_id=resp.headers.get("x-ms-request-id"), status=resp.status
    )


def _resolved(exc: ServiceError, status: int = 201) -> WriteResult:
    """The result of a write judged done after an ambiguous answer (no ETag)."""
    return WriteResult(etag=None, request_id=exc.request_id, status=status, ambiguity_resolved=True)


class TableServiceClient(_ClientBase):
    """The account's table service: tables, service properties and statistics.

    One client holds one pooled HTTP session (opened lazily in the running loop); table
    clients from :meth:`get_table_client` share it. Close it with ``async with`` or
    :meth:`aclose`; a closed client refuses further use.

    Arguments (the same for :class:`TableClient`, which also takes ``table_name``):

    * ``endpoint``: the table endpoint URL (host-style or emulator path-style); a SAS token
      may ride in its query string when ``credential`` is omitted.
    * ``credential``: :class:`azt.SharedKeyCredential` (or ``SharedKeyLiteCredential``),
      :class:`azt.SasCredential` or a SAS token string, azure-core's
      ``AzureNamedKeyCredential`` / ``AzureSasCredential``, or any async token credential
      with ``get_token(scope)`` (Entra ID bearer tokens, https only except to loopback).
    * ``secondary_endpoint``: the RA-GRS secondary (default: derived from ``endpoint``);
      used by :meth:`get_service_stats`.
    * ``wire_format``: :class:`azt.WireFormat` (JSON minimal metadata by default; full,
      none, or AtomPub at x-ms-version 2015-04-05).
    * ``api_version``: ``x-ms-version`` (default 2019-02-02).
    * ``retry``: :class:`azt.RetryPolicy`; ``ambiguous_outcome``:
      :class:`azt.AmbiguousOutcomePolicy` for writes retried after a lost answer.
    * ``timeouts``: :class:`azt.Timeouts`; ``limits``: :class:`azt.PoolLimits`.
    * ``server_timeout``: seconds sent as ``timeout=`` on every request (the service's
      own budget, at most 30 s); ``location_mode``: :class:`azt.LocationMode`, where reads
      go. :meth:`with_options` makes a copy with other values, sharing the connections.
    * ``transport``: a custom :class:`azt.Transport` (e.g. :class:`azt.MockTransport`;
      the caller closes it); ``sleep`` and ``uniform``: injected sleep and jitter source
      for tests; ``user_agent``: the ``User-Agent`` header.

    Example::

        async with TableServiceClient.from_connection_string(conn_str) as service:
            await service.create_table_if_not_exists("movies")
            names = [name async for name in service.list_tables()]
    """

    def __init__(
        self,
        endpoint: str,
        credential: object = None,
        *,
        secondary_endpoint: str | None = None,
        wire_format: WireFormat = WireFormat.JSON_MINIMAL,
        api_version: str = DEFAULT_API_VERSION,
        retry: RetryPolicy | None = None,
        timeouts: Timeouts | None = None,
        limits: PoolLimits | None = None,
        ambiguous_outcome: AmbiguousOutcomePolicy = AmbiguousOutcomePolicy.RAISE,
        transport: Transport | None = None,
        sleep: Sleep | None = None,
        uniform: Callable[[float, float], float] | None = None,
        user_agent: str | None = None,
        server_timeout: int | None = None,
        location_mode: LocationMode = LocationMode.PRIMARY,
    ) -> None:
        self._core = _Core(
            endpoint,
            credential,
            secondary_endpoint=secondary_endpoint,
            wire_format=wire_format,
            api_version=api_version,
            retry=retry,
            timeouts=timeouts,
            limits=limits,
            ambiguous_outcome=ambiguous_outcome,
            transport=transport,
            sleep=sleep,
            uniform=uniform,
            user_agent=user_agent,
            server_timeout=server_timeout,
            location_mode=location_mode,
        )

    @classmethod
    def from_connection_string(
        cls, connection_string: str, *, use_shared_key_lite: bool = False, **kwargs: Any
    ) -> TableServiceClient:
        """A service client from a storage connection string (PROTOCOL.md 1.4).

        Example::

            service = TableServiceClient.from_connection_string("UseDevelopmentStorage=true")
        """
        endpoint, credential = _from_connection_string(
            connection_string, use_shared_key_lite, kwargs
        )
        return cls(endpoint, credential, **kwargs)

    async def aclose(self) -> None:
        """Close the client and its connections (table clients from it stop working).

        Example::

            await service.aclose()  # or: async with TableServiceClient(...) as service: ...
        """
        await self._core.aclose()

    def __repr__(self) -> str:
        return f"TableServiceClient({self.endpoint!r})"

    def get_table_client(self, table_name: str) -> TableClient:
        """A :class:`TableClient` for ``table_name`` sharing this client's connections.

        Example::

            movies = service.get_table_client("movies")
        """
        self._core.check_open()
        return TableClient._from_core(self._core, table_name)

    async def create_table(self, table_name: str) -> TableClient:
        """Create a table; :class:`azt.TableAlreadyExistsError` if it exists.

        Example::

            movies = await service.create_table("movies")
        """
        await _create_table(self._core, table_name, if_not_exists=False)
        return self.get_table_client(table_name)

    async def create_table_if_not_exists(self, table_name: str) -> TableClient:
        """Create a table unless it exists; return its client either way.

        Example::

            movies = await service.create_table_if_not_exists("movies")
        """
        await _create_table(self._core, table_name, if_not_exists=True)
        return self.get_table_client(table_name)

    async def delete_table(self, table_name: str) -> WriteResult:
        """Delete a table; :class:`azt.TableNotFoundError` if it does not exist.

        The result carries the service's request id (``etag`` is ``None``).

        Example::

            result = await service.delete_table("movies")
            print(result.request_id)
        """
        result = await _delete_table(self._core, table_name, if_exists=False)
        assert result is not None
        return result

    async def delete_table_if_exists(self, table_name: str) -> bool:
        """Delete a table if it exists; return whether it was deleted.

        Example::

            deleted = await service.delete_table_if_exists("movies")
        """
        return await _delete_table(self._core, table_name, if_exists=True) is not None

    def query_tables(
        self,
        filter: str | None = None,
        *,
        parameters: Mapping[str, Any] | None = None,
        results_per_page: int | None = None,
        continuation: ContinuationToken | str | None = None,
    ) -> AsyncPager[str]:
        """Table names matching a filter on ``TableName``, following ``NextTableName``.

        Example::

            names = await service.query_tables("TableName ge @a and TableName lt @b",
                                               parameters={"a": "m", "b": "n"}).to_list()
        """
        self._core.check_open()
        params = _query_params(filter, parameters, None, results_per_page)
        core = self._core
        return _query_pager(
            core,
            "/" + urls.TABLES_PATH,
            params,
            continuation,
            "service",
            lambda body: list(core.codec.decode_tables(body)),
        )

    def list_tables(
        self,
        *,
        results_per_page: int | None = None,
        continuation: ContinuationToken | str | None = None,
    ) -> AsyncPager[str]:
        """All table names of the account.

        Example::

            async for name in service.list_tables():
                print(name)
        """
        return self.query_tables(None, results_per_page=results_per_page, continuation=continuation)

    async def get_service_properties(self) -> ServiceProperties:
        """The table service properties (logging, metrics, CORS).

        Example::

            props = await service.get_service_properties()
        """
        resp = await self._core.send(
            "GET",
            "/",
            query="restype=service&comp=properties",
            headers={"Accept": _XML},
            comp="properties",
            resource="service",
        )
        return attrs.evolve(
            wire_xml.decode_service_properties(resp.body),
            request_id=resp.headers.get("x-ms-request-id"),
        )

    async def set_service_properties(self, properties: ServiceProperties) -> WriteResult:
        """Set the table service properties (elements left ``None`` stay unchanged).

        Example::

            await service.set_service_properties(ServiceProperties(cors=[]))
        """
        body = wire_xml.encode_service_properties(properties)
        resp = await self._core.send(
            "PUT",
            "/",
            query="restype=service&comp=properties",
            headers={"Content-Type": _XML, "Accept": _XML},
            body=body,
            comp="properties",
            resource="service",
        )
        return _written(resp)

    async def get_service_stats(self) -> ServiceStats:
        """Geo-replication statistics, read from the secondary endpoint.

        Example::

            stats = await service.get_service_stats()
            print(stats.geo_replication.status)
        """
        resp = await self._core.send(
            "GET",
            "/",
            query="restype=service&comp=stats",
            headers={"Accept": _XML},
            comp="stats",
            resource="service",
            location="secondary",
        )
        return attrs.evolve(
            wire_xml.decode_service_stats(resp.body),
            request_id=resp.headers.get("x-ms-request-id"),
        )
