"""The units a bulk load queues and sends: :class:`Op` (one input position: its encoded
operation and the index rows that go with it), :class:`Send` (a transaction in progress),
:class:`Partition` (a partition's queue, pace and back-off) and :class:`TableRef` (a
table's sending and reading clients), with how a throttling answer is scoped
(:func:`throttle_scope`). The loader (:mod:`azt._core.bulk.loader`) drives them.

Example::

    >>> throttle_scope(ValueError("not the service"))
"""

from __future__ import annotations

import collections

from azt._core.batch import Prepared, add_prepared
from azt._core.bulk.pacing import Pace
from azt._core.packing import group_fits
from azt._core.table_client import TableClient
from azt._core.wire.batch import MAX_BATCH_BYTES, MAX_BATCH_OPERATIONS
from azt._errors import ServiceError

__all__ = [
    "FULL_BYTES",
    "Op",
    "Partition",
    "Send",
    "TableRef",
    "describe_op",
    "ops_in",
    "throttle_scope",
]

#: A full transaction's body leaves room for the multipart framing around the parts.
FULL_BYTES = MAX_BATCH_BYTES - 64 * 1024


class Op:
    """One input position: its operation and, for an entity object whose class declares
    secondary indexes, its index rows (and intent row), always sent in one transaction."""

    __slots__ = ("ambiguous", "count", "extra", "index", "prepared", "size")

    def __init__(self, index: int, prepared: Prepared, extra: list[Prepared]) -> None:
        self.index = index
        #: an attempt of it had no answer (it may have been applied), whatever came after
        self.ambiguous = False
        self.prepared = prepared
        self.extra = extra
        self.count = 1 + len(extra)
        self.size = len(prepared.request) + sum(len(p.request) for p in extra)

    def parts(self) -> list[Prepared]:
        return [self.prepared, *self.extra]


def ops_in(entries: list[Op]) -> int:
    return sum(entry.count for entry in entries)


class Send:
    """A transaction in progress: its operations, attempts so far, whether an earlier
    attempt may have been applied."""

    __slots__ = ("account_bound", "attempts", "ops", "partition_bound", "uncertain")

    def __init__(self, ops: list[Op]) -> None:
        self.ops = ops
        self.attempts = 0
        self.uncertain = False
        #: whether the account's / the partition's pace held this attempt back (only a
        #: pace that limits grows on success)
        self.account_bound = False
        self.partition_bound = False


class TableRef:
    __slots__ = ("name", "probe", "reader", "sender")

    def __init__(self, sender: TableClient, reader: TableClient) -> None:
        self.name = sender.table_name
        self.sender = sender
        self.reader = reader
        self.probe = sender.batch()


class Partition:
    __slots__ = (
        "busy",
        "first_at",
        "key",
        "not_before",
        "pace",
        "qbytes",
        "qops",
        "queue",
        "retry",
        "table",
    )

    def __init__(self, key: tuple[str, str], table: TableRef, pace: Pace, now: float) -> None:
        self.key = key
        self.table = table
        self.queue: collections.deque[Op] = collections.deque()
        self.qbytes = 0
        self.qops = 0  # operations queued (an indexed entity's index rows count)
        self.busy = False
        self.not_before = 0.0
        self.first_at = now
        self.retry: Send | None = None
        self.pace = pace

    def next_transaction(self) -> Send:
        """The next transaction: the oldest queued operations, each with its index rows,
        as many as fit one entity group transaction."""
        batch = self.table.sender.batch()
        ops: list[Op] = []
        queue = self.queue
        while queue:
            entry = queue[0]
            group = entry.parts()
            if ops and not group_fits(batch, group):
                break
            for prepared in group:
                add_prepared(batch, prepared)
            ops.append(queue.popleft())
            self.qbytes -= entry.size
            self.qops -= entry.count
        return Send(ops)

    def full(self) -> bool:
        return self.qops >= MAX_BATCH_OPERATIONS or self.qbytes >= FULL_BYTES

    def next_size(self) -> int:
        if self.retry is not None:
            return ops_in(self.retry.ops)
        return min(self.qops, MAX_BATCH_OPERATIONS)


def throttle_scope(exc: BaseException) -> str | None:
    """``"account"``, ``"partition"`` or ``None``: whether ``exc`` is the service
    pushing back, and on what."""
    if not isinstance(exc, ServiceError):
        return None
    if exc.status == 429 or exc.code in ("ServerBusy", "OperationTimedOut"):
        return "account" if "account limit" in (exc.message or "") else "partition"
    return None


def describe_op(entry: Op, part: Partition) -> tuple[str, str | None, str | None, str]:
    op = entry.prepared.operation
    kind = op.kind if op.mode is None else f"{op.kind}-{op.mode.value}"
    return part.table.name, op.partition_key, op.row_key, kind
