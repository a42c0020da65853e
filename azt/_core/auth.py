"""Credentials: objects that authorise one prepared request.

* :class:`SharedKeyCredential`: ``Authorization: SharedKey account:sig`` (the default for
  connection strings with a key).
* :class:`SharedKeyLiteCredential`: ``Authorization: SharedKeyLite account:sig``.
* :class:`SasCredential`: appends a SAS token to every URL (no ``Authorization`` header).
* :class:`BearerTokenCredential`: wraps any azure-identity style token credential, async
  (``await cred.get_token(scope)``, as ``azure.identity.aio``) or synchronous
  (``cred.get_token(scope)``, as ``azure.identity``; called on a worker thread so the
  event loop never blocks), returning an object with ``.token`` and ``.expires_on``; it
  caches the token and refreshes it before it expires; concurrent requests share a single
  refresh. Which of the two a credential is, is decided once, when it is wrapped.

Each credential is given the request after the pipeline has set ``x-ms-date``; signing
uses the URL path exactly as sent.

Example::

    >>> from azt._core.transport import HttpRequest
    >>> cred = SharedKeyCredential("devstoreaccount1", DEV_ACCOUNT_KEY)
    >>> req = HttpRequest("GET", "http://127.0.0.1:10002/devstoreaccount1/Tables",
    ...                   {"x-ms-date": "Mon, 27 Jun 2016 15:25:14 GMT"})
    >>> cred.sign(req, "/devstoreaccount1/Tables", None)
    >>> req.headers["Authorization"]
    'SharedKey devstoreaccount1:6x3Y/FLgh8/ozJ8YPcIAguM4et4HbaViJozb+kRb6aI='
"""

from __future__ import annotations

import asyncio
import inspect
import time
import urllib.parse
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from azt._core.connection_string import DEV_ACCOUNT_KEY as DEV_ACCOUNT_KEY
from azt._core.connection_string import is_cosmos_endpoint
from azt._core.signing import (
    canonicalized_resource,
    decode_key,
    shared_key_lite_string_to_sign,
    shared_key_string_to_sign,
    sign,
)
from azt._core.transport import HttpRequest
from azt._errors import ValidationError

STORAGE_SCOPE = "https://storage.azure.com/.default"
"""The Entra ID scope for Azure Storage data-plane access (every cloud)."""

COSMOS_SCOPE = "https://cosmos.azure.com/.default"
"""The Entra ID scope for Azure Cosmos DB (Table API) data-plane access, public cloud."""

_COSMOS_SOVEREIGN_SCOPES = {
    "us": "https://cosmos.azure.us/.default",
    "cn": "https://cosmos.azure.cn/.default",
}


def token_scope_for(endpoint: str, *, cosmos: bool | None = None) -> str:
    """The Entra ID scope a bearer token for ``endpoint`` is requested with.

    Cosmos DB Table API endpoints (``{account}.table.cosmos.azure.com``, the older
    ``{account}.table.cosmosdb.azure.com``) need :data:`COSMOS_SCOPE` (in the US
    Government and China clouds, ``https://cosmos.azure.us/.default`` and
    ``https://cosmos.azure.cn/.default``, by the host's last label); every other endpoint
    (storage accounts, emulators) gets :data:`STORAGE_SCOPE`. ``cosmos`` overrides the
    host-name test (a client given ``flavor=Flavor.COSMOS`` for a custom domain passes
    ``True``). Override the scope itself by passing
    ``BearerTokenCredential(credential, scope=...)`` as the client's credential.

    Example::

        >>> token_scope_for("https://acct.table.core.windows.net")
        'https://storage.azure.com/.default'
        >>> token_scope_for("https://acct.table.cosmos.azure.com")
        'https://cosmos.azure.com/.default'
    """
    if cosmos is None:
        cosmos = is_cosmos_endpoint(endpoint)
    if not cosmos:
        return STORAGE_SCOPE
    host = (urllib.parse.urlsplit(endpoint).hostname or "").rstrip(".")
    return _COSMOS_SOVEREIGN_SCOPES.get(host.rsplit(".", 1)[-1].lower(), COSMOS_SCOPE)


