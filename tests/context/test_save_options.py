"""TableContext save options against the in-process stub: NONE stops at the first failure,
CONTINUE_ON_ERROR collects failures, BATCH groups and splits transactions,
REPLACE_ON_UPDATE, and the refusal of invalid options and entities."""

from __future__ import annotations

import pytest

import azt
from azt._uow.types import ChangeKind
from azt.context import (
    EntityState,
    SaveChangesError,
    SaveChangesOptions,
    TableContext,
)
from azt.dynamic import DynamicEntity

from .conftest import entity_exists, fresh_name, stored_entity
from .models import Movie

S = EntityState
Opt = SaveChangesOptions


async def _seed_conflict(service: azt.TableServiceClient, table: str) -> None:
    await service.get_table_client(table).insert_entity({"PartitionKey": "Action", "RowKey": "b"})


async def test_none_stops_at_first_failure_and_resave_is_idempotent(
    service: azt.TableServiceClient, table: str
) -> None:
    await _seed_conflict(service, table)
    ctx = TableContext(service)
    a, b, c = Movie("Action", "a"), Movie("Action", "b"), Movie("Action", "c")
    for m in (a, b, c):
        ctx.add(table, m)
    with pytest.raises(SaveChangesError) as info:
        await ctx.save_changes()
    res = info.value.result
    assert [r.succeeded for r in res] == [True, False, False]
    assert isinstance(res[1].error, azt.EntityAlreadyExistsError)
    assert res.not_sent == [res[2]]
    assert res[2].status is None
    assert ctx.state_of(a) is S.UNCHANGED
    assert ctx.state_of(b) is S.ADDED
    assert ctx.state_of(c) is S.ADDED
    assert not await entity_exists(service, table, "Action", "c")
    # the seed's pitfall: saving again retries "b" (and fails again) ...
    with pytest.raises(SaveChangesError) as info2:
        await ctx.save_changes()
    assert [r.row_key for r in info2.value.result] == ["b", "c"]  # "a" is not resent
    # ... until the application deals with it
    ctx.detach(b)
    (r,) = await ctx.save_changes()
    assert r.row_key == "c"
    assert await entity_exists(service, table, "Action", "c")


async def test_continue_on_error_collects_failures(
    service: azt.TableServiceClient, table: str
) -> None:
    await _seed_conflict(service, table)
    ctx = TableContext(service)
    ms = [Movie("Action", rk) for rk in ("a", "b", "c")]
    for m in ms:
        ctx.add(table, m)
    with pytest.raises(SaveChangesError) as info:
        await ctx.save_changes(Opt.CONTINUE_ON_ERROR)
    res = info.value.result
    assert [r.succeeded for r in res] == [True, False, True]
    assert len(res.failed) == 1
    assert res.failed[0].status == 409
    assert res.not_sent == []
    assert "1 of 3 changes failed" in str(info.value)
    assert await entity_exists(service, table, "Action", "c")
    assert [ctx.state_of(m) for m in ms] == [S.UNCHANGED, S.ADDED, S.UNCHANGED]


async def test_continue_on_error_concurrent(service: azt.TableServiceClient, table: str) -> None:
    ctx = TableContext(service)
    ms = [Movie("p", f"{i:03d}") for i in range(30)]
    for m in ms:
        ctx.add(table, m)
    res = await ctx.save_changes(Opt.CONTINUE_ON_ERROR, max_concurrency=8)
    assert res.ok
    assert [r.row_key for r in res] == [m.RowKey for m in ms]  # reported in plan order
    assert len(await service.get_table_client(table).list_entities().to_list()) == 30


