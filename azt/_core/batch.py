"""Entity group transactions: :class:`TableBatch` builds and checks one (same
PartitionKey, each RowKey once, at most 100 operations); ``OperationEncoder`` encodes
each operation once, into the change set part it is sent as, when it is added;
:mod:`azt._core.packing` cuts operations into transactions on their exact encoded
sizes; ``companions`` are the operations (index rows) an entity object's write carries
in its transaction. :mod:`azt._core.batch_answer` turns the service's answer into results
(the multipart format itself is :mod:`azt._core.wire.batch`)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, Literal, cast

import attrs

from azt._core.base import (
    ClientCore,
    EncodedSource,
    EntityArg,
    EntityObject,
    check_entity,
    check_etag,
    encoded_source,
    entity_source,
    plain_value,
    validate_table_name,
)
from azt._core.config import Flavor
from azt._core.results import UpdateMode
from azt._core.wire import batch as wire_batch
from azt._core.wire import json as wire_json
from azt._core.wire import urls
from azt._core.wire.batch import MAX_BATCH_OPERATIONS, Changeset, describe_bytes
from azt._core.wire.writers import encode_valid
from azt._edm.entity import refuse_property_loss
from azt._edm.validation import STORAGE_LIMITS, ServiceLimits, validate_key
from azt._errors import (
    BatchValidationError,
    EntityNotFoundError,
    TransactionError,
    ValidationError,
)

__all__ = ["BatchOperation", "TableBatch"]


def companions(
    obj: EntityObject | None,
    kind: str,
    mode: UpdateMode | None,
    data: Mapping[str, Any] | None,
    etag: str | None,
    limits: ServiceLimits = STORAGE_LIMITS,
) -> list[BatchOperation]:
    """The operations that must share a transaction with a write of the entity object
    ``obj``: what its class's ``__azt_companions__`` hook asks for (declarative entities
    with secondary indexes: their index rows), else none. The client core never knows the
    object's class; the hook may refuse the write with :class:`azt.ValidationError`."""
    if obj is None:
        return []
    hook = getattr(type(obj), "__azt_companions__", None)
    if hook is None:
        return []
    extra = hook(obj, kind, mode, data, etag)  # (mostly none: then no comprehension frame)
    return [checked_operation(op, limits) for op in extra] if extra else []


def operation_source(operation: BatchOperation) -> EntityObject | None:
    """The entity object a prepared operation was built from (its ``source``, or its
    ``entity`` when that is an entity object), else ``None``."""
    if operation.source is not None:
        return operation.source
    entity: object = operation.entity
    if getattr(type(entity), "__azt_entity__", None) is None:
        return None
    return cast(EntityObject, entity)


def operation_companions(
    op: BatchOperation, source: EntityObject | None, limits: ServiceLimits = STORAGE_LIMITS
) -> list[BatchOperation]:
    """The companion operations (index rows) of a checked operation ``op`` of the entity
    object ``source``: :func:`companions` with the operation's own kind, mode, payload and
    ETag."""
    if source is None:
        return []
    payload = None if op.kind == "delete" else op.entity
    return companions(source, op.kind, op.mode, payload, op.etag, limits)


def droppable_companion(exc: TransactionError, operations: list[BatchOperation]) -> int | None:
    """The index of a companion delete (never the first, main, operation) whose row was
    already gone (404): the transaction can be sent again without it, since the row it
    would delete does not exist. ``None`` for any other failure."""
    i = exc.index
    if (
        i is not None
        and 0 < i < len(operations)
        and operations[i].kind == "delete"
        and isinstance(exc.error, EntityNotFoundError)
        and not exc.earlier_attempt_may_have_applied
    ):
        return i
    return None