_KeyState = tuple[str, str, bytes, str]
"""A shared key credential's current (account name, base64 key, decoded key, header prefix):
replaced as one object, so a request never signs with one key's name and another's bytes."""


class SharedKeyCredential:
    """Account name and key; signs with the Table service's SharedKey scheme.

    The key can be rotated in place with :meth:`update`: every request reads the current
    key when it is signed (each retry of a request is signed again), so the request after
    an ``update`` (and any retry still to come of one in flight) uses the new key. The key
    is decoded once, by ``update``; signing does no extra work for it.

    Example::

        >>> SharedKeyCredential("acct", "a2V5").account_name
        'acct'
    """

    scheme = "SharedKey"

    def __init__(self, account_name: str, account_key: str) -> None:
        self._state = self._make_state(account_name, account_key)

    def _make_state(self, account_name: object, account_key: object) -> _KeyState:
        if not isinstance(account_name, str) or not account_name:
            raise ValidationError("the account name is empty")
        if not isinstance(account_key, str):
            raise ValidationError(
                f"the account key must be a base64 str, got {type(account_key).__name__}"
            )
        return (
            account_name,
            account_key,
            decode_key(account_key),
            f"{self.scheme} {account_name}:",
        )

    def _current(self) -> _KeyState:
        """The state to sign with now (a credential that follows another object reads it)."""
        return self._state

    @property
    def account_name(self) -> str:
        """The storage account name.

        Example::

            >>> SharedKeyCredential("acct", "a2V5").account_name
            'acct'
        """
        return self._current()[0]

    @property
    def account_key(self) -> str:
        """The base64 account key (used to generate SAS tokens).

        Example::

            >>> SharedKeyCredential("acct", "a2V5").account_key
            'a2V5'
        """
        return self._current()[1]

    @property
    def _key(self) -> bytes:
        return self._current()[2]

    def update(self, account_name: str, account_key: str) -> None:
        """Rotate to ``account_key`` (and ``account_name``); the next request signs with it.

        A name or key that is not valid raises :class:`~azt.ValidationError` and leaves the
        credential as it was.

        Example::

            >>> cred = SharedKeyCredential("acct", "a2V5")
            >>> cred.update("acct", "bmV3")
            >>> cred.account_key
            'bmV3'
        """
        self._state = self._make_state(account_name, account_key)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.account_name!r}, <key>)"

    def string_to_sign(self, request: HttpRequest, path: str, comp: str | None) -> str:
        """The string this credential signs for ``request`` (``path`` is the wire path).

        Example::

            >>> hdrs = {"x-ms-date": "D", "Content-Type": "application/json"}
            >>> req = HttpRequest("POST", "u", hdrs)
            >>> SharedKeyCredential("a", "a2V5").string_to_sign(req, "/a/t", None)
            'POST\\n\\napplication/json\\nD\\n/a/a/t'
        """
        return self._string_to_sign(request, self._current()[0], path, comp)

    def _string_to_sign(
        self, request: HttpRequest, account_name: str, path: str, comp: str | None
    ) -> str:
        headers = request.headers
        return shared_key_string_to_sign(
            request.method,
            headers.get("Content-MD5", ""),
            headers.get("Content-Type", ""),
            headers.get("x-ms-date") or headers.get("Date", ""),
            canonicalized_resource(account_name, path, comp),
        )

    def sign(self, request: HttpRequest, path: str, comp: str | None) -> None:
        """Set the ``Authorization`` header of ``request`` with the current key.

        Example::

            cred.sign(request, "/devstoreaccount1/Tables", None)  # path as sent, comp
        """
        name, _, key, prefix = self._current()
        request.headers["Authorization"] = prefix + sign(
            key, self._string_to_sign(request, name, path, comp)
        )


