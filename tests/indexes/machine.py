"""What the index state machines share: a stub with a fault injector, a client with short
retries, one table, and writing an entity object through the context (one by one or
BATCH), the client core or ``Query.delete``, with the failures a fault, a stale ETag or a
missing entity may cause swallowed (the invariants judge what was stored)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from hypothesis.stateful import RuleBasedStateMachine

import azt
from azt.context import SaveChangesError, SaveChangesOptions, TableContext
from azt.query import Query
from azt_server_stub import StubConfig, StubServer
from azt_server_stub.realism.faults import FaultInjector

#: what a write may raise when a fault, a stale ETag or a missing entity stops it
EXPECTED = (SaveChangesError, azt.AztError)


class IndexedTableMachine(RuleBasedStateMachine):
    """The base of the index state machines (``entity_class``: the class written;
    ``update_mode``: how the core and the context send updates)."""

    entity_class: Any  # an entity class declaring indexes
    update_mode = azt.UpdateMode.MERGE

    def __init__(self, seed: int) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.injector = FaultInjector(seed=seed)
        self.stub = StubServer(StubConfig(faults=self.injector))
        self.run(self.stub.__aenter__())
        self.service = azt.TableServiceClient.from_connection_string(
            self.stub.connection_string,
            retry=azt.RetryPolicy(max_attempts=3, base=0.001, minimum=0.001, maximum=0.005),
        )
        self.name = "ix" + uuid.uuid4().hex[:10]
        self.run(self.service.create_table(self.name))
        self.table = self.service.get_table_client(self.name)

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def teardown(self) -> None:
        self.run(self.service.aclose())
        self.run(self.stub.__aexit__(None, None, None))
        self.loop.close()

    async def _rows(self) -> list[azt.TableEntity]:
        with self.injector.suspended():
            return [e async for e in self.table.list_entities()]

    async def _read(self, pk: str, rk: str) -> Any:
        with self.injector.suspended():
            try:
                return await self.table.get_entity(pk, rk, entity_class=self.entity_class)
            except azt.EntityNotFoundError:
                return None

    async def _write(self, way: str, action: str, obj: Any, **changes: Any) -> None:
        for k, v in changes.items():
            setattr(obj, k, v)
        try:
            if way == "core":
                if action == "insert":
                    await self.table.insert_entity(obj)
                elif action == "update":
                    await self.table.update_entity(obj, mode=self.update_mode)
                else:
                    await self.table.delete_entity(obj)
                return
            ctx = TableContext(self.service)
            if action == "insert":
                ctx.add(self.name, obj)
            else:
                ctx.attach(self.name, obj, obj.ETag)
                if action == "update":
                    ctx.update(obj)
                else:
                    ctx.delete(obj)
            opts = SaveChangesOptions.NONE
            if self.update_mode is azt.UpdateMode.REPLACE:
                opts |= SaveChangesOptions.REPLACE_ON_UPDATE
            if way == "batch":
                opts |= SaveChangesOptions.BATCH
            await ctx.save_changes(opts)
        except EXPECTED:
            pass
        finally:
            self.injector.clear()

    def _delete_by_query(self, pk: str, rk: str) -> None:
        cls = self.entity_class
        q = Query(cls, self.table).where(cls.PartitionKey == pk, cls.RowKey == rk)
        try:
            self.run(q.delete())
        except EXPECTED:
            pass
        finally:
            self.injector.clear()