class OperationEncoder:
    """Encodes operations into the change set requests that carry them, for one table of
    one client (its wire format, endpoint and service flavour, whose limits the batches it
    encodes for are checked against); ``key`` names what the bytes and checks depend on.

    The request line and the inner headers of each kind of operation are the same for
    every operation but for the entity URL and ``If-Match``: they are written once, here,
    and each operation only adds its URL, ETag and body (byte for byte what
    ``encode_request(batch_part(...))`` writes; a table URL or header that part would
    refuse takes that path, so it raises as before)."""

    __slots__ = ("_codec", "_core", "_heads", "_table_name", "_table_url", "flavor", "key", "plain")

    def __init__(self, core: ClientCore, table_name: str) -> None:
        self._core = core
        self._table_name = table_name
        self._table_url = core.pipeline.url_for("/" + urls.table_path(table_name))
        self.flavor: Flavor = core.flavor
        self.key: tuple[str, ...] = (
            self._table_url,
            core.body_type,
            core.odata_read["Accept"],
            core.codec.__name__,
            core.flavor.value,
        )
        self._codec = core.codec
        self._heads = wire_batch.request_heads(
            self._table_url, core.pipeline.url_for(""), core.odata_read["Accept"], core.body_type
        )
        #: whether an entity's body checked and encoded in one pass (``encode_valid``) is
        #: what this encoder sends (JSON, usual heads; the limits are the batch's to say)
        self.plain = self._heads is not None and self._codec is wire_json

    def __call__(self, op: BatchOperation, body: bytes | None = None) -> bytes:
        """The request of ``op``; ``body``: its entity's body, already encoded (by
        :meth:`valid_body`)."""
        heads = self._heads
        kind = op.kind
        if heads is not None:
            if kind == "create":
                if body is None:
                    body = self._codec.encode_entity(op.entity)
                return b"".join((heads[0], b"%d\r\n\r\n" % len(body), body, _CRLF))
            etag = op.etag or "*"
            tunnel = op.mode is UpdateMode.MERGE and kind != "delete" and self.flavor.tunnels_merge
            if not tunnel and etag.isascii() and "\r" not in etag and "\n" not in etag:
                url = self._core.pipeline.url_for(
                    "/" + urls.entity_path(self._table_name, op.partition_key, op.row_key)
                ).encode()
                if kind == "delete":
                    return b"".join((b"DELETE ", url, heads[1], etag.encode(), b"\r\n\r\n\r\n"))
                if body is None:
                    body = self._codec.encode_entity(op.entity)
                start = b"MERGE " if op.mode is UpdateMode.MERGE else b"PUT "
                if kind == "update":
                    after_url = b"".join((heads[2], etag.encode(), b"\r\nContent-Length: "))
                else:
                    after_url = heads[3]
                return b"".join((start, url, after_url, b"%d\r\n\r\n" % len(body), body, _CRLF))
        part = batch_part(self._core, self._table_name, op, self._table_url)
        return wire_batch.encode_request(part)

    def create_request(self, body: bytes) -> bytes:
        """The request of a create whose entity's body is ``body`` (only when :attr:`plain`:
        what ``self(op, body)`` gives for a create)."""
        assert self._heads is not None
        return b"".join((self._heads[0], b"%d\r\n\r\n" % len(body), body, _CRLF))


_CRLF = b"\r\n"


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


def _label(index: int, op: BatchOperation) -> str:
    """How errors name operation ``index``."""
    return f"operation {index} ({op.kind}(...))"


