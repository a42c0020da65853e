"""Entity group transactions: :class:`TableBatch` builds and checks one (same
PartitionKey, each RowKey once, at most 100 operations); ``batch_part`` and
``batch_results`` turn its operations into changeset parts and the service's answer into
results (the multipart format itself is :mod:`azt._core.wire.batch`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, NoReturn

import attrs

from azt._core.base import (
    ClientCore,
    EntityArg,
    EntityObject,
    check_entity,
    check_etag,
    entity_source,
    plain_value,
    validate_table_name,
)
from azt._core.config import AmbiguousOutcomePolicy, Flavor
from azt._core.pipeline import Pipeline
from azt._core.results import UpdateMode, WriteResult
from azt._core.transport import HttpResponse
from azt._core.wire import batch as wire_batch
from azt._core.wire import urls
from azt._core.wire.batch import MAX_BATCH_OPERATIONS
from azt._edm.entity import refuse_property_loss
from azt._edm.validation import validate_key
from azt._errors import (
    AmbiguousOutcomeError,
    BatchValidationError,
    EntityAlreadyExistsError,
    EntityNotFoundError,
    PreconditionFailedError,
    TransactionError,
    ValidationError,
)

__all__ = ["BatchOperation", "TableBatch"]


@attrs.frozen
class BatchOperation:
    """One operation of an entity group transaction.

    ``kind`` is ``"create"``, ``"update"``, ``"upsert"`` or ``"delete"``; ``mode`` is the
    :class:`UpdateMode` of updates and upserts; ``etag`` the ``If-Match`` of updates and
    deletes (``"*"`` for unconditional). ``source`` is the entity object (``azt.Entity``,
    ``azt.DynamicEntity``) the operation was built from, if any: it gets the new ETag and
    Timestamp once the transaction succeeds.

    Example::

        >>> op = BatchOperation("create", {"PartitionKey": "p", "RowKey": "r"})
        >>> op
        create(PartitionKey='p', RowKey='r')
    """

    kind: Literal["create", "update", "upsert", "delete"]
    entity: Mapping[str, Any]
    mode: UpdateMode | None = None
    etag: str | None = None
    source: EntityObject | None = attrs.field(default=None, eq=False, repr=False)

    @property
    def partition_key(self) -> str:
        """The operation's PartitionKey.

        Example::

            >>> BatchOperation("delete", {"PartitionKey": "p", "RowKey": "r"}).partition_key
            'p'
        """
        return str(plain_value(self.entity["PartitionKey"]))

    @property
    def row_key(self) -> str:
        """The operation's RowKey.

        Example::

            >>> BatchOperation("delete", {"PartitionKey": "p", "RowKey": "r"}).row_key
            'r'
        """
        return str(plain_value(self.entity["RowKey"]))

    def __repr__(self) -> str:
        mode = f" {self.mode.value}" if self.mode is not None else ""
        return f"{self.kind}{mode}(PartitionKey={self.partition_key!r}, RowKey={self.row_key!r})"


class TableBatch:
    """A builder for one entity group transaction, checked as it grows.

    ``flavor`` (:class:`azt.Flavor`) chooses the limits entities are checked against
    (``table.batch()`` passes the client's). Every operation must target the same
    PartitionKey, each RowKey may appear once, and
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

    def __init__(self, table_name: str, *, flavor: Flavor = Flavor.STORAGE) -> None:
        self.flavor = flavor
        self.limits = flavor.limits
        self.table_name = validate_table_name(table_name, flavor)
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
            self.create(op.source if op.source is not None else op.entity)
        elif kind == "update" or kind == "upsert":
            if not isinstance(op.mode, UpdateMode):
                raise ValidationError(
                    f"an {kind} operation needs mode=UpdateMode.MERGE or UpdateMode.REPLACE"
                )
            entity = op.source if op.source is not None else op.entity
            if kind == "update":
                self.update(entity, op.mode, etag="*" if op.etag is None else op.etag)
            elif op.etag is not None:
                raise ValidationError("an upsert operation takes no etag (it is unconditional)")
            else:
                self.upsert(entity, op.mode)
        elif kind == "delete":
            entity = op.entity
            if not isinstance(entity, Mapping):
                raise ValidationError(f"an entity must be a mapping, got {type(entity).__name__}")
            self.delete(
                plain_value(entity.get("PartitionKey")),
                plain_value(entity.get("RowKey")),
                etag="*" if op.etag is None else op.etag,
            )
        else:
            raise ValidationError(
                f"unknown operation kind {kind!r}: create, update, upsert or delete"
            )

    def create(self, entity: EntityArg) -> None:
        """Insert ``entity`` (fails the transaction if it exists). An entity object
        (``azt.Entity``, ``azt.DynamicEntity``) gets its new ETag and Timestamp when the
        transaction succeeds.

        Example::

            batch.create({"PartitionKey": "p", "RowKey": "1", "n": 1})
        """
        data, obj, _ = entity_source(entity)
        check_entity(data, self.limits)
        self._add(BatchOperation("create", data, source=obj))

    def update(
        self,
        entity: EntityArg,
        mode: UpdateMode = UpdateMode.MERGE,
        *,
        etag: str | None = None,
        allow_property_loss: bool = False,
    ) -> None:
        """Merge or replace an existing entity (conditional on ``etag`` unless ``"*"``;
        left out, the ETag an entity object carries, else ``"*"``); ``REPLACE`` of an
        entity read with ``select`` raises :class:`azt.PropertyLossError` unless
        ``allow_property_loss``.

        Example::

            batch.update(movie, UpdateMode.REPLACE, etag=movie.metadata.etag)
        """
        if UpdateMode(mode) is UpdateMode.REPLACE and not allow_property_loss:
            refuse_property_loss(entity, "batch update(mode=REPLACE)")
        data, obj, own_etag = entity_source(entity)
        check_entity(data, self.limits)
        tag = check_etag(etag if etag is not None else own_etag or "*")
        self._add(BatchOperation("update", data, mode=UpdateMode(mode), etag=tag, source=obj))

    def upsert(
        self,
        entity: EntityArg,
        mode: UpdateMode = UpdateMode.MERGE,
        *,
        allow_property_loss: bool = False,
    ) -> None:
        """Insert or merge/replace ``entity`` (``REPLACE``: as :meth:`update`).

        Example::

            batch.upsert({"PartitionKey": "p", "RowKey": "2"}, UpdateMode.MERGE)
        """
        if UpdateMode(mode) is UpdateMode.REPLACE and not allow_property_loss:
            refuse_property_loss(entity, "batch upsert(mode=REPLACE)")
        data, obj, _ = entity_source(entity)
        check_entity(data, self.limits)
        self._add(BatchOperation("upsert", data, mode=UpdateMode(mode), source=obj))

    def delete(
        self, partition_key: str | EntityArg, row_key: str | None = None, *, etag: str | None = None
    ) -> None:
        """Delete an entity, by its keys or given the entity (conditional on ``etag``
        unless ``"*"``; left out, the ETag an entity object carries, else ``"*"``).

        Example::

            batch.delete("p", "3")
            batch.delete(hero)        # an azt.Entity: If-Match hero.ETag
        """
        own_etag = None
        if isinstance(partition_key, str):
            pk: Any = partition_key
            rk: Any = row_key
        else:
            if row_key is not None:
                raise ValidationError("delete() takes (partition_key, row_key) or one entity")
            data, _, own_etag = entity_source(partition_key)
            if not isinstance(data, Mapping):
                raise ValidationError(
                    "delete() takes (partition_key, row_key) or an entity (a mapping or an "
                    f"entity object), got {type(partition_key).__name__}"
                )
            pk, rk = plain_value(data.get("PartitionKey")), plain_value(data.get("RowKey"))
        validate_key("PartitionKey", pk, self.limits)
        validate_key("RowKey", rk, self.limits)
        self._add(
            BatchOperation(
                "delete",
                {"PartitionKey": pk, "RowKey": rk},
                etag=check_etag(etag if etag is not None else own_etag or "*"),
            )
        )


# --- sending a transaction ----------------------------------------------------------------


def batch_part(
    core: ClientCore, table_name: str, op: BatchOperation, table_url: str
) -> wire_batch.BatchPart:
    """The changeset part that carries ``op`` (entity URLs absolute, as the service wants)."""
    headers = {
        "Accept": core.odata_read["Accept"],
        "DataServiceVersion": "3.0",
    }
    if op.kind == "create":
        headers["Content-Type"] = core.body_type
        headers["Prefer"] = "return-no-content"
        return wire_batch.BatchPart("POST", table_url, headers, core.codec.encode_entity(op.entity))
    url = core.pipeline.url_for("/" + urls.entity_path(table_name, op.partition_key, op.row_key))
    if op.kind == "delete":
        headers["If-Match"] = op.etag or "*"
        return wire_batch.BatchPart("DELETE", url, headers, None)
    headers["Content-Type"] = core.body_type
    if op.kind == "update":
        headers["If-Match"] = op.etag or "*"
    method = "MERGE" if op.mode is UpdateMode.MERGE else "PUT"
    return wire_batch.BatchPart(method, url, headers, core.codec.encode_entity(op.entity))


def batch_results(
    core: ClientCore, table_name: str, resp: HttpResponse, operations: list[BatchOperation]
) -> list[WriteResult]:
    """One result per operation from the service's multipart answer, or the failing
    operation's :class:`azt.TransactionError` (or ``AmbiguousOutcomeError``)."""
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
            index = failed_index(inner.message, len(operations), position, len(parts))
            operation = operations[index] if index is not None else None
            error = TransactionError.from_error(inner, index=index, operation=operation)
            error.attempts = resp.attempts
            error.earlier_attempt_may_have_applied = resp.earlier_attempt_may_have_applied
            _raise_batch(core, table_name, error)
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


def _raise_batch(core: ClientCore, table_name: str, error: TransactionError) -> NoReturn:
    inner = error.error
    if (
        error.earlier_attempt_may_have_applied
        and inner is not None
        and isinstance(
            inner, EntityAlreadyExistsError | EntityNotFoundError | PreconditionFailedError
        )
        and core.ambiguous_outcome is not AmbiguousOutcomePolicy.REPORT_ERROR
    ):
        # A transaction cannot be verified cheaply: report it as ambiguous.
        raise AmbiguousOutcomeError(
            f"submit_transaction({table_name!r})",
            error,
            attempts=error.attempts,
        ) from error
    raise error


def failed_index(message: str, n_ops: int, position: int, n_parts: int) -> int | None:
    head = message.split(":", 1)[0].strip() if message else ""
    if head.isdigit():
        index = int(head)
        if 0 <= index < n_ops:
            return index
    if n_parts == n_ops:
        return position
    return None
