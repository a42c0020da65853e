"""Ambiguous outcomes with the azt client: the stub applies a write and loses the answer
(a dropped connection or ``500 OperationTimedOut`` after applying), the client retries and
meets its own write; each ``AmbiguousOutcomePolicy`` reports it as the client specifies.
Faults that refuse a request before applying it are retried transparently."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

import azt
from azt_server_stub.realism.faults import FaultInjector, FaultKind
from tests.realism.support import RunningStub, realism_stub, table_client

POLICY = azt.AmbiguousOutcomePolicy
ENTITY: dict[str, Any] = {"PartitionKey": "p", "RowKey": "r", "Size": 3, "Name": "three"}


@asynccontextmanager
async def stub_with_table(name: str) -> AsyncIterator[tuple[RunningStub, FaultInjector]]:
    inj = FaultInjector()
    async with realism_stub(faults=inj) as stub:
        async with table_client(stub, name) as table:
            await table.create_table()
        yield stub, inj


async def stored(stub: RunningStub, name: str) -> list[azt.TableEntity]:
    async with table_client(stub, name) as table:
        return await table.list_entities().to_list()


# --- insert --------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", [FaultKind.DROP_AFTER, FaultKind.TIMEOUT_AFTER])
async def test_insert_applied_then_lost_raises_ambiguous_by_default(kind: FaultKind) -> None:
    async with stub_with_table("ambins") as (stub, inj):
        rule = inj.fail_next(kind, 1, methods=["POST"], table="ambins")
        async with table_client(stub, "ambins") as table:
            with pytest.raises(azt.AmbiguousOutcomeError) as info:
                await table.insert_entity(ENTITY)
        err = info.value
        assert isinstance(err.error, azt.EntityAlreadyExistsError)
        assert err.error.status == 409
        assert err.attempts == 2
        assert err.error.earlier_attempt_may_have_applied
        assert "insert_entity('p', 'r')" in str(err)
        assert rule.injected == 1
        assert [
            (e["PartitionKey"], e["RowKey"], e["Size"]) for e in await stored(stub, "ambins")
        ] == [("p", "r", 3)]


async def test_insert_applied_then_lost_is_resolved_by_reading_back() -> None:
    async with stub_with_table("ambres") as (stub, inj):
        inj.fail_next(FaultKind.DROP_AFTER, 1, methods=["POST"])
        async with table_client(stub, "ambres", policy=POLICY.ASSUME_SUCCEEDED) as table:
            result = await table.insert_entity(ENTITY)
            entity = await table.get_entity("p", "r")
        assert result.ambiguity_resolved
        assert result.etag == entity.metadata.etag
        assert inj.counters == {FaultKind.DROP_AFTER: 1}


async def test_insert_applied_then_lost_under_report_error() -> None:
    async with stub_with_table("ambrep") as (stub, inj):
        inj.fail_next(FaultKind.DROP_AFTER, 1, methods=["POST"])
        async with table_client(stub, "ambrep", policy=POLICY.REPORT_ERROR) as table:
            with pytest.raises(azt.EntityAlreadyExistsError) as info:
                await table.insert_entity(ENTITY)
        assert info.value.earlier_attempt_may_have_applied
        assert info.value.attempts == 2


async def test_resolution_refuses_somebody_elses_entity() -> None:
    """A dropped-before insert whose retry meets a *different* entity is a real conflict."""
    async with stub_with_table("ambother") as (stub, inj):
        async with table_client(stub, "ambother") as table:
            await table.insert_entity({**ENTITY, "Size": 99})
        inj.fail_next(FaultKind.DROP_BEFORE, 1, methods=["POST"])
        async with table_client(stub, "ambother", policy=POLICY.ASSUME_SUCCEEDED) as table:
            with pytest.raises(azt.EntityAlreadyExistsError):
                await table.insert_entity(ENTITY)
        assert [e["Size"] for e in await stored(stub, "ambother")] == [99]


@pytest.mark.parametrize(
    "kind",
    [FaultKind.DROP_BEFORE, FaultKind.BUSY, FaultKind.TIMEOUT, FaultKind.INTERNAL_ERROR],
)
async def test_insert_refused_before_applying_is_retried_cleanly(kind: FaultKind) -> None:
    async with stub_with_table("ambclean") as (stub, inj):
        inj.fail_next(kind, 2, methods=["POST"])
        async with table_client(stub, "ambclean") as table:
            result = await table.insert_entity(ENTITY)
        assert not result.ambiguity_resolved
        assert result.status == 204
        assert inj.counters == {kind: 2}
        assert len(await stored(stub, "ambclean")) == 1


async def test_insert_gives_up_after_the_policy_attempts() -> None:
    async with stub_with_table("ambgiveup") as (stub, inj):
        inj.fail_rate(FaultKind.BUSY, 1.0, methods=["POST"])
        retry = azt.RetryPolicy(max_attempts=3, base=0.001, minimum=0.0, maximum=0.002)
        async with table_client(stub, "ambgiveup", retry=retry) as table:
            with pytest.raises(azt.ServerBusyError) as info:
                await table.insert_entity(ENTITY)
        assert info.value.attempts == 3
        assert not info.value.earlier_attempt_may_have_applied  # 503: certainly not applied
        assert inj.counters == {FaultKind.BUSY: 3}
        inj.clear()
        assert await stored(stub, "ambgiveup") == []


# --- delete ------------------------------------------------------------------------------


async def test_delete_applied_then_lost() -> None:
    async with stub_with_table("ambdel") as (stub, inj):
        async with table_client(stub, "ambdel") as table:
            for rk in ("1", "2", "3"):
                await table.insert_entity({"PartitionKey": "p", "RowKey": rk})
        # RAISE: AmbiguousOutcomeError carrying the 404
        inj.fail_next(FaultKind.DROP_AFTER, 1, methods=["DELETE"])
        async with table_client(stub, "ambdel") as table:
            with pytest.raises(azt.AmbiguousOutcomeError) as info:
                await table.delete_entity("p", "1")
        assert isinstance(info.value.error, azt.EntityNotFoundError)
        assert info.value.attempts == 2
        # ASSUME_SUCCEEDED: the delete is reported done
        inj.fail_next(FaultKind.TIMEOUT_AFTER, 1, methods=["DELETE"])
        async with table_client(stub, "ambdel", policy=POLICY.ASSUME_SUCCEEDED) as table:
            result = await table.delete_entity("p", "2")
        assert result.ambiguity_resolved
        assert result.status == 204
        # REPORT_ERROR: the plain 404, flagged
        inj.fail_next(FaultKind.DROP_AFTER, 1, methods=["DELETE"])
        async with table_client(stub, "ambdel", policy=POLICY.REPORT_ERROR) as table:
            with pytest.raises(azt.EntityNotFoundError) as nf:
                await table.delete_entity("p", "3")
        assert nf.value.earlier_attempt_may_have_applied
        assert await stored(stub, "ambdel") == []
        assert inj.counters == {FaultKind.DROP_AFTER: 2, FaultKind.TIMEOUT_AFTER: 1}


async def test_delete_of_a_missing_entity_is_not_ambiguous_without_a_lost_answer() -> None:
    async with stub_with_table("ambdel2") as (stub, inj):
        inj.fail_next(FaultKind.BUSY, 1, methods=["DELETE"])
        async with table_client(stub, "ambdel2", policy=POLICY.ASSUME_SUCCEEDED) as table:
            with pytest.raises(azt.EntityNotFoundError) as info:
                await table.delete_entity("p", "nothing")
        assert not info.value.earlier_attempt_may_have_applied


# --- conditional update and batch ------------------------------------------------------


async def test_conditional_update_applied_then_lost() -> None:
    async with stub_with_table("ambupd") as (stub, inj):
        async with table_client(stub, "ambupd") as table:
            first = await table.insert_entity(ENTITY)
            assert first.etag is not None
            inj.fail_next(FaultKind.DROP_AFTER, 1, methods=["PUT"])
            with pytest.raises(azt.AmbiguousOutcomeError) as info:
                await table.update_entity(
                    {**ENTITY, "Size": 4}, azt.UpdateMode.REPLACE, etag=first.etag
                )
            assert isinstance(info.value.error, azt.PreconditionFailedError)
        async with table_client(stub, "ambupd", policy=POLICY.ASSUME_SUCCEEDED) as table:
            current = await table.get_entity("p", "r")
            assert current["Size"] == 4
            inj.fail_next(FaultKind.DROP_AFTER, 1, methods=["MERGE"])
            result = await table.update_entity(
                {"PartitionKey": "p", "RowKey": "r", "Size": 5}, etag=current.metadata.etag or ""
            )
            assert result.ambiguity_resolved
            assert (await table.get_entity("p", "r"))["Size"] == 5


async def test_batch_applied_then_lost_is_always_ambiguous() -> None:
    async with stub_with_table("ambbatch") as (stub, inj):
        for policy in (POLICY.RAISE, POLICY.ASSUME_SUCCEEDED):
            inj.fail_next(FaultKind.DROP_AFTER, 1, methods=["POST"])
            async with table_client(stub, "ambbatch", policy=policy) as table:
                batch = table.batch()
                for i in range(3):
                    batch.create({"PartitionKey": policy.value, "RowKey": str(i)})
                with pytest.raises(azt.AmbiguousOutcomeError) as info:
                    await table.submit_transaction(batch)
            assert isinstance(info.value.error, azt.TransactionError)
            assert isinstance(info.value.error.error, azt.EntityAlreadyExistsError)
        rows = await stored(stub, "ambbatch")
        assert len(rows) == 6  # both batches were applied exactly once


async def test_client_timeout_while_the_server_is_slow() -> None:
    """The first attempt is held by injected latency past the client's timeout; the retry
    inserts; the late first attempt then meets the retry's entity. Exactly one entity."""
    release = asyncio.Event()
    held: list[float] = []

    async def hold(seconds: float) -> None:
        held.append(seconds)
        await release.wait()

    inj = FaultInjector(sleep=hold)
    async with realism_stub(faults=inj) as stub:
        async with table_client(stub, "slow") as table:
            await table.create_table()
        inj.add("latency=30s:next=1@method=POST")  # ``hold`` waits for the test instead
        async with azt.TableClient.from_connection_string(
            stub.connection_string,
            "slow",
            retry=azt.RetryPolicy(max_attempts=3, base=0.001, minimum=0.0, maximum=0.002),
            timeouts=azt.Timeouts(total=0.3),
        ) as table:
            result = await table.insert_entity(ENTITY)
            assert result.status == 204
            assert not result.ambiguity_resolved
            release.set()
            await asyncio.sleep(0)
        assert held == [30.0]
        assert len(await stored(stub, "slow")) == 1