class TableBatch:
    """A builder for one entity group transaction, checked as it grows.

    ``flavor`` (:class:`azt.Flavor`) chooses the limits entities are checked against and
    the largest request body (Storage 4 MiB, Cosmos DB 2 MB); ``table.batch()`` passes
    the client's, and :meth:`TableClient.submit_transaction` checks a batch built for
    another flavour again. Every operation must target the same PartitionKey, each RowKey
    may appear once, and there may be at most 100 operations: a violation raises
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
        if not isinstance(flavor, Flavor):
            raise ValidationError(f"flavor must be a Flavor, got {flavor!r}")
        self.flavor = flavor
        self.limits = flavor.limits
        self.table_name = validate_table_name(table_name, flavor)
        self.operations: list[BatchOperation] = []
        self._partition_key: str | None = None
        self._row_keys: set[str] = set()
        # Set by TableClient.batch(): each operation is encoded once, as it is added, into
        # the change set that is sent; ``_encoded`` are the operations it holds, in order.
        self._encoder: OperationEncoder | None = None
        # whether the encoder sends JSON bodies checked against Azure Table storage's
        # limits: entities are then checked and encoded in one pass (encoded_source)
        self._plain = False
        self._changeset: Changeset | None = None
        self._encoded: list[BatchOperation] = []

    def __len__(self) -> int:
        return len(self.operations)

    @property
    def size(self) -> int | None:
        """The exact size in bytes of the request body this transaction is sent as (at
        most 4 MiB are accepted; 2 MB on Cosmos DB), or ``None`` for a batch not made by
        :meth:`TableClient.batch` (it is encoded when submitted).

        Example::

            batch = table.batch()
            batch.create({"PartitionKey": "p", "RowKey": "1", "Text": "x" * 1000})
            assert batch.size > 1000
        """
        return self._changeset.size if self._changeset is not None else None

    def _room(self, op: BatchOperation, request: bytes) -> bool:
        """Whether ``op`` (encoded as ``request``) can join without breaking a rule."""
        assert self._changeset is not None
        if self._partition_key is not None and op.partition_key != self._partition_key:
            return False
        return op.row_key not in self._row_keys and self._changeset.fits(request)

    def _add(self, op: BatchOperation, request: bytes | None = None) -> None:
        index = len(self.operations)
        if index >= MAX_BATCH_OPERATIONS:
            raise BatchValidationError(
                f"{_label(index, op)}: a transaction holds at most {MAX_BATCH_OPERATIONS} "
                "operations",
                index=index,
            )
        entity = op.entity
        pk = entity["PartitionKey"]
        rk = entity["RowKey"]
        if type(pk) is not str or type(rk) is not str:  # (what the properties give)
            pk, rk = op.partition_key, op.row_key
        if self._partition_key is not None and pk != self._partition_key:
            raise BatchValidationError(
                f"{_label(index, op)}: PartitionKey {pk!r} differs from the transaction's "
                f"{self._partition_key!r}; all operations must share one PartitionKey",
                index=index,
            )
        if rk in self._row_keys:
            raise BatchValidationError(
                f"{_label(index, op)}: RowKey {rk!r} already appears in this transaction; an "
                "entity may appear only once",
                index=index,
            )
        encoder = self._encoder
        if encoder is not None:
            assert self._changeset is not None
            if request is None:
                request = encoder(op)
            self._changeset.append(request)
            self._encoded.append(op)
        self._partition_key = pk
        self._row_keys.add(rk)
        self.operations.append(op)

    def _body(self, encoder: OperationEncoder) -> tuple[str, bytes]:
        """The request body for a client whose operations ``encoder`` encodes: the change
        set built as operations were added when it is current, else (a batch built
        elsewhere, or whose ``operations`` list was changed by hand) a fresh encoding."""
        cs = self._changeset
        if (
            cs is None
            or self._encoder is None
            or self._encoder.key != encoder.key
            or len(self._encoded) != len(self.operations)
            or any(a is not b for a, b in zip(self._encoded, self.operations, strict=True))
        ):
            # Made for another client (or flavour): every operation is checked again
            # against the encoder's flavour, its limits and its largest body.
            fresh = bound_batch(self.table_name, encoder)
            for op in self.operations:
                fresh.add(op)
            assert fresh._changeset is not None
            cs = fresh._changeset
        return cs.encode()

    def add(self, operation: BatchOperation) -> None:
        """Add a prepared :class:`BatchOperation`, checked exactly like the builder methods
        (entity limits, keys, a ``mode`` for updates and upserts; an ``etag`` of ``None``
        on an update or delete means ``"*"``). An operation built from an entity object
        keeps it (``source``) to write the outcome back; its ``entity`` may also be an
        entity object itself. An entity object whose class declares secondary indexes
        brings its index rows along (all join or none does).

        Example::

            batch.add(BatchOperation("upsert", {"PartitionKey": "p", "RowKey": "1"},
                                     mode=UpdateMode.REPLACE))
        """
        op, body = _checked_operation(operation, self.limits, self._valid_body)
        extra = operation_companions(op, operation_source(operation), self.limits)
        self._add_group(op, extra, body)

    def create(self, entity: EntityArg) -> None:
        """Insert ``entity`` (fails the transaction if it exists). An entity object
        (``azt.Entity``, ``azt.DynamicEntity``) gets its new ETag and Timestamp when the
        transaction succeeds.

        Example::

            batch.create({"PartitionKey": "p", "RowKey": "1", "n": 1})
        """
        data, obj, _, body, more = self._source(entity)
        if body is not None:  # checked and encoded in one pass
            op = BatchOperation("create", data, None, None, obj)  # (positional: faster)
            if not more and self._encoder is not None:  # the usual case, in one step
                self._add(op, self._encoder.create_request(body))
                return
        else:
            op = _create(data, obj, self.limits)
        extra = companions(obj, "create", None, data, None, self.limits) if more else []
        self._add_group(op, extra, body)

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
        data, obj, own_etag, body, more = self._source(entity)
        etag = etag if etag is not None else own_etag or "*"
        op = _update(data, mode, etag, obj, self.limits, checked=body is not None)
        extra = companions(obj, "update", op.mode, data, op.etag, self.limits) if more else []
        self._add_group(op, extra, body)

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
        data, obj, _, body, more = self._source(entity)
        op = _upsert(data, mode, obj, self.limits, checked=body is not None)
        extra = companions(obj, "upsert", op.mode, data, None, self.limits) if more else []
        self._add_group(op, extra, body)

    def delete(
        self, partition_key: str | EntityArg, row_key: str | None = None, *, etag: str | None = None
    ) -> None:
        """Delete an entity, by its keys or given the entity (conditional on ``etag``
        unless ``"*"``; left out, the ETag an entity object carries, else ``"*"``).

        Example::

            batch.delete("p", "3")
            batch.delete(hero)        # an azt.Entity: If-Match hero.ETag
        """
        op = delete_operation(
            partition_key, row_key, etag=etag, what="delete()", limits=self.limits
        )
        source = None if isinstance(partition_key, str) else entity_source(partition_key)[1]
        self._add_group(op, companions(source, "delete", None, None, op.etag, self.limits))

    def _valid_body(self, data: Any) -> bytes | None:
        """``data``'s body when checked and encoded in one pass (Storage limits only)."""
        return encode_valid(data) if self._plain else None

    def _source(self, entity: Any) -> EncodedSource:
        """:func:`encoded_source` of ``entity`` when this batch's bodies are JSON checked
        against Azure Table storage's limits; else :func:`entity_source`'s, with no body."""
        if self._plain:
            return encoded_source(entity)
        data, obj, etag = entity_source(entity)
        return data, obj, etag, None, obj is not None

    def _add_group(
        self, op: BatchOperation, extra: list[BatchOperation], body: bytes | None = None
    ) -> None:
        """Add ``op`` (``body``: its entity's body, checked and encoded by
        :meth:`_valid_body`) and the companion operations of its entity object (index
        rows), all or none: a group that does not fit leaves the batch as it was."""
        encoder = self._encoder
        request = encoder(op, body) if body is not None and encoder is not None else None
        if not extra:
            self._add(op, request)
            return
        if len(self.operations) + 1 + len(extra) > MAX_BATCH_OPERATIONS:
            raise BatchValidationError(
                f"operation {len(self.operations)} ({op.kind}(...)) and its {len(extra)} "
                f"index rows do not fit the {MAX_BATCH_OPERATIONS} operations of a "
                "transaction",
                index=len(self.operations),
            )
        n_ops, n_encoded, pk = len(self.operations), len(self._encoded), self._partition_key
        cs = self._changeset
        cs_state = (len(cs._requests), cs.size) if cs is not None else None
        try:
            self._add(op, request)
            for o in extra:
                self._add(o)
        except BaseException:
            for o in self.operations[n_ops:]:
                self._row_keys.discard(o.row_key)
            del self.operations[n_ops:]
            del self._encoded[n_encoded:]
            self._partition_key = pk
            if cs is not None and cs_state is not None:
                del cs._requests[cs_state[0] :]
                cs.size = cs_state[1]
            raise


