"""A bulk load's bookkeeping, seen from inside the loader (issue 33: behaviour a load's
final rows do not show): only the pace that held a transaction back grows on its success;
a partition refused with no success in the last second is not cut from a guess (at most
down to the last partition cut's rate, once) but backs off in time, exponentially over
the refusals in a row; an index row to delete that was already gone is dropped
and its entity sent again, not reported failed, while any other refusal of an index row
fails only the entity that owns it; the progress snapshot's ``elapsed`` is
the time since the load began. No network: a fixed clock and a sender that answers."""

from __future__ import annotations

from typing import Any, cast

import pytest

import azt
from azt._core.batch import BatchOperation, prepare_operation
from azt._core.bulk.loader import _Loader
from azt._core.bulk.queues import Op, Partition, Send, TableRef
from azt._errors import EntityNotFoundError, TransactionError, error_from_response
from azt.bulk import BulkOptions


def _table() -> azt.TableClient:
    credential = azt.SharedKeyCredential("acct", "a2V5")
    return azt.TableClient("https://acct.table.core.windows.net/", "loads", credential)


def _loader(now: list[float], options: BulkOptions | None = None) -> _Loader:
    return _Loader(
        _table(),
        table=None,
        kind="insert",
        options=options or BulkOptions(),
        checkpoint=None,
        progress=None,
        on_result=None,
        clock=lambda: now[0],
    )


class _Ops:
    """Stands for one queued entity with nine index rows: ten operations."""

    index = 0
    count = 10
    size = 100

    def parts(self) -> list[Any]:
        return []


class _Sender:
    """Answers every transaction with success (one write result an operation)."""

    def __init__(self) -> None:
        self.transactions = 0

    def batch(self) -> None:
        return None

    async def submit_transaction(self, batch: None) -> list[object]:
        self.transactions += 1
        return [object() for _ in range(_Ops.count)]


class _Ref:
    name = "loads"

    def __init__(self) -> None:
        self.sender = _Sender()


@pytest.mark.parametrize(("account_bound", "partition_bound"), [(True, False), (False, True)])
async def test_only_the_pace_that_held_a_transaction_back_grows(
    account_bound: bool, partition_bound: bool
) -> None:
    now = [100.0]
    loader = _loader(now)
    ref = _Ref()
    part = Partition(("loads", "p"), cast(TableRef, ref), loader._pacing.partition(now[0]), now[0])
    # both paces below their maximum, so either can grow
    loader._pacing.account.rate.value = account = loader._pacing.account.rate.maximum / 2
    part.pace.rate.value = partition = part.pace.rate.maximum / 2
    send = Send([cast(Op, _Ops())])
    send.account_bound = account_bound
    send.partition_bound = partition_bound
    now[0] = 101.0
    await loader._attempt(part, send)
    assert ref.sender.transactions == 1
    assert loader.result.written == 1
    assert send.ops == []
    assert (loader._pacing.account.value > account) is account_bound
    assert (part.pace.value > partition) is partition_bound
    assert loader._pacing.account.value >= account  # the other one is left as it was
    assert part.pace.value >= partition
    if not account_bound:
        assert loader._pacing.account.value == account
    if not partition_bound:
        assert part.pace.value == partition


@pytest.mark.parametrize("hint", [None, 200.0])
def test_a_partition_refused_without_success_backs_off_and_is_not_cut_below_the_hint(
    hint: float | None,
) -> None:
    now = [100.0]
    options = BulkOptions(partition_rate=1000)
    loader = _loader(now, options)
    loader._pacing.partition_hint = hint
    part = Partition(
        ("loads", "p"), loader._table("loads"), loader._pacing.partition(now[0]), now[0]
    )
    send = Send([cast(Op, _Ops())])  # ten operations
    send.attempts = 1
    busy = error_from_response(503, "ServerBusy", "The server is busy.")
    waits = []
    for _ in range(4):  # refused four times in a row, nothing admitted in the last second
        loader._pushed_back(part, send, busy)
        waits.append(part.not_before - now[0])
        now[0] = part.not_before  # sent again once its wait is over ...
        assert part.pace.delay(10, now[0]) == pytest.approx(0.0, abs=1e-9)  # its pace has room
    # the pace: as it was, or brought down to the learned target once, not again and again
    rate = 1000 if hint is None else hint * options.decrease
    assert part.pace.value == pytest.approx(rate)
    assert part.pace.rate.ceiling == hint
    assert loader._pacing.partition_hint == hint  # a guess is no hint for the next one
    # the wait: the pace's time for the transaction (at least), then twice that and one
    # more each time (1, 3, 7, 15 times it), jittered +-20 %
    base = 10 / rate
    for k, wait in enumerate(waits, start=1):
        assert max(base, 0.8 * base * (2**k - 1)) <= wait <= 1.2 * base * (2**k - 1)
    assert loader._pacing.account.value == options.account_rate  # the account's pace is not cut
    # the first success ends the row: the next refusal waits the first step again
    part.pace.admitted(10, now[0], bound=False)
    now[0] += 2.0  # and measures nothing (no success in the last second)
    loader._pushed_back(part, send, busy)
    assert base <= part.not_before - now[0] <= 1.2 * base


