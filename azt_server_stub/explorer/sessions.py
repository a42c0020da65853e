"""Who may use the explorer: sign-in with an account key, sessions, CSRF and origin checks.

A visitor signs in with an account name and one of its keys (the same keys the Table API
accepts; compared in constant time). The answer sets an ``HttpOnly``, ``SameSite=Strict``
session cookie scoped to the explorer's path and returns a CSRF token the page keeps in
memory. Every state-changing call (any method but GET/HEAD) must then carry that token in
``X-CSRF-Token``; besides, a request whose ``Origin`` is another origin, or whose
``Sec-Fetch-Site`` says ``cross-site``/``same-site``, is refused whatever it carries. Unless
the stub was started to serve the explorer to other machines, the ``Host`` a request names
must be a loopback name (a DNS-rebinding page that reaches the stub under its own name
gets nothing).

Example::

    >>> sessions = Sessions({"acct": [b"key"]})
    >>> session = sessions.sign_in("acct", "a2V5")
    >>> sessions.get(session.token).account
    'acct'
"""

from __future__ import annotations

import base64
import binascii
import hmac
import ipaddress
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from aiohttp import hdrs, web

__all__ = [
    "COOKIE",
    "Refused",
    "Session",
    "Sessions",
    "check_same_origin",
    "is_loopback_host",
]

#: The start of the session cookie's name; each stub adds a random suffix of its own
#: (cookies are not told apart by port: two stubs on one host keep their sessions apart).
COOKIE = "azt_explorer"
#: How long a session lasts without use (seconds).
IDLE_SECONDS = 8 * 3600.0
#: Most sessions kept at once (the oldest goes first).
MAX_SESSIONS = 1000


class Refused(Exception):
    """A request the explorer refuses: HTTP status, a short code and a message.

    Example::

        >>> Refused(403, "CsrfTokenMismatch", "no").status
        403
    """

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


@dataclass(slots=True)
class Session:
    """One signed-in visitor: the account, the cookie token, the CSRF token, last use.

    Example::

        >>> Session("acct", "t", "c", 0.0).account
        'acct'
    """

    account: str
    token: str
    csrf: str
    last_used: float = field(default=0.0)


class Sessions:
    """The explorer's sessions, checked against the stub's accounts (name -> decoded keys).

    ``clock``: seconds (tests pass their own).

    Example::

        >>> Sessions({"a": [b"k"]}).sign_in("a", "bad")
        Traceback (most recent call last):
        ...
        azt_server_stub.explorer.sessions.Refused: The account name or key is wrong.
    """

    def __init__(
        self,
        accounts: Mapping[str, Sequence[bytes]],
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._accounts = {name: list(keys) for name, keys in accounts.items()}
        self._clock = clock
        self._sessions: dict[str, Session] = {}
        #: This stub's session cookie name.
        self.cookie = f"{COOKIE}_{secrets.token_hex(4)}"

    def sign_in(self, account: object, key: object) -> Session:
        """A new session when ``key`` (base64) is one of ``account``'s keys, else ``Refused``
        (401, the same answer for an unknown account and a wrong key).

        Example::

            >>> Sessions({"a": [b"k"]}).sign_in("a", "aw==").account
            'a'
        """
        wrong = Refused(401, "SignInFailed", "The account name or key is wrong.")
        if not isinstance(account, str) or not isinstance(key, str):
            raise wrong
        try:
            given = base64.b64decode(key.strip(), validate=True)
        except (binascii.Error, ValueError):
            raise wrong from None
        keys = self._accounts.get(account, [])
        # compare with every key (and a dummy for an unknown account): no early exit
        matched = False
        for candidate in keys or [b"\x00" * 64]:
            matched |= hmac.compare_digest(candidate, given)
        if not matched or not keys:
            raise wrong
        self._expire()
        if len(self._sessions) >= MAX_SESSIONS:
            oldest = min(self._sessions.values(), key=lambda s: s.last_used)
            del self._sessions[oldest.token]
        session = Session(
            account, secrets.token_urlsafe(32), secrets.token_urlsafe(32), self._clock()
        )
        self._sessions[session.token] = session
        return session

    def get(self, token: str | None) -> Session | None:
        """The live session of a cookie token (its idle time restarts), else None.

        Example::

            >>> Sessions({}).get("nope") is None
            True
        """
        if not token:
            return None
        session = self._sessions.get(token)
        if session is None:
            return None
        now = self._clock()
        if now - session.last_used > IDLE_SECONDS:
            del self._sessions[token]
            return None
        session.last_used = now
        return session

    def sign_out(self, token: str) -> None:
        """End a session (nothing if it is gone already).

        Example::

            >>> Sessions({}).sign_out("gone")
        """
        self._sessions.pop(token, None)

    def _expire(self) -> None:
        now = self._clock()
        for token in [t for t, s in self._sessions.items() if now - s.last_used > IDLE_SECONDS]:
            del self._sessions[token]

    def require(self, request: web.Request) -> Session:
        """The request's session, with the CSRF token checked on a state-changing method.

        ``Refused(401)`` without a live session, ``Refused(403)`` for a missing or wrong
        ``X-CSRF-Token``.

        Example::

            session = sessions.require(request)
        """
        session = self.get(request.cookies.get(self.cookie))
        if session is None:
            raise Refused(401, "SignInRequired", "Sign in with an account name and key.")
        if request.method not in ("GET", "HEAD"):
            sent = request.headers.get("X-CSRF-Token", "")
            if not hmac.compare_digest(sent.encode(), session.csrf.encode()):
                raise Refused(403, "CsrfTokenMismatch", "The request's CSRF token is wrong.")
        return session


def is_loopback_host(host: str) -> bool:
    """Whether a ``Host`` header names this machine (``localhost``, 127.0.0.0/8, ::1).

    Example::

        >>> is_loopback_host("127.0.0.1:10002"), is_loopback_host("[::1]:80")
        (True, True)
        >>> is_loopback_host("localhost"), is_loopback_host("evil.example:10002")
        (True, False)
    """
    name = host.strip().lower()
    if name.startswith("["):
        name = name[1 : name.find("]")] if "]" in name else name[1:]
    elif name.count(":") == 1:
        name = name.split(":", 1)[0]
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_same_origin(request: web.Request) -> None:
    """Refuse a cross-site state-changing request (``Refused(403)``) by its headers.

    ``Sec-Fetch-Site`` must be ``same-origin`` or ``none`` when sent; ``Origin``, when
    sent, must be the request's own ``scheme://host``.

    Example::

        check_same_origin(request)  # before a POST/PUT/DELETE is served
    """
    site = request.headers.get("Sec-Fetch-Site")
    if site is not None and site not in ("same-origin", "none"):
        raise Refused(403, "CrossSiteRequest", "Cross-site requests are refused.")
    origin = request.headers.get(hdrs.ORIGIN)
    if origin is not None and origin != f"{request.scheme}://{request.host}":
        raise Refused(403, "CrossSiteRequest", "Cross-origin requests are refused.")
