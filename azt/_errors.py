# Over 800 lines: the whole error tree and the code registry, read in one place.
"""The azt exception tree and the registry that maps service error codes onto it.

Every error azt raises derives from :class:`AztError`::

    AztError
     +-- ValidationError (also ValueError)       bad input refused before anything is sent
     |    +-- ConnectionStringError               a malformed or incomplete connection string
     |    +-- BatchValidationError                a transaction breaks a batch rule
     |    +-- PropertyLossError                   a whole-entity replace of an object that does
     |                                            not hold every stored property (refused)
     +-- ClientClosedError (also RuntimeError)   a client used after ``aclose()``
     +-- UnsupportedOperationError (also NotImplementedError)
     |                                           the account's flavour (Cosmos DB) lacks the
     |                                           operation; refused before sending
     +-- WireDecodeError (also ValueError)       a response body that does not parse
     |                                           (defined in ``azt._core.wire``)
     +-- TransportError                          no HTTP response was obtained
     |    +-- ServiceConnectionError              connect, reset, disconnect, DNS (retried)
     |    +-- ServiceTimeoutError                 the client-side timeout fired (retried)
     +-- AmbiguousOutcomeError                   a retried write met an error that the first,
     |                                           unanswered attempt may itself have caused
     +-- ServiceError                            the service answered with an error status
          +-- BadRequestError (400)
          |    +-- InvalidInputError               InvalidInput, InvalidValueType, ...
          |    +-- PropertiesError                 PropertyNameInvalid, PropertyValueTooLarge, ...
          |    +-- InvalidResourceNameError        InvalidResourceName (bad table name)
          +-- AuthenticationError (401/403)       AuthenticationFailed, NoAuthenticationInformation,
          |                                       InvalidAuthenticationInfo
          +-- AuthorizationError (403)            AuthorizationFailure, Authorization*Mismatch, ...
          +-- ResourceNotFoundError (404)
          |    +-- EntityNotFoundError             ResourceNotFound on an entity, EntityNotFound
          |    +-- TableNotFoundError              TableNotFound (and ResourceNotFound on a table)
          +-- MethodNotAllowedError (405)
          +-- ConflictError (409)
          |    +-- EntityAlreadyExistsError        EntityAlreadyExists
          |    +-- TableAlreadyExistsError         TableAlreadyExists
          |    +-- TableBeingDeletedError          TableBeingDeleted
          +-- PreconditionFailedError (412)       UpdateConditionNotSatisfied, ConditionNotMet
          +-- RequestTooLargeError (413)          RequestBodyTooLarge (and 400
          |                                       ContentLengthExceeded, EntityTooLarge)
          +-- UnsupportedMediaTypeError (415)     AtomFormatNotSupported, MediaTypeNotSupported, ...
          +-- TooManyRequestsError (429)
          +-- ServerError (5xx)
          |    +-- InternalServerError             InternalError
          |    +-- OperationTimedOutError          OperationTimedOut
          |    +-- ServiceNotImplementedError      NotImplemented (501)
          |    +-- ServerBusyError                 ServerBusy (503)
          +-- TransactionError                    an entity group transaction failed; names the
                                                  failing operation (``index``, ``operation``) and
                                                  carries the specific error in ``error``

Service errors are chosen by ``x-ms-error-code`` (see :func:`register_error_code`) and fall
back by HTTP status. Each carries ``status``, ``code``, ``message``, ``request_id`` and the
response ``headers`` (``status_code``, ``error_code`` and ``reason`` are the same under
azure-core's names). Where azure-core is importable, the classes also derive from the
matching ``azure.core.exceptions`` class (``azt._azure_bases``), so handlers written for
``azure-data-tables`` catch them.
"""

from __future__ import annotations

from collections.abc import Mapping
from http import HTTPStatus
from typing import Any, Literal, TypeVar

from azt import _azure_bases as _az

ResourceKind = Literal["entity", "table", "service"]
"""What an operation addressed; decides how ``ResourceNotFound`` is classified."""