# --- operations, checked ------------------------------------------------------------------
# An entity object's entity is taken (``__azt_entity__``) once, here, when its operation is
# built; the operation keeps the object as ``source`` so the transaction's outcome can be
# written back, and is encoded once from that entity (OperationEncoder). ``limits`` are the
# service flavour's (azt.Flavor.limits): entities and keys are checked against them.


# ``checked``: the entity was checked already (a per-shape writer checked and encoded it).


def _create(
    data: Any, source: EntityObject | None, limits: ServiceLimits, checked: bool = False
) -> BatchOperation:
    if not checked:
        check_entity(data, limits)
    return BatchOperation("create", data, source=source)


def _update(
    data: Any,
    mode: UpdateMode,
    etag: str,
    source: EntityObject | None,
    limits: ServiceLimits,
    checked: bool = False,
) -> BatchOperation:
    if not checked:
        check_entity(data, limits)
    return BatchOperation(
        "update", data, mode=UpdateMode(mode), etag=check_etag(etag), source=source
    )


def _upsert(
    data: Any,
    mode: UpdateMode,
    source: EntityObject | None,
    limits: ServiceLimits,
    checked: bool = False,
) -> BatchOperation:
    if not checked:
        check_entity(data, limits)
    return BatchOperation("upsert", data, mode=UpdateMode(mode), source=source)


