"""Who sent a request (``Authenticator``) and what it may do (``Principal``), PROTOCOL.md 10.

The HTTP layer builds a :class:`RequestView`, calls ``Authenticator.authenticate`` once
per request and ``Principal.authorize`` once per operation; everything raises
:class:`~azt_server_stub.errors.StubError` with the service's code.

Example::

    >>> from multidict import CIMultiDict, CIMultiDictProxy, MultiDict, MultiDictProxy
    >>> key = b"secret"
    >>> date = "Mon, 27 Jun 2016 15:25:14 GMT"
    >>> sts = "GET\\n\\n\\n" + date + "\\n/acct/acct/Tables"
    >>> headers = CIMultiDictProxy(CIMultiDict({
    ...     "x-ms-date": date, "Authorization": "SharedKey acct:" + compute_signature(key, sts)}))
    >>> view = RequestView("GET", "/acct/Tables", MultiDictProxy(MultiDict()),
    ...                    headers, "http", "127.0.0.1")
    >>> auth = Authenticator({"acct": [key]}, lambda a, t: [],
    ...                      AuthOptions(check_clock_skew=False))
    >>> auth.authenticate(view, "acct", None).scheme
    'SharedKey'
"""

from __future__ import annotations

import datetime as _dt
import enum
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from multidict import CIMultiDictProxy, MultiDictProxy, istr

from ..errors import (
    StubError,
    authentication_failed,
    authorization_failure,
    authorization_permission_mismatch,
    authorization_resource_type_mismatch,
    invalid_authentication_info,
    no_authentication_information,
)
from ..versions import resolve_version, supports_bearer
from . import _bearer, _sas, _sharedkey
from ._bearer import BEARER_CHALLENGE
from ._common import SECONDARY_SUFFIX, Signer, parse_http_date, primary_account, sign
from ._sas import KeyRange, PolicyLike, SasGrant

if TYPE_CHECKING:
    from ..backend import SignedIdentifier

__all__ = [
    "BEARER_CHALLENGE",
    "AuthOptions",
    "Authenticator",
    "KeyRange",
    "Operation",
    "PolicyLike",
    "Principal",
    "RequestView",
    "SasGrant",
    "compute_signature",
    "shared_key_string_to_sign",
    "www_authenticate",
]


class Operation(enum.Enum):
    """What a request does, for permission checks (SAS ``sp``/``srt``).

    Example::

        >>> Operation("InsertEntity") is Operation.INSERT_ENTITY
        True
    """

    QUERY_TABLES = "QueryTables"
    CREATE_TABLE = "CreateTable"
    DELETE_TABLE = "DeleteTable"
    GET_TABLE_ACL = "GetTableAcl"
    SET_TABLE_ACL = "SetTableAcl"
    GET_SERVICE_PROPERTIES = "GetServiceProperties"
    SET_SERVICE_PROPERTIES = "SetServiceProperties"
    GET_SERVICE_STATS = "GetServiceStats"
    QUERY_ENTITIES = "QueryEntities"
    INSERT_ENTITY = "InsertEntity"
    UPDATE_ENTITY = "UpdateEntity"
    MERGE_ENTITY = "MergeEntity"
    DELETE_ENTITY = "DeleteEntity"
    INSERT_OR_REPLACE_ENTITY = "InsertOrReplaceEntity"
    INSERT_OR_MERGE_ENTITY = "InsertOrMergeEntity"
    BATCH = "Batch"  # the outer $batch request; contained operations are authorized one by one
    PREFLIGHT = "Preflight"


@dataclass(frozen=True, slots=True)
class RequestView:
    """What authentication needs to know about a request, independent of aiohttp.

    ``raw_path`` is the path exactly as sent (percent-encoding preserved, account
    segment included for path-style URLs); ``query`` holds decoded values.

    Example::

        >>> from multidict import CIMultiDict, CIMultiDictProxy, MultiDict, MultiDictProxy
        >>> view = RequestView("GET", "/devstoreaccount1/Tables", MultiDictProxy(MultiDict()),
        ...                    CIMultiDictProxy(CIMultiDict()), "http", "127.0.0.1")
        >>> view.method
        'GET'
    """

    method: str
    raw_path: str
    query: MultiDictProxy[str]
    headers: CIMultiDictProxy[str]
    scheme: str  # "http" or "https"
    remote_ip: str