class AztError(Exception):
    """Base class of every error azt raises.

    Example::

        >>> try:
        ...     raise ValidationError("PartitionKey contains '/'")
        ... except AztError as exc:
        ...     print(type(exc).__name__)
        ValidationError
    """


class ValidationError(AztError, ValueError):
    """Input refused client-side before any request is sent (keys, names, sizes, types).

    Example::

        >>> isinstance(ValidationError("x"), ValueError)
        True
    """


class ConnectionStringError(ValidationError):
    """A connection string that cannot be used; the message says what is wrong.

    Example::

        >>> from azt import parse_connection_string
        >>> try:
        ...     parse_connection_string("AccountName=acct")
        ... except ConnectionStringError as exc:
        ...     print("credential" in str(exc))
        True
    """


class BatchValidationError(ValidationError):
    """A transaction breaks a batch rule before it is sent.

    ``index`` is the 0-based position of the offending operation (or ``None`` when the
    batch as a whole is at fault, e.g. when it is empty).

    Example::

        >>> err = BatchValidationError("RowKey 'r1' appears twice", index=3)
        >>> err.index
        3
    """

    def __init__(self, message: str, *, index: int | None = None) -> None:
        super().__init__(message)
        self.index = index


class PropertyLossError(ValidationError):
    """A whole-entity replace (PUT) was refused because the object does not hold every
    property the stored entity has, so the replace would delete the others: it was read
    with a projection (``select``), or from a row with properties its class does not
    declare (a narrower class, or a resolver's choice). Nothing was sent; a pending change
    stays pending.

    ``properties`` names the stored properties known to be lost; ``may_lose_more`` is true
    after a projection, whose object cannot know every stored property. ``partition_key``
    and ``row_key`` name the entity. Opt in explicitly to replace anyway (see the
    ``allow_property_loss`` arguments and ``TableContext.mark_complete``), or merge instead.

    Example::

        >>> err = PropertyLossError("replace would lose 'Genre'", properties=("Genre",),
        ...                         may_lose_more=True, partition_key="p", row_key="r")
        >>> err.properties, err.may_lose_more, isinstance(err, ValidationError)
        (('Genre',), True, True)
    """

    def __init__(
        self,
        message: str,
        *,
        properties: tuple[str, ...] = (),
        may_lose_more: bool = False,
        partition_key: str | None = None,
        row_key: str | None = None,
    ) -> None:
        super().__init__(message)
        self.properties = properties
        self.may_lose_more = may_lose_more
        self.partition_key = partition_key
        self.row_key = row_key


class ClientClosedError(AztError, RuntimeError):
    """The client (or its transport) was used after ``aclose()``.

    Example::

        >>> isinstance(ClientClosedError("closed"), RuntimeError)
        True
    """


_SERVICE_NAMES = {"cosmos": "the Azure Cosmos DB Table API", "storage": "Azure Table storage"}


class UnsupportedOperationError(AztError, NotImplementedError):
    """The account's service flavour lacks this operation, so nothing was sent.

    Raised before sending, e.g. for table ACLs, service properties or statistics, CORS,
    AtomPub or the secondary endpoint on an Azure Cosmos DB Table API account (see
    ``docs/cosmos.md``). ``operation`` names what was asked for, ``flavor`` the account's
    flavour (``"cosmos"``).

    Example::

        >>> err = UnsupportedOperationError("get_service_stats", "cosmos")
        >>> err.operation, err.flavor
        ('get_service_stats', 'cosmos')
        >>> str(err)
        'get_service_stats is not supported by the Azure Cosmos DB Table API (flavor cosmos)'
    """

    def __init__(self, operation: str, flavor: str, detail: str = "") -> None:
        service = _SERVICE_NAMES.get(flavor, flavor)
        message = f"{operation} is not supported by {service} (flavor {flavor})"
        if detail:
            message = f"{message}: {detail}"
        super().__init__(message)
        self.operation = operation
        self.flavor = flavor


