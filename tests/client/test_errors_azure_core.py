"""azt's errors are azure-core's too where azure-core is importable (azt._azure_bases), and
azt's own tree alone where it is not (checked in a subprocess that cannot import it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from azure.core import exceptions as ac
from azure.data.tables.aio import TableClient as AdtTableClient

import azt
from azt import _azure_bases
from azt._errors import error_from_response
from azt_server_stub import StubServer

ROOT = Path(__file__).resolve().parents[2]

#: (status, code, resource) -> the azure-core class a handler written for azure-data-tables
#: catches it with; azure-data-tables raises the same for the same answer
MAPPING = [
    (404, "ResourceNotFound", "entity", ac.ResourceNotFoundError),
    (404, "TableNotFound", None, ac.ResourceNotFoundError),
    (409, "EntityAlreadyExists", None, ac.ResourceExistsError),
    (409, "TableAlreadyExists", None, ac.ResourceExistsError),
    (409, "TableBeingDeleted", None, ac.ResourceExistsError),
    (412, "UpdateConditionNotSatisfied", None, ac.ResourceModifiedError),
    (403, "AuthenticationFailed", None, ac.ClientAuthenticationError),
    (400, "InvalidInput", None, ac.HttpResponseError),
    (403, "AuthorizationPermissionMismatch", None, ac.HttpResponseError),
    (503, "ServerBusy", None, ac.HttpResponseError),
]


def _is(obj: object, cls: type) -> bool:
    """``isinstance``, hidden from the type checker: for it azt's tree is its own (the
    bridge exists only at run time), so it would call these checks unreachable."""
    return isinstance(obj, cls)


def test_the_bridge_is_on_in_this_environment() -> None:
    assert _azure_bases.AZURE_CORE_BRIDGED


@pytest.mark.parametrize(("status", "code", "resource", "azure_class"), MAPPING)
def test_service_errors_are_the_matching_azure_core_class(
    status: int, code: str, resource: str | None, azure_class: type[Exception]
) -> None:
    err = error_from_response(status, code, "The text.\nRequestId:x", resource=resource)  # type: ignore[arg-type]
    assert _is(err, azure_class)
    assert _is(err, ac.HttpResponseError)
    assert _is(err, azt.ServiceError)
    # azure-core's field names read azt's values; azt's own are untouched
    assert (err.status_code, err.error_code) == (err.status, err.code) == (status, code)
    assert err.message == "The text.\nRequestId:x"
    assert str(err) == f"{status} {code}: The text."
    assert getattr(err, "response", "absent") is None  # azure-core's field, bridged only
    assert err.reason is not None
    for other in (ac.ResourceNotFoundError, ac.ResourceExistsError, ac.ResourceModifiedError):
        if other is not azure_class:
            assert not _is(err, other)


def test_transport_errors_are_azure_core_transport_errors() -> None:
    conn = azt.ServiceConnectionError("reset", method="GET", url="http://h/t()")
    assert _is(conn, ac.ServiceRequestError)
    assert _is(conn, ac.ServiceResponseError)
    assert conn.message == "reset"
    timeout = azt.ServiceTimeoutError("read timeout")
    assert _is(timeout, ac.ServiceRequestTimeoutError)
    assert _is(timeout, ac.ServiceResponseTimeoutError)
    assert _is(timeout, ac.AzureError)
    # what azure-core has no counterpart for stays azt's own
    assert not _is(azt.ValidationError("x"), ac.AzureError)
    inner = error_from_response(409, "EntityAlreadyExists", "x")
    assert not _is(azt.AmbiguousOutcomeError("insert", inner, attempts=2), ac.AzureError)


def test_transaction_error_keeps_its_own_error_field() -> None:
    inner = error_from_response(409, "EntityAlreadyExists", "0:exists")
    err = azt.TransactionError.from_error(inner, index=0, operation=None)
    assert err.error is inner
    assert _is(err, ac.HttpResponseError)
    assert err.status_code == 409
    plain = error_from_response(400, "InvalidInput", "x")
    assert getattr(plain, "error", "absent") is None  # azure-core's parsed OData error


async def test_both_sdks_raise_the_same_azure_core_class_for_the_same_answer() -> None:
    async with StubServer() as stub:
        theirs = AdtTableClient.from_connection_string(stub.connection_string, "errs")
        ours = azt.TableClient.from_connection_string(stub.connection_string, "errs")
        async with theirs, ours:
            seen: list[tuple[object, ...]] = []
            for client in (theirs, ours):
                try:
                    await client.get_entity("p", "r")
                except ac.ResourceNotFoundError as exc:
                    seen.append(("table", exc.status_code))
            await ours.create_table()
            for client in (theirs, ours):
                try:
                    await client.create_table()
                except ac.ResourceExistsError as exc:
                    code = getattr(exc, "error_code", None)  # set by both SDKs, typed by neither
                    seen.append(("exists", exc.status_code, code == "TableAlreadyExists"))
    assert seen == [
        ("table", 404),
        ("table", 404),
        ("exists", 409, True),
        ("exists", 409, True),
    ]


_PROBE = textwrap.dedent(
    """
    import json, sys

    class BlockAzure:
        def find_spec(self, name, path=None, target=None):
            if name == "azure" or name.startswith("azure."):
                raise ImportError(f"blocked for the test: {name}")
            return None

    if BLOCK:
        sys.meta_path.insert(0, BlockAzure())
    import azt
    from azt import _azure_bases
    from azt._errors import error_from_response

    err = error_from_response(404, "ResourceNotFound", "gone", resource="entity")
    mro = [c.__module__ + "." + c.__name__ for c in type(err).__mro__]
    try:
        raise err
    except azt.ResourceNotFoundError as caught:
        fields = [caught.status_code, caught.error_code, caught.reason, str(caught)]
    print(json.dumps({
        "bridged": _azure_bases.AZURE_CORE_BRIDGED,
        "azure_loaded": any(m == "azure" or m.startswith("azure.") for m in sys.modules),
        "mro": mro,
        "fields": fields,
        "conn_mro": [c.__name__ for c in azt.ServiceConnectionError.__mro__],
    }))
    """
)


def _probe(block: bool, **env: str) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, "-c", f"BLOCK = {block}\n" + _PROBE],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout)
    return result


@pytest.mark.parametrize("how", ["blocked", "switched_off"])
def test_without_azure_core_the_tree_is_azts_own(how: str) -> None:
    if how == "blocked":
        result = _probe(True)
        assert result["azure_loaded"] is False
    else:
        result = _probe(False, AZT_AZURE_CORE_ERRORS="0")
    assert result["bridged"] is False
    assert result["mro"] == [
        "azt._errors.EntityNotFoundError",
        "azt._errors.ResourceNotFoundError",
        "azt._errors.ServiceError",
        "azt._errors.AztError",
        "builtins.Exception",
        "builtins.BaseException",
        "builtins.object",
    ]
    # the azure-core names of the fields are azt's own properties: there either way
    assert result["fields"] == [404, "ResourceNotFound", "Not Found", "404 ResourceNotFound: gone"]
    assert result["conn_mro"] == [
        "ServiceConnectionError",
        "TransportError",
        "AztError",
        "Exception",
        "BaseException",
        "object",
    ]


def test_with_azure_core_a_fresh_import_bridges() -> None:
    result = _probe(False)
    assert result["bridged"] is True
    mro = result["mro"]
    assert isinstance(mro, list)
    assert "azure.core.exceptions.ResourceNotFoundError" in mro
    assert "azure.core.exceptions.HttpResponseError" in mro
    assert result["fields"] == [404, "ResourceNotFound", "Not Found", "404 ResourceNotFound: gone"]
