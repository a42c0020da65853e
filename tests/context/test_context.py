"""TableContext against the in-process stub: every transition, merge option, save option
and refusal."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import azt
from azt._uow.types import ChangeKind
from azt.context import (
    ContextBusyError,
    EntityState,
    IdentityConflictError,
    MergeOption,
    SaveChangesError,
    SaveChangesOptions,
    TableContext,
    TrackingError,
)
from azt.dynamic import DynamicEntity
from azt.edm import TableEntity
from azt_server_stub import StubServer

from .conftest import fresh_name
from .models import Movie

S = EntityState
Opt = SaveChangesOptions


async def _stored(service: azt.TableServiceClient, table: str, pk: str, rk: str) -> TableEntity:
    return await service.get_table_client(table).get_entity(pk, rk)


async def _exists(service: azt.TableServiceClient, table: str, pk: str, rk: str) -> bool:
    try:
        await _stored(service, table, pk, rk)
    except azt.EntityNotFoundError:
        return False
    return True


# --------------------------------------------------------------------------- basic transitions


async def test_add_save_then_unchanged_with_etag(
    service: azt.TableServiceClient, table: str
) -> None:
    ctx = TableContext(service)
    m = Movie("Action", "White Water Rapids Survival", rating=4.5)
    ctx.add(table, m)
    assert ctx.state_of(m) is S.ADDED
    assert ctx.has_changes
    result = await ctx.save_changes()
    (r,) = result
    assert r.succeeded
    assert r.kind is ChangeKind.INSERT
    assert r.status in (201, 204)
    stored = await _stored(service, table, "Action", "White Water Rapids Survival")
    assert ctx.state_of(m) is S.UNCHANGED
    assert ctx.etag_of(m) == stored.metadata.etag
    assert m.ETag == stored.metadata.etag
    assert stored["Rating"] == 4.5
    pending: bool = ctx.has_changes
    assert not pending
    # a second save sends nothing
    assert len(await ctx.save_changes()) == 0


async def test_query_edit_without_update_sends_minimal_merge(
    service: azt.TableServiceClient, table: str
) -> None:
    raw = service.get_table_client(table)
    await raw.insert_entity(
        {"PartitionKey": "Action", "RowKey": "Heat", "Rating": 3.0, "Language": "en", "X": 1}
    )
    ctx = TableContext(service)
    (m,) = await ctx.query(Movie, table).where(Movie.PartitionKey == "Action").to_list()
    assert ctx.state_of(m) is S.UNCHANGED
    assert ctx.etag_of(m) is not None
    m.rating = 5.0
    assert ctx.state_of(m) is S.MODIFIED
    (r,) = await ctx.save_changes()
    assert (r.kind, r.mode) == (ChangeKind.UPDATE, "merge")
    stored = await _stored(service, table, "Action", "Heat")
    assert stored["Rating"] == 5.0
    assert stored["X"] == 1  # a property the class does not know survives a MERGE
    assert ctx.etag_of(m) == stored.metadata.etag


async def test_merge_sends_only_changed_properties(
    service: azt.TableServiceClient, table: str
) -> None:
    raw = service.get_table_client(table)
    await raw.insert_entity({"PartitionKey": "p", "RowKey": "r", "Rating": 1.0, "Language": "en"})
    ctx = TableContext(service)
    m = Movie("p", "r", rating=1.0, language="en")
    ctx.attach(table, m, "*")
    # another writer changes Language meanwhile
    await raw.update_entity({"PartitionKey": "p", "RowKey": "r", "Language": "fr"})
    m.rating = 2.0
    await ctx.save_changes()
    stored = await _stored(service, table, "p", "r")
    assert stored["Rating"] == 2.0
    assert stored["Language"] == "fr"  # not clobbered: only Rating was sent


async def test_replace_on_update_removes_properties(
    service: azt.TableServiceClient, table: str
) -> None:
    raw = service.get_table_client(table)
    await raw.insert_entity({"PartitionKey": "p", "RowKey": "r", "Language": "en", "X": 1})
    ctx = TableContext(service)
    m = await ctx.get(Movie, table, "p", "r", ignore_resource_not_found=False)
    assert m.language == "en"
    m.language = None
    with pytest.raises(azt.ValidationError, match="REPLACE_ON_UPDATE"):
        await ctx.save_changes()  # a MERGE cannot remove it: refused, nothing sent
    assert (await _stored(service, table, "p", "r"))["Language"] == "en"
    (r,) = await ctx.save_changes(Opt.REPLACE_ON_UPDATE)
    assert r.mode == "replace"
    stored = await _stored(service, table, "p", "r")
    assert "Language" not in stored
    assert "X" not in stored  # replace sends the whole (declared) entity
    assert ctx.state_of(m) is S.UNCHANGED


async def test_explicit_update_writes_whole_entity(
    service: azt.TableServiceClient, table: str
) -> None:
    ctx = TableContext(service)
    # the seed's pattern: construct locally, attach unconditionally, update
    m = Movie("Action", "Cop Out", rating=2.5, language="en")
    ctx.attach(table, m, "*")
    ctx.update(m)
    with pytest.raises(SaveChangesError) as info:
        await ctx.save_changes()  # "*" requires the entity to exist
    assert isinstance(info.value.result[0].error, azt.EntityNotFoundError)
    assert ctx.state_of(m) is S.MODIFIED  # still pending
    await service.get_table_client(table).insert_entity(
        {"PartitionKey": "Action", "RowKey": "Cop Out"}
    )
    await ctx.save_changes()
    stored = await _stored(service, table, "Action", "Cop Out")
    assert stored["Rating"] == 2.5
    assert stored["Language"] == "en"


async def test_attach_star_unconditional_delete(
    service: azt.TableServiceClient, table: str
) -> None:
    await service.get_table_client(table).insert_entity(
        {"PartitionKey": "Action", "RowKey": "Cop Out"}
    )
    ctx = TableContext(service)
    existing = Movie("Action", "Cop Out")
    ctx.attach(table, existing, "*")
    ctx.delete(existing)
    assert ctx.state_of(existing) is S.DELETED
    (r,) = await ctx.save_changes()
    assert r.kind is ChangeKind.DELETE
    assert r.etag is None
    assert ctx.state_of(existing) is S.DETACHED
    assert not await _exists(service, table, "Action", "Cop Out")


async def test_attach_without_etag_upserts(service: azt.TableServiceClient, table: str) -> None:
    ctx = TableContext(service)
    m = Movie("Drama", "New", rating=3.0)
    ctx.attach(table, m)
    ctx.update(m)
    (r,) = await ctx.save_changes()
    assert r.kind is ChangeKind.UPSERT
    assert (await _stored(service, table, "Drama", "New"))["Rating"] == 3.0
    # after the upsert the context tracks the real ETag: the next update is conditional
    await service.get_table_client(table).update_entity(
        {"PartitionKey": "Drama", "RowKey": "New", "Rating": 9.0}
    )
    m.rating = 4.0
    with pytest.raises(SaveChangesError) as info:
        await ctx.save_changes()
    assert isinstance(info.value.result[0].error, azt.PreconditionFailedError)


async def test_attach_with_etag_stale_then_preserve_changes_recovers(
    service: azt.TableServiceClient, table: str
) -> None:
    raw = service.get_table_client(table)
    first = await raw.insert_entity({"PartitionKey": "p", "RowKey": "r", "Rating": 1.0})
    await raw.update_entity({"PartitionKey": "p", "RowKey": "r", "Language": "de"})
    ctx = TableContext(service)  # PRESERVE_CHANGES by default
    m = Movie("p", "r", rating=1.0)
    ctx.attach(table, m, first.etag)
    m.rating = 7.0
    with pytest.raises(SaveChangesError) as info:
        await ctx.save_changes()
    (r,) = info.value.result
    assert isinstance(r.error, azt.PreconditionFailedError)
    assert r.status == 412
    assert ctx.state_of(m) is S.MODIFIED
    # re-read: the ETag is refreshed, the local edit kept, the untouched Language loaded
    again = await ctx.get(Movie, table, "p", "r", ignore_resource_not_found=False)
    assert again is m
    assert m.rating == 7.0
    assert m.language == "de"
    await ctx.save_changes()
    stored = await _stored(service, table, "p", "r")
    assert stored["Rating"] == 7.0
    assert stored["Language"] == "de"


async def test_stale_delete_stays_deleted_and_recovers_with_preserve_changes(
    service: azt.TableServiceClient, table: str
) -> None:
    raw = service.get_table_client(table)
    await raw.insert_entity({"PartitionKey": "p", "RowKey": "r", "Rating": 1.0})
    ctx = TableContext(service)
    m = await ctx.get(Movie, table, "p", "r", ignore_resource_not_found=False)
    m.rating = 4.0  # edited, then deleted: the delete wins
    ctx.delete(m)
    await raw.update_entity({"PartitionKey": "p", "RowKey": "r", "Rating": 2.0})
    with pytest.raises(SaveChangesError) as info:
        await ctx.save_changes()
    (r,) = info.value.result
    assert (r.kind, r.status) == (ChangeKind.DELETE, 412)
    assert ctx.state_of(m) is S.DELETED  # still pending
    assert await ctx.get(Movie, table, "p", "r") is m  # re-read: new ETag, still Deleted
    assert ctx.state_of(m) is S.DELETED
    assert ctx.etag_of(m) == (await _stored(service, table, "p", "r")).metadata.etag
    (r,) = await ctx.save_changes()
    assert r.kind is ChangeKind.DELETE
    assert ctx.state_of(m) is S.DETACHED
    assert not await _exists(service, table, "p", "r")
    # a detached object can be added again: it is a new insert
    ctx.add(table, m)
    await ctx.save_changes()
    assert ctx.state_of(m) is S.UNCHANGED
    assert (await _stored(service, table, "p", "r"))["Rating"] == 4.0


async def test_delete_queried_entity_and_detach(
    service: azt.TableServiceClient, table: str
) -> None:
    raw = service.get_table_client(table)
    for rk in ("a", "b"):
        await raw.insert_entity({"PartitionKey": "p", "RowKey": rk})
    ctx = TableContext(service)
    a, b = await ctx.query(Movie, table).to_list()
    ctx.delete(a)
    ctx.delete(b)
    assert ctx.detach(b) is True
    (r,) = await ctx.save_changes()
    assert r.row_key == "a"
    assert not await _exists(service, table, "p", "a")
    assert await _exists(service, table, "p", "b")
    with pytest.raises(TrackingError):
        ctx.update(b)


async def test_add_then_delete_sends_nothing(service: azt.TableServiceClient, table: str) -> None:
    ctx = TableContext(service)
    m = Movie("p", "r")
    ctx.add(table, m)
    ctx.delete(m)
    assert len(await ctx.save_changes()) == 0
    assert not await _exists(service, table, "p", "r")


async def test_identity_map_through_queries(service: azt.TableServiceClient, table: str) -> None:
    await service.get_table_client(table).insert_entity({"PartitionKey": "p", "RowKey": "r"})
    ctx = TableContext(service)
    first = await ctx.get(Movie, table, "p", "r", ignore_resource_not_found=False)
    second = await ctx.query(Movie, table.upper()).first()
    assert first is second  # one object per row; table names are case-insensitive
    with pytest.raises(IdentityConflictError, match="different object"):
        ctx.attach(table, Movie("p", "r"), "*")
    with pytest.raises(TrackingError, match="already tracked"):
        ctx.attach(table, first, "*")


async def test_dynamic_and_dict_entities(service: azt.TableServiceClient, table: str) -> None:
    ctx = TableContext(service)
    d = {"PartitionKey": "p", "RowKey": "dict", "N": 1}
    e = DynamicEntity("p", "dyn", N=1)
    ctx.add(table, d)
    ctx.add(table, e)
    await ctx.save_changes()
    d["N"] = 2
    e["N"] = 3
    await ctx.save_changes(Opt.BATCH)
    assert (await _stored(service, table, "p", "dict"))["N"] == 2
    assert (await _stored(service, table, "p", "dyn"))["N"] == 3
    ctx2 = TableContext(service)
    rows = await ctx2.query(DynamicEntity, table).to_list()
    assert [r["N"] for r in rows] == [2, 3]
    assert all(ctx2.state_of(r) is S.UNCHANGED for r in rows)


# --------------------------------------------------------------------------- save options


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
    assert not await _exists(service, table, "Action", "c")
    # the seed's pitfall: saving again retries "b" (and fails again) ...
    with pytest.raises(SaveChangesError) as info2:
        await ctx.save_changes()
    assert [r.row_key for r in info2.value.result] == ["b", "c"]  # "a" is not resent
    # ... until the application deals with it
    ctx.detach(b)
    (r,) = await ctx.save_changes()
    assert r.row_key == "c"
    assert await _exists(service, table, "Action", "c")


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
    assert await _exists(service, table, "Action", "c")
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
        assert not await _exists(service, table, "B", rk)
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
    assert "Language" not in await _stored(service, table, "p", "1")
    assert (await _stored(service, table, "p", "2"))["Rating"] == 2.0
    assert not await _exists(service, table, "p", "3")


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
    assert not await _exists(service, table, "p", "r")  # nothing was sent
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
    assert not await _exists(service, table, "p", "1")


# --------------------------------------------------------------------------- merge options


async def _one_row(service: azt.TableServiceClient, table: str) -> azt.TableClient:
    raw = service.get_table_client(table)
    await raw.insert_entity({"PartitionKey": "p", "RowKey": "r", "Rating": 1.0})
    return raw


async def test_append_only(service: azt.TableServiceClient, table: str) -> None:
    raw = await _one_row(service, table)
    ctx = TableContext(service, merge_option=MergeOption.APPEND_ONLY)
    m = await ctx.get(Movie, table, "p", "r", ignore_resource_not_found=False)
    old_etag = ctx.etag_of(m)
    await raw.update_entity({"PartitionKey": "p", "RowKey": "r", "Rating": 9.0})
    again = await ctx.query(Movie, table).first()
    assert again is m
    assert m.rating == 1.0  # not refreshed
    assert ctx.etag_of(m) == old_etag  # ETag not updated ...
    m.rating = 2.0
    with pytest.raises(SaveChangesError) as info:
        await ctx.save_changes()  # ... so the update fails the precondition
    assert isinstance(info.value.result[0].error, azt.PreconditionFailedError)


async def test_overwrite_changes(service: azt.TableServiceClient, table: str) -> None:
    raw = await _one_row(service, table)
    ctx = TableContext(service)
    ctx.merge_option = MergeOption.OVERWRITE_CHANGES
    m = await ctx.get(Movie, table, "p", "r", ignore_resource_not_found=False)
    m.rating = 5.0
    await raw.update_entity({"PartitionKey": "p", "RowKey": "r", "Rating": 9.0})
    await ctx.query(Movie, table).to_list()
    assert m.rating == 9.0
    assert ctx.state_of(m) is S.UNCHANGED
    assert ctx.etag_of(m) == (await _stored(service, table, "p", "r")).metadata.etag


async def test_preserve_changes_per_query(service: azt.TableServiceClient, table: str) -> None:
    raw = await _one_row(service, table)
    ctx = TableContext(service, merge_option=MergeOption.APPEND_ONLY)
    m = await ctx.get(Movie, table, "p", "r", ignore_resource_not_found=False)
    m.rating = 5.0
    await raw.update_entity({"PartitionKey": "p", "RowKey": "r", "Rating": 9.0, "Language": "x"})
    await ctx.query(Movie, table).merge_option(MergeOption.PRESERVE_CHANGES).to_list()
    assert m.rating == 5.0
    assert m.language == "x"
    await ctx.save_changes()  # the ETag was refreshed: the save succeeds
    stored = await _stored(service, table, "p", "r")
    assert stored["Rating"] == 5.0
    assert stored["Language"] == "x"


async def test_no_tracking(service: azt.TableServiceClient, table: str) -> None:
    await _one_row(service, table)
    ctx = TableContext(service, merge_option=MergeOption.NO_TRACKING)
    m = await ctx.query(Movie, table).first()
    assert m is not None
    assert ctx.state_of(m) is S.DETACHED
    with pytest.raises(TrackingError, match="not tracking"):
        ctx.update(m)
    assert m.ETag is not None
    ctx.attach(table, m, m.ETag)  # updating needs attach, as the seed says
    m.rating = 3.0
    await ctx.save_changes()
    assert (await _stored(service, table, "p", "r"))["Rating"] == 3.0


async def test_projection_keeps_unloaded_values(
    service: azt.TableServiceClient, table: str
) -> None:
    raw = service.get_table_client(table)
    await raw.insert_entity({"PartitionKey": "p", "RowKey": "r", "Rating": 1.0, "Language": "en"})
    ctx = TableContext(service)
    m = await ctx.get(Movie, table, "p", "r", ignore_resource_not_found=False)
    await raw.update_entity({"PartitionKey": "p", "RowKey": "r", "Rating": 2.0, "Language": "fr"})
    await ctx.query(Movie, table).select(Movie.rating).to_list()
    assert m.rating == 2.0
    assert m.language == "en"  # not in the projection: untouched
    assert ctx.state_of(m) is S.UNCHANGED


# --------------------------------------------------------------------------- point queries


async def test_point_query_not_found(service: azt.TableServiceClient, table: str) -> None:
    ctx = TableContext(service)
    q = ctx.query(Movie, table).where(Movie.PartitionKey == "Action", Movie.RowKey == "Terminator")
    with pytest.raises(azt.EntityNotFoundError) as info:
        await q.to_list()
    assert info.value.code == "ResourceNotFound"
    assert await q.ignore_resource_not_found().to_list() == []
    with pytest.raises(azt.EntityNotFoundError):
        await ctx.get(Movie, table, "Action", "Terminator")
    assert (
        await ctx.get(Movie, table, "Action", "Terminator", ignore_resource_not_found=True) is None
    )
    ctx.ignore_resource_not_found = True
    assert await q.to_list() == []
    assert await ctx.get(Movie, table, "Action", "Terminator") is None
    # a key lookup with a further condition is a filter: no match is an empty result
    await service.get_table_client(table).insert_entity(
        {"PartitionKey": "Action", "RowKey": "Terminator", "Rating": 1.0}
    )
    ctx.ignore_resource_not_found = False
    filtered = ctx.query(Movie, table).where(
        Movie.RowKey == "Terminator", Movie.PartitionKey == "Action", Movie.rating > 4.0
    )
    assert await filtered.to_list() == []
    assert len(await q.to_list()) == 1
    # range queries never raise
    ctx.ignore_resource_not_found = False
    assert await ctx.query(Movie, table).where(Movie.PartitionKey == "Comedy").to_list() == []


async def test_continuation_is_followed(service: azt.TableServiceClient, table: str) -> None:
    ctx = TableContext(service)
    for i in range(25):
        ctx.add(table, Movie("p", f"{i:02d}"))
    await ctx.save_changes(Opt.BATCH)
    fresh = TableContext(service)
    pages = [p async for p in fresh.query(Movie, table).page_size(10).pages()]
    assert [len(p.items) for p in pages] == [10, 10, 5]
    assert len(fresh.entries()) == 25


# --------------------------------------------------------------------------- concurrency


async def test_concurrent_save_and_operations_refused(
    service: azt.TableServiceClient, table: str
) -> None:
    ctx = TableContext(service)
    for i in range(20):
        ctx.add(table, Movie("p", str(i)))
    task = asyncio.create_task(ctx.save_changes())
    await asyncio.sleep(0)  # the save is now waiting for its first answer
    with pytest.raises(ContextBusyError, match="already running"):
        await ctx.save_changes()
    with pytest.raises(ContextBusyError, match="save_changes"):
        await ctx.query(Movie, table).to_list()
    with pytest.raises(ContextBusyError):
        await ctx.get(Movie, table, "p", "0")
    with pytest.raises(ContextBusyError):
        ctx.add(table, Movie("p", "x"))
    with pytest.raises(ContextBusyError):
        ctx.detach(Movie("p", "y"))
    result = await task
    assert result.ok
    assert len(result) == 20
    # afterwards the context is usable again
    ctx.add(table, Movie("p", "x"))
    await ctx.save_changes()


async def test_save_inside_query_loop_is_allowed(
    service: azt.TableServiceClient, table: str
) -> None:
    raw = service.get_table_client(table)
    for i in range(3):
        await raw.insert_entity({"PartitionKey": "p", "RowKey": str(i), "Rating": 0.0})
    ctx = TableContext(service)
    async for m in ctx.query(Movie, table).page_size(1):
        m.rating = 1.0
        await ctx.save_changes()  # no fetch is in flight while the loop body runs
    rows = await raw.list_entities().to_list()
    assert [r["Rating"] for r in rows] == [1.0, 1.0, 1.0]


async def test_32_contexts_increment_one_counter(
    service: azt.TableServiceClient, table: str
) -> None:
    from .models import Counter

    await service.get_table_client(table).insert_entity(
        {"PartitionKey": "counters", "RowKey": "hits", "Count": 0}
    )
    increments_each = 3
    conflicts = 0

    async def worker() -> None:
        nonlocal conflicts
        for _ in range(increments_each):
            ctx = TableContext(service)  # a new context per logical operation
            while True:
                c = await ctx.get(
                    Counter, table, "counters", "hits", ignore_resource_not_found=False
                )
                c.count += 1
                try:
                    await ctx.save_changes()
                    break
                except SaveChangesError as exc:
                    (r,) = exc.result
                    assert isinstance(r.error, azt.PreconditionFailedError)
                    conflicts += 1
                    # re-read: OVERWRITE_CHANGES reloads the new count and ETag
                    ctx.merge_option = MergeOption.OVERWRITE_CHANGES

    await asyncio.gather(*(worker() for _ in range(32)))
    stored = await _stored(service, table, "counters", "hits")
    assert stored["Count"] == 32 * increments_each
    assert conflicts > 0  # the workers really did collide


# --------------------------------------------------------------------------- wire formats


@pytest.mark.parametrize(
    "wire_format",
    [azt.WireFormat.JSON_NONE, azt.WireFormat.JSON_FULL, azt.WireFormat.ATOM],
    ids=lambda f: f.name,
)
async def test_optimistic_concurrency_in_every_wire_format(
    stub: StubServer, wire_format: azt.WireFormat
) -> None:
    """No-metadata JSON carries no ETags in query results: the context derives them from
    the Timestamp, so updates stay conditional (a concurrent change still gives 412)."""
    async with azt.TableServiceClient.from_connection_string(
        stub.connection_string, wire_format=wire_format
    ) as service:
        table = fresh_name()
        await service.create_table(table)
        ctx = TableContext(service)
        ctx.add(table, Movie("p", "1", rating=1.0))
        ctx.add(table, Movie("p", "2", rating=1.0))
        await ctx.save_changes(Opt.BATCH)
        reader = TableContext(service)
        one, two = await reader.query(Movie, table).to_list()
        assert reader.etag_of(one) == ctx.etag_of(ctx.entries()[0].obj)
        one.rating = 2.0
        await reader.save_changes()  # conditional on the derived ETag, and it matches
        await service.get_table_client(table).update_entity(
            {"PartitionKey": "p", "RowKey": "2", "Rating": 9.0}
        )
        two.rating = 3.0
        with pytest.raises(SaveChangesError) as info:
            await reader.save_changes()
        assert isinstance(info.value.result[0].error, azt.PreconditionFailedError)


async def test_no_tracking_results_carry_etags_in_no_metadata_json(stub: StubServer) -> None:
    """Attaching a NO_TRACKING result with its own ETag (the seed's way to update it) must
    stay conditional in no-metadata JSON too, where the answer carries no ETag."""
    async with azt.TableServiceClient.from_connection_string(
        stub.connection_string, wire_format=azt.WireFormat.JSON_NONE
    ) as service:
        table = fresh_name()
        await service.create_table(table)
        raw = service.get_table_client(table)
        await raw.insert_entity({"PartitionKey": "p", "RowKey": "1", "Rating": 1.0})
        await raw.insert_entity({"PartitionKey": "p", "RowKey": "2", "Rating": 1.0})
        ctx = TableContext(service, merge_option=MergeOption.NO_TRACKING)
        queried = await ctx.query(Movie, table).where(Movie.RowKey == "1").first()
        got = await ctx.get(Movie, table, "p", "2", ignore_resource_not_found=False)
        assert queried is not None
        for m in (queried, got):
            assert ctx.state_of(m) is S.DETACHED
            assert m.ETag is not None
            ctx.attach(table, m, m.ETag)
            await raw.update_entity({"PartitionKey": "p", "RowKey": m.RowKey, "Rating": 9.0})
            m.rating = 2.0
            with pytest.raises(SaveChangesError) as info:
                await ctx.save_changes()  # conditional: the concurrent change is detected
            assert isinstance(info.value.result[0].error, azt.PreconditionFailedError)
            ctx.detach(m)
        stored = await raw.list_entities().to_list()
        assert [r["Rating"] for r in stored] == [9.0, 9.0]


async def test_unexpected_error_in_a_concurrent_save_leaves_nothing_running(
    service: azt.TableServiceClient, table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An error that is not a service answer (here a bug in a send) propagates as itself,
    and the save's other requests are cancelled: nothing changes in the context after
    save_changes() has raised."""
    insert_entity = azt.TableClient.insert_entity
    submit_transaction = azt.TableClient.submit_transaction

    async def insert(self: azt.TableClient, entity: Any, **kw: Any) -> Any:
        if entity["RowKey"] == "boom":
            raise RuntimeError("boom")
        await asyncio.sleep(0.05)
        return await insert_entity(self, entity, **kw)

    async def submit(self: azt.TableClient, tx: Any) -> Any:
        if len(tx) == 1:
            raise RuntimeError("boom")
        await asyncio.sleep(0.05)
        return await submit_transaction(self, tx)

    monkeypatch.setattr(azt.TableClient, "insert_entity", insert)
    monkeypatch.setattr(azt.TableClient, "submit_transaction", submit)
    for options in (Opt.CONTINUE_ON_ERROR, Opt.BATCH):
        ctx = TableContext(service)
        ms = [Movie(pk, rk) for pk in ("p", "q") for rk in ("a", "b")]
        ms.insert(1, Movie("boom", "boom"))  # in a transaction of its own
        for m in ms:
            ctx.add(table, m)
        with pytest.raises(RuntimeError, match="boom"):
            await ctx.save_changes(options, max_concurrency=4)
        await asyncio.sleep(0.2)  # anything left running would have finished by now
        assert [ctx.state_of(m) for m in ms] == [S.ADDED] * 5
        assert ctx.has_changes
    assert await service.get_table_client(table).list_entities().to_list() == []
