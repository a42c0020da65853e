"""The pytest plugin (``azt.testing``), exercised the way users meet it: pytester runs a
small test suite that uses the fixtures, and we check its outcome and what it left behind."""

from __future__ import annotations

import asyncio
import re
import threading
from importlib.metadata import entry_points
from pathlib import Path

import azure.core.pipeline.transport  # imported for good (see below)
import azure.data.tables  # noqa: F401
import pytest
import requests  # noqa: F401

from azt import TableItem, TableServiceClient
from azt_server_stub import ThreadedStubServer

pytest_plugins = ["pytester"]

# In-process pytester runs drop the modules an inner run imported; the inner suites use
# azure-data-tables (and so requests), so those are imported here, once, for good:
# otherwise a second inner run would mix classes of two imports of requests.

# In-process runs share sys.modules with this session: when azt.testing was imported
# already (by another test), pytest cannot assertion-rewrite it again and says so.
INI = """
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
filterwarnings =
    error
    ignore:Module already imported so cannot be rewritten:pytest.PytestAssertRewriteWarning
"""


#: What docs/stub.md and docs/getting-started.md tell a user to configure: the one line
#: pytest-asyncio asks every project for. No asyncio_mode: pytest-asyncio stays strict.
STRICT_INI = """
[pytest]
asyncio_default_fixture_loop_scope = function
filterwarnings =
    error
    ignore:Module already imported so cannot be rewritten:pytest.PytestAssertRewriteWarning
"""


def _plugin_args() -> list[str]:
    """``-p azt.testing`` unless the package's ``pytest11`` entry point already loads it."""
    installed = any(ep.value.startswith("azt.testing") for ep in entry_points(group="pytest11"))
    return [] if installed else ["-p", "azt.testing"]


def _stub_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "azt-stub"]


USER_SUITE = """
import pytest
from azt_server_stub import DEV_KEY
from azt import EntityNotFoundError, TableClient, TableServiceClient

seen = {}


async def test_table_is_fresh_and_usable(azt_table: TableClient) -> None:
    assert await azt_table.list_entities().to_list() == []
    await azt_table.insert_entity({"PartitionKey": "p", "RowKey": "r", "n": 7})
    got = await azt_table.get_entity("p", "r")
    assert got["n"] == 7
    seen["first"] = azt_table.table_name


async def test_each_test_gets_another_table(
    azt_table: TableClient, azt_service_client: TableServiceClient
) -> None:
    assert azt_table.table_name != seen["first"]
    names = await azt_service_client.list_tables().to_list()
    assert azt_table.table_name in names
    assert seen["first"] not in names  # deleted after the first test
    with pytest.raises(EntityNotFoundError):
        await azt_table.get_entity("p", "r")


async def test_service_client_shares_the_session_stub(
    azt_service_client: TableServiceClient,
) -> None:
    await azt_service_client.create_table("sharedacrosstests")


def test_connection_string_for_another_sdk(azt_connection_string: str) -> None:
    from azure.data.tables import TableServiceClient as SdkService

    with SdkService.from_connection_string(azt_connection_string) as service:
        names = [t.name for t in service.list_tables()]
    assert "sharedacrosstests" in names


async def test_private_stub_is_empty_and_isolated(azt_stub, azt_connection_string) -> None:
    assert azt_stub.connection_string != azt_connection_string
    async with TableServiceClient.from_connection_string(azt_stub.connection_string) as s:
        assert await s.list_tables().to_list() == []
        await s.create_table("onlyhere")
        assert await s.list_tables().to_list() == ["onlyhere"]


async def test_private_stub_injects_faults(azt_stub) -> None:
    from azt import RetryPolicy, ServerBusyError

    azt_stub.config.faults.fail_next("busy", 1)
    conn = azt_stub.connection_string
    async with TableServiceClient.from_connection_string(
        conn, retry=RetryPolicy.no_retries()
    ) as s:
        with pytest.raises(ServerBusyError):
            await s.list_tables().to_list()
        assert await s.list_tables().to_list() == []  # only the next request failed


async def test_private_stub_has_range_partitions(azt_stub) -> None:
    from azt_server_stub.realism.partitions import RangeLayout

    azt_stub.config.partitions.set_default(RangeLayout(boundaries=("m",)))
    async with TableServiceClient.from_connection_string(azt_stub.connection_string) as s:
        table = await s.create_table("ranges")
        for pk in ("a", "b", "n", "z"):
            await table.insert_entity({"PartitionKey": pk, "RowKey": "r"})
        pager = table.list_entities().by_page()
        pages = [[e["PartitionKey"] for e in page] async for page in pager]
    assert pages == [["a", "b"], ["n", "z"]]  # the page stopped at the boundary


@pytest.mark.azt_stub_config(accounts={"devstoreaccount1": [DEV_KEY], "other": ["b3RoZXI="]})
async def test_marker_configures_the_private_stub(azt_stub) -> None:
    conn = azt_stub.connection_string_for("other")
    async with TableServiceClient.from_connection_string(conn) as s:
        await s.create_table("inother")
        assert await s.list_tables().to_list() == ["inother"]
    assert azt_stub.config.faults is not None  # the defaults are still there


async def test_clients_retry_fast_on_the_stub(
    azt_service_client: TableServiceClient, azt_table: TableClient, azt_retry_policy
) -> None:
    # The default policy waits 3 s, then ~33 s: far too slow for a test that meets a fault.
    assert azt_retry_policy.max_attempts == 4
    assert max(azt_retry_policy.backoff(n) for n in (1, 2, 3)) <= azt_retry_policy.maximum
    assert azt_retry_policy.maximum < 1
    assert azt_service_client._core.pipeline.retry == azt_retry_policy
    assert azt_table._core.pipeline.retry == azt_retry_policy


async def test_private_stub_with_the_fast_policy(azt_stub, azt_retry_policy) -> None:
    azt_stub.config.faults.fail_next("busy", 3)  # three 503s: the fourth attempt succeeds
    conn = azt_stub.connection_string
    async with TableServiceClient.from_connection_string(conn, retry=azt_retry_policy) as s:
        assert await s.list_tables().to_list() == []
    assert azt_stub.config.faults.counters["busy"] == 3


def test_session_server_is_shared(azt_stub_server, azt_connection_string) -> None:
    assert azt_connection_string == azt_stub_server.connection_string
    assert azt_stub_server.endpoint.startswith("http://127.0.0.1:")
"""


