"""Error bodies: the service's message text, in the style the request chose.

Example::

    >>> from azt_server_stub import errors
    >>> error_payload(errors.invalid_input(), "r", STORAGE_XML)[0]
    'application/xml'
"""

from __future__ import annotations

import datetime as _dt

from aiohttp import web

from ..errors import StubError
from ..flavors import StubFlavor, flavor_of
from ..formats import atom as atom_fmt
from ..formats import json as json_fmt
from ..formats import xml as xml_fmt
from ..formats.negotiation import Fmt, error_format_guess
from ..request_state import ERR_STYLE, ODATA_XML, STORAGE_XML, query_of


def _now_ticks_text() -> str:
    """The current UTC time with seven fractional digits (error ``Time:`` lines)."""
    now = _dt.datetime.now(_dt.UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond:06d}0Z"


def error_message(err: StubError, request_id: str) -> str:
    """The service's error message text: [index:]text, RequestId and Time lines.

    The ``index:`` prefix of a change set's failed operation is written from index 1 on:
    Storage sends none for the first operation (recorded 2017 and 2021; docs/stub.md,
    "Fidelity decisions").

    Example::

        >>> from azt_server_stub import errors
        >>> error_message(errors.invalid_input().at(3), "rid").split("\\n")[:2]
        ['3:One of the request inputs is not valid.', 'RequestId:rid']
        >>> error_message(errors.invalid_input().at(0), "rid").split("\\n")[0]
        'One of the request inputs is not valid.'
    """
    prefix = f"{err.index}:" if err.index else ""
    return f"{prefix}{err.message}\nRequestId:{request_id}\nTime:{_now_ticks_text()}"


def error_payload(err: StubError, request_id: str, style: Fmt | str) -> tuple[str, bytes]:
    """``(Content-Type, body)`` of an error in a given style (a JSON Fmt or an XML style).

    Example::

        >>> from azt_server_stub import errors
        >>> ctype, _ = error_payload(errors.invalid_input(), "r", STORAGE_XML)
        >>> ctype
        'application/xml'
    """
    message = error_message(err, request_id)
    if isinstance(style, Fmt) and style.is_json:
        return style.content_type, json_fmt.error_body(err.code, message, err.details)
    if style == STORAGE_XML:
        return "application/xml", xml_fmt.error_body(err.code, message, err.details)
    return "application/xml;charset=utf-8", atom_fmt.error_body(err.code, message)


def render_error(
    flavor: StubFlavor,
    err: StubError,
    request_id: str,
    style: Fmt | str,
    accept: str | None,
    format_param: str | None,
) -> tuple[str, bytes]:
    """``(Content-Type, body)`` of ``err``: the one error-body negotiation of each flavour.

    Every error answer goes through here: a handler's or middleware's error, a parser
    refusal, an authentication failure, a stub bug. Cosmos writes JSON at the level
    ``accept``/``format_param`` ask for (:meth:`StubFlavor.error_payload`); Storage
    writes ``style`` (:func:`error_style_of`: the operation's negotiated style, OData
    XML for ``*/*`` or no ``Accept``, Storage XML for service and ACL operations).

    Example::

        >>> from azt_server_stub import errors
        >>> from azt_server_stub.flavors import COSMOS, STORAGE
        >>> render_error(STORAGE, errors.invalid_input(), "r", STORAGE_XML, None, None)[0]
        'application/xml'
        >>> render_error(COSMOS, errors.invalid_input(), "r", STORAGE_XML, "*/*", None)[0]
        'application/json;odata=fullmetadata'
    """
    payload = flavor.error_payload(err, request_id, accept, format_param)
    return payload if payload is not None else error_payload(err, request_id, style)


def request_error(request: web.Request, err: StubError, request_id: str) -> tuple[str, bytes]:
    """:func:`render_error` for a request of the stub's application.

    Example::

        ctype, body = request_error(request, errors.table_not_found(), request_id)
    """
    return render_error(
        flavor_of(request.app),
        err,
        request_id,
        error_style_of(request),
        request.headers.get("Accept"),
        query_of(request).get("$format"),
    )


def error_style_of(request: web.Request) -> Fmt | str:
    """The error body style chosen for a request so far (a guess if none was chosen).

    Example::

        style = error_style_of(request)  # Fmt.MINIMAL, ODATA_XML or STORAGE_XML
    """
    style: str | None = request.get(ERR_STYLE)
    if style is not None:
        if style in (STORAGE_XML, ODATA_XML):
            return style
        return Fmt(style)
    guess = error_format_guess(request.headers.get("Accept"), query_of(request).get("$format"))
    return guess if guess is not None else ODATA_XML
