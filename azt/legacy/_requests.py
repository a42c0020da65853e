"""The requests of the legacy ``TableService``, sent as the legacy SDK sent them: its JSON
(:mod:`azt.legacy._wire`), its headers, and no check the service makes itself, through
azt's request pipeline (signing, retries, the service's errors). Also the legacy
``TableBatch`` (operations serialised as they are added) and its multipart body: an
empty batch is sent as an empty change set, which the service accepts.

Example::

    etag = await send_entity(core, "POST", "tasks", body=encode_entity(entity))
    rows, marker = await query_rows(core, "tasks", "Done eq true", None, 100, None, accept)
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from xml.sax.saxutils import escape

import attrs

from azt._core.base import ClientCore
from azt._core.wire import urls
from azt._core.wire.batch import (
    BatchPart,
    BatchResponsePart,
    decode_batch_response,
    decode_part_error,
    encode_request,
)
from azt._core.wire.xml import decode_signed_identifiers
from azt._errors import ServiceError
from azt.legacy._encryption import EncryptionResolver, write_body
from azt.legacy._models import (
    AzureBatchOperationError,
    AzureBatchValidationError,
    TablePayloadFormat,
)
from azt.legacy._wire import legacy_datetime_text

__all__ = [
    "BatchRequest",
    "TableBatch",
    "commit_batch",
    "create_table",
    "delete_table",
    "get_acl",
    "get_row",
    "list_table_names",
    "query_rows",
    "send_entity",
    "set_acl",
    "table_exists",
]

_JSON = "application/json"
_MINIMAL = TablePayloadFormat.JSON_MINIMAL_METADATA


def _headers(core: ClientCore, accept: str = _MINIMAL, **extra: str) -> dict[str, str]:
    headers = dict(core.odata_read)
    headers["Accept"] = accept
    headers["DataServiceVersion"] = "3.0;NetFx"
    headers["MaxDataServiceVersion"] = "3.0"
    headers.update(extra)
    return headers


def _entity_path(table: str, partition_key: str, row_key: str) -> str:
    return "/" + urls.entity_path(table, partition_key, row_key)


# --------------------------------------------------------------------------- tables


async def create_table(core: ClientCore, name: str) -> None:
    """``POST /Tables`` with the name as given (the service judges it).

    Example::

        await create_table(core, "tasks")
    """
    body = json.dumps({"TableName": name}).encode("utf-8")
    headers = _headers(core, **{"Content-Type": _JSON, "Prefer": "return-no-content"})
    await core.send("POST", "/" + urls.TABLES_PATH, headers=headers, body=body, resource="table")


async def delete_table(core: ClientCore, name: str) -> None:
    """``DELETE /Tables('name')``.

    Example::

        await delete_table(core, "tasks")
    """
    path = "/" + urls.table_entity_path(name)
    await core.send("DELETE", path, headers=_headers(core), resource="table")


def _acl_time(value: Any) -> str:
    return legacy_datetime_text(value) if isinstance(value, datetime) else str(value)


def acl_xml(identifiers: Mapping[str, Any]) -> bytes:
    """The ``SignedIdentifiers`` document of ``set_table_acl``: datetimes as UTC text,
    strings sent as given, absent fields left out.

    Example::

        >>> acl_xml({"id": None})
        b'<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers><SignedIdentifier><Id>id</Id><AccessPolicy></AccessPolicy></SignedIdentifier></SignedIdentifiers>'
    """  # noqa: E501
    out = ['<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers>']
    for name, policy in identifiers.items():
        out.append(f"<SignedIdentifier><Id>{escape(str(name))}</Id><AccessPolicy>")
        if policy is not None:
            if policy.start:
                out.append(f"<Start>{escape(_acl_time(policy.start))}</Start>")
            if policy.expiry:
                out.append(f"<Expiry>{escape(_acl_time(policy.expiry))}</Expiry>")
            if policy.permission:
                out.append(f"<Permission>{escape(str(policy.permission))}</Permission>")
        out.append("</AccessPolicy></SignedIdentifier>")
    out.append("</SignedIdentifiers>")
    return "".join(out).encode("utf-8")


async def set_acl(core: ClientCore, table: str, identifiers: Mapping[str, Any]) -> None:
    """``PUT /table?comp=acl``.

    Example::

        await set_acl(core, "tasks", {"readers": AccessPolicy(permission="r")})
    """
    headers = {"x-ms-version": core.odata_read["x-ms-version"], "Content-Type": "application/xml"}
    path = "/" + urls.table_path(table)
    body = acl_xml(identifiers)
    await core.send(
        "PUT", path, query="comp=acl", comp="acl", headers=headers, body=body, resource="table"
    )


# --------------------------------------------------------------------------- entities


async def send_entity(
    core: ClientCore,
    method: str,
    table: str,
    partition_key: str | None = None,
    row_key: str | None = None,
    *,
    body: bytes | None = None,
    if_match: str | None = None,
) -> str | None:
    """One entity write (``POST`` to the table, or ``PUT``/``MERGE``/``DELETE`` of the
    entity's URL); the new ETag (``None`` for a delete).

    Example::

        etag = await send_entity(core, "PUT", "tasks", "p", "r", body=b"{...}", if_match="*")
    """
    extra: dict[str, str] = {}
    if body is not None:
        extra["Content-Type"] = _JSON
    if method == "POST":
        extra["Prefer"] = "return-no-content"
        path = "/" + urls.table_path(table)
    else:
        assert partition_key is not None
        assert row_key is not None
        path = _entity_path(table, partition_key, row_key)
    if if_match is not None:
        extra["If-Match"] = if_match
    resp = await core.send(
        method, path, headers=_headers(core, **extra), body=body, resource="entity"
    )
    return None if method == "DELETE" else resp.headers.get("ETag")


async def get_row(
    core: ClientCore,
    table: str,
    partition_key: str,
    row_key: str,
    select: str | None,
    accept: str,
) -> dict[str, Any]:
    """One entity's JSON object, read with ``accept`` (a :class:`TablePayloadFormat`).

    Example::

        row = await get_row(core, "tasks", "p", "r", None, TablePayloadFormat.JSON_NO_METADATA)
    """
    query = urls.encode_query({"$select": select}) if select else ""
    resp = await core.send(
        "GET",
        _entity_path(table, partition_key, row_key),
        query=query,
        headers=_headers(core, accept),
        resource="entity",
    )
    row: dict[str, Any] = json.loads(resp.body.decode("utf-8"))
    return row


async def query_rows(
    core: ClientCore,
    table: str,
    filter: str | None,
    select: str | None,
    top: int | None,
    marker: Mapping[str, str] | None,
    accept: str,
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """One page of a query: its JSON rows and the ``next_marker`` dict
    (``nextpartitionkey``/``nextrowkey``; empty at the end). ``top`` is sent as given:
    the service refuses 0 or over 1000.

    Example::

        rows, marker = await query_rows(core, "tasks", None, None, 5, None, accept)
    """
    params: dict[str, str] = {}
    if filter:
        params["$filter"] = filter
    if select:
        params["$select"] = select
    if top is not None:
        params["$top"] = str(top)
    if marker:
        for name, key in (("nextpartitionkey", "NextPartitionKey"), ("nextrowkey", "NextRowKey")):
            if marker.get(name) is not None:
                params[key] = marker[name]
    resp = await core.send(
        "GET",
        "/" + urls.table_path(table) + "()",
        query=urls.encode_query(params),
        headers=_headers(core, accept),
        resource="table",
    )
    rows: list[dict[str, Any]] = json.loads(resp.body.decode("utf-8"))["value"]
    following: dict[str, str] = {}
    prefix = "x-ms-continuation-"
    for name, value in resp.headers.items():
        if name.lower().startswith(prefix):
            following[name[len(prefix) :].lower()] = value
    return rows, following


# --------------------------------------------------------------------------- batches


@attrs.frozen
class BatchRequest:
    """One operation of a legacy batch, as it will be sent.

    Example::

        >>> BatchRequest("DELETE", "p", "r", None, "*").method
        'DELETE'
    """

    method: str
    partition_key: str
    row_key: str
    body: bytes | None
    if_match: str | None


class TableBatch:
    """Operations on one partition, committed together with ``commit_batch`` (or by
    leaving a ``with service.batch(table) as batch:`` block): all succeed or none.

    At most 100 operations, one partition key, each row key once
    (:class:`AzureBatchValidationError` otherwise). Each entity is serialised when it is
    added (later edits of the dict do not change the batch); with client-side encryption
    (a ``key_encryption_key``; the ``azt-tables[legacy-encryption]`` extra) inserts and replaces
    are encrypted then, and merges refused (``ValueError``), as in the legacy SDK.

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
        encryption_resolver: EncryptionResolver | None = None,
    ) -> None:
        self._requests: list[BatchRequest] = []
        self._partition_key: str | None = None
        self._row_keys: list[str] = []
        self._require_encryption = require_encryption
        self._key_encryption_key = key_encryption_key
        self._encryption_resolver = encryption_resolver

    def _body(self, entity: Mapping[str, Any], *, encryptable: bool) -> bytes:
        return write_body(
            entity,
            encryptable=encryptable,
            require_encryption=self._require_encryption,
            kek=self._key_encryption_key,
            resolver=self._encryption_resolver,
        )

    def insert_entity(self, entity: Mapping[str, Any]) -> None:
        """Add an insert. Example: ``batch.insert_entity({"PartitionKey": "a", "RowKey": "1"})``"""
        self._add("POST", entity, self._body(entity, encryptable=True), None)

    def update_entity(self, entity: Mapping[str, Any], if_match: str = "*") -> None:
        """Add a replace. Example: ``batch.update_entity(entity, if_match=entity.etag)``"""
        _if_match(if_match)
        self._add("PUT", entity, self._body(entity, encryptable=True), if_match)

    def merge_entity(self, entity: Mapping[str, Any], if_match: str = "*") -> None:
        """Add a merge. Example: ``batch.merge_entity({"PartitionKey": "a", "RowKey": "1"})``"""
        _if_match(if_match)
        self._add("MERGE", entity, self._body(entity, encryptable=False), if_match)

    def delete_entity(self, partition_key: str, row_key: str, if_match: str = "*") -> None:
        """Add a delete. Example: ``batch.delete_entity("a", "1")``"""
        _if_match(if_match)
        for name, value in (("partition_key", partition_key), ("row_key", row_key)):
            if value is None:
                raise ValueError(f"{name} should not be None.")
        self._add_request(BatchRequest("DELETE", partition_key, row_key, None, if_match))

    def insert_or_replace_entity(self, entity: Mapping[str, Any]) -> None:
        """Add an upsert (replace). Example: ``batch.insert_or_replace_entity(entity)``"""
        self._add("PUT", entity, self._body(entity, encryptable=True), None)

    def insert_or_merge_entity(self, entity: Mapping[str, Any]) -> None:
        """Add an upsert (merge). Example: ``batch.insert_or_merge_entity(entity)``"""
        self._add("MERGE", entity, self._body(entity, encryptable=False), None)

    def _add(self, method: str, entity: Mapping[str, Any], body: bytes, etag: str | None) -> None:
        pk, rk = entity["PartitionKey"], entity["RowKey"]
        self._add_request(BatchRequest(method, pk, rk, body, etag))

    def _add_request(self, request: BatchRequest) -> None:
        pk, rk = request.partition_key, request.row_key
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
        if len(self._requests) >= 100:
            raise AzureBatchValidationError("Batches may only contain 100 operations")
        self._requests.append(request)

    @property
    def requests(self) -> list[BatchRequest]:
        """The operations added so far, as they will be sent.

        Example::

            >>> b = TableBatch()
            >>> b.delete_entity("a", "1")
            >>> b.requests[0].method
            'DELETE'
        """
        return list(self._requests)


