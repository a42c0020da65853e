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

import functools
import weakref
from collections.abc import Callable, Coroutine, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from http import HTTPStatus
from types import TracebackType
from typing import Any, Self, TypeVar
from urllib.parse import quote

from azt._core.auth import SasCredential, SharedKeyCredential
from azt._core.base import ClientCore
from azt._core.config import RetryPolicy, Timeouts
from azt._core.connection_string import DEV_ACCOUNT_KEY, parse_connection_string
from azt._core.sas import generate_account_sas, generate_table_sas
from azt._core.service_client import TableServiceClient
from azt._core.transport import AiohttpTransport
from azt._errors import AmbiguousOutcomeError, ServiceError, TransportError
from azt.legacy import _requests as wire
from azt.legacy._encryption import read_entity, write_body
from azt.legacy._loop import LoopThread
from azt.legacy._models import (
    AccessPolicy,
    AzureConflictHttpError,
    AzureException,
    AzureHttpError,
    AzureMissingResourceHttpError,
    Entity,
    ListGenerator,
    Table,
    TablePayloadFormat,
)
from azt.legacy._requests import TableBatch
from azt.legacy._retry import no_retry, retry_policy_for
from azt.legacy._wire import PropertyResolver

__all__ = ["TableService", "legacy_error", "no_retry"]

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


def legacy_error(exc: Exception) -> Exception:
    """The legacy SDK's error for an azt error (others are returned unchanged): a
    :class:`ServiceError` becomes :class:`AzureHttpError` (404 and 409 its subclasses) with
    ``status_code``, ``error_code`` and the message ``"<reason> ErrorCode: <code>"`` followed
    by the service's message (the legacy SDK followed it with the raw response body).

    Example::

        >>> from azt._errors import error_from_response
        >>> err = legacy_error(error_from_response(409, "EntityAlreadyExists", "Exists."))
        >>> type(err).__name__, err.status_code, err.error_code, str(err)
        ('AzureConflictHttpError', 409, 'EntityAlreadyExists', 'Conflict ErrorCode: EntityAlreadyExists\\nExists.')
    """  # noqa: E501
    if isinstance(exc, ServiceError):
        try:
            text = HTTPStatus(exc.status).phrase
        except ValueError:
            text = str(exc.status)
        if exc.code:
            text += f" ErrorCode: {exc.code}"
        if exc.message:
            text += "\n" + exc.message
        err = AzureHttpError(text, exc.status)
        err.error_code = exc.code
        return err
    if isinstance(exc, TransportError | AmbiguousOutcomeError):
        return AzureException(str(exc))
    return exc


def _default_retry(context: Any) -> int | None:
    """Stands for azt's default retry policy (the legacy default was exponential)."""
    return None


async def _close_all(
    clients: Mapping[Any, TableServiceClient], transports: list[AiohttpTransport]
) -> None:
    for client in list(clients.values()):
        await client.aclose()
    for transport in transports:  # set_proxy's: the clients do not own them
        await transport.aclose()


