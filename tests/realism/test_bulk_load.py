"""Bulk loads with the azt client while the stub injects 20 % ServerBusy and drops
connections before and after applying writes: the table ends with exactly the entities
sent, none lost, none duplicated, none altered."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import Any

import azt
from azt_server_stub.realism.faults import FaultInjector, FaultKind
from tests.realism.support import RunningStub, realism_stub, table_client

N_PARTITIONS = 50
ROWS = 100  # 5,000 entities
BATCH = 20  # operations per entity group transaction (250 transactions)


def entities() -> list[dict[str, Any]]:
    return [
        {"PartitionKey": f"p{p:03d}", "RowKey": f"r{r:03d}", "P": p, "R": r, "Tag": f"{p}/{r}"}
        for p in range(N_PARTITIONS)
        for r in range(ROWS)
    ]


RATES = {FaultKind.BUSY: 0.2, FaultKind.DROP_BEFORE: 0.05, FaultKind.DROP_AFTER: 0.05}


def chaos(seed: int) -> FaultInjector:
    """20 % 503 ServerBusy on every request, 5 % drops before and 5 % after applying writes."""
    inj = FaultInjector(seed=seed)
    inj.fail_rate(FaultKind.BUSY, RATES[FaultKind.BUSY])
    inj.fail_rate(FaultKind.DROP_BEFORE, RATES[FaultKind.DROP_BEFORE], only="writes")
    inj.fail_rate(FaultKind.DROP_AFTER, RATES[FaultKind.DROP_AFTER], only="writes")
    return inj


def assert_injected_at_the_rates(
    inj: FaultInjector, *, slack: float, at_least: int, only_writes: bool
) -> None:
    """Each rule fired at its configured rate (within ``slack``) over the requests it saw,
    at least ``at_least`` times; the injector's totals are exactly the rules' counts; the
    drop rules saw exactly the writes the 503 rule let through (all of the requests, when
    ``only_writes``)."""
    assert set(inj.counters) == set(RATES)
    for rule in inj.rules:
        assert rule.rate == RATES[rule.kind]
        assert rule.injected >= at_least, (rule.describe(), rule.injected)
        assert abs(rule.injected / rule.seen - RATES[rule.kind]) <= slack, (
            rule.describe(),
            rule.injected,
            rule.seen,
        )
        assert inj.counters[rule.kind] == rule.injected
    busy, before, after = inj.rules
    passed = busy.seen - busy.injected
    assert before.seen == passed if only_writes else before.seen < passed
    assert after.seen == before.seen - before.injected


async def gather_limited(jobs: Sequence[Awaitable[Any]], limit: int) -> list[Any]:
    gate = asyncio.Semaphore(limit)

    async def run(job: Awaitable[Any]) -> Any:
        async with gate:
            return await job

    return await asyncio.gather(*(run(j) for j in jobs))


async def assert_table_holds_exactly(
    stub: RunningStub, inj: FaultInjector, name: str, sent: list[dict[str, Any]]
) -> None:
    with inj.suspended():
        async with table_client(stub, name) as table:
            stored = await table.list_entities().to_list()
    keys = [(e["PartitionKey"], e["RowKey"]) for e in stored]
    assert len(keys) == len(set(keys)) == len(sent)
    by_key = {(e["PartitionKey"], e["RowKey"]): e for e in stored}
    for e in sent:
        got = by_key[(e["PartitionKey"], e["RowKey"])]
        assert {k: got[k] for k in e} == e
        assert set(got) == set(e)  # nothing else was stored
    # and the backend agrees entity for entity, without the HTTP layer in between
    raw: list[dict[str, Any]] = []
    start = None
    while True:
        page = stub.backend.query_entities("devstoreaccount1", name, None, None, start)
        raw += [
            {"PartitionKey": e.pk, "RowKey": e.rk, **{k: v for k, (_, v) in e.props.items()}}
            for e in page.entities
        ]
        if page.next_key is None:
            break
        start = page.next_key
    assert raw == sent  # same order (sent is sorted by key), same values, nothing else


async def test_batched_bulk_load_of_5000_under_busy_and_drops() -> None:
    """Entity group transactions of upserts: a retried batch simply re-applies."""
    inj = chaos(seed=20240601)
    sent = entities()
    async with realism_stub(faults=inj) as stub:
        with inj.suspended():
            async with table_client(stub, "bulkbatch") as table:
                await table.create_table()
        async with table_client(stub, "bulkbatch") as table:

            async def load(start: int) -> list[azt.WriteResult]:
                batch = table.batch()
                for e in sent[start : start + BATCH]:
                    batch.upsert(e, azt.UpdateMode.REPLACE)
                return await table.submit_transaction(batch)

            results = await gather_limited([load(i) for i in range(0, len(sent), BATCH)], 8)
        assert [len(r) for r in results] == [BATCH] * (len(sent) // BATCH)
        await assert_table_holds_exactly(stub, inj, "bulkbatch", sent)
    # the faults did happen, at the configured rates (about 330 requests; fixed seed)
    assert_injected_at_the_rates(inj, slack=0.05, at_least=5, only_writes=True)
    assert inj.rules[0].seen >= len(sent) // BATCH + inj.counters.total()


async def test_entity_by_entity_bulk_load_of_5000_under_busy_and_drops() -> None:
    """Single inserts: the client retries, and resolves "409 after a lost answer" by reading
    the entity back (AmbiguousOutcomePolicy.ASSUME_SUCCEEDED)."""
    inj = chaos(seed=7)
    sent = entities()
    async with realism_stub(faults=inj) as stub:
        with inj.suspended():
            async with table_client(stub, "bulksingle") as table:
                await table.create_table()
        policy = azt.AmbiguousOutcomePolicy.ASSUME_SUCCEEDED
        async with table_client(stub, "bulksingle", policy=policy) as table:
            results: list[azt.WriteResult] = await gather_limited(
                [table.insert_entity(e) for e in sent], 32
            )
        await assert_table_holds_exactly(stub, inj, "bulksingle", sent)
    resolved = sum(r.ambiguity_resolved for r in results)
    drops_after = inj.counters[FaultKind.DROP_AFTER]
    # about 8,000 requests: the rates hold closely
    assert_injected_at_the_rates(inj, slack=0.015, at_least=200, only_writes=False)
    # every insert whose answer was lost after it was applied came back as a conflict that
    # the client verified; a drop after a *refused* retry adds to drops but not resolutions
    assert 0 < resolved <= drops_after
    assert all(r.etag for r in results)