async def test_batch_groups_by_table_and_partition_and_splits_at_100(
    service: azt.TableServiceClient, table: str
) -> None:
    table2 = fresh_name()
    await service.create_table(table2)
    ctx = TableContext(service)
    for i in range(150):
        ctx.add(table, Movie("A", f"{i:04d}"))
        ctx.add(table, Movie("B", f"{i:04d}"))
    for i in range(20):
        ctx.add(table2, Movie("A", f"{i:04d}"))
    res = await ctx.save_changes(Opt.BATCH)
    assert res.ok
    assert len(res) == 320
    sizes: dict[int, int] = {}
    keys: dict[int, set[tuple[str, str]]] = {}
    for r in res:
        assert r.batch is not None
        sizes[r.batch] = sizes.get(r.batch, 0) + 1
        keys.setdefault(r.batch, set()).add((r.table, r.partition_key))
    assert sorted(sizes.values()) == [20, 50, 50, 100, 100]
    assert all(len(k) == 1 for k in keys.values())  # one table and partition per transaction
    assert len(await service.get_table_client(table).list_entities().to_list()) == 300
    assert all(ctx.state_of(r.entity) is S.UNCHANGED for r in res)
    assert all(r.etag for r in res)


async def test_batch_failure_is_atomic_per_group_and_resave_sends_only_it(
    service: azt.TableServiceClient, table: str
) -> None:
    await service.get_table_client(table).insert_entity({"PartitionKey": "B", "RowKey": "1"})
    ctx = TableContext(service)
    good = [Movie("A", str(i)) for i in range(3)]
    bad = [Movie("B", str(i)) for i in range(3)]  # "B"/"1" exists: the group fails
    for a, b in zip(good, bad, strict=True):
        ctx.add(table, a)
        ctx.add(table, b)
    with pytest.raises(SaveChangesError) as info:
        await ctx.save_changes(Opt.BATCH)
    res = info.value.result
    failed = res.failed
    assert {r.partition_key for r in failed} == {"B"}
    assert len(failed) == 3
    (err,) = info.value.errors  # one transaction error shared by its group
    assert isinstance(err, azt.TransactionError)
    assert err.index == 1
    assert [r.status for r in failed] == [None, 409, None]  # the culprit, and rolled back
    assert all(ctx.state_of(b) is S.ADDED for b in bad)
    assert all(ctx.state_of(a) is S.UNCHANGED for a in good)
    for rk in ("0", "2"):  # nothing of the failed group was applied
        assert not await entity_exists(service, table, "B", rk)
    ctx.detach(bad[1])
    again = await ctx.save_changes(Opt.BATCH)
    assert [r.row_key for r in again] == ["0", "2"]
    assert {r.partition_key for r in again} == {"B"}


async def test_batch_stops_at_the_first_failed_transaction(
    service: azt.TableServiceClient, table: str
) -> None:
    """BATCH is NONE at the level of transactions (the legacy Batch never continues after
    a failure, which is why BATCH | CONTINUE_ON_ERROR is refused): the transactions after
    a failed one are not sent and stay pending."""
    await service.get_table_client(table).insert_entity({"PartitionKey": "A", "RowKey": "1"})
    ctx = TableContext(service)
    first = [Movie("A", str(i)) for i in range(3)]  # "A"/"1" exists: this group fails
    later = [Movie(pk, str(i)) for pk in ("B", "C") for i in range(2)]
    for m in first + later:
        ctx.add(table, m)
    with pytest.raises(SaveChangesError) as info:
        await ctx.save_changes(Opt.BATCH)
    res = info.value.result
    assert [r.batch for r in res] == [0, 0, 0, 1, 1, 2, 2]
    assert len(res.failed) == 3
    assert {r.partition_key for r in res.failed} == {"A"}
    assert [(r.partition_key, r.row_key) for r in res.not_sent] == [
        ("B", "0"),
        ("B", "1"),
        ("C", "0"),
        ("C", "1"),
    ]
    assert all(not r.sent and r.status is None for r in res.not_sent)
    assert "3 of 7 changes failed, 4 not sent" in str(info.value)
    assert all(ctx.state_of(m) is S.ADDED for m in first + later)
    assert len(await service.get_table_client(table).list_entities().to_list()) == 1
    # once the conflict is dealt with, the next save sends all of it
    ctx.detach(first[1])
    again = await ctx.save_changes(Opt.BATCH)
    assert len(again) == 6
    assert len(await service.get_table_client(table).list_entities().to_list()) == 7


