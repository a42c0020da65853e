"""``TableService``: the legacy Python Table SDK's client (azure-cosmosdb-table 1.0.x), a
blocking drop-in over azt's async client.

Same constructor forms, method names, parameters, defaults and return values as the legacy
SDK (ETag strings, :class:`ListGenerator` with ``next_marker``, ``bool`` from
``create_table``/``delete_table``/``exists``), and the same error classes
(``AzureHttpError`` with ``status_code``, ``AzureMissingResourceHttpError`` for 404,
``AzureConflictHttpError`` for 409, ``AzureBatchOperationError`` for a failed batch).

Each ``TableService`` owns one :class:`azt.TableServiceClient` (one connection pool) and
a private event loop on a background thread (``azt/legacy/_loop.py``) that runs its
coroutines; :meth:`TableService.close` (or ``with TableService(...) as service:``) closes
both, and they are closed at interpreter exit otherwise. When ``azt.sync`` is available
this class is meant to move onto it.

Example::

    service = TableService(connection_string=conn_str)
    service.create_table("tasks")
    etag = service.insert_entity("tasks", {"PartitionKey": "todo", "RowKey": "1", "n": 5})
    task = service.get_entity("tasks", "todo", "1")
    print(task.n, task.etag)
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Coroutine, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Self, TypeVar

from azt._core.auth import SasCredential, SharedKeyCredential
from azt._core.config import RetryPolicy, Timeouts
from azt._core.connection_string import DEV_ACCOUNT_KEY, parse_connection_string
from azt._core.pagination import ContinuationToken
from azt._core.results import UpdateMode
from azt._core.sas import generate_account_sas, generate_table_sas
from azt._core.service_client import TableServiceClient
from azt._core.table_client import TableClient
from azt._core.wire.xml import AccessPolicy as _AztPolicy
from azt._errors import (
    AmbiguousOutcomeError,
    ServiceError,
    TransactionError,
    TransportError,
)
from azt.legacy._loop import LoopThread
from azt.legacy._models import (
    AccessPolicy,
    AzureBatchOperationError,
    AzureConflictHttpError,
    AzureException,
    AzureHttpError,
    AzureMissingResourceHttpError,
    Entity,
    ListGenerator,
    Table,
    TableBatch,
    TablePayloadFormat,
    from_azt_entity,
    to_azt_entity,
)

__all__ = ["TableService", "no_retry"]

T = TypeVar("T")

#: The x-ms-version the legacy SDK sends (and signs its SAS tokens with).
LEGACY_API_VERSION = "2017-04-17"
_DEV_ACCOUNT = "devstoreaccount1"
_EMULATOR = "http://127.0.0.1:10002"
_MISSING_INFO = (
    "You need to provide an account name and either an account_key or sas_token when "
    "creating a storage service."
)


def _not_none(name: str, value: object) -> None:
    if value is None:
        raise ValueError(f"{name} should not be None.")


def _legacy_error(exc: Exception) -> Exception:
    """The legacy SDK's error for an azt error (others are returned unchanged)."""
    if isinstance(exc, TransactionError):
        inner = exc.error if isinstance(exc.error, ServiceError) else exc
        return AzureBatchOperationError(inner.message, inner.status, inner.code)
    if isinstance(exc, ServiceError):
        text = exc.message or ""
        if exc.code:
            text += f" ErrorCode: {exc.code}"
        err = AzureHttpError(text, exc.status)
        err.error_code = exc.code
        return err
    if isinstance(exc, TransportError | AmbiguousOutcomeError):
        return AzureException(str(exc))
    return exc


def _marker_token(marker: Any) -> ContinuationToken | None:
    if not marker:
        return None
    if not isinstance(marker, Mapping):
        raise TypeError(f"marker must be the next_marker dict of a query, got {marker!r}")
    pk, rk = marker.get("nextpartitionkey"), marker.get("nextrowkey")
    if pk is None and rk is None:
        return None
    return ContinuationToken(next_partition_key=pk, next_row_key=rk)


def _select(select: str | None) -> list[str] | None:
    if select is None or select.strip() in ("", "*"):
        return None
    return [name.strip() for name in select.split(",") if name.strip()]


def _policy_time(value: Any) -> Any:
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


def no_retry(context: Any) -> int | None:
    """The legacy SDK's ``no_retry`` policy: assign it to ``service.retry`` to send each
    request once.

    Example::

        service.retry = no_retry
    """
    return None


def _default_retry(context: Any) -> int | None:
    """Stands for azt's default retry policy (the legacy default was exponential)."""
    return None


