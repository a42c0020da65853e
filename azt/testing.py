"""pytest fixtures for testing your own application against the Table service stub.

The plugin is registered under the ``pytest11`` entry point ``azt``, so installing azt makes
these fixtures available in every test suite (or load it explicitly with ``-p azt.testing``
or ``pytest_plugins = ["azt.testing"]``):

=========================  ========  =========================================================
fixture                    scope     what it gives you
=========================  ========  =========================================================
``azt_stub_server``        session   a :class:`~azt_server_stub.ThreadedStubServer` on a free
                                     port (own thread and event loop), shared by the session
``azt_connection_string``  function  a connection string for the session's stub (or for the
                                     account given by ``--azt-connection-string`` /
                                     ``AZT_TEST_CONNECTION_STRING``); any client can use it,
                                     ``azure-data-tables`` included
``azt_retry_policy``       function  the retry policy the fixtures' clients use: a fast one
                                     (milliseconds) for the in-process stub, the default
                                     one (seconds) for an account given on the command line
``azt_flavor``             function  the :class:`azt.Flavor` the fixtures use
                                     (``--azt-flavor`` / ``AZT_TEST_FLAVOR``)
``azt_service_client``     function  an open :class:`azt.TableServiceClient` on that
                                     connection string (with ``azt_retry_policy``), closed
                                     after the test
``azt_table``              function  a fresh, uniquely named table (an open
                                     :class:`azt.TableClient`), deleted after the test
``azt_stub``               function  a private :class:`~azt_server_stub.StubServer` running
                                     in the test's event loop (empty, isolated, stopped after
                                     the test), with a fault injector ready at
                                     ``azt_stub.config.faults`` and a range-partition layout at
                                     ``azt_stub.config.partitions``: for tests that need a
                                     clean account, injected failures or short pages
=========================  ========  =========================================================

``@pytest.mark.azt_stub_config(**options)`` configures the ``azt_stub`` of one test: the
options are those of :class:`~azt_server_stub.StubConfig` (``accounts``, ``throttle``,
``partitions``, ``faults``, ``auth``, ``flavor``, ...).

``--azt-flavor cosmos`` (or ``$AZT_TEST_FLAVOR``) runs the fixtures as the Azure Cosmos DB
Table API: the stubs answer as Cosmos (``flavor="cosmos"``: its limits, refused operations,
error bodies, ``429`` throttling; see ``docs/cosmos.md``) and ``azt_service_client`` /
``azt_table`` are clients of :attr:`azt.Flavor.COSMOS`. The ``azt_flavor`` fixture gives the
flavour, for clients you open yourself (``flavor=azt_flavor``). Default: ``storage``.

The async fixtures run on ``pytest-asyncio``, which ``pip install "azt-tables[testing]"`` brings.
An ``async def`` test that requests one of these fixtures (as an argument or with
``usefixtures``) runs in pytest-asyncio's event loop without any configuration: the plugin
marks it ``asyncio`` unless it already carries an ``asyncio``, ``anyio`` or ``trio`` mark.
pytest-asyncio itself asks every project for one line, ``asyncio_default_fixture_loop_scope
= "function"`` (without it, it warns at start-up). Without pytest-asyncio, a test that
requests an async fixture fails with an error naming that fixture and the install command.

Everything a fixture starts, it stops: servers, event-loop threads, HTTP sessions and
tables, so suites that run with ``-W error`` stay clean.

Example::

    from azt import TableClient

    async def test_save_movie(azt_table: TableClient) -> None:
        await azt_table.insert_entity({"PartitionKey": "Action", "RowKey": "Heat"})
        assert (await azt_table.get_entity("Action", "Heat"))["RowKey"] == "Heat"

    def test_other_sdk(azt_connection_string: str) -> None:
        from azure.data.tables import TableServiceClient
        with TableServiceClient.from_connection_string(azt_connection_string) as service:
            service.create_table_if_not_exists("other")
"""

from __future__ import annotations

import inspect
import os
import secrets
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar, cast

import pytest

if TYPE_CHECKING:
    from azt._core.config import Flavor, RetryPolicy
    from azt._core.service_client import TableServiceClient
    from azt._core.table_client import TableClient
    from azt_server_stub import StubServer, ThreadedStubServer

__all__ = [
    "ENV_VAR",
    "FLAVOR_ENV_VAR",
    "azt_connection_string",
    "azt_flavor",
    "azt_retry_policy",
    "azt_service_client",
    "azt_stub",
    "azt_stub_server",
    "azt_table",
    "stub_retry_policy",
    "unique_table_name",
]