class TableService:
    """The legacy SDK's table client, blocking, over azt.

    Constructor forms (as in the legacy SDK): ``TableService(account_name, account_key)``,
    ``TableService(account_name, sas_token=token)``, ``TableService(is_emulated=True)``
    (``http://127.0.0.1:10002/devstoreaccount1`` with the emulator's key: a ``sas_token``
    given with it is dropped, as the legacy SDK did) and
    ``TableService(connection_string=...)``; ``protocol`` and ``endpoint_suffix`` build
    ``{protocol}://{account}.table.{endpoint_suffix}``; ``socket_timeout`` (seconds)
    bounds connecting and each read. ``request_session`` (a ``requests`` session) cannot
    be used by azt's aiohttp transport and is ignored.

    Client-side encryption (the ``azt-tables[legacy-encryption]`` extra) uses the legacy
    attributes: ``key_encryption_key``, ``key_resolver_function``,
    ``encryption_resolver_function`` and ``require_encryption``.

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
            # the legacy SDK's emulator settings: its account and key, any SAS dropped
            account_name, account_key, sas_token = _DEV_ACCOUNT, DEV_ACCOUNT_KEY, None
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
        #: client-side encryption, as in the legacy SDK (``azt-tables[legacy-encryption]``)
        self.require_encryption = False
        self.key_encryption_key: Any = None
        self.key_resolver_function: Callable[[str], Any] | None = None
        self.encryption_resolver_function: Callable[[str, str, str], bool] | None = None
        timeouts = None
        if socket_timeout is not None:
            timeouts = Timeouts(connect=socket_timeout, read=socket_timeout)
        #: ``no_retry``, ``LinearRetry(...).retry`` or ``ExponentialRetry(...).retry``
        #: (``azt.legacy.cosmosdb_table.common.retry``); anything else keeps azt's default.
        self.retry: Callable[[Any], int | None] = _default_retry
        self._endpoint, self._credential = endpoint, credential
        self._options: dict[str, Any] = {
            "secondary_endpoint": secondary,
            "api_version": LEGACY_API_VERSION,
            "timeouts": timeouts,
        }
        self._clients: dict[RetryPolicy | None, TableServiceClient] = {}
        self._transports: list[AiohttpTransport] = []
        self._runner = LoopThread()
        # the cleanup holds the clients, not self, so an unclosed service is still collected
        self._finalizer = weakref.finalize(
            self,
            self._runner.close,
            functools.partial(_close_all, self._clients, self._transports),
        )
        self._client  # noqa: B018 - the default client is made now, as before

    @property
    def _client(self) -> TableServiceClient:
        policy = retry_policy_for(self.retry)
        client = self._clients.get(policy)
        if client is None:
            options = dict(self._options)
            if policy is not None:
                options["retry"] = policy
            client = TableServiceClient(self._endpoint, self._credential, **options)
            self._clients[policy] = client
        return client

    def _core(self, timeout: int | None) -> ClientCore:
        core: ClientCore = self._client._core
        if timeout is None:
            return core
        view = core.view()
        view.server_timeout = timeout  # sent as given: the service judges it
        return view

    # -- plumbing ---------------------------------------------------------------------------

    def set_proxy(
        self, host: str, port: int | str, user: str | None = None, password: str | None = None
    ) -> None:
        """Send every later request through the HTTP proxy at ``host:port``, as the legacy
        SDK did: an ``http`` request to ``http://host:port`` in absolute form, an ``https``
        request to ``https://host:port`` (TLS to the proxy, then a ``CONNECT`` tunnel with
        the service's certificate checked), with ``user`` and ``password`` (when both are
        given) as ``Proxy-Authorization: Basic``. The certificates are judged against the
        default trust store (``SSL_CERT_FILE`` names another).

        Example::

            service = TableService(account_name="myaccount", sas_token=token)
            service.set_proxy("127.0.0.1", 3128)
            rows = list(service.query_entities("tasks"))
        """
        _not_none("host", host)
        _not_none("port", port)
        credentials = ""
        if user and password:
            credentials = f"{quote(user, safe='')}:{quote(password, safe='')}@"
        authority = f"{credentials}{host}:{port}"
        transport = AiohttpTransport(
            timeouts=self._options["timeouts"],
            proxies={"http": f"http://{authority}", "https": f"https://{authority}"},
        )
        old_clients, old_transports = dict(self._clients), list(self._transports)
        self._clients.clear()
        self._transports[:] = [transport]
        self._options["transport"] = transport
        self._runner.run(_close_all(old_clients, old_transports))

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
        try:
            return self._runner.run(coro)
        except Exception as exc:
            legacy = legacy_error(exc)
            if legacy is exc:
                raise
            raise legacy from exc

    def _read(self, row: Mapping[str, Any], resolver: PropertyResolver | None) -> Entity:
        return read_entity(
            row,
            resolver,
            self.require_encryption,
            self.key_encryption_key,
            self.key_resolver_function,
        )

    def _write_body(self, entity: Mapping[str, Any], *, encryptable: bool) -> bytes:
        return write_body(
            entity,
            encryptable=encryptable,
            require_encryption=self.require_encryption,
            kek=self.key_encryption_key,
            resolver=self.encryption_resolver_function,
        )

    def _decrypting(self) -> bool:
        return self.key_encryption_key is not None or self.key_resolver_function is not None

    # -- tables -----------------------------------------------------------------------------

    def create_table(
        self, table_name: str, fail_on_exist: bool = False, timeout: int | None = None
    ) -> bool:
        """Create a table; ``False`` if it exists (or :class:`AzureConflictHttpError` with
        ``fail_on_exist=True``). The name is the service's to judge
        (``AzureHttpError`` 400 for an invalid one).

        Example::

            created = service.create_table("tasks")
        """
        _not_none("table", table_name)
        try:
            self._run(wire.create_table(self._core(timeout), table_name))
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
            self._run(wire.delete_table(self._core(timeout), table_name))
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
        return self._run(wire.table_exists(self._core(timeout), table_name))

    def list_tables(
        self, num_results: int | None = None, marker: str | None = None, timeout: int | None = None
    ) -> ListGenerator:
        """The tables (:class:`Table` objects with ``name``), following continuations;
        ``next_marker`` is the next table name (or ``None``).

        Example::

            names = [table.name for table in service.list_tables()]
        """
        core = self._core(timeout)

        def fetch(next_name: Any, max_results: int | None) -> tuple[list[Any], Any]:
            names, following = self._run(wire.list_table_names(core, max_results, next_name))
            tables = []
            for name in names:
                table = Table()
                table.name = name
                tables.append(table)
            return tables, following

        items, next_marker = fetch(marker, num_results)
        return ListGenerator(items, next_marker, fetch, num_results)

    def get_table_acl(self, table_name: str, timeout: int | None = None) -> dict[str, Any]:
        """The table's stored access policies: ``{id: AccessPolicy}`` (times as aware
        datetimes, permission as a string).

        Example::

            policies = service.get_table_acl("tasks")
        """
        _not_none("table_name", table_name)
        policies = self._run(wire.get_acl(self._core(timeout), table_name))
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
        ``start`` and ``expiry`` are datetimes (naive = UTC) or strings sent as given.

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
        self._run(wire.set_acl(self._core(timeout), table_name, identifiers))

    # -- entities ---------------------------------------------------------------------------

    def query_entities(
        self,
        table_name: str,
        filter: str | None = None,
        select: str | None = None,
        num_results: int | None = None,
        marker: Mapping[str, str] | None = None,
        accept: str = TablePayloadFormat.JSON_MINIMAL_METADATA,
        property_resolver: PropertyResolver | None = None,
        timeout: int | None = None,
    ) -> ListGenerator:
        """Entities matching an OData ``filter`` (all without), with ``select`` (comma
        separated names), at most ``num_results`` (sent as ``$top``: the service refuses
        0 or over 1000), resuming at ``marker`` (a previous generator's ``next_marker``),
        read with ``accept`` (a :class:`TablePayloadFormat`) and typed by
        ``property_resolver(pk, rk, name, value, edm_type)``. Iterating follows
        continuations.

        Example::

            done = service.query_entities("tasks", filter="Done eq true", select="RowKey")
            print([task.RowKey for task in done], done.next_marker)
        """
        _not_none("table_name", table_name)
        _not_none("accept", accept)
        if self._decrypting() and select and select.strip() != "*":
            select += ",_ClientEncryptionMetadata1,_ClientEncryptionMetadata2"
        core = self._core(timeout)

        def fetch(next_marker: Any, max_results: int | None) -> tuple[list[Any], Any]:
            rows, following = self._run(
                wire.query_rows(
                    core, table_name, filter, select or None, max_results, next_marker, accept
                )
            )
            return [self._read(row, property_resolver) for row in rows], following

        items, next_marker = fetch(marker, num_results)
        return ListGenerator(items, next_marker, fetch, num_results)

    def get_entity(
        self,
        table_name: str,
        partition_key: str,
        row_key: str,
        select: str | None = None,
        accept: str = TablePayloadFormat.JSON_MINIMAL_METADATA,
        property_resolver: PropertyResolver | None = None,
        timeout: int | None = None,
    ) -> Entity:
        """One entity (:class:`AzureMissingResourceHttpError` if it does not exist), read
        with ``accept`` and typed by ``property_resolver`` as in :meth:`query_entities`.

        Example::

            task = service.get_entity("tasks", "todo", "1", select="Description")
        """
        _not_none("table_name", table_name)
        _not_none("partition_key", partition_key)
        _not_none("row_key", row_key)
        _not_none("accept", accept)
        if self._decrypting() and select and select.strip() != "*":
            select += ",_ClientEncryptionMetadata1,_ClientEncryptionMetadata2"
        row = self._run(
            wire.get_row(
                self._core(timeout), table_name, partition_key, row_key, select or None, accept
            )
        )
        return self._read(row, property_resolver)

    def _write(
        self,
        method: str,
        table_name: str,
        entity: Mapping[str, Any],
        *,
        encryptable: bool,
        if_match: str | None,
        timeout: int | None,
    ) -> str | None:
        _not_none("table_name", table_name)
        body = self._write_body(entity, encryptable=encryptable)
        pk, rk = entity["PartitionKey"], entity["RowKey"]
        core = self._core(timeout)
        if method == "POST":
            return self._run(wire.send_entity(core, "POST", table_name, body=body))
        return self._run(
            wire.send_entity(core, method, table_name, pk, rk, body=body, if_match=if_match)
        )

    def insert_entity(
        self, table_name: str, entity: Mapping[str, Any], timeout: int | None = None
    ) -> str | None:
        """Insert a new entity; its ETag (:class:`AzureConflictHttpError` if it exists).

        Example::

            etag = service.insert_entity("tasks", {"PartitionKey": "todo", "RowKey": "2"})
        """
        return self._write(
            "POST", table_name, entity, encryptable=True, if_match=None, timeout=timeout
        )

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
        _not_none("if_match", if_match)
        return self._write(
            "PUT", table_name, entity, encryptable=True, if_match=if_match, timeout=timeout
        )

    def merge_entity(
        self,
        table_name: str,
        entity: Mapping[str, Any],
        if_match: str = "*",
        timeout: int | None = None,
    ) -> str | None:
        """Merge properties into an existing entity (conditional on ``if_match``); its
        new ETag. Not with client-side encryption (``ValueError``).

        Example::

            service.merge_entity("tasks", {"PartitionKey": "todo", "RowKey": "1", "Done": True})
        """
        _not_none("if_match", if_match)
        return self._write(
            "MERGE", table_name, entity, encryptable=False, if_match=if_match, timeout=timeout
        )

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
        _not_none("table_name", table_name)
        _not_none("if_match", if_match)
        _not_none("partition_key", partition_key)
        _not_none("row_key", row_key)
        core = self._core(timeout)
        self._run(
            wire.send_entity(core, "DELETE", table_name, partition_key, row_key, if_match=if_match)
        )

    def insert_or_replace_entity(
        self, table_name: str, entity: Mapping[str, Any], timeout: int | None = None
    ) -> str | None:
        """Insert the entity or replace the existing one; its ETag.

        Example::

            etag = service.insert_or_replace_entity("tasks", task)
        """
        return self._write(
            "PUT", table_name, entity, encryptable=True, if_match=None, timeout=timeout
        )

    def insert_or_merge_entity(
        self, table_name: str, entity: Mapping[str, Any], timeout: int | None = None
    ) -> str | None:
        """Insert the entity or merge into the existing one; its ETag. Not with
        client-side encryption (``ValueError``).

        Example::

            etag = service.insert_or_merge_entity("tasks", {"PartitionKey": "a", "RowKey": "1"})
        """
        return self._write(
            "MERGE", table_name, entity, encryptable=False, if_match=None, timeout=timeout
        )

    # -- batches ----------------------------------------------------------------------------

    def commit_batch(
        self, table_name: str, batch: TableBatch, timeout: int | None = None
    ) -> list[str | None]:
        """Run a batch as one transaction; the operations' ETags in order (``None`` for
        deletes). :class:`AzureBatchOperationError` if an operation failed (nothing
        applied). An empty batch is sent too (the service accepts an empty change set).

        Example::

            batch = TableBatch()
            batch.insert_entity({"PartitionKey": "a", "RowKey": "1"})
            etags = service.commit_batch("tasks", batch)
        """
        _not_none("table_name", table_name)
        return self._run(wire.commit_batch(self._core(timeout), table_name, batch.requests))

    @contextmanager
    def batch(self, table_name: str, timeout: int | None = None) -> Iterator[TableBatch]:
        """A batch committed when the ``with`` block ends (not when it raises); it
        encrypts as this service is set to.

        Example::

            with service.batch("tasks") as batch:
                batch.insert_entity({"PartitionKey": "a", "RowKey": "1"})
                batch.insert_entity({"PartitionKey": "a", "RowKey": "2"})
        """
        batch = TableBatch(
            self.require_encryption, self.key_encryption_key, self.encryption_resolver_function
        )
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