class SharedKeyLiteCredential(SharedKeyCredential):
    """Account name and key; signs with the SharedKeyLite scheme (``Date\\nResource``).

    Example::

        >>> from azt._core.transport import HttpRequest
        >>> req = HttpRequest("GET", "u", {"x-ms-date": "Mon, 27 Jun 2016 15:25:14 GMT"})
        >>> cred = SharedKeyLiteCredential("devstoreaccount1", DEV_ACCOUNT_KEY)
        >>> cred.sign(req, "/devstoreaccount1/Tables", None)
        >>> req.headers["Authorization"]
        'SharedKeyLite devstoreaccount1:0t5frBDAHUb3TEbAMT7v9wwgj+L4V00scNDQC6plt2w='
    """

    scheme = "SharedKeyLite"

    def string_to_sign(self, request: HttpRequest, path: str, comp: str | None) -> str:
        """``Date\\nCanonicalizedResource``.

        Example::

            >>> req = HttpRequest("GET", "u", {"x-ms-date": "D"})
            >>> SharedKeyLiteCredential("a", "a2V5").string_to_sign(req, "/a/Tables", None)
            'D\\n/a/a/Tables'
        """
        return self._string_to_sign(request, self._current()[0], path, comp)

    def _string_to_sign(
        self, request: HttpRequest, account_name: str, path: str, comp: str | None
    ) -> str:
        headers = request.headers
        return shared_key_lite_string_to_sign(
            headers.get("x-ms-date") or headers.get("Date", ""),
            canonicalized_resource(account_name, path, comp),
        )


class NamedKeyFollower(SharedKeyCredential):
    """SharedKey signing with the key of an azure-core ``AzureNamedKeyCredential`` (or any
    object with a ``named_key`` (name, key) pair), read at every request.

    ``AzureNamedKeyCredential.update(name, key)`` therefore rotates the key of every client
    using it from the next request on (retries included). Reading costs one attribute
    lookup and an identity check; the key is decoded again only when the pair changed. A
    pair rotated to something invalid (not base64, empty name) makes the next request
    raise :class:`~azt.ValidationError` before anything is sent; the old key is never
    used silently in its place.

    Example::

        >>> from azure.core.credentials import AzureNamedKeyCredential
        >>> source = AzureNamedKeyCredential("acct", "a2V5")
        >>> cred = NamedKeyFollower(source)
        >>> source.update("acct", "bmV3")
        >>> cred.account_key
        'bmV3'
    """

    def __init__(self, source: object) -> None:
        self.source = source
        named = self._named_key()
        self._state = self._make_state(*named)
        self._seen: object = named

    def _named_key(self) -> tuple[str, str]:
        named = getattr(self.source, "named_key", None)
        if (
            not isinstance(named, tuple)
            or len(named) != 2
            or not all(isinstance(part, str) for part in named)
        ):
            raise ValidationError(
                f"{type(self.source).__name__}.named_key must be a (name, key) pair of str, "
                f"as azure-core's AzureNamedKeyCredential gives; got {type(named).__name__}"
            )
        return named[0], named[1]

    def _current(self) -> _KeyState:
        named = getattr(self.source, "named_key", None)
        if named is self._seen:  # azure-core hands out the same tuple until update()
            return self._state
        if named != self._seen:
            name, key = self._named_key()
            try:
                self._state = self._make_state(name, key)
            except ValidationError as exc:
                raise ValidationError(
                    f"{type(self.source).__name__} was updated to an unusable key: {exc}"
                ) from None
        self._seen = named
        return self._state

    def update(self, account_name: str, account_key: str) -> None:
        """Rotate the followed credential (its ``update(name, key)``).

        Example::

            >>> from azure.core.credentials import AzureNamedKeyCredential
            >>> source = AzureNamedKeyCredential("acct", "a2V5")
            >>> NamedKeyFollower(source).update("acct", "bmV3")
            >>> source.named_key.key
            'bmV3'
        """
        self._make_state(account_name, account_key)  # refuse a bad pair before passing it on
        update = getattr(self.source, "update", None)
        if not callable(update):
            raise ValidationError(
                f"{type(self.source).__name__} has no update(name, key): rotate it directly"
            )
        update(account_name, account_key)

    def __repr__(self) -> str:
        return f"NamedKeyFollower({type(self.source).__name__}, {self.account_name!r}, <key>)"