#: Environment variable naming an account to test against instead of the stub.
ENV_VAR = "AZT_TEST_CONNECTION_STRING"
_OPTION = "--azt-connection-string"
#: Environment variable choosing the service flavour (``storage`` or ``cosmos``).
FLAVOR_ENV_VAR = "AZT_TEST_FLAVOR"
_FLAVOR_OPTION = "--azt-flavor"
_FLAVORS = ("storage", "cosmos")

F = TypeVar("F", bound=Callable[..., Any])

try:
    import pytest_asyncio

    _fixture_impl: Any = pytest_asyncio.fixture
except ImportError:  # without pytest-asyncio: pytest_fixture_setup below explains
    _fixture_impl = pytest.fixture

#: The fixtures that are coroutines: they need pytest-asyncio (its plugin is "asyncio").
_ASYNC_FIXTURES = ("azt_service_client", "azt_table", "azt_stub")
_FIXTURES = (
    "azt_stub_server",
    "azt_connection_string",
    "azt_retry_policy",
    "azt_flavor",
    *_ASYNC_FIXTURES,
)
_ASYNCIO_PLUGIN = "asyncio"
#: Marks with which a test already chose how it runs: the plugin leaves such tests alone.
_RUNNER_MARKS = frozenset({"asyncio", "anyio", "trio"})
_INSTALL = 'pip install "azt-tables[testing]"'


def _async_fixture(fn: F) -> F:
    """``pytest_asyncio.fixture`` when available (else a plain fixture; see
    :func:`pytest_fixture_setup` for the error it then gives)."""
    return cast(F, _fixture_impl(fn))


def pytest_addoption(parser: pytest.Parser) -> None:
    """Adds ``--azt-connection-string`` (run the fixtures against that account) and
    ``--azt-flavor`` (``storage`` or ``cosmos``).

    Example::

        $ pytest --azt-connection-string "UseDevelopmentStorage=true"
        $ pytest --azt-flavor cosmos
    """
    group = parser.getgroup("azt", "azt Table storage fixtures")
    group.addoption(
        _OPTION,
        dest="azt_connection_string",
        default=None,
        help=(
            "connection string of the account the azt fixtures use instead of the embedded "
            f"stub (default: ${ENV_VAR})"
        ),
    )
    group.addoption(
        _FLAVOR_OPTION,
        dest="azt_flavor",
        choices=_FLAVORS,
        default=None,
        help=(
            "service flavour of the azt fixtures: storage (Azure Table storage) or cosmos "
            f"(the Azure Cosmos DB Table API) (default: ${FLAVOR_ENV_VAR}, else storage)"
        ),
    )


def pytest_configure(config: pytest.Config) -> None:
    """Registers the ``azt_stub_config`` marker.

    Example::

        @pytest.mark.azt_stub_config(accounts={"devstoreaccount1": [DEV_KEY], "b": [KEY]})
        async def test_two_accounts(azt_stub): ...
    """
    config.addinivalue_line(
        "markers",
        "azt_stub_config(**options): StubConfig options for the azt_stub fixture of this test",
    )


def _requested(obj: object, marks: list[pytest.Mark]) -> set[str]:
    """The fixtures a test function names: its arguments and its ``usefixtures`` marks."""
    try:
        names = set(inspect.signature(obj).parameters)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        names = set()
    for mark in marks:
        if mark.name == "usefixtures":
            names.update(str(arg) for arg in mark.args)
    return names


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(
    collector: pytest.Module | pytest.Class, name: str, obj: object
) -> None:
    """Marks an ``async def`` test that requests an azt fixture ``asyncio``, so that
    pytest-asyncio runs it in strict mode (its default) too, with no configuration.

    Tests that already carry an ``asyncio``, ``anyio`` or ``trio`` mark (on the function,
    its class or its module) are left as they are, as is everything when pytest-asyncio
    is not active. Only the mark is added: collection itself is left to pytest.

    Example::

        # no asyncio_mode = "auto", no @pytest.mark.asyncio: this test still runs
        async def test_save(azt_table):
            await azt_table.insert_entity({"PartitionKey": "p", "RowKey": "r"})
    """
    if not inspect.iscoroutinefunction(obj) or not collector.istestfunction(obj, name):
        return
    if not collector.config.pluginmanager.hasplugin(_ASYNCIO_PLUGIN):
        return
    own: list[pytest.Mark] = list(getattr(obj, "pytestmark", []))
    inherited = [mark for node in collector.listchain() for mark in node.own_markers]
    if not _requested(obj, own + inherited) & set(_FIXTURES):
        return
    if any(mark.name in _RUNNER_MARKS for mark in own + inherited):
        return
    pytest.mark.asyncio(obj)
    return


