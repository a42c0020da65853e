"""Typed values sent as JSON strings with ``@odata.type`` (issue 18, point 2).

Azure converts an annotated JSON string with the parser of the declared type; the stub
accepts what the evidence shows and refuses the rest with ``400 InvalidInput``, on every
path that reads a JSON entity (insert, update/merge, batch parts: one parser).

Evidence: a real account's recording in azure-sdk-for-python,
``sdk/tables/azure-data-tables/tests/recordings/test_table_entity.pyTestTableEntitytest_entity_with_edmtypes.json``
(test ``test_entity_with_edmtypes``, PR Azure/azure-sdk-for-python#24290): an upsert with
``"bool":"false"`` (Edm.Boolean), ``"amount":"0"`` (Edm.Double), ``"bigNumber":"64"``
(Edm.Int64) and a DateTime without ``Z`` answered 204 and read back typed; ``"not a
bool"`` answered 400 InvalidInput. Boolean strings in other cases (``"TRUE"``) and Int32
digit strings: the Storage Explorer maintainer's statements that Azure accepts them
(Azure/Azurite#1947, microsoft/AzureStorageExplorer#5299 with Azure/Azurite#1259).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from azt_server_stub.errors import StubError
from azt_server_stub.formats.json import convert_value
from azt_server_stub.model import Edm
from tests.stub.conftest import JSON_NONE, RawClient
from tests.stub.test_http_batch import envelope, parts_of, post_batch, request_part
from tests.stub.test_http_raw import JSON_HEADERS, make_table

ENTITY = "/mytable(PartitionKey='p',RowKey='r')"


async def _upsert(raw: RawClient, members: dict[str, Any]) -> tuple[int, str | None]:
    r = await raw.request("PATCH", ENTITY, headers=JSON_HEADERS, body=json.dumps(members))
    return r.status, r.code


async def _read(raw: RawClient) -> dict[str, Any]:
    r = await raw.request("GET", ENTITY, headers={"Accept": JSON_NONE})
    assert r.status == 200, r.body
    value: dict[str, Any] = r.json()
    return value


async def test_the_recorded_edm_types_body(raw: RawClient) -> None:
    """The body of test_entity_with_edmtypes, as recorded against a real account."""
    await make_table(raw)
    body = {
        "PartitionKey": "p",
        "PartitionKey@odata.type": "Edm.String",
        "RowKey": "r",
        "RowKey@odata.type": "Edm.String",
        "bool": "false",
        "bool@odata.type": "Edm.Boolean",
        "text": "42",
        "text@odata.type": "Edm.String",
        "number": 23,
        "number@odata.type": "Edm.Int32",
        "bigNumber": "64",
        "bigNumber@odata.type": "Edm.Int64",
        "bytes": "dGVzdA==",
        "bytes@odata.type": "Edm.Binary",
        "amount": "0",
        "amount@odata.type": "Edm.Double",
        "since": "2008-07-10T00:00:00",
        "since@odata.type": "Edm.DateTime",
        "guid": "1c241d2e-45c9-4a7a-9c1d-bb0a8a1b1a4e",
        "guid@odata.type": "Edm.Guid",
    }
    assert await _upsert(raw, body) == (204, None)
    got = await _read(raw)
    assert got["bool"] is False
    assert got["text"] == "42"
    assert got["number"] == 23
    assert got["amount"] == 0.0
    assert got["since"] == "2008-07-10T00:00:00Z"
    body["bool"] = "not a bool"
    assert await _upsert(raw, body) == (400, "InvalidInput")


@pytest.mark.parametrize(("text", "value"), [("true", True), ("TRUE", True), ("False", False)])
async def test_boolean_strings_in_any_case(raw: RawClient, text: str, value: bool) -> None:
    """Azure/Azurite#1947: Azure takes "TRUE"/"FALSE" for Edm.Boolean."""
    await make_table(raw)
    assert await _upsert(raw, {"B": text, "B@odata.type": "Edm.Boolean"}) == (204, None)
    assert (await _read(raw))["B"] is value