def _clean_sas(signature: object) -> str:
    """A SAS token without its leading ``?``; :class:`~azt.ValidationError` if unusable."""
    if not isinstance(signature, str):
        raise ValidationError("a SAS token must be a str")
    token = signature.strip().lstrip("?")
    if not token:
        raise ValidationError("the SAS token is empty")
    params = urllib.parse.parse_qs(token, keep_blank_values=True)
    if "sig" not in params:
        raise ValidationError("the SAS token has no 'sig' parameter")
    return token


class SasCredential:
    """A shared access signature appended to every request URL.

    The token may be given with or without its leading ``?``; :meth:`update` swaps in a new
    token (e.g. before the old one expires): it is appended to every attempt sent after
    the update, retries of a request already in flight included.

    Example::

        >>> cred = SasCredential("?sv=2019-02-02&sig=abc")
        >>> cred.apply_to_url("http://h/t()?$top=1")
        'http://h/t()?$top=1&sv=2019-02-02&sig=abc'
    """

    def __init__(self, signature: str) -> None:
        self._token = _clean_sas(signature)

    def _current_token(self) -> str:
        return self._token

    @property
    def signature(self) -> str:
        """The token without a leading ``?``.

        Example::

            >>> SasCredential("?sv=1&sig=x").signature
            'sv=1&sig=x'
        """
        return self._current_token()

    def update(self, signature: str) -> None:
        """Replace the token (a bad one raises and leaves the old one in place).

        Example::

            >>> c = SasCredential("sig=a"); c.update("sig=b"); c.signature
            'sig=b'
        """
        self._token = _clean_sas(signature)

    def apply_to_url(self, url: str) -> str:
        """``url`` with the current token appended to its query string.

        Example::

            >>> SasCredential("sig=x").apply_to_url("http://h/Tables")
            'http://h/Tables?sig=x'
        """
        return url + ("&" if "?" in url else "?") + self._current_token()

    def __repr__(self) -> str:
        return "SasCredential(<token>)"


class SasFollower(SasCredential):
    """The SAS token of an azure-core ``AzureSasCredential`` (or any object with a
    ``signature`` str), read at every attempt, so ``AzureSasCredential.update(sig)`` is
    used from the next request (and the next retry) on. The token is checked again only
    when it changed; an unusable new token makes the next request raise
    :class:`~azt.ValidationError` before anything is sent.

    Example::

        >>> from azure.core.credentials import AzureSasCredential
        >>> source = AzureSasCredential("sv=1&sig=old")
        >>> cred = SasFollower(source)
        >>> source.update("sv=1&sig=new")
        >>> cred.apply_to_url("http://h/Tables")
        'http://h/Tables?sv=1&sig=new'
    """

    def __init__(self, source: object) -> None:
        self.source = source
        raw = getattr(source, "signature", None)
        self._token = _clean_sas(raw)
        self._seen: object = raw

    def _current_token(self) -> str:
        raw = getattr(self.source, "signature", None)
        if raw is not self._seen and raw != self._seen:
            try:
                self._token = _clean_sas(raw)
            except ValidationError as exc:
                raise ValidationError(
                    f"{type(self.source).__name__} was updated to an unusable SAS token: {exc}"
                ) from None
            self._seen = raw
        return self._token

    def update(self, signature: str) -> None:
        """Rotate the followed credential (its ``update(signature)``).

        Example::

            >>> from azure.core.credentials import AzureSasCredential
            >>> source = AzureSasCredential("sig=a")
            >>> SasFollower(source).update("sig=b")
            >>> source.signature
            'sig=b'
        """
        _clean_sas(signature)
        update = getattr(self.source, "update", None)
        if not callable(update):
            raise ValidationError(
                f"{type(self.source).__name__} has no update(signature): rotate it directly"
            )
        update(signature)

    def __repr__(self) -> str:
        return f"SasFollower({type(self.source).__name__}, <token>)"


