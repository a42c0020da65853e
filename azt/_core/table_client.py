# Over 800 lines: one public class, every table, entity and transaction operation.
"""``TableClient``: the operations on one table and its entities.

Example::

    async with TableClient.from_connection_string("UseDevelopmentStorage=true", "movies") as table:
        await table.insert_entity({"PartitionKey": "Action", "RowKey": "Heat", "Rating": 4.5})
        async for movie in table.query_entities(
            "PartitionKey eq @genre and Rating ge @r", parameters={"genre": "Action", "r": 4.0}
        ):
            print(movie["RowKey"])
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal, TypeVar, overload

from azt._core.base import (
    XML_CONTENT_TYPE,
    ClientBase,
    ClientCore,
    EntityArg,
    EntityFactory,
    EntityObject,
    check_entity,
    encoded_source,
    endpoint_and_credential,
    entity_source,
    plain_value,
    send_create_table,
    send_delete_table,
    validate_table_name,
    write_back,
)
from azt._core.batch import (
    BatchOperation,
    OperationEncoder,
    TableBatch,
    bound_batch,
    checked_head,
    companions,
    droppable_companion,
)
from azt._core.batch_answer import batch_results
from azt._core.batch_writer import DEFAULT_MAX_BUFFER_BYTES, BatchWriter
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
from azt._core.intents import INTENT_PROPERTY, carry_out
from azt._core.pagination import AsyncPager, ContinuationToken
from azt._core.queries import (
    atom_rows_decoder,
    decode_feed_deriving_etags,
    derived_etag,
    query_pager,
    query_params,
    select_names,
    select_text,
)
from azt._core.results import (
    AccessPolicies,
    ResponseMetadata,
    UpdateMode,
    WriteResult,
    resolved,
    written,
)
from azt._core.retry import Sleep
from azt._core.spellings import add_transaction_tuple, if_match, merge_filter, split_table_url
from azt._core.tracing import TracingOptions, traced
from azt._core.transport import Transport
from azt._core.wire import json as wire_json
from azt._core.wire import urls
from azt._core.wire import xml as wire_xml
from azt._core.wire.xml import AccessPolicy
from azt._edm.datetime import EdmDateTime
from azt._edm.entity import (
    PROJECTED,
    TableEntity,
    projected_rows,
    refuse_property_loss,
    set_partial,
)
from azt._edm.validation import validate_key
from azt._errors import (
    BatchValidationError,
    EntityAlreadyExistsError,
    EntityNotFoundError,
    PreconditionFailedError,
    ServiceError,
    TransactionError,
    ValidationError,
)

__all__ = ["TableClient"]

_R = TypeVar("_R")
_E = TypeVar("_E")


class TableClient(ClientBase):
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
        self.table_name = validate_table_name(table_name, self._core.flavor)
        self._init_paths()

    @classmethod
    def _from_core(cls, core: ClientCore, table_name: str) -> TableClient:
        self = cls.__new__(cls)
        self.table_name = validate_table_name(table_name, core.flavor)
        # A view of the service client's core: same pipeline and connections, but its own
        # closed flag, and closing it never closes the connections it borrows.
        self._core = core.view()
        self._init_paths()
        return self

    def _init_paths(self) -> None:
        self._table_path = "/" + urls.table_path(self.table_name)
        self._query_path = self._table_path + "()"
        self._encoder: OperationEncoder | None = None

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
        endpoint, credential = endpoint_and_credential(
            connection_string, use_shared_key_lite, kwargs
        )
        return cls(endpoint, table_name, credential, **kwargs)

    @classmethod
    def from_table_url(
        cls, table_url: str, *, credential: object = None, **kwargs: Any
    ) -> TableClient:
        """A table client from the table's URL, as ``azure-data-tables`` spells it: the last
        path segment is the table name, the rest the endpoint; a SAS token in the URL's
        query is the credential when ``credential`` is omitted. Other keyword arguments
        are those of the constructor.

        Example::

            table = TableClient.from_table_url(
                "https://myaccount.table.core.windows.net/movies", credential=key_credential
            )
        """
        endpoint, table_name = split_table_url(table_url)
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

    @traced("create_table")
    async def create_table(self) -> WriteResult:
        """Create this table; raises :class:`azt.TableAlreadyExistsError` if it exists.

        The result carries the service's request id and status (``etag`` is ``None``).

        Example::

            result = await table.create_table()
            print(result.request_id)
        """
        result = await send_create_table(self._core, self.table_name, if_not_exists=False)
        assert result is not None
        return result

    @traced("create_table_if_not_exists")
    async def create_table_if_not_exists(self) -> bool:
        """Create this table unless it exists; return whether it was created.

        Example::

            created = await table.create_table_if_not_exists()
        """
        return await send_create_table(self._core, self.table_name, if_not_exists=True) is not None

    @traced("delete_table")
    async def delete_table(self) -> WriteResult:
        """Delete this table; raises :class:`azt.TableNotFoundError` if it does not exist.

        The result carries the service's request id (``etag`` is ``None``).

        Example::

            result = await table.delete_table()
            print(result.request_id)
        """
        result = await send_delete_table(self._core, self.table_name, if_exists=False)
        assert result is not None
        return result

    @traced("delete_table_if_exists")
    async def delete_table_if_exists(self) -> bool:
        """Delete this table if it exists; return whether it was deleted.

        Example::

            deleted = await table.delete_table_if_exists()
        """
        return await send_delete_table(self._core, self.table_name, if_exists=True) is not None

    @traced("get_access_policy")
    async def get_access_policy(self) -> AccessPolicies:
        """The table's stored access policies: ``{id: AccessPolicy or None}`` (an
        :class:`AccessPolicies` dict that also carries the response's ``request_id``).

        Example::

            policies = await table.get_access_policy()
        """
        self._core.flavor.require("get_access_policy")
        resp = await self._core.send(
            "GET",
            self._table_path,
            query="comp=acl",
            headers={"Accept": XML_CONTENT_TYPE},
            comp="acl",
            resource="table",
        )
        return AccessPolicies(
            wire_xml.decode_signed_identifiers(resp.body),
            request_id=resp.headers.get("x-ms-request-id"),
        )

    @traced("set_access_policy")
    async def set_access_policy(self, policies: Mapping[str, AccessPolicy | None]) -> WriteResult:
        """Replace the table's stored access policies (at most 5; ``{}`` clears them).

        Example::

            await table.set_access_policy(
                {"readers": AccessPolicy(permission="r", expiry=datetime(2030, 1, 1, tzinfo=UTC))}
            )
        """
        self._core.flavor.require("set_access_policy")
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
            headers={"Content-Type": XML_CONTENT_TYPE, "Accept": XML_CONTENT_TYPE},
            body=body,
            comp="acl",
            resource="table",
        )
        return written(resp)

    # -- entities ---------------------------------------------------------------------------

    def _encode(self, entity: Mapping[str, Any]) -> bytes:
        body: bytes = self._core.codec.encode_entity(entity)
        return body

    def _checked_source(
        self, entity: Any
    ) -> tuple[Any, EntityObject | None, str | None, str, str, bytes | None, bool]:
        """What :func:`encoded_source` gives of ``entity`` when this client sends JSON
        checked against Azure Table storage's limits (else :func:`entity_source`'s, with no
        body), its keys between: checked with its body in one pass, else by
        :func:`check_entity` (its body then ``None``, to be encoded: :meth:`_encode`)."""
        core = self._core
        if core.codec is wire_json and core.limits.is_storage:
            data, obj, etag, body, more = encoded_source(entity)
            if body is not None:
                return data, obj, etag, data["PartitionKey"], data["RowKey"], body, more
        else:
            data, obj, etag = entity_source(entity)
            more = obj is not None
        pk, rk = check_entity(data, core.limits)
        return data, obj, etag, pk, rk, None, more

    @traced("insert_entity", key_arg="entity", entities=1)
    async def insert_entity(
        self, entity: EntityArg, *, return_content: bool = False
    ) -> WriteResult:
        """Insert a new entity; :class:`azt.EntityAlreadyExistsError` if the keys exist.

        ``entity`` is a mapping or an entity object (``azt.Entity``, ``azt.DynamicEntity``);
        an object gets the new ``ETag`` and ``Timestamp`` written back. With
        ``return_content=True`` the service echoes the stored entity (with its Timestamp)
        in ``result.entity``.

        Example::

            result = await table.insert_entity({"PartitionKey": "p", "RowKey": "r", "n": 1})
            print(result.etag, result.request_id)
            movie = Movie("Action", "Heat", rating=4.5)
            await table.insert_entity(movie)      # movie.ETag, movie.Timestamp now set
        """
        core = self._core
        data, obj, _, pk, rk, body, more = self._checked_source(entity)
        if more:
            extra = companions(obj, "create", None, data, None, core.limits)
            if extra:
                op = BatchOperation("create", data, source=obj)
                return await self._write_group(op, extra, body)
        if body is None:
            body = self._encode(data)
        headers = dict(core.odata_write)
        headers["Prefer"] = "return-content" if return_content else "return-no-content"
        try:
            resp = await core.send(
                "POST", self._table_path, headers=headers, body=body, resource="entity"
            )
        except EntityAlreadyExistsError as exc:
            if core.ambiguous(f"insert_entity({pk!r}, {rk!r})", exc):
                result = await self._verify(
                    pk, rk, data, exc, exact=True, return_entity=return_content
                )
                write_back(obj, result.etag)
                return result
            raise
        echoed = None
        etag = resp.headers.get("ETag")
        if return_content and resp.body:
            echoed = core.codec.decode_entry(resp.body, etag=etag)
        write_back(obj, etag)
        return WriteResult(
            etag=etag,
            request_id=resp.headers.get("x-ms-request-id"),
            status=resp.status,
            entity=echoed,
        )

    async def create_entity(
        self, entity: EntityArg, *, return_content: bool = False
    ) -> WriteResult:
        """:meth:`insert_entity` under ``azure-data-tables``' name: insert a new entity,
        :class:`azt.EntityAlreadyExistsError` (an ``azure.core`` ``ResourceExistsError``
        where azure-core is installed) if the keys exist.

        Example::

            await table.create_entity({"PartitionKey": "p", "RowKey": "r", "n": 1})
        """
        return await self.insert_entity(entity, return_content=return_content)

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

    @traced("update_entity", key_arg="entity", entities=1)
    async def update_entity(
        self,
        entity: EntityArg,
        mode: UpdateMode = UpdateMode.MERGE,
        *,
        etag: str | None = None,
        match_condition: object = None,
        allow_property_loss: bool = False,
    ) -> WriteResult:
        """Merge into or replace an existing entity.

        ``etag`` is the ``If-Match``: ``"*"`` updates unconditionally (the entity must
        exist); an ETag (``entity.metadata.etag``) makes it optimistic:
        :class:`azt.PreconditionFailedError` when it changed meanwhile,
        :class:`azt.EntityNotFoundError` when it is gone. Left out, it is the ETag an
        entity object (``azt.Entity``, ``azt.DynamicEntity``) carries, else ``"*"`` (a
        plain mapping is always unconditional unless given one). An object gets the new
        ``ETag`` and ``Timestamp`` written back. ``UpdateMode.REPLACE`` of an entity read
        with ``select`` raises :class:`azt.PropertyLossError` (nothing is sent) unless
        ``allow_property_loss``: it would delete what was not selected.
        ``match_condition`` takes ``azure-data-tables``' spelling
        (``azure.core.MatchConditions.IfNotModified``: ``etag``, else the ETag the entity
        was read with; ``Unconditionally``: ``"*"``).

        Example::

            movie["Rating"] = 5.0
            await table.update_entity(movie, UpdateMode.MERGE, etag=movie.metadata.etag)
            hero = await table.get_entity("Action", "Heat", entity_class=Movie)
            hero.rating = 5.0
            await table.update_entity(hero)       # If-Match: hero.ETag
        """
        data, obj, own_etag, pk, rk, body, more = self._checked_source(entity)
        etag = if_match(etag, match_condition, entity, own_etag, "update_entity()")
        mode = UpdateMode(mode)
        if mode is UpdateMode.REPLACE and not allow_property_loss:
            refuse_property_loss(entity, "update_entity(mode=REPLACE)")
        extra = companions(obj, "update", mode, data, etag, self._core.limits) if more else []
        if extra:
            op = BatchOperation("update", data, mode=mode, etag=etag, source=obj)
            return await self._write_group(op, extra, body)
        core = self._core
        headers = dict(core.odata_write)
        headers["If-Match"] = etag
        method = core.write_verb(mode is UpdateMode.MERGE, headers)
        try:
            resp = await core.send(
                method,
                "/" + urls.entity_path(self.table_name, pk, rk),
                headers=headers,
                body=self._encode(data) if body is None else body,
                resource="entity",
            )
        except PreconditionFailedError as exc:
            if etag != "*" and core.ambiguous(f"update_entity({pk!r}, {rk!r})", exc):
                result = await self._verify(pk, rk, data, exc, exact=mode is UpdateMode.REPLACE)
                write_back(obj, result.etag)
                return result
            raise
        new_etag = resp.headers.get("ETag")
        write_back(obj, new_etag)
        return written(resp, new_etag)

    @traced("upsert_entity", key_arg="entity", entities=1)
    async def upsert_entity(
        self,
        entity: EntityArg,
        mode: UpdateMode = UpdateMode.MERGE,
        *,
        allow_property_loss: bool = False,
    ) -> WriteResult:
        """Insert the entity, or merge into / replace the existing one (unconditionally;
        ``REPLACE`` of an entity read with ``select``: as :meth:`update_entity`).

        ``entity`` is a mapping or an entity object, which gets the new ``ETag`` and
        ``Timestamp`` written back.

        Example::

            await table.upsert_entity({"PartitionKey": "p", "RowKey": "r", "n": 2},
                                      UpdateMode.REPLACE)
        """
        data, obj, _, pk, rk, body, more = self._checked_source(entity)
        mode = UpdateMode(mode)
        if mode is UpdateMode.REPLACE and not allow_property_loss:
            refuse_property_loss(entity, "upsert_entity(mode=REPLACE)")
        extra = companions(obj, "upsert", mode, data, None, self._core.limits) if more else []
        if extra:
            op = BatchOperation("upsert", data, mode=mode, source=obj)
            return await self._write_group(op, extra, body)
        core = self._core
        headers = dict(core.odata_write)
        method = core.write_verb(mode is UpdateMode.MERGE, headers)
        resp = await core.send(
            method,
            "/" + urls.entity_path(self.table_name, pk, rk),
            headers=headers,
            body=self._encode(data) if body is None else body,
            resource="entity",
        )
        new_etag = resp.headers.get("ETag")
        write_back(obj, new_etag)
        return written(resp, new_etag)

    @overload
    async def delete_entity(
        self,
        partition_key: str,
        row_key: str,
        *,
        etag: str | None = None,
        match_condition: object = None,
    ) -> WriteResult: ...
    @overload
    async def delete_entity(
        self, entity: EntityArg, /, *, etag: str | None = None, match_condition: object = None
    ) -> WriteResult: ...
    @traced("delete_entity", key_arg="partition_key", entities=1)
    async def delete_entity(
        self,
        partition_key: str | EntityArg,
        row_key: str | None = None,
        *,
        etag: str | None = None,
        match_condition: object = None,
    ) -> WriteResult:
        """Delete an entity, by its keys or given the entity (a mapping or an entity object).

        ``etag`` is the ``If-Match``: ``"*"`` deletes unconditionally, an ETag only the
        version it names (:class:`azt.PreconditionFailedError` otherwise). Left out, it is
        the ETag an entity object carries, else ``"*"``. :class:`azt.EntityNotFoundError`
        if it does not exist (``azure-data-tables`` ignores that 404; azt does not).
        ``match_condition``: as :meth:`update_entity`.

        Example::

            await table.delete_entity("Action", "Heat", etag=movie.metadata.etag)
            await table.delete_entity(hero)       # an azt.Entity: If-Match hero.ETag
        """
        if isinstance(partition_key, str):
            if not isinstance(row_key, str):
                raise ValidationError(
                    "delete_entity() takes (partition_key, row_key) or one entity; "
                    f"got a PartitionKey and row_key={row_key!r}"
                )
            pk = validate_key("PartitionKey", partition_key, self._core.limits)
            rk = validate_key("RowKey", row_key, self._core.limits)
            own_etag = None
            extra: list[BatchOperation] = []
        else:
            if row_key is not None:
                raise ValidationError(
                    "delete_entity() takes (partition_key, row_key) or one entity, not both"
                )
            data, obj, own_etag = entity_source(partition_key)
            if not isinstance(data, Mapping):
                raise ValidationError(
                    "delete_entity() takes (partition_key, row_key) or an entity (a mapping "
                    f"or an entity object), got {type(partition_key).__name__}"
                )
            pk = validate_key(
                "PartitionKey", plain_value(data.get("PartitionKey")), self._core.limits
            )
            rk = validate_key("RowKey", plain_value(data.get("RowKey")), self._core.limits)
        entity = None if isinstance(partition_key, str) else partition_key
        etag = if_match(etag, match_condition, entity, own_etag, "delete_entity()")
        if not isinstance(partition_key, str):
            extra = companions(obj, "delete", None, None, etag, self._core.limits)
        if extra:
            op = BatchOperation("delete", {"PartitionKey": pk, "RowKey": rk}, etag=etag)
            return await self._write_group(op, extra)
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
                return resolved(exc, status=204)
            raise
        return written(resp)

    @overload
    async def get_entity(
        self,
        partition_key: str,
        row_key: str,
        *,
        select: Sequence[str] | None = None,
        entity_class: None = None,
    ) -> TableEntity: ...
    @overload
    async def get_entity(
        self,
        partition_key: str,
        row_key: str,
        *,
        select: Sequence[str] | None = None,
        entity_class: EntityFactory[_E],
    ) -> _E: ...
    @traced("get_entity", key_arg="partition_key", entities=1)
    async def get_entity(
        self,
        partition_key: str,
        row_key: str,
        *,
        select: Sequence[str] | None = None,
        entity_class: EntityFactory[Any] | None = None,
    ) -> Any:
        """Read one entity; :class:`azt.EntityNotFoundError` if it does not exist.

        ``select`` limits the properties returned (system properties are not added to a
        ``TableEntity``). ``entity.metadata`` is a :class:`ResponseMetadata` (ETag,
        Timestamp, request id). With ``entity_class`` (an ``azt.Entity`` class or
        ``azt.DynamicEntity``) the result is an instance of it; a ``select`` then also
        reads the keys and Timestamp, and leaves the other properties unset.

        Example::

            movie = await table.get_entity("Action", "Heat", select=["Rating"])
            hero = await table.get_entity("Action", "Heat", entity_class=Movie)
        """
        pk = validate_key("PartitionKey", partition_key, self._core.limits)
        rk = validate_key("RowKey", row_key, self._core.limits)
        if entity_class is None:
            return await self._get(pk, rk, select, self._core.odata_read, location="read")
        decode = getattr(entity_class, "__azt_decode__", None)
        if decode is None:
            raise ValidationError(
                "entity_class must be an azt.Entity class or azt.DynamicEntity, got "
                f"{entity_class!r}"
            )
        projection: frozenset[str] | None = None
        if select is not None:
            names = ["PartitionKey", "RowKey", "Timestamp"]
            names += [n for n in select_names(select) if n not in names]
            select = names
            projection = frozenset(names)
        row = await self._get(pk, rk, select, self._core.odata_read, location="read")
        return decode(row, projection)

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
            query = urls.encode_query({"$select": select_text(select)})
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
        # What entity.metadata reads (its ETag and Timestamp, the Timestamp parsed), read
        # here without the EntityMetadata it would build only for this one to replace it.
        meta = getattr(entity, "_meta", None)
        if meta is None:
            entity_etag = getattr(entity, "_etag", None)
            timestamp = getattr(entity, "_ts", None)
            if isinstance(timestamp, str):
                timestamp = entity._ts = wire_json.parse_datetime(timestamp)
        else:
            entity_etag, timestamp = meta.etag, meta.timestamp
        entity.metadata = ResponseMetadata(
            etag=entity_etag or etag,
            timestamp=timestamp,
            request_id=resp.headers.get("x-ms-request-id"),
        )
        if select:
            set_partial(entity, PROJECTED)  # a replace of it would lose the rest
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
        query_filter: str | None = None,
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
        query_filter: str | None = None,
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
        query_filter: str | None = None,
        page_decoder: Callable[[list[dict[str, Any]]], list[Any]] | None = None,
    ) -> AsyncPager[Any]:
        """Query entities with an OData filter; iterate for entities or page by page.

        ``parameters`` fill ``@name`` placeholders with escaped literals (see
        :func:`format_filter`); ``select`` projects properties (a sequence of names, or
        one ``str`` of comma-separated names); ``results_per_page`` sets ``$top`` (1-1000,
        per page); ``continuation`` resumes where an earlier page ended. ``query_filter``
        is ``filter`` under ``azure-data-tables``' name (give one or the other).

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
        filter = merge_filter(filter, query_filter, "query_entities()")
        params = query_params(filter, parameters, select, results_per_page)
        core = self._core
        codec = core.codec
        if page_decoder is None:
            decode: Callable[[bytes], list[Any]] = codec.decode_feed
            if core.wire_format is WireFormat.JSON_NONE:
                decode = decode_feed_deriving_etags
        elif core.is_atom:
            decode = atom_rows_decoder(codec, page_decoder)
        elif core.wire_format is WireFormat.JSON_NONE:

            def decode(body: bytes) -> list[Any]:
                rows = wire_json.decode_rows(body)
                for row in rows:
                    if "odata.etag" not in row:
                        etag = derived_etag(row.get("Timestamp"))
                        if etag is not None:
                            row["odata.etag"] = etag
                return page_decoder(rows)

        else:

            def decode(body: bytes) -> list[Any]:
                return page_decoder(wire_json.decode_rows(body))

        if select and page_decoder is None:
            decode = projected_rows(decode)  # a replace of one would lose the rest
        return query_pager(
            core, self._query_path, params, continuation, "table", decode, table=self.table_name
        )

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

        Each operation is encoded (in this client's wire format) once, when it is added,
        and those bytes are what :meth:`submit_transaction` sends; ``batch.size`` is the
        exact request body size so far (the service takes up to 4 MiB; the Cosmos DB
        flavour 2 MB). Entities are checked against this client's flavour's limits.

        Example::

            batch = table.batch()
            batch.create({"PartitionKey": "p", "RowKey": "1"})
            batch.upsert({"PartitionKey": "p", "RowKey": "2"}, UpdateMode.REPLACE)
            results = await table.submit_transaction(batch)
        """
        return bound_batch(self.table_name, self._operation_encoder())

    def batch_writer(self, *, max_buffer_bytes: int = DEFAULT_MAX_BUFFER_BYTES) -> BatchWriter:
        """A :class:`BatchWriter` for this table, used as ``async with``: operations are
        grouped by PartitionKey and sent as transactions of up to 100 operations and
        4 MiB (2 MB on Cosmos DB; exact encoded sizes); a group is also sent when the
        buffered bytes pass ``max_buffer_bytes``, and the rest on exit. Failed operations
        are raised together on exit (:class:`BatchWriteError`, each with its index, keys
        and error).

        Example::

            async with table.batch_writer() as writer:
                for row in rows:
                    await writer.upsert(row)
        """
        self._core.check_open()
        return BatchWriter(self.batch, self.submit_transaction, max_buffer_bytes=max_buffer_bytes)

    async def _write_group(
        self, main: BatchOperation, extra: list[BatchOperation], body: bytes | None = None
    ) -> WriteResult:
        """Write ``main`` with the companion operations of its entity object (its index
        rows) in one entity group transaction; the result is ``main``'s. A companion
        delete whose row is already gone is dropped and the rest sent again. A failure of
        ``main`` itself raises its own error (``EntityAlreadyExistsError``, ...), as the
        single-request write would. ``body``: ``main``'s entity body as the caller checked
        and encoded it in one pass (:meth:`_checked_source`), taken as it is; without it
        the entity is checked and encoded again, in one pass where the batch can."""
        operations = [main, *extra]
        while True:
            batch = self.batch()
            head, head_body = checked_head(batch, operations[0], body)
            batch._add_group(head, operations[1:], head_body)
            try:
                results = await self.submit_transaction(batch)
            except TransactionError as exc:
                drop = droppable_companion(exc, operations)
                if drop is not None:
                    del operations[drop]
                    continue
                if exc.index == 0 and exc.error is not None:
                    raise exc.error from exc
                raise
            return results[0]

    def _operation_encoder(self) -> OperationEncoder:
        # One per client (its table URL, request heads): a copy made by with_options has
        # another core and builds its own.
        encoder = self._encoder
        if encoder is None or encoder._core is not self._core:
            encoder = self._encoder = OperationEncoder(self._core, self.table_name)
        return encoder

    @traced("submit_transaction", key_arg="batch", entities=len)
    async def submit_transaction(
        self, batch: TableBatch | Iterable[BatchOperation | tuple[Any, ...]]
    ) -> list[WriteResult]:
        """Run an entity group transaction: all operations succeed or none is applied.

        Returns one :class:`WriteResult` per operation, in order; entity objects the
        operations were built from get their new ETag and Timestamp. A failure raises
        :class:`azt.TransactionError` naming the failing operation (``index``,
        ``operation``) with the specific error in ``error``. An operation that writes an
        intent row (``azt._core.intents``: a cross-partition index's rows to write
        elsewhere) has its intent carried out once the transaction has committed.
        ``azure-data-tables``' operation tuples are taken too: ``("create", entity)``,
        ``("upsert", entity, {"mode": UpdateMode.REPLACE})``, ``("update", entity,
        {"etag": ..., "match_condition": ...})``, ``("delete", entity)``.

        Example::

            batch = table.batch()
            batch.create({"PartitionKey": "p", "RowKey": "1"})
            batch.delete("p", "0")
            try:
                results = await table.submit_transaction(batch)
            except TransactionError as exc:
                print(exc.index, exc.operation, type(exc.error).__name__)
        """
        core = self._core
        if not isinstance(batch, TableBatch):
            builder = self.batch()
            for index, op in enumerate(batch):
                if isinstance(op, tuple):  # azure-data-tables' (kind, entity[, options])
                    add_transaction_tuple(builder, op, index)
                else:
                    builder.add(op)
            batch = builder
        same_table = (
            batch.table_name == self.table_name  # Cosmos DB table names are case-sensitive
            if core.flavor is Flavor.COSMOS
            else batch.table_name.lower() == self.table_name.lower()
        )
        if not same_table:
            raise BatchValidationError(
                f"the batch was built for table {batch.table_name!r}, not {self.table_name!r}"
            )
        operations = batch.operations
        if not operations:
            raise BatchValidationError("the transaction has no operations")
        # Encoded as operations were added; a batch built elsewhere (another client, or
        # another flavour) is checked again against this client's flavour and re-encoded.
        # BatchValidationError over the flavour's largest body (4 MiB; Cosmos DB 2 MB).
        content_type, body = batch._body(self._operation_encoder())
        headers = dict(core.odata_read)
        headers["Content-Type"] = content_type
        resp = await core.send("POST", "/$batch", headers=headers, body=body, resource="table")
        results = batch_results(core, self.table_name, resp, operations)
        intents: list[tuple[Mapping[str, Any], str | None]] = []
        for op, result in zip(operations, results, strict=True):
            if op.kind != "delete":
                if op.source is not None:
                    write_back(op.source, result.etag)
                elif INTENT_PROPERTY in op.entity:
                    intents.append((op.entity, result.etag))
        if intents:  # writes to other partitions this transaction recorded (azt.indexes)
            await carry_out(self, intents)
        return results


# --- value comparison for ambiguous-write verification ------------------------------------


def _same_value(sent: Any, stored: Any) -> bool:
    sent = plain_value(sent)
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
