"""The unit of work with entity classes whose keys have domain names: tracking by keys
(the identity map), minimal merges, ETags and batches against the in-process stub."""

from __future__ import annotations

import pytest

import azt
from azt.context import EntityState, IdentityConflictError, SaveChangesOptions, TableContext
from azt.entity import EntityBase, Prop, partition_key, prop, row_key

from .conftest import entity_exists, stored_entity

S = EntityState


class Account(EntityBase):
    """PartitionKey tenant, RowKey account_id."""

    tenant: Prop[str] = partition_key()
    account_id: Prop[str] = row_key()
    balance: Prop[int] = prop(name="Balance", default=0)
    owner: Prop[str | None] = prop(default=None)


async def test_add_query_edit_save(service: azt.TableServiceClient, table: str) -> None:
    ctx = TableContext(service)
    a = Account(tenant="t1", account_id="a1", balance=10, owner="ann")
    ctx.add(table, a)
    await ctx.save_changes()
    assert ctx.state_of(a) is S.UNCHANGED
    stored = await stored_entity(service, table, "t1", "a1")
    assert dict(stored) == {"PartitionKey": "t1", "RowKey": "a1", "Balance": 10, "owner": "ann"}
    assert ctx.etag_of(a) == a.ETag == stored.metadata.etag

    # the identity map is keyed by the keys: a query returns the tracked object
    (same,) = await ctx.query(Account, table).where(Account.tenant == "t1").to_list()
    assert same is a
    got = await ctx.get(Account, table, "t1", "a1")
    assert got is a

    a.balance = 25  # found by diff: a minimal merge of Balance only
    await raw_change(service, table)  # another writer sets another property meanwhile
    with pytest.raises(azt.context.SaveChangesError):
        await ctx.save_changes()  # a's ETag is stale
    assert ctx.state_of(a) is S.MODIFIED


async def raw_change(service: azt.TableServiceClient, table: str) -> None:
    raw = service.get_table_client(table)
    await raw.update_entity({"PartitionKey": "t1", "RowKey": "a1", "owner": "bob"}, etag="*")


async def test_minimal_merge_and_delete(service: azt.TableServiceClient, table: str) -> None:
    raw = service.get_table_client(table)
    await raw.insert_entity({"PartitionKey": "t1", "RowKey": "a2", "Balance": 1, "Extra": "x"})
    ctx = TableContext(service)
    acc = await ctx.get(Account, table, "t1", "a2")
    assert acc is not None
    assert (acc.tenant, acc.account_id, acc.balance) == ("t1", "a2", 1)
    acc.balance = 2
    await ctx.save_changes()
    stored = await stored_entity(service, table, "t1", "a2")
    assert stored["Balance"] == 2
    assert stored["Extra"] == "x"  # a merge of what changed: nothing else lost
    assert acc.ETag == stored.metadata.etag

    ctx.delete(acc)
    assert ctx.state_of(acc) is S.DELETED
    await ctx.save_changes()
    assert not await entity_exists(service, table, "t1", "a2")


async def test_identity_conflict_by_domain_keys(
    service: azt.TableServiceClient, table: str
) -> None:
    ctx = TableContext(service)
    ctx.attach(table, Account(tenant="t", account_id="x"), 'W/"1"')
    with pytest.raises(IdentityConflictError):
        ctx.attach(table, Account(tenant="t", account_id="x"), 'W/"1"')
    ctx.attach(table, Account(tenant="t", account_id="y"), 'W/"1"')  # other keys: fine


async def test_batch_save(service: azt.TableServiceClient, table: str) -> None:
    ctx = TableContext(service)
    accounts = [Account(tenant="t", account_id=f"a{i:02}", balance=i) for i in range(30)]
    for acc in accounts:
        ctx.add(table, acc)
    results = await ctx.save_changes(SaveChangesOptions.BATCH)
    assert all(r.succeeded for r in results)
    assert all(acc.ETag for acc in accounts)
    for acc in accounts[:10]:
        acc.balance += 100
    for acc in accounts[10:15]:
        ctx.delete(acc)
    await ctx.save_changes(SaveChangesOptions.BATCH)
    rows = await TableContext(service).query(Account, table).where(Account.tenant == "t").to_list()
    assert len(rows) == 25
    assert [r.balance for r in rows[:10]] == [100 + i for i in range(10)]
    assert [r.account_id for r in rows[10:12]] == ["a15", "a16"]