@runtime_checkable
class AccessTokenLike(Protocol):
    """What ``get_token`` returns: ``token`` (str) and ``expires_on`` (epoch seconds).

    Example::

        >>> class T:
        ...     token = "abc"; expires_on = 0
        >>> isinstance(T(), AccessTokenLike)
        True
    """

    token: str
    expires_on: int


@runtime_checkable
class AsyncTokenCredential(Protocol):
    """Any azure-identity style async credential (``DefaultAzureCredential`` from
    ``azure.identity.aio``, ``ClientSecretCredential``...).

    Example::

        >>> class Cred:
        ...     async def get_token(self, *scopes, **kwargs): ...
        >>> isinstance(Cred(), AsyncTokenCredential)
        True
    """

    async def get_token(self, *scopes: str, **kwargs: Any) -> Any:
        """Return an access token for ``scopes``: an object with ``.token`` (str) and
        ``.expires_on`` (POSIX seconds), as azure-identity's ``AccessToken``.

        Example::

            >>> import asyncio, time
            >>> from types import SimpleNamespace
            >>> class Cred:
            ...     async def get_token(self, *scopes, **kwargs):
            ...         return SimpleNamespace(token="t", expires_on=time.time() + 3600)
            >>> asyncio.run(Cred().get_token("https://storage.azure.com/.default")).token
            't'
        """
        ...


@runtime_checkable
class SyncTokenCredential(Protocol):
    """Any azure-identity style synchronous credential (``DefaultAzureCredential`` from
    ``azure.identity``, ``ClientSecretCredential``...): ``get_token`` returns the token.

    Example::

        >>> class Cred:
        ...     def get_token(self, *scopes, **kwargs): ...
        >>> isinstance(Cred(), SyncTokenCredential)
        True
    """

    def get_token(self, *scopes: str, **kwargs: Any) -> Any:
        """Return an access token for ``scopes`` (an object with ``.token`` and
        ``.expires_on``), blocking while it is fetched.

        Example::

            >>> import time
            >>> from types import SimpleNamespace
            >>> class Cred:
            ...     def get_token(self, *scopes, **kwargs):
            ...         return SimpleNamespace(token="t", expires_on=time.time() + 3600)
            >>> Cred().get_token("https://storage.azure.com/.default").token
            't'
        """
        ...


def _is_async_callable(fn: object) -> bool:
    """Whether calling ``fn`` gives a coroutine by its declaration (``async def``, also
    behind ``functools.partial``, a callable object's ``async def __call__`` or a mock
    declared async)."""
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(type(fn), "__call__", None)  # noqa: B004 - the class's, not the object's
    return (
        call is not None
        and not inspect.isfunction(fn)
        and not inspect.ismethod(fn)
        and inspect.iscoroutinefunction(call)
    )


def _token_getter(credential: object, scope: str) -> tuple[Callable[..., Any], bool]:
    """``credential.get_token`` and whether it is async, checked once: a credential whose
    ``get_token`` is missing, not callable, or cannot take a scope is refused here (a
    :class:`~azt.ValidationError`), never at the first request."""
    name = type(credential).__name__
    get_token = getattr(credential, "get_token", None)
    if get_token is None:
        raise ValidationError(
            f"{name} is not a token credential: it has no get_token(scope) method "
            "(pass an azure-identity credential, sync or async, or an object with one)"
        )
    if not callable(get_token):
        raise ValidationError(
            f"{name}.get_token is a {type(get_token).__name__}, not a method: a token "
            "credential needs get_token(scope) returning an object with .token and .expires_on"
        )
    try:
        signature = inspect.signature(get_token)
    except (TypeError, ValueError):  # some builtins and extension types have none
        signature = None
    if signature is not None:
        try:
            signature.bind(scope)
        except TypeError as exc:
            raise ValidationError(
                f"{name}.get_token{signature} cannot be called with a scope ({exc}): a token "
                "credential needs get_token(*scopes, **kwargs)"
            ) from None
    return get_token, _is_async_callable(get_token)


