"""The client, query and context scenarios, each run with the async API, the blocking API
and the blocking API inside a running event loop (``tests/sync/flavors.py``): same
calls, same results, same errors."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

import azt
from azt.testing import unique_table_name
from tests.sync.flavors import FLAVORS, Api, run

pytestmark = pytest.mark.parametrize("flavor", FLAVORS)


class Movie(azt.Entity):
    rating: azt.Prop[float] = azt.prop(default=0.0)
    year: azt.Prop[int] = azt.prop(default=2000)


#: The table the entity class names (one fresh name per test run); each flavor writes its
#: own partition of it.
REVIEWS = unique_table_name("syrev")


class Review(azt.Entity, table=REVIEWS):
    stars: azt.Prop[int] = azt.prop(default=0)
    text: azt.Prop[str] = azt.prop(default="")


def movie(pk: str, rk: str, rating: float, year: int = 2000) -> dict[str, Any]:
    return {"PartitionKey": pk, "RowKey": rk, "rating": rating, "year": year}


def test_tables(flavor: str, azt_connection_string: str) -> None:
    name = unique_table_name("sy")

    async def scenario(api: Api) -> None:
        async with api.open(
            api.TableServiceClient.from_connection_string(azt_connection_string)
        ) as service:
            table = await api(service.create_table(name))
            assert table.table_name == name
            assert await api(service.create_table_if_not_exists(name)) is not None
            with pytest.raises(azt.TableAlreadyExistsError):
                await api(service.create_table(name))
            assert name in await api.list(service.list_tables())
            found = await api(
                service.query_tables("TableName eq @n", parameters={"n": name}).to_list()
            )
            assert found == [name]
            assert await api(service.delete_table_if_exists(name)) is True
            assert await api(service.delete_table_if_exists(name)) is False
            with pytest.raises(azt.TableNotFoundError):
                await api(service.delete_table(name))
        assert service.closed
        with pytest.raises(azt.ClientClosedError):
            await api(service.create_table(name))

    run(flavor, scenario)


def test_entities(flavor: str, azt_connection_string: str) -> None:
    name = unique_table_name("sy")

    async def scenario(api: Api) -> None:
        async with api.open(
            api.TableClient.from_connection_string(azt_connection_string, name)
        ) as table:
            await api(table.create_table())
            written = await api(table.insert_entity(movie("A", "heat", 4.5)))
            assert isinstance(written, azt.WriteResult)
            assert written.etag is not None
            with pytest.raises(azt.EntityAlreadyExistsError):
                await api(table.insert_entity(movie("A", "heat", 1.0)))
            got = await api(table.get_entity("A", "heat"))
            assert isinstance(got, azt.TableEntity)
            assert got["rating"] == 4.5
            assert got.metadata.etag == written.etag
            await api(table.update_entity({"PartitionKey": "A", "RowKey": "heat", "n": 1}))
            merged = await api(table.get_entity("A", "heat", select=["rating", "n"]))
            assert (merged["rating"], merged["n"]) == (4.5, 1)
            with pytest.raises(azt.PreconditionFailedError):
                await api(
                    table.update_entity(
                        movie("A", "heat", 2.0), azt.UpdateMode.REPLACE, etag=written.etag
                    )
                )
            await api(table.upsert_entity(movie("A", "heat", 2.0), azt.UpdateMode.REPLACE))
            replaced = await api(table.get_entity("A", "heat"))
            assert "n" not in replaced
            assert replaced["rating"] == 2.0
            await api(table.delete_entity("A", "heat"))
            with pytest.raises(azt.EntityNotFoundError):
                await api(table.get_entity("A", "heat"))
            quick = table.with_options(server_timeout=5)
            assert quick.server_timeout == 5
            await api(quick.upsert_entity(movie("A", "x", 1.0)))
            await api(table.delete_table())

    run(flavor, scenario)


def test_pagers(flavor: str, azt_connection_string: str) -> None:
    name = unique_table_name("sy")

    async def scenario(api: Api) -> None:
        service = api.TableServiceClient.from_connection_string(azt_connection_string)
        try:
            table = await api(service.create_table(name))
            for i in range(7):
                await api(table.upsert_entity(movie("P", f"{i:02d}", float(i))))
            await api(table.upsert_entity(movie("Q", "00", 9.0)))
            pager = table.query_entities(
                "PartitionKey eq @pk and rating ge @r",
                parameters={"pk": "P", "r": 2},
                results_per_page=2,
            )
            pages = await api.list(pager.by_page())
            assert [len(p) for p in pages] == [2, 2, 1]
            assert pages[-1].continuation is None
            assert [e["RowKey"] for e in await api.list(pager)] == ["02", "03", "04", "05", "06"]
            first = await api(pager.first_page())
            assert first.continuation is not None
            rest = await api.list(pager.by_page(str(first.continuation)))
            assert [e["RowKey"] for p in rest for e in p] == ["04", "05", "06"]
            keys = await api(
                table.query_entities(
                    page_decoder=lambda rows: [(r["PartitionKey"], r["RowKey"]) for r in rows]
                ).to_list()
            )
            assert keys[-1] == ("Q", "00")
            assert len(keys) == 8
            assert len(await api(table.list_entities(select=["rating"]).to_list())) == 8
            with pytest.raises(azt.ValidationError):
                table.query_entities(results_per_page=0)
        finally:
            await api(service.delete_table_if_exists(name))
            await api.close(service)

    run(flavor, scenario)


def test_transactions(flavor: str, azt_connection_string: str) -> None:
    name = unique_table_name("sy")

    async def scenario(api: Api) -> None:
        async with api.open(
            api.TableClient.from_connection_string(azt_connection_string, name)
        ) as table:
            await api(table.create_table())
            batch = table.batch()
            for i in range(100):
                batch.create(movie("B", f"{i:03d}", float(i)))
            results = await api(table.submit_transaction(batch))
            assert len(results) == 100
            assert all(isinstance(r, azt.WriteResult) for r in results)
            again = table.batch()
            again.upsert(movie("B", "500", 1.0))
            again.create(movie("B", "000", 1.0))  # exists: the whole batch fails
            with pytest.raises(azt.TransactionError) as caught:
                await api(table.submit_transaction(again))
            assert caught.value.index == 1
            assert isinstance(caught.value.error, azt.EntityAlreadyExistsError)
            with pytest.raises(azt.EntityNotFoundError):
                await api(table.get_entity("B", "500"))
            ops = [azt.BatchOperation("delete", movie("B", f"{i:03d}", 0.0)) for i in range(3)]
            await api(table.submit_transaction(ops))
            assert len(await api(table.list_entities().to_list())) == 97
            await api(table.delete_table())

    run(flavor, scenario)


def test_access_policies_and_service_properties(flavor: str, azt_connection_string: str) -> None:
    name = unique_table_name("sy")

    async def scenario(api: Api) -> None:
        async with api.open(
            api.TableServiceClient.from_connection_string(azt_connection_string)
        ) as service:
            table = await api(service.create_table(name))
            assert await api(table.get_access_policy()) == {}
            policy = azt.AccessPolicy(
                permission="r",
                start=datetime(2030, 1, 1, tzinfo=UTC),
                expiry=datetime(2030, 1, 2, tzinfo=UTC),
            )
            await api(table.set_access_policy({"readers": policy}))
            got = await api(table.get_access_policy())
            assert got["readers"].permission == "r"
            with pytest.raises(azt.ValidationError, match="at most 5"):
                await api(table.set_access_policy({f"p{i}": None for i in range(6)}))
            original = await api(service.get_service_properties())
            assert isinstance(original, azt.ServiceProperties)
            rule = azt.CorsRule(
                allowed_origins=["https://example.com"],
                allowed_methods=["GET"],
                max_age_in_seconds=5,
            )
            try:
                await api(service.set_service_properties(azt.ServiceProperties(cors=[rule])))
                assert (await api(service.get_service_properties())).cors == (rule,)
            finally:
                await api(service.set_service_properties(original))
            stats = await api(service.get_service_stats())
            assert stats.geo_replication.status in ("live", "bootstrap", "unavailable")
            await api(service.delete_table(name))

    run(flavor, scenario)


def test_orm_queries(flavor: str, azt_connection_string: str) -> None:
    name = unique_table_name("sy")

    async def scenario(api: Api) -> None:
        async with api.open(
            api.TableClient.from_connection_string(azt_connection_string, name)
        ) as table:
            await api(table.create_table())
            for i in range(6):
                await api(table.upsert_entity(movie("Action", f"m{i}", float(i), 1990 + i)))
            await api(table.upsert_entity(movie("Drama", "d0", 5.0)))
            query = api.Query(Movie, table)
            good = query.where(Movie.rating >= 3)
            assert [m.RowKey for m in await api.list(good)] == ["m3", "m4", "m5", "d0"]
            listed = await api(good.where(Movie.PartitionKey == "Action").to_list())
            assert all(isinstance(m, Movie) for m in listed)
            assert [m.year for m in listed] == [1993, 1994, 1995]
            assert len(await api(query.take(2).to_list())) == 2
            pages = await api.list(query.page_size(4).pages())
            assert [len(p.items) for p in pages] == [4, 3]
            resumed = await api.list(query.page_size(4).pages(pages[0].continuation))
            assert [len(p.items) for p in resumed] == [3]
            first = await api(query.where(Movie.PartitionKey == "Drama").first())
            assert first is not None
            assert first.RowKey == "d0"
            assert await api(query.where(Movie.rating > 100).one_or_none()) is None
            with pytest.raises(azt.MultipleResultsError):
                await api(query.one_or_none())
            assert query.explain().kind is azt.PlanKind.FULL_SCAN
            # Leaving an iteration early closes it (no warning, no stuck page fetch).
            for m in await api.list(query):
                if m.RowKey == "m1":
                    break
            unbound = api.Query(Movie).using(table)
            assert len(await api(unbound.to_list())) == 7
            await api(table.delete_table())

    run(flavor, scenario)


def test_context(flavor: str, azt_connection_string: str) -> None:
    name = unique_table_name("sy")

    async def scenario(api: Api) -> None:
        async with api.open(
            api.TableServiceClient.from_connection_string(azt_connection_string)
        ) as service:
            await api(service.create_table(name))
            ctx = api.TableContext(service)
            assert ctx.service.endpoint == service.endpoint
            for i in range(3):
                ctx.add(name, Movie("Action", f"m{i}", rating=float(i)))
            assert ctx.has_changes
            result = await api(ctx.save_changes())
            assert isinstance(result, azt.SaveChangesResult)
            assert not ctx.has_changes
            heat = await api(ctx.get(Movie, name, "Action", "m1"))
            assert ctx.state_of(heat) is azt.EntityState.UNCHANGED
            heat.rating = 9.5
            ctx.update(heat)
            assert ctx.state_of(heat) is azt.EntityState.MODIFIED
            await api(ctx.save_changes(azt.SaveChangesOptions.BATCH))
            cq = ctx.query(Movie, name).where(Movie.rating > 1)
            found = await api.list(cq)
            assert [m.RowKey for m in found] == ["m1", "m2"]
            assert found[0] is heat  # the identity map
            assert (await api(cq.first())) is heat
            pages = await api.list(ctx.query(Movie, name).page_size(2).pages())
            assert [len(p.items) for p in pages] == [2, 1]
            ctx.delete(heat)
            await api(ctx.save_changes())
            with pytest.raises(azt.EntityNotFoundError):
                await api(ctx.get(Movie, name, "Action", "m1"))
            ctx.ignore_resource_not_found = True
            assert await api(ctx.get(Movie, name, "Action", "m1")) is None
            other = api.TableContext(service)
            other.add(name, Movie("Action", "m0"))  # exists: the save fails, typed
            with pytest.raises(azt.SaveChangesError):
                await api(other.save_changes())
            await api(service.delete_table(name))

    run(flavor, scenario)


def test_same_errors_for_bad_input(flavor: str, azt_connection_string: str) -> None:
    async def scenario(api: Api) -> None:
        with pytest.raises(azt.ValidationError, match="invalid table name"):
            api.TableClient.from_connection_string(azt_connection_string, "no-dashes")
        with pytest.raises(azt.ConnectionStringError):
            api.TableServiceClient.from_connection_string("nonsense")
        async with api.open(
            api.TableClient.from_connection_string(azt_connection_string, "missing" + "x" * 8)
        ) as table:
            with pytest.raises(azt.ValidationError):
                await api(table.upsert_entity({"PartitionKey": "a/b", "RowKey": str(uuid.uuid4())}))
            with pytest.raises(azt.TableNotFoundError):
                await api(table.get_entity("a", "b"))

    run(flavor, scenario)


def test_entity_objects(flavor: str, azt_connection_string: str) -> None:
    """Entity objects wherever the client takes an entity, with the ETag and Timestamp
    written back; ``entity_class=`` reads; a replace of a partial object is refused."""

    async def scenario(api: Api) -> None:
        async with api.open(
            api.TableServiceClient.from_connection_string(azt_connection_string)
        ) as service:
            table = await api(service.create_table_if_not_exists(REVIEWS))
            review = Review(flavor, "r1", stars=3, text="fine")
            assert review.ETag is None
            written = await api(table.insert_entity(review))
            assert review.ETag == written.etag
            assert review.Timestamp == written.timestamp
            assert review.Timestamp is not None
            got = await api(table.get_entity(flavor, "r1", entity_class=Review))
            assert isinstance(got, Review)
            assert (got.stars, got.text, got.ETag) == (3, "fine", review.ETag)
            got.stars = 4
            await api(table.update_entity(got))  # If-Match: got.ETag
            assert got.ETag != review.ETag
            review.stars = 1
            with pytest.raises(azt.PreconditionFailedError):
                await api(table.update_entity(review))  # its ETag is stale: nothing lost
            assert (await api(table.get_entity(flavor, "r1")))["stars"] == 4
            partial = await api(
                table.get_entity(flavor, "r1", select=["stars"], entity_class=Review)
            )
            with pytest.raises(azt.PropertyLossError):
                await api(table.update_entity(partial, azt.UpdateMode.REPLACE))
            assert (await api(table.get_entity(flavor, "r1")))["text"] == "fine"
            await api(
                table.update_entity(partial, azt.UpdateMode.REPLACE, allow_property_loss=True)
            )
            assert "text" not in await api(table.get_entity(flavor, "r1"))
            bag = azt.DynamicEntity(flavor, "r2", mood="good")
            await api(table.upsert_entity(bag))
            assert bag.ETag is not None
            dyn = await api(table.get_entity(flavor, "r2", entity_class=azt.DynamicEntity))
            assert isinstance(dyn, azt.DynamicEntity)
            assert dyn["mood"] == "good"
            await api(table.delete_entity(dyn))
            with pytest.raises(azt.PreconditionFailedError):
                await api(table.delete_entity(review))  # stale ETag
            await api(table.delete_entity(partial))
            with pytest.raises(azt.EntityNotFoundError):
                await api(table.get_entity(flavor, "r1"))

    run(flavor, scenario)


def test_query_conveniences(flavor: str, azt_connection_string: str) -> None:
    """``Query(Review, service)`` reads the table the class names; ``count``,
    ``first_page`` and ``delete`` (with ``dry_run``)."""

    async def scenario(api: Api) -> None:
        async with api.open(
            api.TableServiceClient.from_connection_string(azt_connection_string)
        ) as service:
            table = await api(service.create_table_if_not_exists(REVIEWS))
            batch = table.batch()
            for i in range(7):
                batch.create(Review(flavor, f"r{i}", stars=i % 3))
            await api(table.submit_transaction(batch))
            mine = api.Query(Review, service).where(Review.PartitionKey == flavor)
            assert mine.table_name == REVIEWS
            assert await api(mine.count()) == 7
            assert await api(mine.take(5).count()) == 5
            page = await api(mine.page_size(3).first_page())
            assert [r.RowKey for r in page.items] == ["r0", "r1", "r2"]
            assert page.continuation is not None
            after = await api(mine.page_size(3).first_page(page.continuation))
            assert [r.RowKey for r in after.items] == ["r3", "r4", "r5"]
            named = api.Query(Review, "reviews").using(service)
            assert named.table_name == "reviews"  # a given name wins over the class's
            by_name = api.Query(Review, REVIEWS).using(service)
            assert await api(by_name.where(Review.PartitionKey == flavor).count()) == 7
            zero = mine.where(Review.stars == 0)
            would = await api(zero.delete(dry_run=True))
            assert sorted(r.RowKey for r in would) == ["r0", "r3", "r6"]
            assert await api(mine.count()) == 7
            deleted = await api(zero.delete())
            assert all(isinstance(r, Review) for r in deleted)
            assert sorted(r.RowKey for r in deleted) == ["r0", "r3", "r6"]
            assert (
                await api(api.Query(Review, table).where(Review.PartitionKey == flavor).count())
                == 4
            )
            assert await api(zero.first_page()) is not None
            assert (await api(zero.first_page())).items == []
            with pytest.raises(azt.ValidationError):
                api.Query(Review, 42)
            await api(mine.delete())
            assert await api(mine.count()) == 0

    run(flavor, scenario)


def test_context_tables_named_by_the_class(flavor: str, azt_connection_string: str) -> None:
    """``ctx.add(review)``, ``ctx.attach(review)`` and ``ctx.query(Review)`` with no table:
    the class names it; objects carry the ETag and Timestamp after a save."""

    async def scenario(api: Api) -> None:
        async with api.open(
            api.TableServiceClient.from_connection_string(azt_connection_string)
        ) as service:
            await api(service.create_table_if_not_exists(REVIEWS))
            ctx = api.TableContext(service)
            table = service.get_table_client(REVIEWS)
            added = [Review(flavor, f"c{i}", stars=i) for i in range(3)]
            ctx.add(added[0])  # the class names the table
            ctx.add(REVIEWS, added[1])
            ctx.add(table, added[2])  # the flavor's own table client
            await api(ctx.save_changes(azt.SaveChangesOptions.BATCH))
            assert all(r.ETag is not None and r.Timestamp is not None for r in added)
            mine = ctx.query(Review).where(Review.PartitionKey == flavor)
            found = await api.list(mine)
            assert found == added
            assert found[0] is added[0]  # the identity map
            other = api.TableContext(service)
            blind = Review(flavor, "c1", stars=9, text="attached")
            other.attach(table, blind, "*")
            other.update(blind)
            await api(other.save_changes())
            stored = await api(table.get_entity(flavor, "c1"))
            assert (stored["stars"], stored["text"]) == (9, "attached")
            ctx.delete(added[1])  # its ETag is stale now: the delete fails, typed
            with pytest.raises(azt.SaveChangesError):
                await api(ctx.save_changes())
            ctx.detach(added[1])
            for review in (added[0], added[2]):
                ctx.delete(review)
            other.delete(blind)
            await api(ctx.save_changes())
            await api(other.save_changes())
            assert await api.list(ctx.query(Review).where(Review.PartitionKey == flavor)) == []

    run(flavor, scenario)