@pytest.mark.parametrize("text", ["yes", "1", "0", "", " true", "true\n", "tru"])
def test_other_boolean_strings_are_refused(text: str) -> None:
    """Only the words true/false: the recorded "not a bool" was a 400 InvalidInput."""
    with pytest.raises(StubError) as err:
        convert_value("B", "Edm.Boolean", text)
    assert (err.value.status, err.value.code) == (400, "InvalidInput")


async def test_int32_digit_strings(raw: RawClient) -> None:
    """AzureStorageExplorer#5299 / Azurite#1259: an annotated "23" is an Int32 on Azure."""
    await make_table(raw)
    members = {
        "N": "23",
        "N@odata.type": "Edm.Int32",
        "M": "-2147483648",
        "M@odata.type": "Edm.Int32",
        "P": "+7",
        "P@odata.type": "Edm.Int32",
    }
    assert await _upsert(raw, members) == (204, None)
    got = await _read(raw)
    assert (got["N"], got["M"], got["P"]) == (23, -2147483648, 7)
    r = await raw.request("GET", ENTITY, headers={"Accept": "application/json;odata=fullmetadata"})
    assert "N@odata.type" not in r.json()  # an Int32, not a String or an Int64


@pytest.mark.parametrize(
    "text", ["2147483648", "-2147483649", "1.0", "0x10", "", "23 ", "23\n", "\u0663", "1e3"]
)
def test_other_int32_strings_are_refused(text: str) -> None:
    """Out of range or not a plain decimal integer: 400 InvalidInput."""
    with pytest.raises(StubError) as err:
        convert_value("N", "Edm.Int32", text)
    assert (err.value.status, err.value.code) == (400, "InvalidInput")


@pytest.mark.parametrize(
    ("edm", "text"),
    [
        ("Edm.Int64", "5\n"),
        ("Edm.Int64", "\u0661\u0662"),  # Arabic-Indic digits: \d matched them
        ("Edm.Double", "1.5\n"),
        ("Edm.Double", "\u0661.5"),
        ("Edm.Guid", "1c241d2e-45c9-4a7a-9c1d-bb0a8a1b1a4e\n"),  # was a 500 (ValueError)
        ("Edm.DateTime", "2008-07-10T00:00:00Z\n"),
        ("Edm.DateTime", "\u0662008-07-10T00:00:00Z"),
    ],
)
def test_lexical_forms_are_exact(edm: str, text: str) -> None:
    """A trailing newline or non-ASCII digits are not the type's lexical form."""
    with pytest.raises(StubError) as err:
        convert_value("V", edm, text)
    assert (err.value.status, err.value.code) == (400, "InvalidInput")


def test_unannotated_strings_stay_strings() -> None:
    """Without an annotation a JSON string is an Edm.String, whatever it looks like."""
    assert convert_value("B", None, "true") == (Edm.STRING, "true")
    assert convert_value("N", None, "23") == (Edm.STRING, "23")


async def test_batch_parts_use_the_same_rules(raw: RawClient) -> None:
    """A change set's inserts read the typed strings exactly as a single insert does."""
    await make_table(raw)
    typed = {"B": "TRUE", "B@odata.type": "Edm.Boolean", "N": "23", "N@odata.type": "Edm.Int32"}
    good = json.dumps({"PartitionKey": "p", "RowKey": "r", **typed})
    r = await post_batch(raw, envelope([request_part("POST", "/mytable", good)]))
    assert r.status == 202, r.body
    assert [status for status, _, _ in parts_of(r.body)] == [201]
    got = await _read(raw)
    assert (got["B"], got["N"]) == (True, 23)
    bad = json.dumps(
        {"PartitionKey": "p", "RowKey": "s", "B": "yes", "B@odata.type": "Edm.Boolean"}
    )
    r = await post_batch(raw, envelope([request_part("POST", "/mytable", bad)]))
    assert r.status == 202, r.body
    [(status, _headers, body)] = parts_of(r.body)
    assert status == 400
    assert json.loads(body)["odata.error"]["code"] == "InvalidInput"