async def test_an_index_row_to_delete_already_gone_is_dropped_not_failed() -> None:
    now = [100.0]
    loader = _loader(now)
    batch = _table().batch()
    entity = {"PartitionKey": "p", "RowKey": "r", "Name": "new"}
    own = prepare_operation(batch, BatchOperation("upsert", entity, azt.UpdateMode.REPLACE))
    old_index = {"PartitionKey": "p", "RowKey": "idx-Name-old"}
    new_index = {"PartitionKey": "p", "RowKey": "idx-Name-new"}
    gone = prepare_operation(batch, BatchOperation("delete", old_index, etag="*"))
    added = prepare_operation(batch, BatchOperation("upsert", new_index, azt.UpdateMode.REPLACE))
    entry = Op(0, own, [gone, added])
    second = BatchOperation("upsert", {**entity, "RowKey": "s"}, azt.UpdateMode.REPLACE)
    other = Op(1, prepare_operation(batch, second), [])
    part = Partition(
        ("loads", "p"), loader._table("loads"), loader._pacing.partition(now[0]), now[0]
    )
    send = Send([entry, other])
    send.attempts = 1
    inner = error_from_response(404, "ResourceNotFound", "gone", resource="entity")
    assert isinstance(inner, EntityNotFoundError)
    failed = TransactionError.from_error(inner, index=1, operation=gone.operation)
    await loader._op_failed(part, send, failed)
    assert loader.result.failures == []  # the entity is not reported failed
    assert send.ops == [entry, other]  # both go again ...
    assert entry.extra == [added]  # ... without the row already gone
    assert entry.count == 2
    assert [p.operation for p in entry.parts()] == [own.operation, added.operation]


def test_the_snapshot_elapsed_is_the_time_since_the_load_began() -> None:
    now = [100.0]
    loader = _loader(now)
    now[0] = 107.5
    progress = loader.snapshot()
    assert progress.elapsed == pytest.approx(7.5)
    assert not progress.done
    assert loader.snapshot(done=True).done


async def test_an_index_row_refused_fails_its_entity_and_the_others_go_again() -> None:
    # any other refusal of an index row (here a unique value taken: its row exists) fails
    # the entity that owns it, with the service's error, and only that one
    now = [100.0]
    loader = _loader(now)
    batch = _table().batch()
    entity = {"PartitionKey": "p", "RowKey": "r", "Email": "a@example.com"}
    own = prepare_operation(batch, BatchOperation("upsert", entity, azt.UpdateMode.REPLACE))
    unique = {"PartitionKey": "p", "RowKey": "idx-Email-a@example.com"}
    taken = prepare_operation(batch, BatchOperation("create", unique))
    entry = Op(0, own, [taken])
    second = BatchOperation("upsert", {**entity, "RowKey": "s"}, azt.UpdateMode.REPLACE)
    other = Op(1, prepare_operation(batch, second), [])
    part = Partition(
        ("loads", "p"), loader._table("loads"), loader._pacing.partition(now[0]), now[0]
    )
    send = Send([entry, other])
    send.attempts = 1
    inner = error_from_response(409, "EntityAlreadyExists", "taken", resource="entity")
    failed = TransactionError.from_error(inner, index=1, operation=taken.operation)
    await loader._op_failed(part, send, failed)
    assert [(f.index, f.status, f.code) for f in loader.result.failures] == [
        (0, 409, "EntityAlreadyExists")
    ]
    assert loader.result.failures[0].error is inner
    assert send.ops == [other]  # the other entity goes again, unharmed
    assert entry.extra == [taken]  # the failed entity is reported as it was