def test_fixtures_in_a_user_suite(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(test_user=USER_SUITE)
    before = _stub_threads()
    result = pytester.runpytest_inprocess(*_plugin_args(), "-q")
    result.assert_outcomes(passed=11)
    assert _stub_threads() == before  # the session stub's thread was stopped


def test_fixtures_are_listed_with_docs(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    result = pytester.runpytest_inprocess(*_plugin_args(), "--fixtures", "-q")
    out = result.stdout.str()
    for name in (
        "azt_stub_server",
        "azt_connection_string",
        "azt_retry_policy",
        "azt_service_client",
        "azt_table",
        "azt_stub",
    ):
        assert name in out
    assert (
        "--azt-connection-string"
        in pytester.runpytest_inprocess(*_plugin_args(), "--help").stdout.str()
    )


EXTERNAL_SUITE = """
from azt import TableClient, TableServiceClient

CONN = {conn!r}


def test_uses_given_account(azt_connection_string: str) -> None:
    assert azt_connection_string == CONN


async def test_writes_land_there(azt_service_client: TableServiceClient) -> None:
    await azt_service_client.create_table("markerfrominner")


def test_a_real_account_gets_the_default_policy(azt_retry_policy) -> None:
    from azt import RetryPolicy

    assert azt_retry_policy == RetryPolicy()


async def test_table_deleted_even_when_test_fails(azt_table: TableClient) -> None:
    await azt_table.insert_entity({{"PartitionKey": "p", "RowKey": "r"}})
    raise AssertionError("deliberate failure: " + azt_table.table_name)
"""


async def _table_names(conn: str) -> list[TableItem]:
    async with TableServiceClient.from_connection_string(conn) as service:
        return await service.list_tables().to_list()


@pytest.mark.parametrize("how", ["option", "env"])
def test_external_account(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    with ThreadedStubServer() as outer:
        conn = outer.connection_string
        pytester.makeini(INI)
        pytester.makepyfile(test_ext=EXTERNAL_SUITE.format(conn=conn))
        args = [*_plugin_args(), "-q"]
        if how == "option":
            args.append(f"--azt-connection-string={conn}")
        else:
            monkeypatch.setenv("AZT_TEST_CONNECTION_STRING", conn)
        before = _stub_threads()
        result = pytester.runpytest_inprocess(*args)
        result.assert_outcomes(passed=3, failed=1)
        assert "deliberate failure" in result.stdout.str()
        # No session stub was started for the inner run (only the outer one exists).
        assert _stub_threads() == before
        names = asyncio.run(_table_names(conn))
    assert names == ["markerfrominner"]  # created there; the failing test's table is gone


DOCS = Path(__file__).resolve().parents[2] / "docs"
_PYTEST_BLOCK = re.compile(r"^```python pytest\n(.*?)^```", re.S | re.M)


@pytest.mark.parametrize("page", ["stub.md", "getting-started.md"])
def test_documented_fixture_examples_pass(pytester: pytest.Pytester, page: str) -> None:
    """The test files shown in the docs (```python pytest blocks) pass as printed."""
    blocks = _PYTEST_BLOCK.findall((DOCS / page).read_text(encoding="utf-8"))
    assert blocks
    pytester.makeini(STRICT_INI)  # only the configuration the pages tell users to add
    for i, block in enumerate(blocks):
        pytester.makepyfile(**{f"test_doc_{i}": block})
    source = "\n".join(blocks)
    expected = source.count("\ndef test_") + source.count("\nasync def test_")
    expected += source.startswith(("def test_", "async def test_"))
    result = pytester.runpytest_inprocess(*_plugin_args(), "-q")
    result.assert_outcomes(passed=expected)


SUBPROCESS_SUITE = """
from azt import TableClient


async def test_my_table(azt_table: TableClient) -> None:
    await azt_table.insert_entity({"PartitionKey": "p", "RowKey": "r", "N": 1})
    assert (await azt_table.get_entity("p", "r"))["N"] == 1


def test_my_legacy_code(azt_connection_string: str) -> None:
    from azure.data.tables import TableServiceClient

    with TableServiceClient.from_connection_string(azt_connection_string) as service:
        table = service.create_table_if_not_exists("legacycode")
        table.upsert_entity({"PartitionKey": "p", "RowKey": "r", "N": 2})
        assert table.get_entity("p", "r")["N"] == 2
"""


def test_a_separate_project_gets_the_fixtures_from_the_entry_point(
    pytester: pytest.Pytester,
) -> None:
    """As a user meets it: a project of its own, a fresh interpreter, no -p option."""
    if _plugin_args():
        pytest.skip("azt is not installed with its pytest11 entry point")
    pytester.makeini(INI)
    pytester.makepyfile(test_mine=SUBPROCESS_SUITE)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


STRICT_SUITE = """
import pytest
from azt import TableClient, TableServiceClient

ran = []


async def test_table(azt_table: TableClient) -> None:
    await azt_table.insert_entity({"PartitionKey": "p", "RowKey": "r"})
    ran.append("table")


async def test_private_stub(azt_stub) -> None:
    async with TableServiceClient.from_connection_string(azt_stub.connection_string) as s:
        assert await s.list_tables().to_list() == []
    ran.append("stub")


async def test_only_a_sync_fixture(azt_connection_string: str) -> None:
    async with TableServiceClient.from_connection_string(azt_connection_string) as s:
        await s.create_table_if_not_exists("strictmode")
    ran.append("conn")


@pytest.mark.usefixtures("azt_service_client")
async def test_by_usefixtures() -> None:
    ran.append("usefixtures")


@pytest.mark.asyncio
async def test_already_marked(azt_table: TableClient) -> None:
    ran.append("marked")


class TestInAClass:
    async def test_method(self, azt_table: TableClient) -> None:
        ran.append("method")


def test_all_ran() -> None:
    assert sorted(ran) == ["conn", "marked", "method", "stub", "table", "usefixtures"]


async def test_not_ours() -> None:
    # No azt fixture: the plugin leaves it to pytest-asyncio's strict mode, which does
    # not run an unmarked coroutine, so pytest reports it.
    pass
"""


def test_async_tests_run_in_strict_mode(pytester: pytest.Pytester) -> None:
    """No asyncio_mode and no marks: async tests that use an azt fixture still run, and
    other async tests are left to pytest-asyncio's strict mode."""
    pytester.makeini(STRICT_INI)
    pytester.makepyfile(test_strict=STRICT_SUITE)
    result = pytester.runpytest_inprocess(*_plugin_args(), "-q", "-p", "no:randomly")
    result.assert_outcomes(passed=7, failed=1)
    out = result.stdout.str()
    assert "FAILED test_strict.py::test_not_ours" in out
    assert "async def functions are not natively supported" in out


def test_module_loop_scope_mark_is_respected(pytester: pytest.Pytester) -> None:
    """A module that chose its loop with pytestmark keeps it: no function mark is added."""
    pytester.makeini(STRICT_INI)
    pytester.makepyfile(
        test_scoped="""
import asyncio
import pytest

pytestmark = pytest.mark.asyncio(loop_scope="module")
loops = []


async def test_one(azt_connection_string: str) -> None:
    loops.append(asyncio.get_running_loop())


async def test_two(azt_connection_string: str) -> None:
    loops.append(asyncio.get_running_loop())
    assert loops[0] is loops[1]  # one module-scoped loop, as the module asked
"""
    )
    result = pytester.runpytest_inprocess(*_plugin_args(), "-q")
    result.assert_outcomes(passed=2)


def test_without_pytest_asyncio_the_error_names_the_requested_fixture(
    pytester: pytest.Pytester,
) -> None:
    """pytest-asyncio absent (here: disabled): the error names azt_table, which the test
    asked for, not azt_service_client, and says what to install; sync fixtures still work."""
    pytester.makeini("[pytest]\nfilterwarnings = error\n")
    pytester.makepyfile(
        test_plain="""
async def test_save(azt_table) -> None:
    pass


async def test_stub(azt_stub) -> None:
    pass


def test_sync(azt_connection_string: str) -> None:
    assert "AccountName=" in azt_connection_string
"""
    )
    result = pytester.runpytest_subprocess(
        *_plugin_args(), "-q", "-p", "no:asyncio", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1, errors=2)
    out = result.stdout.str()
    assert (
        "test_save uses the azt_table fixture, which is async and needs pytest-asyncio: "
        'pip install "azt-tables[testing]"'
    ) in out
    assert "test_stub uses the azt_stub fixture" in out
    assert "azt_service_client" not in out
