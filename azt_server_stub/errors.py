"""Service errors raised anywhere in the stub and rendered by the HTTP layer.

Every refusal is a :class:`StubError` carrying the HTTP status, the service's error code
and its message text (verbatim where the service's text is known); anything else raised
out of a handler is a stub bug, answered ``500 InternalError``.

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
        """A copy of this error attributed to batch operation ``index``.

        The original is left as it was (its ``index`` stays None).

        >>> err = StubError(404, "ResourceNotFound", "The specified resource does not exist.")
        >>> err.at(2).index, err.at(2).code, err.index
        (2, 'ResourceNotFound', None)
        """
        return StubError(self.status, self.code, self.message, details=self.details, index=index)


# --- 400 ----------------------------------------------------------------------


def invalid_input(message: str = "One of the request inputs is not valid.") -> StubError:
    """``400 InvalidInput``: the generic refusal of a malformed request.

    >>> err = invalid_input("The $top value is not valid.")
    >>> err.status, err.code
    (400, 'InvalidInput')
    >>> err.message
    'The $top value is not valid.'
    """
    return StubError(400, "InvalidInput", message)


def invalid_value_type(message: str = "The value specified is invalid.") -> StubError:
    """``400 InvalidValueType``.

    >>> err = invalid_value_type()
    >>> err.status, err.code
    (400, 'InvalidValueType')
    """
    return StubError(400, "InvalidValueType", message)


def out_of_range_input(message: str = "One of the request inputs is out of range.") -> StubError:
    """``400 OutOfRangeInput`` (also used for table-name length and DateTime < 1601).

    >>> err = out_of_range_input()
    >>> err.status, err.code
    (400, 'OutOfRangeInput')
    """
    return StubError(400, "OutOfRangeInput", message)


def properties_need_value() -> StubError:
    """``400 PropertiesNeedValue``: PartitionKey or RowKey missing.

    >>> err = properties_need_value()
    >>> err.status, err.code
    (400, 'PropertiesNeedValue')
    """
    return StubError(
        400, "PropertiesNeedValue", "The values are not specified for all properties in the entity."
    )


def property_name_invalid() -> StubError:
    """``400 PropertyNameInvalid``.

    >>> err = property_name_invalid()
    >>> err.status, err.code
    (400, 'PropertyNameInvalid')
    """
    return StubError(400, "PropertyNameInvalid", "The property name is invalid.")


def property_name_too_long() -> StubError:
    """``400 PropertyNameTooLong``.

    >>> err = property_name_too_long()
    >>> err.status, err.code
    (400, 'PropertyNameTooLong')
    """
    return StubError(
        400, "PropertyNameTooLong", "The property name exceeds the maximum allowed length (255)."
    )


def property_value_too_large() -> StubError:
    """``400 PropertyValueTooLarge``: a string or binary over 64 KiB.

    >>> err = property_value_too_large()
    >>> err.status, err.code
    (400, 'PropertyValueTooLarge')
    """
    return StubError(
        400,
        "PropertyValueTooLarge",
        "The property value exceeds the maximum allowed size (64KB). If the property value is a "
        "string, it is UTF-16 encoded and the maximum number of characters should be 32K or less.",
    )


def key_value_too_large(which: str) -> StubError:
    """``400 KeyValueTooLarge`` for ``which`` = ``"PartitionKey"`` or ``"RowKey"``.

    >>> err = key_value_too_large("RowKey")
    >>> err.status, err.code
    (400, 'KeyValueTooLarge')
    >>> err.message.startswith("The 'RowKey' property")
    True
    """
    return StubError(
        400,
        "KeyValueTooLarge",
        f"The '{which}' property exceeds the maximum allowed key size (2KB). It is a UTF-16 "
        "encoded string and the maximum number of characters should be 1K or less.",
    )


def entity_too_large() -> StubError:
    """``400 EntityTooLarge``: over 1 MiB.

    >>> err = entity_too_large()
    >>> err.status, err.code
    (400, 'EntityTooLarge')
    """
    return StubError(
        400, "EntityTooLarge", "The entity is larger than the maximum allowed size (1MB)."
    )


def too_many_properties() -> StubError:
    """``400 TooManyProperties``: over 252 custom properties.

    >>> err = too_many_properties()
    >>> err.status, err.code
    (400, 'TooManyProperties')
    """
    return StubError(
        400,
        "TooManyProperties",
        "The entity contains more properties than allowed. Each entity can include up to 252 "
        "properties to store data. Each entity also has 3 system properties.",
    )


def duplicate_properties_specified() -> StubError:
    """``400 DuplicatePropertiesSpecified``: the same property twice in one body.

    >>> err = duplicate_properties_specified()
    >>> err.status, err.code
    (400, 'DuplicatePropertiesSpecified')
    """
    return StubError(400, "DuplicatePropertiesSpecified", "A property is specified more than once.")


def invalid_duplicate_row() -> StubError:
    """``400 InvalidDuplicateRow``: the same entity twice in one batch.

    >>> err = invalid_duplicate_row()
    >>> err.status, err.code
    (400, 'InvalidDuplicateRow')
    """
    return StubError(
        400,
        "InvalidDuplicateRow",
        "The batch request contains multiple changes with same row key. An entity can appear "
        "only once in a batch request.",
    )


def commands_in_batch_act_on_different_partitions() -> StubError:
    """``400 CommandsInBatchActOnDifferentPartitions``.

    >>> err = commands_in_batch_act_on_different_partitions()
    >>> err.status, err.code
    (400, 'CommandsInBatchActOnDifferentPartitions')
    """
    return StubError(
        400,
        "CommandsInBatchActOnDifferentPartitions",
        "All commands in a batch must operate on same entity group.",
    )


def batch_too_many_operations() -> StubError:
    """``400 InvalidInput`` for a change set of more than 100 operations.

    >>> err = batch_too_many_operations()
    >>> err.status, err.code
    (400, 'InvalidInput')
    """
    return invalid_input(
        "The batch request operation exceeds the maximum 100 changes per change set."
    )


def content_length_exceeded() -> StubError:
    """``400 ContentLengthExceeded``.

    >>> err = content_length_exceeded()
    >>> err.status, err.code
    (400, 'ContentLengthExceeded')
    """
    return StubError(
        400,
        "ContentLengthExceeded",
        "The content length for the requested operation has exceeded the limit (4MB).",
    )


def invalid_resource_name() -> StubError:
    """``400 InvalidResourceName``: bad table-name characters.

    >>> err = invalid_resource_name()
    >>> err.status, err.code
    (400, 'InvalidResourceName')
    """
    return StubError(
        400, "InvalidResourceName", "The specified resource name contains invalid characters."
    )


def resource_name_length() -> StubError:
    """``400 OutOfRangeInput``: table name not 3-63 characters.

    >>> err = resource_name_length()
    >>> err.status, err.code
    (400, 'OutOfRangeInput')
    """
    return out_of_range_input(
        "The specified resource name length is not within the permissible limits."
    )


def invalid_xml_document(message: str = "XML specified is not syntactically valid.") -> StubError:
    """``400 InvalidXmlDocument``.

    >>> err = invalid_xml_document()
    >>> err.status, err.code
    (400, 'InvalidXmlDocument')
    """
    return StubError(400, "InvalidXmlDocument", message)


def invalid_xml_node_value(
    message: str = "The value for one of the XML nodes is not in the correct format.",
) -> StubError:
    """``400 InvalidXmlNodeValue``.

    >>> err = invalid_xml_node_value()
    >>> err.status, err.code
    (400, 'InvalidXmlNodeValue')
    """
    return StubError(400, "InvalidXmlNodeValue", message)


def invalid_header_value(
    message: str = "The value for one of the HTTP headers is not in the correct format.",
) -> StubError:
    """``400 InvalidHeaderValue``.

    >>> err = invalid_header_value()
    >>> err.status, err.code
    (400, 'InvalidHeaderValue')
    """
    return StubError(400, "InvalidHeaderValue", message)


def unsupported_header(name: str, value: str) -> StubError:
    """``400 UnsupportedHeader`` naming the header (e.g. a ``Content-Encoding``).

    >>> unsupported_header("Content-Encoding", "gzip").details["HeaderName"]
    'Content-Encoding'
    """
    message = "One of the HTTP headers specified in the request is not supported."
    err = StubError(400, "UnsupportedHeader", message)
    err.details.update({"HeaderName": name, "HeaderValue": value})
    return err


def invalid_query_parameter_value(
    message: str = "Value for one of the query parameters specified in the request URI is invalid.",
) -> StubError:
    """``400 InvalidQueryParameterValue``.

    >>> err = invalid_query_parameter_value()
    >>> err.status, err.code
    (400, 'InvalidQueryParameterValue')
    """
    return StubError(400, "InvalidQueryParameterValue", message)


def out_of_range_query_parameter_value(
    message: str = "One of the query parameters specified in the request URI is outside the "
    "permissible range.",
) -> StubError:
    """``400 OutOfRangeQueryParameterValue``.

    >>> err = out_of_range_query_parameter_value()
    >>> err.status, err.code
    (400, 'OutOfRangeQueryParameterValue')
    """
    return StubError(400, "OutOfRangeQueryParameterValue", message)


def unsupported_query_parameter(
    message: str = "One of the query parameters specified in the request URI is not supported.",
) -> StubError:
    """``400 UnsupportedQueryParameter``.

    >>> err = unsupported_query_parameter()
    >>> err.status, err.code
    (400, 'UnsupportedQueryParameter')
    """
    return StubError(400, "UnsupportedQueryParameter", message)


def missing_required_header(
    message: str = "An HTTP header that's mandatory for this request is not specified.",
) -> StubError:
    """``400 MissingRequiredHeader``.

    >>> err = missing_required_header()
    >>> err.status, err.code
    (400, 'MissingRequiredHeader')
    """
    return StubError(400, "MissingRequiredHeader", message)


def missing_required_query_parameter(
    message: str = "A query parameter that's mandatory for this request is not specified.",
) -> StubError:
    """``400 MissingRequiredQueryParameter``.

    >>> err = missing_required_query_parameter()
    >>> err.status, err.code
    (400, 'MissingRequiredQueryParameter')
    """
    return StubError(400, "MissingRequiredQueryParameter", message)


def x_method_not_using_post() -> StubError:
    """``400 XMethodNotUsingPost``.

    >>> err = x_method_not_using_post()
    >>> err.status, err.code
    (400, 'XMethodNotUsingPost')
    """
    return StubError(
        400,
        "XMethodNotUsingPost",
        "The request uses X-HTTP-Method with an HTTP verb other than POST.",
    )


def x_method_incorrect_value() -> StubError:
    """``400 XMethodIncorrectValue``.

    >>> err = x_method_incorrect_value()
    >>> err.status, err.code
    (400, 'XMethodIncorrectValue')
    """
    return StubError(400, "XMethodIncorrectValue", "The specified X-HTTP-Method is invalid.")


def x_method_incorrect_count() -> StubError:
    """``400 XMethodIncorrectCount``.

    >>> err = x_method_incorrect_count()
    >>> err.status, err.code
    (400, 'XMethodIncorrectCount')
    """
    return StubError(400, "XMethodIncorrectCount", "More than one X-HTTP-Method is specified.")


def invalid_authentication_info(
    message: str = "Authentication information is not given in the correct format. "
    "Check the value of Authorization header.",
) -> StubError:
    """``400 InvalidAuthenticationInfo``: malformed Authorization header.

    >>> err = invalid_authentication_info()
    >>> err.status, err.code
    (400, 'InvalidAuthenticationInfo')
    """
    return StubError(400, "InvalidAuthenticationInfo", message)


# --- 401 / 403 ------------------------------------------------------------------


def no_authentication_information() -> StubError:
    """``401 NoAuthenticationInformation``: a request without credentials.

    >>> err = no_authentication_information()
    >>> err.status, err.code
    (401, 'NoAuthenticationInformation')
    """
    return StubError(
        401,
        "NoAuthenticationInformation",
        "Server failed to authenticate the request. Please refer to the information in the "
        "www-authenticate header.",
    )


def authentication_failed(detail: str | None = None) -> StubError:
    """``403 AuthenticationFailed`` with an optional ``AuthenticationErrorDetail``.

    >>> err = authentication_failed("Signature did not match.")
    >>> err.status, err.code
    (403, 'AuthenticationFailed')
    >>> err.details
    {'AuthenticationErrorDetail': 'Signature did not match.'}
    """
    return StubError(
        403,
        "AuthenticationFailed",
        "Server failed to authenticate the request. Make sure the value of Authorization header "
        "is formed correctly including the signature.",
        details={"AuthenticationErrorDetail": detail} if detail else None,
    )


def authorization_failure() -> StubError:
    """``403 AuthorizationFailure`` (SAS key range, stored policy problems).

    >>> err = authorization_failure()
    >>> err.status, err.code
    (403, 'AuthorizationFailure')
    """
    return StubError(
        403, "AuthorizationFailure", "This request is not authorized to perform this operation."
    )


def authorization_permission_mismatch() -> StubError:
    """``403 AuthorizationPermissionMismatch``: the SAS lacks a permission.

    >>> err = authorization_permission_mismatch()
    >>> err.status, err.code
    (403, 'AuthorizationPermissionMismatch')
    """
    return StubError(
        403,
        "AuthorizationPermissionMismatch",
        "This request is not authorized to perform this operation using this permission.",
    )


def authorization_service_mismatch() -> StubError:
    """``403 AuthorizationServiceMismatch``: an account SAS without ``ss`` containing ``t``.

    >>> err = authorization_service_mismatch()
    >>> err.status, err.code
    (403, 'AuthorizationServiceMismatch')
    """
    return StubError(
        403,
        "AuthorizationServiceMismatch",
        "This request is not authorized to perform this operation using this service.",
    )


def authorization_resource_type_mismatch() -> StubError:
    """``403 AuthorizationResourceTypeMismatch``: an account SAS with insufficient ``srt``.

    >>> err = authorization_resource_type_mismatch()
    >>> err.status, err.code
    (403, 'AuthorizationResourceTypeMismatch')
    """
    return StubError(
        403,
        "AuthorizationResourceTypeMismatch",
        "This request is not authorized to perform this operation using this resource type.",
    )


def authorization_protocol_mismatch() -> StubError:
    """``403 AuthorizationProtocolMismatch``: ``spr`` forbids the protocol used.

    >>> err = authorization_protocol_mismatch()
    >>> err.status, err.code
    (403, 'AuthorizationProtocolMismatch')
    """
    return StubError(
        403,
        "AuthorizationProtocolMismatch",
        "This request is not authorized to perform this operation using this protocol.",
    )


def authorization_source_ip_mismatch(ip: str) -> StubError:
    """``403 AuthorizationSourceIPMismatch``: ``sip`` excludes the caller.

    >>> err = authorization_source_ip_mismatch("10.0.0.1")
    >>> err.status, err.code
    (403, 'AuthorizationSourceIPMismatch')
    >>> err.message.endswith("source IP 10.0.0.1.")
    True
    """
    return StubError(
        403,
        "AuthorizationSourceIPMismatch",
        f"This request is not authorized to perform this operation using this source IP {ip}.",
    )


def insufficient_account_permissions(
    message: str = "The account being accessed does not have sufficient permissions "
    "to execute this operation.",
) -> StubError:
    """``403 InsufficientAccountPermissions``.

    >>> err = insufficient_account_permissions()
    >>> err.status, err.code
    (403, 'InsufficientAccountPermissions')
    """
    return StubError(403, "InsufficientAccountPermissions", message)


# --- 404 / 405 / 409 / 412 / 413 / 415 ------------------------------------------


def table_not_found() -> StubError:
    """``404 TableNotFound``.

    >>> err = table_not_found()
    >>> err.status, err.code
    (404, 'TableNotFound')
    """
    return StubError(404, "TableNotFound", "The table specified does not exist.")


def resource_not_found() -> StubError:
    """``404 ResourceNotFound``: missing entity, or Delete Table on a missing table.

    >>> err = resource_not_found()
    >>> err.status, err.code
    (404, 'ResourceNotFound')
    """
    return StubError(404, "ResourceNotFound", "The specified resource does not exist.")


def method_not_allowed() -> StubError:
    """``405 MethodNotAllowed``.

    >>> err = method_not_allowed()
    >>> err.status, err.code
    (405, 'MethodNotAllowed')
    """
    return StubError(
        405,
        "MethodNotAllowed",
        "The requested method is not allowed on the specified resource.",
    )


def unsupported_http_verb() -> StubError:
    """``405 UnsupportedHttpVerb``.

    >>> err = unsupported_http_verb()
    >>> err.status, err.code
    (405, 'UnsupportedHttpVerb')
    """
    return StubError(
        405, "UnsupportedHttpVerb", "The resource doesn't support the specified HTTP verb."
    )


def table_already_exists() -> StubError:
    """``409 TableAlreadyExists``.

    >>> err = table_already_exists()
    >>> err.status, err.code
    (409, 'TableAlreadyExists')
    """
    return StubError(409, "TableAlreadyExists", "The table specified already exists.")


def table_being_deleted() -> StubError:
    """``409 TableBeingDeleted``.

    >>> err = table_being_deleted()
    >>> err.status, err.code
    (409, 'TableBeingDeleted')
    """
    return StubError(
        409, "TableBeingDeleted", "The specified table is being deleted. Try operation later."
    )


def entity_already_exists() -> StubError:
    """``409 EntityAlreadyExists``.

    >>> err = entity_already_exists()
    >>> err.status, err.code
    (409, 'EntityAlreadyExists')
    """
    return StubError(409, "EntityAlreadyExists", "The specified entity already exists.")


def update_condition_not_satisfied() -> StubError:
    """``412 UpdateConditionNotSatisfied``: the If-Match ETag does not match.

    >>> err = update_condition_not_satisfied()
    >>> err.status, err.code
    (412, 'UpdateConditionNotSatisfied')
    """
    return StubError(
        412,
        "UpdateConditionNotSatisfied",
        "The update condition specified in the request was not satisfied.",
    )


def request_body_too_large() -> StubError:
    """``413 RequestBodyTooLarge``.

    >>> err = request_body_too_large()
    >>> err.status, err.code
    (413, 'RequestBodyTooLarge')
    """
    return StubError(
        413,
        "RequestBodyTooLarge",
        "The request body is too large and exceeds the maximum permissible limit.",
    )


def json_format_not_supported() -> StubError:
    """``415 JsonFormatNotSupported``: JSON with a version before 2013-08-15.

    >>> err = json_format_not_supported()
    >>> err.status, err.code
    (415, 'JsonFormatNotSupported')
    """
    return StubError(
        415,
        "JsonFormatNotSupported",
        "JSON format is not supported.",
    )


def atom_format_not_supported() -> StubError:
    """``415 AtomFormatNotSupported``: Atom with version 2015-12-11 or later.

    >>> err = atom_format_not_supported()
    >>> err.status, err.code
    (415, 'AtomFormatNotSupported')
    """
    return StubError(
        415,
        "AtomFormatNotSupported",
        "Atom format is not supported.",
    )


def json_verbose_format_not_supported() -> StubError:
    """``415 JsonVerboseFormatNotSupported``.

    >>> err = json_verbose_format_not_supported()
    >>> err.status, err.code
    (415, 'JsonVerboseFormatNotSupported')
    """
    return StubError(
        415,
        "JsonVerboseFormatNotSupported",
        "Verbose JSON format is not supported.",
    )


def media_type_not_supported() -> StubError:
    """``415 MediaTypeNotSupported``.

    >>> err = media_type_not_supported()
    >>> err.status, err.code
    (415, 'MediaTypeNotSupported')
    """
    return StubError(415, "MediaTypeNotSupported", "None of the provided media types are supported")


# --- 5xx --------------------------------------------------------------------------


def not_implemented() -> StubError:
    """``501 NotImplemented``.

    >>> err = not_implemented()
    >>> err.status, err.code
    (501, 'NotImplemented')
    """
    return StubError(
        501,
        "NotImplemented",
        "The requested operation is not implemented on the specified resource.",
    )


def internal_error() -> StubError:
    """``500 InternalError``.

    >>> err = internal_error()
    >>> err.status, err.code
    (500, 'InternalError')
    """
    return StubError(
        500, "InternalError", "The server encountered an internal error. Please retry the request."
    )


def operation_timed_out() -> StubError:
    """``500 OperationTimedOut``.

    >>> err = operation_timed_out()
    >>> err.status, err.code
    (500, 'OperationTimedOut')
    """
    return StubError(
        500,
        "OperationTimedOut",
        "The operation could not be completed within the permitted time.",
    )


def server_busy(
    message: str = "The server is currently unable to receive requests. Please retry your request.",
) -> StubError:
    """``503 ServerBusy``.

    >>> err = server_busy()
    >>> err.status, err.code
    (503, 'ServerBusy')
    """
    return StubError(503, "ServerBusy", message)