def _if_match(if_match: str | None) -> None:
    if if_match is None:
        raise ValueError("if_match should not be None.")


def batch_body(core: ClientCore, table: str, requests: list[BatchRequest]) -> tuple[str, bytes]:
    """The multipart body of a batch (and its ``Content-Type``): one change set holding
    the operations, empty when there are none (the service accepts an empty change set).

    Example::

        content_type, body = batch_body(core, "tasks", batch.requests)
    """
    batch = f"batch_{uuid.uuid4()}"
    changeset = f"changeset_{uuid.uuid4()}"
    out = [f"--{batch}\r\nContent-Type: multipart/mixed; boundary={changeset}\r\n\r\n".encode()]
    for number, request in enumerate(requests, 1):
        if request.method == "POST":
            url = core.pipeline.url_for("/" + urls.table_path(table))
        else:
            url = core.pipeline.url_for(_entity_path(table, request.partition_key, request.row_key))
        headers = {"Accept": _MINIMAL, "DataServiceVersion": "3.0;NetFx"}
        if request.body is not None:
            headers["Content-Type"] = _JSON
        if request.method == "POST":
            headers["Prefer"] = "return-no-content"
        if request.if_match is not None:
            headers["If-Match"] = request.if_match
        out.append(
            f"--{changeset}\r\nContent-Type: application/http\r\n"
            f"Content-Transfer-Encoding: binary\r\nContent-ID: {number}\r\n\r\n".encode()
        )
        out.append(encode_request(BatchPart(request.method, url, headers, request.body)))
    out.append(f"--{changeset}--\r\n--{batch}--\r\n".encode())
    return f"multipart/mixed; boundary={batch}", b"".join(out)


