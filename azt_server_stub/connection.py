"""The HTTP connection layer: parser limits and the parser's own refusals.

aiohttp parses the request line and headers before any handler or middleware runs,
and refuses what it cannot parse (a request line or header over its limit, too many
headers, a malformed line, broken chunked framing) with a plain-text 400 of its own.
This module sizes those limits so that every request a legal entity produces is
parsed (:data:`MAX_REQUEST_LINE`), turns request-body decompression off so that the
stub, not the library, decides what a ``Content-Encoding`` means, and answers each
remaining refusal in the service's error format with ``x-ms-error-code``
(:class:`ServiceAppRunner`).

Example::

    >>> handler_args()["auto_decompress"]
    False
    >>> refusal_error(LineTooLong(b"/a/t()", MAX_REQUEST_LINE)).status
    414
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import (
    BadHttpMessage,
    BadHttpMethod,
    InvalidHeader,
    InvalidURLError,
    LineTooLong,
    PayloadEncodingError,
)
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest

from . import errors
from .errors import StubError
from .flavors import STORAGE, StubFlavor, flavor_of
from .handlers.error_payload import render_error
from .model import new_guid
from .request_state import STORAGE_XML

#: Set on an application whose handlers and middlewares never need the current task
#: (``asyncio.current_task()``, ``asyncio.timeout``) before their first wait: its front end
#: (:mod:`azt_server_stub.front`) may then serve a request in the callback that received it.
#: ``create_app`` sets it for the stub's own application; leave it unset for any other.
SERVES_WITHOUT_TASK = web.AppKey("azt.serves_without_task", bool)

#: Set on a request (to True) by a connection front end that saw every byte of the
#: connection so far, the request's head included, be ASCII: its header values then need
#: no check for text that cannot be written back (``app.check_header_text``).
ASCII_HEAD = web.RequestKey("azt.ascii_head", bool)

#: The ``Server`` header of every response.
SERVER_HEADER = "Windows-Azure-Table/1.0 azt-stub/0.1"

#: Longest percent-encoding of one key (1,024 UTF-16 units): a BMP character of three
#: UTF-8 bytes is one unit sent as ``%XX%XX%XX``, nine bytes; ``'`` (doubled in the
#: OData literal, ``%27%27``), two-byte and astral characters (two units, four bytes)
#: cost at most six bytes a unit.
MAX_ENCODED_KEY = 1024 * 9

#: Longest request line parsed (method, target and version). The longest legal
#: targets: an entity URL (two keys in the path) with a service SAS whose key range
#: names four more keys (``spk``/``srk``/``epk``/``erk``), or a query whose ``$filter``
#: names both keys next to such a SAS and two continuation tokens; seven encoded keys
#: and 68 KiB of room for table names, options and signature. Longer: ``414``.
MAX_REQUEST_LINE = 7 * MAX_ENCODED_KEY + 68 * 1024

#: Longest header line (name and value): Microsoft Entra bearer tokens of users in
#: many groups run to several KiB, past aiohttp's 8,190-byte default.
MAX_HEADER_FIELD = 64 * 1024

#: Most header lines in one request (aiohttp's default).
MAX_HEADERS = 128


def handler_args() -> dict[str, Any]:
    """The per-connection settings of a stub application (``web.Application(handler_args=)``).

    Request bodies are not decompressed by the library: the stub refuses a
    ``Content-Encoding`` itself (``400 UnsupportedHeader``) instead of failing in the
    middle of reading an undecodable body.

    Example::

        >>> handler_args()["max_line_size"] == MAX_REQUEST_LINE
        True
    """
    return {
        "auto_decompress": False,
        "max_line_size": MAX_REQUEST_LINE,
        "max_field_size": MAX_HEADER_FIELD,
        "max_headers": MAX_HEADERS,
    }


def refusal_error(exc: BaseException | None) -> StubError:
    """The service error for one of the HTTP parser's refusals.

    A request line over :data:`MAX_REQUEST_LINE` is ``414``; a bad method
    ``400 InvalidHttpVerb``; a bad URL ``400 InvalidUri``; an HTTP/1.1 request
    without ``Host`` ``400 HostInformationNotPresent``; an oversized or malformed
    header ``400 InvalidHeaderValue``; broken body framing and anything else
    ``400 InvalidInput``. The codes are the storage services' common codes; what the
    service's front end answers for these is not documented (UNCERTAIN).

    Example::

        >>> refusal_error(BadHttpMessage("Too many headers received")).code
        'InvalidHeaderValue'
    """
    if isinstance(exc, LineTooLong):
        if exc.args[1:2] == (MAX_REQUEST_LINE,):
            return StubError(414, "InvalidUri", "The request URI is too long.")
        return errors.invalid_header_value("A request header is too long.")
    if isinstance(exc, BadHttpMethod):
        return StubError(
            400, "InvalidHttpVerb", "The HTTP verb specified was not recognized by the server."
        )
    if isinstance(exc, InvalidURLError):
        return StubError(
            400, "InvalidUri", "The requested URI does not represent any resource on the server."
        )
    if isinstance(exc, BadHttpMessage) and "missing 'host'" in exc.message.lower():
        return StubError(
            400, "HostInformationNotPresent", "The request is missing the Host header."
        )
    if isinstance(exc, InvalidHeader) or (
        isinstance(exc, BadHttpMessage)
        and not isinstance(exc, PayloadEncodingError)
        and any(word in exc.message.lower() for word in ("header", "content-length"))
    ):
        return errors.invalid_header_value()
    return errors.invalid_input()


def refusal_response(err: StubError, flavor: StubFlavor = STORAGE) -> web.Response:
    """An error response that closes the connection (the parser's state is lost), in
    ``flavor``'s error format (Storage XML; Cosmos JSON, without ``x-ms-error-code``).

    Example::

        >>> response = refusal_response(errors.invalid_input())
        >>> response.status, response.headers["x-ms-error-code"]
        (400, 'InvalidInput')
    """
    request_id = new_guid()
    ctype, body = render_error(flavor, err, request_id, STORAGE_XML, None, None)
    headers = {
        "Content-Type": ctype,
        "x-ms-request-id": request_id,
        "Server": SERVER_HEADER,
    }
    if flavor.error_code_header:
        headers["x-ms-error-code"] = err.code
    response = web.Response(status=err.status, body=body, headers=headers)
    response.force_close()
    return response


class ServiceRequestHandler(RequestHandler):
    """aiohttp's connection handler, answering parser refusals in the service's format.

    ``handle_error`` also runs when a handler escapes every middleware (a stub bug):
    that is answered ``500 InternalError``, still in the service's format.

    Example::

        server = ServiceServer(handler)  # builds one ServiceRequestHandler a connection
    """

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        """The service-format answer to a parser refusal (``status`` < 500) or a stub bug.

        Called by aiohttp; the connection is closed after the answer.

        Example::

            response = handler.handle_error(request, 400, LineTooLong(b"/a", MAX_REQUEST_LINE))
            response.headers["x-ms-error-code"]  # 'InvalidUri' (status 414)
        """
        if request.writer.output_size > 0:  # too late for any answer
            raise ConnectionError("the response has started; the error cannot be sent")
        if status >= 500:
            self.log_exception("stub bug while serving a request", exc_info=exc)
            err = errors.operation_timed_out() if status == 504 else errors.internal_error()
        else:
            self.log_debug("refused an unparsable request: %s", message or exc)
            err = refusal_error(exc)
        return refusal_response(err, getattr(self._manager, "flavor", STORAGE))


class ServiceServer(web.Server):
    """A ``web.Server`` whose connections use :class:`ServiceRequestHandler`.

    Example::

        server = ServiceServer(handler, request_factory=factory, **handler_args())
    """

    #: The flavour whose error format refusals are written in (set by the runner).
    flavor: StubFlavor = STORAGE

    def __call__(self) -> RequestHandler:
        return ServiceRequestHandler(self, loop=self._loop, **self._kwargs)


class ServiceAppRunner(web.AppRunner):
    """An ``AppRunner`` whose server answers parser refusals in the service's format.

    Example::

        runner = ServiceAppRunner(create_app(StubConfig()), handle_signals=False)
        await runner.setup()
    """

    async def _make_server(self) -> web.Server:
        plain = await super()._make_server()  # starts the app up and freezes it
        server = ServiceServer(
            plain.request_handler,
            request_factory=plain.request_factory,
            handler_cancellation=plain.handler_cancellation,
            loop=asyncio.get_running_loop(),
            **plain._kwargs,
        )
        server.flavor = flavor_of(self.app)
        return server


__all__ = [
    "MAX_ENCODED_KEY",
    "MAX_HEADERS",
    "MAX_HEADER_FIELD",
    "MAX_REQUEST_LINE",
    "SERVER_HEADER",
    "ServiceAppRunner",
    "ServiceRequestHandler",
    "ServiceServer",
    "handler_args",
    "refusal_error",
    "refusal_response",
]