class BearerTokenCredential:
    """Entra ID bearer tokens from a token credential, cached and refreshed early.

    The credential may be async (``async def get_token``, as ``azure.identity.aio``) or
    synchronous (``def get_token``, as ``azure.identity``); which one is decided here, from
    the declaration of ``get_token``, and a synchronous one is called on a worker thread so
    the event loop keeps running while it fetches a token (which may take seconds). An
    object whose ``get_token`` is missing or cannot take a scope is refused here with a
    :class:`~azt.ValidationError`.

    ``scope`` is the Entra ID scope tokens are requested for. Left out, it follows the
    endpoint of the client the credential is given to (:func:`token_scope_for`: Cosmos DB
    Table API endpoints get :data:`COSMOS_SCOPE`, all others :data:`STORAGE_SCOPE`); given,
    it is used as is (sovereign clouds, custom audiences).

    The wrapped credential belongs to the caller: azt never closes it (close an
    ``azure.identity.aio`` credential yourself, e.g. with ``async with``).

    A token is reused until ``refresh_margin`` seconds (default 300) before it expires;
    then the next request fetches a new one. Concurrent requests wait on one lock so a
    refresh happens once. Bearer tokens are refused over plain HTTP except to loopback
    hosts (local emulators).

    Example::

        >>> import asyncio
        >>> class Token:
        ...     def __init__(self, token, expires_on):
        ...         self.token, self.expires_on = token, expires_on
        >>> class Cred:
        ...     calls = 0
        ...     async def get_token(self, *scopes, **kw):
        ...         Cred.calls += 1
        ...         return Token(f"t{Cred.calls}", 4_000_000_000)
        >>> bearer = BearerTokenCredential(Cred())
        >>> asyncio.run(bearer.get_header()), asyncio.run(bearer.get_header()), Cred.calls
        ('Bearer t1', 'Bearer t1', 1)
    """

    def __init__(
        self,
        credential: AsyncTokenCredential | SyncTokenCredential,
        *,
        scope: str | None = None,
        refresh_margin: float = 300.0,
    ) -> None:
        if scope is not None and (not isinstance(scope, str) or not scope.strip()):
            raise ValidationError(f"scope must be a non-empty str or None, got {scope!r}")
        self._get_token, self.is_async = _token_getter(credential, scope or STORAGE_SCOPE)
        self.credential = credential
        self.scope = scope or STORAGE_SCOPE
        self.scope_given = scope is not None
        self.refresh_margin = refresh_margin
        self._header: str | None = None
        self._expires_on = 0.0
        self._lock: asyncio.Lock | None = None

    def _fresh(self) -> bool:
        return self._header is not None and time.time() < self._expires_on - self.refresh_margin

    async def get_header(self) -> str:
        """The ``Authorization`` value, fetching a new token when needed.

        Example::

            header = await BearerTokenCredential(DefaultAzureCredential()).get_header()
        """
        if self._fresh():
            assert self._header is not None
            return self._header
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if not self._fresh():
                token = await self._fetch()
                value = getattr(token, "token", None)
                expires = getattr(token, "expires_on", None)
                if not isinstance(value, str) or not value:
                    raise ValidationError("get_token() returned an object without a .token str")
                if not isinstance(expires, int | float):
                    raise ValidationError("get_token() returned an object without .expires_on")
                self._header = "Bearer " + value
                self._expires_on = float(expires)
            assert self._header is not None
            return self._header

    async def _fetch(self) -> Any:
        if self.is_async:
            return await self._get_token(self.scope)
        token = await asyncio.to_thread(self._get_token, self.scope)
        if inspect.isawaitable(token):  # declared plain def, yet returned an awaitable
            close = getattr(token, "close", None)
            if close is not None:
                close()  # a coroutine that will never run: no "never awaited" warning
            raise ValidationError(
                f"{type(self.credential).__name__}.get_token is a plain function but returned "
                f"{type(token).__name__}: declare it 'async def' so it is awaited on the event "
                "loop"
            )
        return token

    def invalidate(self, header: str | None = None) -> None:
        """Forget the cached token (only if it is still ``header``, when given), so the
        next request fetches a new one. The pipeline calls it when the service answers
        ``401`` to a bearer token (expired or revoked early) before retrying once.

        Example::

            >>> import asyncio
            >>> class Cred:
            ...     n = 0
            ...     async def get_token(self, *scopes, **kw):
            ...         Cred.n += 1
            ...         return type("T", (), {"token": f"t{Cred.n}", "expires_on": 4e9})()
            >>> bearer = BearerTokenCredential(Cred())
            >>> asyncio.run(bearer.get_header())
            'Bearer t1'
            >>> bearer.invalidate()
            >>> asyncio.run(bearer.get_header())
            'Bearer t2'
        """
        if header is None or header == self._header:
            self._header = None
            self._expires_on = 0.0

    def for_endpoint(self, endpoint: str, *, cosmos: bool | None = None) -> BearerTokenCredential:
        """This credential as a client for ``endpoint`` uses it: itself when its scope was
        given or already is the endpoint's, else a copy requesting the endpoint's scope
        (sharing the wrapped credential, with its own token cache). ``cosmos``: as
        :func:`token_scope_for`.

        Example::

            >>> class Cred:
            ...     async def get_token(self, *scopes, **kw): ...
            >>> BearerTokenCredential(Cred()).for_endpoint("https://a.table.cosmos.azure.com").scope
            'https://cosmos.azure.com/.default'
        """
        scope = token_scope_for(endpoint, cosmos=cosmos)
        if self.scope_given or scope == self.scope:
            return self
        return BearerTokenCredential(
            self.credential, scope=scope, refresh_margin=self.refresh_margin
        )

    def __repr__(self) -> str:
        return f"BearerTokenCredential({type(self.credential).__name__}, scope={self.scope!r})"