async def test_batch_stop_with_transactions_in_flight(
    service: azt.TableServiceClient, table: str
) -> None:
    """With max_concurrency > 1 no transaction starts after a failure; those already in
    flight finish and are recorded. Whatever happened, results and states agree."""
    await service.get_table_client(table).insert_entity({"PartitionKey": "P0", "RowKey": "0"})
    ctx = TableContext(service)
    ms = [Movie(f"P{p}", str(i)) for p in range(6) for i in range(2)]
    for m in ms:
        ctx.add(table, m)
    with pytest.raises(SaveChangesError) as info:
        await ctx.save_changes(Opt.BATCH, max_concurrency=2)
    res = info.value.result
    assert {r.partition_key for r in res.failed} == {"P0"}
    assert len(res.succeeded) + len(res.failed) + len(res.not_sent) == len(ms)
    stored = {
        (r["PartitionKey"], r["RowKey"])
        for r in await service.get_table_client(table).list_entities().to_list()
    }
    for r in res:
        state = ctx.state_of(r.entity)
        assert (state is S.UNCHANGED) == r.succeeded
        assert ((r.partition_key, r.row_key) in stored) == (
            r.succeeded or (r.partition_key == "P0" and r.row_key == "0")
        )


async def test_batch_splits_at_4_mib(service: azt.TableServiceClient, table: str) -> None:
    ctx = TableContext(service)
    chunk = "x" * 32_000
    for i in range(10):
        props = {f"P{j}": chunk for j in range(15)}  # ~480 KB of JSON per entity
        ctx.add(table, DynamicEntity("big", f"{i:02d}", **props))
    res = await ctx.save_changes(Opt.BATCH)
    assert res.ok
    batches = {r.batch for r in res}
    assert len(batches) >= 2  # 10 x 480 KB does not fit one 4 MiB request
    rows = await service.get_table_client(table).list_entities().to_list()
    assert len(rows) == 10


async def test_batch_with_replace_on_update_and_deletes(
    service: azt.TableServiceClient, table: str
) -> None:
    raw = service.get_table_client(table)
    for rk in ("1", "2", "3"):
        await raw.insert_entity({"PartitionKey": "p", "RowKey": rk, "Language": "en"})
    ctx = TableContext(service)
    one, two, three = await ctx.query(Movie, table).to_list()
    one.language = None
    two.rating = 2.0
    ctx.delete(three)
    res = await ctx.save_changes(Opt.BATCH | Opt.REPLACE_ON_UPDATE)
    assert [(r.kind, r.mode) for r in res] == [
        (ChangeKind.UPDATE, "replace"),
        (ChangeKind.UPDATE, "replace"),
        (ChangeKind.DELETE, None),
    ]
    assert len({r.batch for r in res}) == 1
    assert "Language" not in await stored_entity(service, table, "p", "1")
    assert (await stored_entity(service, table, "p", "2"))["Rating"] == 2.0
    assert not await entity_exists(service, table, "p", "3")


async def test_invalid_options_refused(service: azt.TableServiceClient, table: str) -> None:
    ctx = TableContext(service)
    ctx.add(table, Movie("p", "r"))
    with pytest.raises(azt.ValidationError, match="cannot be combined"):
        await ctx.save_changes(Opt.BATCH | Opt.CONTINUE_ON_ERROR)
    with pytest.raises(azt.ValidationError, match="SaveChangesOptions"):
        await ctx.save_changes(1)  # type: ignore[arg-type]
    with pytest.raises(azt.ValidationError, match="max_concurrency"):
        await ctx.save_changes(Opt.NONE, max_concurrency=4)
    with pytest.raises(azt.ValidationError, match="max_concurrency"):
        await ctx.save_changes(Opt.BATCH, max_concurrency=0)
    with pytest.raises(azt.ValidationError):
        ctx.merge_option = "preserve"  # type: ignore[assignment]
    assert not await entity_exists(service, table, "p", "r")  # nothing was sent
    assert ctx.has_changes


async def test_invalid_entity_refused_before_anything_is_sent(
    service: azt.TableServiceClient, table: str
) -> None:
    ctx = TableContext(service)
    ctx.add(table, {"PartitionKey": "p", "RowKey": "1"})
    ctx.add(table, {"PartitionKey": "p", "RowKey": "2", "bad-name": 1})
    for options in (Opt.NONE, Opt.BATCH):
        with pytest.raises(azt.ValidationError, match="bad-name"):
            await ctx.save_changes(options)
    assert not await entity_exists(service, table, "p", "1")