class TransportError(AztError, _az.AzureError):
    """No HTTP response was obtained: the request failed in the network or timed out.

    ``method`` and ``url`` name the request (the SAS signature is redacted from ``url``).

    Example::

        >>> err = ServiceConnectionError("connection reset", method="GET", url="http://h/t()")
        >>> isinstance(err, TransportError), err.method
        (True, 'GET')
    """

    def __init__(self, message: str, *, method: str = "", url: str = "") -> None:
        # Exception's own __init__, never azure-core's (see azt._azure_bases)
        Exception.__init__(self, message)
        self.message = message
        self.method = method
        self.url = url
        self.attempts = 1
        self.earlier_attempt_may_have_applied = False


class ServiceConnectionError(TransportError, _az.ServiceConnectionFailure):
    """The connection failed (refused, reset, closed early, DNS). Retried by the pipeline.

    ``sent`` is ``False`` when the failure happened before any byte of the request could
    have reached the service (connection refused), so the request was certainly not applied.

    Example::

        >>> ServiceConnectionError("refused", sent=False).sent
        False
    """

    def __init__(self, message: str, *, method: str = "", url: str = "", sent: bool = True) -> None:
        super().__init__(message, method=method, url=url)
        self.sent = sent


class ServiceTimeoutError(TransportError, _az.ServiceTimeoutFailure):
    """The client-side timeout fired before the response arrived. Retried by the pipeline.

    Example::

        >>> isinstance(ServiceTimeoutError("read timeout"), TransportError)
        True
    """


