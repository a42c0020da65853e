"""Builders shared by the authentication tests (no tests here)."""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from urllib.parse import parse_qsl, quote

from multidict import CIMultiDict, CIMultiDictProxy, MultiDict, MultiDictProxy

from azt_server_stub.auth import Authenticator, AuthOptions, PolicyLike, RequestView

DEV_ACCOUNT = "devstoreaccount1"
DEV_KEY_B64 = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
DEV_KEY = base64.b64decode(DEV_KEY_B64)
VECTOR_DATE = "Mon, 27 Jun 2016 15:25:14 GMT"
VECTOR_NOW = dt.datetime(2016, 6, 27, 15, 25, 14, tzinfo=dt.UTC)
#: A moment inside every appendix-A SAS window (2024-01-01 .. 2030-01-01).
SAS_NOW = dt.datetime(2026, 11, 21, 12, 0, 0, tzinfo=dt.UTC)


def view(
    method: str = "GET",
    path: str = f"/{DEV_ACCOUNT}/Tables",
    query: str = "",
    headers: Mapping[str, str] | None = None,
    *,
    scheme: str = "http",
    remote_ip: str = "127.0.0.1",
) -> RequestView:
    """A RequestView; ``query`` is a raw (percent-encoded) query string."""
    pairs = parse_qsl(query, keep_blank_values=True)
    return RequestView(
        method=method,
        raw_path=path,
        query=MultiDictProxy(MultiDict(pairs)),
        headers=CIMultiDictProxy(CIMultiDict(headers or {})),
        scheme=scheme,
        remote_ip=remote_ip,
    )


def encode_query(params: Mapping[str, str]) -> str:
    """Percent-encode SAS parameters the way SDKs do (``+``, ``/``, ``=`` escaped)."""
    return "&".join(f"{k}={quote(v, safe='')}" for k, v in params.items())


def authenticator(
    *,
    now: dt.datetime = VECTOR_NOW,
    options: AuthOptions | None = None,
    accounts: Mapping[str, list[bytes]] | None = None,
    policies: Callable[[str, str], Sequence[PolicyLike]] | None = None,
) -> Authenticator:
    """An Authenticator over the dev account (unless ``accounts``) with a fixed clock."""
    return Authenticator(
        accounts if accounts is not None else {DEV_ACCOUNT: [DEV_KEY]},
        policies if policies is not None else (lambda account, table: []),
        options,
        clock=lambda: now,
    )