def _raise_part(part: BatchResponsePart) -> None:
    code: str | None = None
    message: str | None = None
    try:
        error = json.loads(part.body.decode("utf-8")).get("odata.error") or {}
        code = error.get("code")
        message = (error.get("message") or {}).get("value")
    except (ValueError, AttributeError):
        code, message, index = decode_part_error(part)
        if index is not None and message is not None:
            message = f"{index}:{message}"
    raise AzureBatchOperationError(message or "", part.status, code)


async def commit_batch(
    core: ClientCore, table: str, requests: list[BatchRequest]
) -> list[str | None]:
    """Send a batch; each operation's ETag in order (``None`` for deletes).
    :class:`AzureBatchOperationError` (the service's message, status and code) when it
    failed, nothing applied.

    Example::

        etags = await commit_batch(core, "tasks", batch.requests)
    """
    content_type, body = batch_body(core, table, requests)
    headers = _headers(core, **{"Content-Type": content_type})
    # a refusal of the whole request (not of one operation) is an AzureHttpError, as before
    resp = await core.send("POST", "/$batch", headers=headers, body=body, resource="table")
    parts = decode_batch_response(resp.headers.get("Content-Type", ""), resp.body)
    etags: list[str | None] = []
    for part in parts:
        if part.status >= 300:
            _raise_part(part)
        etags.append(part.headers.get("ETag"))
    return etags