class ServiceError(AztError, _az.HttpResponseError):
    """The service answered with an error status.

    Attributes: ``status`` (HTTP status), ``code`` (``x-ms-error-code`` or the body's code,
    ``None`` if the service gave none), ``message`` (the service's text), ``request_id``
    (``x-ms-request-id``), ``client_request_id`` and ``headers`` (the response headers).
    ``attempts`` counts the HTTP attempts made; ``earlier_attempt_may_have_applied`` is true
    when an earlier attempt of the same request failed without a definite answer, so this
    error may be a consequence of the request itself having succeeded.

    Example::

        >>> err = error_from_response(404, "TableNotFound", "The table specified does not exist.")
        >>> type(err).__name__, err.status, err.code
        ('TableNotFoundError', 404, 'TableNotFound')
    """

    default_status: int | None = None

    def __init__(
        self,
        message: str,
        *,
        status: int,
        code: str | None = None,
        request_id: str | None = None,
        client_request_id: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.status = status
        self.code = code
        self.message = message
        self.request_id = request_id
        self.client_request_id = client_request_id
        self.headers: Mapping[str, str] = headers if headers is not None else {}
        self.attempts = 1
        self.earlier_attempt_may_have_applied = False
        # Exception's own __init__, never azure-core's: that would replace ``message`` and
        # set ``status_code`` (here a property reading ``status``); see azt._azure_bases
        Exception.__init__(self, self._render())

    def _render(self) -> str:
        first_line = self.message.split("\n", 1)[0] if self.message else ""
        text = f"{self.status} {self.code or '(no error code)'}: {first_line}"
        if self.request_id:
            text += f" (request id {self.request_id})"
        return text

    @property
    def status_code(self) -> int:
        """The HTTP status: ``status`` under azure-core's name (``HttpResponseError``), so
        handlers written for ``azure-data-tables`` read it unchanged.

        Example::

            >>> error_from_response(404, "TableNotFound", "x").status_code
            404
        """
        return self.status

    @property
    def error_code(self) -> str | None:
        """The service's error code: ``code`` under ``azure-data-tables``' name (it is a
        plain ``str``; ``azure.data.tables.TableErrorCode`` members compare equal to it).

        Example::

            >>> error_from_response(409, "EntityAlreadyExists", "x").error_code
            'EntityAlreadyExists'
        """
        return self.code

    @property
    def reason(self) -> str | None:
        """The HTTP reason phrase of ``status`` (azure-core's ``reason``), ``None`` for a
        status without one.

        Example::

            >>> error_from_response(412, "UpdateConditionNotSatisfied", "x").reason
            'Precondition Failed'
        """
        try:
            return HTTPStatus(self.status).phrase
        except ValueError:
            return None

    @property
    def retry_after(self) -> float | None:
        """Seconds the service asked us to wait (``x-ms-retry-after-ms`` or ``Retry-After``).

        Example::

            >>> ServerBusyError("busy", status=503, headers={"Retry-After": "2"}).retry_after
            2.0
        """
        return parse_retry_after(self.headers)


class BadRequestError(ServiceError):
    """400: the service refused the request as malformed or invalid.

    Example::

        >>> type(error_from_response(400, "InvalidHeaderValue", "bad")).__name__
        'BadRequestError'
    """


class InvalidInputError(BadRequestError):
    """400 ``InvalidInput`` / ``InvalidValueType`` / ``OutOfRangeInput`` and similar.

    Example::

        >>> type(error_from_response(400, "InvalidInput", "x")).__name__
        'InvalidInputError'
    """


class PropertiesError(BadRequestError):
    """400 about entity properties: names, values, sizes, counts, missing keys.

    Example::

        >>> type(error_from_response(400, "PropertyValueTooLarge", "x")).__name__
        'PropertiesError'
    """


class InvalidResourceNameError(BadRequestError):
    """400 ``InvalidResourceName``: a table name the service does not accept.

    Example::

        >>> type(error_from_response(400, "InvalidResourceName", "x")).__name__
        'InvalidResourceNameError'
    """


class AuthenticationError(ServiceError, _az.ClientAuthenticationError):
    """401/403: the request could not be authenticated (key, SAS signature, token, clock).

    Example::

        >>> type(error_from_response(403, "AuthenticationFailed", "x")).__name__
        'AuthenticationError'
    """


class AuthorizationError(ServiceError):
    """403: authenticated but not allowed (SAS permission, range, IP, protocol, scope).

    Example::

        >>> type(error_from_response(403, "AuthorizationPermissionMismatch", "x")).__name__
        'AuthorizationError'
    """


class ResourceNotFoundError(ServiceError, _az.ResourceNotFoundError):
    """404: the addressed table, entity or resource does not exist.

    Example::

        >>> isinstance(error_from_response(404, "TableNotFound", "x"), ResourceNotFoundError)
        True
    """


class EntityNotFoundError(ResourceNotFoundError):
    """404 on an entity operation (the service says ``ResourceNotFound``).

    Example::

        >>> type(error_from_response(404, "ResourceNotFound", "x", resource="entity")).__name__
        'EntityNotFoundError'
    """


class TableNotFoundError(ResourceNotFoundError):
    """404 ``TableNotFound`` (and ``ResourceNotFound`` on a table-level operation).

    Example::

        >>> type(error_from_response(404, "ResourceNotFound", "x", resource="table")).__name__
        'TableNotFoundError'
    """


class MethodNotAllowedError(ServiceError):
    """405: the verb is not valid for the resource.

    Example::

        >>> type(error_from_response(405, "MethodNotAllowed", "x")).__name__
        'MethodNotAllowedError'
    """


class ConflictError(ServiceError, _az.ResourceExistsError):
    """409: the request conflicts with the current state.

    Example::

        >>> isinstance(error_from_response(409, "EntityAlreadyExists", "x"), ConflictError)
        True
    """


class EntityAlreadyExistsError(ConflictError):
    """409 ``EntityAlreadyExists``: an insert met an entity with the same keys.

    Example::

        >>> type(error_from_response(409, "EntityAlreadyExists", "x")).__name__
        'EntityAlreadyExistsError'
    """


class TableAlreadyExistsError(ConflictError):
    """409 ``TableAlreadyExists``.

    Example::

        >>> type(error_from_response(409, "TableAlreadyExists", "x")).__name__
        'TableAlreadyExistsError'
    """


class TableBeingDeletedError(ConflictError):
    """409 ``TableBeingDeleted``: the name is unavailable for a while after a delete.

    Example::

        >>> type(error_from_response(409, "TableBeingDeleted", "x")).__name__
        'TableBeingDeletedError'
    """


class PreconditionFailedError(ServiceError, _az.ResourceModifiedError):
    """412 ``UpdateConditionNotSatisfied``: the ETag no longer matches (re-read and retry).

    Example::

        >>> type(error_from_response(412, "UpdateConditionNotSatisfied", "x")).__name__
        'PreconditionFailedError'
    """


class RequestTooLargeError(ServiceError):
    """413 ``RequestBodyTooLarge`` (also 400 ``ContentLengthExceeded`` / ``EntityTooLarge``).

    Example::

        >>> type(error_from_response(413, "RequestBodyTooLarge", "x")).__name__
        'RequestTooLargeError'
    """


class UnsupportedMediaTypeError(ServiceError):
    """415: the payload format is not accepted (e.g. AtomPub at a JSON-only version).

    Example::

        >>> type(error_from_response(415, "AtomFormatNotSupported", "x")).__name__
        'UnsupportedMediaTypeError'
    """


class TooManyRequestsError(ServiceError):
    """429: throttled (retried with back-off).

    Example::

        >>> type(error_from_response(429, None, "slow down")).__name__
        'TooManyRequestsError'
    """


class ServerError(ServiceError):
    """5xx: the service failed; retried unless it is 501 or 505.

    Example::

        >>> type(error_from_response(502, None, "bad gateway")).__name__
        'ServerError'
    """


class InternalServerError(ServerError):
    """500 ``InternalError``.

    Example::

        >>> type(error_from_response(500, "InternalError", "x")).__name__
        'InternalServerError'
    """


class OperationTimedOutError(ServerError):
    """500 ``OperationTimedOut``: the service ran out of time; the write may have happened.

    Example::

        >>> type(error_from_response(500, "OperationTimedOut", "x")).__name__
        'OperationTimedOutError'
    """


class ServiceNotImplementedError(ServerError):
    """501 ``NotImplemented``. Never retried.

    Example::

        >>> type(error_from_response(501, "NotImplemented", "x")).__name__
        'ServiceNotImplementedError'
    """


class ServerBusyError(ServerError):
    """503 ``ServerBusy``: throttled or rebalancing; retried with back-off.

    Example::

        >>> type(error_from_response(503, "ServerBusy", "x")).__name__
        'ServerBusyError'
    """


class TransactionError(ServiceError):
    """An entity group transaction failed and nothing in it was applied.

    ``index`` is the 0-based position of the failing operation (``None`` when the service
    did not say), ``operation`` that operation (an ``azt.BatchOperation``) and
    ``error`` the specific :class:`ServiceError` the operation met (for example an
    :class:`EntityAlreadyExistsError`), which is also this exception's ``__cause__``.

    Example::

        >>> inner = error_from_response(409, "EntityAlreadyExists", "0:exists")
        >>> err = TransactionError.from_error(inner, index=0, operation=None)
        >>> err.index, type(err.error).__name__
        (0, 'EntityAlreadyExistsError')
    """

    def __init__(
        self,
        message: str,
        *,
        status: int,
        code: str | None = None,
        request_id: str | None = None,
        client_request_id: str | None = None,
        headers: Mapping[str, str] | None = None,
        index: int | None = None,
        operation: Any = None,
        error: ServiceError | None = None,
    ) -> None:
        self.index = index
        self.operation = operation
        self.error = error
        super().__init__(
            message,
            status=status,
            code=code,
            request_id=request_id,
            client_request_id=client_request_id,
            headers=headers,
        )

    @classmethod
    def from_error(
        cls, error: ServiceError, *, index: int | None, operation: Any
    ) -> TransactionError:
        """Wrap the failing part's error, naming the operation.

        Example::

            >>> inner = error_from_response(404, "ResourceNotFound", "1:gone", resource="entity")
            >>> TransactionError.from_error(inner, index=1, operation=None).index
            1
        """
        exc = cls(
            error.message,
            status=error.status,
            code=error.code,
            request_id=error.request_id,
            client_request_id=error.client_request_id,
            headers=error.headers,
            index=index,
            operation=operation,
            error=error,
        )
        exc.__cause__ = error
        return exc

    def _render(self) -> str:
        base = super()._render()
        if self.index is None:
            return f"transaction failed: {base}"
        op = f" ({self.operation!r})" if self.operation is not None else ""
        return f"transaction failed at operation {self.index}{op}: {base}"


class AmbiguousOutcomeError(AztError):
    """A retried write met an error its own first attempt may have caused.

    Raised (under ``AmbiguousOutcomePolicy.RAISE``) when an earlier attempt got no definite
    answer (lost response, timeout, 5xx) and the retry then met ``409 EntityAlreadyExists``
    (insert), ``404`` (delete, update) or ``412`` (conditional write): the first attempt may
    have succeeded. ``error`` is the service error of the final attempt, ``operation`` names
    what was attempted, ``attempts`` counts the attempts.

    Example::

        >>> inner = error_from_response(409, "EntityAlreadyExists", "exists")
        >>> err = AmbiguousOutcomeError("insert", inner, attempts=2)
        >>> "may have succeeded" in str(err)
        True
    """

    def __init__(self, operation: str, error: ServiceError, *, attempts: int) -> None:
        self.operation = operation
        self.error = error
        self.attempts = attempts
        self.request_id = error.request_id
        super().__init__(
            f"{operation}: the first attempt may have succeeded: an earlier attempt got no "
            f"definite answer and attempt {attempts} met {error.status} "
            f"{error.code or '(no code)'}"
        )
        self.__cause__ = error


# --- registry -----------------------------------------------------------------------------

_E = TypeVar("_E", bound=type[ServiceError])

_BY_CODE: dict[str, type[ServiceError]] = {}
_BY_STATUS: dict[int, type[ServiceError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: AuthorizationError,
    404: ResourceNotFoundError,
    405: MethodNotAllowedError,
    409: ConflictError,
    412: PreconditionFailedError,
    413: RequestTooLargeError,
    415: UnsupportedMediaTypeError,
    429: TooManyRequestsError,
    500: InternalServerError,
    501: ServiceNotImplementedError,
    503: ServerBusyError,
}


def register_error_code(*codes: str) -> Any:
    """Class decorator (or call) registering a :class:`ServiceError` subclass for codes.

    Example::

        >>> class QuotaError(ServiceError):
        ...     pass
        >>> _ = register_error_code("MyQuotaExceeded")(QuotaError)
        >>> type(error_from_response(400, "MyQuotaExceeded", "x")).__name__
        'QuotaError'
    """

    def decorate(cls: _E) -> _E:
        for code in codes:
            _BY_CODE[code] = cls
        return cls

    return decorate


for _cls, _codes in (
    (
        InvalidInputError,
        (
            "InvalidInput",
            "InvalidValueType",
            "OutOfRangeInput",
            "InvalidDuplicateRow",
            "CommandsInBatchActOnDifferentPartitions",
            "InvalidQueryParameterValue",
            "OutOfRangeQueryParameterValue",
            "UnsupportedQueryParameter",
        ),
    ),
    (
        PropertiesError,
        (
            "PropertiesNeedValue",
            "PropertyNameInvalid",
            "PropertyNameTooLong",
            "PropertyValueTooLarge",
            "KeyValueTooLarge",
            "TooManyProperties",
            "DuplicatePropertiesSpecified",
        ),
    ),
    (InvalidResourceNameError, ("InvalidResourceName",)),
    (
        AuthenticationError,
        ("AuthenticationFailed", "NoAuthenticationInformation", "InvalidAuthenticationInfo"),
    ),
    (
        AuthorizationError,
        (
            "AuthorizationFailure",
            "AuthorizationPermissionMismatch",
            "AuthorizationServiceMismatch",
            "AuthorizationResourceTypeMismatch",
            "AuthorizationProtocolMismatch",
            "AuthorizationSourceIPMismatch",
            "InsufficientAccountPermissions",
            "AccountIsDisabled",
        ),
    ),
    (EntityNotFoundError, ("EntityNotFound",)),
    (TableNotFoundError, ("TableNotFound",)),
    (MethodNotAllowedError, ("MethodNotAllowed", "UnsupportedHttpVerb")),
    (EntityAlreadyExistsError, ("EntityAlreadyExists",)),
    (TableAlreadyExistsError, ("TableAlreadyExists",)),
    (TableBeingDeletedError, ("TableBeingDeleted",)),
    (PreconditionFailedError, ("UpdateConditionNotSatisfied", "ConditionNotMet")),
    (RequestTooLargeError, ("RequestBodyTooLarge", "ContentLengthExceeded", "EntityTooLarge")),
    (
        UnsupportedMediaTypeError,
        (
            "AtomFormatNotSupported",
            "JsonFormatNotSupported",
            "JsonVerboseFormatNotSupported",
            "MediaTypeNotSupported",
        ),
    ),
    (InternalServerError, ("InternalError",)),
    (OperationTimedOutError, ("OperationTimedOut",)),
    (ServiceNotImplementedError, ("NotImplemented",)),
    (ServerBusyError, ("ServerBusy",)),
):
    register_error_code(*_codes)(_cls)


def error_class_for(
    status: int, code: str | None, *, resource: ResourceKind | None = None
) -> type[ServiceError]:
    """The exception class for a status and error code.

    ``ResourceNotFound`` is the service's answer both for a missing entity and for a missing
    table (Delete Table), so ``resource`` says which one the operation addressed.

    Example::

        >>> error_class_for(404, "ResourceNotFound", resource="table").__name__
        'TableNotFoundError'
        >>> error_class_for(418, None).__name__
        'ServiceError'
    """
    if code == "ResourceNotFound" or (code is None and status == 404):
        if resource == "entity":
            return EntityNotFoundError
        if resource == "table":
            return TableNotFoundError
        return ResourceNotFoundError
    if code is not None:
        cls = _BY_CODE.get(code)
        if cls is not None:
            return cls
    cls = _BY_STATUS.get(status)
    if cls is not None:
        return cls
    if status >= 500:
        return ServerError
    return ServiceError


def error_from_response(
    status: int,
    code: str | None,
    message: str | None,
    *,
    request_id: str | None = None,
    client_request_id: str | None = None,
    headers: Mapping[str, str] | None = None,
    resource: ResourceKind | None = None,
) -> ServiceError:
    """Build the registered :class:`ServiceError` for a failed response.

    Example::

        >>> err = error_from_response(409, "EntityAlreadyExists", "exists", request_id="r1")
        >>> type(err).__name__, err.request_id
        ('EntityAlreadyExistsError', 'r1')
    """
    cls = error_class_for(status, code, resource=resource)
    return cls(
        message or "",
        status=status,
        code=code,
        request_id=request_id,
        client_request_id=client_request_id,
        headers=headers,
    )


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from ``x-ms-retry-after-ms``, ``retry-after-ms`` or ``Retry-After``.

    ``Retry-After`` may be a number of seconds or an HTTP date. Unparseable values are
    ignored (``None``).

    Example::

        >>> parse_retry_after({"x-ms-retry-after-ms": "1500"})
        1.5
    """
    for name in ("x-ms-retry-after-ms", "retry-after-ms"):
        raw = _header(headers, name)
        if raw is not None:
            try:
                return max(0.0, float(raw) / 1000.0)
            except ValueError:
                pass
    raw = _header(headers, "retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    import email.utils
    import time

    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is not None:
        return value
    lowered = name.lower()
    for key, val in headers.items():
        if key.lower() == lowered:
            return val
    return None
