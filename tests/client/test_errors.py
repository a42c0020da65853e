"""The exception tree and the error-code registry."""

from __future__ import annotations

import pytest

import azt
from azt._core.pipeline import Pipeline, decode_error_body
from azt._core.transport import HttpResponse
from azt._errors import error_class_for, error_from_response, parse_retry_after


@pytest.mark.parametrize(
    ("status", "code", "resource", "cls"),
    [
        (404, "ResourceNotFound", "entity", azt.EntityNotFoundError),
        (404, "ResourceNotFound", "table", azt.TableNotFoundError),
        (404, "ResourceNotFound", None, azt.ResourceNotFoundError),
        (404, "TableNotFound", "entity", azt.TableNotFoundError),
        (404, "EntityNotFound", None, azt.EntityNotFoundError),
        (409, "EntityAlreadyExists", None, azt.EntityAlreadyExistsError),
        (409, "TableAlreadyExists", None, azt.TableAlreadyExistsError),
        (409, "TableBeingDeleted", None, azt.TableBeingDeletedError),
        (409, "SomethingNew", None, azt.ConflictError),
        (412, "UpdateConditionNotSatisfied", None, azt.PreconditionFailedError),
        (403, "AuthenticationFailed", None, azt.AuthenticationError),
        (401, "NoAuthenticationInformation", None, azt.AuthenticationError),
        (403, "AuthorizationPermissionMismatch", None, azt.AuthorizationError),
        (503, "ServerBusy", None, azt.ServerBusyError),
        (500, "OperationTimedOut", None, azt.OperationTimedOutError),
        (500, "InternalError", None, azt.InternalServerError),
        (413, "RequestBodyTooLarge", None, azt.RequestTooLargeError),
        (400, "EntityTooLarge", None, azt.RequestTooLargeError),
        (400, "PropertyValueTooLarge", None, azt.PropertiesError),
        (400, "InvalidInput", None, azt.InvalidInputError),
        (400, "InvalidResourceName", None, azt.InvalidResourceNameError),
        (400, None, None, azt.BadRequestError),
        (415, "AtomFormatNotSupported", None, azt.UnsupportedMediaTypeError),
        (429, None, None, azt.TooManyRequestsError),
        (502, None, None, azt.ServerError),
        (418, None, None, azt.ServiceError),
    ],
)
def test_registry(status: int, code: str | None, resource: str | None, cls: type) -> None:
    assert error_class_for(status, code, resource=resource) is cls  # type: ignore[arg-type]
    err = error_from_response(status, code, "msg", request_id="rid", resource=resource)  # type: ignore[arg-type]
    assert type(err) is cls
    assert (err.status, err.code, err.message, err.request_id) == (status, code, "msg", "rid")
    assert isinstance(err, azt.ServiceError)
    assert isinstance(err, azt.AztError)


def test_tree_shape() -> None:
    assert issubclass(azt.ValidationError, ValueError)
    assert issubclass(azt.ConnectionStringError, azt.ValidationError)
    assert issubclass(azt.BatchValidationError, azt.ValidationError)
    assert issubclass(azt.ClientClosedError, RuntimeError)
    assert issubclass(azt.ServiceTimeoutError, azt.TransportError)
    assert issubclass(azt.TransactionError, azt.ServiceError)
    assert not issubclass(azt.AmbiguousOutcomeError, azt.ServiceError)


def test_register_custom_code() -> None:
    @azt.register_error_code("AztTestOnlyCode")
    class Custom(azt.ServiceError):
        pass

    assert type(error_from_response(400, "AztTestOnlyCode", "x")) is Custom


def test_error_from_http_response_reads_header_then_body() -> None:
    resp = HttpResponse(
        404,
        {
            "x-ms-error-code": "TableNotFound",
            "x-ms-request-id": "r9",
            "Content-Type": "application/json;odata=minimalmetadata",
        },
        b'{"odata.error":{"code":"Other","message":{"lang":"en-US",'
        b'"value":"The table specified does not exist.\\nRequestId:r9"}}}',
    )
    err = Pipeline.error_for(resp, "entity", "client-1")
    assert type(err) is azt.TableNotFoundError
    assert err.code == "TableNotFound"
    assert err.message.startswith("The table specified does not exist.")
    assert err.request_id == "r9"
    assert err.client_request_id == "client-1"
    assert str(err) == "404 TableNotFound: The table specified does not exist. (request id r9)"


@pytest.mark.parametrize(
    ("ctype", "body", "expected"),
    [
        (
            "application/xml",
            b'\xef\xbb\xbf<?xml version="1.0" encoding="utf-8"?><Error><Code>AuthenticationFailed'
            b"</Code><Message>Server failed</Message></Error>",
            ("AuthenticationFailed", "Server failed"),
        ),
        (
            "application/xml;charset=utf-8",
            b'<?xml version="1.0"?><m:error xmlns:m="http://schemas.microsoft.com/ado/2007/08/'
            b'dataservices/metadata"><m:code>InvalidInput</m:code><m:message xml:lang="en-US">'
            b"1:bad</m:message></m:error>",
            ("InvalidInput", "1:bad"),
        ),
        ("text/plain", b"gateway exploded", (None, "gateway exploded")),
        ("application/json", b"{not json", (None, "{not json")),
        ("", b"", (None, None)),
    ],
)
def test_decode_error_body_formats(
    ctype: str, body: bytes, expected: tuple[str | None, str | None]
) -> None:
    assert decode_error_body(ctype, body) == expected


def test_error_without_code_falls_back_by_status() -> None:
    err = Pipeline.error_for(HttpResponse(503, {}, b"", reason="Service Unavailable"))
    assert type(err) is azt.ServerBusyError
    assert err.code is None
    assert err.message == "Service Unavailable"


def test_transaction_error_names_the_operation() -> None:
    inner = error_from_response(
        409, "EntityAlreadyExists", "2:The specified entity already exists."
    )
    op = azt.BatchOperation("create", {"PartitionKey": "p", "RowKey": "r3"})
    err = azt.TransactionError.from_error(inner, index=2, operation=op)
    assert err.index == 2
    assert err.operation is op
    assert err.error is inner
    assert err.__cause__ is inner
    assert "operation 2 (create(PartitionKey='p', RowKey='r3'))" in str(err)


def test_parse_retry_after() -> None:
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    assert parse_retry_after({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None
