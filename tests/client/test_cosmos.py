"""The client's Cosmos DB Table API flavour: detection, client-side limits, operations
refused before sending, the 429 retry hint, and the whole client against the stub's Cosmos
flavour."""

from __future__ import annotations

import pytest

import azt
import azt.edm
from azt import Flavor, UnsupportedOperationError
from azt._core.base import validate_table_name
from azt._core.retry import BackoffWait
from azt._core.transport import HttpRequest, HttpResponse, MockTransport
from azt._errors import error_from_response
from azt_server_stub import StubConfig, StubServer
from azt_server_stub.realism.throttle import FakeClock, Throttle, ThrottleLimits

from .conftest import DEV_CREDENTIAL, ENDPOINT, Sleeps

COSMOS_URL = "https://acct.table.cosmos.azure.com:443/"
COSMOS_CONN = (
    f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;TableEndpoint={COSMOS_URL};"
)
CREDENTIAL = azt.SharedKeyCredential("acct", "a2V5")


def never_called(request: HttpRequest) -> HttpResponse:
    raise AssertionError(f"nothing should be sent, got {request.method} {request.url}")


def cosmos_service(**options: object) -> tuple[azt.TableServiceClient, MockTransport]:
    transport = MockTransport(never_called)
    return azt.TableServiceClient(COSMOS_URL, CREDENTIAL, transport=transport, **options), transport  # type: ignore[arg-type]


# -- detection -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "cosmos"),
    [
        ("https://acct.table.cosmos.azure.com:443/", True),
        ("https://acct.table.cosmos.azure.com", True),
        ("https://ACCT.TABLE.COSMOS.AZURE.COM/", True),
        ("https://acct.table.cosmosdb.azure.com", True),  # the older host name
        ("https://acct.table.cosmos.azure.cn", True),
        ("acct.table.cosmos.azure.com", True),
        ("https://acct.table.core.windows.net", False),
        ("http://127.0.0.1:10002/devstoreaccount1", False),
        ("https://tables.example.com", False),
        ("https://cosmos.example.com/table.cosmos.azure.com", False),  # path, not host
        ("", False),
        (None, False),
    ],
)
def test_is_cosmos_endpoint(url: object, cosmos: bool) -> None:
    assert azt.is_cosmos_endpoint(url) is cosmos


def test_cosmos_connection_strings_have_no_secondary() -> None:
    settings = azt.parse_connection_string(COSMOS_CONN)
    assert settings.endpoint == "https://acct.table.cosmos.azure.com:443"
    assert settings.secondary_endpoint is None
    by_suffix = azt.parse_connection_string(
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;"
        "EndpointSuffix=cosmos.azure.com"
    )
    assert by_suffix.endpoint == "https://acct.table.cosmos.azure.com"
    assert by_suffix.secondary_endpoint is None
    assert azt.Endpoint.parse(COSMOS_URL).secondary() is None
    storage = azt.parse_connection_string(
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5"
    )
    assert storage.secondary_endpoint == "https://acct-secondary.table.core.windows.net"


async def test_flavor_comes_from_the_endpoint_unless_given() -> None:
    service, _ = cosmos_service()
    assert service.flavor is Flavor.COSMOS
    assert service.get_table_client("t").flavor is Flavor.COSMOS
    from_conn = azt.TableClient.from_connection_string(
        COSMOS_CONN, "t", transport=MockTransport(never_called)
    )
    assert from_conn.flavor is Flavor.COSMOS
    plain = azt.TableServiceClient(ENDPOINT, DEV_CREDENTIAL, transport=MockTransport(never_called))
    assert plain.flavor is Flavor.STORAGE
    forced = azt.TableServiceClient(
        ENDPOINT, DEV_CREDENTIAL, transport=MockTransport(never_called), flavor=Flavor.COSMOS
    )
    assert forced.flavor is Flavor.COSMOS
    overridden, _ = cosmos_service(flavor=Flavor.STORAGE)
    assert overridden.flavor is Flavor.STORAGE
    with pytest.raises(azt.ValidationError, match="flavor must be a Flavor"):
        cosmos_service(flavor="cosmos")


# -- operations Cosmos lacks are refused before sending ----------------------------------------


