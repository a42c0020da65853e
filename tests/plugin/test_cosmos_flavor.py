"""The pytest plugin's ``--azt-flavor`` / ``AZT_TEST_FLAVOR``: fixtures as the Cosmos DB
Table API (stubs in the Cosmos flavour, clients of ``Flavor.COSMOS``)."""

from __future__ import annotations

import pytest

from .test_fixtures import INI, _plugin_args, _stub_threads

pytest_plugins = ["pytester"]

COSMOS_SUITE = """
import pytest
from azt import Flavor, TableServiceClient, UnsupportedOperationError


def test_flavor(azt_flavor):
    assert azt_flavor is Flavor.COSMOS


def test_session_stub_is_cosmos(azt_stub_server):
    assert azt_stub_server.server.flavor == "cosmos"


async def test_table_client_is_cosmos(azt_table):
    assert azt_table.flavor is Flavor.COSMOS
    await azt_table.insert_entity({"PartitionKey": "p", "RowKey": "r"})
    with pytest.raises(UnsupportedOperationError):
        await azt_table.get_access_policy()


async def test_private_stub_is_cosmos(azt_stub, azt_flavor, azt_retry_policy):
    assert azt_stub.flavor == "cosmos"
    async with TableServiceClient.from_connection_string(
        azt_stub.connection_string, flavor=azt_flavor, retry=azt_retry_policy
    ) as service:
        table = await service.create_table("things")
        await table.upsert_entity({"PartitionKey": "p", "RowKey": "r"})


@pytest.mark.azt_stub_config(flavor="storage")
async def test_marker_still_wins(azt_stub):
    assert azt_stub.flavor == "storage"
"""

STORAGE_SUITE = """
from azt import Flavor


def test_default_flavor(azt_flavor, azt_stub_server, azt_service_client):
    assert azt_flavor is Flavor.STORAGE
    assert azt_stub_server.server.flavor == "storage"
    assert azt_service_client.flavor is Flavor.STORAGE
"""


@pytest.mark.parametrize("how", ["option", "env"])
def test_cosmos_flavor_fixtures(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(test_cosmos_user=COSMOS_SUITE)
    args = [*_plugin_args(), "-q"]
    if how == "option":
        args += ["--azt-flavor", "cosmos"]
    else:
        monkeypatch.setenv("AZT_TEST_FLAVOR", "cosmos")
    before = _stub_threads()
    result = pytester.runpytest_inprocess(*args)
    result.assert_outcomes(passed=5)
    assert _stub_threads() == before


def test_storage_is_the_default(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZT_TEST_FLAVOR", raising=False)
    pytester.makeini(INI)
    pytester.makepyfile(test_storage_user=STORAGE_SUITE)
    result = pytester.runpytest_inprocess(*_plugin_args(), "-q")
    result.assert_outcomes(passed=1)


def test_a_bad_flavor_is_a_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AZT_TEST_FLAVOR", "mongo")
    pytester.makeini(INI)
    pytester.makepyfile(test_storage_user=STORAGE_SUITE)
    result = pytester.runpytest_inprocess(*_plugin_args(), "-q")
    assert "AZT_TEST_FLAVOR='mongo'" in result.stdout.str() + result.stderr.str()
    assert result.ret != 0
    help_text = pytester.runpytest_inprocess(*_plugin_args(), "--help").stdout.str()
    assert "--azt-flavor" in help_text