def _delete(partition_key: Any, row_key: Any, etag: str, limits: ServiceLimits) -> BatchOperation:
    validate_key("PartitionKey", partition_key, limits)
    validate_key("RowKey", row_key, limits)
    return BatchOperation(
        "delete", {"PartitionKey": partition_key, "RowKey": row_key}, etag=check_etag(etag)
    )


def create_operation(
    entity: EntityArg, *, limits: ServiceLimits = STORAGE_LIMITS
) -> BatchOperation:
    """A checked create of ``entity`` (a mapping or an entity object, kept as the
    operation's ``source``), against ``limits`` (the flavour's, ``Flavor.limits``)."""
    data, obj, _ = entity_source(entity)
    return _create(data, obj, limits)


def update_operation(
    entity: EntityArg,
    mode: UpdateMode = UpdateMode.MERGE,
    *,
    etag: str | None = None,
    allow_property_loss: bool = False,
    limits: ServiceLimits = STORAGE_LIMITS,
) -> BatchOperation:
    """A checked update of ``entity`` (against ``limits``); ``etag`` left out is the ETag
    an entity object carries, else ``"*"``. ``REPLACE`` of an entity that does not hold
    every stored property raises :class:`azt.PropertyLossError` unless
    ``allow_property_loss``."""
    if UpdateMode(mode) is UpdateMode.REPLACE and not allow_property_loss:
        refuse_property_loss(entity, "batch update(mode=REPLACE)")
    data, obj, own_etag = entity_source(entity)
    return _update(data, mode, etag if etag is not None else own_etag or "*", obj, limits)


def upsert_operation(
    entity: EntityArg,
    mode: UpdateMode = UpdateMode.MERGE,
    *,
    allow_property_loss: bool = False,
    limits: ServiceLimits = STORAGE_LIMITS,
) -> BatchOperation:
    """A checked upsert of ``entity`` (a mapping or an entity object; against
    ``limits``); ``REPLACE``: as :func:`update_operation`."""
    if UpdateMode(mode) is UpdateMode.REPLACE and not allow_property_loss:
        refuse_property_loss(entity, "batch upsert(mode=REPLACE)")
    data, obj, _ = entity_source(entity)
    return _upsert(data, mode, obj, limits)