@dataclass(slots=True)
class AuthOptions:
    """Switches: clock-skew check, bearer-token mode, Azurite-style 403 for anonymous.

    ``bearer_audiences`` are accepted in addition to the storage app id,
    ``https://{account}.table.{cloud suffix}`` and the stub's own endpoint
    (``{scheme}://{Host}`` and ``{scheme}://{Host}/{account}``).
    ``bearer_leeway_seconds`` is the clock leeway for ``exp``/``nbf``.
    ``bearer_allow_http`` lets tests send tokens over plain HTTP (Azure refuses:
    ``403 AuthenticationFailed``).

    Example::

        >>> AuthOptions(allow_bearer=True).bearer_allow_http
        False
    """

    check_clock_skew: bool = True
    max_clock_skew_seconds: int = 15 * 60
    allow_bearer: bool = False
    bearer_audiences: tuple[str, ...] = ("https://storage.azure.com",)
    anonymous_status_azurite: bool = False
    bearer_leeway_seconds: int = 5 * 60
    bearer_allow_http: bool = False


#: Header names as multidict keys that carry their case-folded form (cheaper lookups).
_AUTHORIZATION = istr("Authorization")
_X_MS_DATE = istr("x-ms-date")
_DATE = istr("Date")
_CONTENT_MD5 = istr("Content-MD5")
_CONTENT_TYPE = istr("Content-Type")

_SCHEMES = {"sharedkey": "SharedKey", "sharedkeylite": "SharedKeyLite", "bearer": "Bearer"}

_WRITES = frozenset(
    {
        Operation.CREATE_TABLE,
        Operation.DELETE_TABLE,
        Operation.SET_TABLE_ACL,
        Operation.SET_SERVICE_PROPERTIES,
        Operation.INSERT_ENTITY,
        Operation.UPDATE_ENTITY,
        Operation.MERGE_ENTITY,
        Operation.DELETE_ENTITY,
        Operation.INSERT_OR_REPLACE_ENTITY,
        Operation.INSERT_OR_MERGE_ENTITY,
        Operation.BATCH,
    }
)

# Service SAS: the permissions every entity operation needs (all of them). Operations
# missing here (table, ACL and service level) are never allowed to a service SAS.
_SERVICE_NEEDS: dict[Operation, frozenset[str]] = {
    Operation.QUERY_ENTITIES: frozenset("r"),
    Operation.INSERT_ENTITY: frozenset("a"),
    Operation.UPDATE_ENTITY: frozenset("u"),
    Operation.MERGE_ENTITY: frozenset("u"),
    Operation.DELETE_ENTITY: frozenset("d"),
    Operation.INSERT_OR_REPLACE_ENTITY: frozenset("au"),
    Operation.INSERT_OR_MERGE_ENTITY: frozenset("au"),
    Operation.BATCH: frozenset(),
}


@dataclass(frozen=True, slots=True)
class _AccountNeed:
    resource_types: frozenset[str]  # any one of them
    all_of: frozenset[str] = frozenset()
    any_of: frozenset[str] = frozenset()


def _need(srt: str, all_of: str = "", any_of: str = "") -> _AccountNeed:
    return _AccountNeed(frozenset(srt), frozenset(all_of), frozenset(any_of))


# Account SAS (PROTOCOL.md 10.8). Table ACLs are missing: never allowed to a SAS.
_ACCOUNT_NEEDS: dict[Operation, _AccountNeed] = {
    Operation.GET_SERVICE_PROPERTIES: _need("s", "r"),
    Operation.SET_SERVICE_PROPERTIES: _need("s", "w"),
    Operation.GET_SERVICE_STATS: _need("s", "r"),
    # The docs name srt=s, Azurite checks c: either is accepted.
    Operation.QUERY_TABLES: _need("sc", "l"),
    Operation.CREATE_TABLE: _need("c", any_of="cw"),
    Operation.DELETE_TABLE: _need("c", "d"),
    Operation.QUERY_ENTITIES: _need("o", "r"),
    Operation.INSERT_ENTITY: _need("o", "a"),
    Operation.UPDATE_ENTITY: _need("o", "u"),
    Operation.MERGE_ENTITY: _need("o", "u"),
    Operation.DELETE_ENTITY: _need("o", "d"),
    Operation.INSERT_OR_REPLACE_ENTITY: _need("o", "au"),
    Operation.INSERT_OR_MERGE_ENTITY: _need("o", "au"),
    Operation.BATCH: _need("o"),
}