async def test_service_level_operations_are_refused_before_sending() -> None:
    service, transport = cosmos_service()
    async with service:
        with pytest.raises(UnsupportedOperationError) as info:
            await service.get_service_properties()
        assert info.value.operation == "get_service_properties"
        assert info.value.flavor == "cosmos"
        assert "Cosmos DB Table API" in str(info.value)
        with pytest.raises(UnsupportedOperationError):
            await service.set_service_properties(azt.ServiceProperties(cors=[]))
        with pytest.raises(UnsupportedOperationError, match="get_service_stats"):
            await service.get_service_stats()
        table = service.get_table_client("t")
        with pytest.raises(UnsupportedOperationError, match="get_access_policy"):
            await table.get_access_policy()
        with pytest.raises(UnsupportedOperationError, match="set_access_policy"):
            await table.set_access_policy({})
    assert transport.requests == []
    assert issubclass(UnsupportedOperationError, NotImplementedError)


async def test_atom_and_the_secondary_are_refused_at_construction() -> None:
    with pytest.raises(UnsupportedOperationError, match="JSON only"):
        cosmos_service(wire_format=azt.WireFormat.ATOM)
    with pytest.raises(UnsupportedOperationError, match="secondary"):
        cosmos_service(location_mode=azt.LocationMode.SECONDARY)
    with pytest.raises(UnsupportedOperationError, match="secondary"):
        cosmos_service(secondary_endpoint="https://acct-secondary.table.cosmos.azure.com")
    service, _ = cosmos_service()
    async with service:
        with pytest.raises(UnsupportedOperationError):
            service.with_options(location_mode=azt.LocationMode.PRIMARY_THEN_SECONDARY)


# -- limits ------------------------------------------------------------------------------------


async def test_cosmos_limits_are_checked_before_sending() -> None:
    service, transport = cosmos_service()
    async with service:
        table = service.get_table_client("ttt")
        with pytest.raises(azt.ValidationError, match="256 bytes as UTF-8"):
            await table.insert_entity({"PartitionKey": "p", "RowKey": "é" * 128})
        with pytest.raises(azt.ValidationError, match="reserved by the Cosmos DB Table API"):
            await table.upsert_entity({"PartitionKey": "p", "RowKey": "r", "ETag": "x"})
        # 'etag' itself is stored by real Cosmos (docs/cosmos.md REC 16); another casing
        # beside it, which Cosmos would drop silently, is refused before sending
        with pytest.raises(azt.ValidationError, match="'Etag' is reserved"):
            await table.upsert_entity({"PartitionKey": "p", "RowKey": "r", "etag": 1, "Etag": 2})
        for name in ("id", "ID", "rid", "ResourceId", "ETAG"):
            with pytest.raises(azt.ValidationError, match="reserved"):
                await table.insert_entity({"PartitionKey": "p", "RowKey": "r", name: 1})
        with pytest.raises(azt.ValidationError, match="Cosmos"):
            await table.delete_entity("p", "r" * 300)
        with pytest.raises(azt.ValidationError, match="Cosmos"):
            await table.get_entity("p", "r" * 300)
        batch = table.batch()
        with pytest.raises(azt.ValidationError, match="reserved"):
            batch.create({"PartitionKey": "p", "RowKey": "x", "id": 1})
        # a batch built for Storage is checked again against Cosmos's limits
        storage_batch = azt.TableBatch("ttt")
        storage_batch.create({"PartitionKey": "p", "RowKey": "r" * 300})
        with pytest.raises(azt.ValidationError, match="Cosmos"):
            await table.submit_transaction(storage_batch)
        # Cosmos takes at most 2 MB per transaction (Storage 4 MiB)
        big = table.batch()
        for i in range(40):
            big.create(
                {"PartitionKey": "p", "RowKey": str(i), "A": "x" * 30_000, "B": "y" * 30_000}
            )
        with pytest.raises(azt.BatchValidationError, match="at most 2000000"):
            await table.submit_transaction(big)
    assert transport.requests == []


