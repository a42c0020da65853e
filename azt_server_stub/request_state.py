"""What the stub keeps on an aiohttp app and request: the services, the per-request keys.

Below the handlers and the realism middlewares, which both read them: :data:`SERVICES_KEY`
(the backend and authenticator of an app), the request's account, version, request id
and error style, and its query parsed once (:func:`query_of`).

Example::

    >>> parse_query("$filter=PartitionKey+eq+%27p%27")["$filter"]
    "PartitionKey eq 'p'"
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_plus

from aiohttp import web
from multidict import MultiDict, MultiDictProxy

from ._commit import WriteCommitter
from .auth import Authenticator
from .backend import Backend

STORAGE_XML = "storage-xml"


ODATA_XML = "odata-xml"


#: The error body style chosen so far: a JSON ``Fmt`` value, ODATA_XML or STORAGE_XML.
ERR_STYLE = web.RequestKey("azt.error_style", str)


REQUEST_ID = web.RequestKey("azt.request_id", str)


#: The ``Preference-Applied`` value of an insert or Create Table that asked for one: real
#: Storage sends it on the error answer too (recorded 2017, docs/stub.md).
PREFERENCE_APPLIED = web.RequestKey("azt.preference_applied", str)


VERSION = web.RequestKey("azt.version", str)


ACCOUNT = web.RequestKey("azt.account", str)


@dataclass(slots=True)
class Services:
    """What the handlers need from the application: the backend and the authenticator.

    ``committer``: with a durable backend, the group committer that runs entity
    writes off the event loop (see ``_commit``); None in memory (writes run inline).

    Example::

        >>> services = Services(Backend(), Authenticator({"acct": [b"key"]}, lambda a, t: []))
        >>> services.committer is None, services.backend.durable
        (True, False)
    """

    backend: Backend
    authenticator: Authenticator
    lenient_versions: bool = False
    product_style_urls: bool = True
    committer: WriteCommitter | None = None


SERVICES_KEY = web.AppKey("azt.services", Services)


QUERY = web.RequestKey("azt.query", MultiDictProxy[str])


def parse_query(raw: str) -> MultiDictProxy[str]:
    """Decode a raw query string the way the service does: form decoding.

    ``%XX`` escapes, and ``+`` is a space, as Azure reads it: clients that form-encode
    (the legacy Python SDK sends ``$filter=PartitionKey+eq+%27x%27``) rely on it, and a
    SAS whose base64 signature carries an unescaped ``+`` fails there (a literal plus is
    ``%2B``). A malformed escape is kept verbatim.

    Example::

        >>> parse_query("sig=a+b%2Bc&$filter=x+eq%201&flag")["$filter"]
        'x eq 1'
        >>> parse_query("sig=a+b%2Bc")["sig"]
        'a b+c'
    """
    result: MultiDict[str] = MultiDict()
    if raw:
        for item in raw.split("&"):
            if not item:
                continue
            name, _, value = item.partition("=")
            result.add(
                unquote_plus(name, errors="surrogateescape"),
                unquote_plus(value, errors="surrogateescape"),
            )
    return MultiDictProxy(result)


def state_of(request: web.BaseRequest) -> dict[Any, Any]:
    """The request's own storage: what ``request[KEY]`` reads and writes, as the dict it is.

    For the per-request path: ``state[KEY] = value`` is a dict store, where
    ``request[KEY] = value`` is a call of aiohttp's ``__setitem__`` (a Python method, which
    also warns about keys that are not ``web.RequestKey``: the stub's all are).

    Example::

        >>> from aiohttp.test_utils import make_mocked_request
        >>> request = make_mocked_request("GET", "/a/Tables")
        >>> state_of(request)[VERSION] = "2019-02-02"
        >>> request[VERSION], request.get(ACCOUNT)
        ('2019-02-02', None)
    """
    state: dict[Any, Any] = request._state
    return state


def query_of(request: web.Request) -> MultiDictProxy[str]:
    """The request's query parameters per :func:`parse_query` (parsed once per request).

    Example::

        q = query_of(request)
    """
    state = state_of(request)
    query: MultiDictProxy[str] | None = state.get(QUERY)
    if query is not None:
        return query
    raw = request.rel_url.raw_query_string
    parsed = parse_query(raw) if raw else _NO_QUERY
    state[QUERY] = parsed
    return parsed


#: The query of every request without one (read-only, so one object serves them all).
_NO_QUERY: MultiDictProxy[str] = MultiDictProxy(MultiDict())