def delete_operation(
    partition_key: str | EntityArg,
    row_key: str | None = None,
    *,
    etag: str | None = None,
    what: str = "delete()",
    limits: ServiceLimits = STORAGE_LIMITS,
) -> BatchOperation:
    """A checked delete, by keys or of an entity (a mapping or an entity object, whose
    ETag is the default ``If-Match``; else ``"*"``); keys checked against ``limits``.
    ``what`` names the call in errors."""
    own_etag = None
    if isinstance(partition_key, str):
        pk: Any = partition_key
        rk: Any = row_key
    else:
        if row_key is not None:
            raise ValidationError(f"{what} takes (partition_key, row_key) or one entity")
        data, _, own_etag = entity_source(partition_key)
        if not isinstance(data, Mapping):
            raise ValidationError(
                f"{what} takes (partition_key, row_key) or an entity (a mapping or an "
                f"entity object), got {type(partition_key).__name__}"
            )
        pk, rk = plain_value(data.get("PartitionKey")), plain_value(data.get("RowKey"))
    return _delete(pk, rk, etag if etag is not None else own_etag or "*", limits)


def _operation_entity(op: BatchOperation) -> tuple[Any, EntityObject | None]:
    """A prepared operation's entity and source object: one built from an entity object
    keeps the entity taken then; an entity object given as ``entity`` is taken now."""
    data, obj, _ = entity_source(op.entity)
    return data, op.source if op.source is not None else obj


def checked_operation(
    operation: BatchOperation, limits: ServiceLimits = STORAGE_LIMITS
) -> BatchOperation:
    """``operation`` validated as the :class:`TableBatch` builder methods do (entity
    ``limits``, keys, a ``mode`` for updates and upserts; an ``etag`` of ``None`` on an update
    or delete means ``"*"``), in canonical form, its ``source`` object kept (or its
    entity, when that is an entity object, taken as one); :class:`azt.ValidationError`
    otherwise."""
    return _checked_operation(operation, limits)[0]


def _checked_operation(
    operation: BatchOperation,
    limits: ServiceLimits,
    valid_body: Callable[[Any], bytes | None] | None = None,
) -> tuple[BatchOperation, bytes | None]:
    """:func:`checked_operation`, and the entity's body when ``valid_body`` checked and
    encoded it in one pass (else ``None``: checked by :func:`check_entity`)."""
    if not isinstance(operation, BatchOperation):
        raise ValidationError(f"expected a BatchOperation, got {type(operation).__name__}")
    op = operation
    kind = op.kind
    if kind == "create":
        if op.mode is not None or op.etag is not None:
            raise ValidationError("a create operation takes no mode and no etag")
        data, obj = _operation_entity(op)
        body = valid_body(data) if valid_body is not None else None
        return _create(data, obj, limits, body is not None), body
    if kind == "update" or kind == "upsert":
        if not isinstance(op.mode, UpdateMode):
            raise ValidationError(
                f"an {kind} operation needs mode=UpdateMode.MERGE or UpdateMode.REPLACE"
            )
        data, obj = _operation_entity(op)
        if kind == "upsert" and op.etag is not None:
            raise ValidationError("an upsert operation takes no etag (it is unconditional)")
        body = valid_body(data) if valid_body is not None else None
        if kind == "update":
            etag = "*" if op.etag is None else op.etag
            return _update(data, op.mode, etag, obj, limits, body is not None), body
        return _upsert(data, op.mode, obj, limits, body is not None), body
    if kind == "delete":
        entity, _ = _operation_entity(op)
        if not isinstance(entity, Mapping):
            raise ValidationError(
                "an entity must be a mapping or an entity object (azt.Entity, "
                f"azt.DynamicEntity), got {type(entity).__name__}"
            )
        deleted = _delete(
            plain_value(entity.get("PartitionKey")),
            plain_value(entity.get("RowKey")),
            "*" if op.etag is None else op.etag,
            limits,
        )
        return deleted, None
    raise ValidationError(f"unknown operation kind {kind!r}: create, update, upsert or delete")