def _no_resolver(property_resolver: object) -> None:
    if property_resolver is not None:
        raise AzureException("azt.legacy does not support property_resolver")


class TableService:
    """The legacy SDK's table client, blocking, over azt.

    Constructor forms (as in the legacy SDK): ``TableService(account_name, account_key)``,
    ``TableService(account_name, sas_token=token)``, ``TableService(is_emulated=True)``
    (``http://127.0.0.1:10002/devstoreaccount1``) and
    ``TableService(connection_string=...)``; ``protocol`` and ``endpoint_suffix`` build
    ``{protocol}://{account}.table.{endpoint_suffix}``; ``socket_timeout`` (seconds)
    bounds connecting and each read. ``request_session`` (a ``requests`` session) cannot
    be used by azt's aiohttp transport and is ignored.

    Example::

        with TableService(account_name="myaccount", account_key=key) as service:
            for task in service.query_entities("tasks", filter="PartitionKey eq 'todo'"):
                print(task.RowKey, task.etag)
    """

    def __init__(
        self,
        account_name: str | None = None,
        account_key: str | None = None,
        sas_token: str | None = None,
        is_emulated: bool = False,
        protocol: str = "https",
        endpoint_suffix: str = "core.windows.net",
        request_session: object = None,
        connection_string: str | None = None,
        socket_timeout: float | None = None,
    ) -> None:
        secondary: str | None = None
        if connection_string:
            settings = parse_connection_string(connection_string)
            account_name, account_key = settings.account_name, settings.account_key
            sas_token = settings.sas_token
            endpoint, secondary = settings.endpoint, settings.secondary_endpoint
            is_emulated = "127.0.0.1:10002" in endpoint and account_name == _DEV_ACCOUNT
        elif is_emulated:
            account_name = _DEV_ACCOUNT
            account_key = None if sas_token else DEV_ACCOUNT_KEY
            endpoint = f"{_EMULATOR}/{_DEV_ACCOUNT}"
        elif account_name:
            endpoint = f"{protocol or 'https'}://{account_name}.table.{endpoint_suffix}"
        else:
            raise ValueError(_MISSING_INFO)
        credential: SharedKeyCredential | SasCredential
        if account_key:
            if not account_name:
                raise ValueError(_MISSING_INFO)
            credential = SharedKeyCredential(account_name, account_key)
        elif sas_token:
            credential = SasCredential(sas_token)
        else:
            raise ValueError(_MISSING_INFO)
        self.account_name = account_name
        self.account_key = account_key
        self.sas_token = sas_token
        self.is_emulated = is_emulated
        self.protocol = endpoint.split(":", 1)[0]
        self.primary_endpoint = endpoint.split("://", 1)[1]
        self.request_session = request_session
        self.socket_timeout = socket_timeout
        # client-side encryption is not supported; setting these makes calls raise
        self.require_encryption = False
        self.key_encryption_key: object = None
        self.key_resolver_function: object = None
        self.encryption_resolver_function: object = None
        timeouts = None
        if socket_timeout is not None:
            timeouts = Timeouts(connect=socket_timeout, read=socket_timeout)
        #: ``no_retry`` (from ``azt.legacy.cosmosdb_table.common.retry``) turns retries
        #: off; anything else keeps azt's default retry policy.
        self.retry: Callable[[Any], int | None] = _default_retry
        retryless = RetryPolicy.no_retries()
        kwargs: dict[str, Any] = {
            "secondary_endpoint": secondary,
            "api_version": LEGACY_API_VERSION,
            "timeouts": timeouts,
        }
        self._clients = (
            TableServiceClient(endpoint, credential, **kwargs),
            TableServiceClient(endpoint, credential, retry=retryless, **kwargs),
        )
        self._tables: dict[tuple[str, int | None, bool], TableClient] = {}
        self._runner = LoopThread()
        self._finalizer = weakref.finalize(
            self, self._runner.close, *(client.aclose for client in self._clients)
        )

    @property
    def _client(self) -> TableServiceClient:
        return self._clients[self.retry is no_retry]

    # -- plumbing ---------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection pool and stop the private event loop (idempotent).

        Example::

            service.close()
        """
        self._finalizer()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self.require_encryption or self.key_encryption_key or self.key_resolver_function:
            coro.close()
            raise AzureException("azt.legacy does not support client-side encryption")
        try:
            return self._runner.run(coro)
        except Exception as exc:
            legacy = _legacy_error(exc)
            if legacy is exc:
                raise
            raise legacy from exc

    def _table(self, table_name: str, timeout: int | None) -> TableClient:
        _not_none("table_name", table_name)
        key = (table_name, timeout, self.retry is no_retry)
        table = self._tables.get(key)
        if table is None:
            table = self._client.get_table_client(table_name)
            if timeout is not None:
                table = table.with_options(server_timeout=timeout)
            self._tables[key] = table
        return table

    def _service(self, timeout: int | None) -> TableServiceClient:
        if timeout is None:
            return self._client
        return self._client.with_options(server_timeout=timeout)

    # -- tables -----------------------------------------------------------------------------

    def create_table(
        self, table_name: str, fail_on_exist: bool = False, timeout: int | None = None
    ) -> bool:
        """Create a table; ``False`` if it exists (or :class:`AzureConflictHttpError` with
        ``fail_on_exist=True``).

        Example::

            created = service.create_table("tasks")
        """
        _not_none("table", table_name)
        try:
            self._run(self._service(timeout).create_table(table_name))
        except AzureConflictHttpError:
            if fail_on_exist:
                raise
            return False
        return True

    def delete_table(
        self, table_name: str, fail_not_exist: bool = False, timeout: int | None = None
    ) -> bool:
        """Delete a table; ``False`` if it does not exist (or
        :class:`AzureMissingResourceHttpError` with ``fail_not_exist=True``).

        Example::

            service.delete_table("tasks")
        """
        _not_none("table_name", table_name)
        try:
            self._run(self._service(timeout).delete_table(table_name))
        except AzureMissingResourceHttpError:
            if fail_not_exist:
                raise
            return False
        return True

    def exists(self, table_name: str, timeout: int | None = None) -> bool:
        """Whether the table exists.

        Example::

            if not service.exists("tasks"):
                service.create_table("tasks")
        """
        _not_none("table_name", table_name)

        async def look() -> bool:
            pager = self._service(timeout).query_tables(
                "TableName eq @name", parameters={"name": table_name}
            )
            async for _ in pager:
                return True
            return False

        return self._run(look())

    def list_tables(
        self, num_results: int | None = None, marker: str | None = None, timeout: int | None = None
    ) -> ListGenerator:
        """The tables (:class:`Table` objects with ``name``), following continuations;
        ``next_marker`` is the next table name (or ``None``).

        Example::

            names = [table.name for table in service.list_tables()]
        """
        service = self._service(timeout)

        def fetch(next_name: Any, max_results: int | None) -> tuple[list[Any], Any]:
            token = ContinuationToken(next_table_name=next_name) if next_name else None
            pager = service.list_tables(results_per_page=max_results, continuation=token)
            page = self._run(pager.first_page())
            tables = []
            for name in page:
                table = Table()
                table.name = name
                tables.append(table)
            nxt = page.continuation.next_table_name if page.continuation else None
            return tables, nxt

        items, next_marker = fetch(marker, num_results)
        return ListGenerator(items, next_marker, fetch, num_results)

    def get_table_acl(self, table_name: str, timeout: int | None = None) -> dict[str, Any]:
        """The table's stored access policies: ``{id: AccessPolicy}`` (times as aware
        datetimes, permission as a string).

        Example::

            policies = service.get_table_acl("tasks")
        """
        policies = self._run(self._table(table_name, timeout).get_access_policy())
        out: dict[str, Any] = {}
        for name, policy in policies.items():
            legacy = AccessPolicy()
            if policy is not None:
                legacy.permission = policy.permission
                legacy.start = policy.start.to_datetime() if policy.start else None
                legacy.expiry = policy.expiry.to_datetime() if policy.expiry else None
            out[name] = legacy
        return out

    def set_table_acl(
        self,
        table_name: str,
        signed_identifiers: Mapping[str, Any] | None = None,
        timeout: int | None = None,
    ) -> None:
        """Replace the table's stored access policies (at most 5; ``None`` clears them).

        Example::

            service.set_table_acl("tasks", {"readers": AccessPolicy(
                permission=TablePermissions.QUERY, expiry=datetime(2030, 1, 1))})
        """
        _not_none("table_name", table_name)
        identifiers = dict(signed_identifiers or {})
        if len(identifiers) > 5:
            raise AzureException(
                "Too many access policies provided. The server does not support setting "
                "more than 5 access policies on a single resource."
            )
        policies: dict[str, _AztPolicy | None] = {}
        for name, policy in identifiers.items():
            if policy is None:
                policies[name] = None
                continue
            permission = str(policy.permission) if policy.permission else None
            policies[name] = _AztPolicy(
                permission=permission,
                start=_policy_time(policy.start) or None,
                expiry=_policy_time(policy.expiry) or None,
            )
        self._run(self._table(table_name, timeout).set_access_policy(policies))

    # -- entities ---------------------------------------------------------------------------

    def query_entities(
        self,
        table_name: str,
        filter: str | None = None,
        select: str | None = None,
        num_results: int | None = None,
        marker: Mapping[str, str] | None = None,
        accept: str = TablePayloadFormat.JSON_MINIMAL_METADATA,
        property_resolver: object = None,
        timeout: int | None = None,
    ) -> ListGenerator:
        """Entities matching an OData ``filter`` (all without), with ``select`` (comma
        separated names), at most ``num_results``, resuming at ``marker`` (a previous
        generator's ``next_marker``). Iterating follows continuations.

        Example::

            done = service.query_entities("tasks", filter="Done eq true", select="RowKey")
            print([task.RowKey for task in done], done.next_marker)
        """
        _no_resolver(property_resolver)
        _not_none("accept", accept)
        table = self._table(table_name, timeout)
        names = _select(select)

        def fetch(next_marker: Any, max_results: int | None) -> tuple[list[Any], Any]:
            pager = table.query_entities(
                filter,
                select=names,
                results_per_page=max_results,
                continuation=_marker_token(next_marker),
            )
            page = self._run(pager.first_page())
            items = [from_azt_entity(entity) for entity in page]
            nxt: dict[str, str] = {}
            token = page.continuation
            if token is not None:
                if token.next_partition_key is not None:
                    nxt["nextpartitionkey"] = token.next_partition_key
                if token.next_row_key is not None:
                    nxt["nextrowkey"] = token.next_row_key
            return items, nxt

        items, next_marker = fetch(marker, num_results)
        return ListGenerator(items, next_marker, fetch, num_results)

    def get_entity(
        self,
        table_name: str,
        partition_key: str,
        row_key: str,
        select: str | None = None,
        accept: str = TablePayloadFormat.JSON_MINIMAL_METADATA,
        property_resolver: object = None,
        timeout: int | None = None,
    ) -> Entity:
        """One entity (:class:`AzureMissingResourceHttpError` if it does not exist).

        Example::

            task = service.get_entity("tasks", "todo", "1", select="Description")
        """
        _no_resolver(property_resolver)
        _not_none("partition_key", partition_key)
        _not_none("row_key", row_key)
        _not_none("accept", accept)
        table = self._table(table_name, timeout)
        entity = self._run(table.get_entity(partition_key, row_key, select=_select(select)))
        return from_azt_entity(entity)

    def insert_entity(
        self, table_name: str, entity: Mapping[str, Any], timeout: int | None = None
    ) -> str | None:
        """Insert a new entity; its ETag (:class:`AzureConflictHttpError` if it exists).

        Example::

            etag = service.insert_entity("tasks", {"PartitionKey": "todo", "RowKey": "2"})
        """
        table = self._table(table_name, timeout)
        return self._run(table.insert_entity(to_azt_entity(entity))).etag

    def update_entity(
        self,
        table_name: str,
        entity: Mapping[str, Any],
        if_match: str = "*",
        timeout: int | None = None,
    ) -> str | None:
        """Replace an existing entity (conditional on ``if_match``); its new ETag.

        Example::

            etag = service.update_entity("tasks", task, if_match=task.etag)
        """
        return self._update(table_name, entity, if_match, timeout, UpdateMode.REPLACE)

    def merge_entity(
        self,
        table_name: str,
        entity: Mapping[str, Any],
        if_match: str = "*",
        timeout: int | None = None,
    ) -> str | None:
        """Merge properties into an existing entity (conditional on ``if_match``); its
        new ETag.

        Example::

            service.merge_entity("tasks", {"PartitionKey": "todo", "RowKey": "1", "Done": True})
        """
        return self._update(table_name, entity, if_match, timeout, UpdateMode.MERGE)

    def _update(
        self,
        table_name: str,
        entity: Mapping[str, Any],
        if_match: str,
        timeout: int | None,
        mode: UpdateMode,
    ) -> str | None:
        _not_none("table_name", table_name)
        _not_none("if_match", if_match)
        body = to_azt_entity(entity)
        table = self._table(table_name, timeout)
        return self._run(table.update_entity(body, mode, etag=if_match)).etag

    def delete_entity(
        self,
        table_name: str,
        partition_key: str,
        row_key: str,
        if_match: str = "*",
        timeout: int | None = None,
    ) -> None:
        """Delete an entity (conditional on ``if_match``).

        Example::

            service.delete_entity("tasks", "todo", "1", if_match=task.etag)
        """
        _not_none("if_match", if_match)
        _not_none("partition_key", partition_key)
        _not_none("row_key", row_key)
        table = self._table(table_name, timeout)
        self._run(table.delete_entity(partition_key, row_key, etag=if_match))

    def insert_or_replace_entity(
        self, table_name: str, entity: Mapping[str, Any], timeout: int | None = None
    ) -> str | None:
        """Insert the entity or replace the existing one; its ETag.

        Example::

            etag = service.insert_or_replace_entity("tasks", task)
        """
        body = to_azt_entity(entity)
        table = self._table(table_name, timeout)
        return self._run(table.upsert_entity(body, UpdateMode.REPLACE)).etag

    def insert_or_merge_entity(
        self, table_name: str, entity: Mapping[str, Any], timeout: int | None = None
    ) -> str | None:
        """Insert the entity or merge into the existing one; its ETag.

        Example::

            etag = service.insert_or_merge_entity("tasks", {"PartitionKey": "a", "RowKey": "1"})
        """
        body = to_azt_entity(entity)
        table = self._table(table_name, timeout)
        return self._run(table.upsert_entity(body, UpdateMode.MERGE)).etag

    # -- batches ----------------------------------------------------------------------------

    def commit_batch(
        self, table_name: str, batch: TableBatch, timeout: int | None = None
    ) -> list[str | None]:
        """Run a batch as one transaction; the operations' ETags in order (``None`` for
        deletes). :class:`AzureBatchOperationError` if an operation failed (nothing applied).

        Example::

            batch = TableBatch()
            batch.insert_entity({"PartitionKey": "a", "RowKey": "1"})
            etags = service.commit_batch("tasks", batch)
        """
        table = self._table(table_name, timeout)
        results = self._run(table.submit_transaction(batch.operations))
        return [result.etag for result in results]

    @contextmanager
    def batch(self, table_name: str, timeout: int | None = None) -> Iterator[TableBatch]:
        """A batch committed when the ``with`` block ends (not when it raises).

        Example::

            with service.batch("tasks") as batch:
                batch.insert_entity({"PartitionKey": "a", "RowKey": "1"})
                batch.insert_entity({"PartitionKey": "a", "RowKey": "2"})
        """
        batch = TableBatch()
        yield batch
        self.commit_batch(table_name, batch, timeout=timeout)

    # -- shared access signatures -----------------------------------------------------------

    def _signing_key(self) -> SharedKeyCredential:
        if self.account_name is None:
            raise ValueError("self.account_name should not be None.")
        if self.account_key is None:
            raise ValueError("self.account_key should not be None.")
        return SharedKeyCredential(self.account_name, self.account_key)

    def generate_table_shared_access_signature(
        self,
        table_name: str,
        permission: Any = None,
        expiry: datetime | str | None = None,
        start: datetime | str | None = None,
        id: str | None = None,
        ip: str | None = None,
        protocol: str | None = None,
        start_pk: str | None = None,
        start_rk: str | None = None,
        end_pk: str | None = None,
        end_rk: str | None = None,
    ) -> str:
        """A service SAS token for one table (use it as ``sas_token=`` of another
        ``TableService``).

        Example::

            token = service.generate_table_shared_access_signature(
                "tasks", TablePermissions.QUERY, expiry=datetime.utcnow() + timedelta(hours=1))
            reader = TableService(account_name="myaccount", sas_token=token)
        """
        _not_none("table_name", table_name)
        return generate_table_sas(
            self._signing_key(),
            table_name,
            permission=str(permission) if permission else None,
            expiry=expiry,
            start=start,
            policy_id=id,
            ip=ip,
            protocol=protocol,
            start_pk=start_pk,
            start_rk=start_rk,
            end_pk=end_pk,
            end_rk=end_rk,
            version=LEGACY_API_VERSION,
        )

    def generate_account_shared_access_signature(
        self,
        resource_types: Any,
        permission: Any,
        expiry: datetime | str,
        start: datetime | str | None = None,
        ip: str | None = None,
        protocol: str | None = None,
    ) -> str:
        """An account SAS token for the Table service (``resource_types`` and
        ``permission`` as letter strings or objects whose ``str()`` gives them).

        Example::

            token = service.generate_account_shared_access_signature(
                "sco", "rl", expiry=datetime.utcnow() + timedelta(hours=1))
        """
        return generate_account_sas(
            self._signing_key(),
            resource_types=str(resource_types),
            permission=str(permission),
            expiry=expiry,
            start=start,
            ip=ip,
            protocol=protocol,
            version=LEGACY_API_VERSION,
        )