async def test_cosmos_takes_a_property_named_etag() -> None:
    async with (
        StubServer(flavor="cosmos") as stub,
        azt.TableServiceClient.from_connection_string(
            stub.connection_string, flavor=Flavor.COSMOS, retry=azt.RetryPolicy.no_retries()
        ) as service,
    ):
        table = await service.create_table("etagged")
        await table.insert_entity({"PartitionKey": "p", "RowKey": "r", "etag": "bar"})
        stored = await table.get_entity("p", "r")
        assert stored["etag"] == "bar"
        assert stored.metadata["etag"] != "bar"  # the property is not the entity's ETag
        await table.update_entity(
            {"PartitionKey": "p", "RowKey": "r", "etag": "two"}, azt.UpdateMode.MERGE
        )
        assert (await table.get_entity("p", "r"))["etag"] == "two"


def test_storage_keeps_its_own_limits() -> None:
    limits = Flavor.STORAGE.limits
    azt.edm.validate_entity({"PartitionKey": "p", "RowKey": "é" * 500, "id": 1, "ETag": 2})
    assert limits.max_batch_bytes == 4 * 1024 * 1024
    assert Flavor.STORAGE.unsupported == frozenset()
    Flavor.STORAGE.require("get_service_stats")


@pytest.mark.parametrize(
    ("name", "storage_ok", "cosmos_ok"),
    [
        ("movies", True, True),
        ("my_table", False, True),
        ("a", False, True),
        ("with space", False, True),
        ("Ünïcode", False, True),
        ("x" * 255, False, True),
        ("x" * 256, False, False),
        ("trailing ", False, False),
        ("a/b", False, False),
        ("a\\b", False, False),
        ("a#b", False, False),
        ("a?b", False, False),
        ("", False, False),
        ("Tables", False, False),
    ],
)
def test_table_name_rules_follow_the_flavor(name: str, storage_ok: bool, cosmos_ok: bool) -> None:
    for flavor, ok in ((Flavor.STORAGE, storage_ok), (Flavor.COSMOS, cosmos_ok)):
        if ok:
            assert validate_table_name(name, flavor) == name
        else:
            with pytest.raises(azt.ValidationError):
                validate_table_name(name, flavor)


async def test_cosmos_table_names_reach_the_wire_escaped() -> None:
    seen: list[str] = []

    def handler(request: HttpRequest) -> HttpResponse:
        seen.append(request.url)
        return HttpResponse(204, {"x-ms-request-id": "r"})

    service = azt.TableServiceClient(COSMOS_URL, CREDENTIAL, transport=MockTransport(handler))
    async with service:
        await service.delete_table("it's mine")
    assert seen == ["https://acct.table.cosmos.azure.com:443/Tables('it%27%27s%20mine')"]


# -- retries -----------------------------------------------------------------------------------


def test_a_429_waits_the_cosmos_hint_as_a_floor_not_the_back_off() -> None:
    wait = BackoffWait(azt.RetryPolicy(), uniform=lambda lo, hi: lo)  # minimum 3 s
    throttled = error_from_response(
        429, "TooManyRequests", "Request rate is large", headers={"x-ms-retry-after-ms": "12"}
    )
    assert wait.delay(1, throttled) == pytest.approx(0.012)  # (jitter drawn at its low end)
    assert wait.delay(3, throttled) == pytest.approx(0.012)
    # other hints stay floors under the back-off
    busy = error_from_response(503, "ServerBusy", "busy", headers={"x-ms-retry-after-ms": "12"})
    assert wait.delay(1, busy) == 3.0
    plain_429 = error_from_response(429, None, "x", headers={"Retry-After": "1"})
    assert wait.delay(1, plain_429) == 1.0  # any 429 is throttling: its hint, no back-off
    recorded = error_from_response(429, "429", "Request rate is large")  # 2020: no hint
    assert wait.delay(1, recorded) == 0.0


# -- against the stub's Cosmos flavour ---------------------------------------------------------