def _secondary_write_refused() -> StubError:
    return StubError(
        403,
        "AuthorizationFailure",
        "This request is not authorized to perform this operation.",
        details={"AuthenticationErrorDetail": "Write operations are not allowed on the secondary."},
    )


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling and what they may do; returned by ``authenticate``.

    ``sas`` holds a SAS's effective fields (stored access policy merged, ``sig``
    left out). ``secondary`` is set when the request addressed ``{account}-secondary``
    (read-only, as on Azure). ``claims`` holds a bearer token's payload.

    Example::

        >>> p = Principal("devstoreaccount1", "SharedKey")
        >>> p.authorize(Operation.CREATE_TABLE, "mytable")  # a key may do anything
        >>> p.key_allowed("pk", "rk"), p.key_filter is None
        (True, True)
    """

    account: str
    scheme: str  # "SharedKey" | "SharedKeyLite" | "ServiceSas" | "AccountSas" | "Bearer"
    sas: Mapping[str, str] = field(default_factory=dict)
    secondary: bool = False
    grant: SasGrant | None = None
    claims: Mapping[str, Any] = field(default_factory=dict)

    def authorize(self, op: Operation, table: str | None) -> None:
        """Raise unless this principal may perform ``op`` on ``table``.

        Service SAS: only entity operations (else ``403 AuthorizationFailure``), only
        on the table named by ``tn`` (case-insensitive; else ``403 AuthorizationFailure``),
        with ``sp`` holding every permission the operation needs (else ``403
        AuthorizationPermissionMismatch``; upserts need ``a`` and ``u``). Account SAS:
        ``srt`` must cover the resource type (``403 AuthorizationResourceTypeMismatch``),
        then ``sp`` the permission; table ACLs are refused (``403 AuthorizationFailure``).
        ``BATCH`` checks only the scope: each contained operation is authorized on its own.

        Example::

            >>> grant = SasGrant("service", "2019-02-02", {}, frozenset("r"), table="People")
            >>> reader = Principal("acct", "ServiceSas", grant=grant)
            >>> reader.authorize(Operation.QUERY_ENTITIES, "people")  # tn: any casing
            >>> try:
            ...     reader.authorize(Operation.INSERT_ENTITY, "People")
            ... except StubError as err:
            ...     print(err.status, err.code)
            403 AuthorizationPermissionMismatch
        """
        if op is Operation.PREFLIGHT:
            return
        if self.secondary and op in _WRITES:
            raise _secondary_write_refused()
        grant = self.grant
        if grant is None:
            return
        if grant.kind == "service":
            needs = _SERVICE_NEEDS.get(op)
            if needs is None:
                raise authorization_failure()
            if table is None:
                if op is not Operation.BATCH:
                    raise authorization_failure()
            elif grant.table is None or table.lower() != grant.table.lower():
                raise authorization_failure()
            if not needs <= grant.permissions:
                raise authorization_permission_mismatch()
            return
        need = _ACCOUNT_NEEDS.get(op)
        if need is None:
            raise authorization_failure()
        if not need.resource_types & grant.resource_types:
            raise authorization_resource_type_mismatch()
        if not need.all_of <= grant.permissions or (
            need.any_of and not need.any_of & grant.permissions
        ):
            raise authorization_permission_mismatch()

    def key_allowed(self, pk: str, rk: str) -> bool:
        """Whether a service SAS key range admits this key (True without a range).

        Example::

            >>> grant = SasGrant("service", "2019-02-02", {}, frozenset("r"), table="t",
            ...                  key_range=KeyRange("b", None, "d", None))
            >>> p = Principal("acct", "ServiceSas", grant=grant)
            >>> p.key_allowed("c", "any"), p.key_allowed("e", "any")
            (True, False)
            >>> Principal("acct", "SharedKey").key_allowed("e", "any")
            True
        """
        grant = self.grant
        if grant is None or grant.key_range is None:
            return True
        return grant.key_range.admits(pk, rk)

    def check_key(self, pk: str, rk: str) -> None:
        """Raise 403 AuthorizationFailure when a write targets a key outside the SAS range.

        Example::

            >>> grant = SasGrant("service", "2019-02-02", {}, frozenset("a"), table="t",
            ...                  key_range=KeyRange("b", None, "d", None))
            >>> writer = Principal("acct", "ServiceSas", grant=grant)
            >>> writer.check_key("c", "1")  # inside: no error
            >>> try:
            ...     writer.check_key("a", "1")
            ... except StubError as err:
            ...     print(err.status, err.code)
            403 AuthorizationFailure
        """
        if not self.key_allowed(pk, rk):
            raise authorization_failure()

    @property
    def key_range(self) -> KeyRange | None:
        """The service SAS key range, or None (for planners that narrow the scan).

        Example::

            >>> grant = SasGrant("service", "2019-02-02", {}, frozenset("r"), table="t",
            ...                  key_range=KeyRange("b", None, "d", None))
            >>> Principal("acct", "ServiceSas", grant=grant).key_range
            KeyRange(spk='b', srk=None, epk='d', erk=None)
            >>> Principal("acct", "SharedKey").key_range is None
            True
        """
        return None if self.grant is None else self.grant.key_range

    @property
    def unrestricted(self) -> bool:
        """Whether this principal may do any operation on any key (no SAS grant, not the
        secondary): :meth:`authorize` and :meth:`check_key` then never refuse.

        Example::

            >>> Principal("acct", "SharedKey").unrestricted
            True
            >>> Principal("acct", "SharedKey", secondary=True).unrestricted
            False
        """
        return self.grant is None and not self.secondary

    @property
    def key_filter(self) -> Callable[[str, str], bool] | None:
        """``key_allowed`` when a key range applies, else None (pass as the backend's
        ``restrict`` so unrestricted queries pay nothing per entity).

        Example::

            >>> grant = SasGrant("service", "2019-02-02", {}, frozenset("r"), table="t",
            ...                  key_range=KeyRange("b", None, "d", None))
            >>> restrict = Principal("acct", "ServiceSas", grant=grant).key_filter
            >>> restrict("c", "1"), restrict("e", "1")
            (True, False)
            >>> Principal("acct", "SharedKey").key_filter is None
            True
        """
        key_range = self.key_range
        return None if key_range is None else key_range.admits


def compute_signature(key: bytes, string_to_sign: str) -> str:
    """``Base64(HMAC-SHA256(key, UTF-8(string_to_sign)))``, the signature of every key scheme.

    Example::

        >>> compute_signature(b"k", "x")
        'w47ciBXISJ9kc4l49EAI+FljRVRfC6po72/PXFPlcYk='
    """
    return sign(key, string_to_sign)


def shared_key_string_to_sign(request: RequestView, account: str, *, lite: bool = False) -> str:
    """The string-to-sign the service uses for ``request`` (Shared Key, or Lite).

    ``account`` is the addressed account; a ``-secondary`` suffix is dropped. Raises
    ``403 AuthenticationFailed`` when the request has neither ``x-ms-date`` nor ``Date``.

    Example::

        >>> from multidict import CIMultiDict, CIMultiDictProxy, MultiDict, MultiDictProxy
        >>> view = RequestView("GET", "/acct/Tables", MultiDictProxy(MultiDict()),
        ...     CIMultiDictProxy(CIMultiDict({"Date": "Mon, 27 Jun 2016 15:25:14 GMT"})),
        ...     "http", "127.0.0.1")
        >>> shared_key_string_to_sign(view, "acct", lite=True)
        'Mon, 27 Jun 2016 15:25:14 GMT\\n/acct/acct/Tables'
    """
    primary, _ = primary_account(account, ())
    date = _sharedkey.request_date(request.headers)
    if date is None:
        raise authentication_failed("Request date header not specified.")
    resource = _sharedkey.canonicalized_resources(
        primary, request.raw_path, request.query.get("comp")
    )[0]
    return _sharedkey.string_to_sign(request.method, request.headers, date, resource, lite=lite)


def www_authenticate(error: StubError) -> str | None:
    """The ``WWW-Authenticate`` header value to send with ``error`` (401s only), or None.

    Example::

        >>> www_authenticate(no_authentication_information()) == BEARER_CHALLENGE
        True
    """
    return BEARER_CHALLENGE if error.status == 401 else None


def _utcnow() -> _dt.datetime:
    return _dt.datetime.now(_dt.UTC)


#: The clock ``shared_key`` may read as ``time.time()`` (the default, as it was at import).
_SYSTEM_CLOCK = _utcnow


class Authenticator:
    """Verifies SharedKey, SharedKeyLite, service/account SAS and (opt-in) bearer tokens.

    ``accounts`` maps account name -> list of decoded keys (key1, optional key2).
    ``policies(account, table)`` returns a table's stored access policies for ``si``
    (a ``404`` StubError from it counts as "no policies"). ``clock`` returns the
    current aware UTC time (tests inject a fixed one).

    Example::

        >>> auth = Authenticator({"acct": [b"key"]}, lambda a, t: [])
        >>> auth.options.check_clock_skew
        True
    """

    def __init__(
        self,
        accounts: Mapping[str, list[bytes]],
        policies: Callable[[str, str], Sequence[PolicyLike]]
        | Callable[[str, str], list[SignedIdentifier]],
        options: AuthOptions | None = None,
        *,
        clock: Callable[[], _dt.datetime] | None = None,
    ) -> None:
        self._accounts = accounts
        self._policies: Callable[[str, str], Sequence[PolicyLike]] = policies
        self.options = options or AuthOptions()
        self._clock = clock or _utcnow
        self._signers: dict[str, tuple[Sequence[bytes], Signer]] = {}
        # shared_key's memory: the last string-to-sign and signature it verified (with
        # the signer that verified them), and one Principal per (account, scheme)
        self._last_verified: tuple[Signer | None, str, str] = (None, "", "")
        self._key_principals: dict[tuple[str, str], Principal] = {}
        # the last request date read: (text, skew limit, earliest and latest POSIX time
        # it is accepted at, less a millisecond each, its moment)
        self._date_window: tuple[str, int, float, float, _dt.datetime] = (
            "",
            0,
            0.0,
            0.0,
            _dt.datetime.min,
        )

    def _signer(self, primary: str) -> Signer:
        keys = self._accounts.get(primary)
        if not keys:
            raise authentication_failed(f"The account '{primary}' does not exist.")
        cached = self._signers.get(primary)
        if cached is not None and cached[0] == keys:  # (the keys as they were: a copy)
            return cached[1]
        frozen = tuple(keys)
        signer = Signer(frozen)
        self._signers[primary] = (list(frozen) if isinstance(keys, list) else frozen, signer)
        return signer

    def shared_key(
        self,
        method: str,
        raw_path: str,
        query: MultiDictProxy[str],
        headers: CIMultiDictProxy[str],
        account: str,
    ) -> Principal | None:
        """The principal of a request that :meth:`authenticate` accepts with a valid Shared
        Key (or Lite) header, found with less work; None for anything else.

        A shortcut for the common case, never a second opinion: whenever it answers, its
        answer equals :meth:`authenticate`'s for the same request (``account`` addressed
        without ``-secondary``); on None the caller asks :meth:`authenticate`, which then
        accepts or refuses the request with its own error.

        Example::

            >>> from multidict import CIMultiDict, CIMultiDictProxy, MultiDict, MultiDictProxy
            >>> auth = Authenticator({"acct": [b"key"]}, lambda a, t: [],
            ...                      AuthOptions(check_clock_skew=False))
            >>> date = "Mon, 27 Jun 2016 15:25:14 GMT"
            >>> sts = "GET\\n\\n\\n" + date + "\\n/acct/acct/Tables"
            >>> headers = CIMultiDictProxy(CIMultiDict({"x-ms-date": date,
            ...     "Authorization": "SharedKey acct:" + compute_signature(b"key", sts)}))
            >>> query = MultiDictProxy(MultiDict())
            >>> auth.shared_key("GET", "/acct/Tables", query, headers, "acct").scheme
            'SharedKey'
            >>> auth.shared_key("PUT", "/acct/Tables", query, headers, "acct") is None
            True
        """
        header = headers.get(_AUTHORIZATION)
        if header is None:
            return None
        if header.startswith("SharedKey "):
            scheme = "SharedKey"
            credentials = header[10:]
        elif header.startswith("SharedKeyLite "):
            scheme = "SharedKeyLite"
            credentials = header[14:]
        else:
            return None
        if "sig" in query or " " in credentials:
            return None
        name, _, signature = credentials.partition(":")
        # The addressed account is a configured one (so it is its own primary, not a
        # secondary) and the header names it.
        keys = self._accounts.get(account)
        if name != account or not keys or not signature:
            return None
        date = headers.get(_X_MS_DATE) or headers.get(_DATE)
        if not date or raw_path.startswith("/" + account + SECONDARY_SUFFIX):
            return None  # (a path naming the secondary: two resource forms to try)
        comp = query.get("comp") if query else None
        resource = "/" + account + raw_path if comp is None else f"/{account}{raw_path}?comp={comp}"
        if scheme == "SharedKey":
            sts = (
                f"{method}\n{headers.get(_CONTENT_MD5, '')}\n"
                f"{headers.get(_CONTENT_TYPE, '')}\n{date}\n{resource}"
            )
        else:
            sts = date + "\n" + resource
        cached = self._signers.get(account)  # (_signer's memo, read in place)
        signer = cached[1] if cached is not None and cached[0] == keys else self._signer(account)
        last = self._last_verified
        if last[0] is not signer or last[2] != signature or last[1] != sts:
            if not signer.matches(sts, signature):
                return None
            self._last_verified = (signer, sts, signature)
        options = self.options
        if options.check_clock_skew:
            limit = options.max_clock_skew_seconds
            window = self._date_window
            if window[0] != date or window[1] != limit:
                moment = parse_http_date(date)
                if moment is None:
                    return None
                stamp = moment.timestamp()
                # a millisecond inside the window: no clock reading disagrees at its edges
                window = (date, limit, stamp - limit + 0.001, stamp + limit - 0.001, moment)
                self._date_window = window
            if self._clock is not _SYSTEM_CLOCK or not window[2] < time.time() < window[3]:
                # near an edge, or a clock of the caller's: the exact comparison
                skew = (self._clock() - window[4]).total_seconds()
                if skew > limit or -skew > limit:
                    return None
        principal = self._key_principals.get((account, scheme))
        if principal is None:
            principal = Principal(account, scheme)
            self._key_principals[account, scheme] = principal
        return principal

    def authenticate(self, request: RequestView, account: str, table: str | None) -> Principal:
        """Verify the request's credentials for ``account`` (``table``: the addressed table).

        ``account`` is the account as addressed (``name-secondary`` allowed). The
        ``table`` is checked against a service SAS by ``Principal.authorize``.

        Example::

            >>> from multidict import CIMultiDict, CIMultiDictProxy, MultiDict, MultiDictProxy
            >>> auth = Authenticator({"acct": [b"key"]}, lambda a, t: [],
            ...                      AuthOptions(check_clock_skew=False))
            >>> headers = CIMultiDict({"x-ms-date": "Mon, 27 Jun 2016 15:25:14 GMT"})
            >>> view = RequestView("GET", "/acct-secondary/Tables", MultiDictProxy(MultiDict()),
            ...                    CIMultiDictProxy(headers), "http", "127.0.0.1")
            >>> try:
            ...     auth.authenticate(view, "acct-secondary", None)
            ... except StubError as err:
            ...     print(err.status, err.code)
            401 NoAuthenticationInformation
            >>> sts = shared_key_string_to_sign(view, "acct-secondary", lite=True)
            >>> headers["Authorization"] = "SharedKeyLite acct:" + compute_signature(b"key", sts)
            >>> who = auth.authenticate(view, "acct-secondary", None)
            >>> who.account, who.scheme, who.secondary
            ('acct', 'SharedKeyLite', True)
        """
        # Schemes (PROTOCOL.md 10): an Authorization header (SharedKey/SharedKeyLite, or
        # Bearer with allow_bearer) together with a SAS signature in the query is 400
        # InvalidAuthenticationInfo; otherwise the header, or the SAS (an account SAS when
        # ss or srt is present, else a service SAS; a SAS without sig is refused, not
        # anonymous; a repeated SAS field is 403 AuthenticationFailed); nothing is 401
        # NoAuthenticationInformation (Azurite's 403 AuthorizationFailure with
        # anonymous_status_azurite). CORS preflights are anonymous: the HTTP layer never
        # calls this for them.
        primary, secondary = primary_account(account, self._accounts)
        header = request.headers.get("Authorization")
        query = request.query
        if header is not None:
            if "sig" in query:
                # Two credentials: Azure evaluates neither. "The REST API doesn't allow two
                # types of authentication to be used when making requests" (storage SDK
                # maintainer, Azure/azure-sdk-for-net#46263, where a bearer token with a SAS
                # URL got this 400 InvalidAuthenticationInfo message from the service).
                raise invalid_authentication_info()
            return self._authorization_header(request, header, account, primary, secondary)
        if "sig" in query or "sv" in query:
            # items(), not keys(): multidict's keys() lists a repeated name once.
            _sas.reject_repeated_fields(name for name, _ in query.items())
            signer = self._signer(primary)
            now = self._clock()
            if "ss" in query or "srt" in query:
                grant = _sas.verify_account_sas(
                    query,
                    primary=primary,
                    signer=signer,
                    scheme=request.scheme,
                    remote_ip=request.remote_ip,
                    now=now,
                )
                scheme = "AccountSas"
            else:
                grant = _sas.verify_service_sas(
                    query,
                    primary=primary,
                    signer=signer,
                    policies=self._policies,
                    scheme=request.scheme,
                    remote_ip=request.remote_ip,
                    now=now,
                )
                scheme = "ServiceSas"
            return Principal(primary, scheme, sas=grant.params, secondary=secondary, grant=grant)
        if self.options.anonymous_status_azurite:
            raise authorization_failure()
        raise no_authentication_information()

    def _authorization_header(
        self, request: RequestView, header: str, account: str, primary: str, secondary: bool
    ) -> Principal:
        raw_scheme, _, credentials = header.strip().partition(" ")
        scheme = _SCHEMES.get(raw_scheme.lower())
        credentials = credentials.strip()
        if scheme is None or not credentials:
            raise invalid_authentication_info()
        if scheme == "Bearer":
            claims = self._bearer(request, credentials, primary)
            return Principal(primary, scheme, secondary=secondary, claims=claims)
        name, sep, signature = credentials.partition(":")
        if not sep or not name or not signature or " " in credentials:
            raise invalid_authentication_info()
        signer = self._signer(primary)
        if name not in (primary, account):
            raise authentication_failed(
                f"The account name '{name}' in the Authorization header does not match the "
                f"account '{primary}' addressed by the request."
            )
        options = self.options
        _sharedkey.verify(
            method=request.method,
            raw_path=request.raw_path,
            comp=request.query.get("comp"),
            headers=request.headers,
            primary=primary,
            signature=signature,
            signer=signer,
            lite=scheme == "SharedKeyLite",
            now=self._clock(),
            check_skew=options.check_clock_skew,
            max_skew_seconds=options.max_clock_skew_seconds,
        )
        return Principal(primary, scheme, secondary=secondary)

    def _bearer(self, request: RequestView, token: str, primary: str) -> dict[str, Any]:
        options = self.options
        if not options.allow_bearer:
            raise _bearer.invalid_token(
                "Bearer tokens are not accepted: the stub runs without bearer-token mode."
            )
        if request.scheme.lower() != "https" and not options.bearer_allow_http:
            raise _bearer.bearer_over_http()
        version = request.headers.get("x-ms-version")
        if version is not None:
            try:
                applied = resolve_version(version, lenient=True)
            except StubError:
                applied = None  # malformed: the HTTP layer's version check refuses it
            if applied is not None and not supports_bearer(applied):
                raise _bearer.bearer_version_too_old()
        audiences = _bearer.allowed_audiences(
            options.bearer_audiences, primary, request.scheme.lower(), request.headers.get("Host")
        )
        claims = _bearer.verify_bearer(
            token,
            audiences=audiences,
            now=self._clock(),
            leeway_seconds=options.bearer_leeway_seconds,
        )
        if primary not in self._accounts:
            raise authentication_failed(f"The account '{primary}' does not exist.")
        return claims
