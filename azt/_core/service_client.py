"""``TableServiceClient``: the account's table service (tables, service properties and
statistics) and the factory of table clients that share its connections.

Example::

    async with TableServiceClient.from_connection_string("UseDevelopmentStorage=true") as svc:
        table = await svc.create_table_if_not_exists("movies")
        names = [name async for name in svc.list_tables()]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from azt._core.base import (
    XML_CONTENT_TYPE,
    ClientBase,
    ClientCore,
    endpoint_and_credential,
    send_create_table,
    send_delete_table,
)
from azt._core.config import (
    DEFAULT_API_VERSION,
    AmbiguousOutcomePolicy,
    Flavor,
    LocationMode,
    PoolLimits,
    RetryPolicy,
    Timeouts,
    WireFormat,
)
from azt._core.hooks import EventHooksArg
from azt._core.pagination import AsyncPager, ContinuationToken
from azt._core.queries import query_pager, query_params
from azt._core.results import TableItem, WriteResult, written
from azt._core.retry import Sleep
from azt._core.spellings import merge_filter
from azt._core.table_client import TableClient
from azt._core.tracing import TracingOptions, traced
from azt._core.transport import Transport
from azt._core.wire import urls
from azt._core.wire import xml as wire_xml
from azt._core.wire.xml import ServiceProperties, ServiceStats

__all__ = ["TableServiceClient"]


class TableServiceClient(ClientBase):
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
    * ``flavor``: :class:`azt.Flavor`, the service the account is (default: Cosmos DB
      for ``*.table.cosmos.azure.com`` endpoints, else Storage); it sets the client-side
      limits and refuses what Cosmos DB lacks (``docs/cosmos.md``).
    * ``transport``: a custom :class:`azt.Transport` (e.g. :class:`azt.MockTransport`;
      the caller closes it); ``sleep`` and ``uniform``: injected sleep and jitter source
      for tests; ``user_agent``: the ``User-Agent`` header.
    * ``event_hooks``: ``{"request": [...], "response": [...]}``, functions (plain or
      ``async``) called around every HTTP attempt with an :class:`azt.RequestInfo` /
      :class:`azt.ResponseInfo` (:class:`azt.EventHooks`); their exceptions propagate.

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
        event_hooks: EventHooksArg = None,
        tracing: TracingOptions | None = None,
        flavor: Flavor | None = None,
    ) -> None:
        self._core = ClientCore(
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
            event_hooks=event_hooks,
            tracing=tracing,
            flavor=flavor,
        )

    @classmethod
    def from_connection_string(
        cls, connection_string: str, *, use_shared_key_lite: bool = False, **kwargs: Any
    ) -> TableServiceClient:
        """A service client from a storage connection string (PROTOCOL.md 1.4).

        Example::

            service = TableServiceClient.from_connection_string("UseDevelopmentStorage=true")
        """
        endpoint, credential = endpoint_and_credential(
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

    @traced("create_table", table_arg="table_name")
    async def create_table(self, table_name: str) -> TableClient:
        """Create a table; :class:`azt.TableAlreadyExistsError` if it exists.

        Example::

            movies = await service.create_table("movies")
        """
        await send_create_table(self._core, table_name, if_not_exists=False)
        return self.get_table_client(table_name)

    @traced("create_table_if_not_exists", table_arg="table_name")
    async def create_table_if_not_exists(self, table_name: str) -> TableClient:
        """Create a table unless it exists; return its client either way.

        Example::

            movies = await service.create_table_if_not_exists("movies")
        """
        await send_create_table(self._core, table_name, if_not_exists=True)
        return self.get_table_client(table_name)

    @traced("delete_table", table_arg="table_name")
    async def delete_table(self, table_name: str) -> WriteResult:
        """Delete a table; :class:`azt.TableNotFoundError` if it does not exist.

        The result carries the service's request id (``etag`` is ``None``).

        Example::

            result = await service.delete_table("movies")
            print(result.request_id)
        """
        result = await send_delete_table(self._core, table_name, if_exists=False)
        assert result is not None
        return result

    @traced("delete_table_if_exists", table_arg="table_name")
    async def delete_table_if_exists(self, table_name: str) -> bool:
        """Delete a table if it exists; return whether it was deleted.

        Example::

            deleted = await service.delete_table_if_exists("movies")
        """
        return await send_delete_table(self._core, table_name, if_exists=True) is not None

    def query_tables(
        self,
        filter: str | None = None,
        *,
        parameters: Mapping[str, Any] | None = None,
        results_per_page: int | None = None,
        continuation: ContinuationToken | str | None = None,
        query_filter: str | None = None,
    ) -> AsyncPager[TableItem]:
        """Table names matching a filter on ``TableName``, following ``NextTableName``.

        Each name is a :class:`TableItem`: a ``str`` whose ``.name`` is itself (the
        ``azure-data-tables`` spelling). ``query_filter`` is ``filter`` under that SDK's
        name (give one or the other).

        Example::

            names = await service.query_tables("TableName ge @a and TableName lt @b",
                                               parameters={"a": "m", "b": "n"}).to_list()
        """
        self._core.check_open()
        filter = merge_filter(filter, query_filter, "query_tables()")
        params = query_params(filter, parameters, None, results_per_page)
        core = self._core
        return query_pager(
            core,
            "/" + urls.TABLES_PATH,
            params,
            continuation,
            "service",
            lambda body: [TableItem(name) for name in core.codec.decode_tables(body)],
        )

    def list_tables(
        self,
        *,
        results_per_page: int | None = None,
        continuation: ContinuationToken | str | None = None,
    ) -> AsyncPager[TableItem]:
        """All table names of the account, each a :class:`TableItem` (a ``str`` that also
        has ``azure-data-tables``' ``.name``).

        Example::

            async for name in service.list_tables():
                print(name)          # or name.name, as azure-data-tables spells it
        """
        return self.query_tables(None, results_per_page=results_per_page, continuation=continuation)

    @traced("get_service_properties")
    async def get_service_properties(self) -> ServiceProperties:
        """The table service properties (logging, metrics, CORS).

        Example::

            props = await service.get_service_properties()
        """
        self._core.flavor.require("get_service_properties")
        resp = await self._core.send(
            "GET",
            "/",
            query="restype=service&comp=properties",
            headers={"Accept": XML_CONTENT_TYPE},
            comp="properties",
            resource="service",
        )
        return attrs.evolve(
            wire_xml.decode_service_properties(resp.body),
            request_id=resp.headers.get("x-ms-request-id"),
        )

    @traced("set_service_properties")
    async def set_service_properties(self, properties: ServiceProperties) -> WriteResult:
        """Set the table service properties (elements left ``None`` stay unchanged).

        Example::

            await service.set_service_properties(ServiceProperties(cors=[]))
        """
        self._core.flavor.require("set_service_properties")
        body = wire_xml.encode_service_properties(properties)
        resp = await self._core.send(
            "PUT",
            "/",
            query="restype=service&comp=properties",
            headers={"Content-Type": XML_CONTENT_TYPE, "Accept": XML_CONTENT_TYPE},
            body=body,
            comp="properties",
            resource="service",
        )
        return written(resp)

    @traced("get_service_stats")
    async def get_service_stats(self) -> ServiceStats:
        """Geo-replication statistics, read from the secondary endpoint.

        Example::

            stats = await service.get_service_stats()
            print(stats.geo_replication.status)
        """
        self._core.flavor.require("get_service_stats")
        resp = await self._core.send(
            "GET",
            "/",
            query="restype=service&comp=stats",
            headers={"Accept": XML_CONTENT_TYPE},
            comp="stats",
            resource="service",
            location="secondary",
        )
        return attrs.evolve(
            wire_xml.decode_service_stats(resp.body),
            request_id=resp.headers.get("x-ms-request-id"),
        )