Credential = (
    SharedKeyCredential
    | SasCredential
    | BearerTokenCredential
    | AsyncTokenCredential
    | SyncTokenCredential
    | str
)
"""Anything a client accepts as ``credential``."""


def resolve_credential(
    credential: object, endpoint: str | None = None, *, cosmos: bool | None = None
) -> SharedKeyCredential | SasCredential | BearerTokenCredential:
    """Turn what a user passed as ``credential`` into one of our credential objects.

    Accepts our credentials, a SAS token string, azure-core's ``AzureNamedKeyCredential``
    (``.named_key``, followed: see :class:`NamedKeyFollower`) and ``AzureSasCredential``
    (``.signature``, followed: see :class:`SasFollower`), and any object with a
    ``get_token(scope)``, async or synchronous (Entra ID; the scope follows ``endpoint``,
    see :func:`token_scope_for`, with ``cosmos``); an object of the wrong shape is refused
    here with a :class:`~azt.ValidationError`.

    Example::

        >>> type(resolve_credential("sv=1&sig=x")).__name__
        'SasCredential'
    """
    if isinstance(credential, BearerTokenCredential):
        if endpoint is None:
            return credential
        return credential.for_endpoint(endpoint, cosmos=cosmos)
    if isinstance(credential, SharedKeyCredential | SasCredential):
        return credential
    if isinstance(credential, str):
        return SasCredential(credential)
    if getattr(credential, "named_key", None) is not None:
        return NamedKeyFollower(credential)
    if isinstance(getattr(credential, "signature", None), str):
        return SasFollower(credential)
    if hasattr(credential, "get_token"):  # its shape is checked once, here
        scope = token_scope_for(endpoint, cosmos=cosmos) if endpoint is not None else None
        return BearerTokenCredential(credential, scope=scope)
    raise ValidationError(
        f"unsupported credential {type(credential).__name__}: pass a SharedKeyCredential, "
        "SharedKeyLiteCredential, SasCredential, a SAS token string, azure-core's "
        "AzureNamedKeyCredential or AzureSasCredential, or a token credential "
        "(sync or async, with get_token(scope))"
    )