async def test_the_client_against_the_stubs_cosmos_flavor() -> None:
    async with (
        StubServer(flavor="cosmos") as stub,
        azt.TableServiceClient.from_connection_string(
            stub.connection_string, flavor=Flavor.COSMOS, retry=azt.RetryPolicy.no_retries()
        ) as service,
    ):
        table = await service.create_table("movies")
        await table.insert_entity({"PartitionKey": "Action", "RowKey": "Heat", "Year": 1995})
        await table.update_entity(
            {"PartitionKey": "Action", "RowKey": "Heat", "Stars": 5}, azt.UpdateMode.MERGE
        )
        movie = await table.get_entity("Action", "Heat")
        assert (movie["Year"], movie["Stars"]) == (1995, 5)
        batch = table.batch()
        for i in range(5):
            batch.upsert({"PartitionKey": "Action", "RowKey": f"m{i}"}, azt.UpdateMode.REPLACE)
        assert len(await table.submit_transaction(batch)) == 5
        rows = [e["RowKey"] async for e in table.query_entities(None, results_per_page=2)]
        assert sorted(rows) == ["Heat", "m0", "m1", "m2", "m3", "m4"]
        with pytest.raises(UnsupportedOperationError):
            await table.get_access_policy()
        # what the client lets through, the stub's Cosmos flavour answers as Cosmos would
        raw = azt.TableClient.from_connection_string(
            stub.connection_string, "movies", retry=azt.RetryPolicy.no_retries()
        )
        async with raw:  # a Storage-flavoured client sends what Cosmos refuses
            with pytest.raises(azt.ServiceNotImplementedError) as info:
                await raw.get_access_policy()
            assert info.value.code == "NotImplemented"  # read from the JSON body
            with pytest.raises(azt.BadRequestError) as too_long:
                await raw.insert_entity({"PartitionKey": "p", "RowKey": "r" * 300})
            assert too_long.value.code == "KeyValueTooLarge"


async def test_the_client_retries_cosmos_throttling_after_the_hint() -> None:
    clock = FakeClock()
    throttle = Throttle(
        ThrottleLimits(partition_rate=4.0, account_rate=None, burst=1.0), clock=clock
    )
    sleeps = Sleeps()

    async def sleep(delay: float) -> None:
        await sleeps(delay)
        clock.advance(delay)  # the stub's buckets refill while the client waits

    async with (
        StubServer(StubConfig(throttle=throttle, flavor="cosmos")) as stub,
        azt.TableClient.from_connection_string(
            stub.connection_string,
            "hot",
            flavor=Flavor.COSMOS,
            sleep=sleep,
            uniform=lambda lo, hi: (lo + hi) / 2,
        ) as table,
    ):
        await table.create_table()
        for i in range(8):
            await table.insert_entity({"PartitionKey": "p", "RowKey": str(i)})
    # the default policy would have waited 3 s and more; Cosmos's hint (at most 250 ms) is
    # waited as a floor plus jitter (exact delays: tests/client/test_retry_throttled.py)
    assert sleeps.delays
    assert all(0.0 < delay < 1.0 for delay in sleeps.delays)
    assert throttle.stats.throttled["partition"] == len(sleeps.delays)


# -- one detection, shared with the bearer-token scope -----------------------------------------


async def test_token_scope_follows_the_flavour() -> None:
    from azt._core import auth, connection_string
    from azt._core.auth import COSMOS_SCOPE, STORAGE_SCOPE, token_scope_for

    detect = getattr(auth, "is_cosmos_endpoint")  # noqa: B009 (not re-exported, on purpose)
    assert detect is connection_string.is_cosmos_endpoint is azt.is_cosmos_endpoint

    class Cred:
        async def get_token(self, *scopes: str, **kwargs: object) -> object:
            raise AssertionError("not called")

    custom = "https://tables.example.com"
    assert token_scope_for(custom) == STORAGE_SCOPE
    assert token_scope_for(custom, cosmos=True) == COSMOS_SCOPE
    assert token_scope_for(COSMOS_URL, cosmos=False) == STORAGE_SCOPE
    cases = [
        (custom, None, STORAGE_SCOPE),
        (custom, Flavor.COSMOS, COSMOS_SCOPE),  # a Cosmos account on a custom domain
        (COSMOS_URL, None, COSMOS_SCOPE),
        (COSMOS_URL, Flavor.STORAGE, STORAGE_SCOPE),  # the flavour given wins
    ]
    for url, flavor, scope in cases:
        for credential in (Cred(), azt.BearerTokenCredential(Cred())):
            service = azt.TableServiceClient(
                url, credential, flavor=flavor, transport=MockTransport(never_called)
            )
            async with service:
                assert service._core.credential.scope == scope, (url, flavor)  # type: ignore[union-attr]
