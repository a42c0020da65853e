"""Authentication and authorization of stub requests.

CONTRACT: the HTTP layer builds a :class:`RequestView`, resolves the account
(path-style or host-style addressing is the HTTP layer's job), then calls
``Authenticator.authenticate`` once per request and ``Principal.authorize``
once per operation (once per contained operation for a batch). Everything
raises :class:`~azt_server_stub.errors.StubError` with the service's code.
The owner of this module fills in the bodies.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from multidict import CIMultiDictProxy, MultiDictProxy

from .backend import SignedIdentifier


class Operation(enum.Enum):
    """What a request does, for permission checks (SAS ``sp``/``srt``)."""

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
    """

    method: str
    raw_path: str
    query: MultiDictProxy[str]
    headers: CIMultiDictProxy[str]
    scheme: str  # "http" or "https"
    remote_ip: str


@dataclass(slots=True)
class AuthOptions:
    """Switches: clock-skew check, bearer-token mode, Azurite-style 403 for anonymous."""

    check_clock_skew: bool = True
    max_clock_skew_seconds: int = 15 * 60
    allow_bearer: bool = False
    bearer_audiences: tuple[str, ...] = ("https://storage.azure.com",)
    anonymous_status_azurite: bool = False


@dataclass(slots=True)
class Principal:
    """Who is calling and what they may do; returned by ``authenticate``."""

    account: str
    scheme: str  # "SharedKey" | "SharedKeyLite" | "ServiceSas" | "AccountSas" | "Bearer"
    sas: Mapping[str, str] = field(default_factory=dict)

    def authorize(self, op: Operation, table: str | None) -> None:
        """Raise unless this principal may perform ``op`` on ``table``."""
        raise NotImplementedError

    def key_allowed(self, pk: str, rk: str) -> bool:
        """Whether a service SAS key range admits this key (True without a range)."""
        raise NotImplementedError

    def check_key(self, pk: str, rk: str) -> None:
        """Raise 403 AuthorizationFailure when a write targets a key outside the SAS range."""
        raise NotImplementedError


class Authenticator:
    """Verifies SharedKey, SharedKeyLite, service/account SAS and (opt-in) bearer tokens.

    ``accounts`` maps account name -> list of decoded keys (key1, optional key2).
    ``policies(account, table)`` returns a table's stored access policies for ``si``.
    """

    def __init__(
        self,
        accounts: Mapping[str, list[bytes]],
        policies: Callable[[str, str], list[SignedIdentifier]],
        options: AuthOptions | None = None,
    ) -> None:
        raise NotImplementedError

    def authenticate(self, request: RequestView, account: str, table: str | None) -> Principal:
        """Verify the request's credentials for ``account`` (``table``: the addressed table)."""
        raise NotImplementedError