@pytest.hookimpl(tryfirst=True)
def pytest_fixture_setup(
    fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest
) -> None:
    """Without pytest-asyncio, fails a test that requests an async azt fixture with an
    error that names the fixture the test asked for and how to install what it needs.

    (pytest's own error would name whichever async fixture it met first, often
    ``azt_service_client``, which the test never asked for.)

    Example::

        $ pip install azt-tables pytest   # no pytest-asyncio
        $ pytest
        E   test_save uses the azt_table fixture, which is async and needs pytest-asyncio:
            pip install "azt-tables[testing]" ...
    """
    if fixturedef.argname not in _ASYNC_FIXTURES:
        return
    if request.config.pluginmanager.hasplugin(_ASYNCIO_PLUGIN):
        return
    asked = [name for name in request.fixturenames if name in _ASYNC_FIXTURES]
    wanted = asked[0] if asked else fixturedef.argname
    pytest.fail(
        f"{request.node.name} uses the {wanted} fixture, which is async and needs "
        f"pytest-asyncio: {_INSTALL} installs it (or pip install pytest-asyncio)",
        pytrace=False,
    )


def unique_table_name(prefix: str = "t") -> str:
    """A table name no other test is using: ``prefix`` plus 12 random hex digits.

    Example::

        >>> name = unique_table_name("movies")
        >>> name.startswith("movies"), len(name)
        (True, 18)
    """
    return f"{prefix}{secrets.token_hex(6)}"


def stub_retry_policy() -> RetryPolicy:
    """A retry policy for an in-process stub: the same four attempts as the default policy,
    with back-off in milliseconds instead of seconds.

    The default policy (:class:`azt.RetryPolicy`, base 30 s) is right for Azure, where a
    ``503 ServerBusy`` means a partition is being moved, but it makes a test that meets an
    injected fault wait half a minute. The ``azt_service_client`` and ``azt_table``
    fixtures use this policy when they talk to the stub; pass it to the clients you make
    yourself (``retry=azt_retry_policy``).

    Example::

        >>> policy = stub_retry_policy()
        >>> policy.max_attempts, policy.backoff(1) <= 0.01, policy.maximum
        (4, True, 0.2)
    """
    from azt._core.config import RetryPolicy

    return RetryPolicy(max_attempts=4, base=0.05, minimum=0.005, maximum=0.2)


def _flavor_name(config: pytest.Config) -> str | None:
    """The flavour named by ``--azt-flavor`` / ``$AZT_TEST_FLAVOR`` (None: not named)."""
    value = config.getoption("azt_flavor", default=None) or os.environ.get(FLAVOR_ENV_VAR)
    if not value:
        return None
    name = str(value).strip().lower()
    if name not in _FLAVORS:
        raise pytest.UsageError(f"{FLAVOR_ENV_VAR}={value!r}: choose one of {', '.join(_FLAVORS)}")
    return name


def _external(config: pytest.Config) -> str | None:
    value = config.getoption("azt_connection_string", default=None) or os.environ.get(ENV_VAR)
    return str(value) if value else None


@pytest.fixture(scope="session")
def azt_stub_server(request: pytest.FixtureRequest) -> Iterator[ThreadedStubServer]:
    """The session's stub, on a free port in a background thread (stopped at the end),
    answering as ``--azt-flavor`` says.

    Example::

        def test_endpoint(azt_stub_server):
            assert azt_stub_server.endpoint.startswith("http://127.0.0.1:")
    """
    from azt_server_stub import ThreadedStubServer

    with ThreadedStubServer(flavor=_flavor_name(request.config) or "storage") as server:
        yield server


@pytest.fixture
def azt_connection_string(request: pytest.FixtureRequest) -> str:
    """A connection string for the session's stub, or the account given with
    ``--azt-connection-string`` / ``$AZT_TEST_CONNECTION_STRING`` (then no stub starts).

    Example::

        def test_conn(azt_connection_string):
            assert "AccountName=" in azt_connection_string
    """
    external = _external(request.config)
    if external is not None:
        return external
    server: ThreadedStubServer = request.getfixturevalue("azt_stub_server")
    return server.connection_string


