"""The stub's access log: one INFO record per request (method, path with the SAS
signature redacted, status, duration, request ids), on by default from the command line
(``--log-level info``) and off at ``--log-level warning``."""

from __future__ import annotations

import logging
import urllib.error
import urllib.request
from datetime import UTC, datetime

import pytest

import azt
from azt_server_stub import StubServer
from azt_server_stub.access_log import redact_query

from .conftest import StubProcess

ACCESS = "azt_server_stub.access"


def test_redact_query() -> None:
    assert redact_query("/a/t()?sv=1&sig=c2ln%3D&se=x") == "/a/t()?sv=1&sig=REDACTED&se=x"
    assert redact_query("/a/t()?SIG=x") == "/a/t()?SIG=REDACTED"
    assert redact_query("/a/Tables?$top=1") == "/a/Tables?$top=1"


async def test_one_record_per_request(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=ACCESS)
    async with StubServer(access_log=True) as stub:
        key = azt.SharedKeyCredential(
            stub.account, azt.parse_connection_string(stub.connection_string).account_key or ""
        )
        async with azt.TableServiceClient.from_connection_string(stub.connection_string) as service:
            table = await service.create_table("logged")
            with pytest.raises(azt.EntityNotFoundError):
                await table.get_entity("p", "missing")
        token = azt.generate_table_sas(
            key, "logged", permission="r", expiry=datetime(2099, 1, 1, tzinfo=UTC)
        )
        signature = token.split("sig=")[1]
        async with azt.TableClient(f"{stub.endpoint}/{stub.account}", "logged", token) as sas_table:
            assert await sas_table.list_entities().to_list() == []
    records = [r for r in caplog.records if r.name == ACCESS]
    assert [(r.method, r.status) for r in records] == [  # type: ignore[attr-defined]
        ("POST", 204),
        ("GET", 404),
        ("GET", 200),
    ]
    for record in records:
        values = record.__dict__
        assert record.levelno == logging.INFO
        assert values["path"].startswith(f"/{stub.account}/")
        assert values["duration"] >= 0
        assert values["request_id"]
        assert values["client_request_id"]
        message = record.getMessage()
        for shown in (values["method"], values["path"], str(values["status"])):
            assert shown in message
        assert f"request-id {values['request_id']}" in message
    assert records[1].__dict__["path"].endswith("/logged(PartitionKey='p',RowKey='missing')")
    sas_path = records[2].__dict__["path"]
    assert "sig=REDACTED" in sas_path
    assert signature not in records[2].getMessage()


async def test_no_access_log_unless_asked(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=ACCESS)
    async with (
        StubServer() as stub,
        azt.TableServiceClient.from_connection_string(stub.connection_string) as service,
    ):
        await service.create_table("quiet")
    assert [r for r in caplog.records if r.name == ACCESS] == []


@pytest.mark.parametrize(("level", "logged"), [("info", True), ("warning", False)])
def test_command_line_log_level(level: str, logged: bool) -> None:

    with StubProcess("--port", "0", "--log-level", level) as proc:
        url = f"{proc.endpoint}/devstoreaccount1/Tables"
        request = urllib.request.Request(url, headers={"x-ms-client-request-id": "probe-1"})
        with pytest.raises(urllib.error.HTTPError) as info:  # unsigned: 401
            urllib.request.urlopen(request, timeout=10)
        assert info.value.code == 401
        info.value.close()
    access = [line for line in proc.lines if ACCESS in line]
    if logged:
        assert len(access) == 1, proc.lines
        assert "GET /devstoreaccount1/Tables 401" in access[0]
        assert "client-request-id probe-1" in access[0]
    else:
        assert access == []
