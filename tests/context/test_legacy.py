"""azt.legacy._dotnet against the stub: account parsing, table calls, the .NET-named context,
retries (with injected faults) and segmented queries."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

import azt
from azt.context import EntityState, SaveChangesError, TrackingError
from azt.entity import Prop, prop
from azt.legacy import (
    CloudStorageAccount,
    CloudTableClient,
    ExponentialRetry,
    MergeOption,
    NoRetry,
    RetryPolicies,
    SaveChangesOptions,
    TableServiceContext,
    TableServiceEntity,
)
from azt_server_stub import StubConfig, StubServer
from azt_server_stub.realism.faults import FaultInjector

from .conftest import fresh_name


class Film(TableServiceEntity):
    rating: Prop[float] = prop(name="Rating", default=0.0)


FAST = RetryPolicies.retry_exponential(3, 0.01, min_backoff=0.01, max_backoff=0.05)


@pytest.fixture
async def faulty() -> AsyncIterator[tuple[StubServer, FaultInjector]]:
    injector = FaultInjector(seed=3)
    async with StubServer(StubConfig(faults=injector)) as server:
        yield server, injector


@pytest.fixture
async def legacy_client(
    faulty: tuple[StubServer, FaultInjector],
) -> AsyncIterator[CloudTableClient]:
    stub, _ = faulty
    client = CloudStorageAccount.parse(stub.connection_string).create_cloud_table_client()
    client.retry_policy = FAST
    async with client:
        yield client


def test_parse_and_try_parse() -> None:
    with pytest.raises(azt.ConnectionStringError):
        CloudStorageAccount.parse("AccountName=only")
    assert CloudStorageAccount.try_parse("AccountName=only") is None
    dev = CloudStorageAccount.development_storage_account()
    assert dev.account_name == "devstoreaccount1"
    assert dev.table_endpoint.endswith("/devstoreaccount1")


def test_retry_policies() -> None:
    default = RetryPolicies.retry_exponential()
    assert default == ExponentialRetry(3, 30.0, 3.0, 90.0)  # the StorageClient's defaults
    policy = default.to_retry_policy()
    assert (policy.max_attempts, policy.base, policy.minimum, policy.maximum) == (4, 30, 3, 90)
    assert RetryPolicies.retry_exponential(2, timedelta(milliseconds=500)).delta_backoff == 0.5
    assert RetryPolicies.no_retry().to_retry_policy().max_attempts == 1
    with pytest.raises(azt.ValidationError):
        RetryPolicies.retry_exponential(-1)
    with pytest.raises(azt.ValidationError):
        RetryPolicies.retry_exponential(3, -2.0)
    with pytest.raises(azt.ValidationError):
        RetryPolicies.retry_exponential(3, 1.0, min_backoff=5.0, max_backoff=1.0)


async def test_table_calls(legacy_client: CloudTableClient) -> None:
    name = fresh_name("Legacy")
    assert not await legacy_client.does_table_exist(name)
    assert await legacy_client.create_table_if_not_exist(name) is True
    assert await legacy_client.create_table_if_not_exists(name) is False
    assert await legacy_client.does_table_exist(name)
    assert name in await legacy_client.list_tables()
    assert await legacy_client.delete_table_if_exist(name) is True
    assert await legacy_client.delete_table_if_exist(name) is False
    with pytest.raises(azt.ValidationError):
        legacy_client.retry_policy = 3  # type: ignore[assignment]


async def test_context_names_and_retries(
    legacy_client: CloudTableClient, faulty: tuple[StubServer, FaultInjector]
) -> None:
    _, injector = faulty
    name = fresh_name("Legacy")
    await legacy_client.create_table_if_not_exist(name)
    context = legacy_client.get_data_service_context()
    assert isinstance(context, TableServiceContext)
    assert context.merge_option is MergeOption.PRESERVE_CHANGES  # the legacy default
    assert context.retry_policy == FAST
    film = Film("Action", "Heat", rating=4.0)
    context.add_object(name, film)
    # save_changes sends each request once: a 503 fails the save ...
    injector.fail_next("busy", 1, methods={"POST"})
    with pytest.raises(SaveChangesError) as info:
        await context.save_changes()
    assert isinstance(info.value.result[0].error, azt.ServerBusyError)
    assert context.state_of(film) is EntityState.ADDED
    # ... save_changes_with_retries retries it
    injector.fail_next("busy", 2, methods={"POST"})
    await context.save_changes_with_retries()
    assert context.state_of(film) is EntityState.UNCHANGED
    # update_object / delete_object / detach / attach_to
    film.rating = 5.0
    context.update_object(film)
    await context.save_changes_with_retries(SaveChangesOptions.BATCH)
    context.delete_object(film)
    assert context.detach(film) is True
    context.attach_to(name, Film("Action", "Heat"), "*")
    assert len(context.entries()) == 1
    context.delete_object(context.entries()[0].obj)
    await context.save_changes()
    rows = await legacy_client.service.get_table_client(name).list_entities().to_list()
    assert rows == []


async def test_queries_segments(legacy_client: CloudTableClient) -> None:
    name = fresh_name("Legacy")
    await legacy_client.create_table_if_not_exist(name)
    context = legacy_client.get_data_service_context()
    for i in range(12):
        context.add_object(name, Film("Drama", f"{i:02d}", rating=float(i)))
    await context.save_changes_with_retries(SaveChangesOptions.BATCH)
    fresh = legacy_client.get_data_service_context()
    q = (
        fresh.create_query(Film, name)
        .where(Film.PartitionKey == "Drama", Film.rating >= 2.0)
        .page_size(4)
        .as_table_service_query()
    )
    all_films = [f async for f in q.execute()]
    assert [f.RowKey for f in all_films] == [f"{i:02d}" for i in range(2, 12)]
    assert all(fresh.state_of(f) is EntityState.UNCHANGED for f in all_films)
    segment = await q.execute_segmented()
    sizes = [len(segment.results)]
    while segment.has_more_results:
        segment = await segment.get_next()
        sizes.append(len(segment.results))
    assert sizes == [4, 4, 2]
    with pytest.raises(azt.ValidationError, match="last segment"):
        await segment.get_next()
    # the context-level spellings
    base = fresh.create_query(Film, name).where(Film.PartitionKey == "Drama").page_size(5)
    assert len([f async for f in fresh.execute(base)]) == 12
    first = await fresh.execute_segmented(base)
    assert len(first.results) == 5
    rest = await fresh.execute_segmented(base, first.continuation_token)
    assert [f.RowKey for f in rest.results] == ["05", "06", "07", "08", "09"]
    with pytest.raises(azt.ValidationError, match="this context"):
        legacy_client.get_data_service_context().as_table_service_query(base)
    # the same objects: the identity map returns tracked entities
    again = [f async for f in q.execute()]
    assert all(a is b for a, b in zip(again, all_films, strict=True))


def test_no_retry_type() -> None:
    assert NoRetry().to_retry_policy() == azt.RetryPolicy.no_retries()


def test_table_client_made_outside_a_loop_holds_nothing_open() -> None:
    """The pool opens lazily, inside the loop of the first request: making (and dropping)
    a client and contexts outside any event loop leaks nothing (warnings are errors)."""
    import gc

    client = CloudStorageAccount.development_storage_account().create_cloud_table_client()
    context = client.get_data_service_context()
    context.add_object("Movies", Film("Action", "Heat"))
    assert context.has_changes
    del context, client
    gc.collect()


async def test_table_client_async_with_closes_and_refuses_use_after(
    faulty: tuple[StubServer, FaultInjector],
) -> None:
    stub, _ = faulty
    async with CloudStorageAccount.parse(stub.connection_string).create_cloud_table_client() as c:
        name = fresh_name("Legacy")
        await c.create_table_if_not_exist(name)
        context = c.get_data_service_context()
        context.add_object(name, Film("Action", "Heat"))
        await context.save_changes()
    ronin = Film("Action", "Ronin")
    context.add_object(name, ronin)
    for save in (context.save_changes, context.save_changes_with_retries):
        with pytest.raises(azt.ClientClosedError):  # refused up front: nothing was sent
            await save()
    assert context.state_of(ronin) is EntityState.ADDED
    with pytest.raises(azt.ClientClosedError):
        await c.create_table_if_not_exist(fresh_name("Legacy"))
    await c.aclose()  # idempotent


async def test_context_retry_policy_is_its_own(
    legacy_client: CloudTableClient, faulty: tuple[StubServer, FaultInjector]
) -> None:
    """As in the StorageClient, a context takes the table client's retry policy when it is
    made and can be given its own; it governs its queries and save_changes_with_retries."""
    _, injector = faulty
    name = fresh_name("Legacy")
    await legacy_client.create_table_if_not_exist(name)
    context = legacy_client.get_data_service_context()
    assert context.retry_policy == FAST
    twin = legacy_client.get_data_service_context()
    assert twin.service is context.service  # one service client per policy, shared
    context.retry_policy = RetryPolicies.no_retry()
    assert legacy_client.retry_policy == FAST  # the table client keeps its own
    assert twin.retry_policy == FAST
    context.add_object(name, Film("Action", "Heat"))
    injector.fail_next("busy", 1, methods={"POST"})
    with pytest.raises(SaveChangesError) as info:  # no retries now
        await context.save_changes_with_retries()
    assert isinstance(info.value.result[0].error, azt.ServerBusyError)
    injector.fail_next("busy", 1, methods={"GET"})
    with pytest.raises(azt.ServerBusyError):
        await context.create_query(Film, name).to_list()
    context.retry_policy = FAST
    injector.fail_next("busy", 1, methods={"POST"})
    await context.save_changes_with_retries()
    injector.fail_next("busy", 1, methods={"GET"})
    assert len(await context.create_query(Film, name).to_list()) == 1
    # a later change of the table client's policy reaches new contexts only
    legacy_client.retry_policy = RetryPolicies.no_retry()
    assert twin.retry_policy == FAST
    assert legacy_client.get_data_service_context().retry_policy == NoRetry()
    with pytest.raises(azt.ValidationError):
        context.retry_policy = azt.RetryPolicy()  # type: ignore[assignment]


def test_exponential_retry_follows_the_storage_client_schedule() -> None:
    """StorageClient's RetryExponential waits min + (2**n - 1) * U(0.8, 1.2) * delta before
    retry n counted from 0 (PROTOCOL.md 12.2): the first retry comes after the minimum
    back-off (the seed's "3, 27 and 81 seconds ... maximum 90"), not after min + delta."""
    policy = RetryPolicies.retry_exponential().to_retry_policy()
    assert isinstance(policy, azt.RetryPolicy)
    mid = [policy.backoff(n, uniform=lambda lo, hi: (lo + hi) / 2) for n in (1, 2, 3)]
    assert mid == [3.0, 33.0, 90.0]
    low = [policy.backoff(n, uniform=lambda lo, hi: lo) for n in (1, 2, 3)]
    assert low == [3.0, 27.0, 75.0]
    quick = RetryPolicies.retry_exponential(5, 1.0, min_backoff=0.5, max_backoff=100.0)
    schedule = [quick.to_retry_policy().backoff(n, uniform=lambda lo, hi: lo) for n in (1, 4)]
    assert schedule == [0.5, 0.5 + 0.8 * 7]


async def test_does_table_exist_ignores_case(legacy_client: CloudTableClient) -> None:
    """Table names are case-insensitive (create_table_if_not_exist("MOVIES") finds
    "Movies"), so DoesTableExist must be too."""
    base = fresh_name("Legacy")
    for name in (base, base.upper() + "A", base[:-1], base + "0"):
        await legacy_client.create_table_if_not_exist(name)
    assert await legacy_client.create_table_if_not_exist(base.upper()) is False
    for probe in (base, base.upper(), base.lower(), base.swapcase()):
        assert await legacy_client.does_table_exist(probe), probe
    assert not await legacy_client.does_table_exist(base + "1")
    assert not await legacy_client.does_table_exist(base[:-2])


def test_update_object_on_a_deleted_entity_keeps_the_delete() -> None:
    """WCF's UpdateObject throws only for untracked entities; on a Deleted one it changes
    nothing (the delete is still sent). The native update() refuses it instead."""
    client = CloudStorageAccount.development_storage_account().create_cloud_table_client()
    context = client.get_data_service_context()
    film = Film("Action", "Heat")
    context.attach_to("Films", film, "*")
    context.delete_object(film)
    context.update_object(film)
    assert context.state_of(film) is EntityState.DELETED
    with pytest.raises(TrackingError, match="marked for deletion"):
        context.update(film)
    with pytest.raises(TrackingError, match="not tracking"):
        context.update_object(Film("Action", "Ronin"))


async def test_segmented_point_query_of_a_missing_entity(legacy_client: CloudTableClient) -> None:
    """A point query raises ResourceNotFound (unless ignored) whichever way it runs."""
    name = fresh_name("Legacy")
    await legacy_client.create_table_if_not_exist(name)
    context = legacy_client.get_data_service_context()
    q = context.create_query(Film, name).where(Film.PartitionKey == "A", Film.RowKey == "B")
    cloud_query = q.as_table_service_query()
    with pytest.raises(azt.EntityNotFoundError):
        await cloud_query.execute_segmented()
    with pytest.raises(azt.EntityNotFoundError):
        [f async for f in cloud_query.execute()]
    context.ignore_resource_not_found = True
    segment = await cloud_query.execute_segmented()
    assert (segment.results, segment.has_more_results) == ([], False)