@pytest.fixture
def azt_retry_policy(request: pytest.FixtureRequest) -> RetryPolicy:
    """The retry policy of the fixtures' clients: :func:`stub_retry_policy` (milliseconds)
    when the tests run on the stub, the default :class:`azt.RetryPolicy` (seconds, as
    Azure needs) when ``--azt-connection-string`` / ``$AZT_TEST_CONNECTION_STRING`` names an
    account. Use it for the clients you open yourself, e.g. on ``azt_stub``.

    Example::

        async def test_retried(azt_stub, azt_retry_policy):
            azt_stub.config.faults.fail_next("busy", 2)       # two 503s, then service
            conn = azt_stub.connection_string
            async with TableServiceClient.from_connection_string(
                conn, retry=azt_retry_policy
            ) as s:
                assert await s.list_tables().to_list() == []  # after ~10 ms, not ~36 s
    """
    if _external(request.config) is not None:
        from azt._core.config import RetryPolicy

        return RetryPolicy()
    return stub_retry_policy()


@pytest.fixture
def azt_flavor(request: pytest.FixtureRequest) -> Flavor:
    """The service flavour the fixtures' clients use: ``--azt-flavor`` /
    ``$AZT_TEST_FLAVOR``, else the one the ``--azt-connection-string`` endpoint shows
    (``*.table.cosmos.azure.com`` is Cosmos DB), else Storage.

    Example::

        async def test_cosmos_rules(azt_stub, azt_flavor):
            async with TableServiceClient.from_connection_string(
                azt_stub.connection_string, flavor=azt_flavor
            ) as service: ...
    """
    from azt._core.config import Flavor
    from azt._core.connection_string import is_cosmos_endpoint, parse_connection_string

    name = _flavor_name(request.config)
    if name is not None:
        return Flavor(name)
    external = _external(request.config)
    if external is not None and is_cosmos_endpoint(parse_connection_string(external).endpoint):
        return Flavor.COSMOS
    return Flavor.STORAGE


@_async_fixture
async def azt_service_client(
    azt_connection_string: str, azt_retry_policy: RetryPolicy, azt_flavor: Flavor
) -> AsyncIterator[TableServiceClient]:
    """An open :class:`azt.TableServiceClient` on :func:`azt_connection_string`, retrying
    with :func:`azt_retry_policy` (fast on the stub).

    Example::

        async def test_tables(azt_service_client):
            await azt_service_client.create_table_if_not_exists("things")
    """
    from azt._core.service_client import TableServiceClient

    async with TableServiceClient.from_connection_string(
        azt_connection_string, retry=azt_retry_policy, flavor=azt_flavor
    ) as service:
        yield service


@_async_fixture
async def azt_table(azt_service_client: TableServiceClient) -> AsyncIterator[TableClient]:
    """A fresh, empty table with a unique name; deleted after the test.

    Example::

        async def test_insert(azt_table):
            await azt_table.insert_entity({"PartitionKey": "p", "RowKey": "r"})
    """
    table = await azt_service_client.create_table(unique_table_name())
    try:
        yield table
    finally:
        await azt_service_client.delete_table_if_exists(table.table_name)


@_async_fixture
async def azt_stub(request: pytest.FixtureRequest) -> AsyncIterator[StubServer]:
    """A private, empty stub in the test's own event loop (stopped after the test).

    Its fault injector (``azt_stub.config.faults``, a seeded
    ``azt_server_stub.realism.faults.FaultInjector`` with no rules) injects errors on demand, and
    its range layout (``azt_stub.config.partitions``, an
    ``azt_server_stub.realism.partitions.PartitionLayout`` without boundaries) makes query
    pages stop at chosen PartitionKeys, as Azure's range partitions do. The
    ``azt_stub_config`` marker passes other :class:`~azt_server_stub.StubConfig` options.

    Clients you open on it retry with the default policy (seconds between attempts)
    unless you pass ``retry=``: use :func:`azt_retry_policy` for a fast one.

    Example::

        async def test_busy(azt_stub, azt_retry_policy):
            azt_stub.config.faults.fail_next("busy", 1)     # the next request gets a 503
            conn = azt_stub.connection_string
            async with TableServiceClient.from_connection_string(
                conn, retry=azt_retry_policy
            ) as s:
                assert await s.list_tables().to_list() == []  # retried after the 503
    """
    from azt_server_stub import StubConfig, StubServer
    from azt_server_stub.realism.faults import FaultInjector
    from azt_server_stub.realism.partitions import PartitionLayout

    options: dict[str, Any] = {}
    marker = request.node.get_closest_marker("azt_stub_config")
    if marker is not None:
        if marker.args:
            raise pytest.UsageError("azt_stub_config takes keyword arguments (StubConfig options)")
        options.update(marker.kwargs)
    options.setdefault("faults", FaultInjector(seed=0))
    options.setdefault("partitions", PartitionLayout())
    options.setdefault("flavor", _flavor_name(request.config) or "storage")
    async with StubServer(StubConfig(**options)) as server:
        yield server
