"""Bodiless answers whose headers stay the head's own text until something reads them.

A successful entity write answers ``204 No Content`` with a dozen headers. Built as
``web.Response(headers=...)`` they are copied into a ``CIMultiDict``, the service
middleware sets four more into it, and the connection front end reads them all back out
and joins them to write the head: most of the answer's cost. A :class:`LinedResponse`
keeps them as ``Name: value`` lines (joined by CRLF, in order); the service middleware
appends its own lines to the text (``app._common_lines``), and the front end writes the
head from the text (:func:`~azt_server_stub.front_render.render_lined`).

Anything that reads the headers as a mapping (``response.headers``, aiohttp's writer,
``content_type``, a user's middleware) reads them through ``_headers``, which first turns
the text into the ``CIMultiDict`` a ``web.Response`` built with the same headers would
hold (same names, values and order; tests/stub/test_front.py compares the bytes the front
end writes with those aiohttp's own writer writes from the mapping). From then on the
answer is an ordinary ``web.Response``.

Example::

    >>> response = LinedResponse(204, "Cache-Control: no-cache\\r\\nETag: x")
    >>> response.lines
    'Cache-Control: no-cache\\r\\nETag: x'
    >>> response.headers["etag"], response.lines
    ('x', None)
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from multidict import CIMultiDict

__all__ = ["LinedResponse"]


class LinedResponse(web.Response):
    """A bodiless ``web.Response`` whose headers are held as the head's text until read.

    ``text``: the header lines, ``Name: value`` joined by ``\\r\\n`` (no trailing CRLF),
    none of them breaking a line, none of them ``Content-Length``, ``Content-Type``,
    ``Transfer-Encoding``, ``Date`` or ``Connection`` (the writer's own), and none of
    the names the service middleware appends (``x-ms-request-id``, ``x-ms-version``,
    ``x-ms-client-request-id``, ``Server``): appending does not replace.

    Example::

        >>> LinedResponse(204, "ETag: x").headers.get("ETag")
        'x'
    """

    def __init__(self, status: int, text: str) -> None:
        made = _MADE.get(status)
        if made:  # what web.Response.__init__ leaves, copied (see _made_by_init)
            state = self.__dict__
            state.update(made)
            state["_state"] = {}
            state["_mapping"] = CIMultiDict()
        elif made is None:  # (the status's first answer)
            if not 200 <= status < 300:  # (the access log reads no error code from one)
                raise ValueError(f"a lined answer is a success, not {status}")
            _made_by_init(self, status)
        else:
            super().__init__(status=status)
        #: the headers as text while nothing has read them as a mapping, then None
        self.lines: str | None = text
        #: the ``x-ms-request-id`` appended (the access log reads it without a mapping)
        self.request_id: str | None = None

    # aiohttp's classes read and write the headers through ``_headers``: the property
    # turns the text into the mapping the first time anything reads it.
    @property  # type: ignore[override]
    def _headers(self) -> CIMultiDict[str]:
        state: dict[str, Any] = self.__dict__
        headers: CIMultiDict[str] = state["_mapping"]
        text = state.get("lines")
        if text:
            state["lines"] = None
            for line in text.split("\r\n"):
                name, _, value = line.partition(": ")
                headers.add(name, value)
        return headers

    @_headers.setter
    def _headers(self, value: CIMultiDict[str]) -> None:
        self.__dict__["_mapping"] = value


#: By status: the attributes ``web.Response(status=...)``'s ``__init__`` sets, when they
#: can be copied into a new answer (see :func:`_made_by_init`); empty: they cannot.
_MADE: dict[int, dict[str, Any]] = {}

#: The attributes an answer gets fresh, not copied (the request-scoped storage, the headers).
_FRESH = frozenset({"_state", "_mapping"})


def _made_by_init(response: LinedResponse, status: int) -> None:
    """Run aiohttp's ``__init__`` on ``response`` and keep what it set, for the next answers
    of this status to copy instead of running it (about 12k instructions): only when every
    attribute but the fresh ones (:data:`_FRESH`) is an immutable value (the copies then
    share nothing). Anything else (a later aiohttp setting a list, say) keeps the call."""
    web.Response.__init__(response, status=status)
    made = {name: value for name, value in vars(response).items() if name not in _FRESH}
    plain = all(type(value) in _IMMUTABLE for value in made.values())
    if not plain or set(vars(response)) - set(made) != _FRESH:
        made = {}
    _MADE[status] = made


_IMMUTABLE = frozenset({type(None), bool, int, float, str, bytes})
