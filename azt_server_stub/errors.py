"""Service errors raised anywhere in the stub and rendered by the HTTP layer.

Every refusal is a :class:`StubError` carrying the HTTP status, the service's
error code and its message text (verbatim where the service's text is known).
The HTTP layer renders it as an ``odata.error`` JSON body, an OData XML body
(Atom clients) or a storage XML body (ACL / service properties / auth), always
with the ``x-ms-error-code`` header. Nothing else should be raised out of a
request handler: an unexpected exception is a stub bug and becomes a logged
``500 InternalError``.

Example::

    >>> err = entity_already_exists()
    >>> (err.status, err.code)
    (409, 'EntityAlreadyExists')
"""

from __future__ import annotations


class StubError(Exception):
    """A service error: HTTP status, error code, message, optional detail members.

    ``index`` is set for a failure inside a batch (0-based operation index); the
    renderer then prefixes the message with ``"<index>:"``.

    Example::

        >>> StubError(400, "InvalidInput", "One of the request inputs is not valid.").status
        400
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        details: dict[str, str] | None = None,
        index: int | None = None,
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details = dict(details or {})
        self.index = index

    def at(self, index: int) -> StubError:
        """A copy of this error attributed to batch operation ``index``."""
        return StubError(self.status, self.code, self.message, details=self.details, index=index)


# --- 400 ----------------------------------------------------------------------


def invalid_input(message: str = "One of the request inputs is not valid.") -> StubError:
    """``400 InvalidInput``: the generic refusal of a malformed request."""
    return StubError(400, "InvalidInput", message)


def invalid_value_type(message: str = "The value specified is invalid.") -> StubError:
    """``400 InvalidValueType``."""
    return StubError(400, "InvalidValueType", message)


def out_of_range_input(message: str = "One of the request inputs is out of range.") -> StubError:
    """``400 OutOfRangeInput`` (also used for table-name length and DateTime < 1601)."""
    return StubError(400, "OutOfRangeInput", message)


def properties_need_value() -> StubError:
    """``400 PropertiesNeedValue``: PartitionKey or RowKey missing."""
    return StubError(
        400, "PropertiesNeedValue", "The values are not specified for all properties in the entity."
    )


def property_name_invalid() -> StubError:
    """``400 PropertyNameInvalid``."""
    return StubError(400, "PropertyNameInvalid", "The property name is invalid.")


def property_name_too_long() -> StubError:
    """``400 PropertyNameTooLong``."""
    return StubError(
        400, "PropertyNameTooLong", "The property name exceeds the maximum allowed length (255)."
    )


def property_value_too_large() -> StubError:
    """``400 PropertyValueTooLarge``: a string or binary over 64 KiB."""
    return StubError(
        400,
        "PropertyValueTooLarge",
        "The property value exceeds the maximum allowed size (64KB). If the property value is a "
        "string, it is UTF-16 encoded and the maximum number of characters should be 32K or less.",
    )


def key_value_too_large(which: str) -> StubError:
    """``400 KeyValueTooLarge`` for ``which`` = ``"PartitionKey"`` or ``"RowKey"``."""
    return StubError(
        400,
        "KeyValueTooLarge",
        f"The '{which}' property exceeds the maximum allowed key size (2KB). It is a UTF-16 "
        "encoded string and the maximum number of characters should be 1K or less.",
    )


def entity_too_large() -> StubError:
    """``400 EntityTooLarge``: over 1 MiB."""
    return StubError(
        400, "EntityTooLarge", "The entity is larger than the maximum allowed size (1MB)."
    )


def too_many_properties() -> StubError:
    """``400 TooManyProperties``: over 252 custom properties."""
    return StubError(
        400,
        "TooManyProperties",
        "The entity contains more properties than allowed. Each entity can include up to 252 "
        "properties to store data. Each entity also has 3 system properties.",
    )


def duplicate_properties_specified() -> StubError:
    """``400 DuplicatePropertiesSpecified``: the same property twice in one body."""
    return StubError(400, "DuplicatePropertiesSpecified", "A property is specified more than once.")


def invalid_duplicate_row() -> StubError:
    """``400 InvalidDuplicateRow``: the same entity twice in one batch."""
    return StubError(
        400,
        "InvalidDuplicateRow",
        "The batch request contains multiple changes with same row key. An entity can appear "
        "only once in a batch request.",
    )


def commands_in_batch_act_on_different_partitions() -> StubError:
    """``400 CommandsInBatchActOnDifferentPartitions``."""
    return StubError(
        400,
        "CommandsInBatchActOnDifferentPartitions",
        "All commands in a batch must operate on same entity group.",
    )


def batch_too_many_operations() -> StubError:
    """``400 InvalidInput`` for a change set of more than 100 operations."""
    return invalid_input(
        "The batch request operation exceeds the maximum 100 changes per change set."
    )


def content_length_exceeded() -> StubError:
    """``400 ContentLengthExceeded``."""
    return StubError(
        400,
        "ContentLengthExceeded",
        "The content length for the requested operation has exceeded the limit (4MB).",
    )


def invalid_resource_name() -> StubError:
    """``400 InvalidResourceName``: bad table-name characters."""
    return StubError(
        400, "InvalidResourceName", "The specified resource name contains invalid characters."
    )


def resource_name_length() -> StubError:
    """``400 OutOfRangeInput``: table name not 3-63 characters."""
    return out_of_range_input(
        "The specified resource name length is not within the permissible limits."
    )


def invalid_xml_document(message: str = "XML specified is not syntactically valid.") -> StubError:
    """``400 InvalidXmlDocument``."""
    return StubError(400, "InvalidXmlDocument", message)


def invalid_xml_node_value(
    message: str = "The value for one of the XML nodes is not in the correct format.",
) -> StubError:
    """``400 InvalidXmlNodeValue``."""
    return StubError(400, "InvalidXmlNodeValue", message)


def invalid_header_value(
    message: str = "The value for one of the HTTP headers is not in the correct format.",
) -> StubError:
    """``400 InvalidHeaderValue``."""
    return StubError(400, "InvalidHeaderValue", message)


def invalid_query_parameter_value(
    message: str = "Value for one of the query parameters specified in the request URI is invalid.",
) -> StubError:
    """``400 InvalidQueryParameterValue``."""
    return StubError(400, "InvalidQueryParameterValue", message)


def out_of_range_query_parameter_value(
    message: str = "One of the query parameters specified in the request URI is outside the "
    "permissible range.",
) -> StubError:
    """``400 OutOfRangeQueryParameterValue``."""
    return StubError(400, "OutOfRangeQueryParameterValue", message)


def unsupported_query_parameter(
    message: str = "One of the query parameters specified in the request URI is not supported.",
) -> StubError:
    """``400 UnsupportedQueryParameter``."""
    return StubError(400, "UnsupportedQueryParameter", message)


def missing_required_header(
    message: str = "An HTTP header that's mandatory for this request is not specified.",
) -> StubError:
    """``400 MissingRequiredHeader``."""
    return StubError(400, "MissingRequiredHeader", message)


def missing_required_query_parameter(
    message: str = "A query parameter that's mandatory for this request is not specified.",
) -> StubError:
    """``400 MissingRequiredQueryParameter``."""
    return StubError(400, "MissingRequiredQueryParameter", message)


def x_method_not_using_post() -> StubError:
    """``400 XMethodNotUsingPost``."""
    return StubError(
        400,
        "XMethodNotUsingPost",
        "The request uses X-HTTP-Method with an HTTP verb other than POST.",
    )


def x_method_incorrect_value() -> StubError:
    """``400 XMethodIncorrectValue``."""
    return StubError(400, "XMethodIncorrectValue", "The specified X-HTTP-Method is invalid.")


def x_method_incorrect_count() -> StubError:
    """``400 XMethodIncorrectCount``."""
    return StubError(400, "XMethodIncorrectCount", "More than one X-HTTP-Method is specified.")


def invalid_authentication_info(
    message: str = "Authentication information is not given in the correct format. "
    "Check the value of Authorization header.",
) -> StubError:
    """``400 InvalidAuthenticationInfo``: malformed Authorization header."""
    return StubError(400, "InvalidAuthenticationInfo", message)


# --- 401 / 403 ------------------------------------------------------------------


def no_authentication_information() -> StubError:
    """``401 NoAuthenticationInformation``: a request without credentials."""
    return StubError(
        401,
        "NoAuthenticationInformation",
        "Server failed to authenticate the request. Please refer to the information in the "
        "www-authenticate header.",
    )


def authentication_failed(detail: str | None = None) -> StubError:
    """``403 AuthenticationFailed`` with an optional ``AuthenticationErrorDetail``."""
    return StubError(
        403,
        "AuthenticationFailed",
        "Server failed to authenticate the request. Make sure the value of Authorization header "
        "is formed correctly including the signature.",
        details={"AuthenticationErrorDetail": detail} if detail else None,
    )


def authorization_failure() -> StubError:
    """``403 AuthorizationFailure`` (SAS key range, stored policy problems)."""
    return StubError(
        403, "AuthorizationFailure", "This request is not authorized to perform this operation."
    )


def authorization_permission_mismatch() -> StubError:
    """``403 AuthorizationPermissionMismatch``: the SAS lacks a permission."""
    return StubError(
        403,
        "AuthorizationPermissionMismatch",
        "This request is not authorized to perform this operation using this permission.",
    )


def authorization_service_mismatch() -> StubError:
    """``403 AuthorizationServiceMismatch``: an account SAS without ``ss`` containing ``t``."""
    return StubError(
        403,
        "AuthorizationServiceMismatch",
        "This request is not authorized to perform this operation using this service.",
    )


def authorization_resource_type_mismatch() -> StubError:
    """``403 AuthorizationResourceTypeMismatch``: an account SAS with insufficient ``srt``."""
    return StubError(
        403,
        "AuthorizationResourceTypeMismatch",
        "This request is not authorized to perform this operation using this resource type.",
    )


def authorization_protocol_mismatch() -> StubError:
    """``403 AuthorizationProtocolMismatch``: ``spr`` forbids the protocol used."""
    return StubError(
        403,
        "AuthorizationProtocolMismatch",
        "This request is not authorized to perform this operation using this protocol.",
    )


def authorization_source_ip_mismatch(ip: str) -> StubError:
    """``403 AuthorizationSourceIPMismatch``: ``sip`` excludes the caller."""
    return StubError(
        403,
        "AuthorizationSourceIPMismatch",
        f"This request is not authorized to perform this operation using this source IP {ip}.",
    )


def insufficient_account_permissions(
    message: str = "The account being accessed does not have sufficient permissions "
    "to execute this operation.",
) -> StubError:
    """``403 InsufficientAccountPermissions``."""
    return StubError(403, "InsufficientAccountPermissions", message)


# --- 404 / 405 / 409 / 412 / 413 / 415 ------------------------------------------


def table_not_found() -> StubError:
    """``404 TableNotFound``."""
    return StubError(404, "TableNotFound", "The table specified does not exist.")


def resource_not_found() -> StubError:
    """``404 ResourceNotFound``: missing entity, or Delete Table on a missing table."""
    return StubError(404, "ResourceNotFound", "The specified resource does not exist.")


def method_not_allowed() -> StubError:
    """``405 MethodNotAllowed``."""
    return StubError(
        405,
        "MethodNotAllowed",
        "The requested method is not allowed on the specified resource.",
    )


def unsupported_http_verb() -> StubError:
    """``405 UnsupportedHttpVerb``."""
    return StubError(
        405, "UnsupportedHttpVerb", "The resource doesn't support the specified HTTP verb."
    )


def table_already_exists() -> StubError:
    """``409 TableAlreadyExists``."""
    return StubError(409, "TableAlreadyExists", "The table specified already exists.")


def table_being_deleted() -> StubError:
    """``409 TableBeingDeleted``."""
    return StubError(
        409, "TableBeingDeleted", "The specified table is being deleted. Try operation later."
    )


def entity_already_exists() -> StubError:
    """``409 EntityAlreadyExists``."""
    return StubError(409, "EntityAlreadyExists", "The specified entity already exists.")


def update_condition_not_satisfied() -> StubError:
    """``412 UpdateConditionNotSatisfied``: the If-Match ETag does not match."""
    return StubError(
        412,
        "UpdateConditionNotSatisfied",
        "The update condition specified in the request was not satisfied.",
    )


def request_body_too_large() -> StubError:
    """``413 RequestBodyTooLarge``."""
    return StubError(
        413,
        "RequestBodyTooLarge",
        "The request body is too large and exceeds the maximum permissible limit.",
    )


def json_format_not_supported() -> StubError:
    """``415 JsonFormatNotSupported``: JSON with a version before 2013-08-15."""
    return StubError(
        415,
        "JsonFormatNotSupported",
        "JSON format is not supported.",
    )


def atom_format_not_supported() -> StubError:
    """``415 AtomFormatNotSupported``: Atom with version 2015-12-11 or later."""
    return StubError(
        415,
        "AtomFormatNotSupported",
        "Atom format is not supported.",
    )


def json_verbose_format_not_supported() -> StubError:
    """``415 JsonVerboseFormatNotSupported``."""
    return StubError(
        415,
        "JsonVerboseFormatNotSupported",
        "Verbose JSON format is not supported.",
    )


def media_type_not_supported() -> StubError:
    """``415 MediaTypeNotSupported``."""
    return StubError(415, "MediaTypeNotSupported", "None of the provided media types are supported")


# --- 5xx --------------------------------------------------------------------------


def not_implemented() -> StubError:
    """``501 NotImplemented``."""
    return StubError(
        501,
        "NotImplemented",
        "The requested operation is not implemented on the specified resource.",
    )


def internal_error() -> StubError:
    """``500 InternalError``."""
    return StubError(
        500, "InternalError", "The server encountered an internal error. Please retry the request."
    )


def operation_timed_out() -> StubError:
    """``500 OperationTimedOut``."""
    return StubError(
        500,
        "OperationTimedOut",
        "The operation could not be completed within the permitted time.",
    )


def server_busy(
    message: str = "The server is currently unable to receive requests. Please retry your request.",
) -> StubError:
    """``503 ServerBusy``."""
    return StubError(503, "ServerBusy", message)