async def get_acl(core: ClientCore, table: str) -> dict[str, Any]:
    """``GET /table?comp=acl``: ``{id: azt AccessPolicy or None}``.

    Example::

        policies = await get_acl(core, "tasks")
    """
    path = "/" + urls.table_path(table)
    headers = {"x-ms-version": core.odata_read["x-ms-version"], "Accept": "application/xml"}
    resp = await core.send(
        "GET", path, query="comp=acl", comp="acl", headers=headers, resource="table"
    )
    return dict(decode_signed_identifiers(resp.body))


async def table_exists(core: ClientCore, name: str) -> bool:
    """``GET /Tables('name')``: whether it answers (``False`` for a 404).

    Example::

        found = await table_exists(core, "tasks")
    """
    try:
        await core.send(
            "GET", "/" + urls.table_entity_path(name), headers=_headers(core), resource="table"
        )
    except ServiceError as exc:
        if exc.status == 404:
            return False
        raise
    return True


async def list_table_names(
    core: ClientCore, top: int | None, next_name: str | None
) -> tuple[list[str], str | None]:
    """One page of ``GET /Tables``: the names and the next table name (or ``None``).
    ``top`` is sent as given (the service refuses 0 or over 1000).

    Example::

        names, following = await list_table_names(core, 100, None)
    """
    params: dict[str, str] = {}
    if top is not None:
        params["$top"] = str(top)
    if next_name:
        params["NextTableName"] = next_name
    resp = await core.send(
        "GET",
        "/" + urls.TABLES_PATH,
        query=urls.encode_query(params),
        headers=_headers(core),
        resource="table",
    )
    rows = json.loads(resp.body.decode("utf-8"))["value"]
    return [row["TableName"] for row in rows], resp.headers.get("x-ms-continuation-NextTableName")
