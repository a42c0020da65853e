"""The aiohttp application: configuration, the error middleware, common response headers.

:func:`create_app` builds an ``aiohttp.web.Application`` serving the Table
service for the configured accounts. Every response gets ``x-ms-request-id``,
``x-ms-version``, ``Date`` and (when sent) ``x-ms-client-request-id``; every
:class:`~azt_server_stub.errors.StubError` becomes a service-shaped error
response; anything else is logged as a bug and answered ``500 InternalError``.

Example::

    >>> app = create_app(StubConfig())
    >>> sorted(app[CONFIG_KEY].accounts)
    ['devstoreaccount1']
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import hdrs, web
from multidict import istr

from . import errors, explorer, flavors
from ._commit import WriteCommitter
from .auth import Authenticator, AuthOptions, www_authenticate
from .backend import Backend, SignedIdentifier
from .connection import ASCII_HEAD, SERVER_HEADER, SERVES_WITHOUT_TASK, handler_args
from .errors import StubError
from .handlers.cors import cors_response_headers
from .handlers.dispatch import dispatch
from .handlers.error_payload import request_error
from .handlers.parsing import MAX_BODY_BYTES
from .lined import LinedResponse
from .model import new_guid
from .read_limits import READ_LIMITS, ReadLimits
from .realism import fault_middleware, partitions, throttle_middleware
from .realism.faults import FaultInjector
from .realism.partitions import PartitionLayout
from .realism.throttle import Throttle
from .request_state import (
    ACCOUNT,
    PREFERENCE_APPLIED,
    REQUEST_ID,
    SERVICES_KEY,
    VERSION,
    Services,
    state_of,
)
from .versions import BASELINE_VERSION, returns_version_header

log = logging.getLogger("azt_server_stub")

#: The development storage account and its well-known key.
DEV_ACCOUNT = "devstoreaccount1"
DEV_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


def parse_account_spec(spec: str) -> tuple[str, list[str]]:
    """``NAME:KEY`` or ``NAME:KEY1:KEY2`` -> (name, [keys]); ValueError when malformed.

    Example::

        >>> parse_account_spec("acct:AAAA")
        ('acct', ['AAAA'])
    """
    name, sep, rest = spec.partition(":")
    if not sep or not name or not rest:
        raise ValueError(f"expected NAME:KEY[:KEY2], got {spec!r}")
    keys = rest.split(":")
    if len(keys) > 2 or not all(keys):
        raise ValueError(f"expected NAME:KEY[:KEY2], got {spec!r}")
    for key in keys:
        try:
            base64.b64decode(key, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"account key for {name!r} is not base64") from None
    return name, keys


@dataclass(slots=True)
class StubConfig:
    """Everything a stub instance is configured with.

    ``accounts``: name -> base64 keys (key1, optional key2). ``location``: directory of
    the durable store (None: memory). ``durability``: with a location, when a write is
    acknowledged: ``"full"`` (default) once it is fsynced (survives power loss),
    ``"process"`` once SQLite has handed it to the operating system (survives ``kill -9``
    of the stub; an OS crash or power loss may lose the last writes, never half of one).
    ``auth``: authentication switches.
    ``lenient_versions``: newer unknown ``x-ms-version`` values apply the baseline
    instead of ``400 InvalidHeaderValue``. ``product_style_urls``: honour host-style
    addressing (``acct.table.localhost``). ``flavor``: the service the stub answers as,
    ``"storage"`` (default) or ``"cosmos"`` (the Azure Cosmos DB Table API where it differs:
    see :mod:`azt_server_stub.flavors` and ``docs/cosmos.md``). ``faults``, ``throttle``,
    ``partitions``: fault injection, scalability-target throttling and range-partition page breaks
    (PROTOCOL.md 7.6, 12; None: off). ``table_deletion_seconds``: how long a deleted
    table's name answers ``409 TableBeingDeleted`` (about 40 s on Azure; default 0).
    ``read_limits``: how long a client may take to send a request's head and body, and
    how a refused request's connection is drained (:mod:`azt_server_stub.read_limits`).
    ``explorer``: serve the data explorer page under ``/_explorer/`` (``docs/explorer.md``);
    ``explorer_remote``: let it answer non-loopback host names too (:class:`StubServer`
    refuses a non-loopback bind with the explorer unless this is set).

    Example::

        >>> StubConfig(accounts={"a": ["AAAA"]}).accounts["a"]
        ['AAAA']
    """

    accounts: dict[str, list[str]] = field(default_factory=lambda: {DEV_ACCOUNT: [DEV_KEY]})
    location: Path | None = None
    durability: str = "full"
    auth: AuthOptions = field(default_factory=AuthOptions)
    lenient_versions: bool = False
    product_style_urls: bool = True
    faults: FaultInjector | None = None
    throttle: Throttle | None = None
    partitions: PartitionLayout | None = None
    table_deletion_seconds: float = 0.0
    flavor: str = "storage"
    read_limits: ReadLimits = field(default_factory=ReadLimits)
    explorer: bool = False
    explorer_remote: bool = False

    def decoded_accounts(self) -> dict[str, list[bytes]]:
        """Accounts with decoded keys, as the authenticator wants them.

        Example::

            >>> StubConfig(accounts={"a": ["AAAA", "/w=="]}).decoded_accounts()
            {'a': [b'\\x00\\x00\\x00', b'\\xff']}
        """
        return {name: [base64.b64decode(k) for k in keys] for name, keys in self.accounts.items()}


CONFIG_KEY = web.AppKey("azt.config", StubConfig)
BACKEND_KEY = web.AppKey("azt.backend", Backend)


def _policies(backend: Backend) -> Callable[[str, str], list[SignedIdentifier]]:
    def lookup(account: str, table: str) -> list[SignedIdentifier]:
        try:
            return backend.get_acl(account, table)
        except StubError:
            return []

    return lookup


#: Header names as multidict keys that carry their case-folded form (cheaper lookups).
_REQUEST_ID = istr("x-ms-request-id")
_VERSION = istr("x-ms-version")
_CLIENT_REQUEST_ID = istr("x-ms-client-request-id")


def check_header_text(headers: Mapping[str, str]) -> None:
    """Refuse a request any of whose header values is not UTF-8 text
    (``400 InvalidHeaderValue`` naming the header).

    The HTTP parser keeps undecodable bytes as lone surrogates; such a value cannot be
    written back (``x-ms-client-request-id`` is echoed, CORS headers are): checked before
    the request is served, so no write is applied whose answer could not be written.
    ASCII headers, the usual case, cost one join.

    Example::

        >>> check_header_text({"x-ms-client-request-id": "r" + chr(0xDCFF)})
        Traceback (most recent call last):
        ...
        azt_server_stub.errors.StubError: 400 InvalidHeaderValue: ...
    """
    if "".join(headers.values()).isascii():
        return
    for name, value in headers.items():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            err = errors.invalid_header_value()
            err.details["HeaderName"] = name if name.isascii() else "?"
            raise err from None


def _common_headers(
    sent: Mapping[str, str],
    response: web.StreamResponse,
    rid: str,
    state: dict[Any, Any],
    app: web.Application,
) -> None:
    headers = response.headers
    headers[_REQUEST_ID] = rid
    version = _answered_version(state, app)
    if version is not None:
        headers[_VERSION] = version
    client_id = sent.get(_CLIENT_REQUEST_ID)
    if client_id is not None and (client_id.isascii() or _writable(client_id)):
        headers[_CLIENT_REQUEST_ID] = client_id
    headers[hdrs.SERVER] = SERVER_HEADER


def _common_lines(
    sent: Mapping[str, str],
    response: LinedResponse,
    rid: str,
    state: dict[Any, Any],
    app: web.Application,
) -> None:
    """:func:`_common_headers` for an answer whose headers are still text: the same
    headers, appended as lines in the same order."""
    text = response.lines
    assert text is not None
    client_id = sent.get(_CLIENT_REQUEST_ID)
    response.request_id = rid
    if client_id is not None and (
        not client_id.isascii() or "\r" in client_id or "\n" in client_id
    ):  # (its rules for such a value, on the headers read as a mapping)
        _common_headers(sent, response, rid, state, app)
        return
    version = _answered_version(state, app)
    if version is not None and client_id is not None:  # (the usual answer: one copy)
        response.lines = (
            f"{text}\r\nx-ms-request-id: {rid}\r\nx-ms-version: {version}"
            f"\r\nx-ms-client-request-id: {client_id}\r\nServer: {SERVER_HEADER}"
        )
        return
    text += "\r\nx-ms-request-id: " + rid
    if version is not None:
        text += "\r\nx-ms-version: " + version
    if client_id is not None:
        text += "\r\nx-ms-client-request-id: " + client_id
    response.lines = text + "\r\nServer: " + SERVER_HEADER


def _answered_version(state: dict[Any, Any], app: web.Application) -> str | None:
    """The ``x-ms-version`` an answer carries (the request's version), or None."""
    version: str = state.get(VERSION) or BASELINE_VERSION
    answered = _VERSION_ANSWERED.get(version)
    if answered is None:
        answered = returns_version_header(version)
        if len(_VERSION_ANSWERED) < 64:
            _VERSION_ANSWERED[version] = answered
    return version if answered and flavors.flavor_of(app).version_header else None


#: Whether an answer to a request of this version carries ``x-ms-version``, by version
#: (``returns_version_header``; bounded: a request may name any version).
_VERSION_ANSWERED: dict[str, bool] = {}


def error_response(request: web.Request, err: StubError) -> web.Response:
    """Render ``err`` in the request's error style with ``x-ms-error-code``.

    Example::

        >>> from aiohttp.test_utils import make_mocked_request
        >>> request = make_mocked_request(
        ...     "GET", "/acct/Tables", headers={"Accept": "application/json;odata=nometadata"})
        >>> response = error_response(request, errors.table_not_found())
        >>> response.status, response.headers["x-ms-error-code"]
        (404, 'TableNotFound')
        >>> response.body.startswith(b'{"odata.error":{"code":"TableNotFound"')
        True
    """
    rid = request.get(REQUEST_ID) or new_guid()
    flavor = flavors.flavor_of(request.app)
    ctype, body = request_error(request, err, rid)
    headers = {"Content-Type": ctype}
    if flavor.error_code_header:
        headers["x-ms-error-code"] = err.code
    if isinstance(err, flavors.FlavoredError):
        headers.update(err.headers)
    applied = request.get(PREFERENCE_APPLIED)
    if applied is not None:
        headers["Preference-Applied"] = applied
    challenge = www_authenticate(err)
    if challenge is not None:
        headers["WWW-Authenticate"] = challenge
    return web.Response(
        status=err.status, body=None if request.method == "HEAD" else body, headers=headers
    )


def _writable(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def service_middleware(request: web.Request, handler: _Handler) -> web.StreamResponse:
    """Request ids, common headers, CORS response headers and the error mapping.

    Example::

        app = web.Application(middlewares=[service_middleware])
    """
    state = state_of(request)
    rid = state[REQUEST_ID] = new_guid()
    sent = request.headers
    try:
        if not state.get(ASCII_HEAD):  # (else the front end saw the head's bytes: ASCII)
            check_header_text(sent)
        response = await handler(request)
    except StubError as err:
        response = error_response(request, err)
    except web.HTTPRequestEntityTooLarge:
        response = error_response(request, errors.request_body_too_large())
    except (web.RequestPayloadError, ConnectionError):
        # a body read anywhere (a realism middleware, a handler) broke off: bad
        # framing, or the client left (then nobody reads this answer)
        unreadable = errors.invalid_input("The request body could not be read.")
        response = error_response(request, unreadable)
    except web.HTTPException as exc:  # aiohttp's own refusals (should not happen)
        code = "InvalidInput" if exc.status < 500 else "InternalError"
        response = error_response(request, StubError(exc.status, code, exc.reason))
    except Exception:
        log.exception("stub bug while serving %s %s", request.method, request.rel_url)
        response = error_response(request, errors.internal_error())
    app = request.app
    if type(response) is LinedResponse and response.lines is not None:
        _common_lines(sent, response, rid, state, app)
    else:
        _common_headers(sent, response, rid, state, app)
    method = request.method
    account = None if method == "OPTIONS" else state.get(ACCOUNT)
    if account is not None:
        # Also without Origin: a GET/HEAD gets Vary: Origin when the account has CORS
        # rules (handlers/cors.py has the table).
        backend = app[BACKEND_KEY]
        origin = sent.get(hdrs.ORIGIN) or None
        try:
            extra = cors_response_headers(backend, account, origin, method)
        except StubError:
            extra = {}
        if extra:
            response.headers.update(extra)
    return response


def create_app(
    config: StubConfig | None = None,
    *,
    backend: Backend | None = None,
    client_max_size: int = MAX_BODY_BYTES + 64 * 1024,
) -> web.Application:
    """Build the stub's aiohttp application.

    ``backend``: share an existing backend (the app then does not close it); otherwise
    one is created from ``config.location`` and closed on application cleanup.

    Example::

        >>> app = create_app(StubConfig(), backend=Backend())
        >>> isinstance(app[BACKEND_KEY], Backend)
        True
    """
    cfg = config or StubConfig()
    flavor = flavors.flavor_named(cfg.flavor)
    owns_backend = backend is None
    store = (
        backend
        if backend is not None
        else Backend(
            cfg.location,
            table_deletion_seconds=cfg.table_deletion_seconds,
            table_naming=flavor.table_naming,
            key_order=flavor.key_order,
            durability=cfg.durability,
            sorted_updates=flavor.sorted_updates,
        )
    )
    authenticator = Authenticator(cfg.decoded_accounts(), _policies(store), cfg.auth)
    app = web.Application(
        middlewares=[service_middleware],
        client_max_size=client_max_size,
        handler_args=handler_args(),
    )
    app[CONFIG_KEY] = cfg
    app[BACKEND_KEY] = store
    app[SERVES_WITHOUT_TASK] = True  # (no handler or middleware asks for its task)
    app[READ_LIMITS] = cfg.read_limits
    committer = WriteCommitter(store) if store.durable else None
    app[SERVICES_KEY] = Services(
        store, authenticator, cfg.lenient_versions, cfg.product_style_urls, committer
    )
    app.router.add_route("*", "/{tail:.*}", dispatch)
    # Inside the service middleware (which renders their errors), faults before throttling.
    fault_middleware.install(app, cfg.faults)
    if cfg.throttle is not None and flavor.throttle_status != 503:
        cfg.throttle.refuse = flavor.throttled
    throttle_middleware.install(app, cfg.throttle)
    partitions.install(app, cfg.partitions)
    flavors.install(app, flavor)
    if cfg.explorer:  # in front of every middleware above: they never see its requests
        realism = explorer.Realism(cfg.faults, cfg.throttle, cfg.partitions)
        page = explorer.Explorer(
            store, cfg.decoded_accounts(), realism, allow_remote=cfg.explorer_remote
        )
        explorer.install(app, page)

    if committer is not None:

        async def finish_writes(_: web.Application) -> None:
            await committer.close()  # writes already accepted are committed first

        app.on_cleanup.append(finish_writes)
    if owns_backend:

        async def close_backend(_: web.Application) -> None:
            store.close()

        app.on_cleanup.append(close_backend)
    return app


def connection_string(endpoint_base: str, account: str, key: str) -> str:
    """A connection string for ``account`` at ``endpoint_base`` (``http://host:port``).

    Example::

        >>> connection_string("http://127.0.0.1:10002", "a", "AAAA")
        'DefaultEndpointsProtocol=http;AccountName=a;AccountKey=AAAA;TableEndpoint=http://127.0.0.1:10002/a;'
    """
    scheme = endpoint_base.split(":", 1)[0]
    return (
        f"DefaultEndpointsProtocol={scheme};AccountName={account};AccountKey={key};"
        f"TableEndpoint={endpoint_base}/{account};"
    )


__all__ = [
    "BACKEND_KEY",
    "CONFIG_KEY",
    "DEV_ACCOUNT",
    "DEV_KEY",
    "StubConfig",
    "connection_string",
    "create_app",
    "error_response",
    "parse_account_spec",
]
