"""The azure-core exception classes azt's errors also derive from, when azure-core is there.

Code written for Microsoft's SDKs (``azure-data-tables`` and the rest of ``azure-core``'s
family) catches ``azure.core.exceptions.ResourceNotFoundError``, ``ResourceExistsError``,
``HttpResponseError``, ... . So that such handlers keep catching azt's errors after a port,
azt's error classes also derive from the matching azure-core class **when azure-core is
importable when azt is first imported**; azure-core is never a dependency of azt. Without
it, every name here is ``object`` and azt's error tree is exactly its own.

========================================  ======================================
azt class                                 azure-core class it also derives from
========================================  ======================================
``ServiceError`` (any error answer)       ``HttpResponseError``
``AuthenticationError``                   ``ClientAuthenticationError``
``ResourceNotFoundError`` (404)           ``ResourceNotFoundError``
``ConflictError`` (409)                   ``ResourceExistsError``
``PreconditionFailedError`` (412)         ``ResourceModifiedError``
``TransportError``                        ``AzureError``
``ServiceConnectionError``                ``ServiceRequestError`` and ``ServiceResponseError``
``ServiceTimeoutError``                   ``ServiceRequestTimeoutError`` and
                                          ``ServiceResponseTimeoutError``
========================================  ======================================

This is the mapping ``azure-data-tables`` itself uses (every 409 is a
``ResourceExistsError`` there, a 412 of a conditional write a ``ResourceModifiedError``).
azt's classes never run azure-core's ``__init__`` (which would overwrite ``message``); the
attributes it would set are class-level defaults here (``response`` is ``None``: azt errors
carry ``headers``, ``status`` and ``code`` instead).

``AZT_AZURE_CORE_ERRORS=0`` in the environment turns the bridge off (for a program that
wants azt's tree alone even with azure-core installed).

Example::

    >>> import azt
    >>> AZURE_CORE_BRIDGED == (HttpResponseError is not object)
    True
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

__all__ = [
    "AZURE_CORE_BRIDGED",
    "AzureError",
    "ClientAuthenticationError",
    "HttpResponseError",
    "ResourceExistsError",
    "ResourceModifiedError",
    "ResourceNotFoundError",
    "ServiceConnectionFailure",
    "ServiceTimeoutFailure",
]


if TYPE_CHECKING:  # for the type checker, azt's error tree is its own
    AzureError = object
    HttpResponseError = object
    ClientAuthenticationError = object
    ResourceNotFoundError = object
    ResourceExistsError = object
    ResourceModifiedError = object
    ServiceConnectionFailure = object
    ServiceTimeoutFailure = object
    AZURE_CORE_BRIDGED: bool
else:
    _exc: Any = None
    if os.environ.get("AZT_AZURE_CORE_ERRORS", "1").strip() != "0":
        try:
            from azure.core import exceptions as _exc
        except ImportError:  # azure-core is optional: azt's tree stays its own
            _exc = None
    AZURE_CORE_BRIDGED = _exc is not None
    if _exc is None:
        AzureError = HttpResponseError = ClientAuthenticationError = object
        ResourceNotFoundError = ResourceExistsError = ResourceModifiedError = object
        ServiceConnectionFailure = ServiceTimeoutFailure = object
    else:

        class _Fields:
            """What azure-core's ``__init__`` would have set, for code that reads it."""

            response = None
            model = None
            inner_exception = None
            continuation_token = None
            exc_type = None
            exc_value = None
            exc_traceback = None
            exc_msg = ""

        class AzureError(_Fields, _exc.AzureError):
            """azure-core's ``AzureError``, as azt's transport errors derive from it."""

        class HttpResponseError(_Fields, _exc.HttpResponseError):
            """azure-core's ``HttpResponseError``, as azt's service errors derive from it."""

            error = None  # azure-core's parsed OData error (azt: ``code`` and ``message``)

        class ClientAuthenticationError(_Fields, _exc.ClientAuthenticationError):
            """azure-core's ``ClientAuthenticationError`` (azt: ``AuthenticationError``)."""

        class ResourceNotFoundError(_Fields, _exc.ResourceNotFoundError):
            """azure-core's ``ResourceNotFoundError`` (azt: ``ResourceNotFoundError``)."""

        class ResourceExistsError(_Fields, _exc.ResourceExistsError):
            """azure-core's ``ResourceExistsError`` (azt: ``ConflictError``)."""

        class ResourceModifiedError(_Fields, _exc.ResourceModifiedError):
            """azure-core's ``ResourceModifiedError`` (azt: ``PreconditionFailedError``)."""

        class ServiceConnectionFailure(
            _Fields, _exc.ServiceRequestError, _exc.ServiceResponseError
        ):
            """azure-core's two connection failures (azt: ``ServiceConnectionError``)."""

        class ServiceTimeoutFailure(
            _Fields, _exc.ServiceRequestTimeoutError, _exc.ServiceResponseTimeoutError
        ):
            """azure-core's two timeouts (azt: ``ServiceTimeoutError``)."""