# --- one encoding per operation, exact transaction sizes -----------------------------------


def bound_batch(table_name: str, encoder: OperationEncoder) -> TableBatch:
    """An empty :class:`TableBatch` that encodes each operation with ``encoder`` as it is
    added (what :meth:`TableClient.batch` returns), for the encoder's client flavour: its
    entity limits, and a change set cut at its largest body (Cosmos DB 2 MB)."""
    batch = TableBatch(table_name, flavor=encoder.flavor)
    batch._encoder = encoder
    batch._plain = encoder.plain and batch.limits.is_storage
    batch._changeset = Changeset(max_bytes=batch.limits.max_batch_bytes)
    return batch


@attrs.frozen
class Prepared:
    """An operation checked and encoded (once) into the request its change set part
    carries."""

    operation: BatchOperation
    request: bytes


@functools.cache
def _empty(max_bytes: int) -> Changeset:
    """A change set (never appended to) that sizes a transaction of one operation."""
    return Changeset(max_bytes=max_bytes)


def prepare_operation(batch: TableBatch, operation: BatchOperation) -> Prepared:
    """``operation`` validated and encoded (as :meth:`TableBatch.add` does) by the client
    ``batch`` is bound to; :class:`azt.BatchValidationError` when too large for any."""
    return encode_operation(batch, *_checked_operation(operation, batch.limits, batch._valid_body))


def checked_head(
    batch: TableBatch, operation: BatchOperation, body: bytes | None = None
) -> tuple[BatchOperation, bytes | None]:
    """``operation`` checked (:func:`checked_operation`) with its entity's body for
    :meth:`TableBatch._add_group`: ``body`` if given (checked and encoded by the caller in
    one pass, as by :meth:`TableBatch._valid_body`), else the batch's own one-pass body.

    Example::

        op, body = checked_head(batch, BatchOperation("create", entity))
    """
    if body is not None and batch._plain:
        given = body
        return _checked_operation(operation, batch.limits, lambda _: given)
    return _checked_operation(operation, batch.limits, batch._valid_body)


def encode_operation(batch: TableBatch, op: BatchOperation, body: bytes | None = None) -> Prepared:
    """``op``, checked (:func:`checked_operation`, :func:`create_operation`...), encoded
    once by the client ``batch`` is bound to (``body``: its entity's, checked and encoded
    in one pass, when ``batch._plain``); :class:`azt.BatchValidationError` when it cannot
    fit any transaction."""
    encoder = batch._encoder
    if encoder is None:
        raise ValidationError("preparing operations needs a batch made by TableClient.batch()")
    request = encoder(op, body)
    max_bytes = batch.limits.max_batch_bytes
    if not _empty(max_bytes).fits(request):
        raise BatchValidationError(
            f"{op!r} is {len(request)} bytes encoded: it cannot fit a transaction body of at "
            f"most {max_bytes} bytes ({describe_bytes(max_bytes)}) even alone"
        )
    return Prepared(op, request)


def has_room(batch: TableBatch, prepared: Prepared) -> bool:
    """Whether ``prepared`` can join ``batch`` without breaking a rule: same PartitionKey,
    a new RowKey, at most 100 operations and a body of at most 4 MiB (2 MB on Cosmos DB;
    exact sizes)."""
    return batch._room(prepared.operation, prepared.request)


def add_prepared(batch: TableBatch, prepared: Prepared) -> None:
    """Add ``prepared`` to ``batch`` (bound to the client that encoded it), its bytes as
    they are."""
    batch._add(prepared.operation, prepared.request)


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
    method = core.write_verb(op.mode is UpdateMode.MERGE, headers)
    return wire_batch.BatchPart(method, url, headers, core.codec.encode_entity(op.entity))
